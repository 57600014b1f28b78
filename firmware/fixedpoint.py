"""The fixed-point integer arithmetic both firmware images use, vectorised over numpy ``int64`` arrays: TFLite's
reference kernels (the TFLite Micro image) and CMSIS-NN (the ExecuTorch image's ``cortex_m`` kernels, which name
these functions as CMSIS does in ``executorch/kernels/cortex_m/fixed_point.py``) compute the same values.

Each function reproduces one C++ helper exactly (values are kept in ``int64`` and wrapped to 32 bits where the
C++ works in ``int32_t``):

- ``QuantizeMultiplier`` and friends: ``tensorflow/lite/kernels/internal/quantization_util.cc`` (``std::frexp``,
  ``TfLiteRound`` = ``std::round``: half away from zero, the ``q_fixed == 2^31`` and ``shift < -31`` cases);
- ``MultiplyByQuantizedMultiplier``: ``kernels/internal/common.cc``, the default double-rounding build
  (``TFLITE_SINGLE_ROUNDING`` 0, as TFLite Micro and LiteRT are built), and its ``int64_t`` overload (one
  rounding with the multiplier cut to 16 bits) for the 16x8 kernels' 64-bit accumulators;
- ``SaturatingRoundingDoublingHighMul``, ``RoundingDivideByPOT``, ``SaturatingRoundingMultiplyByPOT``,
  ``RoundingHalfSum``, ``exp_on_negative_values``, ``one_over_one_plus_x_for_x_in_0_1``,
  ``one_minus_x_over_one_plus_x_for_x_in_0_1``, ``logistic``, ``tanh``: gemmlowp's ``fixedpoint/fixedpoint.h``
  (scalar int32 semantics: ``+``/``-`` of FixedPoint values wrap, only 16-bit adds saturate), and
  ``GetReciprocal`` from ``kernels/internal/common.h``;
- the int16 scalar forms (``SaturatingRoundingDoublingHighMul`` and ``RoundingDivideByPOT`` on ``int16_t``,
  results truncated to 16 bits as the C++ assignments do) and ``hard_swish.h``'s ``SaturatingLeftShift`` and
  ``SaturatingDoublingHighMul`` (truncating, not rounding); ``DownScaleInt32ToInt16Multiplier``,
  ``CalculateInputRadius`` and ``CheckedLog2`` (float32 ``logf``) from ``quantization_util.cc``/``common.h``.

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


def mbqm64(x, multiplier, shift) -> np.ndarray:
    """``MultiplyByQuantizedMultiplier(int64_t x, int32_t multiplier, int shift)``, the overload the 16x8 kernels'
    64-bit accumulators take: the multiplier rounded to Q15 (0x7FFF from 0x7FFF0000 up), one rounding shift by
    15 - shift, the result truncated to int32 (``int32_t result = x >> total_shift``)."""
    x = np.asarray(x, dtype=np.int64)
    m = np.asarray(multiplier, dtype=np.int64)
    reduced = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)
    total_shift = 15 - np.asarray(shift, dtype=np.int64)
    return wrap32((x * reduced + (np.int64(1) << (total_shift - 1))) >> total_shift)


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


_ONE_F2 = 1 << 29  # 1.0 in Q2.29


def _newton_one_over_half_denominator(a) -> np.ndarray:
    """The Newton-Raphson division both ``one_over_one_plus_x_for_x_in_0_1`` and
    ``one_minus_x_over_one_plus_x_for_x_in_0_1`` run: Q0.31 ``a`` in, 1 / ((1 + a) / 2) as Q2.29 out."""
    half_denominator = rounding_half_sum(a, INT32_MAX)  # Q0.31
    constant_48_over_17 = 1515870810  # Q2.29
    constant_neg_32_over_17 = -1010580540  # Q2.29
    x = wrap32(constant_48_over_17 + fx_mul(half_denominator, constant_neg_32_over_17))  # Q2.29
    for _ in range(3):
        half_denominator_times_x = fx_mul(half_denominator, x)  # Q2.29
        one_minus = wrap32(_ONE_F2 - half_denominator_times_x)
        x = wrap32(x + rescale(fx_mul(x, one_minus), 4, 2))
    return x


def one_over_one_plus_x_for_x_in_0_1(a) -> np.ndarray:
    """gemmlowp ``one_over_one_plus_x_for_x_in_0_1`` (Q0.31 in and out): Newton-Raphson, three steps."""
    # ExactMulByPot<-1>: the same raw value read as Q1.30, then Rescale<0>
    return rescale(_newton_one_over_half_denominator(a), 1, 0)


def one_minus_x_over_one_plus_x_for_x_in_0_1(a) -> np.ndarray:
    """gemmlowp ``one_minus_x_over_one_plus_x_for_x_in_0_1`` (Q0.31 in and out): the same division, minus one
    in Q2.29, then ``Rescale<0>``."""
    return rescale(wrap32(_newton_one_over_half_denominator(a) - _ONE_F2), 2, 0)


def logistic(a, int_bits: int) -> np.ndarray:
    """gemmlowp ``logistic`` of FixedPoint<int32, int_bits> raw values; Q0.31 result (0.5 at zero)."""
    a = np.asarray(a, dtype=np.int64)
    positive = a > 0
    abs_input = np.where(positive, a, wrap32(-a))
    if_positive = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(wrap32(-abs_input), int_bits))
    if_negative = wrap32(INT32_MAX - if_positive)  # ResultF::One() - result_if_positive
    return np.where(a == 0, np.int64(1 << 30), np.where(positive, if_positive, if_negative))


def tanh(a, int_bits: int) -> np.ndarray:
    """gemmlowp ``tanh`` of FixedPoint<int32, int_bits> raw values; Q0.31 result: (1 - exp(-2|x|)) /
    (1 + exp(-2|x|)), the doubling an ``ExactMulByPot<1>`` (the same raw value read with one more integer bit)."""
    a = np.asarray(a, dtype=np.int64)
    negative = a < 0
    n = np.where(negative, a, wrap32(-a))
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, int_bits + 1))
    return np.where(a == 0, np.int64(0), np.where(negative, wrap32(-t), t))


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


# ----------------------------------------------------------------------------------------------- int16 forms


def wrap16(x) -> np.ndarray:
    """Two's-complement truncation to int16 (a C++ assignment to ``int16_t``)."""
    x = np.asarray(x, dtype=np.int64)
    return ((x + (1 << 15)) & 0xFFFF) - (1 << 15)


