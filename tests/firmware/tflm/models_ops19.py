"""The kernel test models of issue 19's operators (SLICE, GATHER, MAXIMUM/MINIMUM, reductions, SQUARED_DIFFERENCE,
the unary functions, BATCH_MATMUL, TRANSPOSE_CONV, comparisons, SELECT_V2, CAST, FILL, SHAPE, ZEROS_LIKE): one
operator each, built with tflite_builder; ``models.MODELS`` includes ``ISSUE19_MODELS``."""

from __future__ import annotations

import numpy as np

from model_parts import _q, _q16, _rng, _unary
from tflite_builder import Op, T, build


# ------------------------------------------------------------------ issue 19: more operators real models leave on the CPU


def _qt(name, shape, dtype, scale=0.1, zp=2):
    """A tensor of ``dtype``: quantized for int8/int16 (int16 zero point 0), plain otherwise."""
    if dtype == "int8":
        return _q(name, shape, scale, zp)
    if dtype == "int16":
        return _q16(name, shape, scale * 1e-2)
    return T(name, shape, dtype)


def m_slice(shape, begin, size, out, dtype="int8", index_type="int32"):
    return build([_qt("x", shape, dtype), T("b", [len(begin)], index_type, np.array(begin)),
                  T("s", [len(size)], index_type, np.array(size)), _qt("y", out, dtype)],
                 [Op("SLICE", ["x", "b", "s"], ["y"])], ["x"], ["y"])


def m_gather(shape, coords, axis, out, batch_dims=0, dtype="int8"):
    c = np.asarray(coords, np.int32)
    return build([_qt("x", shape, dtype), T("c", list(c.shape), "int32", c), _qt("y", out, dtype)],
                 [Op("GATHER", ["x", "c"], ["y"], ("GatherOptions", {"Axis": axis, "BatchDims": batch_dims}))],
                 ["x"], ["y"])


def m_maxmin(kind, dtype="int8", bshape=(1, 3, 5)):
    ts = [_qt("x", [2, 3, 5], dtype), _qt("y", list(bshape), dtype), _qt("z", [2, 3, 5], dtype)]
    return build(ts, [Op(kind, ["x", "y"], ["z"])], ["x", "y"], ["z"])


def m_reduce(kind, dtype="int8", axes=(1, 2), keep=True, si=0.08, zi=3, so=0.5, zo=-2):
    shape = [2, 5, 6, 4]
    out = [1 if i in axes else d for i, d in enumerate(shape)] if keep else \
        [d for i, d in enumerate(shape) if i not in axes]
    if dtype == "int8":
        x, y = _q("x", shape, si, zi), _q("y", out, so, zo)
    elif dtype == "int16":
        x, y = _q16("x", shape, si * 1e-2), _q16("y", out, so * 1e-2)
    else:
        x, y = T("x", shape, dtype), T("y", out, dtype)
    return build([x, T("ax", [len(axes)], "int32", np.array(axes, np.int32)), y],
                 [Op(kind, ["x", "ax"], ["y"], ("ReducerOptions", {"KeepDims": keep}))], ["x"], ["y"])


