"""The fast engine's exact scaling and output stage: ``(v * M + R) >> S`` per round mode with a 96-bit
intermediate (numba) or int64/Python integers (numpy), the zero point, the activation clamp, the LUT and the
saturation to the OFM type; the common case (int32 accumulators, NATURAL/DBL rounding) in one branch-free pass.
The reference engine's section "rounding / output stage" (and its built-in TANH/SIGMOID, shared)."""

from __future__ import annotations

import numpy as np

from ...descriptors import RoundMode
from ...memo import MISS, IdentityMemo
from ...jit import njit
from .. import reference as ref
from .paths import small

# the round modes as the numba kernels take them: ints (RoundMode's values), compile-time constants there
_DBL, _TRUNCATE, _NATURAL = int(RoundMode.DBL), int(RoundMode.TRUNCATE), int(RoundMode.NATURAL)
_TO_LOWER, _SYMMETRIC = int(RoundMode.TRUNCATE_TO_LOWER), int(RoundMode.SYMMETRIC)
_DOUBLE_ASYMMETRIC = int(RoundMode.DOUBLE_ASYMMETRIC)

SAT = np.int64(1) << np.int64(62)  # results beyond +-2**62 saturate (far outside every OFM type)


def _round_const(v, s, mode):
    """The rounding constant R of :func:`mul_round_shift` for values ``v`` and shifts ``s`` (broadcast, int64
    or Python-int object arrays)."""
    zero = np.zeros((), v.dtype)
    one = np.ones((), v.dtype)
    if mode == RoundMode.TRUNCATE:  # towards zero
        return np.where((v >= 0) | (s == 0), zero, (one << s) - 1)
    if mode == RoundMode.TRUNCATE_TO_LOWER:
        return np.zeros(np.broadcast(v, s).shape, v.dtype)
    r = np.where(s > 0, one << np.maximum(s - 1, 0), zero)
    if mode == RoundMode.DBL:  # an extra 2**30 with the sign of v for shifts above 31
        r = r + np.where(s > 31, np.where(v >= 0, one << 30, -(one << 30)), zero)
    elif mode == RoundMode.SYMMETRIC:  # half away from zero
        r = r - np.where((v < 0) & (s > 0), one, zero)
    elif mode == RoundMode.DOUBLE_ASYMMETRIC:
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
    """``floor((v * m + R) / 2**s)`` exactly (R per round mode, a :class:`RoundMode` value); ``m`` unsigned
    32-bit, ``0 <= s <= 63``, ``|v| < 2**62``.  Results beyond +-2**62 saturate to +-2**62."""
    v = np.int64(v)
    m = np.int64(m)
    s = np.int64(s)
    # the rounding constant, as reference.rounding_constant
    if mode == _TRUNCATE:
        if v >= 0:
            r = np.int64(0)
        elif s == 0:
            r = np.int64(0)
        else:
            half = np.int64(1) << (s - 1)
            r = (half - 1) + half
    elif mode == _TO_LOWER:
        r = np.int64(0)
    else:
        r = (np.int64(1) << (s - 1)) if s > 0 else np.int64(0)
        if mode == _SYMMETRIC and v < 0 and s > 0:
            r -= np.int64(1)
        if mode == _DBL and s > 31:
            if v >= 0:
                r += np.int64(1) << 30
            else:
                r -= np.int64(1) << 30
        if mode == _DOUBLE_ASYMMETRIC and s > 31:
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
def scale_clamp(v, m, s, mode, zp, do_clamp, lo, hi):
    """One value through the output stage up to the table: ``mul_round_shift(v, m, s, mode) + zp``, clamped to
    ``[lo, hi]`` when ``do_clamp`` (the int64 expression itself where it cannot overflow)."""
    if -(1 << 30) < v < (1 << 30) and s <= 62 and (mode == _DBL or mode == _NATURAL):
        # |v * m| < 2**62 and R <= 2**61 + 2**30: the int64 expression cannot overflow
        r = (np.int64(1) << (s - 1)) if s > 0 else np.int64(0)
        if mode == _DBL and s > 31:
            r = r + (np.int64(1) << 30) if v >= 0 else r - (np.int64(1) << 30)
        y = ((v * m + r) >> s) + zp
    else:
        y = mul_round_shift(v, m, s, mode) + zp
    if do_clamp:
        if y < lo:
            y = lo
        elif y > hi:
            y = hi
    return y


