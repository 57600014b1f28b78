"""DIV as TFLite Micro's ``div.cc`` (``CalculateOpDataDiv``, ``reference_ops::Div``/``DivElementwise``/
``BroadcastDivSlow``).

- float32: x1 / x2 in float32, clamped to the fused activation's range; int32 (both inputs unquantized): C
  division (truncated toward zero) clamped to the activation's int32 range.
- int8: Prepare takes real_multiplier = double(float(s1 / float(s2 * s_out))) through ``QuantizeMultiplier`` and the
  activation range; per element a = x1 - zp1, b = x2 - zp2 (both negated when b < 0), (reciprocal, recip_shift) =
  ``GetReciprocal(b, 31)``, headroom = ``CountLeadingSignBits(a)``, unscaled =
  ``MultiplyByQuantizedMultiplierGreaterThanOne(a, reciprocal, headroom)``, then zp_out +
  ``MultiplyByQuantizedMultiplierSmallerThanOneExp(unscaled, multiplier, shift - recip_shift - headroom)``,
  clamped.
- A zero divisor (b = 0, an int32 0) stops the run with one line: TFLM checks it only in debug builds (a
  ``TFLITE_DCHECK``) and its release arithmetic is undefined there.
- Where |a| is so small that headroom + recip_shift - shift > 31, TFLM's last ``RoundingDivideByPOT`` shifts by
  more than 31: outside its contract (an assert in debug builds), an undefined C shift in release builds (PyPI
  tflite-micro's x86 build wraps the count mod 32 and gives -128, zp + 1 or 127 for x1 - zp1 in {-1, 0, 1} over a
  divisor near 119; an Arm ASR would fill with the sign bit). Here the rounding division is exact there: the
  quotient rounded, zp_out for those near-zero numerators.
Broadcasting as numpy's (the output's shape must be the inputs' broadcast shape).
"""

from __future__ import annotations

import numpy as np

from ... import fixedpoint as fx
from . import register
from .common import (TYPE_FLOAT32, TYPE_INT8, TYPE_INT32, Prepared, activation_range_float,
                     activation_range_quantized, check_broadcast, clamp_cast, ensure)
from .softmax import KernelCheckFailed

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
ACT_RELU, ACT_RELU_N1_TO_1, ACT_RELU6 = 1, 2, 3


def count_leading_sign_bits(a: np.ndarray) -> np.ndarray:
    """``CountLeadingSignBits`` of int32 values (31 for 0)."""
    a = np.asarray(a, dtype=np.int64)
    mag = np.where(a >= 0, a, -a - 1)  # the bits below the sign that equal it
    bits = np.zeros(a.shape, np.int64)
    m = mag.copy()
    for _ in range(32):
        nz = m > 0
        bits += nz
        m = m >> 1
    return 31 - bits


def _int32_range(act: int) -> tuple[int, int]:
    """``CalculateActivationRange<int32_t>``."""
    if act == ACT_RELU:
        return 0, INT32_MAX
    if act == ACT_RELU6:
        return 0, 6
    if act == ACT_RELU_N1_TO_1:
        return -1, 1
    ensure(act == 0, f"DIV: unsupported fused activation {act}")
    return INT32_MIN, INT32_MAX


@register("DIV")
def prepare_div(ctx, op):
    t1, t2, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    ensure(t1.type == t2.type, f"DIV: input1 {t1.type_name} != input2 {t2.type_name}")
    ensure(t1.type == to.type, f"DIV: input {t1.type_name} != output {to.type_name}")
    check_broadcast(t1, t2, to, "DIV: ")
    act = int(op.options.FusedActivationFunction()) if op.options is not None else 0
    n = max(to.numel, 1)
    shape = tuple(to.shape)
    if to.type == TYPE_FLOAT32:
        lo, hi = activation_range_float(act)

        def run(ins, outs):
            with np.errstate(divide="ignore", invalid="ignore"):
                r = ins[0].astype(np.float32) / ins[1].astype(np.float32)
            outs[0][...] = np.clip(r, np.float32(lo), np.float32(hi)).astype(np.float32)
        return Prepared(run, ("kernel.quantized_div", n))
    if to.type == TYPE_INT32:
        ensure(t1.scale.size == 0 and t2.scale.size == 0, "DIV: int32 inputs must not be quantized")
        lo, hi = _int32_range(act)

        def run(ins, outs):
            a, b = np.broadcast_arrays(ins[0].astype(np.int64), ins[1].astype(np.int64))
            if np.any(b == 0):
                raise KernelCheckFailed("DIV: integer division by zero")
            q = np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)  # C division truncates toward zero
            outs[0][...] = clamp_cast(fx.wrap32(q), lo, hi, np.int32).reshape(shape)
        return Prepared(run, ("kernel.quantized_div", n))
    ensure(to.type == TYPE_INT8, f"DIV only supports FLOAT32, INT32, quantized INT8 now, got type {to.type_name} "
                                 f"({to.type}).")
    f32 = np.float32
    real = float(np.float64(f32(t1.params_scale) / f32(f32(t2.params_scale) * f32(to.params_scale))))
    mult, shift = fx.quantize_multiplier(real)
    lo, hi = activation_range_quantized(act, to)
    z1, z2, zo = t1.params_zero_point, t2.params_zero_point, to.params_zero_point
    recip: dict = {}

    def reciprocals(b: np.ndarray):
        keys, inverse = np.unique(b, return_inverse=True)
        vals = [recip.setdefault(int(k), fx.get_reciprocal(int(k), 31)) for k in keys]
        inv = np.array([v[0] for v in vals], np.int64)[inverse].reshape(b.shape)
        sh = np.array([v[1] for v in vals], np.int64)[inverse].reshape(b.shape)
        return inv, sh

    def run(ins, outs):
        a, b = np.broadcast_arrays(ins[0].astype(np.int64) - z1, ins[1].astype(np.int64) - z2)
        if np.any(b == 0):
            raise KernelCheckFailed("DIV: division by zero (input 2 equals its zero point)")
        neg = b < 0
        a, b = np.where(neg, -a, a), np.where(neg, -b, b)
        inv, recip_shift = reciprocals(b)
        headroom = count_leading_sign_bits(a)
        unscaled = fx.srdhm(fx.wrap32(a << headroom), inv)
        total = shift - recip_shift - headroom
        r = fx.rdbp(fx.srdhm(unscaled, mult), -total) + zo
        outs[0][...] = clamp_cast(r, lo, hi, np.int8).reshape(shape)
    return Prepared(run, ("kernel.quantized_div", n))
