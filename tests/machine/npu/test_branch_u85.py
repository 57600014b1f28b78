"""Ethos-U85 NPU_OP_BRANCH: the command processor's program counter, COND_STATUS.result_flag, loop bounds.

The programs are ExecuTorch ``torch.cond`` / ``torch.while_loop`` models lowered into one U85 stream by Vela
(``tests/data/u85/make_programs.py``; their outputs against the TOSA reference model: ``test_u85_programs.py``). The THEN and ELSE blocks of ``cond_sincos`` are told apart by where their
operations lie in the stream (between the RF_TRUE branch's target and the ELSE target, and after it); its int8
input's zero point is -51 (the predicate is sum(x - zp) > 0): 127 takes THEN, -128 ELSE."""

from __future__ import annotations

import numpy as np
import pytest

from hwdesc import ethosu85 as U
from fvp.machine.npu.arch import get_arch
from fvp.machine.npu.checker import StreamChecker
from fvp.machine.npu.operations import iter_operations
from machine.npu.helpers import extract_vela_blobs, run_blob
from testutil import DATA, run_fvp

ARCH = "ethos-u85-128"
U85 = DATA / "u85"
PROGRAMS = [U85 / f"{n}_u85-128.bpte" for n in ("cond_sincos", "cond_two_inputs", "while_grow")]
STOP = 0xFFFF << 16 | U.NPU_OP_STOP


def _branch(cond: int, target: int) -> list:
    return [U.NPU_OP_BRANCH | cond << 16, target]  # CMD1: param[0] the condition (BRANCH_COND), payload the target


def _blob(name="cond_sincos"):
    return extract_vela_blobs((U85 / f"{name}_u85-128.bpte").read_bytes())[0]


def _branches(words):
    return [op for _, op in iter_operations(words, ARCH) if op.kind == "BRANCH"]


def _cond_blocks(blob):
    """(THEN range, ELSE range) of byte offsets in the cond_sincos stream, from its branches."""
    rf, to_else, *_ = _branches(blob.stream)
    assert rf.sub_op == "RF_TRUE" and to_else.sub_op == "ALWAYS" and rf.branch_target == to_else.offset + 8
    end = _branches(blob.stream)[-1].branch_target
    return range(rf.branch_target, to_else.branch_target), range(to_else.branch_target, end)


def test_branches_decode_with_condition_and_target():
    for path in PROGRAMS:
        ops = _branches(extract_vela_blobs(path.read_bytes())[0].stream)
        assert {op.sub_op for op in ops} == {"RF_TRUE", "ALWAYS"}, path.name
        assert all(op.branch_target % 4 == 0 for op in ops)


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_the_condition_picks_the_block(engine):
    blob = _blob()
    then_, else_ = _cond_blocks(blob)
    outs = {}
    for sign in (1, -1):
        res, (out,) = run_blob(blob, [np.full(16, 127 if sign > 0 else -128, np.int8).tobytes()], arch=ARCH, engine=engine)
        assert res.ok, res.fault
        ran = {r.op.offset for r in res.operations if r.op.is_kernel_op}
        block, other = (then_, else_) if sign > 0 else (else_, then_)
        assert any(o in block for o in ran) and not any(o in other for o in ran)
        outs[sign] = out
    assert outs[1] != outs[-1]


def test_engines_agree_on_both_branches():
    blob = _blob()
    for x in (np.arange(-8, 8, dtype=np.int8), np.arange(-128, -112, dtype=np.int8)):
        fast = run_blob(blob, [x.tobytes()], arch=ARCH, engine="fast")[1]
        ref = run_blob(blob, [x.tobytes()], arch=ARCH, engine="reference")[1]
        assert fast == ref


def test_a_branching_stream_is_not_replayed_from_the_decoded_cache():
    """The decoded-stream cache replays a stream's operations in order: a stream that branched is decided by its
    data each run, so the second run, with the other sign, takes the other block."""
    blob = _blob()
    then_, else_ = _cond_blocks(blob)
    for sign in (1, -1, 1):
        res, _ = run_blob(blob, [np.full(16, 127 if sign > 0 else -128, np.int8).tobytes()], arch=ARCH)
        ran = {r.op.offset for r in res.operations if r.op.is_kernel_op}
        assert any(o in (then_ if sign > 0 else else_) for o in ran) and res.branched


