"""The kernel test models: one or two operators each, int8 (and int16/float where the kernel has those paths),
built with tflite_builder, with seeded inputs (a tensor named ``xall`` holds every int8 value once)."""

from __future__ import annotations

import numpy as np

from model_parts import _q, _q16, _rng, _unary  # noqa: F401 (tests import them from here)
from tflite_builder import Op, T, build


def m_add(sub=False, act=0, broadcast=False):
    bshape = [1, 1, 1, 8] if broadcast else [1, 4, 4, 8]
    ts = [_q("x", [1, 4, 4, 8], 0.1, -3), _q("y", bshape, 0.23, 5), _q("z", [1, 4, 4, 8], 0.15, 1)]
    name = "SUB" if sub else "ADD"
    return build(ts, [Op(name, ["x", "y"], ["z"], (f"{name.title()}Options", {"FusedActivationFunction": act}))],
                 ["x", "y"], ["z"])


def m_mul(act=0):
    ts = [_q("x", [1, 3, 5, 8], 0.07, -10), _q("y", [1, 3, 5, 8], 0.05, 3), _q("z", [1, 3, 5, 8], 0.02, -2)]
    return build(ts, [Op("MUL", ["x", "y"], ["z"], ("MulOptions", {"FusedActivationFunction": act}))], ["x", "y"], ["z"])


def m_fc(per_channel=False, act=0):
    r = _rng(1)
    w = r.integers(-127, 128, (10, 24), dtype=np.int8)
    bias = r.integers(-2000, 2000, (10,), dtype=np.int32)
    ws = [0.01 + 0.001 * i for i in range(10)] if per_channel else [0.013]
    ts = [_q("x", [2, 24], 0.05, 4), T("w", [10, 24], "int8", w, ws, [0] * len(ws)),
          T("b", [10], "int32", bias, [0.05 * s for s in ws], [0] * len(ws)), _q("y", [2, 10], 0.3, -7)]
    return build(ts, [Op("FULLY_CONNECTED", ["x", "w", "b"], ["y"],
                         ("FullyConnectedOptions", {"FusedActivationFunction": act}))], ["x"], ["y"])


def m_conv(padding=0, stride=1, act=1, k=3, dilation=1):
    r = _rng(2)
    w = r.integers(-127, 128, (6, k, k, 5), dtype=np.int8)
    bias = r.integers(-3000, 3000, (6,), dtype=np.int32)
    ws = [0.004 + 0.001 * i for i in range(6)]
    from firmware.tflm.kernels.common import out_size
    oh = out_size(padding, 9, k, stride, dilation)
    ow = out_size(padding, 7, k, stride, dilation)
    ts = [_q("x", [1, 9, 7, 5], 0.04, -6), T("w", [6, k, k, 5], "int8", w, ws, [0] * 6),
          T("b", [6], "int32", bias, [0.04 * s for s in ws], [0] * 6), _q("y", [1, oh, ow, 6], 0.05, 3)]
    return build(ts, [Op("CONV_2D", ["x", "w", "b"], ["y"], ("Conv2DOptions", {
        "Padding": padding, "StrideW": stride, "StrideH": stride, "FusedActivationFunction": act,
        "DilationWFactor": dilation, "DilationHFactor": dilation}))], ["x"], ["y"])


def m_dwconv(padding=0, stride=1, act=0, dm=2):
    r = _rng(3)
    oc = 4 * dm
    w = r.integers(-127, 128, (1, 3, 3, oc), dtype=np.int8)
    bias = r.integers(-1000, 1000, (oc,), dtype=np.int32)
    ws = [0.01 + 0.002 * i for i in range(oc)]
    from firmware.tflm.kernels.common import out_size
    oh, ow = out_size(padding, 8, 3, stride), out_size(padding, 6, 3, stride)
    ts = [_q("x", [1, 8, 6, 4], 0.06, 2), T("w", [1, 3, 3, oc], "int8", w, ws, [0] * oc, qdim=3),
          T("b", [oc], "int32", bias, [0.06 * s for s in ws], [0] * oc), _q("y", [1, oh, ow, oc], 0.1, -1)]
    return build(ts, [Op("DEPTHWISE_CONV_2D", ["x", "w", "b"], ["y"], ("DepthwiseConv2DOptions", {
        "Padding": padding, "StrideW": stride, "StrideH": stride, "DepthMultiplier": dm,
        "FusedActivationFunction": act, "DilationWFactor": 1, "DilationHFactor": 1}))], ["x"], ["y"])


