"""The Ethos-U85's arithmetic beyond the U55's, in both engines: its extra round modes (TRUNCATE_TO_LOWER,
SYMMETRIC, DOUBLE_ASYMMETRIC), per-operand elementwise scaling with the double-round shift, comparisons, bitwise
operations and RESIZE.

The round modes against hand-computed cases and Python integers; the numba engine against the numpy reference
on random operations (the whole-program checks are the U85 oracle fixtures, tests/test_oracle_extra.py)."""

from __future__ import annotations

import dataclasses
import math
import zlib

import numpy as np
import pytest

from hwdesc import ethosu, ethosu85

from fvp.machine.npu.descriptors import (Activation, Broadcast, ClipRange, FeatureMap, IfmScaleMode, NpuOperation,
                                         Resize, RoundMode, Scale)
from fvp.machine.npu.arch import get_arch
from fvp.machine.npu.command_stream import RegisterState, iter_commands
from fvp.machine.npu.engines import fast, reference as ref
from fvp.machine.npu.operations import build_operation
from fvp.machine.npu.engines.fast import scaling

from .vela_ops import mbqm, quantize_multiplier


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


# ------------------------------------------------------------------------------------------------ dbl_rnd


def _regor_add(rng, bits, s1, s2, so, zp1, zp2, zpo, sub="ADD"):
    """The U85 ADD/SUB Regor lowers a TFLite int8/int16 ADD/SUB to (``ElementwiseAddSubScale``: TFLite's left shift
    folded into each input's scale, ``GenerateScalingForElementwise``: dbl_rnd 20 / 15 on both input scales)."""
    left = 20 if bits == 8 else 15
    twice_max = 2 * max(s1, s2)

    def quantized_scale(x):  # Regor's QuantizedScale(double)
        m, e = math.frexp(x)
        return Scale(int(math.floor(m * (1 << 31) + 0.5)), 31 - e, left)

    sa, sb = quantized_scale(s1 * (1 << left) / twice_max), quantized_scale(s2 * (1 << left) / twice_max)
    out = quantized_scale(twice_max / (so * (1 << left)))
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    op = NpuOperation(kind="ELEMENTWISE", offset=0, param=0, sub_op=sub, ifm=_fm("ifm", bits, 3, 4, 5, zp1),
                      ifm2=_fm("ifm2", bits, 3, 4, 5, zp2), ofm=_fm("ofm", bits, 3, 4, 5, zpo),
                      ofm_scale_mode="GLOBAL", ofm_round_mode=RoundMode.DBL, ifm_scale_mode=IfmScaleMode.PER_OPERAND,
                      ifm_round_mode=RoundMode.DBL, ifm2_round_mode=RoundMode.DBL, opa_scale=sa, ifm2_scale=sb,
                      ofm_scale=Scale(out.multiplier, out.shift), activation=Activation(0, 0, lo, hi),
                      broadcast=Broadcast(False, False, False, False, False, 0))
    return op


@pytest.mark.parametrize("bits", [8, 16])
@pytest.mark.parametrize("seed", range(6))
def test_double_round_add_sub_equal_tflite(bits, seed):
    """U85 ADD/SUB with the input scales' dbl_rnd as Regor writes them for TFLite ADD/SUB give TFLite's reference
    ADD/SUB (``x << 20`` (int16: 15) through each input's Q31 multiplier, gemmlowp's double rounding), element
    for element, in both engines; without dbl_rnd the rounding of the large shifts differs."""
    rng = np.random.default_rng(seed)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    s1, s2, so = (float(v) for v in rng.uniform(0.001, 0.1, 3))
    zp1, zp2, zpo = (0, 0, 0) if bits == 16 else (int(v) for v in rng.integers(-128, 128, 3))
    sub = "SUB" if seed % 2 else "ADD"
    op = _regor_add(rng, bits, s1, s2, so, zp1, zp2, zpo, sub)
    a = rng.integers(lo, hi + 1, (3, 4, 5))
    b = rng.integers(lo, hi + 1, (3, 4, 5))
    if bits == 8:  # every int8 value on both sides, against random partners
        a = np.concatenate([np.arange(-128, 128), rng.integers(lo, hi + 1, 256)]).reshape(16, 32, 1)
        b = np.concatenate([rng.integers(lo, hi + 1, 256), np.arange(-128, 128)]).reshape(16, 32, 1)
        op = dataclasses.replace(op, ifm=_fm("ifm", 8, 16, 32, 1, zp1), ifm2=_fm("ifm2", 8, 16, 32, 1, zp2),
                                 ofm=_fm("ofm", 8, 16, 32, 1, zpo))
    left = 20 if bits == 8 else 15
    twice_max = 2 * max(s1, s2)
    m1, e1 = quantize_multiplier(s1 / twice_max)
    m2, e2 = quantize_multiplier(s2 / twice_max)
    mo, eo = quantize_multiplier(twice_max / ((1 << left) * so))
    sign = 1 if sub == "ADD" else -1
    want = np.array([min(max(mbqm(mbqm((x - zp1) << left, m1, e1) + sign * mbqm((y - zp2) << left, m2, e2), mo, eo)
                             + zpo, lo), hi) for x, y in zip(a.ravel().tolist(), b.ravel().tolist())]).reshape(a.shape)
    assert np.array_equal(ref.run_kernel_op(op, a, b), want)
    assert np.array_equal(fast.run_kernel_op(op, a, b), want)
    # the scaled operands themselves are TFLite's scaled inputs; without dbl_rnd some are one off (the smaller
    # input scale's: the larger one's is 1/2, a power of two)
    for v, scale, m, e in (((a - zp1).ravel(), op.opa_scale, m1, e1), ((b - zp2).ravel(), op.ifm2_scale, m2, e2)):
        scaled = [mbqm(x << left, m, e) for x in v.tolist()]
        assert [ref.scale_operand(x, scale, RoundMode.DBL) for x in v.tolist()] == scaled
        if bits == 8 and scale.shift > 11:
            no_dbl = dataclasses.replace(scale, double_round=0)
            assert [ref.scale_operand(x, no_dbl, RoundMode.DBL) for x in v.tolist()] != scaled


