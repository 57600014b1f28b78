"""CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, AVERAGE_POOL_2D, MAX_POOL_2D.

- int8 convolutions: ``reference_integer_ops::ConvPerChannel`` / ``DepthwiseConvPerChannel`` with the
  multipliers of ``PopulateConvolutionQuantizationParams`` (per channel: double(s_in) * double(s_w[c]) /
  double(s_out), ``QuantizeMultiplier``): acc = sum w * (x - zp_in) over the in-bounds taps (padding adds
  nothing), + bias, ``MultiplyByQuantizedMultiplier``, + zp_out, clamp to the activation range. Padding and
  output size: ``ComputePaddingHeightWidth``.
- 16x8 convolutions (int16 activations, int8 filter): the int16 overloads of the same two functions, which
  read no zero point at all (TFLM checks none; the converter writes 0): acc = sum w * x, + bias, then
  ``MultiplyByQuantizedMultiplier`` on the accumulator's type, clamp. CONV_2D (``conv.cc``) takes an int64 bias
  (64-bit accumulator, the int64 overload: multiplier cut to Q15, one rounding) or an int32 bias (32-bit
  accumulator that wraps, the double-rounding int32 overload); without a bias the options'
  ``quantized_bias_type`` picks (INT32: 32-bit, else 64-bit). DEPTHWISE_CONV_2D (``depthwise_conv.cc``) always
  reads the bias as int64: an int32 bias, which TFLM would misread, is refused at Prepare here.
- FULLY_CONNECTED int8: ``reference_integer_ops::FullyConnected`` (per-tensor multiplier from
  ``GetQuantizedConvolutionMultipler``: the scale product in float, then double, after its check that the bias
  scale is within 2% of an output step of s_in * s_w; per channel as TFLM's ``fully_connected_common.cc`` when
  the filter has one scale per output). int16 x int8 (``fully_connected.cc``): the same two functions with
  int16 data, an int32 bias (32-bit accumulator; also without a bias when ``quantized_bias_type`` is INT32) or
  an int64 one (64-bit accumulator), the input zero point applied as in int8.
- pooling int8/int16: ``pooling_common.cc`` requires the output's scale (within 1e-6) and zero point to be the
  input's; ``reference_integer_ops::AveragePool`` (window clipped to the input; sum rounded half away from zero
  by C division: (acc +/- count/2) / count) and ``MaxPool``; float32 as ``reference_ops``.
- float32 convolutions and FC: products accumulated in float32 in the reference order (filter y, filter x,
  input channel), bias added after, then the activation clamp.
"""

from __future__ import annotations

import numpy as np

from ... import fixedpoint as fx
from . import register
from .common import (PADDING_SAME, TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_INT64, Prepared,
                     activation_range_float, activation_range_quantized, clamp_cast, ensure, out_size, pad_before)


_NAMES = {TYPE_FLOAT32: "FLOAT32", TYPE_INT32: "INT32"}


def _per_channel(ctx, ti, tw, to, n_channels):
    si = float(np.float64(ti.params_scale))
    so = float(np.float64(to.params_scale))
    ensure(tw.scale.size in (1, n_channels), f"filter has {tw.scale.size} scales for {n_channels} channels")
    mult = np.zeros(n_channels, np.int64)
    shift = np.zeros(n_channels, np.int64)
    for c in range(n_channels):
        s = float(np.float64(tw.scale[c if tw.scale.size > 1 else 0]))
        mult[c], shift[c] = fx.quantize_multiplier(si * s / so)
    return mult, shift


def _int32_accumulator(op, tb, name: str) -> bool:
    """The 16x8 kernels' accumulator choice (``conv.cc``, ``fully_connected.cc``): 32 bits with an int32 bias,
    or without a bias when the options' ``quantized_bias_type`` is INT32; 64 bits otherwise."""
    if tb is not None:
        ensure(tb.type in (TYPE_INT32, TYPE_INT64), f"{name}: Bias type {tb.type_name} ({tb.type}) not supported.")
        return tb.type == TYPE_INT32
    o = op.options
    return o is not None and int(o.QuantizedBiasType()) == TYPE_INT32


def _requantize(acc, mult, shift, int32_accumulator: bool):
    """``MultiplyByQuantizedMultiplier`` on the accumulator's C type (int32: wrapped, double rounding)."""
    if int32_accumulator:
        return fx.mbqm(fx.wrap32(acc), mult, shift)
    return fx.mbqm64(acc, mult, shift)


