"""ADD, SUB, MUL, QUANTIZE, DEQUANTIZE, LEAKY_RELU.

- ADD/SUB int8/int16: TFLM ``add_common.cc``/``sub_common.cc`` ``CalculateOpData`` (left_shift 20 for int8, 15
  for int16; inputs rescaled to twice the larger input scale; ``QuantizeMultiplierSmallerThanOneExp``; ADD computes
  the three real multipliers in double, SUB in float: ``twice_max_input_scale`` and the quotients are floats) and
  ``reference_integer_ops::AddElementwise`` / ``reference_ops::SubElementwise`` (the same steps with a
  difference), broadcasting as ``BroadcastAdd6DSlow``; float32: ``x1 + x2`` clamped to the activation range.
  int16 takes the same general path with any zero points and scales: TFLM checks no zero point and has no
  power-of-two path (TFLite's ``pot_scale_int16`` kernel, its zero-point checks and its shift checks are not
  TFLM's).
- MUL int8/int16: TFLM ``mul_common.cc`` (real multiplier = s1 * s2 / s_out in double, ``QuantizeMultiplier``;
  int16 needs all three zero points 0) and ``reference_integer_ops::MulElementwise``:
  ``zp_out + MBQM((x1 - zp1) * (x2 - zp2))`` clamped.
- QUANTIZE (``quantize_common.cc``, the pairs its Eval handles): float32 -> int8/int16
  ``reference_ops::AffineQuantize`` (``round(x / scale)`` in float, + zp, clamp); int8 -> int8/int16/int32/uint8,
  int16 -> int8/int16/int32, int32 -> int8/int16, uint8 -> int8 ``reference_ops::Requantize`` (effective scale s_in / s_out in
  double, ``MultiplyByQuantizedMultiplier`` of x - zp_in, + zp_out, clamp). Other pairs are refused with TFLM's
  Eval message.
- DEQUANTIZE: int8/int16 -> float32 ``reference_ops::Dequantize``: ``float(scale * (x - zp))`` with the scale
  as a double.
- LEAKY_RELU int8/int16: ``reference_ops::QuantizeLeakyRelu`` with TFLM ``leaky_relu_common.cc``'s two
  multipliers computed in float (identity s_in / s_out, alpha s_in * alpha / s_out); any zero points.
"""

from __future__ import annotations

import numpy as np

from ... import fixedpoint as fx
from . import register
from .common import (QRANGE, TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_UINT8, Prepared,
                     activation_range_float, activation_range_quantized, check_broadcast, clamp_cast, ensure,
                     requantizer)


def _act(op) -> int:
    o = op.options
    return int(o.FusedActivationFunction()) if o is not None else 0


def _add_sub(ctx, op, sign: int):
    t1, t2 = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1])
    to = ctx.tensor(op.outputs[0])
    check_broadcast(t1, t2, to)
    ensure(t1.type == t2.type == to.type, "input and output types differ")
    act = _act(op)
    n = max(to.numel, 1)
    if to.type == TYPE_FLOAT32:
        lo, hi = activation_range_float(act)

        def run(ins, outs):
            a = ins[0].astype(np.float32)
            b = ins[1].astype(np.float32)
            r = a + b if sign > 0 else a - b
            outs[0][...] = np.clip(r, np.float32(lo), np.float32(hi)).astype(np.float32)
        return Prepared(run, ("kernel.add", n))
    ensure(to.type in (TYPE_INT8, TYPE_INT16), f"{op.op_name}: Type {to.type_name} ({to.type}) not supported.")
    left_shift = 20 if to.type == TYPE_INT8 else 15
    if sign > 0:  # add_common.cc: in double
        s1, s2, so = (float(np.float64(t.params_scale)) for t in (t1, t2, to))
        twice_max = 2.0 * max(s1, s2)
        r1, r2, ro = s1 / twice_max, s2 / twice_max, twice_max / ((1 << left_shift) * so)
    else:  # sub_common.cc: twice_max_input_scale and the three quotients in float
        f1, f2, fo = (np.float32(t.params_scale) for t in (t1, t2, to))
        twice_max = np.float32(2) * max(f1, f2)
        r1, r2 = float(np.float32(f1 / twice_max)), float(np.float32(f2 / twice_max))
        ro = float(np.float32(twice_max / np.float32(np.float32(1 << left_shift) * fo)))
    m1, sh1 = fx.quantize_multiplier_smaller_than_one_exp(r1)
    m2, sh2 = fx.quantize_multiplier_smaller_than_one_exp(r2)
    mo, sho = fx.quantize_multiplier_smaller_than_one_exp(ro)
    z1, z2, zo = t1.params_zero_point, t2.params_zero_point, to.params_zero_point
    lo, hi = activation_range_quantized(act, to)
    dtype = to.dtype

    def run(ins, outs):
        a = (ins[0].astype(np.int64) - z1) * (1 << left_shift)
        b = (ins[1].astype(np.int64) - z2) * (1 << left_shift)
        sa = fx.mbqm_smaller_than_one_exp(a, m1, sh1)
        sb = fx.mbqm_smaller_than_one_exp(b, m2, sh2)
        raw = sa + sb if sign > 0 else sa - sb
        r = fx.mbqm_smaller_than_one_exp(fx.wrap32(raw), mo, sho) + zo
        outs[0][...] = clamp_cast(r, lo, hi, dtype)
    return Prepared(run, ("kernel.add", n))


@register("ADD")
def prepare_add(ctx, op):
    return _add_sub(ctx, op, +1)


@register("SUB")
def prepare_sub(ctx, op):
    return _add_sub(ctx, op, -1)


