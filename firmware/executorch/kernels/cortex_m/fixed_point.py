"""CMSIS-NN's fixed-point arithmetic (``arm_nnsupportfunctions.h``, the ``ARM_MATH_MVEI`` build), on int64 numpy
arrays holding 32-bit values.

* **Requantization** (``arm_requantize_mve``, the default double rounding): ``v << max(shift, 0)`` in 32 bits
  (wrapping), a rounding doubling high multiply by the multiplier (``(v * m + 2^30) >> 31``, saturating only for
  ``INT32_MIN * INT32_MIN``), then a rounding divide by ``2^max(-shift, 0)`` that rounds halves away from zero.
  The scalar and MVE forms of these steps give the same results; accumulators are 32-bit and wrap.
* The softmax helpers: ``exp_on_negative_values``, ``one_over_one_plus_x_for_x_in_0_1``, ``__CLZ``.
* ``to_i8``: the C ``(int8_t)`` cast.
"""

from __future__ import annotations

import numpy as np

from .._util import wrap32

I32_MIN = -(1 << 31)
I32_MAX = (1 << 31) - 1


def doubling_high_mult(a, b):
    """``arm_nn_doubling_high_mult`` / VQRDMULH: ``(a * b + 2^30) >> 31`` (floor), saturating INT32_MIN^2."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    r = (a * b + (1 << 30)) >> 31
    return np.minimum(r, I32_MAX)


def divide_by_power_of_two(x, exponent):
    """``arm_nn_divide_by_power_of_two``: ``x / 2^exponent`` rounded, halves away from zero."""
    x = np.asarray(x, dtype=np.int64)
    e = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << e) - 1
    rem = x & mask
    q = x >> e
    threshold = (mask >> 1) + (q < 0)
    return q + (rem > threshold)


def requantize(val, multiplier, shift):
    """``arm_nn_requantize`` / ``arm_requantize_mve`` (double rounding) of 32-bit values.

    ``multiplier`` and ``shift`` may be scalars or arrays broadcasting against ``val``.
    """
    val = wrap32(val)
    m = np.asarray(multiplier, dtype=np.int64)
    s = np.asarray(shift, dtype=np.int64)
    left = np.maximum(s, 0)
    right = np.maximum(-s, 0)
    return divide_by_power_of_two(doubling_high_mult(wrap32(val << left), m), right)


def mult_by_power_of_two(val, exp: int):
    """``arm_nn_mult_by_power_of_two``: saturating ``val << exp``."""
    val = np.asarray(val, dtype=np.int64)
    thresh = (1 << (31 - exp)) - 1
    r = wrap32(val << exp)
    r = np.where(val > thresh, I32_MAX, r)
    return np.where(val < -thresh, I32_MIN, r)


def exp_on_negative_values(val):
    """``arm_nn_exp_on_negative_values``: exp of a Q5.26 value <= 0, as Q0.31."""
    val = wrap32(val)
    vmmq = (val & ((1 << 24) - 1)) - (1 << 24)
    remainder = wrap32(vmmq - val)
    x = wrap32((vmmq << 5) + (1 << 28))
    x2 = doubling_high_mult(x, x)
    t = divide_by_power_of_two(doubling_high_mult(x2, x2), 2)
    t = doubling_high_mult(wrap32(t + doubling_high_mult(x2, x)), 715827883)
    t = divide_by_power_of_two(wrap32(t + x2), 1)
    result = wrap32(1895147668 + doubling_high_mult(1895147668, wrap32(x + t)))
    for bit, factor in zip(range(24, 31), (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)):
        result = np.where((remainder & (1 << bit)) != 0, doubling_high_mult(result, factor), result)
    return np.where(val == 0, I32_MAX, result)


def one_over_one_plus_x(val):
    """``arm_nn_one_over_one_plus_x_for_x_in_0_1`` (Newton-Raphson in Q2.29)."""
    val = np.asarray(val, dtype=np.int64)
    s = val + I32_MAX
    half = np.where(s >= 0, (s + 1) // 2, -((-(s - 1)) // 2))  # C division truncates toward zero
    half = wrap32(half)
    x = wrap32(1515870810 + doubling_high_mult(half, -1010580540))
    one = 1 << 29
    for _ in range(3):
        x = wrap32(x + mult_by_power_of_two(doubling_high_mult(x, wrap32(one - doubling_high_mult(half, x))), 2))
    return mult_by_power_of_two(x, 1)


def clz32(v):
    """CLZ of 32-bit values (``__CLZ``; 32 for 0): 32 minus the bit length, which ``frexp`` gives exactly."""
    u = (np.asarray(v, dtype=np.int64) & 0xFFFFFFFF).astype(np.float64)
    _, e = np.frexp(u)
    return np.where(u == 0, 32, 32 - e).astype(np.int64)


def to_i8(values) -> np.ndarray:
    """The int8 a C ``(int8_t)`` cast gives (two's complement truncation)."""
    return wrap32(values).astype(np.int8)
