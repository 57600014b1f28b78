"""The Ethos-U85's arithmetic beyond the U55's, in both engines: its extra round modes (TRUNCATE_TO_LOWER,
SYMMETRIC, DOUBLE_ASYMMETRIC), per-operand elementwise scaling, comparisons, bitwise operations and RESIZE.

The round modes against hand-computed cases and Python integers; the numba engine against the numpy reference
on random operations (the whole-program checks are the U85 oracle fixtures, tests/test_oracle_extra.py)."""

from __future__ import annotations

import dataclasses
import zlib

import numpy as np
import pytest

from fvp.machine.npu.descriptors import (Activation, Broadcast, FeatureMap, IfmScaleMode, NpuOperation, Resize,
                                         RoundMode, Scale)
from fvp.machine.npu.engines import fast, reference as ref
from fvp.machine.npu.engines.fast import scaling


LOWER, SYMMETRIC, DOUBLE_ASYMMETRIC = RoundMode.TRUNCATE_TO_LOWER, RoundMode.SYMMETRIC, RoundMode.DOUBLE_ASYMMETRIC


@pytest.mark.parametrize("v,s,mode,expected", [
    (5, 1, LOWER, 2), (-5, 1, LOWER, -3), (-1, 4, LOWER, -1), (7, 0, LOWER, 7),
    (5, 1, SYMMETRIC, 3), (-5, 1, SYMMETRIC, -3), (-3, 1, SYMMETRIC, -2), (-6, 2, SYMMETRIC, -2),
    (-7, 2, SYMMETRIC, -2), (6, 2, SYMMETRIC, 2), (-1, 1, SYMMETRIC, -1),
    # DOUBLE_ASYMMETRIC: DBL's 2**30 correction with either sign: 0.25 -> 1, -0.25 -> 0, -0.75 -> 0
    (1 << 30, 32, DOUBLE_ASYMMETRIC, 1), (-(1 << 30), 32, DOUBLE_ASYMMETRIC, 0),
    (-(3 << 30), 32, DOUBLE_ASYMMETRIC, 0), (-5, 1, DOUBLE_ASYMMETRIC, -2),
])
def test_u85_round_modes_hand_computed(v, s, mode, expected):
    assert ref.rshift_round(v, 1, s, mode) == expected
    assert scaling.mul_round_shift(v, 1, s, int(mode)) == expected  # the kernel takes the mode's value
    assert int(scaling.mul_round_shift_np(np.array([v]), 1, s, mode)[0]) == expected


def test_u85_round_modes_random():
    rng = np.random.default_rng(5)
    for mode in (LOWER, SYMMETRIC, DOUBLE_ASYMMETRIC):
        v = rng.integers(-(1 << 40), 1 << 40, 3000)
        m = rng.integers(0, 1 << 31, 3000)
        s = rng.integers(0, 63, 3000)
        want = [max(min(ref.rshift_round(int(a), int(b), int(c), mode), 1 << 62), -(1 << 62))
                for a, b, c in zip(v, m, s)]
        assert [scaling.mul_round_shift(int(a), int(b), int(c), int(mode)) for a, b, c in zip(v, m, s)] == want
        assert scaling.mul_round_shift_np(v, m, s, mode).tolist() == want


def _fm(name, bits, h, w, c, zp=0, signed=True):
    return FeatureMap(name=name, region=1, bases=(0, 0, 0, 0), height=h, width=w, depth=c, height0=h, height1=h,
                      width0=w, stride_x=c * bits // 8, stride_y=w * c * bits // 8, stride_c=bits // 8, bits=bits,
                      signed=signed, format="NHWC", zero_point=zp)