# int8/int16 SUM is not here: LiteRT 2.3.0's BUILTIN_REF SUM gives -1 and garbage for it (test_tflm_ops19.py checks TFLM's
# QuantizedMeanOrSum with a written-out sum)
ISSUE19_MODELS = {
    "slice_int8": lambda: m_slice([2, 5, 6, 3], [1, 1, 2, 0], [1, 3, -1, 2], [1, 3, 4, 2]),
    "slice_f32_5d": lambda: m_slice([2, 3, 4, 5, 2], [0, 1, 1, 2, 0], [2, 2, 2, 3, -1], [2, 2, 2, 3, 2], "float32"),
    "slice_int16_int64_index": lambda: m_slice([4, 7], [1, 2], [3, 4], [3, 4], "int16", "int64"),
    "slice_int32_1d": lambda: m_slice([9], [3], [-1], [6], "int32"),
    "slice_bool": lambda: m_slice([3, 4], [1, 0], [2, 3], [2, 3], "bool"),
    "gather_int8_axis0": lambda: m_gather([5, 4, 3], [4, 0, 2, 2], 0, [4, 4, 3]),
    "gather_int8_axis_neg": lambda: m_gather([2, 5, 6], [[5, 1], [0, 3], [2, 2]], -1, [2, 5, 3, 2]),
    "gather_f32_axis1": lambda: m_gather([3, 6, 2], [1, 5, 0], 1, [3, 3, 2], dtype="float32"),
    "gather_int8_batch_dims": lambda: m_gather([2, 4, 3], [[3, 0], [1, 1]], 1, [2, 2, 3], batch_dims=1),
    "maximum_int8_broadcast": lambda: m_maxmin("MAXIMUM"), "minimum_int8": lambda: m_maxmin("MINIMUM", bshape=(2, 3, 5)),
    "maximum_int16": lambda: m_maxmin("MAXIMUM", "int16", (2, 3, 5)),
    "minimum_int16_broadcast": lambda: m_maxmin("MINIMUM", "int16", (2, 1, 5)),
    "maximum_f32": lambda: m_maxmin("MAXIMUM", "float32", (2, 3, 1)), "minimum_f32": lambda: m_maxmin("MINIMUM", "float32"),
    "maximum_int32": lambda: m_maxmin("MAXIMUM", "int32"), "minimum_int32": lambda: m_maxmin("MINIMUM", "int32"),
    "sum_f32": lambda: m_reduce("SUM", "float32", axes=(1, 3), keep=False),
    "reduce_max_int8": lambda: m_reduce("REDUCE_MAX", so=0.08, zo=3),
    "reduce_max_int8_axis0": lambda: m_reduce("REDUCE_MAX", axes=(0, 3), keep=False, so=0.08, zo=3),
    "reduce_max_f32": lambda: m_reduce("REDUCE_MAX", "float32", axes=(2,)),
}


def m_sqdiff(dtype="int8", bshape=(2, 3, 5), scales=(0.1, 0.07, 0.3), zps=(3, -9, -100)):
    if dtype == "int8":
        ts = [_q("x", [2, 3, 5], scales[0], zps[0]), _q("y", list(bshape), scales[1], zps[1]),
              _q("z", [2, 3, 5], scales[2], zps[2])]
    elif dtype == "int16":
        ts = [_q16("x", [2, 3, 5], scales[0]), _q16("y", list(bshape), scales[1]), _q16("z", [2, 3, 5], scales[2])]
    else:
        ts = [T("x", [2, 3, 5], dtype), T("y", list(bshape), dtype), T("z", [2, 3, 5], dtype)]
    return build(ts, [Op("SQUARED_DIFFERENCE", ["x", "y"], ["z"])], ["x", "y"], ["z"])


def m_unary19(kind, dtype="float32", si=0.05, zi=-128, so=0.03, zo=-100, name="x"):
    if dtype == "int8":
        return _unary(kind, _q(name, [4, 64], si, zi), _q("y", [4, 64], so, zo))
    if dtype == "int16":
        return _unary(kind, _q16(name, [3, 40], si, zi), _q16("y", [3, 40], so, zo))
    if dtype == "int16_plain":
        return _unary(kind, T(name, [3, 40], "int16"), T("y", [3, 40], "int16"))
    return _unary(kind, T(name, [3, 40], "float32"), T("y", [3, 40], "float32"))


