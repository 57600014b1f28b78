"""The fast engine: the same arithmetic as :mod:`fvp.machine.npu.engines.reference`, with numba kernels and BLAS.

* Convolutions: im2col + GEMM (numpy BLAS).  Operands are integers and every partial sum is bounded by
  ``K * max|x - zp| * max|w|``: float32 GEMM over reduction chunks that keep that bound below 2**24 (exact),
  float64 when below 2**53, an int64 numba loop otherwise.
* Depthwise, pooling: int64 numpy over kernel taps (exact).
* Output stage and 32-bit operand scaling: numba kernels that compute ``(v * M + R) >> S`` exactly with a
  96-bit intermediate (two int64 halves), saturating results beyond +-2**62 (far outside every OFM type).

Every public function has the reference engine's signature; the tests compare the two on random cases.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ...sim import interruption_point
from ..memo import MISS, IdentityMemo
from . import reference as ref
from ._jit import njit

EXACT_F64 = 2 ** 53
EXACT_F32 = 2 ** 24
MIN_F32_CHUNK = 64  # below this many reduction elements per float32 GEMM, use float64
GEMM_WEIGHT_CACHE_BYTES = 128 << 20  # GEMM forms of recently used decoded weights kept at most
SAT = np.int64(1) << np.int64(62)
#: Arrays of at most this many elements take numpy paths instead of numba kernels (the same integer arithmetic,
#: bit for bit; the tests compare them). A program of small operations then never imports numba (0.4 s of a new
#: process); large operations, where a fused kernel saves more than it costs to load, use the kernels.
NUMPY_MAX_ELEMENTS = 1 << 15


#: Larger arrays too take numpy paths until this process has pushed this many of their elements through them
#: (about one MobileNetV2 inference): a single run never pays the 0.4 s of loading the kernels (nor, on the
#: first run after installing, the seconds of compiling them, even when the weight decoder has loaded numba),
#: a long one (many inferences, a benchmark) gets them for its later operations.
JIT_AFTER_ELEMENTS = 8 << 20
_numpy_large_elements = [0]


def _small(*arrays) -> bool:
    """Whether this operation's arrays take the numpy path (True) or the numba kernels (False)."""
    return _numpy_path(max(a.size for a in arrays))


def _numpy_path(n: int, count: bool = True) -> bool:
    """Whether an array of ``n`` elements takes the numpy path; ``count``: it will (the elements count towards
    ``JIT_AFTER_ELEMENTS``)."""
    if _numpy_large_elements[0] > JIT_AFTER_ELEMENTS:
        return False  # a long run: the kernels for every size (one call instead of a dozen numpy ones)
    if n <= NUMPY_MAX_ELEMENTS:
        return True
    if count:
        _numpy_large_elements[0] += n
    return _numpy_large_elements[0] + (0 if count else n) <= JIT_AFTER_ELEMENTS


def _round_const(v, s, mode):
    """The rounding constant R of :func:`mul_round_shift` for values ``v`` and shifts ``s`` (broadcast, int64
    or Python-int object arrays)."""
    zero = np.zeros((), v.dtype)
    one = np.ones((), v.dtype)
    if mode == 1:  # TRUNCATE: towards zero
        return np.where((v >= 0) | (s == 0), zero, (one << s) - 1)
    if mode == ref.ROUND_FLOOR:
        return np.zeros(np.broadcast(v, s).shape, v.dtype)
    r = np.where(s > 0, one << np.maximum(s - 1, 0), zero)
    if mode == 0:  # DBL: an extra 2**30 with the sign of v for shifts above 31
        r = r + np.where(s > 31, np.where(v >= 0, one << 30, -(one << 30)), zero)
    elif mode == ref.ROUND_SYMMETRIC:  # half away from zero
        r = r - np.where((v < 0) & (s > 0), one, zero)
    elif mode == ref.ROUND_DBL_ASYMMETRIC:
        r = r + np.where(s > 31, one << 30, zero)
    return r


def mul_round_shift_np(v, m, s, mode) -> np.ndarray:
    """:func:`mul_round_shift` elementwise in numpy (``v``, ``m``, ``s`` broadcast): ``floor((v*m + R) / 2**s)``
    saturated to +-2**62, which is what the kernel's 96-bit arithmetic computes for ``|v| <= 2**62``. int64
    where no intermediate can overflow, Python integers otherwise."""
    v = np.asarray(v, np.int64)
    m = np.asarray(m, np.int64)
    s = np.asarray(s, np.int64)
    vmax = int(np.abs(v).max(initial=0))
    mmax = int(np.abs(m).max(initial=0))
    smax = int(s.max(initial=0))
    if vmax * mmax + (1 << max(smax, 31)) < (1 << 62) and smax <= 62:
        return (v * m + _round_const(v, s, mode)) >> s  # below 2**62: no saturation either
    vo, mo, so = v.astype(object), m.astype(object), s.astype(object)
    res = (vo * mo + _round_const(vo, so, mode)) >> so
    return np.clip(res, -int(SAT), int(SAT)).astype(np.int64)


# ================================================================================== exact scaling


@njit
def mul_round_shift(v, m, s, mode):
    """``floor((v * m + R) / 2**s)`` exactly (R per round mode 0 DBL / 1 TRUNCATE / 2 NATURAL); ``m`` unsigned
    32-bit, ``0 <= s <= 63``, ``|v| < 2**62``.  Results beyond +-2**62 saturate to +-2**62."""
    v = np.int64(v)
    m = np.int64(m)
    s = np.int64(s)
    # rounding constant (modes as reference.rounding_constant: 0 DBL, 1 TRUNCATE, 2 NATURAL, 4 FLOOR,
    # 5 SYMMETRIC, 6 DBL_ASYMMETRIC)
    if mode == 1:
        if v >= 0:
            r = np.int64(0)
        elif s == 0:
            r = np.int64(0)
        else:
            half = np.int64(1) << (s - 1)
            r = (half - 1) + half
    elif mode == 4:
        r = np.int64(0)
    else:
        r = (np.int64(1) << (s - 1)) if s > 0 else np.int64(0)
        if mode == 5 and v < 0 and s > 0:
            r -= np.int64(1)
        if mode == 0 and s > 31:
            if v >= 0:
                r += np.int64(1) << 30
            else:
                r -= np.int64(1) << 30
        if mode == 6 and s > 31:
            r += np.int64(1) << 30
    mask = np.int64(0xFFFFFFFF)
    vh = v >> 32
    vl = v & mask
    a = vh * m
    b = np.uint64(vl) * np.uint64(m)
    b_hi = np.int64(b >> np.uint64(32))
    b_lo = np.int64(b & np.uint64(0xFFFFFFFF))
    r_hi = r >> 32
    r_lo = r & mask
    lo = b_lo + r_lo
    carry = lo >> 32
    lo = lo & mask
    mid = a + b_hi + r_hi + carry  # value = mid * 2**32 + lo
    if s >= 32:
        res = mid >> (s - 32)
    else:
        lim = np.int64(1) << (30 + s)
        if mid >= lim:
            return SAT
        if mid < -lim:
            return -SAT
        res = (mid << (32 - s)) + (lo >> s)
    if res > SAT:
        return SAT
    if res < -SAT:
        return -SAT
    return res