def _windows(x: np.ndarray, g: dict):
    """[N, oh, ow, kh, kw, C] view of the (already padded) NHWC input, for the geometry ``g``."""
    n, _, _, c = x.shape
    s = x.strides
    return np.lib.stride_tricks.as_strided(
        x, shape=(n, g["oh"], g["ow"], g["kh"], g["kw"], c),
        strides=(s[0], s[1] * g["sh"], s[2] * g["sw"], s[1] * g["dh"], s[2] * g["dw"], s[3]), writeable=False)


def _conv_geometry(ti, tw_hw, opts, to):
    _, ih, iw, _ = ti.shape
    kh, kw = tw_hw
    pad = int(opts.Padding())
    sh, sw = int(opts.StrideH()), int(opts.StrideW())
    dh = int(opts.DilationHFactor()) or 1
    dw = int(opts.DilationWFactor()) or 1
    ensure(sh > 0 and sw > 0, "stride must be positive")
    oh, ow = out_size(pad, ih, kh, sh, dh), out_size(pad, iw, kw, sw, dw)
    ensure(to.shape[1:3] == (oh, ow), f"output shape {list(to.shape)} does not match the computed {oh}x{ow}")
    ph = pad_before(sh, dh, ih, kh, oh) if pad == PADDING_SAME else 0
    pw = pad_before(sw, dw, iw, kw, ow) if pad == PADDING_SAME else 0
    # the padded extent the windows need (the far side may need more than the near side)
    need_h = (oh - 1) * sh + (kh - 1) * dh + 1
    need_w = (ow - 1) * sw + (kw - 1) * dw + 1
    return dict(kh=kh, kw=kw, sh=sh, sw=sw, dh=dh, dw=dw, oh=oh, ow=ow, ph=ph, pw=pw,
                after_h=max(need_h - ih - ph, 0), after_w=max(need_w - iw - pw, 0))


def _pad_nhwc(x, g, value):
    return np.pad(x, ((0, 0), (g["ph"], g["after_h"]), (g["pw"], g["after_w"]), (0, 0)), constant_values=value)


def _operands(ctx, op):
    """The input, filter and output tensors, and the optional bias tensor (input 2), of CONV_2D,
    DEPTHWISE_CONV_2D and FULLY_CONNECTED."""
    ti, tw, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    tb = ctx.tensor(op.inputs[2]) if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
    return ti, tw, to, tb


def _constants(ctx, op, tb, name: str):
    """The filter's values (it must be constant) and the bias's (None without a bias), after the bias checks: one
    value per output channel, of a type the kernel reads (float32 with a float32 input, int32 with int8; 16x8's
    int32/int64 choice is its kernel's). TFLM casts the bias's data pointer to the type it expects without
    looking at the tensor's type: a FLOAT16 bias on an int8 convolution runs there on misread (and overrun)
    bytes; here it is refused."""
    w = ctx.const(op.inputs[1])
    ensure(w is not None, f"{name} filter must be constant")
    if tb is None:
        return w, None
    ti, tw = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1])
    n = tw.shape[0] if name != "DEPTHWISE_CONV_2D" else tw.shape[-1]
    ensure(tb.numel == n, f"{name}: bias of {tb.numel} elements for {n} output channels")
    want = {TYPE_FLOAT32: TYPE_FLOAT32, TYPE_INT8: TYPE_INT32}.get(ti.type)  # 16x8: the kernels' own checks
    ensure(want is None or tb.type == want, f"{name}: a {tb.type_name} bias with a {ti.type_name} input: the kernel "
                                            f"reads the bias as {_NAMES.get(want)} (TFLite Micro would misread it)")
    bias = ctx.const(op.inputs[2])
    ensure(bias is not None, f"{name}: the bias must be constant")
    return w, bias


def _float_result(acc, bias, lo, hi):
    """The float32 kernels' end: the bias added after the accumulation, then the activation clamp."""
    if bias is not None:
        acc = acc + bias.astype(np.float32)
    return np.clip(acc, np.float32(lo), np.float32(hi)).astype(np.float32)


def _bias64(bias, n: int):
    return bias.astype(np.int64) if bias is not None else np.zeros(n, np.int64)


