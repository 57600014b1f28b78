"""Integer arithmetic of TFLite's reference kernels, vectorised over numpy ``int64`` arrays.

Each function reproduces one C++ helper exactly (values are kept in ``int64`` and wrapped to 32 bits where the
C++ works in ``int32_t``):

- ``QuantizeMultiplier`` and friends: ``tensorflow/lite/kernels/internal/quantization_util.cc`` (``std::frexp``,
  ``TfLiteRound`` = ``std::round``: half away from zero, the ``q_fixed == 2^31`` and ``shift < -31`` cases);
- ``MultiplyByQuantizedMultiplier``: ``kernels/internal/common.cc``, the default double-rounding build
  (``TFLITE_SINGLE_ROUNDING`` 0, as TFLite Micro and LiteRT are built);
- ``SaturatingRoundingDoublingHighMul``, ``RoundingDivideByPOT``, ``SaturatingRoundingMultiplyByPOT``,
  ``RoundingHalfSum``, ``exp_on_negative_values``, ``one_over_one_plus_x_for_x_in_0_1``: gemmlowp's
  ``fixedpoint/fixedpoint.h`` (scalar int32 semantics), and ``GetReciprocal`` from ``kernels/internal/common.h``.

Written from those definitions; no code is copied.
"""

from __future__ import annotations

import math

import numpy as np

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def wrap32(x):
    """Two's-complement wrap of ``int64`` values to int32 (what the C++ ``int32_t`` arithmetic does)."""
    x = np.asarray(x, dtype=np.int64)
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


# ----------------------------------------------------------------------------------------------- multipliers


def quantize_multiplier(m: float) -> tuple[int, int]:
    """``QuantizeMultiplier(double)``: (significand in Q31, shift) with m = significand * 2^(shift - 31)."""
    m = float(m)
    if m == 0.0:
        return 0, 0
    q, shift = math.frexp(m)
    q_fixed = _round_half_away(q * (1 << 31))
    if q_fixed > (1 << 31):
        raise ValueError(f"QuantizeMultiplier: {m} out of range")
    if q_fixed == (1 << 31):
        q_fixed //= 2
        shift += 1
    if q_fixed > INT32_MAX:
        raise ValueError(f"QuantizeMultiplier: {m} out of range")
    if shift < -31:
        shift, q_fixed = 0, 0
    return int(q_fixed), int(shift)


def quantize_multiplier_greater_than_one(m: float) -> tuple[int, int]:
    if not m > 1.0:
        raise ValueError(f"QuantizeMultiplierGreaterThanOne: {m} is not > 1")
    q, s = quantize_multiplier(m)
    if s < 0:
        raise ValueError(f"QuantizeMultiplierGreaterThanOne: shift {s} < 0")
    return q, s


def quantize_multiplier_smaller_than_one_exp(m: float) -> tuple[int, int]:
    if not (0.0 < m < 1.0):
        raise ValueError(f"QuantizeMultiplierSmallerThanOneExp: {m} is not in (0, 1)")
    q, s = quantize_multiplier(m)
    if s > 0:
        raise ValueError(f"QuantizeMultiplierSmallerThanOneExp: shift {s} > 0")
    return q, s


def _round_half_away(x: float) -> int:
    """``std::round`` of a double."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def round_half_away_f32(x: np.ndarray) -> np.ndarray:
    """``std::round`` (``roundf``) of float32 values, in float32."""
    x = np.asarray(x, dtype=np.float32)
    return (np.sign(x) * np.floor(np.abs(x) + np.float32(0.5))).astype(np.float32)


# ----------------------------------------------------------------------------------------------- gemmlowp


def _div_pow2_trunc(x: np.ndarray, n: int) -> np.ndarray:
    """C integer division by 2^n (truncation toward zero) of int64 values."""
    return np.where(x >= 0, x >> n, -((-x) >> n))


def srdhm(a, b) -> np.ndarray:
    """``SaturatingRoundingDoublingHighMul`` (int32)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    res = _div_pow2_trunc(ab + nudge, 31)
    return np.where((a == INT32_MIN) & (b == INT32_MIN), np.int64(INT32_MAX), res)


def rdbp(x, exponent) -> np.ndarray:
    """``RoundingDivideByPOT``: x / 2^exponent rounded to nearest, ties away from zero (exponent 0..31)."""
    x = np.asarray(x, dtype=np.int64)
    e = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + (remainder > threshold)


def sat_mul_pot(x, exponent: int) -> np.ndarray:
    """``SaturatingRoundingMultiplyByPOT<exponent>`` on int32 raw values."""
    x = np.asarray(x, dtype=np.int64)
    if exponent == 0:
        return x
    if exponent < 0:
        return rdbp(x, -exponent)
    threshold = (1 << (31 - exponent)) - 1
    res = wrap32(x << exponent)
    res = np.where(x > threshold, np.int64(INT32_MAX), res)
    return np.where(x < -threshold, np.int64(INT32_MIN), res)


