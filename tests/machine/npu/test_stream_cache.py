"""Decoded streams are reused by content: a replay gives the same results, and the same fault, command count
and offset as a first decode when memory is bad."""

import numpy as np

from fvp.machine.npu import execute as X
from fvp.machine.npu.arch import get_arch
from .helpers import FakeMemory, extract_vela_blobs, run_blob
from testutil import CORPUS


def _blob():
    (blob,) = extract_vela_blobs((CORPUS / "add_q.pte").read_bytes())
    return blob


def test_replay_equals_first_decode():
    blob = _blob()
    X._DECODED.clear()
    ins = [bytes([100]), bytes([27])]
    r1, o1 = run_blob(blob, ins)
    assert len(X._DECODED) == 1
    r2, o2 = run_blob(blob, ins)
    assert o1 == o2 and r1.ok and r2.ok
    assert [r.op for r in r1.operations] == [r.op for r in r2.operations]
    assert [r.bytes_read for r in r1.operations] == [r.bytes_read for r in r2.operations]
    assert (r1.commands, r1.end_offset) == (r2.commands, r2.end_offset)


def _run_with_scratch_missing(blob):
    arch = get_arch("ethos-u55-128")
    mem = FakeMemory()
    mem.add(0x7000_0000, blob.weight_data)
    bases = [0x7000_0000, 0x5000_0000, 0] + [0] * 5  # region 1 points at nothing
    return X.execute_stream(blob.stream, arch=arch, base_pointers=bases, memory=mem,
                            shram=np.zeros(arch.shram_bytes, np.uint8))


def test_fault_in_a_replay_matches_a_fresh_decode():
    blob = _blob()
    X._DECODED.clear()
    fresh = _run_with_scratch_missing(blob)
    assert fresh.fault is not None and fresh.fault.kind == "bus_error"
    run_blob(blob, [bytes([1]), bytes([2])])  # decodes cleanly: now cached
    replay = _run_with_scratch_missing(blob)
    assert replay.fault.kind == fresh.fault.kind and replay.fault.offset == fresh.fault.offset
    assert (replay.commands, replay.end_offset) == (fresh.commands, fresh.end_offset)
    assert len(replay.operations) == len(fresh.operations)