@njit
def output_stage_kernel(value, mult, shift, mode, zp, do_clamp, lo, hi, lut_kind, lut, lut_signed, out_lo, out_hi,
                        out):
    """value/out: (N, C) int64; mult/shift: (C,) int64.  lut_kind 0 none, 1 8-bit index, 2 16-bit interpolating
    (``lut`` holds the table entries as int64: 256 values, or 512 packed 32-bit words)."""
    n, c = value.shape
    for i in range(n):
        for j in range(c):
            v = value[i, j]
            s = shift[j]
            if -(1 << 30) < v < (1 << 30) and s <= 62 and (mode == 0 or mode == 2):
                # |v * m| < 2**62 and R <= 2**61 + 2**30: the int64 expression cannot overflow
                r = (np.int64(1) << (s - 1)) if s > 0 else np.int64(0)
                if mode == 0 and s > 31:
                    r = r + (np.int64(1) << 30) if v >= 0 else r - (np.int64(1) << 30)
                y = ((v * mult[j] + r) >> s) + zp
            else:
                y = mul_round_shift(v, mult[j], s, mode) + zp
            if do_clamp:
                if y < lo:
                    y = lo
                elif y > hi:
                    y = hi
            if lut_kind == 1:
                idx = y + 128 if lut_signed else y
                idx = min(max(idx, 0), lut.shape[0] - 1)
                y = lut[idx]
            elif lut_kind == 2:
                u = y + 32768 if lut_signed else y
                u = min(max(u, 0), 65535)
                idx = u >> 7
                frac = u & 0x7F
                word = lut[idx]
                base = word & 0xFFFF
                if base >= 0x8000:
                    base -= 0x10000
                slope = (word >> 16) & 0xFFFF
                if slope >= 0x8000:
                    slope -= 0x10000
                y = ((base << 7) + slope * frac + 64) >> 7
            if y < out_lo:
                y = out_lo
            elif y > out_hi:
                y = out_hi
            out[i, j] = y


@njit
def requantize_kernel(value, mult, rnd, rnd_dbl, shift, zp, lo, hi, out):
    """The common output stage in one branch-free pass: ``y = ((v * m + R) >> s) + zp`` clamped to [lo, hi].

    Only for values and parameters where int64 cannot overflow: ``|v| < 2**30``, ``s <= 62``, rounding NATURAL or
    DBL (``rnd`` = 2**(s-1), ``rnd_dbl`` = the DBL correction 2**30 for s > 31, added with the sign of v).
    """
    n, c = value.shape
    for i in range(n):  # not _requant_row per row: a slice per row of a few channels costs 3x
        for j in range(c):
            v = value[i, j]
            sign = np.int64(1) - np.int64(2) * np.int64(v < 0)
            y = ((v * mult[j] + rnd[j] + sign * rnd_dbl[j]) >> shift[j]) + zp
            out[i, j] = min(max(y, lo), hi)


def _lut_table(op, lut):
    """(kind, int64 table, signed index) for the output-stage kernel."""
    act = op.activation
    if act.table is None:
        return 0, np.zeros(1, np.int64), False
    ofm = op.ofm
    bits, signed = ref._lut_index_range(ofm.bits, ofm.signed, act.clip_range)
    if bits == 8:
        esz = ofm.bits // 8
        if esz == 1:
            tab = lut[:256].view(np.int8 if ofm.signed else np.uint8)
        elif esz == 2:
            tab = lut[:512].view("<i2" if ofm.signed else "<u2")
        else:
            tab = lut[:1024].view("<i4" if ofm.signed else "<u4")
        return 1, tab.astype(np.int64), signed
    return 2, lut[:2048].view("<u4").astype(np.int64), signed


def _lut_np(y, kind, tab, lut_signed):
    """The output-stage kernel's table lookup in numpy (``y`` int64)."""
    if kind == 1:
        idx = y + 128 if lut_signed else y
        return tab[np.clip(idx, 0, tab.shape[0] - 1)]
    u = np.clip(y + 32768 if lut_signed else y, 0, 65535)
    word = tab[u >> 7]
    base = word & 0xFFFF
    base = base - ((base & 0x8000) << 1)
    slope = (word >> 16) & 0xFFFF
    slope = slope - ((slope & 0x8000) << 1)
    return ((base << 7) + slope * (u & 0x7F) + 64) >> 7


def _builtin_output_stage(v2, m, s, op, lut) -> np.ndarray:
    """The output stage with a built-in TANH/SIGMOID: the scaling (+ zero point) by the kernel or numpy, unclamped
    and saturated only at +-2**62, then the reference's shared :func:`reference.builtin_output`."""
    zp = np.int64(op.ofm.zero_point)
    if _small(v2):
        y = mul_round_shift_np(v2, m, s, op.ofm_round_mode) + zp
    else:
        y = np.empty_like(v2)
        output_stage_kernel(v2, m, s, np.int64(op.ofm_round_mode), zp, False, np.int64(0), np.int64(0), 0,
                            np.zeros(1, np.int64), False, -SAT, SAT, y)
    return ref.builtin_output(y, op, lut)


def _is_scalar(v) -> bool:
    return isinstance(v, (int, np.integer))


def _per_channel(v, c: int) -> np.ndarray:
    """``v`` (a scalar or one value per channel) as a writeable C int64 array of ``c`` values."""
    if _is_scalar(v):
        return np.full(c, v, np.int64)
    return np.array(np.broadcast_to(np.asarray(v, np.int64), (c,)))