def mbqm(x, multiplier, shift) -> np.ndarray:
    """``MultiplyByQuantizedMultiplier(int32_t x, int32_t multiplier, int shift)`` (double rounding)."""
    x = np.asarray(x, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    return rdbp(srdhm(wrap32(x * (np.int64(1) << left)), multiplier), right)


def mbqm_smaller_than_one_exp(x, multiplier, left_shift) -> np.ndarray:
    """``MultiplyByQuantizedMultiplierSmallerThanOneExp`` (double rounding)."""
    return rdbp(srdhm(x, multiplier), -np.asarray(left_shift, dtype=np.int64))


def mbqm_greater_than_one(x, multiplier, left_shift: int) -> np.ndarray:
    """``MultiplyByQuantizedMultiplierGreaterThanOne`` (double rounding)."""
    return srdhm(wrap32(np.asarray(x, dtype=np.int64) * (1 << left_shift)), multiplier)


def rounding_half_sum(a, b) -> np.ndarray:
    s = np.asarray(a, dtype=np.int64) + np.asarray(b, dtype=np.int64)
    sign = np.where(s >= 0, 1, -1)
    return _div_pow2_trunc(s + sign, 1)


def fx_mul(a, b) -> np.ndarray:
    """Product of two gemmlowp FixedPoint values (raw int32): the integer bits add up."""
    return srdhm(a, b)


def rescale(raw, src_int_bits: int, dst_int_bits: int) -> np.ndarray:
    return sat_mul_pot(raw, src_int_bits - dst_int_bits)


def _exp_on_interval_between_negative_one_quarter_and_0_excl(a: np.ndarray) -> np.ndarray:
    """Q0.31 in, Q0.31 out."""
    constant_term = 1895147668
    constant_1_over_3 = 715827883
    x = wrap32(a + (1 << 28))  # a + 1/8
    x2 = fx_mul(x, x)
    x3 = fx_mul(x2, x)
    x4 = fx_mul(x2, x2)
    x4_over_4 = sat_mul_pot(x4, -2)
    poly = sat_mul_pot(wrap32(fx_mul(wrap32(x4_over_4 + x3), constant_1_over_3) + x2), -1)
    return wrap32(constant_term + fx_mul(constant_term, wrap32(x + poly)))


_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535),
               (3, 720401), (4, 242))


def exp_on_negative_values(a, int_bits: int) -> np.ndarray:
    """gemmlowp ``exp_on_negative_values`` of FixedPoint<int32, int_bits> raw values; Q0.31 result."""
    a = np.asarray(a, dtype=np.int64)
    frac_bits = 31 - int_bits
    one_quarter = 1 << (frac_bits - 2)
    mask = one_quarter - 1
    a_mod_quarter_minus_one_quarter = wrap32((a & mask) - one_quarter)
    result = _exp_on_interval_between_negative_one_quarter_and_0_excl(
        rescale(a_mod_quarter_minus_one_quarter, int_bits, 0))
    remainder = wrap32(a_mod_quarter_minus_one_quarter - a)
    for exponent, multiplier in _EXP_BARREL:
        if int_bits > exponent:
            shift_amount = frac_bits + exponent
            result = np.where((remainder & (1 << shift_amount)) != 0, fx_mul(result, multiplier), result)
    if int_bits > 5:
        clamp = -(1 << (36 - int_bits))
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, np.int64(INT32_MAX), result)


def one_over_one_plus_x_for_x_in_0_1(a) -> np.ndarray:
    """gemmlowp ``one_over_one_plus_x_for_x_in_0_1`` (Q0.31 in and out): Newton-Raphson, three steps."""
    half_denominator = rounding_half_sum(a, INT32_MAX)  # Q0.31
    constant_48_over_17 = 1515870810  # Q2.29
    constant_neg_32_over_17 = -1010580540  # Q2.29
    x = wrap32(constant_48_over_17 + fx_mul(half_denominator, constant_neg_32_over_17))  # Q2.29
    one_f2 = 1 << 29
    for _ in range(3):
        half_denominator_times_x = fx_mul(half_denominator, x)  # Q2.29
        one_minus = wrap32(one_f2 - half_denominator_times_x)
        x = wrap32(x + rescale(fx_mul(x, one_minus), 4, 2))
    # ExactMulByPot<-1>: the same raw value read as Q1.30, then Rescale<0>
    return rescale(x, 1, 0)


def count_leading_zeros32(x: int) -> int:
    x &= 0xFFFFFFFF
    return 32 - x.bit_length()


def get_reciprocal(x: int, x_integer_digits: int) -> tuple[int, int]:
    """``GetReciprocal``: (Q0.31 reciprocal scale, num_bits_over_unit)."""
    headroom_plus_one = count_leading_zeros32(x)
    num_bits_over_unit = x_integer_digits - headroom_plus_one
    shifted = ((x & 0xFFFFFFFF) << headroom_plus_one) & 0xFFFFFFFF
    shifted_sum_minus_one = int(wrap32(shifted - (1 << 31)))
    return int(one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one)), num_bits_over_unit
