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

from firmware import fixedpoint as fx  # noqa: E402
from firmware.tflm.interpreter import InterpreterError  # noqa: E402
from firmware.tflm.model import ModelError, load_model  # noqa: E402
from firmware.tflm.planner import Buffer, plan_greedy  # noqa: E402
from testutil import run_fvp  # noqa: E402

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


def _weighted(data, bias_dtype=np.int32):
    """A model's weights ``w`` (int8) and bias ``b`` as int arrays from its buffers, and its ``w``, ``x`` and
    ``y`` tensors (scales, zero points, shapes)."""
    m = load_model(data)
    tw, tb, ti, to = (_tensor(m, n) for n in ("w", "b", "x", "y"))
    w = np.frombuffer(data, np.int8, tw.numel, tw.data_offset).reshape(tw.shape).astype(int)
    b = np.frombuffer(data, np.dtype(bias_dtype), tb.numel, tb.data_offset).astype(int)
    return w, b, tw, ti, to


def test_conv_matches_numpy_loops():
    from models import m_conv

    data = m_conv(padding=0, stride=2, act=1)
    x = inputs_for(data, 5)[0]
    ours = run_cpu(data, [x])[0]
    w, b, tw, ti, to = _weighted(data)
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


def test_tanh_int8_follows_tflm_integer_path_not_the_tflite_table():
    """At s_in 0.030273633 zp -12, input -115 (x = -3.118184, 128 tanh(x) = -127.4999994) TFLM's fixed-point
    path gives -127 (tflite-micro 90b983c2's reference_integer_ops::Tanh compiled and run over all 256 inputs);
    LiteRT 2.3.0's reference kernel gives -128 from its float-made table (its other 255 outputs agree)."""
    from models import m_tanh

    data = m_tanh(scale=0.03027363307774067, zp=-12)
    x = np.arange(-128, 128, dtype=np.int8).reshape(4, 64)
    y = run_cpu(data, [x])[0].reshape(-1)
    assert y[-115 + 128] == -127 and y[-116 + 128] == -128 and y[-114 + 128] == -127


def test_logistic_tanh_int8_close_to_the_float_functions():
    from models import m_logistic, m_tanh

    x = np.arange(-128, 128, dtype=np.int8).reshape(4, 64)
    for fn, f, s_out, z_out in ((m_logistic, lambda v: 1 / (1 + np.exp(-v)), 1 / 256, -128),
                                (m_tanh, np.tanh, 1 / 128, 0)):
        for scale, zp in ((0.1, 3), (0.02, -10), (0.3, 0)):
            y = run_cpu(fn(scale=scale, zp=zp), [x])[0].astype(float)
            want = np.clip(np.round(f((x.astype(float) - zp) * scale) / s_out) + z_out, -128, 127)
            assert np.abs(y - want).max() <= 1


def test_int16_logistic_tanh_close_to_the_float_functions():
    from models import m_logistic, m_tanh

    x = np.arange(-32768, 32768, 7, dtype=np.int16).reshape(1, -1)
    for fn, f in ((m_logistic, lambda v: 1 / (1 + np.exp(-v))), (m_tanh, np.tanh)):
        for scale in (2.0 ** -12, 10.0 / 32768):
            data = fn("int16", scale)
            m = load_model(data)
            model = build([T("x", list(x.shape), "int16", scale=[scale], zero_point=[0]),
                           T("y", list(x.shape), "int16", scale=[2.0 ** -15], zero_point=[0])],
                          [Op(m.operators[0].op_name, ["x"], ["y"])], ["x"], ["y"])
            y = run_cpu(model, [x])[0].astype(float) / 32768
            assert np.abs(y - f(x.astype(float) * np.float32(scale))).max() < 2.5e-4


def test_hard_swish_int8_close_to_the_float_function():
    from models import m_hard_swish

    x = np.arange(-128, 128, dtype=np.int8).reshape(4, 64)
    for si, zi, so, zo in ((0.05, -10, 0.03, -100), (0.2, 20, 0.1, -128), (0.004, 0, 0.003, 3)):
        y = run_cpu(m_hard_swish(si=si, zi=zi, so=so, zo=zo), [x])[0].astype(float)
        v = (x.astype(float) - zi) * si
        want = np.clip(np.round(v * np.clip(v + 3, 0, 6) / 6 / so) + zo, -128, 127)
        assert np.abs(y - want).max() <= 1


def test_strided_slice_matches_python_slicing():
    """Random begin/end/strides and begin/end masks (and in-range shrinks with positive strides) against numpy's
    own slicing, whose clamping of out-of-range bounds is TFLite's."""
    from models import m_strided_slice

    r = np.random.default_rng(3)
    for _ in range(60):
        shape = [int(d) for d in r.integers(1, 7, r.integers(1, 5))]
        begin, end, strides, index = [], [], [], []
        bm = em = sh = 0
        for a, n in enumerate(shape):
            s = int(r.choice([-3, -2, -1, 1, 2, 3]))
            b, e = (int(v) for v in r.integers(-n - 2, n + 3, 2))
            if r.random() < 0.2 and n:
                b, s = int(r.integers(-n, n)), 1
                sh |= 1 << a
                index.append(b)
            else:
                mb, me = r.random() < 0.3, r.random() < 0.3
                bm |= mb << a
                em |= me << a
                index.append(slice(None if mb else b, None if me else e, s))
            begin.append(b), end.append(e if not sh >> a & 1 else b + 1), strides.append(s)
        x = r.integers(-1000, 1000, shape).astype(np.int32)
        want = x[tuple(index)]
        data = m_strided_slice(shape, begin, end, strides, list(want.shape), "int32", begin_mask=bm,
                               end_mask=em, shrink=sh)
        np.testing.assert_array_equal(run_cpu(data, [x])[0], want)


def _nearest_loop(x, oh, ow, align, half):
    _, ih, iw, _ = x.shape

    def src(i, n_in, n_out):
        scale = np.float32(n_in - 1) / np.float32(n_out - 1) if align and n_out > 1 else \
            np.float32(n_in) / np.float32(n_out)
        v = np.float32(np.float32(i + (0.5 if half else 0.0)) * scale)
        k = int(np.sign(v) * np.floor(abs(v) + 0.5)) if align else int(np.floor(v))
        k = min(k, n_in - 1)
        return max(k, 0) if half else k
    return np.stack([np.stack([x[:, src(i, ih, oh), src(j, iw, ow)] for j in range(ow)], 1)
                     for i in range(oh)], 1)


