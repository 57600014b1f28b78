"""Build small NPU programs with Vela's public API and compute what they mean, independently (tests only).

Every ``make_*`` function returns a :class:`Case`: the Vela operations, the memory contents they need and the
expected output bytes computed straight from the parameters given to Vela (plain numpy loops, TFLite-style
integer formulas), never from the simulator's own modules except the documented rounding step
``reference.rshift_round``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from ethosu.vela.api import (NpuAccelerator, NpuActivation, NpuActivationOp, NpuAddressRange, NpuBlockTraversal,
                             NpuConv2DOperation, NpuConvDepthWiseOperation, NpuDataType, NpuDmaOperation,
                             NpuElementWiseOp, NpuElementWiseOperation, NpuFeatureMap, NpuKernel, NpuLayout,
                             NpuPadding, NpuPoolingOp, NpuPoolingOperation, NpuQuantization, NpuResamplingMode,
                             NpuRoundingMode, NpuShape3D, NpuTileBox, npu_encode_bias, npu_encode_weights,
                             npu_find_block_configs, npu_generate_register_command_stream)

from fvp.machine.npu.engines.reference import rshift_round

from .helpers import FakeMemory

ACCELERATORS = {
    "ethos-u55-128": NpuAccelerator.Ethos_U55_128,
    "ethos-u55-256": NpuAccelerator.Ethos_U55_256,
    "ethos-u65-256": NpuAccelerator.Ethos_U65_256,
    "ethos-u65-512": NpuAccelerator.Ethos_U65_512,
    "ethos-u55-64": NpuAccelerator.Ethos_U55_64,
    "ethos-u55-32": NpuAccelerator.Ethos_U55_32,
}
CORES = {"ethos-u65-512": 2}

DT = {"int8": NpuDataType.INT8, "uint8": NpuDataType.UINT8, "int16": NpuDataType.INT16,
      "uint16": NpuDataType.UINT16, "int32": NpuDataType.INT32}
NP = {"int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "int32": np.int32}
RANGE = {k: (int(np.iinfo(v).min), int(np.iinfo(v).max)) for k, v in NP.items()}
ROUND = {0: NpuRoundingMode.TFL, 1: NpuRoundingMode.TRUNCATE, 2: NpuRoundingMode.NATURAL}

REGION0_BASE = 0x1000_0000  # constants (weights, scales, LUTs)
REGION1_BASE = 0x2000_0000  # feature maps
REGION_SIZE = 1 << 20


@dataclass
class Tensor:
    fm: NpuFeatureMap
    dtype: str
    shape: tuple  # (h, w, c)
    address: int
    layout: str


@dataclass
class Case:
    ops: list
    region0: bytearray = field(default_factory=lambda: bytearray(REGION_SIZE))
    region1: bytearray = field(default_factory=lambda: bytearray(REGION_SIZE))
    out: Tensor | None = None
    expected: np.ndarray | None = None  # dense (h, w, c) values of ``out``
    expected_bytes: tuple | None = None  # (region, address, bytes) for DMA cases
    description: str = ""


# ---------------------------------------------------------------------------------------------- layout helpers


def storage_size(shape, dtype, layout):
    h, w, c = shape
    e = np.dtype(NP[dtype]).itemsize
    if layout == "NHCWB16":
        return h * w * (-(-c // 16) * 16) * e
    return h * w * c * e


def to_bytes(values: np.ndarray, dtype: str, layout: str) -> bytes:
    a = np.asarray(values).astype(NP[dtype])
    if layout == "NHCWB16":
        h, w, c = a.shape
        cp = -(-c // 16) * 16
        p = np.zeros((h, w, cp), a.dtype)
        p[:, :, :c] = a
        return p.reshape(h, w, cp // 16, 16).transpose(0, 2, 1, 3).tobytes()
    return a.tobytes()


def from_bytes(raw: bytes, shape, dtype: str, layout: str) -> np.ndarray:
    h, w, c = shape
    if layout == "NHCWB16":
        cp = -(-c // 16) * 16
        a = np.frombuffer(raw, NP[dtype]).reshape(h, cp // 16, w, 16).transpose(0, 2, 1, 3).reshape(h, w, cp)
        return a[:, :, :c]
    return np.frombuffer(raw, NP[dtype]).reshape(h, w, c)


class Alloc:
    def __init__(self, start=0x100):
        self.next = start

    def __call__(self, size, align=16):
        a = -(-self.next // align) * align
        self.next = a + size
        return a


def tensor(alloc, dtype, shape, layout="NHWC", zp=0, scale=None, region=1) -> Tensor:
    f = NpuFeatureMap()
    f.data_type = DT[dtype]
    f.region = region
    f.shape = NpuShape3D(height=shape[0], width=shape[1], depth=shape[2])
    addr = alloc(storage_size(shape, dtype, layout))
    f.tiles = NpuTileBox(height_0=shape[0], height_1=shape[0], width_0=shape[1], addresses=[addr, 0, 0, 0])
    f.quantization = NpuQuantization(scale_f32=scale, zero_point=zp)
    f.layout = NpuLayout.NHCWB16 if layout == "NHCWB16" else NpuLayout.NHWC
    return Tensor(f, dtype, tuple(shape), addr, layout)


def put(case: Case, t: Tensor, values):
    raw = to_bytes(values, t.dtype, t.layout)
    buf = case.region1 if t.fm.region == 1 else case.region0
    buf[t.address:t.address + len(raw)] = raw


def rand_values(rng, dtype, shape):
    lo, hi = RANGE[dtype]
    if dtype == "int32":
        lo, hi = -(1 << 20), 1 << 20
    return rng.integers(lo, hi + 1, size=shape, dtype=np.int64)


def pick_block(op, acc, rng):
    blocks = npu_find_block_configs(op, acc)
    return blocks[int(rng.integers(len(blocks)))]


def clamp_output(v, dtype, act_lo=None, act_hi=None):
    lo, hi = RANGE[dtype]
    if act_lo is not None:
        lo = max(lo, act_lo)
    if act_hi is not None:
        hi = min(hi, act_hi)
    return np.clip(v, lo, hi)


# ---------------------------------------------------------------------------------------------- conv / depthwise


def _upscaled(x, mode):
    """x (H, W, C) int64 -> the logical 2x grid for NEAREST/TRANSPOSE(zeros), validity mask."""
    h, w, c = x.shape
    if mode == "NEAREST":
        return np.repeat(np.repeat(x, 2, 0), 2, 1)
    if mode == "ZEROS":
        u = np.zeros((2 * h, 2 * w, c), np.int64)
        u[::2, ::2] = x
        return u
    return x


def make_conv(rng, arch: str, *, depthwise=False) -> Case:
    acc = ACCELERATORS[arch]
    cores = CORES.get(arch, 1)
    ifm_dt = str(rng.choice(["int8", "int8", "uint8", "int16"]))
    ofm_dt = {"int8": "int8", "uint8": "uint8", "int16": "int16"}[ifm_dt]
    if depthwise and ifm_dt == "int16":
        ifm_dt = ofm_dt = "int8"
    kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    sy, sx = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    dy, dx = int(rng.choice([1, 1, 2])), int(rng.choice([1, 1, 2]))
    if dy == 2 or dx == 2:
        sy = sx = 1
    upscale = "NONE"
    if not depthwise and rng.random() < 0.2:
        upscale = str(rng.choice(["NEAREST", "ZEROS"]))
        sy = sx = 1
    h, w = int(rng.integers(1, 9)), int(rng.integers(1, 9))
    cin = int(rng.integers(1, 40)) if not depthwise else int(rng.integers(1, 40))
    cout = cin if depthwise else int(rng.integers(1, 40))
    khd, kwd = dy * (kh - 1) + 1, dx * (kw - 1) + 1
    uh, uw = (2 * h, 2 * w) if upscale != "NONE" else (h, w)
    pt, pl = int(rng.integers(0, min(khd, 4))), int(rng.integers(0, min(kwd, 4)))
    pb, pr = int(rng.integers(0, min(khd, 4))), int(rng.integers(0, min(kwd, 4)))
    if uh + pt + pb < khd:
        pb = khd - uh - pt
    if uw + pl + pr < kwd:
        pr = kwd - uw - pl
    if pb > 127 or pr > 127 or pb < 0 or pr < 0:
        pb = max(pb, 0)
        pr = max(pr, 0)
    oh = (uh + pt + pb - khd) // sy + 1
    ow = (uw + pl + pr - kwd) // sx + 1
    # no excess padding (as every real network has): the hardware takes the IFM extent to be
    # (OFM - 1) * stride + kernel - pad_before - pad_after
    pb = max(0, (oh - 1) * sy + khd - uh - pt)
    pr = max(0, (ow - 1) * sx + kwd - uw - pl)
    layout_in = str(rng.choice(["NHWC", "NHCWB16"]))
    layout_out = str(rng.choice(["NHWC", "NHCWB16"]))
    zp_in = int(rng.integers(-20, 21)) if ifm_dt != "uint8" else int(rng.integers(0, 40))
    if ifm_dt == "int16":
        zp_in = 0
    zp_out = int(rng.integers(-20, 21)) if ofm_dt != "uint8" else int(rng.integers(0, 40))
    if ofm_dt == "int16":
        zp_out = 0
    rmode = int(rng.choice([0, 1, 2]))

    al = Alloc()
    case = Case(ops=[])
    ifm = tensor(al, ifm_dt, (h, w, cin), layout_in, zp_in, 0.5)
    ofm = tensor(al, ofm_dt, (oh, ow, cout), layout_out, zp_out, 0.5)
    x = rand_values(rng, ifm_dt, (h, w, cin))
    put(case, ifm, x)

    op = NpuConvDepthWiseOperation() if depthwise else NpuConv2DOperation()
    op.ifm, op.ofm = ifm.fm, ofm.fm
    op.kernel = NpuKernel(kw, kh, sx, sy, dx, dy)
    op.padding = NpuPadding(top=pt, left=pl, bottom=pb, right=pr)
    op.rounding_mode = ROUND[rmode]
    op.ifm_upscale = {"NONE": NpuResamplingMode.NONE, "NEAREST": NpuResamplingMode.NEAREST,
                      "ZEROS": NpuResamplingMode.TRANSPOSE}[upscale]
    traversal = NpuBlockTraversal.DEPTH_FIRST
    if not depthwise:
        traversal = NpuBlockTraversal.PART_KERNEL_FIRST if rng.random() < 0.5 else NpuBlockTraversal.DEPTH_FIRST
        op.block_traversal = traversal
    act_lo = act_hi = None
    if rng.random() < 0.4:
        op.activation = NpuActivation(NpuActivationOp.NONE_OR_RELU)
        lo, hi = RANGE[ofm_dt]
        act_lo = int(rng.integers(lo, (lo + hi) // 2))
        act_hi = int(rng.integers((lo + hi) // 2, hi + 1))
        op.activation.min = (act_lo - zp_out) * 0.5
        op.activation.max = (act_hi - zp_out) * 0.5
    op.block_config = pick_block(op, acc, rng)
    obd = op.block_config.depth

    wmax = 127 if ifm_dt != "int16" else 127
    W = rng.integers(-wmax, wmax + 1, size=(cout, kh, kw, 1 if depthwise else cin), dtype=np.int64)
    bias_max = (1 << 20) if ifm_dt != "int16" else (1 << 30)
    bias = rng.integers(-bias_max, bias_max, size=cout, dtype=np.int64)
    scale = rng.integers(1 << 29, 1 << 31, size=cout, dtype=np.int64)
    if rng.random() < 0.2:
        scale[0] = 0x80000001 if rng.random() < 0.5 else 0xFFFFFFFF
    shift = rng.integers(20, 40, size=cout, dtype=np.int64)
    if ifm_dt == "int16":
        shift += 8
    if rng.random() < 0.2:
        shift[-1] = 63
    # encode weights and biases (per core for U65 dual core)
    waddr = Alloc(0x100)
    wranges, branges = [], []
    for core in range(cores):
        chans = list(range(core, cout, cores))
        if not chans:
            continue
        core_obd = (obd + cores - 1 - core) // cores
        enc = npu_encode_weights(acc, W[chans].astype(np.int8 if ifm_dt != "int16" else np.int16),
                                 (dx, dy), 16 if ifm_dt == "int16" else 8, core_obd, depthwise, traversal)
        sb = b"".join(npu_encode_bias(np.int64(bias[c]), int(scale[c]), int(shift[c])) for c in chans)
        sb = sb + b"\0" * (-len(sb) % 16)
        enc = bytes(enc) + b"\0" * (-len(enc) % 16)
        ba = waddr(len(sb))
        case.region0[ba:ba + len(sb)] = sb
        wa = waddr(len(enc))
        case.region0[wa:wa + len(enc)] = enc
        wranges.append(NpuAddressRange(region=0, address=wa, length=len(enc)))
        branges.append(NpuAddressRange(region=0, address=ba, length=len(sb)))
    op.weights = wranges
    op.biases = branges
    case.ops = [op]

    # expected: straightforward loops over the upscaled, padded input
    xv = _upscaled(x.astype(np.int64) - zp_in, upscale)
    exp = np.zeros((oh, ow, cout), np.int64)
    for oy in range(oh):
        for ox in range(ow):
            for o in range(cout):
                s = int(bias[o])
                for ky in range(kh):
                    iy = oy * sy - pt + ky * dy
                    if not 0 <= iy < uh:
                        continue
                    for kx in range(kw):
                        ix = ox * sx - pl + kx * dx
                        if not 0 <= ix < uw:
                            continue
                        if depthwise:
                            s += int(xv[iy, ix, o]) * int(W[o, ky, kx, 0])
                        else:
                            s += int(np.dot(xv[iy, ix, :], W[o, ky, kx, :]))
                v = rshift_round(s, int(scale[o]), int(shift[o]), rmode) + zp_out
                exp[oy, ox, o] = v
    case.expected = clamp_output(exp, ofm_dt, act_lo, act_hi)
    case.out = ofm
    case.description = (f"{'depthwise' if depthwise else 'conv'} {ifm_dt} {h}x{w}x{cin}->{oh}x{ow}x{cout} k{kh}x{kw} "
                        f"s{sy}x{sx} d{dy}x{dx} pad{pt},{pl},{pb},{pr} up={upscale} {layout_in}->{layout_out} "
                        f"round={rmode} block={op.block_config} {traversal.name}")
    return case


# ---------------------------------------------------------------------------------------------- pooling


def quantise_pooling_scale(n, rescale_bits=0):
    """Vela's QuantizePoolingScale (research notes 2.5)."""
    _, e = math.frexp(n - 1)
    nn = 31 - rescale_bits
    return ((1 << (nn + e)) + (1 << e)) // n, nn + e