def _branch_free_stage(op, m, s, c):
    """``(m, rnd, rnd_dbl, s, zp, lo, hi)`` of the branch-free output stage (:func:`requantize_kernel`,
    :func:`_requant_row`) for per-channel multipliers ``m`` and shifts ``s``, or None when it is not its case:
    rounding other than NATURAL/DBL, a shift outside 0..62, no channels, an empty clamp range."""
    mode = op.ofm_round_mode
    if mode not in (0, 2) or c == 0 or s.max() > 62 or s.min() < 0:
        return None
    ofm = op.ofm
    rng = ref.clamp_range(op)
    lo = max(int(ofm.min_value), int(rng[0])) if rng else int(ofm.min_value)
    hi = min(int(ofm.max_value), int(rng[1])) if rng else int(ofm.max_value)
    if lo > hi:
        return None
    rnd = np.where(s > 0, np.left_shift(np.int64(1), np.maximum(s - 1, 0)), 0).astype(np.int64)
    rnd_dbl = np.where((s > 31) & (mode == 0), np.int64(1) << 30, 0).astype(np.int64)
    return m, rnd, rnd_dbl, s, np.int64(ofm.zero_point), np.int64(lo), np.int64(hi)


_stage_memo = IdentityMemo()  # (op; mult, shift, c) -> the requantize kernel's parameters or None


def _stage_params(op, mult: int, shift: int, c: int):
    """The requantize kernel's parameters (:func:`_branch_free_stage`) for an output stage with one multiplier
    and shift and no table, or None when it is not the kernel's case, computed once per operation object (a
    replayed stream passes the same ones again)."""
    key = (mult, shift, c)
    params = _stage_memo.get((op,), key)
    if params is MISS:
        params = _branch_free_stage(op, _per_channel(mult, c), _per_channel(shift, c), c)
        _stage_memo.put((op,), params, key)
    return params


def output_stage(value, mult, shift, op, lut=None) -> np.ndarray:
    """Same contract as :func:`reference.output_stage`; ``value`` is int64 (..., C)."""
    value = np.ascontiguousarray(value, dtype=np.int64)
    shape = value.shape
    c = shape[-1]
    v2 = value.reshape(-1, c)
    builtin = op.activation.builtin
    small = None if builtin else _small(v2)
    if small is False and v2.size and op.activation.table is None and _is_scalar(mult) and _is_scalar(shift):
        p = _stage_params(op, int(mult), int(shift), c)
        if p is not None and max(int(v2.max()), -int(v2.min())) < (1 << 30):
            out = np.empty_like(v2)
            requantize_kernel(v2, *p, out)
            return out.reshape(shape)
    # writeable C copies: the kernels are then compiled for one signature (not once more for read-only arrays)
    m = _per_channel(mult, c)
    s = _per_channel(shift, c)
    if builtin:
        return _builtin_output_stage(v2, m, s, op, lut).reshape(shape)
    rng = ref.clamp_range(op)
    kind, tab, lut_signed = _lut_table(op, lut)
    ofm = op.ofm
    mode = op.ofm_round_mode
    if small:
        # numpy: the kernels' arithmetic, exact (int64 where it cannot overflow, Python integers otherwise)
        lo, hi = int(ofm.min_value), int(ofm.max_value)
        if (kind == 0 and mode != 1 and v2.size and int(s.max()) <= 31 and int(s.min()) >= 0
                and max(int(v2.max()), -int(v2.min())) < (1 << 30)):
            # the common case in few passes: R = 2**(s-1) whatever the sign (no DBL term below shift 32)
            y = v2 * m
            y += np.where(s > 0, np.int64(1) << np.maximum(s - 1, 0), 0)
            y >>= s
            y += np.int64(ofm.zero_point)
            if rng is not None:
                lo, hi = max(lo, int(rng[0])), min(hi, int(rng[1]))
                if lo > hi:  # the activation clamp, then the type's range
                    y = np.clip(np.clip(y, rng[0], rng[1]), ofm.min_value, ofm.max_value)
                    return y.reshape(shape)
            np.clip(y, lo, hi, out=y)
            return y.reshape(shape)
        y = mul_round_shift_np(v2, m, s, mode) + np.int64(ofm.zero_point)
        if rng is not None:
            y = np.clip(y, rng[0], rng[1])
        if kind:
            y = _lut_np(y, kind, tab, lut_signed)
        return np.clip(y, lo, hi).reshape(shape)
    out = np.empty_like(v2)
    if kind == 0 and mode in (0, 2) and v2.size and s.max(initial=0) <= 62 and s.min(initial=0) >= 0:
        vmax = max(int(v2.max()), -int(v2.min()))
        lo = max(int(ofm.min_value), int(rng[0])) if rng else int(ofm.min_value)
        hi = min(int(ofm.max_value), int(rng[1])) if rng else int(ofm.max_value)
        if vmax < (1 << 30) and lo <= hi:
            # the common case (int32 accumulators, NATURAL/DBL): one branch-free pass
            rnd = np.where(s > 0, np.left_shift(np.int64(1), np.maximum(s - 1, 0)), 0).astype(np.int64)
            rnd_dbl = np.where((s > 31) & (mode == 0), np.int64(1) << 30, 0).astype(np.int64)
            # clamping to [lo, hi] then saturating to the OFM type is one clamp to the intersection
            requantize_kernel(v2, m, rnd, rnd_dbl, s, np.int64(ofm.zero_point), np.int64(lo), np.int64(hi), out)
            return out.reshape(shape)
    output_stage_kernel(v2, m, s, np.int64(op.ofm_round_mode), np.int64(ofm.zero_point), rng is not None,
                        np.int64(rng[0] if rng else 0), np.int64(rng[1] if rng else 0), kind, tab, lut_signed,
                        np.int64(ofm.min_value), np.int64(ofm.max_value), out)
    return out.reshape(shape)


# ================================================================================== operands


