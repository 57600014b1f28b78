"""LOGISTIC, TANH (int8, int16, float32), HARD_SWISH (int8, float32), RELU and RELU6 (int8, int16, float32) as
TFLite Micro's reference kernels.

- LOGISTIC/TANH int8: the Prepare of TFLM ``logistic_common.cc`` / ``tanh.cc``: input_real_multiplier =
  double(s_in) * 2^27 (4 integer bits), ``std::frexp`` into (q, input_left_shift), input_multiplier =
  round(q * 2^31), input_range_radius = ``CalculateInputRadius(4, input_left_shift, 31)``; LOGISTIC also
  requires the output zero point -128 (TFLM checks no output scale: the result is always read as 1/256; TANH
  checks neither and writes 1/128 with zero point 0). Eval is ``reference_integer_ops::Logistic`` / ``Tanh``:
  x - zp_in at or beyond the radius saturates (-128/127), otherwise ``MultiplyByQuantizedMultiplier`` into
  Q4.27, gemmlowp's fixed-point ``logistic`` / ``tanh`` (Q0.31), ``RoundingDivideByPOT`` by 23 (+ -128) or 24,
  clamped. TFLite's own reference kernel (LiteRT's BUILTIN_REF) computes these two int8 paths differently, from a
  256-entry table of the float function (``LUTPopulate``, round(f(x) / s_out) + zp_out), so the two can differ
  by one where f(x) / s_out is within rounding of a half (TANH at s_in 0.030273633 zp -12, input -115: TFLM -127,
  TFLite -128).
- LOGISTIC/TANH int16: the same Prepare's int16 part (zero points 0; ``CheckedLog2`` of the scales; the output
  scale 2^-15; a power-of-two input scale 2^-12 (TANH also 2^-11) keeps input_multiplier 0, any other gets
  s_in * 4096 * 3 doubled up to (16383.5, 32767] with input_left_shift the count) and
  ``reference_integer_ops::Logistic`` / ``Tanh`` int16: x * multiplier rounded down by input_left_shift, then
  linear interpolation in the 256-entry table of sigmoid(i / 24) in Q0.16 (``sigmoid_table_uint16`` of
  ``kernels/internal/common.h``, ``hwdesc/sigmoid.py``; tanh(x) = 2 sigmoid(2x) - 1 from the same table), exact
  integer arithmetic.
- float32: ``reference_ops::Logistic`` (1 above 16.619047164916992188, exp(x) below -9, else 1 / (1 + exp(-x)),
  in float) and ``reference_ops::Tanh`` (``std::tanh``); exp and tanh are the C library's ``expf``/``tanhf``
  (``libm.py``), as TFLite Micro calls them.
- HARD_SWISH int8: TFLM ``hard_swish_common.cc`` (hires input scale s_in / 128 in float; output multiplier
  double(hires / s_out) and reluish multiplier double(hires / (3 / 32768)), each ``QuantizeMultiplier`` then
  ``DownScaleInt32ToInt16Multiplier``; the output exponent must be <= 0) and ``reference_ops::HardSwish<int8_t>``
  in int16 fixed point (saturating shifts, gemmlowp's int16 rounding high multiply and rounding shift, the
  truncating ``SaturatingDoublingHighMul`` for the final product, int16 wrap of the zero-point add as in C).
  float32: x * min(6, max(0, x + 3)) / 6. TFLM has no int16 HARD_SWISH (the converter refuses 16x8 for it too).
- RELU int8/int16 (``activations_common.cc``; int16 zero points must be 0): ``ReluQuantized``, zp_out +
  MBQM(x - zp_in) with the multiplier of s_in / s_out (a float quotient), clamped to [zp_out, type max]. RELU6
  int8/int16: ``Relu6Quantized`` clamps the raw input to [zp_in, zp_in + round(6 / s_in)] and requantizes nothing
  (TFLM reads no output quantization; TFLite's kernel rescales to the output's). float32: max(0, x), clamp to
  [0, 6].
"""

from __future__ import annotations

import math

import numpy as np

from hwdesc.sigmoid import SIGMOID_TABLE_U16 as SIGMOID_TABLE

from ... import fixedpoint as fx
from . import register
from .common import TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, Prepared, clamp_cast, ensure, requantizer
from .libm import expf, tanhf  # noqa: F401 (re-exported: softmax's tables, the LSTM)

# sigmoid(i / 24) in Q0.16, i = 0..255 (TFLite's sigmoid_table_uint16; tuned values, not a plain rounding): the
# one table the Ethos-U's int16 SIGMOID/TANH use too, declared in the neutral hwdesc package
SIGMOID_TABLE_U16 = np.array(SIGMOID_TABLE, dtype=np.int64)