def make_pool(rng, arch: str) -> Case:
    acc = ACCELERATORS[arch]
    mode = str(rng.choice(["MAX", "AVERAGE", "REDUCE_SUM"]))
    dt = str(rng.choice(["int8", "uint8", "int16"])) if mode != "REDUCE_SUM" else "int8"
    kh, kw = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    sy, sx = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    upscale = "NONE"
    if mode == "AVERAGE" and rng.random() < 0.3:
        kh = kw = 1
        sy = sx = 1
        upscale = "NEAREST"
    if mode == "REDUCE_SUM":
        kh = kw = 1
        sy = sx = 1
    h, w = int(rng.integers(kh, 10)), int(rng.integers(kw, 10))
    c = int(rng.integers(1, 40))
    pad = (0, 0, 0, 0)
    if mode == "MAX" and rng.random() < 0.5:
        pad = tuple(int(v) for v in rng.integers(0, [min(kh, 3), min(kw, 3), min(kh, 3), min(kw, 3)]))
    pt, pl, pb, pr = pad
    uh, uw = (2 * h, 2 * w) if upscale != "NONE" else (h, w)
    oh = (uh + pt + pb - kh) // sy + 1
    ow = (uw + pl + pr - kw) // sx + 1
    pb = max(0, (oh - 1) * sy + kh - uh - pt)
    pr = max(0, (ow - 1) * sx + kw - uw - pl)
    pad = (pt, pl, pb, pr)
    oc = 1 if mode == "REDUCE_SUM" else c
    ofm_dt = "int32" if mode == "REDUCE_SUM" else dt
    zp = int(rng.integers(-10, 11)) if dt != "uint8" else int(rng.integers(0, 20))
    if dt == "int16":
        zp = 0
    li = str(rng.choice(["NHWC", "NHCWB16"])) if mode != "REDUCE_SUM" else "NHWC"
    lo_ = str(rng.choice(["NHWC", "NHCWB16"]))
    rmode = int(rng.choice([0, 1, 2]))
    al = Alloc()
    case = Case(ops=[])
    scale = 0.25
    ifm = tensor(al, dt, (h, w, c), li, zp, scale if mode != "REDUCE_SUM" else None)
    ofm = tensor(al, ofm_dt, (oh, ow, oc), lo_, zp if mode != "REDUCE_SUM" else 0,
                 scale if mode != "REDUCE_SUM" else None)
    x = rand_values(rng, dt, (h, w, c))
    put(case, ifm, x)
    op = NpuPoolingOperation({"MAX": NpuPoolingOp.MAX, "AVERAGE": NpuPoolingOp.AVERAGE,
                              "REDUCE_SUM": NpuPoolingOp.REDUCE_SUM}[mode])
    op.ifm, op.ofm = ifm.fm, ofm.fm
    op.kernel = NpuKernel(kw, kh, sx, sy)
    op.padding = NpuPadding(top=pt, left=pl, bottom=pb, right=pr)
    op.rounding_mode = ROUND[rmode]
    op.ifm_upscale = NpuResamplingMode.NEAREST if upscale == "NEAREST" else NpuResamplingMode.NONE
    op.block_config = pick_block(op, acc, rng)
    case.ops = [op]
    xv = _upscaled(x.astype(np.int64) - zp, upscale)
    exp = np.zeros((oh, ow, oc), np.int64)
    m, s = quantise_pooling_scale(kh * kw)
    for oy in range(oh):
        for ox in range(ow):
            ys = [oy * sy - pt + ky for ky in range(kh) if 0 <= oy * sy - pt + ky < uh]
            xs = [ox * sx - pl + kx for kx in range(kw) if 0 <= ox * sx - pl + kx < uw]
            win = xv[np.ix_(ys, xs)].reshape(-1, c)
            if mode == "MAX":
                exp[oy, ox] = win.max(axis=0) + zp
            elif mode == "AVERAGE":
                sm = win.sum(axis=0)
                exp[oy, ox] = [rshift_round(int(v), m, s, rmode) + zp for v in sm]
            else:
                exp[oy, ox, 0] = int(win.sum())
    case.expected = clamp_output(exp, ofm_dt)
    case.out = ofm
    case.description = f"pool {mode} {dt} {h}x{w}x{c} k{kh}x{kw} s{sy}x{sx} pad{pad} up={upscale} round={rmode}"
    return case