def m_pool(kind="AVERAGE_POOL_2D", padding=0, stride=2, f=3, dtype="int8"):
    from firmware.tflm.kernels.common import out_size
    oh, ow = out_size(padding, 9, f, stride), out_size(padding, 8, f, stride)
    if dtype == "int8":
        ts = [_q("x", [1, 9, 8, 3], 0.1, -5), _q("y", [1, oh, ow, 3], 0.1, -5)]
    else:
        ts = [T("x", [1, 9, 8, 3], "float32"), T("y", [1, oh, ow, 3], "float32")]
    return build(ts, [Op(kind, ["x"], ["y"], ("Pool2DOptions", {
        "Padding": padding, "StrideW": stride, "StrideH": stride, "FilterWidth": f, "FilterHeight": f,
        "FusedActivationFunction": 0}))], ["x"], ["y"])


def m_softmax(n=10, beta=1.0, in_scale=0.1, dtype="int8"):
    if dtype == "int8":
        ts = [_q("x", [2, n], in_scale, 3), _q("y", [2, n], 1.0 / 256, -128)]
    else:
        ts = [T("x", [2, n], "float32"), T("y", [2, n], "float32")]
    return build(ts, [Op("SOFTMAX", ["x"], ["y"], ("SoftmaxOptions", {"Beta": beta}))], ["x"], ["y"])


def m_quantize():
    ts = [T("x", [3, 7], "float32"), _q("y", [3, 7], 0.037, -4)]
    return build(ts, [Op("QUANTIZE", ["x"], ["y"])], ["x"], ["y"])


def m_requantize():
    ts = [_q("x", [3, 7], 0.05, 2), _q("y", [3, 7], 0.031, -9)]
    return build(ts, [Op("QUANTIZE", ["x"], ["y"])], ["x"], ["y"])


def m_dequantize():
    ts = [_q("x", [3, 7], 0.037, -4), T("y", [3, 7], "float32")]
    return build(ts, [Op("DEQUANTIZE", ["x"], ["y"])], ["x"], ["y"])


def m_reshape():
    ts = [_q("x", [1, 2, 3, 4], 0.1, 0), T("s", [2], "int32", np.array([6, 4], np.int32)), _q("y", [6, 4], 0.1, 0)]
    return build(ts, [Op("RESHAPE", ["x", "s"], ["y"], ("ReshapeOptions", {}))], ["x"], ["y"])


def m_pad():
    ts = [_q("x", [1, 3, 4, 2], 0.1, -7), T("p", [4, 2], "int32", np.array([[0, 0], [1, 2], [2, 0], [0, 1]], np.int32)),
          _q("y", [1, 6, 6, 3], 0.1, -7)]
    return build(ts, [Op("PAD", ["x", "p"], ["y"])], ["x"], ["y"])


def m_concat():
    ts = [_q("a", [1, 2, 2, 3], 0.1, 1), _q("b", [1, 2, 2, 5], 0.1, 1), _q("y", [1, 2, 2, 8], 0.1, 1)]
    return build(ts, [Op("CONCATENATION", ["a", "b"], ["y"], ("ConcatenationOptions", {"Axis": 3}))], ["a", "b"], ["y"])


def m_mean(keep=True, axes=(1, 2)):
    shape = [1, 5, 6, 4]
    out = [1 if i in axes else d for i, d in enumerate(shape)] if keep else \
        [d for i, d in enumerate(shape) if i not in axes]
    ts = [_q("x", shape, 0.08, 3), T("ax", [len(axes)], "int32", np.array(axes, np.int32)), _q("y", out, 0.05, -2)]
    return build(ts, [Op("MEAN", ["x", "ax"], ["y"], ("ReducerOptions", {"KeepDims": keep}))], ["x"], ["y"])


def m_transpose():
    ts = [_q("x", [2, 3, 4], 0.1, 0), T("p", [3], "int32", np.array([2, 0, 1], np.int32)), _q("y", [4, 2, 3], 0.1, 0)]
    return build(ts, [Op("TRANSPOSE", ["x", "p"], ["y"])], ["x"], ["y"])


def m_leaky_relu():
    ts = [_q("x", [4, 9], 0.05, -3), _q("y", [4, 9], 0.04, 5)]
    return build(ts, [Op("LEAKY_RELU", ["x"], ["y"], ("LeakyReluOptions", {"Alpha": 0.1}))], ["x"], ["y"])