INT8_INPUT_INTEGER_BITS = 4  # Q4.27 input of the int8 paths
INT16_INPUT_INTEGER_BITS = 3  # Q3.12 input of the int16 paths
INT16_OUTPUT_FRACTIONAL_BITS = 15
LOGISTIC_CUTOFF_UPPER = np.float32(16.619047164916992188)
LOGISTIC_CUTOFF_LOWER = np.float32(-9.0)


# ----------------------------------------------------------------------------------------------- prepare


def int8_params(input_scale: float) -> tuple[int, int, int]:
    """(input_multiplier, input_left_shift, input_range_radius) of the int8 LOGISTIC/TANH Prepare."""
    real = float(np.float32(input_scale)) * float(1 << (31 - INT8_INPUT_INTEGER_BITS))
    q, left_shift = math.frexp(real)
    multiplier = fx._round_half_away(float(q) * (1 << 31))
    ensure(multiplier <= fx.INT32_MAX, f"input multiplier of scale {input_scale!r} overflows int32")
    radius = fx.calculate_input_radius(INT8_INPUT_INTEGER_BITS, int(left_shift), 31)
    return int(multiplier), int(left_shift), radius


def int16_params(name: str, ti, to, pot_shifts: tuple) -> tuple[int, int]:
    """(input_multiplier, input_left_shift) of the int16 LOGISTIC/TANH Prepare (0 multiplier: power of two)."""
    ensure(ti.params_zero_point == 0, f"{name}: int16 input zero point must be 0 (it is {ti.params_zero_point})")
    ensure(to.params_zero_point == 0, f"{name}: int16 output zero point must be 0 (it is {to.params_zero_point})")
    pot, log2_in = fx.checked_log2(ti.params_scale)
    left_shift = (15 - INT16_INPUT_INTEGER_BITS) + log2_in
    pot = pot and left_shift in pot_shifts
    multiplier = 0
    if not pot:
        m = float(np.float32(ti.params_scale)) * 4096.0 * 3.0
        left_shift = 0
        while m <= 32767.0 / 2.0 and left_shift <= 30:
            left_shift += 1
            m *= 2.0
        multiplier = int(m)
        # TFLITE_DCHECK_LE(input_multiplier, 32767): beyond it x * multiplier leaves int32 in the C++
        ensure(multiplier <= 32767, f"{name}: int16 input scale {ti.params_scale!r} too large "
                                    f"(input multiplier {multiplier} > 32767)")
    ok, log2_out = fx.checked_log2(to.params_scale)
    ensure(ok, f"{name}: int16 output scale {to.params_scale!r} is not a power of two")
    ensure(log2_out == -INT16_OUTPUT_FRACTIONAL_BITS, f"{name}: int16 output scale must be 2^-15 "
                                                      f"(it is 2^{log2_out})")
    return multiplier, left_shift


# ----------------------------------------------------------------------------------------------- eval


def logistic_int8(x, zp: int, multiplier: int, left_shift: int, radius: int) -> np.ndarray:
    v = np.asarray(x, dtype=np.int64) - zp
    q4 = fx.mbqm(v, multiplier, left_shift)
    q0 = fx.logistic(q4, INT8_INPUT_INTEGER_BITS)
    r = np.clip(fx.rdbp(q0, 31 - 8) - 128, -128, 127)
    return np.where(v <= -radius, -128, np.where(v >= radius, 127, r)).astype(np.int8)


def tanh_int8(x, zp: int, multiplier: int, left_shift: int, radius: int) -> np.ndarray:
    v = np.asarray(x, dtype=np.int64) - zp
    q4 = fx.mbqm(v, multiplier, left_shift)
    q0 = fx.tanh(q4, INT8_INPUT_INTEGER_BITS)
    r = np.clip(fx.rdbp(q0, 31 - 7), -128, 127)
    return np.where(v <= -radius, -128, np.where(v >= radius, 127, r)).astype(np.int8)


def _int16_rescaled(x, multiplier: int, left_shift: int) -> np.ndarray:
    if multiplier == 0:  # power-of-two scale
        multiplier, left_shift = 3 << left_shift, 0
    rnd = (1 << (left_shift - 1)) if left_shift > 0 else 0
    return fx.wrap32(np.asarray(x, dtype=np.int64) * multiplier + rnd) >> left_shift


def _table_lerp(a: np.ndarray, bits: int, saturated: int) -> np.ndarray:
    """The interpolation of both int16 Evals in the sigmoid table: |x| with ``bits`` bits per table step,
    ``(ua << bits) + frac * (ub - ua)``, ``saturated`` from entry 255 on."""
    uh = a >> bits
    i = np.minimum(uh, 254)
    ua, ub = SIGMOID_TABLE_U16[i], SIGMOID_TABLE_U16[i + 1]
    return np.where(uh >= 255, np.int64(saturated), (ua << bits) + (a & ((1 << bits) - 1)) * (ub - ua))


