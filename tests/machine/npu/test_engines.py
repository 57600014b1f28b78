"""The arithmetic engines: hand-computed rounding cases, TFLite equivalence, and fast == reference on random ops."""

import dataclasses

import numpy as np
import pytest

from fvp.machine.npu.descriptors import Activation, Broadcast, FeatureMap, Kernel, NpuOperation, Scale
from fvp.machine.npu.engines import fast, reference as ref
from fvp.machine.npu.engines.fast import convolution, operands, scaling

from .vela_ops import mbqm, quantize_multiplier

DBL, TRUNCATE, NATURAL = 0, 1, 2

# ------------------------------------------------------------------------------------------------ rounding


@pytest.mark.parametrize("v,m,s,mode,expected", [
    # NATURAL: round half up (toward +inf)
    (5, 1, 1, NATURAL, 3), (-5, 1, 1, NATURAL, -2), (-6, 1, 2, NATURAL, -1), (6, 1, 2, NATURAL, 2),
    (7, 3, 0, NATURAL, 21),
    # TRUNCATE: toward zero
    (5, 1, 1, TRUNCATE, 2), (-5, 1, 1, TRUNCATE, -2), (-7, 1, 2, TRUNCATE, -1), (-8, 1, 2, TRUNCATE, -2),
    (-1, 1, 63, TRUNCATE, 0),
    # DBL equals NATURAL up to shift 31 ...
    (-5, 1, 1, DBL, -2), (3 << 30, 1, 31, DBL, 2), (-(3 << 30), 1, 31, DBL, -1),
    # ... and adds the second rounding above: 0.25 -> 0.5 -> 1 (TFLite double rounding), -0.25 -> 0
    (1 << 30, 1, 32, DBL, 1), (1 << 30, 1, 32, NATURAL, 0), (-(1 << 30), 1, 32, DBL, 0),
    (-(3 << 30), 1, 32, DBL, -1), (-(3 << 30), 1, 32, NATURAL, -1), (-(1 << 31), 1, 32, DBL, -1),
    # unsigned 32-bit multipliers: 0x80000001 is 2**31 + 1, not negative
    (100, 0x80000001, 31, DBL, 100), (-100, 0x80000001, 31, DBL, -100), ((1 << 29) + 3, 0x80000001, 31, NATURAL,
                                                                             (1 << 29) + 3),
    (1000, 0x80000001, 39, NATURAL, 4), (1000, 0xFFFFFFFF, 32, NATURAL, 1000),
    # wide products: 40-bit value times 32-bit multiplier (72 bits) and shifts up to 63
    # (2**39 - 1)(2**32 - 1) = 2**71 - 2**39 - 2**32 + 1: / 2**63 = 256 - tiny -> 256; / 2**40 -> 2**31 - 1
    ((1 << 39) - 1, 0xFFFFFFFF, 63, NATURAL, 256), ((1 << 39) - 1, 0xFFFFFFFF, 40, NATURAL, 0x7FFFFFFF),
    ((1 << 39) - 1, 0xFFFFFFFF, 40, TRUNCATE, 0x7FFFFFFF - 0), (-(1 << 39), 0xFFFFFFFF, 40, NATURAL, -0x7FFFFFFF),
    # -2**71 + 2**39 over 2**40 = -2**31 + 0.5 exactly: NATURAL rounds up, DBL adds 2**30 / 2**40 first
    (-(1 << 39), 0xFFFFFFFF, 40, DBL, -0x80000000), (-(1 << 39), 0xFFFFFFFF, 40, TRUNCATE, -0x7FFFFFFF),
    # 3 * 2**30 * (2**31 + 1) / 2**63 = 0.75 + tiny: rounds to 1 (and -1)
    (3 << 30, 0x80000001, 63, DBL, 1), (-(3 << 30), 0x80000001, 63, DBL, -1), (3 << 30, 0x80000001, 63, NATURAL, 1),
    ((1 << 40) + 12345, 0xDEADBEEF, 50, TRUNCATE, ((1 << 40) + 12345) * 0xDEADBEEF >> 50),
])
def test_rshift_round_hand_computed(v, m, s, mode, expected):
    assert ref.rshift_round(v, m, s, mode) == expected
    assert scaling.mul_round_shift(v, m, s, mode) == expected