def m_argmax():
    ts = [_q("x", [3, 11], 0.1, 0), T("ax", [1], "int32", np.array([1], np.int32)), T("y", [3], "int32")]
    return build(ts, [Op("ARG_MAX", ["x", "ax"], ["y"], ("ArgMaxOptions", {"OutputType": 2}))], ["x"], ["y"])


def m_float_chain():
    """float32 FULLY_CONNECTED + ADD + SOFTMAX."""
    r = _rng(4)
    w = (r.standard_normal((6, 12)) * 0.3).astype(np.float32)
    bias = (r.standard_normal(6) * 0.1).astype(np.float32)
    ts = [T("x", [1, 12], "float32"), T("w", [6, 12], "float32", w), T("b", [6], "float32", bias),
          T("h", [1, 6], "float32"), T("c", [1, 6], "float32", np.linspace(-1, 1, 6).astype(np.float32)),
          T("h2", [1, 6], "float32"), T("y", [1, 6], "float32")]
    return build(ts, [Op("FULLY_CONNECTED", ["x", "w", "b"], ["h"], ("FullyConnectedOptions", {})),
                      Op("ADD", ["h", "c"], ["h2"], ("AddOptions", {})),
                      Op("SOFTMAX", ["h2"], ["y"], ("SoftmaxOptions", {"Beta": 1.0}))], ["x"], ["y"])


def m_logistic(dtype="int8", scale=0.1, zp=3):
    """int8: every input value once ("xall"); int16: random over the whole range."""
    if dtype == "int8":
        return _unary("LOGISTIC", _q("xall", [4, 64], scale, zp), _q("y", [4, 64], 1.0 / 256, -128))
    if dtype == "int16":
        return _unary("LOGISTIC", _q("x", [2, 512], scale, 0, "int16"), _q("y", [2, 512], 2.0 ** -15, 0, "int16"))
    return _unary("LOGISTIC", T("xwide", [3, 40], "float32"), T("y", [3, 40], "float32"))


def m_tanh(dtype="int8", scale=0.05, zp=0):
    if dtype == "int8":
        return _unary("TANH", _q("xall", [4, 64], scale, zp), _q("y", [4, 64], 1.0 / 128, 0))
    if dtype == "int16":
        return _unary("TANH", _q("x", [2, 512], scale, 0, "int16"), _q("y", [2, 512], 2.0 ** -15, 0, "int16"))
    return _unary("TANH", T("x", [3, 40], "float32"), T("y", [3, 40], "float32"))


def m_hard_swish(dtype="int8", si=0.05, zi=-10, so=0.03, zo=-100):
    if dtype == "int8":
        return _unary("HARD_SWISH", _q("xall", [4, 64], si, zi), _q("y", [4, 64], so, zo))
    return _unary("HARD_SWISH", T("x", [3, 40], "float32"), T("y", [3, 40], "float32"))


def m_strided_slice(shape, begin, end, strides, out, dtype="int8", begin_mask=0, end_mask=0, shrink=0,
                    ellipsis=0, new_axis=0):
    x = _q("x", shape, 0.1, 2, dtype) if dtype in ("int8", "int16") else T("x", shape, dtype)
    y = _q("y", out, 0.1, 2, dtype) if dtype in ("int8", "int16") else T("y", out, dtype)
    vec = [T(n, [len(v)], "int32", np.array(v, np.int32)) for n, v in (("b", begin), ("e", end), ("s", strides))]
    return build([x, *vec, y], [Op("STRIDED_SLICE", ["x", "b", "e", "s"], ["y"], ("StridedSliceOptions", {
        "BeginMask": begin_mask, "EndMask": end_mask, "ShrinkAxisMask": shrink, "EllipsisMask": ellipsis,
        "NewAxisMask": new_axis}))], ["x"], ["y"])


def m_resize(kind, shape, size, dtype="int8", align=False, half=False):
    out = [shape[0], size[0], size[1], shape[3]]
    x = _q("x", shape, 0.05, -3, dtype) if dtype in ("int8", "int16") else T("x", shape, dtype)
    y = _q("y", out, 0.05, -3, dtype) if dtype in ("int8", "int16") else T("y", out, dtype)
    opts = "ResizeBilinearOptions" if kind == "RESIZE_BILINEAR" else "ResizeNearestNeighborOptions"
    return build([x, T("size", [2], "int32", np.array(size, np.int32)), y],
                 [Op(kind, ["x", "size"], ["y"], (opts, {"AlignCorners": align, "HalfPixelCenters": half}))],
                 ["x"], ["y"])