def _bilinear_int_loop(x, oh, ow, align, half):
    _, ih, iw, _ = x.shape

    def scale10(n_in, n_out):
        if align and n_out > 1:
            return ((1 << 10) * (n_in - 1) + (n_out - 1) // 2) // (n_out - 1)
        return ((1 << 10) * n_in + n_out // 2) // n_out

    def cdiv(a, b):
        return int(a / b) if abs(a) < (1 << 50) else None

    def interp(i, s, n_in):
        v = i * s + s // 2 - 512 if half else i * s
        return v, max(cdiv(v, 1024), 0), min(cdiv(v + 1023, 1024), n_in - 1)
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]), np.int8)
    sy, sx = scale10(ih, oh), scale10(iw, ow)
    for i in range(oh):
        vy, y0, y1 = interp(i, sy, ih)
        for j in range(ow):
            vx, x0, x1 = interp(j, sx, iw)
            for n in range(x.shape[0]):
                for c in range(x.shape[3]):
                    a = [int(x[n, y0, x0, c]), int(x[n, y1, x0, c]), int(x[n, y0, x1, c]), int(x[n, y1, x1, c])]
                    fy, fx_ = vy - 1024 * y0, vx - 1024 * x0
                    acc = (a[0] * (1024 - fy) * (1024 - fx_) + a[1] * fy * (1024 - fx_) + a[2] * (1024 - fy) * fx_
                           + a[3] * fy * fx_)
                    out[n, i, j, c] = int((acc + (1 << 19 if acc > 0 else -(1 << 19))) / (1 << 20))
    return out


@pytest.mark.parametrize("align,half", [(False, False), (True, False), (False, True)])
def test_resize_matches_written_out_loops(align, half):
    from models import m_resize

    r = np.random.default_rng(8)
    for shape, size in (([1, 3, 5, 2], [7, 4]), ([2, 8, 6, 3], [3, 9]), ([1, 1, 4, 1], [5, 1])):
        x = r.integers(-128, 128, shape).astype(np.int8)
        for kind, loop in (("RESIZE_NEAREST_NEIGHBOR", _nearest_loop), ("RESIZE_BILINEAR", _bilinear_int_loop)):
            y = run_cpu(m_resize(kind, shape, size, align=align, half=half), [x])[0]
            np.testing.assert_array_equal(y, loop(x, size[0], size[1], align, half), err_msg=kind)


# ------------------------------------------------------------------ int16 / 16x8


def _mbqm64(acc: int, m: int, s: int) -> int:
    """The int64 MultiplyByQuantizedMultiplier written out: the Q31 multiplier rounded to Q15, one rounding shift."""
    reduced = (m + (1 << 15)) >> 16 if m < 0x7FFF0000 else 0x7FFF
    r = (acc * reduced + (1 << (14 - s))) >> (15 - s)
    return ((r + (1 << 31)) % (1 << 32)) - (1 << 31)


@pytest.mark.parametrize("bias,option", [("int64", 0), ("int32", 0), (None, 0), (None, 2)])
def test_conv16_matches_written_out_loops(bias, option):
    """16x8 CONV_2D: the int16 kernel reads no zero point; an int32 bias (or none with quantized_bias_type INT32)
    takes the 32-bit accumulator and the int32 requantization, otherwise 64 bits. The int32-bias and bias-less
    models are ones LiteRT's reference kernel computes otherwise or refuses (TFLM: the same values as here, checked
    with tflite-micro 90b983c2 compiled)."""
    from models import m_conv16

    data = m_conv16(bias, padding=0, stride=2, act=1, bias_type_option=option)
    m = load_model(data)
    x = inputs_for(data, 5)[0]
    ours = run_cpu(data, [x])[0]
    tw, ti, to = (_tensor(m, n) for n in ("w", "x", "y"))
    w = np.frombuffer(data, np.int8, tw.numel, tw.data_offset).reshape(tw.shape).astype(int)
    b = [0] * 6
    if bias:
        tb = _tensor(m, "b")
        b = np.frombuffer(data, np.dtype(bias), tb.numel, tb.data_offset).astype(int).tolist()
    acc32 = bias == "int32" or (bias is None and option == 2)
    oc, kh, kw, ic = w.shape
    _, oh, ow, _ = to.shape
    ph = max((oh - 1) * 2 + kh - x.shape[1], 0) // 2
    pw = max((ow - 1) * 2 + kw - x.shape[2], 0) // 2
    for c in range(oc):
        mult, sh = fx.quantize_multiplier(float(np.float64(ti.params_scale)) * float(np.float64(tw.scale[c]))
                                          / float(np.float64(to.params_scale)))
        for oy in range(oh):
            for ox in range(ow):
                acc = b[c]
                for ky in range(kh):
                    for kx in range(kw):
                        iy, ix = oy * 2 - ph + ky, ox * 2 - pw + kx
                        if 0 <= iy < x.shape[1] and 0 <= ix < x.shape[2]:
                            acc += int(np.dot(w[c, ky, kx], x[0, iy, ix].astype(int)))
                v = _mbqm(acc, mult, sh) if acc32 else _mbqm64(acc, mult, sh)
                assert ours[0, oy, ox, c] == min(max(v, 0), 32767), (c, oy, ox)


def test_conv16_ignores_zero_points():
    """reference_integer_ops::ConvPerChannel for int16 has no input or output offset: zero points 5 give the bytes
    zero points 0 give (TFLM accepts them; LiteRT refuses a nonzero int16 zero point at Prepare)."""
    from models import m_conv16

    x = inputs_for(m_conv16(), 3)[0]
    np.testing.assert_array_equal(run_cpu(m_conv16(zp=5), [x])[0], run_cpu(m_conv16(), [x])[0])


