"""The TFLite Micro image's planner and loader, and the image on the board: a Vela-compiled model (ethos-u operator
+ CPU operators) through `fvp run`, the drop-in, bad files, an unknown planner and a small arena."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))

pytest.importorskip("tflite")

from harness import have_litert, run_cpu, run_litert  # noqa: E402
from models import inputs_for  # noqa: E402
from tflite_builder import Op, T, build  # noqa: E402

from firmware.tflm.interpreter import InterpreterError  # noqa: E402
from firmware.tflm.model import ModelError, load_model  # noqa: E402
from firmware.tflm.planner import Buffer, plan_greedy  # noqa: E402
from testutil import fvp_process, run_fvp  # noqa: E402


# ------------------------------------------------------------------ planner


def test_greedy_planner_first_fit_by_size():
    # three buffers: A [0,1] 32 B, B [1,2] 48 B, C [2,3] 32 B: B (largest) at 0, A and C after it; C may reuse A's
    bufs = [Buffer(0, 32, 0, 1), Buffer(1, 48, 1, 2), Buffer(2, 32, 2, 3)]
    head = plan_greedy(bufs)
    assert [b.offset for b in bufs] == [48, 0, 48] and head == 80
    # an offline-planned buffer keeps its offset; an online one goes around it
    bufs = [Buffer(0, 64, 0, 2, offline_offset=16), Buffer(1, 16, 1, 1), Buffer(2, 32, 0, 2)]
    plan_greedy(bufs)
    assert bufs[0].offset == 16 and bufs[2].offset == 80 and bufs[1].offset == 0


def test_planner_reuses_memory_in_a_chain():
    from models import m_float_chain

    data = m_float_chain()
    run_cpu(data, inputs_for(data), planner="greedy")
    run_cpu(data, inputs_for(data), planner="linear")


# ------------------------------------------------------------------ errors


def test_missing_operator_fails_at_load_with_its_name():
    data = build([T("x", [4], "float32"), T("y", [4], "float32")], [Op("ELU", ["x"], ["y"])], ["x"], ["y"])
    with pytest.raises(InterpreterError) as e:
        run_cpu(data, [np.zeros(4, np.float32)])
    assert e.value.lines[0] == "Didn't find op for builtin opcode 'ELU'"


def test_an_unimplemented_custom_operator_is_named_where_the_run_stops(tmp_path):
    """TFLite Micro's signal-library operators (its audio front end: SignalWindow, SignalFftAutoScale, ...) are
    custom operators this runner does not implement: TFLM's two lines in the log, and the stop reason and fvp's
    error line name the operator."""
    data = build([T("x", [4], "int16"), T("y", [4], "int16")], [Op("CUSTOM:SignalWindow", ["x"], ["y"])],
                 ["x"], ["y"])
    f = tmp_path / "front_end.tflite"
    f.write_bytes(data)
    rc, out, err = run_fvp("run", f, "-c", "corstone-300-tflm")
    assert rc == 1 and "ERROR - Failed to get registration from op code CUSTOM" in out
    assert err.strip().splitlines()[-1] == ("fvp: error: the application aborted: front_end.tflite: Didn't find "
                                            "op for custom opcode 'SignalWindow' (exit status 1)"), err


@pytest.mark.parametrize("cut", [0, 7, 40, 200])
def test_truncated_or_corrupt_file_is_one_line(cut):
    from models import m_add

    data = m_add()
    bad = data[:cut] if cut < 200 else data[:8] + bytes(b ^ 0x5A for b in data[8:])
    with pytest.raises((ModelError, InterpreterError)) as e:
        run_cpu(bad, inputs_for(data))
    assert "\n" not in str(e.value)


def test_wrong_schema_version():
    from models import T as _T

    data = build([_T("x", [4], "float32"), _T("y", [4], "float32")], [Op("RELU", ["x"], ["y"])], ["x"], ["y"], version=2)
    with pytest.raises(ModelError, match="schema version 2"):
        load_model(data)


# ------------------------------------------------------------------ the image on the board


def _fvp(*args, cwd=None):
    return fvp_process("run", *args, cwd=cwd)


@pytest.fixture(scope="module")
def vela_model(tmp_path_factory):
    pytest.importorskip("ethosu.vela")
    from vela_models import compile_with_vela, source_model

    d = tmp_path_factory.mktemp("vela")
    src = d / "split.tflite"
    src.write_bytes(source_model())
    return src, compile_with_vela(src, d)


def test_vela_model_runs_npu_and_cpu_parts_bit_exact(vela_model, tmp_path):
    src, compiled = vela_model
    m = load_model(compiled.read_bytes())
    assert [o.op_name for o in m.operators] == ["ethos-u", "DEQUANTIZE", "SOFTMAX"]
    x = inputs_for(src.read_bytes(), 11)[0]
    np.save(tmp_path / "in.npy", x)
    p = _fvp(str(compiled), "-c", "corstone-300-tflm", "-i", str(tmp_path / "in.npy"), "-o", str(tmp_path / "out"))
    assert p.returncode == 0, p.stdout + p.stderr
    log = p.stdout
    for s in ("INFO - Activation buffer (a.k.a tensor arena) size used:", "INFO - Number of operators: 3",
              "INFO - \tOperator 0: ethos-u", "INFO - Profile for Inference:", "INFO - NPU ACTIVE cycles: ",
              "INFO - NPU IDLE cycles: ", "INFO - NPU TOTAL cycles: ", "INFO - NPU AXI0_RD_DATA_BEAT_RECEIVED beats: ",
              "INFO - NPU AXI0_WR_DATA_BEAT_WRITTEN beats: ", "INFO - NPU AXI1_RD_DATA_BEAT_RECEIVED beats: ",
              "INFO - CPU TOTAL cycles: ", "Simulation stopped by user"):
        assert s in log, s
    active = int(log.split("NPU ACTIVE cycles: ")[1].split()[0])
    assert active > 0
    ours = np.fromfile(tmp_path / "out-0.bin", np.float32).reshape(1, 6, 6, 16)
    # the CPU part alone, from the NPU's int8 output, equals TFLite's float kernels; the whole model against the
    # original model's reference run (when LiteRT is there): the NPU's ADD/CONV arithmetic is TFLite's here
    if have_litert():
        ref = run_litert(src.read_bytes(), [x])[0]
        np.testing.assert_allclose(ours, ref, rtol=2e-6, atol=1e-7)


def test_arena_too_small_is_one_line_exit_1(vela_model):
    _, compiled = vela_model
    p = _fvp(str(compiled), "-c", "corstone-300-tflm", "-C", "firmware.pools.arena.size=256")
    assert p.returncode == 1
    assert "ERROR - Failed to resize buffer. Requested:" in p.stdout and "Traceback" not in p.stdout + p.stderr
    assert "Reason: the application aborted" in p.stdout


def test_corrupt_file_on_the_board_is_one_line(tmp_path):
    f = tmp_path / "bad.tflite"
    f.write_bytes(b"\x10\x00\x00\x00TFL3" + bytes(range(50)))
    p = _fvp(str(f), "-c", "corstone-300-tflm")  # fvp run asks the image's reader first: a bad model file
    assert p.returncode == 2 and "Traceback" not in p.stdout + p.stderr and p.stdout == ""
    assert p.stderr.startswith(f"fvp: error: {f}: not a valid TFLite flatbuffer") and len(p.stderr.splitlines()) == 1
    rc, out, err = run_fvp("--data", f"{f}@0x70000000", prog="fvp.host.dropin")  # the runner, given it anyway
    assert rc == 1 and "ERROR - Failed to initialise model" in out and "Traceback" not in out + err


def test_unknown_planner_is_a_config_error(tmp_path):
    from models import m_add

    f = tmp_path / "add.tflite"
    f.write_bytes(m_add())
    p = _fvp(str(f), "-c", "corstone-300-tflm", "-C", "firmware.allocator=best")
    assert p.returncode == 2 and "firmware.allocator" in p.stdout + p.stderr


def test_fvp_run_and_the_dropin_pick_the_tflm_image_for_a_tflite(vela_model, tmp_path):
    """Host glue: a .tflite runs on the TFLite Micro board without -c, and through the drop-in's --data (MLEK's
    dynamic-model address 0x90000000), with the same NPU figures."""
    _, compiled = vela_model
    p = _fvp(str(compiled))
    assert p.returncode == 0, p.stdout + p.stderr
    active = p.stdout.split("NPU ACTIVE cycles: ")[1].split()[0]
    d = fvp_process("-C", "mps3_board.uart0.out_file=-", "--data", f"{compiled}@0x90000000", prog="fvp.host.dropin")
    assert d.returncode == 0, d.stdout + d.stderr
    assert "NPU ACTIVE cycles: " + active in d.stdout
    u65 = _fvp(str(compiled), "--target", "ethos-u65-256")
    assert u65.returncode == 1 and "NPU config mismatch" in u65.stdout  # a U55-128 stream on a U65