_NN, _BL = "RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"

# LOGISTIC/TANH int8 run TFLM's fixed-point path; LiteRT's reference kernel rounds a float-made table instead,
# which agrees on these quantizations (test_tflm.py has one where the two differ)
NEW_MODELS = {
    "logistic_int8": lambda: m_logistic(), "logistic_int8_narrow": lambda: m_logistic(scale=0.02, zp=-10),
    "logistic_int8_wide": lambda: m_logistic(scale=0.3, zp=0),
    "tanh_int8": lambda: m_tanh(), "tanh_int8_wide": lambda: m_tanh(scale=0.15, zp=-20),
    "tanh_int8_narrow": lambda: m_tanh(scale=0.01, zp=5),
    "logistic_int16_pot": lambda: m_logistic("int16", 2.0 ** -12),
    "logistic_int16": lambda: m_logistic("int16", 10.0 / 32768),
    "logistic_f32": lambda: m_logistic("float32"),
    "tanh_int16_pot": lambda: m_tanh("int16", 2.0 ** -12), "tanh_int16_pot1": lambda: m_tanh("int16", 2.0 ** -11),
    "tanh_int16": lambda: m_tanh("int16", 6.0 / 32768), "tanh_f32": lambda: m_tanh("float32"),
    "hard_swish": lambda: m_hard_swish(),
    "hard_swish_big": lambda: m_hard_swish(si=0.2, zi=20, so=0.1, zo=-128),
    "hard_swish_small": lambda: m_hard_swish(si=0.004, zi=0, so=0.003, zo=3),
    "hard_swish_f32": lambda: m_hard_swish("float32"),
    "ss_strided": lambda: m_strided_slice([1, 6, 8, 5], [0, 1, 2, 0], [1, 5, 8, 5], [1, 2, 3, 1], [1, 2, 2, 5]),
    "ss_negative": lambda: m_strided_slice([4, 7, 6], [-1, 6, 0], [0, -8, 6], [-1, -2, 2], [4, 4, 3], "float32",
                                           end_mask=0b001),
    "ss_masks_shrink": lambda: m_strided_slice([3, 5, 4, 6], [2, 1, -1, 4], [0, 4, 0, 1], [1, 1, -1, -2],
                                               [3, 3, 3], "int16", begin_mask=0b0101, end_mask=0b1001,
                                               shrink=0b0010),
    "ss_int32_1d": lambda: m_strided_slice([10], [-3], [-10], [-2], [4], "int32"),
    "ss_shrink": lambda: m_strided_slice([2, 3, 4], [1, 0, -2], [2, 3, -1], [1, 1, 1], [3], shrink=0b101),
    "rnn_up": lambda: m_resize(_NN, [1, 3, 4, 5], [6, 9]),
    "rnn_up_align": lambda: m_resize(_NN, [1, 3, 4, 5], [7, 10], align=True),
    "rnn_up_half_int16": lambda: m_resize(_NN, [1, 3, 4, 2], [6, 8], "int16", half=True),
    "rnn_down_both_f32": lambda: m_resize(_NN, [1, 9, 10, 3], [4, 3], "float32", align=True, half=True),
    "rnn_down_half": lambda: m_resize(_NN, [2, 9, 7, 3], [4, 3], half=True),
    "rb_up": lambda: m_resize(_BL, [1, 4, 5, 3], [8, 11]),
    "rb_up_align": lambda: m_resize(_BL, [1, 4, 5, 3], [7, 9], align=True),
    "rb_up_half": lambda: m_resize(_BL, [1, 4, 5, 3], [9, 10], half=True),
    "rb_down_half": lambda: m_resize(_BL, [1, 9, 11, 2], [4, 5], half=True),
    "rb_down_align": lambda: m_resize(_BL, [2, 9, 11, 2], [5, 4], align=True),
    "rb_f32": lambda: m_resize(_BL, [1, 4, 5, 3], [7, 8], "float32"),
    "rb_f32_half": lambda: m_resize(_BL, [1, 4, 5, 3], [9, 6], "float32", half=True),
    "rb_f32_align_down": lambda: m_resize(_BL, [1, 9, 10, 3], [4, 7], "float32", align=True),
}


# ------------------------------------------------------------------ int16 activations (16x8 where weights are int8)
# INT16_MODELS are those LiteRT's reference kernels run as TFLM does; the int16 cases where the two differ or LiteRT
# refuses a model TFLM runs (int32-bias 16x8, 16x8 CONV_2D without a bias, int16 zero points, ...) are in test_tflm.py