@njit
def output_stage_kernel(value, mult, shift, mode, zp, do_clamp, lo, hi, lut_kind, lut, lut_signed, out_lo, out_hi,
                        out):
    """value/out: (N, C) int64; mult/shift: (C,) int64.  lut_kind 0 none, 1 8-bit index, 2 16-bit interpolating,
    3 16-bit interpolating with the fraction bits kept (``lut`` holds the table entries as int64: 256 values, or
    512 packed 32-bit words)."""
    n, c = value.shape
    for i in range(n):
        for j in range(c):
            y = scale_clamp(value[i, j], mult[j], shift[j], mode, zp, do_clamp, lo, hi)
            if lut_kind == 1:
                idx = y + 128 if lut_signed else y
                idx = min(max(idx, 0), lut.shape[0] - 1)
                y = lut[idx]
            elif lut_kind >= 2:
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
                y = (base << 7) + slope * frac
                if lut_kind == 2:
                    y = (y + 64) >> 7
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
    for i in range(n):  # not fused.requant_row per row: a slice per row of a few channels costs 3x
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
    bits, signed = ref.lut_index_range(ofm.bits, ofm.signed, act.clip_range)
    if bits == 8:
        esz = ofm.bits // 8
        if esz == 1:
            tab = lut[:256].view(np.int8 if ofm.signed else np.uint8)
        elif esz == 2:
            tab = lut[:512].view("<i2" if ofm.signed else "<u2")
        else:
            tab = lut[:1024].view("<i4" if ofm.signed else "<u4")
        return 1, tab.astype(np.int64), signed
    return 3 if act.fraction_kept else 2, lut[:2048].view("<u4").astype(np.int64), signed


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
    y = (base << 7) + slope * (u & 0x7F)
    return y if kind == 3 else (y + 64) >> 7


def _builtin_output_stage(v2, m, s, op, lut) -> np.ndarray:
    """The output stage with a built-in TANH/SIGMOID: the scaling (+ zero point) by the kernel or numpy, unclamped
    and saturated only at +-2**62, then the reference's shared :func:`reference.builtin_output`."""
    zp = np.int64(op.output_zero_point)
    if small(v2):
        y = mul_round_shift_np(v2, m, s, op.ofm_round_mode) + zp
    else:
        y = np.empty_like(v2)
        output_stage_kernel(v2, m, s, np.int64(op.ofm_round_mode), zp, False, np.int64(0), np.int64(0), 0,
                            np.zeros(1, np.int64), False, -SAT, SAT, y)
    return ref.builtin_output(y, op, lut)


def is_scalar(v) -> bool:
    return isinstance(v, (int, np.integer))


def per_channel(v, c: int) -> np.ndarray:
    """``v`` (a scalar or one value per channel) as a writeable C int64 array of ``c`` values."""
    if is_scalar(v):
        return np.full(c, v, np.int64)
    return np.array(np.broadcast_to(np.asarray(v, np.int64), (c,)))