def logistic_int16(x, multiplier: int, left_shift: int) -> np.ndarray:
    v = _int16_rescaled(x, multiplier, left_shift)
    result = _table_lerp(np.abs(v), 9, 0x7FFF << 10)
    result = np.where(v >= 0, result + (1 << 9), (1 << (16 + 9)) - result + (1 << 9) - 1) & 0xFFFFFFFF
    return fx.wrap16(result >> 10).astype(np.int16)


def tanh_int16(x, multiplier: int, left_shift: int) -> np.ndarray:
    v = _int16_rescaled(x, multiplier, left_shift)
    result = _table_lerp(np.abs(v), 8, 0xFFFF << 8)
    result = np.where(v >= 0, result - (1 << (14 + 9)) + (1 << (9 - 2)),
                      -result + (1 << (14 + 9)) + (1 << (9 - 2)) - 1)
    return fx.wrap16(result >> (9 - 1)).astype(np.int16)


def logistic_float(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    mid = (np.float32(1.0) / (np.float32(1.0) + expf(-x))).astype(np.float32)
    return np.where(x > LOGISTIC_CUTOFF_UPPER, np.float32(1.0),
                    np.where(x < LOGISTIC_CUTOFF_LOWER, expf(x), mid)).astype(np.float32)


def hard_swish_params(input_scale: float, output_scale: float) -> dict:
    """``HardSwishPrepare``'s int8 multipliers (16-bit fixed point + exponent)."""
    hires = np.float32(np.float32(1.0 / 128.0) * np.float32(input_scale))
    reluish_scale = np.float32(np.float32(3.0) / np.float32(32768.0))
    out_m32, out_exp = fx.quantize_multiplier(float(np.float32(hires / np.float32(output_scale))))
    rel_m32, rel_exp = fx.quantize_multiplier(float(np.float32(hires / reluish_scale)))
    return dict(output_multiplier=fx.downscale_int32_to_int16_multiplier(out_m32), output_exponent=out_exp,
                reluish_multiplier=fx.downscale_int32_to_int16_multiplier(rel_m32), reluish_exponent=rel_exp)


def hard_swish_int8(x, zi: int, zo: int, p: dict) -> np.ndarray:
    v = fx.wrap16(np.asarray(x, dtype=np.int64) - zi)
    hires = fx.wrap16(v * (1 << 7))
    preshift_out = fx.srdhm16(hires, p["output_multiplier"])
    reluish = hires
    e = p["reluish_exponent"]
    if e > 0:
        reluish = fx.saturating_left_shift16(reluish, e - 1)
    reluish = fx.srdhm16(reluish, p["reluish_multiplier"])
    if e > 0:
        reluish = fx.saturating_left_shift16(reluish, 1)
    if e < 0:
        reluish = fx.rdbp16(reluish, -e)
    reluish = fx.wrap16((reluish + (1 << 15)) >> 1)  # [-1, 1] -> [0, 1]
    out = fx.rdbp16(fx.sdhm16(reluish, preshift_out), -p["output_exponent"])
    out = fx.wrap16(out + zo)
    return clamp_cast(out, -128, 127, np.int8)


def hard_swish_float(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    r = np.minimum(np.float32(6), np.maximum(np.float32(0), x + np.float32(3)))
    return ((x * r) / np.float32(6)).astype(np.float32)


# ----------------------------------------------------------------------------------------------- registration


def _io(ctx, op, name):
    ensure(len(op.inputs) == 1 and len(op.outputs) == 1, f"{name}: needs one input and one output "
                                                         f"({len(op.inputs)} and {len(op.outputs)} given)")
    ti, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    ensure(ti.type == to.type, f"{name}: input {ti.type_name} and output {to.type_name} types differ")
    ensure(tuple(ti.shape) == tuple(to.shape), f"{name}: input shape {list(ti.shape)} != output "
                                               f"{list(to.shape)}")
    return ti, to


# the type check of each Prepare below: the integer types besides float32, and the message (RELU and RELU6 give
# TFLM's, activations_common.cc)
_S_CURVE_TYPES = ((TYPE_INT8, TYPE_INT16), "{name}: input {type}, output {out} not supported (float32, int8 and int16 "
                                           "are)")
_INT8_INT16 = ((TYPE_INT8, TYPE_INT16), "{name}: Only float32/int8/int16 is supported currently, got {type}")
_INT8_ONLY = ((TYPE_INT8,), "{name}: type {type} not supported (float32 and int8 are)")


def _prepare_float_or(ctx, op, name: str, f_float, quantized, int_types=_INT8_INT16):
    """LOGISTIC, TANH, HARD_SWISH, RELU and RELU6: the same Prepare around each one's arithmetic (one input and one
    output of one type and shape, float32 or one of ``int_types``' types); ``quantized(ti, to)`` returns the
    integer run."""
    ti, to = _io(ctx, op, name)
    cost = (f"kernel.{name.lower()}", max(to.numel, 1))
    if ti.type == TYPE_FLOAT32:
        def run(ins, outs):
            outs[0][...] = f_float(ins[0])
        return Prepared(run, cost)
    types, message = int_types
    ensure(ti.type in types, message.format(name=name, type=ti.type_name, out=to.type_name))
    return Prepared(quantized(ti, to), cost)


def _prepare_s_curve(ctx, op, name: str, f_float, f_int8, f_int16, int16_zero_points: tuple, int8_output_zp=None):
    """LOGISTIC and TANH: the same int8 and int16 Prepare (TFLM's int8 LOGISTIC also checks its output zero point,
    TANH checks none) around each function's own arithmetic."""
    def quantized(ti, to):
        if ti.type == TYPE_INT8:
            if int8_output_zp is not None:
                ensure(to.params_zero_point == int8_output_zp, f"{name}: int8 output zero point must be "
                                                               f"{int8_output_zp} (it is {to.params_zero_point})")
            zp = ti.params_zero_point
            mult, shift, radius = int8_params(ti.params_scale)

            def run(ins, outs):
                outs[0][...] = f_int8(ins[0], zp, mult, shift, radius)
            return run
        mult, shift = int16_params(name, ti, to, int16_zero_points)

        def run16(ins, outs):
            outs[0][...] = f_int16(ins[0], mult, shift)
        return run16
    return _prepare_float_or(ctx, op, name, f_float, quantized, _S_CURVE_TYPES)


@register("LOGISTIC")
def prepare_logistic(ctx, op):
    return _prepare_s_curve(ctx, op, "LOGISTIC", logistic_float, logistic_int8, logistic_int16, (0,),
                            int8_output_zp=-128)


@register("TANH")
def prepare_tanh(ctx, op):
    return _prepare_s_curve(ctx, op, "TANH", tanhf, tanh_int8, tanh_int16, (0, 1))


def _hard_swish_int8(ti, to):
    p = hard_swish_params(ti.params_scale, to.params_scale)
    ensure(p["output_exponent"] <= 0, f"HARD_SWISH: output multiplier exponent {p['output_exponent']} > 0 "
                                      f"(output scale {to.params_scale!r} below input scale / 128)")
    zi, zo = ti.params_zero_point, to.params_zero_point

    def run(ins, outs):
        outs[0][...] = hard_swish_int8(ins[0], zi, zo, p)
    return run


@register("HARD_SWISH")
def prepare_hard_swish(ctx, op):
    return _prepare_float_or(ctx, op, "HARD_SWISH", hard_swish_float, _hard_swish_int8, _INT8_ONLY)


def relu_float(x) -> np.ndarray:
    return np.where(x < 0, np.float32(0), x)  # ReluFloat: -0.0 and NaN pass


def relu6_float(x) -> np.ndarray:
    return np.where(x > 6, np.float32(6), np.where(x < 0, np.float32(0), x))


def _relu_quantized(ti, to):
    if ti.type == TYPE_INT16:
        zps = (ti.params_zero_point, to.params_zero_point)
        ensure(zps == (0, 0), f"RELU: int16 zero points must be 0 (they are {list(zps)})")
    mult, shift = fx.quantize_multiplier(float(np.float32(np.float32(ti.params_scale) / np.float32(to.params_scale))))
    zo = to.params_zero_point
    # ReluQuantized: clamped to [zp_out + roundf(0 / s_out), type max]
    return requantizer(ti.params_zero_point, mult, shift, zo, max(int(np.iinfo(to.dtype).min), zo),
                       int(np.iinfo(to.dtype).max), to.dtype)


@register("RELU")
def prepare_relu(ctx, op):
    return _prepare_float_or(ctx, op, "RELU", relu_float, _relu_quantized)


def _relu6_quantized(ti, to):
    info = np.iinfo(ti.dtype)
    zero = ti.params_zero_point
    # FloatToQuantizedType<T>(6.0f, s_in, zp_in): round(6 / s) + zp clamped to the type
    six = int(np.clip(int(fx.round_half_away_f32(np.float32(6.0) / np.float32(ti.params_scale))) + zero,
                      info.min, info.max))

    def run(ins, outs):
        outs[0][...] = np.clip(ins[0], zero, six).astype(ti.dtype)
    return run


@register("RELU6")
def prepare_relu6(ctx, op):
    return _prepare_float_or(ctx, op, "RELU6", relu6_float, _relu6_quantized)