def padded_ifm(ifm, op, fill=0, dtype=np.int64):
    """As :func:`reference.padded_ifm`, in ``dtype``."""
    k = op.kernel
    fm = op.ifm
    oh, ow = op.ofm.height, op.ofm.width
    ph = (oh - 1) * k.stride_y + k.dilated_height
    pw = (ow - 1) * k.stride_x + k.dilated_width
    ih, iw = fm.height, fm.width
    C = ifm.shape[2]
    y0, x0 = k.pad_top, k.pad_left
    hh = max(0, min(ih, ph - y0))
    ww = max(0, min(iw, pw - x0))
    if (k.upscale == "NONE" and y0 == 0 and x0 == 0 and hh == ph and ww == pw and ifm.shape[0] >= ph
            and ifm.shape[1] >= pw):
        x = ifm[:ph, :pw].astype(dtype)  # no padding: the IFM itself, in dtype, minus its zero point
        x -= fm.zero_point
        return x
    P = np.full((ph, pw, C), fill, dtype=dtype)
    if hh <= 0 or ww <= 0:
        return P
    rows, cols = (hh, ww) if k.upscale == "NONE" else ((hh + 1) // 2, (ww + 1) // 2)
    x = ifm[:rows, :cols].astype(dtype)  # only what is placed (an operation may read part of its IFM)
    x -= fm.zero_point
    dst = P[y0:y0 + hh, x0:x0 + ww]
    if k.upscale == "NEAREST":
        for dy in range(2):
            for dx in range(2):
                sub = x[: (hh - dy + 1) // 2, : (ww - dx + 1) // 2]
                dst[dy::2, dx::2] = sub
    elif k.upscale == "ZEROS":
        dst[...] = 0
        sub = x[: (hh + 1) // 2, : (ww + 1) // 2]
        dst[0::2, 0::2] = sub
    else:
        dst[...] = x[:hh, :ww]
    return P


@njit
def _conv_int64(P, W, oh, ow, sy, sx, dy, dx, acc):
    O, KH, KW, I = W.shape
    for oy in range(oh):
        for ox in range(ow):
            for o in range(O):
                s = np.int64(0)
                for ky in range(KH):
                    yy = oy * sy + ky * dy
                    for kx in range(KW):
                        xx = ox * sx + kx * dx
                        for i in range(I):
                            s += P[yy, xx, i] * np.int64(W[o, ky, kx, i])
                acc[oy, ox, o] += s


def _abs_max(x: np.ndarray, zp: int) -> int:
    if x.size == 0:
        return 0
    return int(max(int(x.max()) - zp, zp - int(x.min()), 0))


def _im2col(P, op, dtype):
    k = op.kernel
    oh, ow = op.ofm.height, op.ofm.width
    kh, kw, c = k.height, k.width, P.shape[2]
    if kh == 1 and kw == 1 and k.stride_x == 1 and k.stride_y == 1:
        return np.ascontiguousarray(P[:oh, :ow]).reshape(oh * ow, c)
    cols = np.empty((oh, ow, kh, kw, c), dtype)
    for ky, kx, win in ref.kernel_taps(P, op):
        cols[:, :, ky, kx, :] = win
    return cols.reshape(oh * ow, kh * kw * c)


_gemm_weights_cache: OrderedDict = OrderedDict()  # id(weights) -> (weights, {"amax": int, dtype: K x O matrix})
_gemm_weights_bytes = [0]  # running total of the cache's arrays


def _weights_entry(weights: np.ndarray) -> dict:
    """What the GEMM path derives from a decoded weight array, computed once per array. Vela splits a large
    operation into stripes that all use one weight stream, whose decoded array (from the weight cache) is then
    the same object: its largest magnitude and its K x O operand are not recomputed per stripe. A small LRU,
    bounded in bytes; an entry is used only for the very array object it was made from."""
    hit = _gemm_weights_cache.get(id(weights))
    if hit is not None and hit[0] is weights:
        _gemm_weights_cache.move_to_end(id(weights))
        return hit[1]
    entry = {"amax": _abs_max(weights, 0)}
    _gemm_weights_cache[id(weights)] = (weights, entry)
    _gemm_weights_bytes[0] += weights.nbytes
    _evict()
    return entry


def _entry_bytes(weights: np.ndarray, entry: dict) -> int:
    return weights.nbytes + sum(m.nbytes for m in entry.values() if isinstance(m, np.ndarray))


def _evict() -> None:
    """Drop the least recently used entries beyond ``GEMM_WEIGHT_CACHE_BYTES`` (the newest always stays)."""
    while len(_gemm_weights_cache) > 1 and _gemm_weights_bytes[0] > GEMM_WEIGHT_CACHE_BYTES:
        _gemm_weights_bytes[0] -= _entry_bytes(*_gemm_weights_cache.popitem(last=False)[1])


def _gemm_weights(weights: np.ndarray, dtype) -> np.ndarray:
    """``weights`` (O, KH, KW, I) as the K x O right-hand GEMM operand in ``dtype`` (read-only, cached)."""
    entry = _weights_entry(weights)
    key = np.dtype(dtype).str
    wm = entry.get(key)
    if wm is None:
        wm = np.ascontiguousarray(weights.reshape(weights.shape[0], -1).T, dtype=dtype)
        wm.flags.writeable = False
        entry[key] = wm
        _gemm_weights_bytes[0] += wm.nbytes
        _evict()
    return wm


def conv_acc(ifm, weights, bias, op) -> np.ndarray:
    """CONV accumulators, exact.

    GEMM in float32 over chunks of the reduction axis small enough that every partial sum stays below 2**24
    (``chunk * max|x - zp| * max|w| < 2**24``), chunk results summed in int64; float64 when the chunks would be
    tiny (16-bit IFMs) and the whole sum stays below 2**53; an int64 loop otherwise.
    """
    acc = _conv_sums(ifm, weights, op)
    if acc.dtype != np.int64:
        acc = acc.astype(np.int64)
    return acc.reshape(op.ofm.height, op.ofm.width, -1) + np.asarray(bias, np.int64)


def _conv_sums(ifm, weights, op) -> np.ndarray:
    """The CONV sums without the bias, ``(OH * OW, O)``: exact integers in float32 (one GEMM) or int64."""
    k = op.kernel
    oh, ow = op.ofm.height, op.ofm.width
    O, KH, KW, I = weights.shape
    K = KH * KW * I
    amax = _abs_max(ifm, op.ifm.zero_point)
    wmax = _weights_entry(weights)["amax"]
    prod = max(amax * wmax, 1)
    chunk = (EXACT_F32 - 1) // prod
    if chunk >= min(K, MIN_F32_CHUNK):
        P = padded_ifm(ifm, op, dtype=np.float32)
        wm = _gemm_weights(weights, np.float32)
        acc = None
        for r0, r1, Ps, sub in _ofm_stripes(P, op, K, O):  # stripes of OFM rows: bounded im2col, --timelimit
            cols = _im2col(Ps, sub, np.float32)
            if chunk >= K:
                if r0 == 0 and r1 == oh:
                    return cols @ wm
                if acc is None:
                    acc = np.empty((oh * ow, O), np.float32)
                np.matmul(cols, wm, out=acc[r0 * ow:r1 * ow])
                continue
            if acc is None:
                acc = np.zeros((oh * ow, O), np.int64)
            part = acc[r0 * ow:r1 * ow]
            for k0 in range(0, K, chunk):
                part += (cols[:, k0:k0 + chunk] @ wm[k0:k0 + chunk]).astype(np.int64)
        return acc
    if K * prod < EXACT_F64:
        P = padded_ifm(ifm, op, dtype=np.float64)
        wm = _gemm_weights(weights, np.float64)
        acc = np.zeros((oh * ow, O), np.int64)
        for r0, r1, Ps, sub in _ofm_stripes(P, op, K, O):
            acc[r0 * ow:r1 * ow] = (_im2col(Ps, sub, np.float64) @ wm).astype(np.int64)
        return acc
    P = padded_ifm(ifm, op)
    acc = np.zeros((oh, ow, O), np.int64)
    W = np.ascontiguousarray(weights)
    for r0, r1, Ps, sub in _ofm_stripes(P, op, K, O):
        _conv_int64(Ps, W, r1 - r0, ow, k.stride_y, k.stride_x, k.dilation_y, k.dilation_x, acc[r0:r1])
    return acc.reshape(oh * ow, O)


STRIPE_MACS = 1 << 28  # multiply-accumulates per stripe of OFM rows (about 0.1-1 s): --timelimit is checked between


def _ofm_stripes(P, op, K, O):
    """Stripes of OFM rows ``(r0, r1, P rows they read, the operation restricted to them)``: the convolution is
    computed stripe by stripe (bounded im2col memory), with an interruption point before each."""
    from dataclasses import replace

    from ..bounds import IM2COL_STRIPE_ELEMENTS

    k = op.kernel
    oh, ow = op.ofm.height, op.ofm.width
    per_row = max(ow * K, 1)
    n = max(1, min(IM2COL_STRIPE_ELEMENTS // per_row, STRIPE_MACS // (per_row * max(O, 1))))
    if n >= oh:
        interruption_point()
        yield 0, oh, P, op
        return
    for r0 in range(0, oh, n):
        interruption_point()
        r1 = min(oh, r0 + n)
        sub = replace(op, ofm=replace(op.ofm, height=r1 - r0))
        yield r0, r1, P[r0 * k.stride_y:(r1 - 1) * k.stride_y + k.dilated_height], sub


def depthwise_acc(ifm, weights, bias, op) -> np.ndarray:
    """DEPTHWISE accumulators: per-tap multiply-adds, in float32 when every partial sum stays below 2**24."""
    C = weights.shape[0]
    kh, kw = weights.shape[1], weights.shape[2]
    prod = max(_abs_max(ifm, op.ifm.zero_point) * _abs_max(weights, 0), 1)
    dtype = np.float32 if kh * kw * prod < EXACT_F32 else np.int64
    P = padded_ifm(ifm[:, :, :C], op, dtype=dtype)
    w = weights[:, :, :, 0].astype(dtype)
    acc = np.zeros((op.ofm.height, op.ofm.width, C), dtype)
    tmp = np.empty_like(acc)
    for ky, kx, win in ref.kernel_taps(P, op):
        np.multiply(win, w[:, ky, kx], out=tmp)
        acc += tmp
    return acc.astype(np.int64) + np.asarray(bias, np.int64)


def pool_value(ifm, op):
    mode = op.sub_op
    k = op.kernel
    if mode in ("MAX", "MIN"):  # MIN (U85): MAX of -(x - zp), as the reference engine
        src = ifm if mode == "MAX" else 2 * op.ifm.zero_point - ifm.astype(np.int64)
        P = padded_ifm(src, op, fill=ref.NEG)
        out = None
        for _, _, win in ref.kernel_taps(P, op):
            out = win.copy() if out is None else np.maximum(out, win, out=out)
        return (out if mode == "MAX" else -out), None
    P = padded_ifm(ifm, op)
    if k.elements == 1:
        s = next(ref.kernel_taps(P, op))[2].copy()
    else:
        s = None
        for _, _, win in ref.kernel_taps(P, op):
            s = win.copy() if s is None else np.add(s, win, out=s)
    if mode == "REDUCE_SUM":
        return s.sum(axis=2, keepdims=True), None
    if mode in ("SUM", "NONE"):  # U85; NONE (the accumulator loaded from a 1x1 window) is the value itself
        return s, None
    if ref.hw_average(op):
        M = ref.valid_mask(op)[:, :, None]
        cnt = None
        for _, _, win in ref.kernel_taps(M, op):
            cnt = win.copy() if cnt is None else cnt + win
        return s, cnt
    return s, None


@njit
def _avg_div(value, cnt, out):
    """out = reference.avg_divide(value, cnt): (x * M + 2^(S-1)) >> S with TOSA's reciprocal of the count.

    M < 2^31 and |x| < 2^32, so the product fits in int64."""
    n0, n1, c = value.shape
    for i in range(n0):
        for j in range(n1):
            d = cnt[i, j, 0]
            if d <= 0:
                for k in range(c):
                    out[i, j, k] = 0
                continue
            kk = 0
            while (1 << kk) < d:
                kk += 1
            m = (((1 << 30) + 1) << kk) // d
            s = 30 + kk
            for k in range(c):
                out[i, j, k] = (value[i, j, k] * m + (1 << (s - 1))) >> s


def _avg_div_call(value, cnt):
    q = np.empty(value.shape, np.int64)
    _avg_div(value, np.ascontiguousarray(cnt, np.int64), q)
    return q


def _avg_div_np(value, cnt):
    """:func:`_avg_div` in numpy: the same int64 arithmetic."""
    d = np.broadcast_to(np.asarray(cnt, np.int64), value.shape[:2] + (1,))
    dpos = np.maximum(d, 1)
    kk = np.zeros(dpos.shape, np.int64)
    while True:  # smallest kk with 2**kk >= d
        more = (np.int64(1) << kk) < dpos
        if not more.any():
            break
        kk += more
    m = (((np.int64(1) << 30) + 1) << kk) // dpos
    sh = 30 + kk
    q = (value * m + (np.int64(1) << (sh - 1))) >> sh
    return np.where(d > 0, q, 0)


# ================================================================================== elementwise


@njit
def _scale_operand(x, L, m, s, mode, out):
    """out = rshift_round(x << L, m, s + L, mode) elementwise (x int64, |x| < 2**40)."""
    flat = x.ravel()
    o = out.ravel()
    for i in range(flat.shape[0]):
        o[i] = mul_round_shift(flat[i] << L, m, s + L, mode)


@njit
def _shr(a, b, mode, out):
    fa = a.ravel()
    fb = b.ravel()
    o = out.ravel()
    for i in range(fa.shape[0]):
        o[i] = mul_round_shift(fa[i], 1, fb[i] & 31, mode)


@njit
def _clz(a, out):
    fa = a.ravel()
    o = out.ravel()
    for i in range(fa.shape[0]):
        u = fa[i] & 0xFFFFFFFF
        n = 32
        while u:
            u >>= 1
            n -= 1
        o[i] = n


def _per_operand_scaled(a, b, op):
    """:func:`reference.per_operand_scaled` in int64 (object integers where a product could overflow)."""
    sa = op.opa_scale
    if op.sub_op == "LRELU":
        sb = op.ifm2_scale
        pos = mul_round_shift_np(a, sa.multiplier, sa.shift, op.ifm_round_mode)
        neg = mul_round_shift_np(a, sb.multiplier, sb.shift, op.ifm2_round_mode)
        return np.where(a >= 0, pos, neg), b
    a = mul_round_shift_np(a, sa.multiplier, sa.shift, op.ifm_round_mode)
    if b is not None:
        sb = op.ifm2_scale
        b = mul_round_shift_np(b, sb.multiplier, sb.shift, op.ifm2_round_mode)
    return a, b


def elementwise_value(a_raw, b_raw, op):
    sub = op.sub_op
    ifm = op.ifm
    a = a_raw.astype(np.int64)
    a -= ifm.zero_point
    b = None
    if not op.is_unary:
        if op.broadcast.scalar:
            b = np.full((1, 1, 1), op.broadcast.scalar_value - op.broadcast.scalar_zero_point, np.int64)
        else:
            b = b_raw.astype(np.int64)
            b -= op.ifm2.zero_point
        b = np.ascontiguousarray(np.broadcast_to(b, a.shape))
        if op.broadcast.reversed_operands:
            a, b = b, a
    if op.ifm_scale_mode == ref.IFM_SCALE_PER_OPERAND:  # Ethos-U85: reference.per_operand_scaled
        a, b = _per_operand_scaled(a, b, op)
        if sub in ("ADD", "SUB"):
            return a + b if sub == "ADD" else a - b
        if sub == "LRELU":
            return a
        if sub in ref.U85_ONLY_MODES:
            return ref.u85_elementwise(a, b, op)
    if sub in ("ADD", "SUB"):
        mode = op.ifm_scale_mode
        if mode == 0:
            a2 = a * (op.opa_scale.multiplier & 0xFFFF)
            b2 = b * (op.opb_scale & 0xFFFF)
        else:
            L = 20 if ifm.bits == 8 else 15 if ifm.bits == 16 else 0
            m, s, rm = op.opa_scale.multiplier, op.opa_scale.shift, op.ifm_round_mode

            def sc(x):
                x = np.ascontiguousarray(x)
                if not x.flags.writeable:  # one compiled signature
                    x = x.copy()
                if _small(x):
                    return mul_round_shift_np(x << L, m, s + L, rm)
                out = np.empty(x.shape, np.int64)
                _scale_operand(x, L, m, s, rm, out)
                return out

            def fixed(x):
                return x << (L - 1) if L else x

            a2, b2 = (sc(a), fixed(b)) if mode == 1 else (fixed(a), sc(b))
        return a2 + b2 if sub == "ADD" else a2 - b2
    if sub == "MUL":
        return a * b
    if sub == "MIN":
        return np.minimum(a, b)
    if sub == "MAX":
        return np.maximum(a, b)
    if sub == "ABS":
        return np.abs(a)
    if sub == "CLZ":
        if _small(a):  # 32 - bit length; frexp's exponent is the bit length, exact for 32-bit values
            return 32 - np.frexp((a & 0xFFFFFFFF).astype(np.float64))[1].astype(np.int64)
        out = np.empty(a.shape, np.int64)
        _clz(np.ascontiguousarray(a), out)
        return out
    if sub == "SHL":
        r = (a << (b & 31)) & 0xFFFFFFFF
        return np.where(r >= 1 << 31, r - (1 << 32), r)
    if sub == "SHR":
        if _small(a):
            return mul_round_shift_np(a, 1, b & 31, op.ofm_round_mode)
        out = np.empty(a.shape, np.int64)
        _shr(np.ascontiguousarray(a), np.ascontiguousarray(b), op.ofm_round_mode, out)
        return out
    if sub == "LRELU":
        m, s, rm = op.ofm_scale.multiplier, op.ofm_scale.shift, op.ofm_round_mode
        a = np.ascontiguousarray(a)
        if _small(a):
            neg = mul_round_shift_np(a, m, s, rm)
        else:
            neg = np.empty(a.shape, np.int64)
            _scale_operand(a, 0, m, s, rm, neg)
        return np.where(a >= 0, a, neg)
    raise ValueError(sub)


# ================================================================================== fused kernels
# For large operations once numba is in use: the sums, the bias, the output stage and the clamp in one pass,
# int32 results. Only for the common output stage (no LUT, NATURAL/DBL rounding, shifts 0..62, every value
# |acc + bias| < 2**30, the requantize kernel's domain); a kernel that meets a larger value returns 1 and the
# caller takes the general path, so the result is the same either way.

_REQUANT_ARGS = "int64[::1], int64[::1], int64[::1], int64[::1], int64[::1], int64, int64, int64"


@njit([f"int64(float32[:, ::1], {_REQUANT_ARGS}, int32[:, ::1])",
       f"int64(int64[:, ::1], {_REQUANT_ARGS}, int32[:, ::1])"])
def _requant_sums_kernel(acc, bias, mult, rnd, rnd_dbl, shift, zp, lo, hi, out):
    n, c = acc.shape
    v = np.empty(c, np.int64)
    for i in range(n):
        bad = False
        for j in range(c):
            x = np.int64(acc[i, j]) + bias[j]
            v[j] = x
            bad |= (x >= (1 << 30)) | (x <= -(1 << 30))
        if bad:
            return 1
        _requant_row(v, mult, rnd, rnd_dbl, shift, zp, lo, hi, out[i])
    return 0


@njit
def _requant_row(v, mult, rnd, rnd_dbl, shift, zp, lo, hi, out):
    """The fused kernels' output stage (:func:`requantize_kernel`'s, for one row) of one row of values ``v``
    (each |v| < 2**30, checked by the caller) into ``out``: a loop without a check inside, which vectorises."""
    for j in range(v.shape[0]):
        x = v[j]
        sign = np.int64(1) - np.int64(2) * np.int64(x < 0)
        y = ((x * mult[j] + rnd[j] + sign * rnd_dbl[j]) >> shift[j]) + zp
        out[j] = min(max(y, lo), hi)


#: DEPTHWISE sums are taken in int32 when max|x - zp| * max|w| * taps is below this (else int64; the tests lower
#: it to 0 to take the int64 side)
DEPTHWISE_INT32_SUMS = 1 << 31
_UPSCALE_CODE = {"NONE": 0, "NEAREST": 1, "ZEROS": 2}
_GEOMETRY_ARGS = "int64, int64, int64, int64, int64, int64, int64, int64, int64"


@njit(inline="always")
def _padded_index(r, n, up):
    """The IFM row (or column) behind row ``r`` of the padded IFM (``padded_ifm``: ``n`` rows of the IFM, after
    the upscale, from the top padding on), or -1 where the padded IFM holds the fill."""
    if r < 0 or r >= n:
        return -1
    if up == 0:
        return r
    if up == 2 and (r & 1) == 1:
        return -1
    return r >> 1


@njit(f"int64(int32[:, :, ::1], int32[:, :, ::1], int64, {_GEOMETRY_ARGS}, boolean, {_REQUANT_ARGS}, "
      f"int32[:, :, ::1])")
def _depthwise_requant_kernel(x, w, zp_in, sy, sx, dy, dx, top, left, hh, ww, up, narrow, bias, mult, rnd, rnd_dbl,
                              shift, zp, lo, hi, out):
    """DEPTHWISE from the IFM ``x`` (its first C channels; ``w`` (KH, KW, C)) with the padding of
    :func:`padded_ifm` read in place: a tap on the padding adds 0, any other ``x - zp_in``. ``narrow``: the
    caller has bounded every sum of products below 2**31 (:data:`DEPTHWISE_INT32_SUMS`), so the sums are taken
    in int32 (vectorised), else in int64."""
    oh, ow, c = out.shape
    kh, kw = w.shape[0], w.shape[1]
    acc = np.empty(c, np.int64)
    acc32 = np.empty(c, np.int32)
    zp32 = np.int32(zp_in) if narrow else np.int32(0)
    for oy in range(oh):
        for ox in range(ow):
            if narrow:
                for j in range(c):  # a loop, not acc[:] = 0: slice assignment is slow to compile
                    acc32[j] = 0
            else:
                for j in range(c):
                    acc[j] = 0
            for ky in range(kh):
                iy = _padded_index(oy * sy + ky * dy - top, hh, up)
                if iy < 0:
                    continue
                for kx in range(kw):
                    ix = _padded_index(ox * sx + kx * dx - left, ww, up)
                    if ix < 0:
                        continue
                    if narrow:
                        for j in range(c):
                            acc32[j] += (x[iy, ix, j] - zp32) * w[ky, kx, j]
                    else:
                        for j in range(c):
                            acc[j] += (np.int64(x[iy, ix, j]) - zp_in) * np.int64(w[ky, kx, j])
            bad = False
            for j in range(c):
                v = (np.int64(acc32[j]) if narrow else acc[j]) + bias[j]
                acc[j] = v
                bad |= (v >= (1 << 30)) | (v <= -(1 << 30))
            if bad:
                return 1
            _requant_row(acc, mult, rnd, rnd_dbl, shift, zp, lo, hi, out[oy, ox])
    return 0


@njit(f"void(int32[:, :, ::1], int64, int64, int64, int64, int64, {_GEOMETRY_ARGS}, float32[:, ::1])")
def _im2col_kernel(x, zp_in, oh, ow, kh, kw, sy, sx, dy, dx, top, left, hh, ww, up, cols):
    """The float32 im2col matrix of :func:`_im2col` (rows oy * OW + ox, columns (ky * KW + kx) * C + i) from
    the IFM ``x`` with the padding of :func:`padded_ifm` (fill 0) read in place."""
    c = x.shape[2]
    for oy in range(oh):
        for ox in range(ow):
            r = oy * ow + ox
            for ky in range(kh):
                iy = _padded_index(oy * sy + ky * dy - top, hh, up)
                for kx in range(kw):
                    ix = _padded_index(ox * sx + kx * dx - left, ww, up) if iy >= 0 else -1
                    c0 = (ky * kw + kx) * c
                    if ix < 0:
                        for i in range(c):
                            cols[r, c0 + i] = 0.0
                    else:
                        for i in range(c):
                            cols[r, c0 + i] = np.float32(np.int64(x[iy, ix, i]) - zp_in)


def _geometry(op):
    """The padding arguments of the kernels that read the padded IFM in place: (top, left, rows, columns of the
    IFM inside the padded IFM, upscale code), as :func:`padded_ifm` places them."""
    k = op.kernel
    ph = (op.ofm.height - 1) * k.stride_y + k.dilated_height
    pw = (op.ofm.width - 1) * k.stride_x + k.dilated_width
    hh = max(0, min(op.ifm.height, ph - k.pad_top))
    ww = max(0, min(op.ifm.width, pw - k.pad_left))
    return k.pad_top, k.pad_left, hh, ww, _UPSCALE_CODE[k.upscale]


def _requant_params(op, mult, shift, bias, c, lut):
    """The fused kernels' output-stage arguments, or None when this operation's output stage is not theirs."""
    if op.activation.table is not None or op.activation.builtin:
        return None
    # writeable copies: the kernels' fixed signatures take writeable C arrays (one compiled version each)
    p = _branch_free_stage(op, _per_channel(mult, c), _per_channel(shift, c), c)
    if p is None or p[5] < -(1 << 31) or p[6] >= (1 << 31):  # the fused kernels write int32
        return None
    return (_per_channel(bias, c), *p)


_fused_params_memo = IdentityMemo()  # (op, bias_scale; c) -> params


def _fused_params(op, bias_scale, c, lut):
    """:func:`_requant_params` of a CONV/DEPTHWISE, kept for the very (read-only) bias/scale arrays and
    operation object a replayed stream passes again (``execute`` returns the same arrays for the same bytes)."""
    params = _fused_params_memo.get((op, bias_scale), (c,))
    if params is not MISS:
        return params
    m, s = ref.ofm_scales(op, bias_scale)
    params = _requant_params(op, m, s, bias_scale[0], c, lut)
    if isinstance(bias_scale, tuple) and all(isinstance(a, np.ndarray) and not a.flags.writeable
                                             for a in bias_scale):
        _fused_params_memo.put((op, bias_scale), params, (c,))
    return params


def _fused_conv(op, ifm, weights, bias_scale, lut):
    """CONV with the fused output stage, or None (then the caller takes the general path)."""
    c = weights.shape[0]
    params = _fused_params(op, bias_scale, c, lut)
    if params is None:
        return None
    acc = _conv_sums_in_place(ifm, weights, op)
    if acc is None:
        acc = np.ascontiguousarray(_conv_sums(ifm, weights, op))
    if acc.dtype not in (np.float32, np.int64):
        acc = acc.astype(np.int64)
    out = np.empty(acc.shape, np.int32)
    if _requant_sums_kernel(acc, *params, out):
        return None
    return out.reshape(op.ofm.height, op.ofm.width, c)


def _conv_sums_in_place(ifm, weights, op):
    """:func:`_conv_sums` as one float32 GEMM whose im2col matrix is built from the IFM in one pass (padding,
    zero point and upscale in place), or None when that is not its case (chunked, float64 or int64 sums,
    several stripes, not an int32 IFM): then :func:`_conv_sums`."""
    from ..bounds import IM2COL_STRIPE_ELEMENTS

    O, KH, KW, I = weights.shape
    K = KH * KW * I
    oh, ow = op.ofm.height, op.ofm.width
    if ifm.dtype != np.int32 or ifm.shape[2] != I or oh * ow * K > IM2COL_STRIPE_ELEMENTS:
        return None
    if oh * ow * K * O > STRIPE_MACS:
        return None
    prod = max(_abs_max(ifm, op.ifm.zero_point) * _weights_entry(weights)["amax"], 1)
    if (EXACT_F32 - 1) // prod < K:
        return None
    top, left, hh, ww, up = _geometry(op)
    x = np.ascontiguousarray(ifm)
    if hh and ww and (x.shape[0] < _rows_read(hh, up) or x.shape[1] < _rows_read(ww, up)):
        return None
    if not x.flags.writeable:
        x = x.copy()
    k = op.kernel
    interruption_point()
    cols = np.empty((oh * ow, K), np.float32)
    _im2col_kernel(x, op.ifm.zero_point, oh, ow, KH, KW, k.stride_y, k.stride_x, k.dilation_y, k.dilation_x,
                   top, left, hh, ww, up, cols)
    return cols @ _gemm_weights(weights, np.float32)


def _fused_depthwise(op, ifm, weights, bias_scale, lut):
    """DEPTHWISE with the fused output stage, or None."""
    c = weights.shape[0]
    params = _fused_params(op, bias_scale, c, lut)
    if params is None:
        return None
    k = op.kernel
    if ifm.dtype != np.int32 or ifm.shape[2] < c:
        return None
    x = np.ascontiguousarray(ifm)
    if not x.flags.writeable:  # the kernel's signature takes writeable arrays
        x = x.copy()
    w = _depthwise_weights(weights)
    top, left, hh, ww, up = _geometry(op)
    if hh and ww and (x.shape[0] < _rows_read(hh, up) or x.shape[1] < _rows_read(ww, up)):
        return None
    out = np.empty((op.ofm.height, op.ofm.width, c), np.int32)
    zp_in = op.ifm.zero_point
    # every partial sum below 2**31: int32 sums (zp_in too must be an int32, and so x - zp_in)
    narrow = (-(1 << 31) < zp_in < (1 << 31)
              and _abs_max(x, zp_in) * _weights_entry(weights)["amax"] * k.elements < DEPTHWISE_INT32_SUMS)
    if _depthwise_requant_kernel(x, w, zp_in, k.stride_y, k.stride_x, k.dilation_y, k.dilation_x,
                                 top, left, hh, ww, up, narrow, *params, out):
        return None
    return out


def _rows_read(n, up):
    """IFM rows (or columns) behind ``n`` rows of the padded IFM."""
    return n if up == 0 else (n + 1) // 2


def _depthwise_weights(weights):
    """(KH, KW, C) int32 of DEPTHWISE weights (O, KH, KW, 1), kept with the GEMM forms of the same array."""
    entry = _weights_entry(weights)
    w = entry.get("dw")
    if w is None:
        w = np.array(np.transpose(weights[:, :, :, 0], (1, 2, 0)), dtype=np.int32, order="C")
        entry["dw"] = w  # writeable for the kernel's signature; never written
        _gemm_weights_bytes[0] += w.nbytes
        _evict()
    return w


# ================================================================================== entry point


def run_kernel_op(op, ifm, ifm2=None, weights=None, bias_scale=None, lut=None) -> np.ndarray:
    """Same contract as :func:`reference.run_kernel_op`."""
    kind = op.kind
    if kind == "CONV" and ifm2 is not None:  # U85 weights from IFM2: the reference's einsum, this output stage
        return output_stage(ref.dynamic_conv_acc(ifm, ifm2, op), op.ofm_scale.multiplier, op.ofm_scale.shift, op,
                            lut)
    if kind in ("CONV", "DEPTHWISE"):
        if not _numpy_path(op.ofm.height * op.ofm.width * weights.shape[0], count=False):
            out = (_fused_conv if kind == "CONV" else _fused_depthwise)(op, ifm, weights, bias_scale, lut)
            if out is not None:
                return out
        bias = bias_scale[0]
        value = (conv_acc if kind == "CONV" else depthwise_acc)(ifm, weights, bias, op)
        m, s = ref.ofm_scales(op, bias_scale)
        return output_stage(value, m, s, op, lut)
    if kind == "POOL":
        value, cnt = pool_value(ifm, op)
        if cnt is not None:
            value = np.ascontiguousarray(value, np.int64)
            q = _avg_div_np(value, cnt) if _small(value) else _avg_div_call(value, cnt)
            m, s = ref.ofm_scales(op)
            return output_stage(q, m, s, op, lut)
        if bias_scale is not None:  # a U85 pool with a scale stream: bias and scale per channel
            value = value + np.asarray(bias_scale[0], np.int64)
        m, s = ref.ofm_scales(op, bias_scale)
        return output_stage(value, m, s, op, lut)
    if kind == "ELEMENTWISE":
        value = elementwise_value(ifm, ifm2, op)
        m, s = ref.ofm_scales(op)
        return output_stage(value, m, s, op, lut)
    if kind == "RESIZE":  # the reference's vectorised gather; the output stage is this engine's
        return output_stage(ref.resize_value(ifm, op), op.ofm_scale.multiplier, op.ofm_scale.shift, op, lut)
    raise ValueError(f"not a kernel operation: {kind}")