def test_fc16_and_dwconv16_match_written_out_loops():
    from models import m_dwconv16, m_fc16

    for bias, pc in (("int64", True), ("int32", False), ("int32", True)):
        data = m_fc16(bias, per_channel=pc)
        x = inputs_for(data, 2)[0].astype(int)
        w, b, tw, ti, to = _weighted(data, bias)
        y = run_cpu(data, [x.astype(np.int16)])[0]
        for u in range(w.shape[0]):
            s_w = float(np.float64(tw.scale[u if pc else 0]))
            real = (float(np.float64(ti.params_scale)) * s_w if pc else
                    float(np.float64(np.float32(ti.params_scale) * np.float32(tw.params_scale))))
            mult, sh = fx.quantize_multiplier(real / float(np.float64(to.params_scale)))
            for n in range(x.shape[0]):
                acc = int(np.dot(w[u], x[n])) + int(b[u])
                v = _mbqm(acc, mult, sh) if bias == "int32" else _mbqm64(acc, mult, sh)
                assert y[n, u] == min(max(v, -32768), 32767), (bias, pc, n, u)
    data = m_dwconv16(padding=1, stride=1, dm=2)
    x = inputs_for(data, 4)[0].astype(int)
    w, b, tw, ti, to = _weighted(data, np.int64)
    y = run_cpu(data, [x.astype(np.int16)])[0]
    for c in range(w.shape[3]):
        mult, sh = fx.quantize_multiplier(float(np.float64(ti.params_scale)) * float(np.float64(tw.scale[c]))
                                          / float(np.float64(to.params_scale)))
        for n, oy, ox in np.ndindex(y.shape[0], y.shape[1], y.shape[2]):
            acc = int((w[0, :, :, c] * x[n, oy:oy + 3, ox:ox + 3, c // 2]).sum()) + int(b[c])
            assert y[n, oy, ox, c] == min(max(_mbqm64(acc, mult, sh), -32768), 32767)


def test_softmax_int16_tables_are_tflms():
    """The exp and 1 / (1 + x) tables of LUTPopulate<int16_t> as TFLM fills them (entries printed by tflite-micro
    90b983c2's common.h compiled with g++/glibc; all 2 x 513 equal), and close to the functions they sample."""
    from firmware.tflm.kernels.softmax import EXP_LUT, ONE_OVER_ONE_PLUS_X_LUT

    assert EXP_LUT[:8].tolist() == [2] * 8 and EXP_LUT[-4:].tolist() == [30902, 31512, 32133, 32767]
    assert ONE_OVER_ONE_PLUS_X_LUT[:3].tolist() == [32767, 32704, 32640] and ONE_OVER_ONE_PLUS_X_LUT[-1] == 16384
    assert int(EXP_LUT.sum()) == 1694030 and int(ONE_OVER_ONE_PLUS_X_LUT.sum()) == 11653643
    t = np.arange(513) / 512
    assert np.abs(EXP_LUT - np.exp(-10 + 10 * t) * 32767.5).max() <= 2
    assert np.abs(ONE_OVER_ONE_PLUS_X_LUT - 32767.5 / (1 + t)).max() <= 2


def test_softmax_int16_close_to_float_softmax():
    from models import m_softmax16

    for n, scale, beta in ((10, 3e-4, 1.0), (64, 1e-4, 0.7), (33, 2e-3, 1.0)):
        data = m_softmax16(n=n, in_scale=scale, beta=beta, rows=4)
        x = inputs_for(data, 6)[0]
        y = run_cpu(data, [x])[0].astype(float) / 32768
        f = x.astype(float) * np.float32(scale) * beta
        e = np.exp(f - f.max(axis=1, keepdims=True))
        assert np.abs(y - e / e.sum(axis=1, keepdims=True)).max() < 2e-3


def _vec16(op, scales, zps, act=0):
    return build([T("x", [5], "int16", scale=[scales[0]], zero_point=[zps[0]]),
                  T("y", [5], "int16", scale=[scales[1]], zero_point=[zps[1]]),
                  T("z", [5], "int16", scale=[scales[2]], zero_point=[zps[2]])],
                 [Op(op, ["x", "y"], ["z"], (f"{op.title()}Options", {"FusedActivationFunction": act}))],
                 ["x", "y"], ["z"])


def _tflm_pinned():
    """(model, inputs, TFLM's output) where LiteRT 2.3.0's reference kernels give other values or refuse the model;
    every expected output is what tflite-micro 90b983c2 compiled (g++, -DNDEBUG) gives for the same bytes."""
    from models import _q, _q16, m_fc16

    x = np.array([-32768, -1, 0, 1234, 32767], np.int16)
    y = np.array([32767, 5, -3, -20000, 32767], np.int16)
    fc = m_fc16()
    pad = build([_q16("x", [2, 2], 4e-4, 7), T("p", [2, 2], "int32", np.array([[1, 0], [0, 1]], np.int32)),
                 _q16("y", [3, 3], 4e-4, 7)], [Op("PAD", ["x", "p"], ["y"])], ["x"], ["y"])
    q8_32 = build([_q("x", [4], 0.02, -3), _q("y", [4], 3e-4, 0, "int32")], [Op("QUANTIZE", ["x"], ["y"])], ["x"], ["y"])
    leaky = build([_q16("x", [5], 3e-4, 9), _q16("y", [5], 2e-4, -4)],
                  [Op("LEAKY_RELU", ["x"], ["y"], ("LeakyReluOptions", {"Alpha": 0.2}))], ["x"], ["y"])
    return {
        # TFLM's int16 ADD checks no zero point (LiteRT requires 0) and always takes the general path
        "add_zero_points": (_vec16("ADD", (3e-4, 5e-4, 7e-4), (5, -3, 2)), [x, y], [9364, 5, 0, -13755, 32767]),
        # power-of-two scales: LiteRT's pot_scale_int16 path needs one input at the output's scale (refuses this)
        "add_pot_scales": (_vec16("ADD", (2 ** -12, 2 ** -13, 2 ** -11), (0, 0, 0)), [x, y], [-8192, 1, -1, -4383, 24575]),
        # ... and where it runs, it rounds the exact half by truncation: LiteRT 11621 -14088 -25121 6 -6
        "sub_pot_scales": (_vec16("SUB", (2 ** -12, 2 ** -13, 2 ** -12), (0, 0, 0)),
                           [np.array([22978, -27838, -31685, 7, -7], np.int16),
                            np.array([22713, -27499, -13127, 1, -1], np.int16)], [11622, -14089, -25122, 7, -7]),
        # sub_common.cc computes the multipliers in float (add_common.cc and LiteRT in double): LiteRT 10988
        "sub_float_multipliers": (_vec16("SUB", (3e-4, 2e-4, 4e-4), (0, 0, 0), act=3),
                                  [np.array([-1758, -1758, 0, 100, 200], np.int16),
                                   np.array([-24614, -24613, 0, 0, 0], np.int16)], [10989, 10988, 0, 75, 150]),
        # 16x8 FC with an int64 bias: TFLM's int64 requantization keeps 16 multiplier bits (LiteRT: 11155, -19897)
        "fc16_int64_requantization": (fc, inputs_for(fc, 1), None),
        # int16 PAD without a constant pads with 0, not the zero point (LiteRT: 7)
        "pad_int16_zero_point": (pad, [np.array([[1, 2], [3, 4]], np.int16)], [[0, 0, 0], [1, 2, 0], [3, 4, 0]]),
        # QUANTIZE int8 -> int32 (LiteRT refuses an int32 output)
        "quantize_int8_int32": (q8_32, [np.array([-128, -3, 0, 127], np.int8)], [-8333, 0, 200, 8667]),
        # int16 LEAKY_RELU with zero points (LiteRT requires 0)
        "leaky_relu_int16_zero_points": (leaky, [x], [-9837, -7, -7, 1834, 32767]),
        # RELU6 clamps the raw input to [zp_in, six_in] and ignores the output quantization (LiteRT rescales to it:
        # 3 3 15 75 91)
        "relu6_output_quantization_ignored": (
            build([_q("x", [5], 0.03, -20), _q("y", [5], 0.05, 3)], [Op("RELU6", ["x"], ["y"])], ["x"], ["y"]),
            [np.array([-128, -20, 0, 100, 127], np.int8)], [-20, -20, 0, 100, 127]),
    }


@pytest.mark.parametrize("case", sorted(_tflm_pinned()))
def test_tflm_values_where_litert_differs(case):
    data, ins, want = _tflm_pinned()[case]
    y = run_cpu(data, ins)[0]
    if want is None:  # the FC case: two entries of a 3 x 10 output
        assert y[0, 3] == 11154 and y[1, 7] == -19896
    else:
        assert y.tolist() == want


def _prepare_error(data, x):
    with pytest.raises(InterpreterError) as e:
        run_cpu(data, [x])
    return e.value.lines


def _bad_models():
    from models import _q, m_conv16, m_dwconv16, m_hard_swish, m_resize, m_strided_slice

    i8 = np.zeros((4, 64), np.int8)
    i16 = np.zeros((2, 512), np.int16)
    ss = np.zeros((2, 3, 4), np.int8)
    rs = np.zeros((1, 3, 4, 5), np.int8)

    def unary(op, x, y, xv):
        return build([x, y], [Op(op, ["x"], ["y"])], ["x"], ["y"]), xv
    return {
        "ellipsis": (m_strided_slice([2, 3, 4], [0, 0, 0], [2, 3, 4], [1, 1, 1], [2, 3, 4], ellipsis=2), ss,
                     "STRIDED_SLICE: ellipsis_mask 2 not supported"),
        "new_axis": (m_strided_slice([2, 3, 4], [0, 0, 0], [2, 3, 4], [1, 1, 1], [2, 1, 3, 4], new_axis=2), ss,
                     "STRIDED_SLICE: new_axis_mask 2 not supported"),
        "zero_stride": (m_strided_slice([2, 3, 4], [0, 0, 0], [2, 3, 4], [1, 0, 1], [2, 3, 4]), ss,
                        "STRIDED_SLICE: stride value has to be non-zero"),
        "five_dims": (m_strided_slice([1, 2, 1, 3, 4], [0] * 5, [1, 2, 1, 3, 4], [1] * 5, [1, 2, 1, 3, 4]),
                      np.zeros((1, 2, 1, 3, 4), np.int8), "STRIDED_SLICE: input dim should not exceed 4"),
        "slice_shape": (m_strided_slice([2, 3, 4], [0, 0, 0], [2, 3, 4], [1, 2, 1], [2, 3, 4]), ss,
                        "STRIDED_SLICE: the slice gives shape [2, 2, 4]"),
        "bilinear_flags": (m_resize("RESIZE_BILINEAR", [1, 3, 4, 5], [6, 8], align=True, half=True), rs,
                           "RESIZE_BILINEAR: If half_pixel_centers is True, align_corners must be False."),
        "bilinear_int16": (m_resize("RESIZE_BILINEAR", [1, 3, 4, 5], [6, 8], "int16"), rs.astype(np.int16),
                           "RESIZE_BILINEAR: Output type is INT16, requires float or int8."),
        "nearest_shape": (build([_q("x", [1, 3, 4, 5], 0.1, 0), T("size", [2], "int32", np.array([6, 8], np.int32)),
                                 _q("y", [1, 6, 7, 5], 0.1, 0)], [Op("RESIZE_NEAREST_NEIGHBOR", ["x", "size"], ["y"])],
                                ["x"], ["y"]), rs, "RESIZE_NEAREST_NEIGHBOR: output shape [1, 6, 7, 5]"),
        "logistic_zp": (*unary("LOGISTIC", _q("x", [4, 64], 0.1, 0), _q("y", [4, 64], 1 / 256, 0), i8),
                        "LOGISTIC: int8 output zero point must be -128"),
        "logistic_int16_out": (*unary("LOGISTIC", _q("x", [2, 512], 2 ** -12, 0, "int16"),
                                      _q("y", [2, 512], 2 ** -14, 0, "int16"), i16),
                               "LOGISTIC: int16 output scale must be 2^-15"),
        "tanh_int16_zp": (*unary("TANH", _q("x", [2, 512], 2 ** -12, 3, "int16"),
                                 _q("y", [2, 512], 2 ** -15, 0, "int16"), i16),
                          "TANH: int16 input zero point must be 0"),
        "tanh_types": (*unary("TANH", _q("x", [4, 64], 0.1, 0), _q("y", [4, 64], 2 ** -15, 0, "int16"), i8),
                       "TANH: input INT8 and output INT16 types differ"),
        "hard_swish_int16": (*unary("HARD_SWISH", _q("x", [2, 512], 0.01, 0, "int16"),
                                    _q("y", [2, 512], 0.01, 0, "int16"), i16),
                             "HARD_SWISH: type INT16 not supported"),
        "hard_swish_scale": (m_hard_swish(si=0.5, zi=0, so=0.001, zo=0), i8,
                             "HARD_SWISH: output multiplier exponent 2 > 0"),
        # int16 / 16x8: each also refused by tflite-micro 90b983c2 compiled, at Prepare or at its Eval, but the
        # int32-bias DEPTHWISE_CONV_2D, which TFLM runs reading the bias as int64 (past its end)
        "argmax_int16": (build([_q("x", [3, 11], 1e-3, 0, "int16"), T("ax", [1], "int32", np.array([1], np.int32)),
                                T("y", [3], "int32")], [Op("ARG_MAX", ["x", "ax"], ["y"], ("ArgMaxOptions", {
                                    "OutputType": 2}))], ["x"], ["y"]), np.zeros((3, 11), np.int16),
                         "ARG_MAX: Only float32, uint8_t and int8_t are supported currently, got INT16."),
        "dwconv16_int32_bias": (m_dwconv16("int32"), np.zeros((2, 8, 6, 4), np.int16),
                                "DEPTHWISE_CONV_2D: int16 input with a INT32 bias"),
        "conv16_int16_bias": (m_conv16("int16"), np.zeros((1, 9, 7, 5), np.int16),
                              "CONV_2D: Bias type INT16 (7) not supported."),
        "fc16_int16_filter": (build([_q("x", [3, 24], 1e-3, 0, "int16"),
                                     T("w", [10, 24], "int16", np.ones((10, 24), np.int16), [0.01], [0]),
                                     _q("y", [3, 10], 1e-2, 0, "int16")],
                                    [Op("FULLY_CONNECTED", ["x", "w"], ["y"], ("FullyConnectedOptions", {}))],
                                    ["x"], ["y"]), np.zeros((3, 24), np.int16),
                              "FULLY_CONNECTED: Input type: INT16 with filter type: INT16 not supported."),
        "softmax16_zero_point": (*unary("SOFTMAX", _q("x", [2, 512], 3e-4, 0, "int16"),
                                        _q("y", [2, 512], 1 / 32768, 5, "int16"), i16),
                                 "SOFTMAX: output->params.zero_point == 0 (it is 5)"),
        "softmax16_scale": (*unary("SOFTMAX", _q("x", [2, 512], 3e-4, 0, "int16"),
                                   _q("y", [2, 512], 1 / 16384, 0, "int16"), i16),
                            "SOFTMAX: output scale 6.103515625e-05 is not within 0.1% of 3.0517578125e-05"),
        "softmax_int8_int16_zero_point": (*unary("SOFTMAX", _q("x", [4, 64], 0.1, 0),
                                                 _q("y", [4, 64], 1 / 65536, 0, "int16"), i8),
                                          "SOFTMAX: output->params.zero_point == -32768 (it is 0)"),
        "mul16_zero_point": (build([_q("x", [4], 1e-3, 3, "int16"), _q("y", [4], 1e-3, 0, "int16"),
                                    _q("z", [4], 1e-3, 0, "int16")], [Op("MUL", ["x", "y"], ["z"])], ["x", "y"],
                                   ["z"]), np.zeros(4, np.int16), "MUL: int16 zero points must be 0"),
        "concat16_zero_point": (build([_q("a", [2, 3], 1e-3, 0, "int16"), _q("b", [2, 3], 1e-3, 4, "int16"),
                                       _q("y", [2, 6], 1e-3, 0, "int16")],
                                      [Op("CONCATENATION", ["a", "b"], ["y"], ("ConcatenationOptions", {"Axis": 1}))],
                                      ["a", "b"], ["y"]), np.zeros((2, 3), np.int16),
                                "CONCATENATION: int16 input zero point 4 (must be 0)"),
        "quantize_float_int32": (*unary("QUANTIZE", T("x", [4, 64], "float32"), _q("y", [4, 64], 0.1, 0, "int32"),
                                        i8.astype(np.float32)),
                                 "QUANTIZE: Input FLOAT32, output INT32 not supported."),
        "avgpool16_scale": (build([_q("x", [1, 4, 4, 2], 3e-4, 0, "int16"), _q("y", [1, 2, 2, 2], 4e-4, 0, "int16")],
                                  [Op("AVERAGE_POOL_2D", ["x"], ["y"], ("Pool2DOptions", {
                                      "Padding": 1, "StrideW": 2, "StrideH": 2, "FilterWidth": 2,
                                      "FilterHeight": 2}))], ["x"], ["y"]), np.zeros((1, 4, 4, 2), np.int16),
                            "AVERAGE_POOL_2D: the output's scale and zero point must be the input's"),
        "relu16_zero_point": (*unary("RELU", _q("x", [2, 512], 3e-4, 4, "int16"), _q("y", [2, 512], 3e-4, 0, "int16"),
                                     i16), "RELU: int16 zero points must be 0 (they are [4, 0])"),
        "transpose_int32": (build([T("x", [2, 3], "int32"), T("p", [2], "int32", np.array([1, 0], np.int32)),
                                   T("y", [3, 2], "int32")], [Op("TRANSPOSE", ["x", "p"], ["y"])], ["x"], ["y"]),
                            np.zeros((2, 3), np.int32), "TRANSPOSE: Type INT32 is currently not supported by Transpose."),
    }


def _fails_at_prepare_with_one_line(data, x, start):
    """The model's first operator fails Prepare: one line starting ``start``, then TFLM's node line."""
    lines = _prepare_error(data, x)
    op = start.split(":")[0]
    assert lines[0].startswith(start) and "\n" not in lines[0], lines
    assert lines[1] == f"Node {op} (number 0) failed to prepare with status 1"


@pytest.mark.parametrize("case", sorted(_bad_models()))
def test_new_kernels_fail_at_prepare_with_one_line(case):
    _fails_at_prepare_with_one_line(*_bad_models()[case])


# ------------------------------------------------------------------ issue 19 operators


def _sum_loop(x, axes, si, zi, so, zo, lo, hi):
    """TFLM's QuantizedMeanOrSum(compute_sum=true) written out: the int32 sum, minus zi * n, MBQM, + zo, clamp."""
    m, sh = fx.quantize_multiplier(float(np.float64(np.float32(si))) / float(np.float64(np.float32(so))))
    n = int(np.prod([x.shape[a] for a in axes]))
    kept = [d for i, d in enumerate(x.shape) if i not in axes]
    out = np.zeros(kept, np.int64)
    xm = np.moveaxis(x, axes, list(range(-len(axes), 0))).reshape(kept + [-1])
    for idx in np.ndindex(*kept):
        acc = 0
        for v in xm[idx]:
            acc += int(v)
        out[idx] = min(max(_mbqm(acc - zi * n, m, sh) + zo, lo), hi)
    return out


@pytest.mark.parametrize("dtype,axes,keep,so,zo", [("int8", (1, 2), True, 0.5, -2), ("int8", (3,), False, 0.2, 7),
                                                   ("int8", (0, 1, 2, 3), True, 3.0, 0),
                                                   ("int16", (0, 2), True, 0.3, 0), ("int16", (1,), False, 0.05, 0)])
def test_sum_int8_int16_matches_written_out_sum(dtype, axes, keep, so, zo):
    """LiteRT 2.3.0's BUILTIN_REF SUM returns -1 and garbage for int8/int16 (so no fixture): TFLM's arithmetic."""
    from models import m_reduce

    si = 0.08 if dtype == "int8" else 0.08e-2
    data = m_reduce("SUM", dtype, axes=axes, keep=keep, si=0.08, zi=3, so=so, zo=zo)
    zi = 3 if dtype == "int8" else 0
    so_t = so if dtype == "int8" else so * 1e-2
    for seed in (0, 1):
        x = inputs_for(data, seed)[0]
        y = run_cpu(data, [x])[0]
        lo, hi = (-128, 127) if dtype == "int8" else (-32768, 32767)
        want = _sum_loop(x.astype(np.int64), list(axes), si, zi, so_t, zo if dtype == "int8" else 0, lo, hi)
        assert y.reshape(-1).tolist() == want.reshape(-1).tolist()


def test_squared_difference_int16_runs_as_tflm():
    """LiteRT 2.3.0 refuses int16 SQUARED_DIFFERENCE (`only supports FLOAT32 and INT32`); tflite-micro 90b983c2
    compiled gives these values for the same bytes."""
    from models import _q16

    data = build([_q16("x", [6], 3e-4), _q16("y", [6], 2e-4), _q16("z", [6], 4e-3)],
                 [Op("SQUARED_DIFFERENCE", ["x", "y"], ["z"])], ["x", "y"], ["z"])
    x = np.array([-32768, -1000, 0, 1234, 32767, 32767], np.int16)
    y = np.array([32767, 5, -3, -20000, 32767, -32768], np.int16)
    assert run_cpu(data, [x, y])[0].tolist() == [32767, 23, 0, 4775, 2684, 32767]


@pytest.mark.parametrize("si,so,want", [(3e-4, 2e-3, [32767, 28868, 20412, 16667, 2887, 822, 204, 159]),
                                        (2e-2, 1e-4, [32767, 32767, 32767, 32767, 7071, 2013, 500, 391])])
def test_rsqrt_int16_runs_as_tflm(si, so, want):
    """TFLM's RSQRT Prepare lets int16 through (its type check never fails) and its Eval runs the int8 arithmetic
    on int16; LiteRT 2.3.0's int16 RSQRT gives other values (25748 25566 25385 25203 7593 822 204 159 for the first
    case). The values are tflite-micro 90b983c2's for the same bytes."""
    from models import m_unary19

    x = np.zeros((3, 40), np.int16)
    x[0, :8] = [0, 1, 2, 3, 100, 1234, 20000, 32767]
    assert run_cpu(m_unary19("RSQRT", "int16", si, 0, so, 0), [x])[0][0, :8].tolist() == want


def test_rsqrt_int8_below_the_zero_point_stops_the_run():
    from models import m_unary19

    data = m_unary19("RSQRT", "int8", 0.05, 3, 0.03, -100)
    with pytest.raises(InterpreterError) as e:
        run_cpu(data, [np.full((4, 64), -5, np.int8)])
    assert e.value.lines[0] == "RSQRT: Rsqrt is only defined for positive values"


def test_rsqrt_int8_close_to_the_float_function():
    from models import m_unary19

    data = m_unary19("RSQRT", "int8", 0.05, -128, 0.03, -100, "xall")
    x = np.arange(-127, 128, dtype=np.int8).reshape(1, -1)
    x = np.resize(x, (4, 64)).astype(np.int8)
    y = run_cpu(data, [x])[0].astype(float)
    want = np.clip(np.round(1 / np.sqrt(0.05 * (x.astype(float) + 128)) / 0.03) - 100, -128, 127)
    assert np.abs(y - want).max() <= 1


def test_transpose_conv_int16_bias_runs_as_tflm():
    """An int16 bias on an int16 TRANSPOSE_CONV: TFLM widens it to int64; LiteRT 2.3.0 refuses it. The values are
    tflite-micro 90b983c2's for the same bytes."""
    from models import m_transpose_conv

    data = m_transpose_conv(dtype="int16", bias="int16")
    y = run_cpu(data, inputs_for(data, 0))[0]
    assert y.reshape(-1)[:12].tolist() == [1875, -2457, -1899, 2902, -1185, 812, 2669, 1296, -4232, 5419, 3499, 7033]


@pytest.mark.parametrize("stride,padding,k", [(2, 0, 3), (2, 1, 3), (3, 0, 2), (1, 1, 3)])
def test_transpose_conv_int8_matches_written_out_scatter(stride, padding, k):
    from models import m_transpose_conv

    oh, ow = {(2, 0): (8, 10), (2, 1): (9, 11), (3, 0): (9, 8), (1, 1): (6, 7)}[(stride, padding)]
    ih, iw = {(2, 0): (4, 5), (2, 1): (4, 5), (3, 0): (3, 3), (1, 1): (4, 5)}[(stride, padding)]
    data = m_transpose_conv(in_hw=(ih, iw), out_hw=(oh, ow), k=k, stride=stride, padding=padding)
    x = inputs_for(data, 4)[0]
    ours = run_cpu(data, [x])[0]
    w, b, tw, ti, to = _weighted(data)
    cout = w.shape[0]
    # ComputePaddingHeightWidth from the output size
    def pad(stride_, out, f):
        o = (out + stride_ - 1) // stride_ if padding == 0 else (out + stride_ - f) // stride_
        return max((o - 1) * stride_ + f - out, 0) // 2
    ph, pw = pad(stride, oh, k), pad(stride, ow, k)
    acc = np.zeros((oh, ow, cout), dtype=object)
    for iy in range(ih):
        for ix in range(iw):
            for fy in range(k):
                for fx_ in range(k):
                    oy, ox = iy * stride - ph + fy, ix * stride - pw + fx_
                    if 0 <= oy < oh and 0 <= ox < ow:
                        for o in range(cout):
                            acc[oy, ox, o] += int(np.dot(x[0, iy, ix].astype(int) - ti.params_zero_point, w[o, fy, fx_]))
    for o in range(cout):
        mult, sh = fx.quantize_multiplier(float(np.float64(ti.params_scale)) * float(np.float64(tw.scale[o]))
                                          / float(np.float64(to.params_scale)))
        for oy in range(oh):
            for ox in range(ow):
                v = min(max(_mbqm(int(acc[oy, ox, o]) + int(b[o]), mult, sh) + to.params_zero_point, -128), 127)
                assert ours[0, oy, ox, o] == v


def test_zeros_like_int8_and_cast_wrap_as_tflm():
    """ZEROS_LIKE int8 (LiteRT refuses it) writes the integer 0; CAST float32 -> int8 truncates to int32 and keeps
    the low byte (LiteRT saturates to 127/-128): tflite-micro 90b983c2's values for the same bytes."""
    from models import m_cast, m_zeros_like

    assert run_cpu(m_zeros_like("int8"), [np.full((3, 7), 5, np.int8)])[0].tolist() == [[0] * 7] * 3
    x = np.zeros((3, 40), np.float32)
    x[0, :6] = [300.7, -129.9, 127.9, -0.9, 65536.5 + 200, -1000.2]
    y = run_cpu(m_cast("float32", "int8"), [x])[0]
    assert y[0, :6].tolist() == [44, 127, 127, 0, -56, 24]


def _bad_models_issue19():
    from models import (_q, m_batch_matmul, m_cast, m_compare, m_fill, m_gather, m_maxmin, m_reduce, m_select, m_slice,
                        m_sqdiff, m_transpose_conv, m_unary19, m_zeros_like)

    x8 = np.zeros((2, 5, 6, 4), np.int8)
    u16 = np.zeros((3, 40), np.int16)
    return {
        "shape_int64": (build([_q("x", [2, 3], 0.1, 0), T("y", [2], "int64")], [Op("SHAPE", ["x"], ["y"])], ["x"],
                              ["y"]), np.zeros((2, 3), np.int8), "SHAPE: Output type INT64 (4) not supported."),
        "fill_int16": (m_fill("int16"), np.zeros((), np.int16),
                       "FILL: Fill only currently supports float32 for input 1, got INT16."),
        "fill_dims": (build([T("d", [2], "int32", np.array([2, 5])), T("v", [], "float32"), T("y", [2, 4], "float32")],
                            [Op("FILL", ["d", "v"], ["y"])], ["v"], ["y"]), np.zeros((), np.float32),
                      "FILL: dims [2, 5] are not the output's shape [2, 4]"),
        "zeros_like_int16": (m_zeros_like("int16"), np.zeros((3, 7), np.int16),
                             "ZEROS_LIKE: ZerosLike only currently supports int64, int32, and float32, got 7."),
        "select_int32": (m_select("int32"), np.zeros((2, 3, 5), np.bool_),
                         "SELECT_V2: Does not support type other than int8|int16|float32, but got INT32"),
        "greater_int16": (m_compare("GREATER", "int16"), np.zeros((2, 3, 5), np.int16),
                          "GREATER: int16 not supported (TFLM's Prepare sets the scaling parameters for int8 only)"),
        "less_int16": (m_compare("LESS", "int16"), np.zeros((2, 3, 5), np.int16), "LESS: Type INT16 (7) not supported."),
        "greater_bool": (m_compare("GREATER", "bool"), np.zeros((2, 3, 5), np.bool_),
                         "GREATER: Type BOOL (6) not supported."),
        "equal_int8_scale": (m_compare("EQUAL", "int8", s1=1.5), np.zeros((2, 3, 5), np.int8),
                             "EQUAL: int8 input scale 1.5 (QuantizeMultiplierSmallerThanOneExp needs it below 1)"),
        "cast_to_bool": (m_cast("int32", "bool"), np.zeros((3, 40), np.int32), "CAST: Output type BOOL (6) not supported."),
        "cast_from_int64": (m_cast("int64", "int32"), np.zeros((3, 40), np.int64),
                            "CAST: Input type INT64 (4) not supported."),
        "tconv_int16_int32_bias": (m_transpose_conv(dtype="int16", bias="int32"), np.zeros((1, 4, 5, 3), np.int16),
                                   "TRANSPOSE_CONV: int16 input with a INT32 bias (TFLM reads it as int64)"),
        "tconv_hybrid": (build([T("shape", [4], "int32", np.array([1, 4, 4, 2], np.int32)),
                                T("w", [2, 3, 3, 2], "int8", np.ones((2, 3, 3, 2), np.int8), [0.1], [0]),
                                T("x", [1, 4, 4, 2], "float32"), T("y", [1, 4, 4, 2], "float32")],
                               [Op("TRANSPOSE_CONV", ["shape", "w", "x"], ["y"], ("TransposeConvOptions", {
                                   "Padding": 0, "StrideW": 1, "StrideH": 1}))], ["x"], ["y"]),
                         np.zeros((1, 4, 4, 2), np.float32),
                         "TRANSPOSE_CONV: Hybrid models are not supported on TFLite Micro."),
        "bmm_int32": (m_batch_matmul([2, 3], [3, 4], [2, 4], "int32"), np.zeros((2, 3), np.int32),
                      "BATCH_MATMUL: lhs type INT32 (float32, int8 or int16)"),
        "bmm_depth": (m_batch_matmul([2, 3], [4, 4], [2, 4]), np.zeros((2, 3), np.int8),
                      "BATCH_MATMUL: accumulation depths 3 and 4 differ"),
        "bmm_broadcast": (m_batch_matmul([2, 2, 3], [3, 3, 4], [3, 2, 4]), np.zeros((2, 2, 3), np.int8),
                          "BATCH_MATMUL: batch dimensions 2 and 3 do not broadcast"),
        "bmm_int16_zero_point": (build([_q("a", [2, 3], 1e-3, 4, "int16"), _q("b", [3, 4], 1e-3, 0, "int16"),
                                        _q("y", [2, 4], 1e-2, 0, "int16")], [Op("BATCH_MATMUL", ["a", "b"], ["y"])],
                                       ["a", "b"], ["y"]), np.zeros((2, 3), np.int16),
                                 "BATCH_MATMUL: int16 zero points must be 0"),
        "sqdiff_int16_zero_point": (build([_q("x", [4], 1e-3, 3, "int16"), _q("y", [4], 1e-3, 0, "int16"),
                                           _q("z", [4], 1e-3, 0, "int16")], [Op("SQUARED_DIFFERENCE", ["x", "y"],
                                                                                ["z"])], ["x", "y"], ["z"]),
                                    np.zeros(4, np.int16), "SQUARED_DIFFERENCE: int16 zero points must be 0"),
        "sqdiff_int64": (m_sqdiff("int64"), np.zeros((2, 3, 5), np.int64),
                         "SQUARED_DIFFERENCE: SquaredDifference only supports FLOAT32, INT32 , INT16 and INT8 now, "
                         "got 4."),
        "rsqrt_int16_zero_point": (m_unary19("RSQRT", "int16", 3e-4, 4, 2e-4, 0), u16,
                                   "RSQRT: int16 zero points must be 0 (they are [4, 0])"),
        "rsqrt_int32": (build([T("x", [3], "int32"), T("y", [3], "int32")], [Op("RSQRT", ["x"], ["y"])], ["x"], ["y"]),
                        np.zeros(3, np.int32), "RSQRT: Input data type INT32 (2) is not supported."),
        "abs_int16_zero_point": (m_unary19("ABS", "int16", 3e-4, 5, 2e-4, 0), u16,
                                 "ABS: int16 zero points must be 0 (they are [5, 0])"),
        "abs_int32": (build([T("x", [3], "int32"), T("y", [3], "int32")], [Op("ABS", ["x"], ["y"])], ["x"], ["y"]),
                      np.zeros(3, np.int32), "ABS: Input data type INT32 (2) is not supported."),
        "sqrt_int8": (m_unary19("SQRT", "int8"), np.zeros((4, 64), np.int8),
                      "SQRT: Input data type INT8 (9) is not supported."),
        "log_int16": (m_unary19("LOG", "int16", 3e-4, 0, 2e-4, 0), u16, "LOG: Input data type INT16 (7) is not"),
        "exp_int8": (m_unary19("EXP", "int8"), np.zeros((4, 64), np.int8),
                     "EXP: Type INT8 (9) currently not supported by Exp."),
        "neg_int8": (m_unary19("NEG", "int8"), np.zeros((4, 64), np.int8), "NEG: Type INT8 (9) not supported."),
        "slice_shape": (m_slice([2, 5], [1, 1], [1, 3], [1, 4]), np.zeros((2, 5), np.int8),
                        "SLICE: begin [1, 1] size [1, 3] do not give the output shape [1, 4]"),
        "slice_out_of_range": (m_slice([2, 5], [1, 3], [1, 3], [1, 3]), np.zeros((2, 5), np.int8),
                               "SLICE: begin [1, 3] size [1, 3] do not give"),
        "slice_int64": (m_slice([2, 5], [1, 1], [1, 3], [1, 3], "int64"), np.zeros((2, 5), np.int64),
                        "SLICE: Input tensor type INT64 (4) not supported."),
        "gather_int16": (m_gather([5, 4], [1, 2], 0, [2, 4], dtype="int16"), np.zeros((5, 4), np.int16),
                         "GATHER: Type 'INT16' is not supported by gather."),
        "gather_int32": (m_gather([5, 4], [1, 2], 0, [2, 4], dtype="int32"), np.zeros((5, 4), np.int32),
                         "GATHER: Type 'INT32' is not supported by gather."),
        "gather_batch_dims": (m_gather([2, 4, 3], [[3, 0], [1, 1]], 0, [2, 2, 4, 3], batch_dims=1),
                              np.zeros((2, 4, 3), np.int8), "GATHER: batch_dims <= axis was not true."),
        "gather_shape": (m_gather([5, 4], [1, 2], 0, [2, 5]), np.zeros((5, 4), np.int8),
                         "GATHER: the output shape is [2, 4]"),
        "maximum_bool": (m_maxmin("MAXIMUM", "bool"), np.zeros((2, 3, 5), np.bool_),
                         "MAXIMUM: Type BOOL (6) is not supported by Maximum/Minimum."),
        "sum_int32": (m_reduce("SUM", "int32"), x8.astype(np.int32), "SUM: Only float32, int8, and int16 types"),
        "reduce_max_int16": (m_reduce("REDUCE_MAX", "int16"), x8.astype(np.int16),
                             "REDUCE_MAX: Only float32 and int8 types are supported."),
        "reduce_max_scale": (m_reduce("REDUCE_MAX", so=0.5, zo=3), x8,
                             "REDUCE_MAX: the int8 output's scale and zero point must be the input's"),
    }


@pytest.mark.parametrize("case", sorted(_bad_models_issue19()))
def test_issue19_kernels_fail_at_prepare_with_one_line(case):
    _fails_at_prepare_with_one_line(*_bad_models_issue19()[case])


def test_gather_position_out_of_range_stops_the_run():
    bad = build([_q8("x", [5, 4]), T("c", [2], "int32"), _q8("y", [2, 4])],
                [Op("GATHER", ["x", "c"], ["y"], ("GatherOptions", {"Axis": 0}))], ["x", "c"], ["y"])
    with pytest.raises(InterpreterError) as e:
        run_cpu(bad, [np.zeros((5, 4), np.int8), np.array([1, 5], np.int32)])
    assert e.value.lines[0] == "GATHER: a position outside [0, 5)"


def _q8(name, shape):
    return T(name, shape, "int8", scale=[0.1], zero_point=[0])


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
    d = subprocess.run([sys.executable, "-m", "fvp.host.dropin", "-C", "mps3_board.uart0.out_file=-",
                        "--data", f"{compiled}@0x90000000"], capture_output=True, text=True, timeout=600)
    assert d.returncode == 0, d.stdout + d.stderr
    assert "NPU ACTIVE cycles: " + active in d.stdout
    u65 = _fvp(str(compiled), "--target", "ethos-u65-256")
    assert u65.returncode == 1 and "NPU config mismatch" in u65.stdout  # a U55-128 stream on a U65