def branch_free_stage(op, m, s, c):
    """``(m, rnd, rnd_dbl, s, zp, lo, hi)`` of the branch-free output stage (:func:`requantize_kernel`,
    :func:`fused.requant_row`) for per-channel multipliers ``m`` and shifts ``s``, or None when it is not its case:
    rounding other than NATURAL/DBL, a shift outside 0..62, no channels, an empty clamp range."""
    mode = op.ofm_round_mode
    if mode not in (RoundMode.DBL, RoundMode.NATURAL) or c == 0 or s.max() > 62 or s.min() < 0:
        return None
    ofm = op.ofm
    rng = ref.clamp_range(op)
    lo = max(int(ofm.min_value), int(rng[0])) if rng else int(ofm.min_value)
    hi = min(int(ofm.max_value), int(rng[1])) if rng else int(ofm.max_value)
    if lo > hi:
        return None
    rnd = np.where(s > 0, np.left_shift(np.int64(1), np.maximum(s - 1, 0)), 0).astype(np.int64)
    rnd_dbl = np.where((s > 31) & (mode == RoundMode.DBL), np.int64(1) << 30, 0).astype(np.int64)
    return m, rnd, rnd_dbl, s, np.int64(op.output_zero_point), np.int64(lo), np.int64(hi)


_stage_memo = IdentityMemo()  # (op; mult, shift, c) -> the requantize kernel's parameters or None


def _stage_params(op, mult: int, shift: int, c: int):
    """The requantize kernel's parameters (:func:`branch_free_stage`) for an output stage with one multiplier
    and shift and no table, or None when it is not the kernel's case, computed once per operation object (a
    replayed stream passes the same ones again)."""
    key = (mult, shift, c)
    params = _stage_memo.get((op,), key)
    if params is MISS:
        params = branch_free_stage(op, per_channel(mult, c), per_channel(shift, c), c)
        _stage_memo.put((op,), params, key)
    return params


_numpy_memo = IdentityMemo()  # (op; c) -> (multiplier, shift, the numpy common case's parameters or None)


def _same(a, b) -> bool:
    if a is b:
        return True
    if is_scalar(a) or is_scalar(b):
        return is_scalar(a) and is_scalar(b) and int(a) == int(b)
    return np.array_equal(a, b)


def _numpy_params(op, mult, shift, c: int):
    """``(m, rnd, rnd_dbl, s, zp, lo, hi)`` of the numpy path's common case, the branch-free stage of
    :func:`requantize_kernel` (no table, NATURAL or DBL rounding, shifts 0..62, a non-empty clamp range;
    ``rnd_dbl`` None when no shift is above 31) for this operation, or None; computed once per operation object
    for its multiplier and shift (checked to be the ones it was computed for: a replay passes equal ones)."""
    hit = _numpy_memo.get((op,), (c,))
    if hit is not MISS and _same(hit[0], mult) and _same(hit[1], shift):
        return hit[2]
    params = None
    if op.activation.table is None:
        stage = branch_free_stage(op, per_channel(mult, c), per_channel(shift, c), c)
        if stage is not None:
            m, rnd, rnd_dbl, s, zp, lo, hi = stage
            params = (m, rnd, rnd_dbl if rnd_dbl.any() else None, s, zp, lo, hi)
    keep = (lambda v: v if is_scalar(v) else np.array(v, copy=True))  # the values, not an array that may change
    _numpy_memo.put((op,), (keep(mult), keep(shift), params), (c,))
    return params


