"""The fast engine's elementwise operations: the reference engine's ``elementwise_value`` in int64 numpy, with
numba kernels for the operand scaling of ADD/SUB, SHR, CLZ and the LRELU slope on large arrays."""

from __future__ import annotations

import numpy as np

from ...descriptors import IfmScaleMode
from ...jit import njit
from .. import reference as ref
from .paths import small
from .scaling import SAT, mul_round_shift, mul_round_shift_np

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