def _conv_quantization(ctx, name: str, ti, tw, to, n_channels: int, act: int):
    """The integer Prepare both convolutions share: the types, the per-channel multipliers, the activation range
    and the zero points the Eval applies (none for int16: its kernels read none)."""
    ensure(ti.type == to.type and ti.type in (TYPE_INT8, TYPE_INT16) and tw.type == TYPE_INT8,
           f"{name} {ti.type_name} x {tw.type_name} -> {to.type_name} not supported (hybrid models are not "
           f"supported on TFLite Micro)")
    mult, shift = _per_channel(ctx, ti, tw, to, n_channels)
    lo, hi = activation_range_quantized(act, to)
    zi, zo = (ti.params_zero_point, to.params_zero_point) if ti.type == TYPE_INT8 else (0, 0)
    return mult, shift, zi, zo, lo, hi


@register("CONV_2D")
def prepare_conv(ctx, op):
    ti, tw, to, tb = _operands(ctx, op)
    ensure(len(ti.shape) == 4 and len(tw.shape) == 4, "CONV_2D needs 4-D input and filter")
    oc, kh, kw, ic = tw.shape
    ensure(ti.shape[3] == ic, f"grouped convolution (input {ti.shape[3]} channels, filter {ic}) not supported")
    w, bias = _constants(ctx, op, tb, "CONV_2D")
    g = _conv_geometry(ti, (kh, kw), op.options, to)
    act = int(op.options.FusedActivationFunction())
    macs = to.numel * kh * kw * ic
    if ti.type == TYPE_FLOAT32:
        lo, hi = activation_range_float(act)
        wf = w.astype(np.float32)

        def run(ins, outs):
            win = _windows(_pad_nhwc(ins[0].astype(np.float32), g, 0), g)
            outs[0][...] = _float_result(_float_dot(win.reshape(*win.shape[:3], -1), wf.reshape(oc, -1)), bias, lo, hi)
        return Prepared(run, ("kernel.conv2d_f32", macs))
    mult, shift, zi, zo, lo, hi = _conv_quantization(ctx, "CONV_2D", ti, tw, to, oc, act)
    w64 = w.astype(np.int64).reshape(oc, -1)
    b64 = _bias64(bias, oc)
    acc32 = _int32_accumulator(op, tb, "CONV_2D") if ti.type == TYPE_INT16 else True
    dtype = to.dtype

    def run(ins, outs):
        win = _windows(_pad_nhwc(ins[0].astype(np.int64) - zi, g, 0), g)
        acc = np.einsum("nhwk,ok->nhwo", win.reshape(*win.shape[:3], -1), w64) + b64
        outs[0][...] = clamp_cast(_requantize(acc, mult, shift, acc32) + zo, lo, hi, dtype)
    return Prepared(run, ("kernel.quantized_conv2d", macs))


def _float_dot(win2, w2):
    """sum over k of win[..., k] * w[o, k] accumulated in float32 in k order (the reference loop order)."""
    acc = np.zeros(win2.shape[:-1] + (w2.shape[0],), np.float32)
    for k in range(win2.shape[-1]):
        acc += win2[..., k:k + 1] * w2[:, k]
    return acc