def m_add16(sub=False, act=0, broadcast=False, scales=(3.1e-4, 5.3e-4, 7.7e-4)):
    bshape = [1, 1, 5] if broadcast else [2, 3, 5]
    ts = [_q16("x", [2, 3, 5], scales[0]), _q16("y", bshape, scales[1]), _q16("z", [2, 3, 5], scales[2])]
    name = "SUB" if sub else "ADD"
    return build(ts, [Op(name, ["x", "y"], ["z"], (f"{name.title()}Options", {"FusedActivationFunction": act}))],
                 ["x", "y"], ["z"])


def m_mul16(act=0):
    ts = [_q16("x", [3, 40], 2.1e-4), _q16("y", [3, 40], 3.3e-4), _q16("z", [3, 40], 1.7e-3)]
    return build(ts, [Op("MUL", ["x", "y"], ["z"], ("MulOptions", {"FusedActivationFunction": act}))], ["x", "y"], ["z"])


def m_fc16(bias="int64", per_channel=False, act=0, units=10, depth=24, bias_type_option=0, exact=False):
    """``exact``: scales whose multipliers have no bits below the 16 that TFLM's int64 requantization keeps (LiteRT
    keeps all 31 and rounds differently otherwise: test_tflm.py pins a case)."""
    r = _rng(11)
    w = r.integers(-127, 128, (units, depth), dtype=np.int8)
    if exact:
        ws = [2.0 ** -8 * (1 + i / 16) for i in range(units)] if per_channel else [2.0 ** -8 * 1.375]
        si, so = 2.0 ** -12, 2.0 ** -10
    else:
        ws = [0.004 + 0.0003 * i for i in range(units)] if per_channel else [0.005]
        si, so = 2.5e-4, 1.1e-3
    ts = [_q16("x", [3, depth], si), T("w", [units, depth], "int8", w, ws, [0] * len(ws)), _q16("y", [3, units], so)]
    ins = ["x", "w"]
    if bias:
        b = r.integers(-400000, 400000, (units,))
        ts.append(T("b", [units], bias, b, [si * s for s in ws], [0] * len(ws)))
        ins.append("b")
    return build(ts, [Op("FULLY_CONNECTED", ins, ["y"], ("FullyConnectedOptions", {
        "FusedActivationFunction": act, "QuantizedBiasType": bias_type_option}))], ["x"], ["y"])


def m_conv16(bias="int64", padding=0, stride=1, act=0, k=3, dilation=1, bias_type_option=0, zp=0):
    r = _rng(12)
    w = r.integers(-127, 128, (6, k, k, 5), dtype=np.int8)
    ws = [0.003 + 0.0007 * i for i in range(6)]
    si, so = 1.5e-4, 9e-4
    from firmware.tflm.kernels.common import out_size
    oh = out_size(padding, 9, k, stride, dilation)
    ow = out_size(padding, 7, k, stride, dilation)
    ts = [_q16("x", [1, 9, 7, 5], si, zp), T("w", [6, k, k, 5], "int8", w, ws, [0] * 6), _q16("y", [1, oh, ow, 6], so, zp)]
    ins = ["x", "w"]
    if bias:
        ts.append(T("b", [6], bias, r.integers(-3000000, 3000000, (6,)), [si * s for s in ws], [0] * 6))
        ins.append("b")
    return build(ts, [Op("CONV_2D", ins, ["y"], ("Conv2DOptions", {
        "Padding": padding, "StrideW": stride, "StrideH": stride, "FusedActivationFunction": act,
        "DilationWFactor": dilation, "DilationHFactor": dilation, "QuantizedBiasType": bias_type_option}))],
        ["x"], ["y"])


def m_dwconv16(bias="int64", padding=0, stride=1, act=0, dm=2, dilation=1):
    r = _rng(13)
    oc = 4 * dm
    w = r.integers(-127, 128, (1, 3, 3, oc), dtype=np.int8)
    ws = [0.01 + 0.002 * i for i in range(oc)]
    si, so = 2e-4, 1.2e-3
    from firmware.tflm.kernels.common import out_size
    oh, ow = out_size(padding, 8, 3, stride, dilation), out_size(padding, 6, 3, stride, dilation)
    ts = [_q16("x", [2, 8, 6, 4], si), T("w", [1, 3, 3, oc], "int8", w, ws, [0] * oc, qdim=3),
          _q16("y", [2, oh, ow, oc], so)]
    ins = ["x", "w"]
    if bias:
        ts.append(T("b", [oc], bias, r.integers(-2000000, 2000000, (oc,)), [si * s for s in ws], [0] * oc))
        ins.append("b")
    return build(ts, [Op("DEPTHWISE_CONV_2D", ins, ["y"], ("DepthwiseConv2DOptions", {
        "Padding": padding, "StrideW": stride, "StrideH": stride, "DepthMultiplier": dm,
        "FusedActivationFunction": act, "DilationWFactor": dilation, "DilationHFactor": dilation}))], ["x"], ["y"])