def _div_trunc(x: np.ndarray, d: int) -> np.ndarray:
    """C integer division of int64 values by a positive constant (truncation toward zero)."""
    q = np.abs(x) // d
    return np.where(x < 0, -q, q)


def srdhm16(a, b) -> np.ndarray:
    """gemmlowp ``SaturatingRoundingDoublingHighMul(int16_t, int16_t)``."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, np.int64(1 << 14), np.int64(1 - (1 << 14)))
    res = wrap16(_div_trunc(ab + nudge, 1 << 15))
    return np.where((a == -32768) & (b == -32768), np.int64(32767), res)


def sdhm16(a, b) -> np.ndarray:
    """``SaturatingDoublingHighMul`` of ``hard_swish.h``: (a * b) / 2^15 truncated toward zero."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    res = wrap16(_div_trunc(a * b, 1 << 15))
    return np.where((a == -32768) & (b == -32768), np.int64(32767), res)


def rdbp16(x, exponent: int) -> np.ndarray:
    """gemmlowp ``RoundingDivideByPOT`` on ``int16_t`` (exponent 0..31): the mask ``(1ll << exponent) - 1``
    truncated to 16 bits, as the template does for exponents of 16 and more."""
    x = np.asarray(x, dtype=np.int64)
    mask = int(wrap16((1 << exponent) - 1))
    remainder = x & mask
    threshold = wrap16((mask >> 1) + (x < 0))
    return wrap16((x >> exponent) + (remainder > threshold))


def saturating_left_shift16(x, amount: int) -> np.ndarray:
    """``SaturatingLeftShift`` of ``hard_swish.h``: x * 2^amount clamped to int16."""
    return np.clip(np.asarray(x, dtype=np.int64) * (1 << amount), -32768, 32767)


def downscale_int32_to_int16_multiplier(m: int) -> int:
    """``DownScaleInt32ToInt16Multiplier``: the Q31 multiplier rounded to Q15 (32767 at the top)."""
    if m < 0:
        raise ValueError(f"DownScaleInt32ToInt16Multiplier: negative multiplier {m}")
    if m >= INT32_MAX - (1 << 15):
        return 32767
    return (m + (1 << 15)) >> 16


def calculate_input_radius(input_integer_bits: int, input_left_shift: int, total_signed_bits: int = 31) -> int:
    """``CalculateInputRadius`` (the double form): floor((2^ib - 1) * 2^(tsb - ib) / 2^left_shift)."""
    max_input_rescaled = (1.0 * ((1 << input_integer_bits) - 1) * float(1 << (total_signed_bits - input_integer_bits))
                          / math.ldexp(1.0, input_left_shift))
    return int(math.floor(max_input_rescaled))


def checked_log2(x: float) -> tuple[bool, int]:
    """``CheckedLog2``: (is a power of two within 1e-3 in float32, round(log2 x)) with float32 ``logf``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        x_log2 = np.float32(np.log(np.float32(x))) * (np.float32(1.0) / np.float32(np.log(np.float32(2.0))))
    x_log2 = np.float32(x_log2)
    if not np.isfinite(x_log2):
        return False, 0
    rounded = np.float32(round_half_away_f32(x_log2))
    frac = np.float32(x_log2 - rounded)
    return bool(abs(frac) < np.float32(1e-3)), int(rounded)


def get_inv_sqrt_quantized_multiplier_exp(x: int, reverse_shift: int) -> tuple[int, int]:
    """``GetInvSqrtQuantizedMultiplierExp`` (``kernels/internal/common.h``): 1/sqrt(x) as (Q0.31 multiplier,
    shift): x brought into [2^27, 2^29) by bit pairs, five Newton-Raphson steps in gemmlowp Q3.28 from 1, times
    sqrt(2)/2; x <= 1 gives (INT32_MAX, 0). ``reverse_shift`` -1 makes the shift a left shift."""
    if x <= 1:
        return INT32_MAX, 0
    shift = 11
    while x >= (1 << 29):
        x //= 4
        shift += 1
    pairs = (count_leading_zeros32(x) - 1) // 2 - 1
    shift -= pairs
    x <<= 2 * pairs
    half_input = int(rdbp(x >> 1, 1))  # F3 raw of x >> 1, times 2^-1
    half_three = (1 << 28) + (1 << 27)  # 1.5 in Q3.28
    v = 1 << 28  # F3::One()
    for _ in range(5):
        v3 = int(rescale(fx_mul(fx_mul(v, v), v), 9, 3))
        diff = int(wrap32(int(fx_mul(half_three, v)) - int(fx_mul(half_input, v3))))
        v = int(rescale(diff, 6, 3))
    r = int(fx_mul(v, 1518500250))  # times sqrt(2)/2 (Q0.31): still Q3.28
    if shift < 0:
        r = int(wrap32(r << -shift))
        shift = 0
    return r, shift * reverse_shift