# ---------------------------------------------------------------------------------------------- elementwise


def quantize_multiplier(real):
    """TFLite QuantizeMultiplier: (q31 multiplier, exponent)."""
    if real == 0:
        return 0, 0
    q, e = math.frexp(real)
    m = int(round_half_away(q * (1 << 31)))
    if m == 1 << 31:
        m //= 2
        e += 1
    return m, e


def round_half_away(x):
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def srdhm(a, b):
    """gemmlowp SaturatingRoundingDoublingHighMul."""
    if a == b == -(1 << 31):
        return (1 << 31) - 1
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    q = ab + nudge
    return abs(q) // (1 << 31) * (1 if q >= 0 else -1)


def rdbpot(x, e):
    mask = (1 << e) - 1
    rem = x & mask
    th = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if rem > th else 0)


def mbqm(x, m, e):
    """TFLite MultiplyByQuantizedMultiplier(x, m, e) (e > 0: left shift)."""
    left = e if e > 0 else 0
    right = -e if e < 0 else 0
    return rdbpot(srdhm(x * (1 << left), m), right)


def make_elementwise(rng, arch: str) -> Case:
    acc = ACCELERATORS[arch]
    kind = str(rng.choice(["ADD", "ADD", "SUB", "MUL", "MIN", "MAX", "ABS", "CLZ", "SHL", "ADDQ"]))
    h, w, c = int(rng.integers(1, 7)), int(rng.integers(1, 7)), int(rng.integers(1, 40))
    dt = str(rng.choice(["int8", "uint8", "int16", "int32"]))
    if kind in ("CLZ", "SHL"):
        dt = "int32"
    if kind == "ADDQ":
        dt = str(rng.choice(["int8", "uint8", "int16"]))
    if kind == "ABS" and dt in ("uint8", "int32"):
        dt = "int8"
    odt = dt
    unary = kind in ("ABS", "CLZ")
    # IFM2 shape: broadcast some dims
    b2 = [h, w, c]
    scalar = None
    if not unary:
        if rng.random() < 0.2 and dt != "int32" and kind != "ADDQ":
            scalar = "pending"
        else:
            for i in range(3):
                if rng.random() < 0.3:
                    b2[i] = 1
    reversed_ = bool(rng.random() < 0.3) and not unary and kind != "SHL"
    zp1 = zp2 = zpo = 0
    if dt in ("int8", "uint8") and kind not in ("MIN", "MAX"):
        base = 0 if dt == "int8" else 60
        zp1, zp2, zpo = (base + int(v) for v in rng.integers(-20, 21, 3))
    if kind in ("MIN", "MAX") and dt in ("int8", "uint8"):
        zp1 = zp2 = zpo = int(rng.integers(0, 20))
    rmode = int(rng.choice([0, 1, 2]))
    al = Alloc()
    case = Case(ops=[])
    s1 = s2 = so = None
    if kind == "ADDQ":
        s1, s2, so = (float(v) for v in rng.uniform(0.01, 0.2, 3))
        rmode = 0  # TFLite rounding is what this quantised path means
    if kind == "ABS":
        so = 1.0
        s1 = 1.0
    layouts = [str(rng.choice(["NHWC", "NHCWB16"])) for _ in range(3)]
    ifm = tensor(al, dt, (h, w, c), layouts[0], zp1, s1)
    ifm2 = None if unary or scalar is not None else tensor(al, dt, tuple(b2), layouts[1], zp2, s2)
    ofm = tensor(al, odt, (h, w, c), layouts[2], zpo, so)
    a = rand_values(rng, dt, (h, w, c))
    if kind == "SHL":
        a = rng.integers(-(1 << 16), 1 << 16, size=(h, w, c))
    put(case, ifm, a)
    if ifm2 is not None:
        b = rand_values(rng, dt, tuple(b2))
        if kind == "SHL":
            b = rng.integers(0, 15, size=tuple(b2))
        put(case, ifm2, b)
    elif scalar is not None:
        lo, hi = RANGE[dt]
        qs = int(rng.integers(max(lo, -1000), min(hi, 1000) + 1))
        scalar = qs - zp2  # Vela quantises the scalar with IFM2's quantisation: zp2 + scalar (scale None)
        b = np.full((1, 1, 1), qs, np.int64)
    else:
        b = None
    vk = "ADD" if kind == "ADDQ" else kind
    op = NpuElementWiseOperation(getattr(NpuElementWiseOp, vk))
    op.ifm, op.ofm = ifm.fm, ofm.fm
    if ifm2 is not None:
        op.ifm2 = ifm2.fm
    elif scalar is not None:
        f2 = NpuFeatureMap()
        f2.data_type = DT[dt]
        f2.region = 1
        f2.shape = NpuShape3D(1, 1, 1)
        f2.tiles = NpuTileBox(1, 1, 1, [0, 0, 0, 0])
        f2.quantization = NpuQuantization(scale_f32=None, zero_point=zp2)
        f2.layout = NpuLayout.NHWC
        op.ifm2 = f2
        op.ifm2_scalar = scalar
    op.reversed_operands = reversed_
    op.rounding_mode = ROUND[rmode]
    ofm_m, ofm_s = 1, 0
    if kind in ("ADD", "SUB", "MUL"):
        if dt == "int32":
            ofm_m, ofm_s = 1, int(rng.integers(0, 4))
        else:
            ofm_m, ofm_s = int(rng.integers(1 << 29, 1 << 31)), int(rng.integers(28, 40))
            if kind == "MUL" and dt == "int16":
                ofm_s += 10
            if kind != "MUL" and dt == "int16":
                ofm_s += 14
        op.rescale = (ofm_m, ofm_s)
    op.block_config = pick_block(op, acc, rng)
    case.ops = [op]

    # expected
    av = a.astype(np.int64) - zp1
    if b is not None:
        bv = np.broadcast_to(b.astype(np.int64) - zp2, (h, w, c))
    else:
        bv = None
    if reversed_:
        av, bv = bv, av
    out = np.zeros((h, w, c), np.int64)
    lo, hi = RANGE[odt]
    for idx in np.ndindex(h, w, c):
        x = int(av[idx])
        y = int(bv[idx]) if bv is not None else 0
        if kind in ("ADD", "SUB", "MUL"):
            v = x + y if kind == "ADD" else x - y if kind == "SUB" else x * y
            m = 1 if dt == "int32" else ofm_m
            r = rshift_round(v, m, ofm_s, rmode) + zpo
        elif kind == "ADDQ":
            # TFLite reference quantised ADD (int8/uint8: left shift 20, int16: 15)
            left = 20 if dt != "int16" else 15
            smax = max(s1, s2)
            sa, sb = (s2, s1) if reversed_ else (s1, s2)
            m1, e1 = quantize_multiplier(sa / (2 * smax))
            m2, e2 = quantize_multiplier(sb / (2 * smax))
            mo, eo = quantize_multiplier(2 * smax / ((1 << left) * so))
            r = mbqm(mbqm(x * (1 << left), m1, e1) + mbqm(y * (1 << left), m2, e2), mo, eo) + zpo
        elif kind == "MIN":
            r = min(x, y) + zpo
        elif kind == "MAX":
            r = max(x, y) + zpo
        elif kind == "ABS":
            r = abs(x) + zpo
        elif kind == "CLZ":
            r = 32 - (x & 0xFFFFFFFF).bit_length()
        elif kind == "SHL":
            r = (x << y) & 0xFFFFFFFF
            r = r - (1 << 32) if r >= 1 << 31 else r
        out[idx] = min(max(r, lo), hi)
    case.expected = out
    case.out = ofm
    case.description = (f"elementwise {kind} {dt} {h}x{w}x{c} ifm2={'scalar' if scalar is not None else b2} "
                        f"reversed={reversed_} round={rmode} layouts={layouts}")
    return case