def m_pool16(kind="AVERAGE_POOL_2D", padding=0, stride=2, f=3, act=0):
    from firmware.tflm.kernels.common import out_size
    oh, ow = out_size(padding, 9, f, stride), out_size(padding, 8, f, stride)
    ts = [_q16("x", [2, 9, 8, 3], 3e-4), _q16("y", [2, oh, ow, 3], 3e-4)]
    return build(ts, [Op(kind, ["x"], ["y"], ("Pool2DOptions", {
        "Padding": padding, "StrideW": stride, "StrideH": stride, "FilterWidth": f, "FilterHeight": f,
        "FusedActivationFunction": act}))], ["x"], ["y"])


def m_softmax16(n=10, beta=1.0, in_scale=3e-4, rows=3, int8_in=False):
    x = _q("x", [rows, n], in_scale, 3) if int8_in else _q16("x", [rows, n], in_scale)
    y = _q16("y", [rows, n], 1.0 / 65536, -32768) if int8_in else _q16("y", [rows, n], 1.0 / 32768)
    return build([x, y], [Op("SOFTMAX", ["x"], ["y"], ("SoftmaxOptions", {"Beta": beta}))], ["x"], ["y"])


def m_quant(src, dst, si=0.0021, zi=0, so=0.0013, zo=0):
    x = T("x", [4, 33], src) if src == "float32" else _q("x", [4, 33], si, zi, src)
    y = T("y", [4, 33], dst) if dst == "float32" else _q("y", [4, 33], so, zo, dst)
    return build([x, y], [Op("DEQUANTIZE" if dst == "float32" else "QUANTIZE", ["x"], ["y"])], ["x"], ["y"])


def m_leaky_relu16(alpha=0.1):
    ts = [_q16("x", [4, 33], 3e-4), _q16("y", [4, 33], 2e-4)]
    return build(ts, [Op("LEAKY_RELU", ["x"], ["y"], ("LeakyReluOptions", {"Alpha": alpha}))], ["x"], ["y"])


def m_mean16():
    ts = [_q16("x", [1, 5, 6, 4], 3e-4), T("ax", [2], "int32", np.array([1, 2], np.int32)), _q16("y", [1, 1, 1, 4], 2e-4)]
    return build(ts, [Op("MEAN", ["x", "ax"], ["y"], ("ReducerOptions", {"KeepDims": True}))], ["x"], ["y"])


def m_shape16(kind):
    """int16 data movement: CONCATENATION, PAD, PADV2, TRANSPOSE, PACK, UNPACK, SPLIT."""
    q = 4e-4
    if kind == "CONCATENATION":
        ts = [_q16("a", [2, 3, 2], q), _q16("b", [2, 3, 4], q), _q16("y", [2, 3, 6], q)]
        return build(ts, [Op(kind, ["a", "b"], ["y"], ("ConcatenationOptions", {"Axis": -1}))], ["a", "b"], ["y"])
    if kind in ("PAD", "PADV2"):
        ts = [_q16("x", [1, 3, 4, 2], q), T("p", [4, 2], "int32", np.array([[0, 1], [1, 2], [2, 0], [0, 1]], np.int32)),
              _q16("y", [2, 6, 6, 3], q)]
        ins = ["x", "p"]
        if kind == "PADV2":
            ts.append(T("c", [1], "int16", np.array([-1234], np.int16), [q], [0]))
            ins.append("c")
        return build(ts, [Op(kind, ins, ["y"])], ["x"], ["y"])
    if kind == "TRANSPOSE":
        ts = [_q16("x", [2, 3, 4, 5], q), T("p", [4], "int32", np.array([3, 0, 2, 1], np.int32)), _q16("y", [5, 2, 4, 3], q)]
        return build(ts, [Op(kind, ["x", "p"], ["y"])], ["x"], ["y"])
    if kind == "PACK":
        ts = [_q16("a", [3, 4], q), _q16("b", [3, 4], q), _q16("c", [3, 4], q), _q16("y", [3, 3, 4], q)]
        return build(ts, [Op(kind, ["a", "b", "c"], ["y"], ("PackOptions", {"ValuesCount": 3, "Axis": 1}))],
                     ["a", "b", "c"], ["y"])
    if kind == "UNPACK":
        ts = [_q16("x", [3, 2, 4], q), _q16("y0", [3, 4], q), _q16("y1", [3, 4], q)]
        return build(ts, [Op(kind, ["x"], ["y0", "y1"], ("UnpackOptions", {"Num": 2, "Axis": -2}))], ["x"], ["y0", "y1"])
    assert kind == "SPLIT"
    ts = [T("ax", [], "int32", np.array(2, np.int32)), _q16("x", [2, 3, 6], q), _q16("y0", [2, 3, 2], q),
          _q16("y1", [2, 3, 2], q), _q16("y2", [2, 3, 2], q)]
    return build(ts, [Op(kind, ["ax", "x"], ["y0", "y1", "y2"], ("SplitOptions", {"NumSplits": 3}))], ["x"],
                 ["y0", "y1", "y2"])