def test_result_flag_from_the_operation_before_the_branch():
    """The stream's first POOL (1x4x4 OFM), then BRANCH RF_TRUE over a STOP to a second STOP: which STOP ends the
    stream says whether the flag was set (any non-zero element of the result)."""
    blob = _blob()
    words = [int(w) for w in blob.stream]
    pool = [op for _, op in iter_operations(blob.stream, ARCH) if op.is_kernel_op][0]
    head = words[:pool.offset // 4 + 1]
    n = len(head) * 4
    stream = np.array(head + _branch(1, n + 12) + [STOP, STOP], np.uint32)
    for x, flag in ((np.zeros(16, np.int8), 0), (np.eye(4, dtype=np.int8).reshape(-1), 1)):
        res, _ = run_blob(blob, [x.tobytes()], arch=ARCH, stream=stream)
        assert res.ok and res.result_flag == flag
        assert res.end_offset == (n + 16 if flag else n + 12)
    # the flag a stream starts with is COND_STATUS's (what the last stream or the CPU left)
    res, _ = run_blob(blob, [b""], arch=ARCH, stream=np.array(_branch(1, 12) + [STOP, STOP], np.uint32),
                      result_flag=1)
    assert res.ok and res.end_offset == 16 and res.result_flag == 1


def test_an_endless_loop_stops_at_the_watchdog():
    blob = _blob()
    res, _ = run_blob(blob, [b""], arch=ARCH, stream=np.array(_branch(0, 0) + [STOP], np.uint32), max_commands=5000)
    assert not res.ok and res.fault.kind == "watchdog" and res.commands == 5000


def test_a_loop_of_operations_stops_at_the_record_bound_as_the_watchdog(monkeypatch):
    """A loop through a kernel operation reaches the bound on the operations' records before the command count:
    a watchdog fault that says the stream loops (a stream without branches that long: 'unsupported')."""
    from fvp.machine.npu import bounds

    monkeypatch.setattr(bounds, "MAX_OPERATIONS_PER_STREAM", 50)
    blob = _blob()
    words = [int(w) for w in blob.stream]
    pool = [op for _, op in iter_operations(blob.stream, ARCH) if op.is_kernel_op][0]
    head = words[:pool.offset // 4 + 1]
    res, _ = run_blob(blob, [b""], arch=ARCH, stream=np.array(head + _branch(0, 0) + [STOP], np.uint32))
    assert res.fault.kind == "watchdog" and "25 branches taken" in str(res.fault) and "loops" in str(res.fault)


@pytest.mark.parametrize("target", [2, 12, 1 << 20])
def test_a_branch_outside_the_stream_is_invalid(target):
    blob = _blob()
    res, _ = run_blob(blob, [b""], arch=ARCH, stream=np.array(_branch(0, target) + [STOP], np.uint32))
    assert res.fault.kind == "cmd_parse_error" and "NPU_OP_BRANCH ALWAYS at 0x0 targets" in str(res.fault)


def test_checker_branch_rule():
    blob = _blob()
    found = []
    checker = StreamChecker(get_arch(ARCH), report=found.append)
    res, _ = run_blob(blob, [np.full(16, 5, np.int8).tobytes()], arch=ARCH, checker=checker)
    assert res.ok and not found  # Vela's condition: a one-element CMP_GT right before the branch
    words = [int(w) for w in blob.stream]
    pool = [op for _, op in iter_operations(blob.stream, ARCH) if op.is_kernel_op][0]
    head = words[:pool.offset // 4 + 1]
    n = len(head) * 4
    run_blob(blob, [b""], arch=ARCH, checker=checker, stream=np.array(head + _branch(1, n + 8) + [STOP], np.uint32))
    assert len(found) == 1 and "(rule: branch)" in found[0] and "1x4x4 elements" in found[0]
    found.clear()
    fresh = StreamChecker(checker.arch, report=found.append)
    run_blob(blob, [b""], arch=ARCH, checker=fresh, stream=np.array(_branch(1, 8) + [STOP], np.uint32))
    assert len(found) == 1 and "set by no NPU operation" in found[0]
    # a loop with no way out: one error, however often it runs; a loop with an exit (Vela's WHILE): none
    found.clear()
    res, _ = run_blob(blob, [b""], arch=ARCH, checker=StreamChecker(checker.arch, report=found.append),
                      stream=np.array(head + _branch(0, 0) + [STOP], np.uint32), max_commands=500)
    assert res.fault.kind == "watchdog"
    assert len(found) == 1 and "the loop never ends" in found[0] and "NPU_OP_BRANCH ALWAYS" in found[0]
    found.clear()  # Vela's WHILE loop: the branch back to its condition, taken 7 times; the exit is in the loop
    loop = _blob("while_grow")
    ref = np.load(U85 / "while_grow_u85-128.tosa_ref.npz")
    res, _ = run_blob(loop, [ref["in0_0"].tobytes(), ref["in0_1"].tobytes()], arch=ARCH,
                      checker=StreamChecker(checker.arch, report=found.append))
    back = [r.op for r in res.operations if r.op.kind == "BRANCH" and r.op.branch_target < r.op.offset]
    assert res.ok and len(back) == 7 and not found


def test_disassembly_names_condition_and_target():
    rc, out, err = run_fvp("disasm", PROGRAMS[0])
    assert rc == 0
    lines = [ln for ln in out.splitlines() if "NPU_OP_BRANCH" in ln]
    assert lines and all(("RF_TRUE -> 0x" in ln) or ("ALWAYS -> 0x" in ln) for ln in lines)
    assert any("BRANCH RF_TRUE" in ln for ln in out.splitlines() if ln.startswith("#"))


def test_a_replayed_stream_leaves_the_flag_its_last_operation_wrote():
    """A replayed stream's copy batches compute no result array: the flag then comes from the last operation's
    OFM in memory (``execute._flag_after_copy_runs``), as a first run would set it."""
    from fvp.machine.npu.execute import _Ctx, _flag_after_copy_runs
    from fvp.machine.npu.traffic import OpRecord
    from machine.npu.helpers import FakeMemory

    blob = _blob()
    pool = [op for _, op in iter_operations(blob.stream, ARCH) if op.is_kernel_op][0]  # OFM 1x4x4 int8 r1@0x0
    mem = FakeMemory()
    scratch = mem.add_zeros(0x2000_0000, 64)
    ctx = _Ctx(get_arch(ARCH), [0, 0x2000_0000], mem, np.zeros(2048, np.uint8), None, None)
    for value, flag in ((0, 0), (3, 1), (0, 0)):
        scratch[15] = value
        ctx.result_flag = 1 - flag
        _flag_after_copy_runs(ctx, [OpRecord(pool)])
        assert ctx.result_flag == flag