def output_stage(value, mult, shift, op, lut=None) -> np.ndarray:
    """Same contract as :func:`reference.output_stage`; ``value`` is int64 (..., C)."""
    value = np.ascontiguousarray(value, dtype=np.int64)
    shape = value.shape
    c = shape[-1]
    v2 = value.reshape(-1, c)
    builtin = op.activation.builtin
    numpy_only = None if builtin else small(v2)
    if numpy_only is False and v2.size and op.activation.table is None and is_scalar(mult) and is_scalar(shift):
        p = _stage_params(op, int(mult), int(shift), c)
        if p is not None and max(int(v2.max()), -int(v2.min())) < (1 << 30):
            out = np.empty_like(v2)
            requantize_kernel(v2, *p, out)
            return out.reshape(shape)
    if numpy_only and v2.size and op.activation.table is None:
        p = _numpy_params(op, mult, shift, c)
        if p is not None and max(int(v2.max()), -int(v2.min())) < (1 << 30):
            # requantize_kernel's branch-free stage in numpy, its parameters kept per operation: |v| < 2**30 and
            # m < 2**32 keep v * m + R below 2**63
            m, rnd, rnd_dbl, s, zp, lo, hi = p
            y = v2 * m
            y += rnd
            if rnd_dbl is not None:  # DBL above shift 31: 2**30 more with the sign of v
                y += np.where(v2 < 0, -rnd_dbl, rnd_dbl)
            y >>= s
            y += zp
            np.maximum(y, lo, out=y)
            np.minimum(y, hi, out=y)
            return y.reshape(shape)
    # writeable C copies: the kernels are then compiled for one signature (not once more for read-only arrays)
    m = per_channel(mult, c)
    s = per_channel(shift, c)
    if builtin:
        return _builtin_output_stage(v2, m, s, op, lut).reshape(shape)
    rng = ref.clamp_range(op)
    kind, tab, lut_signed = _lut_table(op, lut)
    ofm = op.ofm
    mode = op.ofm_round_mode
    if numpy_only:
        # numpy: the kernels' arithmetic, exact (int64 where it cannot overflow, Python integers otherwise)
        lo, hi = int(ofm.min_value), int(ofm.max_value)
        if (kind == 0 and mode != RoundMode.TRUNCATE and v2.size and int(s.max()) <= 31 and int(s.min()) >= 0
                and max(int(v2.max()), -int(v2.min())) < (1 << 30)):
            # the common case in few passes: R = 2**(s-1) whatever the sign (no DBL term below shift 32)
            y = v2 * m
            y += np.where(s > 0, np.int64(1) << np.maximum(s - 1, 0), 0)
            y >>= s
            y += np.int64(op.output_zero_point)
            if rng is not None:
                lo, hi = max(lo, int(rng[0])), min(hi, int(rng[1]))
                if lo > hi:  # the activation clamp, then the type's range
                    y = np.clip(np.clip(y, rng[0], rng[1]), ofm.min_value, ofm.max_value)
                    return y.reshape(shape)
            np.clip(y, lo, hi, out=y)
            return y.reshape(shape)
        y = mul_round_shift_np(v2, m, s, mode) + np.int64(op.output_zero_point)
        if rng is not None:
            y = np.clip(y, rng[0], rng[1])
        if kind:
            y = _lut_np(y, kind, tab, lut_signed)
        return np.clip(y, lo, hi).reshape(shape)
    out = np.empty_like(v2)
    if (kind == 0 and mode in (RoundMode.DBL, RoundMode.NATURAL) and v2.size and s.max(initial=0) <= 62
            and s.min(initial=0) >= 0):
        vmax = max(int(v2.max()), -int(v2.min()))
        lo = max(int(ofm.min_value), int(rng[0])) if rng else int(ofm.min_value)
        hi = min(int(ofm.max_value), int(rng[1])) if rng else int(ofm.max_value)
        if vmax < (1 << 30) and lo <= hi:
            # the common case (int32 accumulators, NATURAL/DBL): one branch-free pass
            rnd = np.where(s > 0, np.left_shift(np.int64(1), np.maximum(s - 1, 0)), 0).astype(np.int64)
            rnd_dbl = np.where((s > 31) & (mode == RoundMode.DBL), np.int64(1) << 30, 0).astype(np.int64)
            # clamping to [lo, hi] then saturating to the OFM type is one clamp to the intersection
            requantize_kernel(v2, m, rnd, rnd_dbl, s, np.int64(op.output_zero_point), np.int64(lo), np.int64(hi), out)
            return out.reshape(shape)
    output_stage_kernel(v2, m, s, np.int64(op.ofm_round_mode), np.int64(op.output_zero_point), rng is not None,
                        np.int64(rng[0] if rng else 0), np.int64(rng[1] if rng else 0), kind, tab, lut_signed,
                        np.int64(ofm.min_value), np.int64(ofm.max_value), out)
    return out.reshape(shape)