def m_relu(kind="RELU", dtype="int16", si=3e-4, zi=0, so=2e-4, zo=0):
    if dtype == "float32":
        return _unary(kind, T("x", [3, 40], "float32"), T("y", [3, 40], "float32"))
    if dtype == "int8":
        return _unary(kind, _q("xall", [4, 64], si, zi), _q("y", [4, 64], so, zo))
    return _unary(kind, _q16("x", [3, 40], si, zi), _q16("y", [3, 40], so, zo))


INT16_MODELS = {
    "add16": m_add16, "add16_relu_broadcast": lambda: m_add16(act=1, broadcast=True),
    "add16_same_scale": lambda: m_add16(scales=(4e-4, 4e-4, 9e-4)),
    "sub16": lambda: m_add16(sub=True), "sub16_broadcast": lambda: m_add16(sub=True, broadcast=True, act=3,
                                                                           scales=(3e-4, 3e-4, 5e-4)),
    "mul16": m_mul16, "mul16_relu": lambda: m_mul16(act=1),
    "fc16": lambda: m_fc16(exact=True), "fc16_per_channel": lambda: m_fc16(per_channel=True, act=1, exact=True),
    "fc16_no_bias": lambda: m_fc16(None, exact=True), "fc16_no_bias_int32_accum": lambda: m_fc16(None, bias_type_option=2),
    "conv16": m_conv16, "conv16_same_s2_relu": lambda: m_conv16(stride=2, act=1),
    "dwconv16": m_dwconv16, "dwconv16_valid_s2": lambda: m_dwconv16(padding=1, stride=2, act=1, dm=1),
    "dwconv16_no_bias_dilated": lambda: m_dwconv16(None, dilation=2),
    "avgpool16_same": m_pool16, "avgpool16_valid_relu": lambda: m_pool16(padding=1, stride=1, f=2, act=1),
    "maxpool16_same": lambda: m_pool16("MAX_POOL_2D"), "maxpool16_valid": lambda: m_pool16("MAX_POOL_2D", 1, 1, 2),
    "softmax16": m_softmax16, "softmax16_beta_wide": lambda: m_softmax16(n=300, beta=0.6, in_scale=1e-4, rows=2),
    "softmax16_coarse": lambda: m_softmax16(n=33, in_scale=2e-3),
    "softmax_int8_int16": lambda: m_softmax16(n=20, in_scale=0.08, int8_in=True),
    "quantize_f32_int16": lambda: m_quant("float32", "int16", so=3e-4, zo=0),
    "quantize_f32_int16_zp": lambda: m_quant("float32", "int16", so=1e-4, zo=-77),
    "requant_int16_int8": lambda: m_quant("int16", "int8", si=3e-4, so=0.03, zo=-5),
    "requant_int16_int16": lambda: m_quant("int16", "int16", si=3e-4, zi=0, so=5e-4, zo=0),
    "requant_int16_int32": lambda: m_quant("int16", "int32", si=3e-4, so=1e-5),
    "requant_int8_int16": lambda: m_quant("int8", "int16", si=0.02, zi=7, so=1e-4),
    "dequantize_int16": lambda: m_quant("int16", "float32", si=3e-4, zi=0),
    "leaky_relu16": m_leaky_relu16, "mean16": m_mean16,
    "relu16": m_relu, "relu6_16": lambda: m_relu("RELU6", si=2e-4, so=2e-4),
    "relu_int8": lambda: m_relu("RELU", "int8", 0.05, -7, 0.03, -128),
    "relu6_int8": lambda: m_relu("RELU6", "int8", 0.03, -20, 0.03, -20), "relu_f32": lambda: m_relu("RELU", "float32"),
    "relu6_f32": lambda: m_relu("RELU6", "float32"),
    **{f"{k.lower()}16": (lambda k=k: m_shape16(k)) for k in
       ("CONCATENATION", "PAD", "PADV2", "TRANSPOSE", "PACK", "UNPACK", "SPLIT")},
}