ISSUE19_MODELS.update({
    "sqdiff_int8": m_sqdiff, "sqdiff_int8_broadcast": lambda: m_sqdiff(bshape=(1, 3, 1), zps=(-128, 127, -128)),
    "sqdiff_int8_small_out": lambda: m_sqdiff(scales=(0.02, 0.05, 0.01), zps=(0, 5, -128)),
    "sqdiff_f32": lambda: m_sqdiff("float32"), "sqdiff_int32": lambda: m_sqdiff("int32", (1, 1, 5)),
    "rsqrt_f32": lambda: m_unary19("RSQRT", name="xpos"),
    "rsqrt_int8": lambda: m_unary19("RSQRT", "int8", 0.05, -128, 0.03, -100, "xall"),
    "rsqrt_int8_fine": lambda: m_unary19("RSQRT", "int8", 0.002, -128, 0.2, -128, "xall"),
    "rsqrt_int8_coarse": lambda: m_unary19("RSQRT", "int8", 0.7, -128, 0.004, 0, "xall"),
    "abs_f32": lambda: m_unary19("ABS"), "abs_int8": lambda: m_unary19("ABS", "int8", 0.05, 7, 0.03, -90, "xall"),
    "abs_int8_same_scale": lambda: m_unary19("ABS", "int8", 0.05, -3, 0.05, -128, "xall"),
    "abs_int16": lambda: m_unary19("ABS", "int16", 3e-4, 0, 2e-4, 0),
    "abs_int16_same_scale": lambda: m_unary19("ABS", "int16", 3e-4, 0, 3e-4, 0),
    "abs_int16_unquantized": lambda: m_unary19("ABS", "int16_plain"),
    "sqrt_f32": lambda: m_unary19("SQRT", name="xpos"), "log_f32": lambda: m_unary19("LOG", name="xpos"),
    "exp_f32": lambda: m_unary19("EXP"), "neg_f32": lambda: m_unary19("NEG"),
})


def m_batch_matmul(ls, rs, out, dtype="int8", adj_x=False, adj_y=False, const_rhs=False, exact=False):
    """``exact``: int16 scales whose multiplier has no bits below the 16 TFLM's int64 requantization keeps."""
    if dtype == "int8":
        a, b, y = _q("a", ls, 0.05, -3), _q("b", rs, 0.04, 6), _q("y", out, 0.3, 2)
    elif dtype == "int16":
        sc = (2.0 ** -10, 2.0 ** -9 * 1.375, 2.0 ** -4) if exact else (3e-4, 2e-4, 1.7e-3)
        a, b, y = _q16("a", ls, sc[0]), _q16("b", rs, sc[1]), _q16("y", out, sc[2])
    else:
        a, b, y = T("a", ls, dtype), T("b", rs, dtype), T("y", out, dtype)
    ins = ["a"] if const_rhs else ["a", "b"]
    if const_rhs:
        b.data = _rng(21).integers(-127, 128, rs) if dtype == "int8" else _rng(21).standard_normal(rs)
    return build([a, b, y], [Op("BATCH_MATMUL", ["a", "b"], ["y"], ("BatchMatMulOptions", {
        "AdjX": adj_x, "AdjY": adj_y}))], ins, ["y"])


ISSUE19_MODELS.update({
    "bmm_int8": lambda: m_batch_matmul([2, 3, 7], [2, 7, 4], [2, 3, 4]),
    "bmm_int8_adj_broadcast": lambda: m_batch_matmul([2, 1, 7, 3], [3, 5, 7], [2, 3, 3, 5], adj_x=True, adj_y=True),
    "bmm_int8_const_rhs": lambda: m_batch_matmul([1, 4, 9], [9, 6], [1, 4, 6], const_rhs=True),
    "bmm_int8_adj_y_5d": lambda: m_batch_matmul([1, 2, 1, 3, 5], [2, 1, 2, 4, 5], [2, 2, 2, 3, 4], adj_y=True),
    "bmm_int16": lambda: m_batch_matmul([2, 3, 7], [1, 7, 4], [2, 3, 4], "int16", exact=True),
    "bmm_int16_adj_x": lambda: m_batch_matmul([2, 7, 3], [2, 7, 4], [2, 3, 4], "int16", adj_x=True, exact=True),
    "bmm_int16_scales": lambda: m_batch_matmul([2, 3, 9], [1, 9, 5], [2, 3, 5], "int16"),
    "bmm_f32": lambda: m_batch_matmul([2, 3, 7], [2, 7, 4], [2, 3, 4], "float32"),
    "bmm_f32_adj_const": lambda: m_batch_matmul([3, 5, 4], [5, 6], [3, 4, 6], "float32", adj_x=True, const_rhs=True),
})


