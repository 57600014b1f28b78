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
from . import reference as ref
from ._jit import njit

EXACT_F64 = 2 ** 53
EXACT_F32 = 2 ** 24
MIN_F32_CHUNK = 64  # below this many reduction elements per float32 GEMM, use float64
GEMM_WEIGHT_CACHE_BYTES = 128 << 20  # GEMM forms of recently used decoded weights kept at most
SAT = np.int64(1) << np.int64(62)


# ================================================================================== exact scaling


@njit
def mul_round_shift(v, m, s, mode):
    """``floor((v * m + R) / 2**s)`` exactly (R per round mode 0 DBL / 1 TRUNCATE / 2 NATURAL); ``m`` unsigned
    32-bit, ``0 <= s <= 63``, ``|v| < 2**62``.  Results beyond +-2**62 saturate to +-2**62."""
    v = np.int64(v)
    m = np.int64(m)
    s = np.int64(s)
    # rounding constant
    if mode == 1:
        if v >= 0:
            r = np.int64(0)
        elif s == 0:
            r = np.int64(0)
        else:
            half = np.int64(1) << (s - 1)
            r = (half - 1) + half
    else:
        r = (np.int64(1) << (s - 1)) if s > 0 else np.int64(0)
        if mode == 0 and s > 31:
            if v >= 0:
                r += np.int64(1) << 30
            else:
                r -= np.int64(1) << 30
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
            if -(1 << 30) < v < (1 << 30) and s <= 62 and mode != 1:
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
    for i in range(n):
        for j in range(c):
            v = value[i, j]
            sign = np.int64(1) - np.int64(2) * np.int64(v < 0)
            y = ((v * mult[j] + rnd[j] + sign * rnd_dbl[j]) >> shift[j]) + zp
            out[i, j] = min(max(y, lo), hi)


def _lut_table(op, lut):
    """(kind, int64 table, signed index) for the output-stage kernel."""
    act = op.activation
    if act.table is None:
        if act.builtin:
            raise NotImplementedError("built-in TANH/SIGMOID activation is not modelled")
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


def output_stage(value, mult, shift, op, lut=None) -> np.ndarray:
    """Same contract as :func:`reference.output_stage`; ``value`` is int64 (..., C)."""
    value = np.ascontiguousarray(value, dtype=np.int64)
    shape = value.shape
    c = shape[-1]
    v2 = value.reshape(-1, c)
    m = np.ascontiguousarray(np.broadcast_to(np.asarray(mult, np.int64), (c,)))
    s = np.ascontiguousarray(np.broadcast_to(np.asarray(shift, np.int64), (c,)))
    rng = ref.clamp_range(op)
    kind, tab, lut_signed = _lut_table(op, lut)
    out = np.empty_like(v2)
    ofm = op.ofm
    mode = op.ofm_round_mode
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
    P = np.full((ph, pw, C), fill, dtype=dtype)
    y0, x0 = k.pad_top, k.pad_left
    hh = max(0, min(ih, ph - y0))
    ww = max(0, min(iw, pw - x0))
    if hh <= 0 or ww <= 0:
        return P
    x = ifm.astype(dtype)
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
        acc = np.zeros((oh * ow, O), np.int64)
        for r0, r1, Ps, sub in _ofm_stripes(P, op, K, O):
            cols = _im2col(Ps, sub, np.float32)
            part = acc[r0 * ow:r1 * ow]
            if chunk >= K:
                part += (cols @ wm).astype(np.int64)
            else:
                for k0 in range(0, K, chunk):
                    part += (cols[:, k0:k0 + chunk] @ wm[k0:k0 + chunk]).astype(np.int64)
        return acc.reshape(oh, ow, O) + np.asarray(bias, np.int64)
    if K * prod < EXACT_F64:
        P = padded_ifm(ifm, op, dtype=np.float64)
        wm = _gemm_weights(weights, np.float64)
        acc = np.zeros((oh * ow, O), np.int64)
        for r0, r1, Ps, sub in _ofm_stripes(P, op, K, O):
            acc[r0 * ow:r1 * ow] = (_im2col(Ps, sub, np.float64) @ wm).astype(np.int64)
        return acc.reshape(oh, ow, O) + np.asarray(bias, np.int64)
    P = padded_ifm(ifm, op)
    acc = np.zeros((oh, ow, O), np.int64)
    W = np.ascontiguousarray(weights)
    for r0, r1, Ps, sub in _ofm_stripes(P, op, K, O):
        _conv_int64(Ps, W, r1 - r0, ow, k.stride_y, k.stride_x, k.dilation_y, k.dilation_x, acc[r0:r1])
    return acc + np.asarray(bias, np.int64)


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
    if mode == "MAX":
        P = padded_ifm(ifm, op, fill=ref.NEG)
        out = None
        for _, _, win in ref.kernel_taps(P, op):
            out = win.copy() if out is None else np.maximum(out, win, out=out)
        return out, None
    P = padded_ifm(ifm, op)
    if k.elements == 1:
        s = next(ref.kernel_taps(P, op))[2].copy()
    else:
        s = None
        for _, _, win in ref.kernel_taps(P, op):
            s = win.copy() if s is None else np.add(s, win, out=s)
    if mode == "REDUCE_SUM":
        return s.sum(axis=2, keepdims=True), None
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
        out = np.empty(a.shape, np.int64)
        _clz(np.ascontiguousarray(a), out)
        return out
    if sub == "SHL":
        r = (a << (b & 31)) & 0xFFFFFFFF
        return np.where(r >= 1 << 31, r - (1 << 32), r)
    if sub == "SHR":
        out = np.empty(a.shape, np.int64)
        _shr(np.ascontiguousarray(a), np.ascontiguousarray(b), op.ofm_round_mode, out)
        return out
    if sub == "LRELU":
        m, s, rm = op.ofm_scale.multiplier, op.ofm_scale.shift, op.ofm_round_mode
        a = np.ascontiguousarray(a)
        neg = np.empty(a.shape, np.int64)
        _scale_operand(a, 0, m, s, rm, neg)
        return np.where(a >= 0, a, neg)
    raise ValueError(sub)


# ================================================================================== entry point


def run_kernel_op(op, ifm, ifm2=None, weights=None, bias_scale=None, lut=None) -> np.ndarray:
    """Same contract as :func:`reference.run_kernel_op`."""
    kind = op.kind
    if kind in ("CONV", "DEPTHWISE"):
        bias = bias_scale[0]
        value = (conv_acc if kind == "CONV" else depthwise_acc)(ifm, weights, bias, op)
        m, s = ref.ofm_scales(op, bias_scale)
        return output_stage(value, m, s, op, lut)
    if kind == "POOL":
        value, cnt = pool_value(ifm, op)
        if cnt is not None:
            value = np.ascontiguousarray(value)
            q = np.empty(value.shape, np.int64)
            _avg_div(value, np.ascontiguousarray(cnt), q)
            m, s = ref.ofm_scales(op)
            return output_stage(q, m, s, op, lut)
        m, s = ref.ofm_scales(op)
        return output_stage(value, m, s, op, lut)
    if kind == "ELEMENTWISE":
        value = elementwise_value(ifm, ifm2, op)
        m, s = ref.ofm_scales(op)
        return output_stage(value, m, s, op, lut)
    raise ValueError(f"not a kernel operation: {kind}")