@register("DEPTHWISE_CONV_2D")
def prepare_depthwise(ctx, op):
    ti, tw, to, tb = _operands(ctx, op)
    ensure(len(ti.shape) == 4 and len(tw.shape) == 4, "DEPTHWISE_CONV_2D needs 4-D input and filter")
    _, kh, kw, oc = tw.shape
    ic = ti.shape[3]
    dm = int(op.options.DepthMultiplier()) or 1
    ensure(oc == ic * dm, f"output channels {oc} != input channels {ic} x depth multiplier {dm}")
    w, bias = _constants(ctx, op, tb, "DEPTHWISE_CONV_2D")
    g = _conv_geometry(ti, (kh, kw), op.options, to)
    act = int(op.options.FusedActivationFunction())
    macs = to.numel * kh * kw
    chan_in = np.arange(oc) // dm  # output channel c reads input channel c // depth_multiplier

    if ti.type == TYPE_FLOAT32:
        lo, hi = activation_range_float(act)
        wf = w.astype(np.float32).reshape(kh, kw, oc)

        def run(ins, outs):
            xp = _pad_nhwc(ins[0].astype(np.float32), g, 0)[..., chan_in]
            win = _windows(np.ascontiguousarray(xp), g)
            acc = np.zeros(win.shape[:3] + (oc,), np.float32)
            for y in range(kh):
                for x in range(kw):
                    acc += win[:, :, :, y, x, :] * wf[y, x]
            outs[0][...] = _float_result(acc, bias, lo, hi)
        return Prepared(run, ("kernel.depthwise_conv2d_f32", macs))
    mult, shift, zi, zo, lo, hi = _conv_quantization(ctx, "DEPTHWISE_CONV_2D", ti, tw, to, oc, act)
    w64 = w.astype(np.int64).reshape(kh, kw, oc)
    b64 = _bias64(bias, oc)
    if ti.type == TYPE_INT16:
        ensure(tb is None or tb.type == TYPE_INT64,
               f"DEPTHWISE_CONV_2D: int16 input with a {tb.type_name if tb is not None else ''} bias: TFLM reads "
               f"the bias as int64 (an int32 bias is misread), not modelled")
    acc32 = ti.type == TYPE_INT8  # the int16 kernel's accumulator is 64-bit
    dtype = to.dtype

    def run(ins, outs):
        xp = _pad_nhwc(ins[0].astype(np.int64) - zi, g, 0)[..., chan_in]
        win = _windows(np.ascontiguousarray(xp), g)
        acc = np.einsum("nhwyxc,yxc->nhwc", win, w64) + b64
        outs[0][...] = clamp_cast(_requantize(acc, mult, shift, acc32) + zo, lo, hi, dtype)
    return Prepared(run, ("kernel.quantized_depthwise_conv2d", macs))


@register("FULLY_CONNECTED")
def prepare_fc(ctx, op):
    ti, tw, to, tb = _operands(ctx, op)
    o = op.options
    ensure(o is None or int(o.WeightsFormat()) == 0, "FULLY_CONNECTED: only the default weights format")
    ensure(len(tw.shape) == 2, "FULLY_CONNECTED filter must be 2-D")
    units, depth = tw.shape
    ensure(ti.numel % depth == 0, f"input of {ti.numel} elements is not a multiple of the depth {depth}")
    batches = ti.numel // depth
    ensure(to.numel == batches * units, f"output {list(to.shape)} is not {batches} x {units}")
    w, bias = _constants(ctx, op, tb, "FULLY_CONNECTED")
    act = int(o.FusedActivationFunction()) if o is not None else 0
    macs = batches * units * depth
    if ti.type == TYPE_FLOAT32:
        lo, hi = activation_range_float(act)
        wf = w.astype(np.float32)

        def run(ins, outs):
            x = ins[0].astype(np.float32).reshape(batches, depth)
            outs[0][...] = _float_result(_float_dot(x, wf), bias, lo, hi).reshape(to.shape)
        return Prepared(run, ("kernel.fully_connected_f32", macs))
    ensure(ti.type == to.type, f"FULLY_CONNECTED: input {ti.type_name} and output {to.type_name} types differ")
    ensure(ti.type in (TYPE_INT8, TYPE_INT16) and tw.type == TYPE_INT8,
           f"FULLY_CONNECTED: Input type: {ti.type_name} with filter type: {tw.type_name} not supported.")
    if tw.scale.size > 1:
        mult, shift = _per_channel(ctx, ti, tw, to, units)
        zw = 0  # FullyConnectedPerChannel applies no filter offset
    else:
        ensure(tw.params_zero_point == 0, "FULLY_CONNECTED: filter zero point must be 0")
        if tb is not None:  # GetQuantizedConvolutionMultipler's check, in double
            diff = abs(float(np.float64(ti.params_scale)) * float(np.float64(tw.params_scale))
                       - float(np.float64(tb.params_scale)))
            ensure(diff / float(np.float64(to.params_scale)) <= 0.02,
                   f"FULLY_CONNECTED: bias scale {tb.params_scale!r} is not input scale x filter scale")
        prod = np.float64(np.float32(ti.params_scale) * np.float32(tw.params_scale))
        m, s = fx.quantize_multiplier(float(prod) / float(np.float64(to.params_scale)))
        mult, shift = np.int64(m), np.int64(s)
        zw = tw.params_zero_point
    zi, zo = ti.params_zero_point, to.params_zero_point
    lo, hi = activation_range_quantized(act, to)
    w64 = w.astype(np.int64) - zw
    b64 = _bias64(bias, units)
    acc32 = _int32_accumulator(op, tb, "FULLY_CONNECTED") if ti.type == TYPE_INT16 else True
    if ti.type == TYPE_INT8:
        ensure(tb is None or tb.type == TYPE_INT32, f"FULLY_CONNECTED: int8 needs an int32 bias "
                                                    f"({tb.type_name if tb is not None else ''} given)")
    dtype = to.dtype

    def run(ins, outs):
        x = ins[0].astype(np.int64).reshape(batches, depth) - zi
        acc = x @ w64.T + b64
        outs[0][...] = clamp_cast(_requantize(acc, mult, shift, acc32) + zo, lo, hi, dtype).reshape(to.shape)
    return Prepared(run, ("kernel.quantized_linear", macs))


