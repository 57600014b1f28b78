"""The fast engine's elementwise operations: the reference engine's ``elementwise_value`` in int64 numpy, with
numba kernels for the operand scaling of ADD/SUB, SHR, CLZ and the LRELU slope on large arrays; and, for the
kernels' regime, ADD/SUB/MUL with their output stage in one pass (:func:`fused_elementwise`)."""

from __future__ import annotations

import numpy as np

from ...descriptors import IfmScaleMode
from ...jit import njit
from .. import reference as ref
from .paths import small
from .scaling import _DBL, _NATURAL, SAT, is_scalar, mul_round_shift, mul_round_shift_np, scale_clamp

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


def _per_operand(x, scale, mode):
    """:func:`reference.scale_operand` of the int64 array ``x``: ``x << d`` scaled with the shift + d, or the
    reference's own function where ``x << d`` would leave int64 (a 32-bit operand with a double-round shift,
    which no compiler writes)."""
    d = scale.double_round
    if d and int(np.abs(x).max(initial=0)) >= 1 << (62 - d):
        f = np.frompyfunc(lambda v: min(max(ref.scale_operand(v, scale, mode), -int(SAT)), int(SAT)), 1, 1)
        return f(x).astype(np.int64)
    return mul_round_shift_np(x << d, scale.multiplier, scale.shift + d, mode)


def _per_operand_scaled(a, b, op):
    """:func:`reference.per_operand_scaled` in int64 (object integers where a product could overflow)."""
    sa = op.opa_scale
    if op.sub_op == "LRELU":
        sb = op.ifm2_scale
        pos = _per_operand(a, sa, op.ifm_round_mode)
        neg = _per_operand(a, sb, op.ifm2_round_mode)
        return np.where(a >= 0, pos, neg), b
    a = _per_operand(a, sa, op.ifm_round_mode)
    if b is not None:
        b = _per_operand(b, op.ifm2_scale, op.ifm2_round_mode)
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
    if op.ifm_scale_mode == IfmScaleMode.PER_OPERAND:  # reference.per_operand_scaled (the U85)
        a, b = _per_operand_scaled(a, b, op)
        if sub in ("ADD", "SUB"):
            return a + b if sub == "ADD" else a - b
        if sub == "LRELU":
            return a
        if sub in ref.BITWISE_AND_COMPARE_MODES:
            return ref.bitwise_elementwise(a, b, op)
    if sub in ("ADD", "SUB"):
        mode = op.ifm_scale_mode
        if mode == IfmScaleMode.OPA_OPB_16:
            a2 = a * (op.opa_scale.multiplier & 0xFFFF)
            b2 = b * (op.opb_scale & 0xFFFF)
        else:
            L = 20 if ifm.bits == 8 else 15 if ifm.bits == 16 else 0
            m, s, rm = op.opa_scale.multiplier, op.opa_scale.shift, int(op.ifm_round_mode)

            def sc(x):
                x = np.ascontiguousarray(x)
                if not x.flags.writeable:  # one compiled signature
                    x = x.copy()
                if small(x):
                    return mul_round_shift_np(x << L, m, s + L, rm)
                out = np.empty(x.shape, np.int64)
                _scale_operand(x, L, m, s, rm, out)
                return out

            def fixed(x):
                return x << (L - 1) if L else x

            a2, b2 = (sc(a), fixed(b)) if mode == IfmScaleMode.OPA_32 else (fixed(a), sc(b))
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
        if small(a):  # 32 - bit length; frexp's exponent is the bit length, exact for 32-bit values
            return 32 - np.frexp((a & 0xFFFFFFFF).astype(np.float64))[1].astype(np.int64)
        out = np.empty(a.shape, np.int64)
        _clz(np.ascontiguousarray(a), out)
        return out
    if sub == "SHL":
        r = (a << (b & 31)) & 0xFFFFFFFF
        return np.where(r >= 1 << 31, r - (1 << 32), r)
    if sub == "SHR":
        if small(a):
            return mul_round_shift_np(a, 1, b & 31, op.ofm_round_mode)
        out = np.empty(a.shape, np.int64)
        _shr(np.ascontiguousarray(a), np.ascontiguousarray(b), int(op.ofm_round_mode), out)
        return out
    if sub == "LRELU":
        m, s, rm = op.ofm_scale.multiplier, op.ofm_scale.shift, int(op.ofm_round_mode)
        a = np.ascontiguousarray(a)
        if small(a):
            neg = mul_round_shift_np(a, m, s, rm)
        else:
            neg = np.empty(a.shape, np.int64)
            _scale_operand(a, 0, m, s, rm, neg)
        return np.where(a >= 0, a, neg)
    raise ValueError(sub)



