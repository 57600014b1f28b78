"""CMSIS-NN's fixed-point arithmetic (``arm_nnsupportfunctions.h``, the ``ARM_MATH_MVEI`` build) under its own
names, on int64 numpy arrays holding 32-bit values: the same integer functions as gemmlowp's and TFLite's, which
``firmware.fixedpoint`` holds once for both firmware images.

* ``doubling_high_mult`` (``arm_nn_doubling_high_mult`` / VQRDMULH: ``(a * b + 2^30) >> 31`` with floor,
  saturating only ``INT32_MIN * INT32_MIN``) is gemmlowp's ``SaturatingRoundingDoublingHighMul``: its nudge of
  ``1 - 2^30`` for a negative product with a division that truncates toward zero gives the same value for every
  product (``-floor((x + 2^30 - 1) / 2^31) == -ceil((x - 2^30) / 2^31)`` for a product ``-x``).
* ``divide_by_power_of_two`` is ``RoundingDivideByPOT`` (halves away from zero); ``requantize``
  (``arm_nn_requantize`` / ``arm_requantize_mve``, double rounding: a wrapping left shift, the doubling high
  multiply, the rounding right shift) is ``MultiplyByQuantizedMultiplier``; ``mult_by_power_of_two`` is
  ``SaturatingRoundingMultiplyByPOT`` for a positive exponent.
* The softmax helpers: ``arm_nn_exp_on_negative_values`` is gemmlowp's ``exp_on_negative_values`` of a Q5.26 value
  (the same polynomial and barrel shifter, no clamp for 5 integer bits); ``arm_nn_one_over_one_plus_x_for_x_in_0_1``
  is gemmlowp's (three Newton-Raphson steps in Q2.29); ``__CLZ``.
* ``to_i8``: the C ``(int8_t)`` cast.
"""

from __future__ import annotations

import numpy as np

from ....fixedpoint import INT32_MAX as I32_MAX, INT32_MIN as I32_MIN, wrap32
from ....fixedpoint import mbqm as requantize, rdbp as divide_by_power_of_two, sat_mul_pot as mult_by_power_of_two
from ....fixedpoint import srdhm as doubling_high_mult
from ....fixedpoint import exp_on_negative_values as _exp_on_negative_values
from ....fixedpoint import one_over_one_plus_x_for_x_in_0_1 as one_over_one_plus_x

__all__ = ["I32_MAX", "I32_MIN", "clz32", "divide_by_power_of_two", "doubling_high_mult", "exp_on_negative_values",
           "mult_by_power_of_two", "one_over_one_plus_x", "requantize", "to_i8"]


def exp_on_negative_values(val):
    """``arm_nn_exp_on_negative_values``: exp of a Q5.26 value <= 0, as Q0.31."""
    return _exp_on_negative_values(val, 5)


def clz32(v):
    """CLZ of 32-bit values (``__CLZ``; 32 for 0): 32 minus the bit length, which ``frexp`` gives exactly."""
    u = (np.asarray(v, dtype=np.int64) & 0xFFFFFFFF).astype(np.float64)
    _, e = np.frexp(u)
    return np.where(u == 0, 32, 32 - e).astype(np.int64)


def to_i8(values) -> np.ndarray:
    """The int8 a C ``(int8_t)`` cast gives (two's complement truncation)."""
    return wrap32(values).astype(np.int8)