def _pool(ctx, op, kind: str):
    ti, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    o = op.options
    ensure(len(ti.shape) == 4, f"{op.op_name} needs a 4-D input")
    n, ih, iw, c = ti.shape
    fh, fw = int(o.FilterHeight()), int(o.FilterWidth())
    sh, sw = int(o.StrideH()), int(o.StrideW())
    pad = int(o.Padding())
    oh, ow = out_size(pad, ih, fh, sh), out_size(pad, iw, fw, sw)
    ensure(to.shape == (n, oh, ow, c), f"output shape {list(to.shape)} does not match the computed "
                                        f"{[n, oh, ow, c]}")
    ph = pad_before(sh, 1, ih, fh, oh) if pad == PADDING_SAME else 0
    pw = pad_before(sw, 1, iw, fw, ow) if pad == PADDING_SAME else 0
    act = int(o.FusedActivationFunction())
    is_float = ti.type == TYPE_FLOAT32
    ensure(ti.type == to.type and ti.type in (TYPE_FLOAT32, TYPE_INT8, TYPE_INT16),
           f"{op.op_name}: Type {ti.type_name} ({ti.type}) not supported.")
    if not is_float:
        ensure(float(abs(np.float32(ti.params_scale) - np.float32(to.params_scale))) <= 1.0e-6
               and ti.params_zero_point == to.params_zero_point,
               f"{op.op_name}: the output's scale and zero point must be the input's "
               f"({to.params_scale!r}, {to.params_zero_point} != {ti.params_scale!r}, {ti.params_zero_point})")
    lo, hi = activation_range_float(act) if is_float else activation_range_quantized(act, to)
    # per output position: the window clipped to the input
    ys = [(max(0, y * sh - ph), min(ih, y * sh - ph + fh)) for y in range(oh)]
    xs = [(max(0, x * sw - pw), min(iw, x * sw - pw + fw)) for x in range(ow)]
    dtype = to.dtype

    def run(ins, outs):
        x = ins[0]
        out = np.empty((n, oh, ow, c), np.float32 if is_float else np.int64)
        for yi, (y0, y1) in enumerate(ys):
            for xi, (x0, x1) in enumerate(xs):
                win = x[:, y0:y1, x0:x1, :]
                if kind == "max":
                    out[:, yi, xi, :] = win.max(axis=(1, 2)) if win.size else (lo if not is_float else 0)
                    continue
                count = (y1 - y0) * (x1 - x0)
                if is_float:
                    acc = np.zeros((n, c), np.float32)
                    for yy in range(y0, y1):
                        for xx in range(x0, x1):
                            acc += x[:, yy, xx, :].astype(np.float32)
                    out[:, yi, xi, :] = acc / np.float32(count) if count else 0
                else:
                    acc = win.astype(np.int64).sum(axis=(1, 2))
                    half = count // 2
                    q = np.where(acc > 0, acc + half, acc - half)
                    out[:, yi, xi, :] = np.where(q >= 0, q // count, -((-q) // count)) if count else 0
        if is_float:
            outs[0][...] = np.clip(out, np.float32(lo), np.float32(hi)).astype(np.float32)
        else:
            outs[0][...] = clamp_cast(out, lo, hi, dtype)
    return Prepared(run, ("kernel.quantized_avg_pool2d" if kind == "avg" else "kernel.quantized_max_pool2d",
                          to.numel * fh * fw))


@register("AVERAGE_POOL_2D")
def prepare_avg_pool(ctx, op):
    return _pool(ctx, op, "avg")


@register("MAX_POOL_2D")
def prepare_max_pool(ctx, op):
    return _pool(ctx, op, "max")