# issue 19's operators (models_ops19.py; the tests import their builders from here)
from models_ops19 import (ISSUE19_MODELS, m_slice, m_gather, m_maxmin, m_reduce, m_sqdiff, m_unary19,
                         m_batch_matmul, m_transpose_conv, m_compare, m_select, m_cast, m_fill, m_shape_op,
                         m_zeros_like)  # noqa: E402,F401


MODELS = {
    "add": m_add, "add_relu6": lambda: m_add(act=3), "add_broadcast": lambda: m_add(broadcast=True),
    "sub": lambda: m_add(sub=True), "mul": m_mul, "mul_relu": lambda: m_mul(act=1),
    "fc": m_fc, "fc_per_channel": lambda: m_fc(per_channel=True, act=1),
    "conv_valid": m_conv, "conv_same_s2": lambda: m_conv(padding=0 if False else 0, stride=2),
    "conv_same": lambda: m_conv(padding=0), "conv_valid_s2": lambda: m_conv(padding=1, stride=2, act=0),
    "conv_dilated": lambda: m_conv(padding=1, dilation=2, act=3),
    "dwconv_same": m_dwconv, "dwconv_valid_s2": lambda: m_dwconv(padding=1, stride=2, act=1, dm=1),
    "avgpool_same": m_pool, "avgpool_valid": lambda: m_pool(padding=1, stride=1, f=2),
    "maxpool_same": lambda: m_pool("MAX_POOL_2D"), "maxpool_valid": lambda: m_pool("MAX_POOL_2D", 1, 1, 2),
    "avgpool_f32": lambda: m_pool(dtype="float32"),
    "softmax": m_softmax, "softmax_beta": lambda: m_softmax(n=33, beta=0.7, in_scale=0.05),
    "softmax_wide": lambda: m_softmax(n=300, in_scale=0.02),
    "quantize": m_quantize, "requantize": m_requantize, "dequantize": m_dequantize, "reshape": m_reshape,
    "pad": m_pad, "concat": m_concat, "mean_keep": m_mean, "mean": lambda: m_mean(keep=False),
    "mean_axis3": lambda: m_mean(axes=(3,)), "transpose": m_transpose, "leaky_relu": m_leaky_relu,
    "argmax": m_argmax, "float_chain": m_float_chain,
    **NEW_MODELS,
    **INT16_MODELS,
    **ISSUE19_MODELS,
}

FLOAT_MODELS = {"log_f32", "exp_f32", "avgpool_f32", "float_chain", "dequantize", "logistic_f32", "tanh_f32", "dequantize_int16"}  # libm's exp/tanh


def inputs_for(data: bytes, seed: int = 0) -> list:
    from firmware.tflm.model import load_model

    m = load_model(data)
    r = np.random.default_rng(seed)
    out = []
    for ti in m.inputs:
        t = m.tensors[ti]
        if t.name == "xall":  # every int8 value once, in a seeded order
            out.append(np.resize(r.permutation(np.arange(-128, 128)), t.shape).astype(t.dtype))
        elif t.name == "xpos":  # positive floats (SQRT, RSQRT, LOG)
            out.append(r.uniform(1e-3, 50, t.shape).astype(np.float32))
        elif t.name == "xwide":  # past LOGISTIC's float cut-offs (-9, 16.6)
            out.append(r.uniform(-20, 20, t.shape).astype(np.float32))
        elif t.dtype == np.bool_:
            out.append(r.integers(0, 2, t.shape).astype(np.bool_))
        elif t.dtype == np.float32:
            out.append((r.standard_normal(t.shape) * 2).astype(np.float32))
        else:
            info = np.iinfo(t.dtype)
            out.append(np.asarray(r.integers(info.min, info.max + 1, t.shape)).astype(t.dtype))
    return out
