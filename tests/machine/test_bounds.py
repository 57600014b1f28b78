"""Issue 16 item 1: what a command stream can make the simulator do is bounded, and --timelimit stops it.

Real corpus streams are decoded with the project's decoder, their size registers rewritten (grown shapes,
still inside the 2**28-element cap) and re-encoded in place (``tools/fuzz.py``'s ``rewrite_stream``); each
must be refused before its work starts (one line, exit 1) or be stopped by ``--timelimit`` inside the operation
(exit 3), in bounded host memory. No test here reads a clock: ``--timelimit`` runs on a fake one that advances
only at the engines' interruption points (``testutil.FakeSimClock``), so "stopped inside the operation" is a
count of the points passed, the same on a loaded host as on an idle one.
"""

from __future__ import annotations

import io
import sys
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from fvp.errors import NpuFault, SimulationStop
from fvp.machine.bus import AddressMap, Bus, Ram
from fvp.machine.npu import bounds
from fvp.machine.npu.device import NpuMemoryPort
from fvp.machine.npu.execute import execute_stream
from fvp.machine.npu.descriptors import AddressRange
from fvp.machine.npu.operations import iter_operations
from fvp.machine.sim import Simulator, interruption_point
from hwdesc.ethosu import CODE

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import fuzz  # noqa: E402
from testutil import FakeSimClock  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "corpus"
ARCH = "ethos-u55-128"

# conv1d's first operation is a POOL AVERAGE 3x10x1 over region 1 (the SRAM scratch)
GROWN_OFM = {"NPU_SET_OFM_HEIGHT_M1": 4095, "NPU_SET_OFM_WIDTH_M1": 4095}
GROWN_IN_DDR = {"NPU_SET_OFM_HEIGHT_M1": 1023, "NPU_SET_OFM_WIDTH_M1": 1023, "NPU_SET_OFM_DEPTH_M1": 255,
                "NPU_SET_IFM_REGION": 0, "NPU_SET_OFM_REGION": 0}
GROWN_KERNEL = {"NPU_SET_KERNEL_HEIGHT_M1": 2047, "NPU_SET_KERNEL_WIDTH_M1": 2047, "NPU_SET_IFM_REGION": 0}


def _grown(changes) -> bytes:
    data = (CORPUS / "conv1d_u55-128.bpte").read_bytes()
    out = fuzz.rewrite_stream(data, ARCH, changes, first_only=True)
    assert out != data and len(out) == len(data)
    return out


