"""SQUARED_DIFFERENCE, RSQRT, ABS, SQRT, LOG, EXP, NEG: TFLM's ``squared_difference.cc``, ``elementwise.cc``,
``exp.cc`` and ``neg.cc``.

- SQUARED_DIFFERENCE float32/int32: ``(a - b) * (a - b)`` (int32 wraps); int8/int16: the inputs rescaled to twice
  the larger input scale (the max of the two float scales, then in double) with ``left_shift`` 7 (int8) or 0
  (int16; all zero points 0), ``QuantizeMultiplierSmallerThanOneExp`` for the inputs and ``QuantizeMultiplier``
  for the output (twice_max^2 / (2^(2*left_shift) * s_out)); per element: x - zp shifted, the two MBQM-smaller-than-
  one products, their difference squared in int32, MBQM, + zp_out, clamped to the type's range. Broadcasting as
  ``BroadcastBinaryFunction4DSlow``.
- RSQRT float32: ``1.f / std::sqrt(x)``; int8: multiplier 1 / (sqrtf(s_in) * s_out) (the product in float, the
  quotient in double), per element v = x - zp_in: 0 gives 127, otherwise ``GetInvSqrtQuantizedMultiplierExp(v)``,
  data = MBQM(1, inv, shift + 20), MBQM(data, multiplier, shift_out - 20) + zp_out, clamped; an input below the
  zero point stops the run (TFLM's Eval: ``Rsqrt is only defined for positive values``). int16 the same with
  zero points 0 and the int16 range: TFLM's Prepare means to take float32 and int8 only, but its type check
  (``IsSupportedType(input->type)`` on the template's unnamed parameter: a cast to a function pointer, never
  null) lets every type through to the Eval, which runs int16. The same holds for ABS and the float-only
  operators: their Evals refuse the other types; here Prepare refuses them.
- ABS float32; int8 (and quantized int16 with zero points 0): |x - zp_in|, rescaled by MBQM with
  QuantizeMultiplier(s_in / s_out in float) when the two float scales differ, + zp_out, clamped; unquantized int16:
  ``std::abs`` (-32768 stays -32768).
- SQRT, LOG, EXP, NEG: float32 only (``std::sqrt``, ``std::log``, ``std::exp``, ``-x``), computed in double and
  rounded to float32 (glibc's ``logf``/``expf`` are correctly rounded in nearly every case; another libm may
  differ in the last place).
"""

from __future__ import annotations

import numpy as np

from ... import fixedpoint as fx
from . import register
from .common import (QRANGE, TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32, Prepared, check_broadcast, clamp_cast,
                     ensure)
from .softmax import KernelCheckFailed


@register("SQUARED_DIFFERENCE")
def prepare_squared_difference(ctx, op):
    t1, t2, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    ensure(t1.type == t2.type, f"SQUARED_DIFFERENCE: input1 {t1.type_name} != input2 {t2.type_name}")
    ensure(to.type == t2.type, f"SQUARED_DIFFERENCE: output {to.type_name} != input {t2.type_name}")
    ensure(to.type in (TYPE_FLOAT32, TYPE_INT32, TYPE_INT8, TYPE_INT16),
           f"SQUARED_DIFFERENCE: SquaredDifference only supports FLOAT32, INT32 , INT16 and INT8 now, got {to.type}.")
    check_broadcast(t1, t2, to, "SQUARED_DIFFERENCE: ")
    n = max(to.numel, 1)
    if to.type in (TYPE_FLOAT32, TYPE_INT32):
        dtype = to.dtype

        def run(ins, outs):
            if dtype == np.float32:
                d = ins[0].astype(np.float32) - ins[1].astype(np.float32)
                outs[0][...] = d * d
            else:
                d = fx.wrap32(ins[0].astype(np.int64) - ins[1].astype(np.int64))
                outs[0][...] = fx.wrap32(d * d).astype(np.int32)
        return Prepared(run, ("kernel.mul", n))
    z1, z2, zo = t1.params_zero_point, t2.params_zero_point, to.params_zero_point
    if to.type == TYPE_INT8:
        for z in (z1, z2, zo):
            ensure(-128 <= z <= 127, f"SQUARED_DIFFERENCE: zero point {z} outside the int8 range")
        left_shift = 7
    else:
        ensure((z1, z2, zo) == (0, 0, 0), f"SQUARED_DIFFERENCE: int16 zero points must be 0 (they are "
                                          f"{[z1, z2, zo]})")
        left_shift = 0
    f1, f2, fo = (np.float32(t.params_scale) for t in (t1, t2, to))
    twice_max = 2.0 * float(max(f1, f2))
    m1, sh1 = fx.quantize_multiplier_smaller_than_one_exp(float(f1) / twice_max)
    m2, sh2 = fx.quantize_multiplier_smaller_than_one_exp(float(f2) / twice_max)
    denom = float(np.float32(np.float32(1 << (2 * left_shift)) * fo))  # int * float: in float
    mo, sho = fx.quantize_multiplier(twice_max * twice_max / denom)
    lo, hi = QRANGE[to.type]
    dtype = to.dtype

    def run(ins, outs):
        a, b = np.broadcast_arrays(ins[0].astype(np.int64), ins[1].astype(np.int64))
        sa = fx.mbqm_smaller_than_one_exp((a - z1) * (1 << left_shift), m1, sh1)
        sb = fx.mbqm_smaller_than_one_exp((b - z2) * (1 << left_shift), m2, sh2)
        d = fx.wrap32(sa - sb)
        r = fx.mbqm(fx.wrap32(d * d), mo, sho) + zo
        outs[0][...] = clamp_cast(r, lo, hi, dtype)
    return Prepared(run, ("kernel.mul", n))


