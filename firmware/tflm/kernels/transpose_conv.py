"""TRANSPOSE_CONV: TFLM's ``transpose_conv.cc`` with ``reference_ops::TransposeConv`` (float32) and
``reference_integer_ops::TransposeConv`` (int8, int16 x int8).

Inputs: output shape (int32; TFLM never reads it: the output tensor's own shape is used), filter [Cout, fh, fw,
Cin], input [N, H, W, Cin], optional bias. Padding: ``ComputePaddingHeightWidth`` run from the output's height
and width (stride, dilation 1), the part before only. Each input pixel scatters x * w into the output at
(y * stride - pad + fy, x * stride - pad + fx); out-of-range taps are dropped.

- int8: the scratch sums (x - zp_in) * w in int32 (the filter zero point is not read), + bias (int32), per-channel
  ``MultiplyByQuantizedMultiplier`` (``PopulateConvolutionQuantizationParams``: double(s_in) * double(s_w[c]) /
  double(s_out)), + zp_out, clamped to the fused activation's range.
- int16 (int8 filter): no zero point is read; the sums are int64, + bias (int16 biases widened to int64, int64
  ones as they are), the int64 ``MultiplyByQuantizedMultiplier`` overload, clamped (no output zero point added). An
  int32 bias is refused at Prepare: TFLM's kernel would read it as int64.
- float32: the products added into the output in TFLM's loop order (input row, column, channel; so for one
  output element filter row and column descending, channel ascending), then + bias, clamped to the fused
  activation's range (TFLM reads it through ``TfLiteConvParams``, whose ``activation`` sits where
  ``TfLiteTransposeConvParams``' does).
- Prepare's checks: input and filter types equal, or int16 input with an int8 filter (``Hybrid models are not
  supported on TFLite Micro.``); a quantized filter needs one scale or one per output channel.
"""

from __future__ import annotations

import numpy as np

from ... import fixedpoint as fx
from . import register
from .common import (TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_INT64, Prepared, activation_range_float,
                     activation_range_quantized, clamp_cast, ensure, out_size, pad_before)
from .nn import _per_channel


@register("TRANSPOSE_CONV")
def prepare_transpose_conv(ctx, op):
    ensure(len(op.inputs) in (3, 4) and len(op.outputs) == 1, "TRANSPOSE_CONV: 3 or 4 inputs and 1 output")
    tw, ti, to = ctx.tensor(op.inputs[1]), ctx.tensor(op.inputs[2]), ctx.tensor(op.outputs[0])
    has_bias = len(op.inputs) == 4 and op.inputs[3] >= 0
    tb = ctx.tensor(op.inputs[3]) if has_bias else None
    ensure(ti.type == tw.type or (ti.type == TYPE_INT16 and tw.type == TYPE_INT8),
           "TRANSPOSE_CONV: Hybrid models are not supported on TFLite Micro.")
    ensure(ti.type in (TYPE_FLOAT32, TYPE_INT8, TYPE_INT16), f"TRANSPOSE_CONV: Type {ti.type_name} ({ti.type}) not "
                                                             f"supported.")
    ensure(ti.type == to.type, f"TRANSPOSE_CONV: input {ti.type_name} and output {to.type_name} types differ")
    ensure(len(ti.shape) == 4 and len(tw.shape) == 4 and len(to.shape) == 4,
           "TRANSPOSE_CONV: input, filter and output must be 4-D")
    oc, fh, fw, ic = tw.shape
    n, h, w_, c = ti.shape
    ensure(c == ic and to.shape[0] == n and to.shape[3] == oc,
           f"TRANSPOSE_CONV: input {list(ti.shape)}, filter {list(tw.shape)} and output {list(to.shape)} do not match")
    o = op.options
    padding, sh, sw = int(o.Padding()), int(o.StrideH()), int(o.StrideW())
    act = int(o.FusedActivationFunction())
    ho, wo = to.shape[1], to.shape[2]
    ph = pad_before(sh, 1, ho, fh, out_size(padding, ho, fh, sh))
    pw = pad_before(sw, 1, wo, fw, out_size(padding, wo, fw, sw))
    if tb is not None:
        ensure(tb.numel == oc, f"TRANSPOSE_CONV: bias of {tb.numel} elements for {oc} channels")
    macs = ti.numel * fh * fw * oc

    def taps():
        """(fy, fx, output rows, output columns, input rows, input columns) of every tap that lands in the output."""
        for fy in range(fh - 1, -1, -1):
            ys = [(y, y * sh - ph + fy) for y in range(h) if 0 <= y * sh - ph + fy < ho]
            for fx_ in range(fw - 1, -1, -1):
                xs = [(x, x * sw - pw + fx_) for x in range(w_) if 0 <= x * sw - pw + fx_ < wo]
                if ys and xs:
                    yield (fy, fx_, np.array([b for _, b in ys]), np.array([b for _, b in xs]),
                           np.array([a for a, _ in ys]), np.array([a for a, _ in xs]))
    tap_list = list(taps())

    if ti.type == TYPE_FLOAT32:
        flo, fhi = activation_range_float(act)

        def run(ins, outs):
            x = ins[2].astype(np.float32)
            wf = ins[1].astype(np.float32)
            out = np.zeros(to.shape, np.float32)
            for fy, fx_, oy, ox, iy, ix in tap_list:
                xs = x[:, iy][:, :, ix]  # [N, len(iy), len(ix), Cin]
                for k in range(ic):
                    out[:, oy[:, None], ox[None, :], :] += xs[..., k:k + 1] * wf[:, fy, fx_, k]
            if has_bias:
                out = out + ins[3].astype(np.float32)
            outs[0][...] = np.clip(out, np.float32(flo), np.float32(fhi))
        return Prepared(run, ("kernel.transpose_conv2d_f32", macs))

    ensure(tw.scale.size in (1, oc), f"TRANSPOSE_CONV: filter has {tw.scale.size} scales for {oc} channels")
    mult, shift = _per_channel(ctx, ti, tw, to, oc)
    lo, hi = activation_range_quantized(act, to)
    wide = ti.type == TYPE_INT16
    if tb is not None:
        if wide:
            ensure(tb.type in (TYPE_INT16, TYPE_INT64), f"TRANSPOSE_CONV: int16 input with a {tb.type_name} bias "
                                                        f"(TFLM reads it as int64)")
        else:
            ensure(tb.type == TYPE_INT32, f"TRANSPOSE_CONV: int8 input with a {tb.type_name} bias")
    zi = 0 if wide else ti.params_zero_point
    zo = 0 if wide else to.params_zero_point
    dtype = to.dtype

    def run_q(ins, outs):
        x = ins[2].astype(np.int64) - zi
        wq = ins[1].astype(np.int64)
        acc = np.zeros(to.shape, np.int64)
        for fy, fx_, oy, ox, iy, ix in tap_list:
            xs = x[:, iy][:, :, ix]
            acc[:, oy[:, None], ox[None, :], :] += np.einsum("nyxc,oc->nyxo", xs, wq[:, fy, fx_, :])
        if has_bias:
            acc = acc + ins[3].astype(np.int64)
        r = fx.mbqm64(acc, mult, shift) if wide else fx.mbqm(fx.wrap32(acc), mult, shift) + zo
        outs[0][...] = clamp_cast(r, lo, hi, dtype)
    return Prepared(run_q, ("kernel.quantized_transpose_conv2d", macs))