def _run(image: bytes, time_limit: float):
    from fvp.boards import load_board
    from fvp.host.run import session

    spec = load_board(None, ["firmware.options.log_outputs=false"])
    out = io.StringIO()
    p = session.build(spec, model=image, model_name="grown", out=out, time_limit=time_limit)
    tracemalloc.start()  # after the board's memories were allocated: what the run itself allocates
    try:
        r = session.run(p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return (r, out.getvalue()), peak


def _traced(fn):
    return fn()


def test_rewrite_stream_changes_only_the_named_registers():
    from fvp.machine.npu.command_stream import decode_commands

    data = (CORPUS / "conv1d_u55-128.bpte").read_bytes()
    start, n = fuzz._stream_location(data)
    before = decode_commands(np.frombuffer(data, "<u4", n, start), ARCH)
    grown = _grown(GROWN_OFM)
    after = decode_commands(np.frombuffer(grown, "<u4", n, start), ARCH)
    changed = [(a.name, b.param) for a, b in zip(before, after) if a != b]
    assert changed == [("NPU_SET_OFM_HEIGHT_M1", 4095), ("NPU_SET_OFM_WIDTH_M1", 4095)]


def test_grown_ofm_refused_before_work(monkeypatch):
    clock = FakeSimClock(monkeypatch)
    (r, text), peak = _traced(lambda: _run(_grown(GROWN_OFM), 30))
    assert r.exit_code == 1 and r.reason == "abort"
    fault = [line for line in text.splitlines() if "NPU bus fault" in line]
    assert len(fault) == 1 and "is larger than ISRAM0+ISRAM1 (2.0 MiB)" in fault[0], text
    assert clock.points == 0 and peak < 64 << 20, (clock.points, peak)  # refused before any of its work


def test_grown_shape_in_ddr_over_the_host_budget_refused(monkeypatch):
    clock = FakeSimClock(monkeypatch)
    (r, text), peak = _traced(lambda: _run(_grown(GROWN_IN_DDR), 30))
    assert r.exit_code == 1
    assert "too large to simulate: it needs about" in text and "host memory" in text, text
    assert clock.points == 0 and peak < 64 << 20, (clock.points, peak)


def test_long_operation_interrupted_by_timelimit(monkeypatch):
    """A 2048x2048 pooling kernel over DDR: inside every bound, 4 million taps of work (minutes); --timelimit 2
    stops it at the first interruption point past the limit, three taps into the operation."""
    clock = FakeSimClock(monkeypatch)
    (r, text), peak = _traced(lambda: _run(_grown(GROWN_KERNEL), 2.0))
    assert r.reason == "time_limit" and r.exit_code == 3, (r.reason, text[-500:])
    assert "Reason: CPU time has been exceeded." in text
    assert clock.points == 3, clock.points
    assert peak < 512 << 20, peak


def test_cli_exit_status_3_for_a_long_operation(tmp_path, capsys, monkeypatch):
    from fvp.host.cli import main

    clock = FakeSimClock(monkeypatch)
    path = tmp_path / "grown.bpte"
    path.write_bytes(_grown(GROWN_KERNEL))
    assert main(["run", str(path), "--timelimit", "1.5", "-C", "firmware.options.log_outputs=false"]) == 3
    assert clock.points == 2, clock.points
    assert "CPU time has been exceeded." in capsys.readouterr().out


def test_interruption_point_is_a_noop_outside_a_run_and_stops_inside():
    interruption_point()  # no simulation: nothing to check
    sim = Simulator(100_000_000, time_limit_s=0.0)
    time.sleep(0.01)
    with sim.interruptible():
        with pytest.raises(SimulationStop) as e:
            interruption_point()
    assert e.value.reason == "time_limit"
    interruption_point()  # the hook is gone after the block
    with Simulator(100_000_000).interruptible():
        interruption_point()  # no time limit: nothing to check


# ------------------------------------------------------------------ DMA and weights, on a real bus


def _bus(size=1 << 20, start=0x2000_0000):
    amap = AddressMap()
    amap.add(start, size, Ram("SRAM", size, frozenset({"npu"})), "SRAM", {"npu"})
    return NpuMemoryPort(Bus(amap), 0xFFFF_FFFF)


def _w(name, param=0, payload=None):
    code = getattr(CODE, name)
    w = [((param & 0xFFFF) << 16) | code]
    return w + ([payload & 0xFFFF_FFFF] if payload is not None else [])


def _dma(length, src=0, dst=0x8_0000):
    words = (_w("NPU_SET_DMA0_SRC_REGION", 0) + _w("NPU_SET_DMA0_DST_REGION", 0) + _w("NPU_SET_DMA0_SRC", 0, src)
             + _w("NPU_SET_DMA0_DST", 0, dst) + _w("NPU_SET_DMA0_LEN", 0, length) + _w("NPU_OP_DMA_START")
             + _w("NPU_OP_STOP"))
    return np.array(words, np.uint32)


def test_dma_longer_than_its_memory_refused():
    mem = _bus()
    res = execute_stream(_dma(0x9_0000), arch=ARCH, base_pointers=[0x2000_0000], memory=mem,
                         shram=np.zeros(48 << 10, np.uint8))
    assert res.fault is not None and res.fault.kind == "bus_error"
    assert "DMA destination" in str(res.fault) and "runs past the end of SRAM" in str(res.fault)
    ok = execute_stream(_dma(0x1000), arch=ARCH, base_pointers=[0x2000_0000], memory=mem,
                        shram=np.zeros(48 << 10, np.uint8))
    assert ok.ok


def test_dma_2d_rows_copied_without_a_python_loop_per_row():
    """U65 2-D DMA: SIZE0 rows of LEN bytes with a gap; a million one-byte rows is one strided copy."""
    mem = _bus(8 << 20)
    src = mem.view(0x2000_0000, 1 << 20)
    src[:] = np.arange(1 << 20) % 251
    words = (_w("NPU_SET_DMA0_SRC_REGION", 0) + _w("NPU_SET_DMA0_DST_REGION", 1 << 9) + _w("NPU_SET_DMA0_SIZE0", 0)
             + _w("NPU_SET_DMA0_SRC", 0, 0) + _w("NPU_SET_DMA0_DST", 0, 2 << 20) + _w("NPU_SET_DMA0_LEN", 0, 16)
             + _w("NPU_SET_DMA0_SKIP0", 0, 16) + _w("NPU_SET_DMA0_SIZE0", 65535) + _w("NPU_OP_DMA_START")
             + _w("NPU_OP_STOP"))
    from testutil import python_lines

    res, lines = python_lines(execute_stream, np.array(words, np.uint32), arch="ethos-u65-256",
                              base_pointers=[0x2000_0000], memory=mem, shram=np.zeros(48 << 10, np.uint8))
    assert res.ok, res.fault
    assert lines < 65535, lines  # not a line per row
    dst = mem.view(0x2020_0000, 65535 * 32).reshape(65535, 32)
    assert (dst[:, :16] == src[:65535 * 16].reshape(65535, 16)).all() and not dst[:, 16:].any()


def test_mlw_maximum_expansion_bounds_real_streams():
    mlw = pytest.importorskip("ethosu.mlw_codec")
    for values in (np.zeros(100_000, np.int16), np.ones(100_000, np.int16), np.arange(-255, 256, dtype=np.int16)):
        enc = mlw.encode(values.tolist())
        assert len(values) <= bounds.max_decoded_weights(len(enc))
    assert bounds.max_decoded_weights(0) == 0


def test_weights_beyond_what_the_stream_can_encode_refused():
    from tests.machine.npu.corpus import load

    prog = load("linear_u55-128")
    blob = prog.blobs[0]
    conv = next(op for _, op in iter_operations(blob.stream, ARCH) if op.kind == "CONV")
    short = replace(conv, ofm=replace(conv.ofm, depth=64),  # 64 x 3 weights from one byte
                    weights=(AddressRange(conv.weights[0].region, conv.weights[0].address, 1),))

    class Ctx:
        bases = [0] * 8
        mask = 0xFFFF_FFFF
        memory = object()
        engine = None

        def view(self, region, offset, length, write):
            return None

    with pytest.raises(NpuFault) as e:
        bounds.check_kernel_op(Ctx(), short)
    assert e.value.kind == "cmd_parse_error" and "needs 192 weights, but its 1-byte weight stream can encode at most 64" in str(e.value)
    bounds.check_kernel_op(Ctx(), conv)  # the real one fits


def test_operations_per_stream_bounded(monkeypatch):
    """A stream of more operations than the bound faults when it passes the bound (checked with the bound at 5,000
    rather than the real 100,000: the same check, a twentieth of the decoding)."""
    assert bounds.MAX_OPERATIONS_PER_STREAM == 100_000
    monkeypatch.setattr(bounds, "MAX_OPERATIONS_PER_STREAM", 5_000)
    n = bounds.MAX_OPERATIONS_PER_STREAM + 10
    words = np.full(n, getattr(CODE, "NPU_OP_KERNEL_WAIT"), np.uint32)
    words[-1] = getattr(CODE, "NPU_OP_STOP")
    res = execute_stream(words, arch=ARCH, base_pointers=[0] * 8, memory=None, shram=np.zeros(1024, np.uint8))
    assert res.fault is not None and res.fault.kind == "unsupported"
    assert f"more than {bounds.MAX_OPERATIONS_PER_STREAM} operations" in str(res.fault)