# ---------------------------------------------------------------------------------------------- DMA + LUT


def make_dma_lut(rng, arch: str) -> Case:
    """DMA a 256-entry int8 LUT into SHRAM, copy a tensor with DMA, then a 1x1 AVERAGE pool with TABLE."""
    acc = ACCELERATORS[arch]
    case = Case(ops=[])
    h, w, c = int(rng.integers(1, 6)), int(rng.integers(1, 6)), int(rng.integers(1, 33))
    al = Alloc()
    src = tensor(al, "int8", (h, w, c), "NHWC", 0, 1.0)
    ifm = tensor(al, "int8", (h, w, c), "NHWC", 0, 1.0)
    ofm = tensor(al, "int8", (h, w, c), "NHWC", 0, 1.0)
    x = rand_values(rng, "int8", (h, w, c))
    put(case, src, x)
    table = rng.integers(-128, 128, 256).astype(np.int8)
    slot = int(rng.integers(0, 8))
    case.region0[0x40:0x40 + 256] = table.tobytes()
    from ethosu.vela.architecture_features import Accelerator, create_default_arch

    va = create_default_arch(Accelerator.from_npu_accelerator(acc))
    lut_dma = NpuDmaOperation(NpuAddressRange(0, 0x40, 256),
                              NpuAddressRange((1 << 8) | 3, va.shram_lut_address + 256 * slot, 256))
    n = -(-(h * w * c) // 16) * 16
    copy = NpuDmaOperation(NpuAddressRange(1, src.address, n), NpuAddressRange(1, ifm.address, n))
    op = NpuPoolingOperation(NpuPoolingOp.AVERAGE)
    op.ifm, op.ofm = ifm.fm, ofm.fm
    op.kernel = NpuKernel(1, 1)
    op.padding = NpuPadding(0, 0, 0, 0)
    op.activation = NpuActivation(NpuActivationOp.TABLE_LOOKUP)
    op.activation.lookup_table_index = slot
    op.rounding_mode = NpuRoundingMode.TFL
    op.block_config = pick_block(op, acc, rng)
    case.ops = [lut_dma, copy, op]
    case.expected = table[(x + 128)].astype(np.int64)
    case.out = ofm
    case.description = f"dma+lut {h}x{w}x{c} slot {slot}"
    return case


# ---------------------------------------------------------------------------------------------- running


def build_stream(case: Case, arch: str) -> np.ndarray:
    return np.array(npu_generate_register_command_stream(case.ops, ACCELERATORS[arch]), dtype=np.uint32)


def run_case(case: Case, arch: str, engine: str = "fast", words=None):
    from fvp.machine.npu.arch import get_arch
    from fvp.machine.npu.execute import execute_stream

    if words is None:
        words = build_stream(case, arch)
    mem = FakeMemory()
    r0 = mem.add(REGION0_BASE, bytes(case.region0))
    r1 = mem.add(REGION1_BASE, bytes(case.region1))
    a = get_arch(arch)
    shram = np.zeros(a.shram_bytes, np.uint8)
    res = execute_stream(words, arch=a, base_pointers=[REGION0_BASE, REGION1_BASE, 0, 0, 0, 0, 0, 0], memory=mem,
                         shram=shram, engine=engine)
    out = None
    if case.out is not None:
        t = case.out
        n = storage_size(t.shape, t.dtype, t.layout)
        buf = r1 if t.fm.region == 1 else r0
        out = from_bytes(buf[t.address:t.address + n].tobytes(), t.shape, t.dtype, t.layout).astype(np.int64)
    return res, out, (r0, r1, shram)