def m_transpose_conv(in_hw=(4, 5), out_hw=(8, 10), k=3, stride=2, padding=0, dtype="int8", bias="int32", act=0,
                     per_channel=True, cin=3, cout=4, exact=False):
    r = _rng(22)
    oh, ow = out_hw
    w = r.integers(-127, 128, (cout, k, k, cin))
    ws = [0.01 + 0.002 * i for i in range(cout)] if per_channel else [0.012]
    if dtype == "int8":
        x, y = _q("x", [1, *in_hw, cin], 0.05, -4), _q("y", [1, oh, ow, cout], 0.2, 3)
        si = 0.05
    elif dtype == "int16":
        si, so = (2.0 ** -12, 2.0 ** -8) if exact else (3e-4, 2.1e-3)
        if exact:
            ws = [2.0 ** -7 * (1 + i / 8) for i in range(cout)] if per_channel else [2.0 ** -7]
        x, y = _q16("x", [1, *in_hw, cin], si), _q16("y", [1, oh, ow, cout], so)
    else:
        x, y = T("x", [1, *in_hw, cin], "float32"), T("y", [1, oh, ow, cout], "float32")
    wt = T("w", [cout, k, k, cin], "float32", (w * 0.01).astype(np.float32)) if dtype == "float32" else \
        T("w", [cout, k, k, cin], "int8", w.astype(np.int8), ws, [0] * len(ws))
    ts = [T("shape", [4], "int32", np.array([1, oh, ow, cout], np.int32)), wt, x, y]
    ins = ["shape", "w", "x"]
    if bias:
        if dtype == "float32":
            ts.append(T("b", [cout], "float32", r.standard_normal(cout).astype(np.float32)))
        else:
            ts.append(T("b", [cout], bias, r.integers(-3000, 3000, cout), [si * s for s in ws], [0] * len(ws)))
        ins.append("b")
    return build(ts, [Op("TRANSPOSE_CONV", ins, ["y"], ("TransposeConvOptions", {
        "Padding": padding, "StrideW": stride, "StrideH": stride, "FusedActivationFunction": act}))], ["x"], ["y"])


ISSUE19_MODELS.update({
    "tconv_int8_same_s2": m_transpose_conv,
    "tconv_int8_valid_s2_relu": lambda: m_transpose_conv(out_hw=(9, 11), padding=1, act=1),
    "tconv_int8_s1_no_bias": lambda: m_transpose_conv(out_hw=(4, 5), stride=1, bias=None, per_channel=False),
    "tconv_int8_k2_s3": lambda: m_transpose_conv(in_hw=(3, 3), out_hw=(9, 8), k=2, stride=3, act=3),
    "tconv_int16_int64_bias": lambda: m_transpose_conv(dtype="int16", bias="int64", exact=True),
    "tconv_int16_no_bias": lambda: m_transpose_conv(out_hw=(9, 11), padding=1, dtype="int16", bias=None, exact=True),
    "tconv_f32": lambda: m_transpose_conv(dtype="float32"),
    "tconv_f32_relu6": lambda: m_transpose_conv(dtype="float32", act=3),
    "tconv_int16_scales": lambda: m_transpose_conv(dtype="int16", bias="int64"),
    "tconv_f32_valid_no_bias": lambda: m_transpose_conv(out_hw=(9, 11), padding=1, dtype="float32", bias=None),
})


def m_compare(kind, dtype="int8", bshape=(2, 3, 5), s1=0.1, z1=3, s2=0.1, z2=3):
    if dtype == "int8":
        a, b = _q("a", [2, 3, 5], s1, z1), _q("b", list(bshape), s2, z2)
    else:
        a, b = T("a", [2, 3, 5], dtype), T("b", list(bshape), dtype)
    return build([a, b, T("y", [2, 3, 5], "bool")], [Op(kind, ["a", "b"], ["y"])], ["a", "b"], ["y"])


