"""TFLite Micro kernels of the issue 19 round (SUM, SQUARED_DIFFERENCE, RSQRT, TRANSPOSE_CONV, ZEROS_LIKE, CAST,
GATHER, ...) against written-out numpy formulations and TFLite Micro's values, and their one-line Prepare failures."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

pytest.importorskip("tflite")

from harness import run_cpu  # noqa: E402
from kernel_checks import fails_at_prepare_with_one_line as _fails_at_prepare_with_one_line  # noqa: E402
from kernel_checks import mbqm as _mbqm, weighted as _weighted  # noqa: E402
from models import inputs_for  # noqa: E402
from tflite_builder import Op, T, build  # noqa: E402

from firmware import fixedpoint as fx  # noqa: E402

from firmware.tflm.interpreter import InterpreterError  # noqa: E402


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