@register("MUL")
def prepare_mul(ctx, op):
    t1, t2 = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1])
    to = ctx.tensor(op.outputs[0])
    check_broadcast(t1, t2, to)
    act = _act(op)
    n = max(to.numel, 1)
    if to.type == TYPE_FLOAT32:
        lo, hi = activation_range_float(act)

        def run(ins, outs):
            r = ins[0].astype(np.float32) * ins[1].astype(np.float32)
            outs[0][...] = np.clip(r, np.float32(lo), np.float32(hi)).astype(np.float32)
        return Prepared(run, ("kernel.mul", n))
    ensure(t1.type == t2.type == to.type and to.type in (TYPE_INT8, TYPE_INT16),
           f"MUL of {t1.type_name} x {t2.type_name} -> {to.type_name} not supported")
    if to.type == TYPE_INT16:
        zps = (t1.params_zero_point, t2.params_zero_point, to.params_zero_point)
        ensure(zps == (0, 0, 0), f"MUL: int16 zero points must be 0 (they are {list(zps)})")
    real = float(np.float64(t1.params_scale)) * float(np.float64(t2.params_scale)) / float(np.float64(to.params_scale))
    m, sh = fx.quantize_multiplier(real)
    z1, z2, zo = t1.params_zero_point, t2.params_zero_point, to.params_zero_point
    lo, hi = activation_range_quantized(act, to)
    dtype = to.dtype

    def run(ins, outs):
        p = (ins[0].astype(np.int64) - z1) * (ins[1].astype(np.int64) - z2)
        r = fx.mbqm(p, m, sh) + zo
        outs[0][...] = clamp_cast(r, lo, hi, dtype)
    return Prepared(run, ("kernel.mul", n))


# quantize_common.cc: the (input, output) pairs TFLM's Eval handles (uint8 only to or from int8: a uint8 model
# input quantized to int8, as the TFLite converter writes it for uint8 inference inputs)
QUANTIZE_PAIRS = {(TYPE_FLOAT32, TYPE_INT8), (TYPE_FLOAT32, TYPE_INT16), (TYPE_INT32, TYPE_INT8),
                  (TYPE_INT32, TYPE_INT16), (TYPE_INT16, TYPE_INT8), (TYPE_INT16, TYPE_INT16),
                  (TYPE_INT16, TYPE_INT32), (TYPE_INT8, TYPE_INT8), (TYPE_INT8, TYPE_INT16), (TYPE_INT8, TYPE_INT32),
                  (TYPE_UINT8, TYPE_INT8), (TYPE_INT8, TYPE_UINT8)}


@register("QUANTIZE")
def prepare_quantize(ctx, op):
    ti, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    ensure(to.scale.size == 1, "QUANTIZE: the output must have one scale (per-tensor)")
    ensure((ti.type, to.type) in QUANTIZE_PAIRS,
           f"QUANTIZE: Input {ti.type_name}, output {to.type_name} not supported.")
    lo, hi = QRANGE[to.type]
    zo = to.params_zero_point
    dtype = to.dtype
    n = max(to.numel, 1)
    if ti.type == TYPE_FLOAT32:
        scale = np.float32(np.float64(to.params_scale))

        def run(ins, outs):
            q = fx.round_half_away_f32(ins[0].astype(np.float32) / scale).astype(np.int64) + zo
            outs[0][...] = clamp_cast(q, lo, hi, dtype)
        return Prepared(run, ("kernel.quantize_per_tensor", n))
    m, sh = fx.quantize_multiplier(float(np.float64(ti.params_scale)) / float(np.float64(to.params_scale)))
    return Prepared(requantizer(ti.params_zero_point, m, sh, zo, lo, hi, dtype), ("kernel.quantize_per_tensor", n))


@register("DEQUANTIZE")
def prepare_dequantize(ctx, op):
    ti, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    ensure(to.type == TYPE_FLOAT32, f"DEQUANTIZE to {to.type_name} not supported")
    ensure(ti.type in (TYPE_INT8, TYPE_INT16), f"DEQUANTIZE from {ti.type_name} not supported")
    scale = float(np.float64(ti.params_scale))
    zp = ti.params_zero_point

    def run(ins, outs):
        outs[0][...] = (scale * (ins[0].astype(np.float64) - zp)).astype(np.float32)
    return Prepared(run, ("kernel.dequantize_per_tensor", max(to.numel, 1)))


@register("LEAKY_RELU")
def prepare_leaky_relu(ctx, op):
    ti, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    alpha = np.float32(op.options.Alpha()) if op.options is not None else np.float32(0.2)
    n = max(to.numel, 1)
    if ti.type == TYPE_FLOAT32:
        def run(ins, outs):
            x = ins[0].astype(np.float32)
            outs[0][...] = np.where(x > 0, x, x * alpha).astype(np.float32)
        return Prepared(run, ("kernel.leaky_relu", n))
    ensure(ti.type == to.type and ti.type in (TYPE_INT8, TYPE_INT16), f"LEAKY_RELU of {ti.type_name} not supported")
    si, so = np.float32(ti.params_scale), np.float32(to.params_scale)  # leaky_relu_common.cc: in float
    m_alpha, s_alpha = fx.quantize_multiplier(float(np.float32(np.float32(si * alpha) / so)))
    m_id, s_id = fx.quantize_multiplier(float(np.float32(si / so)))
    zi, zo = ti.params_zero_point, to.params_zero_point
    lo, hi = QRANGE[to.type]
    dtype = to.dtype

    def run(ins, outs):
        v = ins[0].astype(np.int64) - zi
        r = np.where(v >= 0, fx.mbqm(v, m_id, s_id), fx.mbqm(v, m_alpha, s_alpha)) + zo
        outs[0][...] = clamp_cast(r, lo, hi, dtype)
    return Prepared(run, ("kernel.leaky_relu", n))
