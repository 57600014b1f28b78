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


def test_bounded_cache_drops_the_oldest_over_either_bound():
    from fvp.machine.npu.memo import BoundedCache

    c = BoundedCache(max_entries=3, max_bytes=100)
    for k in "abc":
        assert c.put(k, k.upper(), 10)
    c.put("d", "D", 10)  # a fourth entry: the oldest goes
    assert list(c.keys()) == ["b", "c", "d"] and c.total_bytes == 30
    c.put("e", "E", 85)  # over the bytes: the oldest go until it fits, the newest stays
    assert list(c.keys()) == ["d", "e"] and c.total_bytes == 95
    assert not c.put("f", "F", 101) and "f" not in c  # larger than the whole cache: not kept
    assert c.get("f") is None and c.get("d") == "D"
    c.put("d", "D2", 5)  # replacing an entry makes it the newest, with its new size
    assert list(c.keys()) == ["e", "d"] and c.total_bytes == 90 and c.pop("e") == "E" and c.total_bytes == 5


def test_bounded_cache_lru_grow_and_oversized():
    from fvp.machine.npu.memo import BoundedCache

    lru = BoundedCache(max_bytes=30, lru=True)
    for k in "abc":
        lru.put(k, k, 10)
    assert lru.get("a") == "a"  # a hit makes it the newest
    lru.put("d", "d", 10)
    assert list(lru.keys()) == ["c", "a", "d"]
    lru.grow("d", 15)  # what an entry holds grew: the oldest go
    assert list(lru.keys()) == ["d"] and lru.total_bytes == 25
    big = BoundedCache(max_bytes=10, keep_oversized=True)
    big.put("x", 1, 4)
    assert big.put("y", 2, 50) and list(big.keys()) == ["y"]  # kept alone
    big.clear()
    assert len(big) == 0 and big.total_bytes == 0
