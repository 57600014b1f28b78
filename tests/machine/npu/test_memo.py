"""fvp.machine.npu.memo: values kept beside the objects they were derived from."""

from fvp.machine.npu.memo import MISS, IdentityMemo


class Op:
    pass


def test_kept_per_object_and_key_none_included():
    memo = IdentityMemo()
    a, b = Op(), Op()
    assert memo.get((a,), (1,)) is MISS
    memo.put((a,), None, (1,))  # a value may be None
    memo.put((b,), "b1", (1,))
    assert memo.get((a,), (1,)) is None and memo.get((b,), (1,)) == "b1"
    assert memo.get((a,), (2,)) is MISS  # another key, another value
    memo.put((a, b), "pair")
    assert memo.get((a, b)) == "pair" and memo.get((b, a)) is MISS
    assert (a,) in memo and (Op(),) not in memo


def test_holds_its_objects_and_drops_the_oldest_when_full():
    memo = IdentityMemo(max_entries=2)
    first = Op()
    memo.put((first,), 1)
    ident = id(first)
    del first  # the memo keeps it alive: no new object can take its id while the entry lives
    assert all(id(Op()) != ident for _ in range(100))
    x, y = Op(), Op()
    memo.put((x,), 2)
    memo.put((x,), 3)  # replacing an entry evicts nothing
    assert len(memo) == 2
    memo.put((y,), 4)
    assert len(memo) == 2 and memo.get((x,)) == 3 and memo.get((y,)) == 4  # the oldest went
