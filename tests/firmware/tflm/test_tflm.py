"""The TFLite Micro inference runner image (firmware/tflm): kernels bit-exact against TFLite's reference
kernels (committed fixtures made by LiteRT's BUILTIN_REF interpreter, and LiteRT itself when installed) and
against plain numpy formulations; the greedy planner; a Vela-compiled model (ethos-u operator + CPU
operators) through `fvp run -c corstone-300-tflm`; bad files, a missing operator and a small arena."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))

pytest.importorskip("tflite")

from harness import have_litert, run_cpu, run_litert  # noqa: E402
from models import FLOAT_MODELS, MODELS, inputs_for  # noqa: E402
from tflite_builder import Op, T, build  # noqa: E402

from firmware.tflm import fixedpoint as fx  # noqa: E402
from firmware.tflm.interpreter import InterpreterError  # noqa: E402
from firmware.tflm.model import ModelError, load_model  # noqa: E402
from firmware.tflm.planner import Buffer, plan_greedy  # noqa: E402

FIXTURES = np.load(HERE / "fixtures.npz")


def _same(a, b, name):
    if name in FLOAT_MODELS and a.dtype == np.float32:
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7)  # float kernels: the same formula, libm may differ
    else:
        assert a.dtype == b.dtype and np.array_equal(a, b), f"{name}: max diff {np.abs(a.astype(np.int64) - b).max()}"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_kernel_matches_tflite_reference_fixture(name):
    data = MODELS[name]()
    ins = [FIXTURES[f"{name}/in{i}"] for i in range(len(load_model(data).inputs))]
    ours = run_cpu(data, ins)
    for i, y in enumerate(ours):
        _same(y, FIXTURES[f"{name}/out{i}"], name)


# the same models against LiteRT itself on other seeds: `make_fixtures.py --verify` (LiteRT is an optional extra,
# never needed by the tests, so that wider check is a tool, not a test that would only ever be skipped here)


# ------------------------------------------------------------------ slow obvious numpy formulations


def _mbqm(x: int, m: int, s: int) -> int:
    """MultiplyByQuantizedMultiplier on Python ints, written out."""
    x = x * (1 << max(s, 0))
    ab = x * m
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    hi = int((ab + nudge) / (1 << 31)) if abs(ab + nudge) < (1 << 52) else (ab + nudge) // (1 << 31) if ab + nudge >= 0 else -((-(ab + nudge)) // (1 << 31))
    r = max(-s, 0)
    if r == 0:
        return hi
    q = hi >> r
    rem = hi - (q << r)
    thr = ((1 << r) - 1) >> 1
    thr += 1 if hi < 0 else 0
    return q + (1 if rem > thr else 0)


def test_mbqm_matches_scalar_formula():
    r = np.random.default_rng(0)
    xs = r.integers(-(1 << 24), 1 << 24, 2000)
    for x in xs[:300]:
        for m, s in ((1 << 30, -3), (1518500250, 2), (2_000_000_000, -12), (1_234_567_890, 0)):
            assert int(fx.mbqm(int(x), m, s)) == _mbqm(int(x), m, s)


def _tensor(m, name):
    return next(t for t in m.tensors if t.name == name)


def test_conv_matches_numpy_loops():
    from models import m_conv

    data = m_conv(padding=0, stride=2, act=1)
    m = load_model(data)
    x = inputs_for(data, 5)[0]
    ours = run_cpu(data, [x])[0]
    tw, tb, ti, to = (_tensor(m, n) for n in ("w", "b", "x", "y"))
    w = np.frombuffer(data, np.int8, tw.numel, tw.data_offset).reshape(tw.shape).astype(int)
    b = np.frombuffer(data, np.int32, tb.numel, tb.data_offset).astype(int)
    oc, kh, kw, ic = w.shape
    _, oh, ow, _ = to.shape
    zi, zo = ti.params_zero_point, to.params_zero_point
    ph = max((oh - 1) * 2 + kh - x.shape[1], 0) // 2
    pw = max((ow - 1) * 2 + kw - x.shape[2], 0) // 2
    lo = max(-128, zo)
    for c in range(oc):
        mult, sh = fx.quantize_multiplier(float(np.float64(ti.params_scale)) * float(np.float64(tw.scale[c]))
                                          / float(np.float64(to.params_scale)))
        for oy in range(oh):
            for ox in range(ow):
                acc = 0
                for ky in range(kh):
                    for kx in range(kw):
                        iy, ix = oy * 2 - ph + ky, ox * 2 - pw + kx
                        if 0 <= iy < x.shape[1] and 0 <= ix < x.shape[2]:
                            acc += int(np.dot(w[c, ky, kx], x[0, iy, ix].astype(int) - zi))
                v = min(max(_mbqm(acc + b[c], mult, sh) + zo, lo), 127)
                assert ours[0, oy, ox, c] == v


def test_pool_and_mean_match_numpy():
    from models import m_mean, m_pool

    data = m_pool("AVERAGE_POOL_2D", padding=0, stride=2, f=3)
    x = inputs_for(data, 3)[0]
    y = run_cpu(data, [x])[0]
    for oy in range(y.shape[1]):
        for ox in range(y.shape[2]):
            y0, x0 = oy * 2 - 1, ox * 2  # SAME: 9 rows pad 1 before, 8 columns pad 0 before (3x3, stride 2)
            win = x[0, max(y0, 0):min(y0 + 3, 9), max(x0, 0):min(x0 + 3, 8), :].astype(int)
            n = win.shape[0] * win.shape[1]
            s = win.sum(axis=(0, 1))
            ref = [int((v + n // 2) / n) if v > 0 else int((v - n // 2) / n) for v in s]
            assert list(y[0, oy, ox]) == ref
    data = m_mean(keep=False)
    m = load_model(data)
    x = inputs_for(data, 4)[0]
    y = run_cpu(data, [x])[0]
    ti, to = _tensor(m, "x"), _tensor(m, "y")
    real = x.astype(float).sum(axis=(1, 2)) - 30 * ti.params_zero_point
    approx = real * ti.params_scale / to.params_scale / 30 + to.params_zero_point
    assert np.abs(y.astype(float) - np.clip(np.round(approx), -128, 127)).max() <= 1


def test_softmax_int8_close_to_float_softmax():
    from models import m_softmax

    data = m_softmax(n=40, in_scale=0.07)
    x = inputs_for(data, 9)[0]
    y = run_cpu(data, [x])[0].astype(float)
    f = (x.astype(float) - 3) * 0.07
    e = np.exp(f - f.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    assert np.abs((y + 128) / 256 - p).max() <= 1.5 / 256


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
    return subprocess.run([sys.executable, "-m", "fvp", "run", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


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
    p = _fvp(str(f), "-c", "corstone-300-tflm")
    assert p.returncode == 1 and "Traceback" not in p.stdout + p.stderr
    assert "ERROR - Failed to initialise model" in p.stdout


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
    d = subprocess.run([sys.executable, "-m", "fvp.host.dropin", "-C", "mps3_board.uart0.out_file=-",
                        "--data", f"{compiled}@0x90000000"], capture_output=True, text=True, timeout=600)
    assert d.returncode == 0, d.stdout + d.stderr
    assert "NPU ACTIVE cycles: " + active in d.stdout
    u65 = _fvp(str(compiled), "--target", "ethos-u65-256")
    assert u65.returncode == 1 and "NPU config mismatch" in u65.stdout  # a U55-128 stream on a U65
