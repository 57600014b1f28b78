"""The fast engine's pooling: MAX/MIN, sums (AVERAGE, REDUCE_SUM, SUM, the null pool) over kernel taps in int64, and
the hardware-scaled AVERAGE's division by the valid element count (TOSA's reciprocal; a numba kernel or the same
int64 arithmetic in numpy). The reference engine's ``pool_value`` and ``avg_divide``."""

from __future__ import annotations

import numpy as np

from ...jit import njit
from .. import reference as ref
from .operands import padded_ifm

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


def avg_div_call(value, cnt):
    q = np.empty(value.shape, np.int64)
    _avg_div(value, np.ascontiguousarray(cnt, np.int64), q)
    return q


def avg_div_np(value, cnt):
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