def m_select(dtype="int8", cshape=(2, 3, 5), xshape=(2, 3, 5), yshape=(2, 3, 5), out=(2, 3, 5)):
    return build([T("c", list(cshape), "bool"), _qt("x", list(xshape), dtype), _qt("yv", list(yshape), dtype),
                  _qt("y", list(out), dtype)], [Op("SELECT_V2", ["c", "x", "yv"], ["y"])], ["c", "x", "yv"], ["y"])


def m_cast(src, dst, shape=(3, 40)):
    return build([T("x", list(shape), src), T("y", list(shape), dst)], [Op("CAST", ["x"], ["y"])], ["x"], ["y"])


def m_fill(dtype="float32", dims_type="int32", shape=(2, 3, 4)):
    v = _qt("v", [], dtype)
    return build([T("d", [len(shape)], dims_type, np.array(shape)), v, _qt("y", list(shape), dtype)],
                 [Op("FILL", ["d", "v"], ["y"])], ["v"], ["y"])


def m_shape_op(dtype="int8", shape=(2, 3, 4, 5)):
    return build([_qt("x", list(shape), dtype), T("y", [len(shape)], "int32")],
                 [Op("SHAPE", ["x"], ["y"], ("ShapeOptions", {"OutType": 2}))], ["x"], ["y"])


def m_zeros_like(dtype="float32"):
    return build([_qt("x", [3, 7], dtype), _qt("y", [3, 7], dtype)], [Op("ZEROS_LIKE", ["x"], ["y"])], ["x"], ["y"])


ISSUE19_MODELS.update({
    "shape_int8": m_shape_op, "shape_f32_1d": lambda: m_shape_op("float32", (7,)),
    "fill_f32": m_fill, "fill_int32_int64_dims": lambda: m_fill("int32", "int64", (5, 2)),
    "fill_int8": lambda: m_fill("int8", "int32", (3, 3)),
    "zeros_like_f32": m_zeros_like, "zeros_like_int32": lambda: m_zeros_like("int32"),
    "zeros_like_int64": lambda: m_zeros_like("int64"),
    "select_v2_int8": m_select, "select_v2_f32_broadcast": lambda: m_select("float32", (1, 3, 1), (2, 1, 5), (1,)),
    "select_v2_int16_broadcast": lambda: m_select("int16", (2, 3, 5), (3, 5), (2, 1, 5)),
    **{f"{k.lower()}_{d}": (lambda k=k, d=d: m_compare(k, d, (1, 3, 5) if d == "int32" else (2, 3, 5)))
       for k in ("EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL")
       for d in ("int8", "float32", "int32")},
    "less_int8_scales": lambda: m_compare("LESS", "int8", (2, 1, 5), 0.1, 3, 0.23, -7),
    "greater_equal_int8_scales": lambda: m_compare("GREATER_EQUAL", "int8", (2, 3, 5), 0.5, -100, 0.03, 20),
    "equal_int8_scales": lambda: m_compare("EQUAL", "int8", (2, 3, 5), 0.1, 0, 0.05, 0),
    "greater_int64": lambda: m_compare("GREATER", "int64", (5,)),
    "equal_bool": lambda: m_compare("EQUAL", "bool"), "not_equal_bool": lambda: m_compare("NOT_EQUAL", "bool", (3, 1)),
    **{f"cast_{a}_{b}": (lambda a=a, b=b: m_cast(a, b)) for a, b in (
        ("int8", "float32"), ("int8", "int32"), ("int16", "int8"), ("int16", "float32"), ("int32", "int8"),
        ("int32", "int16"), ("int32", "float32"), ("float32", "int32"), ("float32", "int8"), ("float32", "int16"),
        ("bool", "float32"), ("bool", "int32"), ("int8", "int16"))},
})