def test_mul_round_shift_matches_python_ints_on_random_values():
    rng = np.random.default_rng(1)
    for _ in range(20000):
        bits = int(rng.integers(1, 62))
        v = int(rng.integers(-(1 << bits), 1 << bits))
        m = int(rng.integers(0, 1 << 32))
        s = int(rng.integers(0, 64))
        mode = int(rng.integers(0, 3))
        want = ref.rshift_round(v, m, s, mode)
        want = max(min(want, 1 << 62), -(1 << 62))
        assert scaling.mul_round_shift(v, m, s, mode) == want, (v, m, s, mode)


def test_dbl_equals_tflite_multiply_by_quantized_multiplier():
    """DBL with multiplier M (Q31 in [2**30, 2**31)) and shift S is TFLite's MultiplyByQuantizedMultiplier with
    exponent 31 - S, including the half-way cases that double rounding changes."""
    rng = np.random.default_rng(2)
    for _ in range(20000):
        m = int(rng.integers(1 << 30, 1 << 31))
        s = int(rng.integers(1, 62))
        e = 31 - s
        lim = (1 << 31) >> max(e, 0)  # TFLite saturates x << e to int32; stay inside
        x = int(rng.integers(-lim, lim))
        if rng.random() < 0.3 and s > 1:  # exact half-way points of the final shift
            x = (((int(rng.integers(-1000, 1000)) << s) + (1 << (s - 1))) // m) if m else 0
            x = max(min(x, lim - 1), -lim)
        assert ref.rshift_round(x, m, s, DBL) == mbqm(x, m, e), (x, m, s)


def test_tflite_quantize_multiplier_roundtrip_example():
    m, e = quantize_multiplier(0.0123)
    assert 1 << 30 <= m < 1 << 31
    assert abs(m * 2.0 ** (e - 31) - 0.0123) < 1e-9


# ------------------------------------------------------------------------------------------------ random ops

DTYPES = {"int8": (8, True), "uint8": (8, False), "int16": (16, True), "uint16": (16, False), "int32": (32, True)}


def _fm(name, dt, h, w, c, zp, fmt="NHWC", upscale="NONE"):
    bits, signed = DTYPES[dt]
    return FeatureMap(name=name, region=1, bases=(0, 0, 0, 0), height=h, width=w, depth=c, height0=h, height1=h,
                      width0=w, stride_x=0, stride_y=0, stride_c=0, bits=bits, signed=signed, format=fmt,
                      zero_point=zp, upscale=upscale)


def _vals(rng, dt, shape):
    bits, signed = DTYPES[dt]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if dt == "int32":
        lo, hi = -(1 << 24), 1 << 24
    return rng.integers(lo, hi + 1, size=shape).astype(np.int64 if dt == "int32" else np.int32)


def _zp(rng, dt):
    bits, signed = DTYPES[dt]
    if bits == 32:
        return 0
    return int(rng.integers(-100, 100)) if signed else int(rng.integers(0, 200))


def _activation(rng, ofm_dt, lut_ok=True):
    bits, signed = DTYPES[ofm_dt]
    lo = -(1 << (bits - 1)) if signed else 0
    hi = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    lo16, hi16 = max(lo, -32768), min(hi, 32767)
    r = rng.random()
    if r < 0.3 or not lut_ok:
        a, b = sorted(int(v) for v in rng.integers(lo16, hi16 + 1, 2))
        return Activation(0, 0, a, b), None
    if r < 0.5 and bits in (8, 32):
        # 8-bit index table (int32 OFM: FORCE_INT8 with int32 entries)
        clip = 0 if bits == 8 else 3
        nbytes = 256 * (bits // 8)
        slot = int(rng.integers(0, 8))
        lut = rng.integers(0, 256, nbytes).astype(np.uint8)
        a, b = (lo, hi) if bits == 8 else (-128, 127)
        return Activation(16 + slot, clip, a, b), lut
    if r < 0.6 and ofm_dt == "int16":
        lut = rng.integers(0, 256, 2048).astype(np.uint8)
        return Activation(16, 0, lo16, hi16), lut
    return Activation(0, 0, lo16, hi16), None


def _base_op(kind, sub, ifm, ofm, rng, **kw):
    act, lut = kw.pop("act", (Activation(0, 0, -32768, 32767), None))
    return NpuOperation(kind=kind, offset=0, param=0, sub_op=sub, ifm=ifm, ofm=ofm, activation=act,
                        ofm_round_mode=int(rng.integers(0, 3)), ofm_block=(1, 1, 8), **kw), lut


def random_kernel_case(rng, kind=None):
    """A random kernel operation with its operands: ``(op, a, b, W, bias_scale, lut)``. A 32-bit OFM has a zero
    point half of the time, which the output stage adds or, as the U55/U65 without an activation function, not."""
    op, *rest = _random_kernel_case(rng, kind)
    if op.ofm.bits == 32 and rng.random() < 0.5:
        op = dataclasses.replace(op, ofm=dataclasses.replace(op.ofm, zero_point=int(rng.integers(-128, 128))),
                                 ofm_zero_point_added=bool(rng.random() < 0.5))
    return (op, *rest)


def _random_kernel_case(rng, kind=None):
    kind = kind or str(rng.choice(["CONV", "DEPTHWISE", "POOL", "ELEMENTWISE"]))
    if kind in ("CONV", "DEPTHWISE", "POOL"):
        sub = None
        if kind == "POOL":
            sub = str(rng.choice(["MAX", "AVERAGE", "REDUCE_SUM"]))
        ifm_dt = str(rng.choice(["int8", "uint8", "int16"])) if kind != "DEPTHWISE" else str(
            rng.choice(["int8", "uint8"]))
        if kind == "POOL" and sub == "REDUCE_SUM" and rng.random() < 0.3:
            ifm_dt = "int32"
        ofm_dt = str(rng.choice(["int8", "uint8", "int16", "int32"]))
        kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        sy, sx = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        dy, dx = (int(rng.choice([1, 2])), int(rng.choice([1, 2]))) if kind != "POOL" else (1, 1)
        up = str(rng.choice(["NONE", "NONE", "NEAREST", "ZEROS"]))
        if kind == "POOL" and sub == "REDUCE_SUM":
            kh = kw = 1
        h, w = int(rng.integers(1, 8)), int(rng.integers(1, 8))
        uh, uw = (2 * h, 2 * w) if up != "NONE" else (h, w)
        khd, kwd = dy * (kh - 1) + 1, dx * (kw - 1) + 1
        pt, pl = int(rng.integers(0, khd)), int(rng.integers(0, kwd))
        oh = max(1, (uh + pt + int(rng.integers(0, khd)) - khd) // sy + 1)
        ow = max(1, (uw + pl + int(rng.integers(0, kwd)) - kwd) // sx + 1)
        pb = max(0, (oh - 1) * sy + khd - uh - pt)
        pr = max(0, (ow - 1) * sx + kwd - uw - pl)
        ih = (oh - 1) * sy + khd - pt - pb
        iw = (ow - 1) * sx + kwd - pl - pr
        cin = int(rng.integers(1, 20))
        cout = cin if kind in ("DEPTHWISE", "POOL") else int(rng.integers(1, 20))
        if sub == "REDUCE_SUM":
            cout = 1
        k = Kernel(kw, kh, sx, sy, dx, dy, pt, pl, pb, pr, up, False, "D8X8")
        ifm = _fm("ifm", ifm_dt, ih, iw, cin, _zp(rng, ifm_dt), upscale=up)
        ofm = _fm("ofm", ofm_dt, oh, ow, cout, _zp(rng, ofm_dt))
        x = _vals(rng, ifm_dt, (ifm.source_height, ifm.source_width, cin))
        act = _activation(rng, ofm_dt)
        W = bs = None
        extra = {}
        if kind in ("CONV", "DEPTHWISE"):
            W = rng.integers(-255, 256, size=(cout, kh, kw, 1 if kind == "DEPTHWISE" else cin)).astype(np.int32)
            bias = rng.integers(-(1 << 39), 1 << 39, size=cout) >> int(rng.integers(0, 30))
            scale = rng.integers(0, 1 << 32, size=cout)
            scale[0] = 0x80000001
            shift = rng.integers(0, 64, size=cout)
            bs = (bias.astype(np.int64), scale.astype(np.int64), shift.astype(np.int32))
            extra = dict(ofm_scale_mode="PER_CHANNEL", acc_format=str(rng.choice(["I32", "I40"])))
        else:
            mode = "GLOBAL" if (sub != "AVERAGE" or rng.random() < 0.6) else "PER_CHANNEL"
            extra = dict(ofm_scale_mode=mode, ofm_scale=Scale(int(rng.integers(0, 1 << 32)), int(rng.integers(0, 64))))
        op, lut = _base_op(kind, sub, ifm, ofm, rng, kernel=k, act=act, **extra)
        return op, x, None, W, bs, lut
    # ---------------- elementwise
    sub = str(rng.choice(["ADD", "SUB", "MUL", "MIN", "MAX", "ABS", "CLZ", "SHL", "SHR", "LRELU"]))
    dt = str(rng.choice(["int8", "uint8", "int16", "int32"]))
    if sub in ("CLZ", "SHL", "SHR"):
        dt = "int32"
    ofm_dt = str(rng.choice(["int8", "uint8", "int16", "int32"])) if sub not in ("CLZ", "SHL", "SHR") else "int32"
    h, w, c = int(rng.integers(1, 6)), int(rng.integers(1, 6)), int(rng.integers(1, 40))
    unary = sub in ("ABS", "CLZ", "LRELU")
    scalar = not unary and rng.random() < 0.2
    bh, bw, bc = (bool(rng.random() < 0.3) for _ in range(3))
    zp1, zp2 = _zp(rng, dt), _zp(rng, dt)
    ifm = _fm("ifm", dt, h, w, c, zp1)
    ifm2 = None if unary or scalar else _fm("ifm2", dt, 1 if bh else h, 1 if bw else w, 1 if bc else c, zp2)
    ofm = _fm("ofm", ofm_dt, h, w, c, _zp(rng, ofm_dt))
    bits, signed = DTYPES[dt]
    sv = int(rng.integers(-32768, 32768)) if signed else int(rng.integers(0, 65536))
    b = Broadcast(bh, bw, bc, bool(rng.random() < 0.3), scalar, sv, zp2)
    a = _vals(rng, dt, (h, w, c))
    if sub == "SHL":
        a = (a >> 10).astype(np.int64)
    b_arr = None if ifm2 is None else _vals(rng, dt, ifm2.shape)
    if sub in ("SHL", "SHR") and b_arr is not None:
        b_arr = rng.integers(0, 40, size=ifm2.shape).astype(np.int64)
    act = _activation(rng, ofm_dt)
    op, lut = _base_op("ELEMENTWISE", sub, ifm, ofm, rng, act=act, broadcast=b, ifm2=ifm2,
                       ofm_scale_mode=str(rng.choice(["GLOBAL", "PER_CHANNEL"])),
                       ofm_scale=Scale(int(rng.integers(0, 1 << 32)), int(rng.integers(0, 64))),
                       opa_scale=Scale(int(rng.integers(0, 1 << 32)), int(rng.integers(0, 40))),
                       opb_scale=int(rng.integers(0, 1 << 16)), ifm_scale_mode=int(rng.integers(0, 3)),
                       ifm_round_mode=int(rng.integers(0, 3)),
                       # as the U55/U65 decoder translates OFM_SCALE for these (u55/operations.py)
                       ofm_scaling="NONE" if sub == "LRELU" else
                       "SHIFT_ONLY" if 32 in (ifm.bits, ofm.bits) else "MULTIPLIER_AND_SHIFT")
    return op, a, b_arr, None, None, lut


@pytest.mark.parametrize("seed", range(400))
def test_fast_equals_reference_random_ops(seed):
    rng = np.random.default_rng(1000 + seed)
    kind = ["CONV", "DEPTHWISE", "POOL", "ELEMENTWISE"][seed % 4]
    op, a, b, W, bs, lut = random_kernel_case(rng, kind)
    want = ref.run_kernel_op(op, a, b, W, bs, lut)
    got = fast.run_kernel_op(op, a, b, W, bs, lut)
    assert got.shape == want.shape == op.ofm.shape
    assert np.array_equal(got, want), op


@pytest.mark.parametrize("path", ["float32-chunked", "float64", "int64"])
def test_fast_conv_paths_match_reference(monkeypatch, path):
    """Force each exact GEMM strategy of ``fast.convolution.conv_acc`` and compare with the reference."""
    n_chunked = 0
    for seed in range(30):
        op, a, b, W, bs, lut = random_kernel_case(np.random.default_rng(seed), "CONV")
        prod = max(operands.abs_max(a, op.ifm.zero_point) * operands.abs_max(W, 0), 1)
        K = W[0].size
        if path == "float32-chunked":
            monkeypatch.setattr(convolution, "EXACT_F32", min(prod * 7 + 1, 2 ** 24))  # chunks of <= 7 elements
            monkeypatch.setattr(convolution, "MIN_F32_CHUNK", 1)
            n_chunked += K > 7 and prod * 7 < 2 ** 24
        elif path == "float64":
            monkeypatch.setattr(convolution, "EXACT_F32", 0)
        else:
            monkeypatch.setattr(convolution, "EXACT_F32", 0)
            monkeypatch.setattr(convolution, "EXACT_F64", 0)
        assert np.array_equal(fast.run_kernel_op(op, a, b, W, bs, lut), ref.run_kernel_op(op, a, b, W, bs, lut))
    if path == "float32-chunked":
        assert n_chunked > 10


# ------------------------------------------------------------------------------------------------ hand cases


def _simple(kind, sub, ifm, ofm, **kw):
    kw.setdefault("activation", Activation(0, 0, -32768, 32767))
    kw.setdefault("ofm_block", (1, 1, 8))
    return NpuOperation(kind=kind, offset=0, param=0, sub_op=sub, ifm=ifm, ofm=ofm, **kw)


@pytest.mark.parametrize("engine", [ref, fast])
def test_conv_hand_computed(engine):
    # 1 input channel 3x3 image, 2x2 kernel, zero point 1, bias 10, scale 1/2 (M = 2**30, S = 31) NATURAL
    ifm = _fm("ifm", "int8", 3, 3, 1, 1)
    ofm = _fm("ofm", "int8", 2, 2, 1, -3)
    k = Kernel(2, 2, 1, 1, 1, 1, 0, 0, 0, 0, "NONE", False, "D8X8")
    op = _simple("CONV", None, ifm, ofm, kernel=k, ofm_round_mode=NATURAL, ofm_scale_mode="PER_CHANNEL")
    x = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], np.int32).reshape(3, 3, 1)
    W = np.array([[1, -1], [2, 0]], np.int32).reshape(1, 2, 2, 1)
    bs = (np.array([10]), np.array([1 << 30]), np.array([31], np.int32))
    out = engine.run_kernel_op(op, x, None, W, bs, None)
    xv = x[:, :, 0] - 1
    acc = [[10 + xv[i, j] - xv[i, j + 1] + 2 * xv[i + 1, j] for j in range(2)] for i in range(2)]
    want = [[(a + 1) // 2 - 3 for a in row] for row in acc]  # (acc / 2) rounded half up, + zp
    assert out[:, :, 0].tolist() == want


@pytest.mark.parametrize("engine", [ref, fast])
def test_max_pool_ignores_padding_and_padded_average_divides_by_valid_count(engine):
    ifm = _fm("ifm", "int8", 2, 2, 1, 0)
    ofm = _fm("ofm", "int8", 2, 2, 1, 0)
    k = Kernel(2, 2, 1, 1, 1, 1, 1, 1, 0, 0, "NONE", False, "D8X8")
    x = np.array([[-5, -7], [-9, -11]], np.int32).reshape(2, 2, 1)
    op = _simple("POOL", "MAX", ifm, ofm, kernel=k, ofm_scale_mode="GLOBAL", ofm_scale=Scale(1, 0))
    assert engine.run_kernel_op(op, x)[:, :, 0].tolist() == [[-5, -5], [-5, -5]]
    # Regor's padded average pool: GLOBAL, OFM_SCALE (1, 0), "HW scaling": sums -5, -12, -14, -32 over 1, 2, 2, 4
    op = dataclasses.replace(op, sub_op="AVERAGE")
    assert engine.run_kernel_op(op, x)[:, :, 0].tolist() == [[-5, -6], [-7, -8]]
    # the legacy compiler's PER_CHANNEL form divides the same way
    assert engine.run_kernel_op(dataclasses.replace(op, ofm_scale_mode="PER_CHANNEL"), x)[:, :, 0].tolist() == [
        [-5, -6], [-7, -8]]
    # without padding the sum goes to OFM_SCALE unchanged (Vela puts 1/N there)
    k0 = Kernel(2, 2, 1, 1, 1, 1, 0, 0, 0, 0, "NONE", False, "D8X8")
    op0 = dataclasses.replace(op, kernel=k0, ofm=_fm("ofm", "int8", 1, 1, 1, 0))
    assert engine.run_kernel_op(op0, x)[:, :, 0].tolist() == [[-32]]


@pytest.mark.parametrize("engine", [ref, fast])
def test_padded_average_rounding_and_ofm_scale_after_the_division(engine):
    """Decided by the TOSA reference model (oracle ``pools``: AvgPool2d(3, 2, 1, count_include_pad=False)):
    the window sum is multiplied by TOSA's reciprocal of the valid count, ``((2^30 + 1) << k) // n`` with shift
    ``30 + k``, rounded half up -- the same as rounding half away from zero for every 8/16-bit window -- then
    the OFM zero point and (GLOBAL mode) OFM_SCALE apply."""
    ifm = _fm("ifm", "int16", 1, 3, 2, 3)
    ofm = _fm("ofm", "int16", 1, 3, 2, -2)
    k = Kernel(3, 1, 1, 1, 1, 1, 0, 1, 0, 1, "NONE", False, "D8X8")  # 1x3 window, pad left/right 1
    x = np.array([[[6, 3 + 7], [3 - 4, 3 + 100], [3 + 1, 3 - 30001]]], np.int32)  # values minus zp 3
    op = _simple("POOL", "AVERAGE", ifm, ofm, kernel=k, ofm_scale_mode="GLOBAL", ofm_scale=Scale(1, 0),
                 ofm_round_mode=NATURAL)
    v = x.astype(np.int64) - 3  # [[3, 7], [-4, 100], [1, -30001]]
    sums = [[v[0, 0] + v[0, 1], v[0, 0] + v[0, 1] + v[0, 2], v[0, 1] + v[0, 2]]]
    counts = [2, 3, 2]

    def away(a, n):
        q = (abs(int(a)) + n // 2) // n
        return q if a >= 0 else -q

    want = [[[away(sums[0][j][c], counts[j]) - 2 for c in range(2)] for j in range(3)]]
    assert engine.run_kernel_op(op, x).tolist() == want
    # -0.5 -> -1 (half away from zero): the divider's reciprocal is a little above 1/n
    assert ref.avg_divide(-1, 2) == -1 and ref.avg_divide(1, 2) == 1 and ref.avg_divide(-3, 2) == -2
    assert ref.avg_reciprocal(1) == (0x40000001, 30) and ref.avg_reciprocal(3) == ((0x40000001 << 2) // 3, 32)
    # GLOBAL OFM_SCALE applies after the division: x2 via (2^31, 30)
    op2 = dataclasses.replace(op, ofm_scale=Scale(1 << 31, 30))
    want2 = [[[2 * away(sums[0][j][c], counts[j]) - 2 for c in range(2)] for j in range(3)]]
    assert engine.run_kernel_op(op2, x).tolist() == want2


@pytest.mark.parametrize("engine", [ref, fast])
def test_lut_int8_index_and_int16_interpolation(engine):
    ifm = _fm("ifm", "int8", 1, 1, 3, 0)
    ofm = _fm("ofm", "int8", 1, 1, 3, 0)
    k = Kernel(1, 1, 1, 1, 1, 1, 0, 0, 0, 0, "NONE", False, "D8X8")
    table = np.arange(256, dtype=np.int64)[::-1].astype(np.uint8)  # LUT[i] = 255 - i
    op = _simple("POOL", "AVERAGE", ifm, ofm, kernel=k, ofm_scale_mode="GLOBAL", ofm_scale=Scale(1, 0),
                 activation=Activation(16 + 2, 0, -100, 127))
    x = np.array([-128, 0, 127], np.int32).reshape(1, 1, 3)
    # clamp to [-100, 127] first, then LUT[y + 128] as int8
    want = [np.int8(np.uint8(255 - (y + 128))) for y in (-100, 0, 127)]
    assert engine.run_kernel_op(op, x, lut=table)[0, 0].tolist() == want
    # int16: entry j = base_j | slope_j << 16; out = ((base << 7) + slope * frac + 64) >> 7
    ifm16 = _fm("ifm", "int16", 1, 1, 3, 0)
    ofm16 = _fm("ofm", "int16", 1, 1, 3, 0)
    base = np.arange(512, dtype=np.int64) * 10 - 2560
    slope = np.full(512, 10, np.int64)
    words = ((base & 0xFFFF) | ((slope & 0xFFFF) << 16)).astype("<u4")
    op16 = dataclasses.replace(op, ifm=ifm16, ofm=ofm16, activation=Activation(16, 0, -32768, 32767))
    x16 = np.array([-32768, 5, 32767], np.int32).reshape(1, 1, 3)
    got = engine.run_kernel_op(op16, x16, lut=words.view(np.uint8))[0, 0].tolist()
    want16 = []
    for v in (-32768, 5, 32767):
        i, f = (v + 32768) >> 7, (v + 32768) & 0x7F
        want16.append(((int(base[i]) << 7) + int(slope[i]) * f + 64) >> 7)
    assert got == want16


@pytest.mark.parametrize("engine", [ref, fast])
def test_elementwise_add_opb32_mode(engine):
    """OPB_32: operand B is scaled with OPA_SCALE (x << 20, M, S + 20), operand A shifted left by 19."""
    ifm = _fm("ifm", "int8", 1, 1, 2, -1)
    ifm2 = _fm("ifm2", "int8", 1, 1, 2, 3)
    ofm = _fm("ofm", "int8", 1, 1, 2, 5)
    op = _simple("ELEMENTWISE", "ADD", ifm, ofm, ifm2=ifm2, broadcast=Broadcast(False, False, False, False,
                                                                              False, 0, 0),
                 ifm_scale_mode=2, ifm_round_mode=NATURAL, opa_scale=Scale(1 << 30, 1), opb_scale=0,
                 ofm_scale_mode="GLOBAL", ofm_scale=Scale(1 << 30, 50), ofm_round_mode=NATURAL)
    a = np.array([10, -20], np.int32).reshape(1, 1, 2)
    b = np.array([7, 100], np.int32).reshape(1, 1, 2)
    got = engine.run_kernel_op(op, a, b)[0, 0].tolist()
    want = []
    for x, y in ((10, 7), (-20, 100)):
        av = (x + 1) << 19
        bv = ref.rshift_round((y - 3) << 20, 1 << 30, 21, NATURAL)  # = (y - 3) * 2**19 rounded
        want.append(max(-128, min(127, ref.rshift_round(av + bv, 1 << 30, 50, NATURAL) + 5)))
    assert got == want


@pytest.mark.parametrize("engine", [ref, fast])
def test_32bit_ofm_not_clamped_by_activation_and_shift_only(engine):
    ifm = _fm("ifm", "int32", 1, 1, 2, 0)
    ifm2 = _fm("ifm2", "int32", 1, 1, 1, 0)
    ofm = _fm("ofm", "int32", 1, 1, 2, 0)
    op = _simple("ELEMENTWISE", "MUL", ifm, ofm, ifm2=ifm2, broadcast=Broadcast(False, False, True, False, False, 0,
                                                                               0),
                 ofm_scale_mode="GLOBAL", ofm_scale=Scale(12345, 11), ofm_round_mode=NATURAL,
                 activation=Activation(0, 0, -32768, 32767),
                 ofm_scaling="SHIFT_ONLY")  # what the U55/U65 decoder says of a 32-bit elementwise operation
    a = np.array([300, -1000], np.int64).reshape(1, 1, 2)
    b = np.array([1 << 30], np.int64).reshape(1, 1, 1)
    got = engine.run_kernel_op(op, a, b)[0, 0].tolist()
    assert got == [300 << 19, -1000 << 19]  # multiplier ignored, no [-32768, 32767] clamp


def test_gemm_weights_are_converted_once_per_decoded_array():
    """Stripes of one split operation share their decoded weights: the GEMM operand is reused for the same
    array object, never for another array (even an equal one), and stays read-only."""
    w = np.arange(2 * 3 * 3 * 4, dtype=np.int32).reshape(2, 3, 3, 4) - 30
    a = operands.gemm_weights(w, np.float32)
    assert operands.gemm_weights(w, np.float32) is a
    assert a.shape == (36, 2) and np.array_equal(a, w.reshape(2, -1).T) and not a.flags.writeable
    other = w.copy()
    b = operands.gemm_weights(other, np.float32)
    assert b is not a and np.array_equal(a, b)
    assert operands.gemm_weights(w, np.float64).dtype == np.float64