@pytest.mark.parametrize("seed", range(4))
def test_double_round_fast_equals_reference(seed):
    """Random scales, shifts, double-round shifts (0..31) and both IFM round modes, 8- to 32-bit operands."""
    rng = np.random.default_rng(100 + seed)
    for bits in (8, 16, 32):
        op, a, b = _elementwise(str(rng.choice(["ADD", "SUB"])), rng, bits)
        if bits == 32:
            a = rng.integers(-(1 << 31), 1 << 31, a.shape)
            b = rng.integers(-(1 << 31), 1 << 31, b.shape)
        for d in (0, 15, 20, 31, int(rng.integers(0, 32))):
            scales = [Scale(int(rng.integers(0, 1 << 31)), int(rng.integers(0, 64)), d) for _ in range(2)]
            modes = [RoundMode(int(rng.choice([RoundMode.DBL, RoundMode.NATURAL]))) for _ in range(2)]
            o = dataclasses.replace(op, opa_scale=scales[0], ifm2_scale=scales[1], ifm_round_mode=modes[0],
                                    ifm2_round_mode=modes[1], ofm_scale=Scale(1, int(rng.integers(0, 40))))
            assert np.array_equal(ref.run_kernel_op(o, a, b), fast.run_kernel_op(o, a, b)), (bits, d)


def test_double_round_moves_the_correction_down():
    """d = 20: the 2**(30 - d) correction applies from shift 12 on, with v's sign, in DBL only."""
    s = Scale(1, 12, 20)
    assert ref.scale_operand(1 << 10, s, RoundMode.DBL) == 1  # (2**10 + 2**11 + 2**10) >> 12
    assert ref.scale_operand(1 << 10, s, RoundMode.NATURAL) == 0  # (2**10 + 2**11) >> 12
    assert ref.scale_operand(-(3 << 10), s, RoundMode.DBL) == -1  # (-3 * 2**10 + 2**11 - 2**10) >> 12
    assert ref.scale_operand(1 << 10, Scale(1, 11, 20), RoundMode.DBL) == 1  # no correction up to shift 31 - d


def _state_at(fixture, want):
    """(configuration, register state, command) at the first operation ``want`` accepts in the U85 oracle
    fixture's stream: a real program's registers, to which a test writes the value it decodes."""
    from machine.npu.helpers import extract_vela_blobs
    from testutil import DATA

    blob = extract_vela_blobs((DATA / "oracle_u85" / fixture / f"{fixture}.bpte").read_bytes())[0]
    arch = next(a for a in (get_arch(n) for n in ethosu.NPU_VARIANTS) if a.config_word == blob.config_word)
    state = RegisterState(arch)
    for cmd in iter_commands(blob.stream, arch):
        if not cmd.is_operation:
            state.apply(cmd)
        elif want(build_operation(state, cmd, arch)):
            return arch, state, cmd
    raise AssertionError(f"no such operation in {fixture}")