_ADD, _SUB, _MUL = 0, 1, 2
_FUSED_SUB_OPS = {"ADD": _ADD, "SUB": _SUB, "MUL": _MUL}


@njit
def _operand(x, zp, shape):
    """``x - zp`` in int64, broadcast along ``x``'s axes of 1 to ``shape``, flat (C order)."""
    H, W, C = shape
    xh, xw, xc = x.shape
    out = np.empty(H * W * C, np.int64)
    if xh == H and xw == W and xc == C:
        f = x.reshape(-1)
        for i in range(out.shape[0]):
            out[i] = np.int64(f[i]) - zp
    else:
        i = 0
        for y in range(H):
            for w in range(W):
                for c in range(C):
                    out[i] = np.int64(x[y if xh > 1 else 0, w if xw > 1 else 0, c if xc > 1 else 0]) - zp
                    i += 1
    return out


_I64 = "int64"
_I32_HWC = "int32[:, :, ::1]"


@njit(f"void({_I32_HWC}, {_I32_HWC}, {', '.join([_I64] * 4)}, {', '.join([_I64] * 11)}, boolean, "
      f"{', '.join([_I64] * 4)}, {_I32_HWC})")
def _elementwise_kernel(a, b, zpa, zpb, rev, sub, scale_mode, ma16, mb16, L, m32, s32, rm32, m, s, mode, zp, do_clamp,
                        lo, hi, out_lo, out_hi, out):
    """ADD/SUB/MUL and the output stage (no table) over ``out``'s shape, the values as :func:`elementwise_value`
    and :func:`scaling.output_stage_kernel` compute them: ``a`` and ``b`` broadcast along their axes of 1,
    ``out`` C-contiguous. The operation's branches are taken once, outside the loops; the output stage is one
    branch-free pass when every ``|v| * m`` and the rounding constant stay below 2**62 (the int64 expression
    then equals :func:`scaling.mul_round_shift`: no overflow, no saturation), else :func:`scaling.scale_clamp`
    per value."""
    fa = _operand(a, zpa, out.shape)
    fb = _operand(b, zpb, out.shape)
    if rev:
        fa, fb = fb, fa
    n = fa.shape[0]
    v = fa  # the values, in place of operand A
    if sub == _MUL:
        for i in range(n):
            v[i] = fa[i] * fb[i]
    elif scale_mode == 0:  # OPA_OPB_16
        if sub == _ADD:
            for i in range(n):
                v[i] = fa[i] * ma16 + fb[i] * mb16
        else:
            for i in range(n):
                v[i] = fa[i] * ma16 - fb[i] * mb16
    else:  # OPA_32 (A scaled, B fixed) or OPB_32 (B scaled, A fixed)
        for i in range(n):
            av, bv = fa[i], fb[i]
            if scale_mode == 1:
                av = mul_round_shift(av << L, m32, s32 + L, rm32)
                bv = bv << (L - 1) if L else bv
            else:
                av = av << (L - 1) if L else av
                bv = mul_round_shift(bv << L, m32, s32 + L, rm32)
            v[i] = av + bv if sub == _ADD else av - bv
    fo = out.reshape(-1)
    v_lo = v_hi = np.int64(0)
    for i in range(n):
        v_lo = min(v_lo, v[i])
        v_hi = max(v_hi, v[i])
    if not do_clamp:
        lo, hi = out_lo, out_hi
    bound = (np.int64(1) << 61) - (np.int64(1) << 31)  # |v * m| <= bound: v * m + R + 2**30 < 2**62
    if ((mode == _DBL or mode == _NATURAL) and 0 <= s <= 62 and 0 <= m < (1 << 32) and -bound <= v_lo
            and v_hi <= bound and (m == 0 or max(v_hi, -v_lo) <= bound // m)):
        r = (np.int64(1) << (s - 1)) if s > 0 else np.int64(0)
        r_dbl = (np.int64(1) << 30) if mode == _DBL and s > 31 else np.int64(0)
        for i in range(n):
            x = v[i]
            sign = np.int64(1) - np.int64(2) * np.int64(x < 0)
            y = ((x * m + r + sign * r_dbl) >> s) + zp
            fo[i] = min(max(min(max(y, lo), hi), out_lo), out_hi)
    else:
        for i in range(n):
            fo[i] = min(max(scale_clamp(v[i], m, s, mode, zp, do_clamp, lo, hi), out_lo), out_hi)


def _writeable_c(x):
    x = np.ascontiguousarray(x)
    return x if x.flags.writeable else x.copy()


def fused_elementwise(op, a_raw, b_raw):
    """:func:`elementwise_value` and the output stage of an ADD/SUB/MUL in one kernel pass (int32 values), or None
    when it is not its case (a table or built-in activation, the U85's per-operand scaling, another mode,
    per-channel OFM scales, operand shapes that do not broadcast, unsigned 32-bit values)."""
    sub = _FUSED_SUB_OPS.get(op.sub_op)
    act = op.activation
    mode = op.ifm_scale_mode
    if sub is None or act.table is not None or act.builtin or mode == IfmScaleMode.PER_OPERAND:
        return None
    m, s = ref.ofm_scales(op)
    sa = op.opa_scale
    if not (is_scalar(m) and is_scalar(s)) or (sa is None and sub != _MUL):
        return None
    ma, sh = (sa.multiplier, sa.shift) if sa is not None else (0, 0)
    bc = op.broadcast
    if bc.scalar:
        b_raw, zpb = np.full((1, 1, 1), bc.scalar_value, np.int64), bc.scalar_zero_point
    else:
        zpb = op.ifm2.zero_point
    if (b_raw is None or a_raw.ndim != 3 or b_raw.ndim != 3
            or any(nb not in (1, na) for na, nb in zip(a_raw.shape, b_raw.shape))):
        return None
    ifm, ofm = op.ifm, op.ofm
    if (a_raw.dtype != np.int32 or (ofm.bits == 32 and not ofm.signed)
            or not -(1 << 31) <= int(b_raw.min()) <= int(b_raw.max()) < (1 << 31)):
        return None  # the kernel's one signature: int32 operands and values (unsigned 32-bit ones take the other path)
    a_raw, b_raw = _writeable_c(a_raw), _writeable_c(b_raw.astype(np.int32, copy=False))
    rng = ref.clamp_range(op)
    L = 20 if ifm.bits == 8 else 15 if ifm.bits == 16 else 0
    out = np.empty(a_raw.shape, np.int32)
    _elementwise_kernel(a_raw, b_raw, int(ifm.zero_point), int(zpb), int(bc.reversed_operands), sub, int(mode),
                        ma & 0xFFFF, op.opb_scale & 0xFFFF, L, ma, sh, int(op.ifm_round_mode), int(m), int(s), int(op.ofm_round_mode),
                        int(op.output_zero_point), rng is not None, int(rng[0]) if rng else 0, int(rng[1]) if rng else 0,
                        int(ofm.min_value), int(ofm.max_value), out)
    return out
