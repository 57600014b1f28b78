"""CMSIS-NN's MVE forms and gemmlowp's scalar forms of the fixed-point helpers give the same values, so one
module (firmware.fixedpoint) serves both firmware images: checked here against the MVE definitions written out."""

import numpy as np

from firmware.executorch.kernels.cortex_m import fixed_point as cmsis

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1
EDGES = np.array([0, 1, -1, 2, -2, (1 << 30), -(1 << 30), (1 << 30) - 1, -(1 << 30) + 1, I32_MAX, I32_MIN,
                  I32_MIN + 1, 12345, -12345], dtype=np.int64)


def _samples(n=20000, seed=7):
    rng = np.random.default_rng(seed)
    a = np.concatenate([rng.integers(I32_MIN, I32_MAX, n, endpoint=True), np.repeat(EDGES, EDGES.size)])
    b = np.concatenate([rng.integers(I32_MIN, I32_MAX, n, endpoint=True), np.tile(EDGES, EDGES.size)])
    return a, b


def test_doubling_high_mult_is_vqrdmulh():
    a, b = _samples()
    mve = np.minimum((a * b + (1 << 30)) >> 31, I32_MAX)  # VQRDMULH: floor, saturating INT32_MIN^2 only
    assert np.array_equal(cmsis.doubling_high_mult(a, b), mve)


def test_divide_by_power_of_two_rounds_halves_away_from_zero():
    a, _ = _samples(4000)
    for e in (0, 1, 5, 17, 31):
        exact = a / float(1 << e)
        want = np.where(exact >= 0, np.floor(exact + 0.5), -np.floor(-exact + 0.5)).astype(np.int64)
        assert np.array_equal(cmsis.divide_by_power_of_two(a, e), want), e


def test_requantize_is_the_mve_sequence():
    a, m = _samples(4000)
    m = np.abs(m) % (1 << 30) + (1 << 30)  # a multiplier in [2^30, 2^31)
    for s in (-31, -7, 0, 3):
        left, right = max(s, 0), max(-s, 0)
        v = (((a << left) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
        v = np.minimum((v * m + (1 << 30)) >> 31, I32_MAX)
        want = cmsis.divide_by_power_of_two(v, right)
        assert np.array_equal(cmsis.requantize(a, m, s), want), s