def _elementwise(sub, rng, bits=8, unary=False):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    ifm, ifm2, ofm = _fm("ifm", bits, 3, 4, 5, int(rng.integers(-5, 5))), _fm("ifm2", bits, 3, 4, 5, 0), \
        _fm("ofm", bits, 3, 4, 5, 0)
    op = NpuOperation(kind="ELEMENTWISE", offset=0, param=0, sub_op=sub, ifm=ifm, ifm2=None if unary else ifm2,
                      ofm=ofm, ofm_scale_mode="GLOBAL", ofm_round_mode=2, ifm_scale_mode=IfmScaleMode.PER_OPERAND,
                      ifm_round_mode=2, ofm_scale=Scale(1, 0), opa_scale=Scale(int(rng.integers(1, 1 << 20)), 18),
                      ifm2_scale=None if unary else Scale(1, 0), ifm2_round_mode=2,
                      activation=Activation(0, 0, lo, hi),
                      broadcast=Broadcast(False, False, False, False, False, 0))
    a = rng.integers(lo, hi + 1, (3, 4, 5))
    b = rng.integers(lo, hi + 1, (3, 4, 5))
    return op, a, b


@pytest.mark.parametrize("sub", ["CMP_EQ", "CMP_NE", "CMP_GE", "CMP_GT", "AND", "OR", "XOR", "AND_NOT", "NOT", "LSR",
                                 "ADD", "SUB", "MUL", "MAX", "LRELU"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_u85_elementwise_fast_equals_reference(sub, seed):
    rng = np.random.default_rng(zlib.crc32(sub.encode()) + seed)
    unary = sub in ("NOT", "LRELU")
    for bits in (8, 16, 32):
        op, a, b = _elementwise(sub, rng, bits, unary)
        if sub == "LRELU":
            op = dataclasses.replace(op, ifm2_scale=Scale(3, 2))
        if sub == "MUL":  # Regor gives MUL unit operand scales (GenerateScalingForElementwise asserts it)
            op = dataclasses.replace(op, opa_scale=Scale(1, 0))
        if sub == "LSR":
            b = rng.integers(0, 40, a.shape)
        want = ref.run_kernel_op(op, a, None if unary else b)
        got = fast.run_kernel_op(op, a, None if unary else b)
        assert np.array_equal(want, got), (sub, bits)
        if sub.startswith("CMP"):  # an all-ones mask where true (Regor's internal bool), 0 where false
            assert set(np.unique(want)) <= {0, -1}


def test_u85_compare_and_bitwise_values():
    rng = np.random.default_rng(3)
    op, a, b = _elementwise("CMP_GT", rng)
    op = dataclasses.replace(op, opa_scale=Scale(1, 0), ifm=dataclasses.replace(op.ifm, zero_point=0))
    assert np.array_equal(ref.run_kernel_op(op, a, b), np.where(a > b, -1, 0))
    op = dataclasses.replace(op, sub_op="AND_NOT")
    assert np.array_equal(ref.run_kernel_op(op, a, b), a & ~b)


@pytest.mark.parametrize("mode", ["BILINEAR", "NEAREST", "REPLICATE"])
def test_resize_fast_equals_reference_and_nearest_is_a_copy(mode):
    rng = np.random.default_rng(4)
    ifm, ofm = _fm("ifm", 8, 4, 5, 3, 3), _fm("ofm", 8, 8, 10, 3, 3)
    r = Resize(mode, 4, 2, -1, 4, 2, -1)
    shift = 16 + (4 if mode == "BILINEAR" else 0)  # Regor: 16 plus the rescale's (BILINEAR divides by 4 * 4)
    op = NpuOperation(kind="RESIZE", offset=0, param=0, sub_op=mode, ifm=ifm, ofm=ofm, ofm_scale_mode="GLOBAL",
                      ofm_round_mode=2, ofm_scale=Scale(1, shift), activation=Activation(0, 0, -128, 127),
                      resize=r)
    x = rng.integers(-128, 128, (4, 5, 3))
    want = ref.run_kernel_op(op, x)
    assert np.array_equal(want, fast.run_kernel_op(op, x))
    if mode == "NEAREST":  # 2x upscale with offset -1/4: output (2i + 1, 2j + 1) is input (i, j)... or its right one
        assert np.array_equal(want[1::2, 1::2], x)