_TYPE_MESSAGES = {"EXP": "Type {} ({}) currently not supported by Exp.", "NEG": "Type {} ({}) not supported."}


def _unary_types(ctx, op, allowed):
    ti, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    name = op.op_name
    ensure(len(op.inputs) == 1 and len(op.outputs) == 1, f"{name}: 1 input and 1 output")
    message = _TYPE_MESSAGES.get(name, "Input data type {} ({}) is not supported.")
    ensure(ti.type in allowed, f"{name}: " + message.format(ti.type_name, ti.type))
    ensure(ti.type == to.type, f"{name}: input {ti.type_name} and output {to.type_name} types differ")
    ensure(tuple(ti.shape) == tuple(to.shape), f"{name}: input {list(ti.shape)} and output {list(to.shape)} differ")
    return ti, to


def _quantized(ti, to, name):
    ensure(ti.scale.size > 0 and to.scale.size > 0, f"{name}: the input and output must be quantized")
    return ti.params_zero_point, to.params_zero_point


@register("RSQRT")
def prepare_rsqrt(ctx, op):
    ti, to = _unary_types(ctx, op, (TYPE_FLOAT32, TYPE_INT8, TYPE_INT16))
    n = max(to.numel, 1)
    if ti.type == TYPE_FLOAT32:
        def run(ins, outs):
            outs[0][...] = np.float32(1) / np.sqrt(ins[0].astype(np.float32))
        return Prepared(run, ("kernel.default", n))
    zi, zo = _quantized(ti, to, "RSQRT")
    if ti.type == TYPE_INT16:
        ensure(zi == 0 and zo == 0, f"RSQRT: int16 zero points must be 0 (they are [{zi}, {zo}])")
    prod = np.float32(np.sqrt(np.float32(ti.params_scale))) * np.float32(to.params_scale)  # in float
    m, sh = fx.quantize_multiplier(1.0 / float(np.float32(prod)))
    lo, hi = QRANGE[to.type]
    k_shift = 20
    cache: dict = {}

    def value(v: int) -> int:
        if v == 0:
            return hi
        inv, inv_shift = fx.get_inv_sqrt_quantized_multiplier_exp(v, -1)
        data = int(fx.mbqm(1, inv, inv_shift + k_shift))
        return min(max(int(fx.mbqm(data, m, sh - k_shift)) + zo, lo), hi)
    dtype = to.dtype

    def run(ins, outs):
        x = ins[0].astype(np.int64)
        if x.size and x.min() < zi:
            raise KernelCheckFailed("RSQRT: Rsqrt is only defined for positive values")
        keys, inverse = np.unique(x, return_inverse=True)
        vals = np.array([cache.setdefault(int(k), value(int(k) - zi)) for k in keys], np.int64)
        outs[0][...] = vals[inverse].reshape(x.shape).astype(dtype)
    return Prepared(run, ("kernel.default", n))


@register("ABS")
def prepare_abs(ctx, op):
    ti, to = _unary_types(ctx, op, (TYPE_FLOAT32, TYPE_INT8, TYPE_INT16))
    n = max(to.numel, 1)
    dtype = to.dtype
    if ti.type == TYPE_FLOAT32 or (ti.type == TYPE_INT16 and ti.scale.size == 0):
        def run(ins, outs):
            outs[0][...] = np.abs(ins[0]).astype(dtype)  # int16: -32768 stays -32768, as std::abs then the cast
        return Prepared(run, ("kernel.default", n))
    zi, zo = _quantized(ti, to, "ABS")
    if ti.type == TYPE_INT16:
        ensure(zi == 0 and zo == 0, f"ABS: int16 zero points must be 0 (they are [{zi}, {zo}])")
    si, so = np.float32(ti.params_scale), np.float32(to.params_scale)
    rescale = si != so
    m, sh = fx.quantize_multiplier(float(np.float32(si / so))) if rescale else (0, 0)
    lo, hi = QRANGE[to.type]

    def run(ins, outs):
        v = np.abs(ins[0].astype(np.int64) - zi)
        r = (fx.mbqm(v, m, sh) if rescale else v) + zo
        outs[0][...] = clamp_cast(r, lo, hi, dtype)
    return Prepared(run, ("kernel.default", n))


def _float_unary(name, fn):
    @register(name)
    def prepare(ctx, op):
        to = _unary_types(ctx, op, (TYPE_FLOAT32,))[1]

        def run(ins, outs):
            outs[0][...] = fn(ins[0].astype(np.float64)).astype(np.float32)
        return Prepared(run, ("kernel.default", max(to.numel, 1)))
    return prepare


_float_unary("SQRT", np.sqrt)
_float_unary("LOG", np.log)
_float_unary("EXP", np.exp)
_float_unary("NEG", np.negative)