def test_32bit_mul_takes_only_the_ofm_shift():
    """A U85 MUL of 32-bit operands scales by OFM_SCALE's shift alone (Regor's U85 constraints: "Mul with 32-bit
    IFM supports shift-only"; its SOFTMAX writes 1/2 as (2**30, 31) for its Q31 products): decoded from a real
    program's register state with that scale written in, then run by both engines: ``x * y >> 31`` rounded half up."""
    arch, state, cmd = _state_at("r3_int32_u85-256", lambda op: op.kind == "ELEMENTWISE" and op.sub_op == "MUL"
                                 and op.ifm.bits == 32)
    reg = ethosu85.BY_NAME["NPU_SET_OFM_SCALE"]
    shift = next(f for f in reg.param_fields if f.name == "shift")
    state.values[reg.code] = (1 << 30) | (shift.put(31) << 32)  # (2**30, 31), DOUBLE_SYMMETRIC
    op = build_operation(state, cmd, arch)
    assert (op.ofm_scale.multiplier, op.ofm_scale.shift, op.ofm_scaling) == (1 << 30, 31, "SHIFT_ONLY")
    rng = np.random.default_rng(9)
    shape = (op.ifm.height, op.ifm.width, op.ifm.depth)
    a = rng.integers(-(1 << 31), 1 << 31, shape)
    b = rng.integers(-(1 << 31), 1 << 31, (op.ifm2.height, op.ifm2.width, op.ifm2.depth))
    op = dataclasses.replace(op, activation=Activation(0, 0, -(1 << 31), (1 << 31) - 1))
    want = ref.run_kernel_op(op, a, b)
    prod = np.broadcast_to(a, want.shape).astype(object) * np.broadcast_to(b, want.shape).astype(object)
    # DBL's 2**30 correction is for shifts above 31 only: at 31, half up
    assert np.array_equal(want, np.clip((prod + (1 << 30)) >> 31, -(1 << 31), (1 << 31) - 1).astype(np.int64))
    assert np.array_equal(fast.run_kernel_op(op, a, b), want)


def _tosa_table_i16(table513, x):
    """The TOSA specification's int16 TABLE (``apply_lookup_s``): a 23-bit int32 result, the 7 fraction bits kept."""
    u = np.clip(np.asarray(x, np.int64) + 32768, 0, 65535)
    idx, frac = u >> 7, u & 0x7F
    base = table513[idx]
    return (base << 7) + (table513[idx + 1] - base) * frac


def test_lut_s16_s32_keeps_the_fraction_bits():
    """LUT_S16_S32 (Regor's lowering of TOSA's int16 -> int32 TABLE: (base, slope) int16 pairs of the 513-entry
    table at slot 0) gives TOSA's ``(base << 7) + slope * fraction``; LUT_S16_S16 rounds it to 16 bits. Decoded from
    a real program's register state with the function written in, then run by both engines."""
    arch, state, cmd = _state_at("int16ops_a16_u85-128", lambda op: op.is_kernel_op and op.activation.table is not None
                                 and op.activation.clip_range == ClipRange.FORCE_INT16)
    reg = ethosu85.BY_NAME["NPU_SET_ACTIVATION"]
    fn = next(f for f in reg.fields if f.name == "activation_function")
    code = next(k for k, v in ethosu85.ACTIVATION_FUNCTION.items() if v == "LUT_S16_S32")
    state.values[reg.code] = (state.values[reg.code] & ~fn.put(-1)) | fn.put(code)
    act = build_operation(state, cmd, arch).activation
    assert (act.table, act.clip_range, act.fraction_kept) == (0, ClipRange.FORCE_INT16, True)

    rng = np.random.default_rng(11)
    table = np.cumsum(rng.integers(-300, 300, 513)).astype(np.int64)  # slopes within int16
    pairs = np.empty(1024, "<i2")
    pairs[0::2], pairs[1::2] = table[:512], table[1:] - table[:512]
    lut = np.frombuffer(pairs.tobytes(), np.uint8).copy()
    x = np.concatenate([np.arange(-32768, 32768, 37), [-32768, 32767]]).reshape(1, -1, 1)
    zeros = np.zeros_like(x)
    op = NpuOperation(kind="ELEMENTWISE", offset=0, param=0, sub_op="ADD", ifm=_fm("ifm", 16, 1, x.shape[1], 1),
                      ifm2=_fm("ifm2", 16, 1, x.shape[1], 1), ofm=_fm("ofm", 32, 1, x.shape[1], 1),
                      ofm_scale_mode="GLOBAL", ofm_round_mode=RoundMode.DBL, ifm_scale_mode=IfmScaleMode.PER_OPERAND,
                      ifm_round_mode=RoundMode.DBL, ofm_scale=Scale(1, 0), opa_scale=Scale(1, 0),
                      ifm2_scale=Scale(1, 0), ifm2_round_mode=RoundMode.DBL, activation=act,
                      broadcast=Broadcast(False, False, False, False, False, 0))
    want = _tosa_table_i16(table, x)
    for engine in (ref, fast):
        assert np.array_equal(engine.run_kernel_op(op, x, zeros, None, None, lut), want), engine.__name__
    rounded = dataclasses.replace(op, activation=dataclasses.replace(act, fraction_kept=False))
    assert np.array_equal(ref.run_kernel_op(rounded, x, zeros, None, None, lut), (want + 64) >> 7)
    assert np.array_equal(fast.run_kernel_op(rounded, x, zeros, None, None, lut), (want + 64) >> 7)
