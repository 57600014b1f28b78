"""The fast engine's convolution and depthwise sums, exact: im2col + GEMM (numpy BLAS) in float32 over reduction
chunks that keep every partial sum below 2**24, float64 below 2**53, an int64 numba loop otherwise; the
convolution computed in stripes of OFM rows (bounded im2col memory, an interruption point before each);
depthwise per kernel tap. The reference engine's ``conv_acc`` and ``depthwise_acc``."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ....cancel import interruption_point
from ...bounds import IM2COL_STRIPE_ELEMENTS
from ...jit import njit
from .. import reference as ref
from .operands import abs_max, gemm_weights, padded_ifm, weights_entry

EXACT_F64 = 2 ** 53
EXACT_F32 = 2 ** 24
MIN_F32_CHUNK = 64  # below this many reduction elements per float32 GEMM, use float64


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


def im2col(P, op, dtype):
    k = op.kernel
    oh, ow = op.ofm.height, op.ofm.width
    kh, kw, c = k.height, k.width, P.shape[2]
    if kh == 1 and kw == 1 and k.stride_x == 1 and k.stride_y == 1:
        return np.ascontiguousarray(P[:oh, :ow]).reshape(oh * ow, c)
    cols = np.empty((oh, ow, kh, kw, c), dtype)
    for ky, kx, win in ref.kernel_taps(P, op):
        cols[:, :, ky, kx, :] = win
    return cols.reshape(oh * ow, kh * kw * c)


def conv_acc(ifm, weights, bias, op) -> np.ndarray:
    """CONV accumulators, exact.

    GEMM in float32 over chunks of the reduction axis small enough that every partial sum stays below 2**24
    (``chunk * max|x - zp| * max|w| < 2**24``), chunk results summed in int64; float64 when the chunks would be
    tiny (16-bit IFMs) and the whole sum stays below 2**53; an int64 loop otherwise.
    """
    acc = conv_sums(ifm, weights, op)
    if acc.dtype != np.int64:
        acc = acc.astype(np.int64)
    return acc.reshape(op.ofm.height, op.ofm.width, -1) + np.asarray(bias, np.int64)


def conv_sums(ifm, weights, op) -> np.ndarray:
    """The CONV sums without the bias, ``(OH * OW, O)``: exact integers in float32 (one GEMM) or int64."""
    k = op.kernel
    oh, ow = op.ofm.height, op.ofm.width
    O, KH, KW, I = weights.shape
    K = KH * KW * I
    amax = abs_max(ifm, op.ifm.zero_point)
    wmax = weights_entry(weights)["amax"]
    prod = max(amax * wmax, 1)
    chunk = (EXACT_F32 - 1) // prod
    if chunk >= min(K, MIN_F32_CHUNK):
        P = padded_ifm(ifm, op, dtype=np.float32)
        wm = gemm_weights(weights, np.float32)
        acc = None
        for r0, r1, Ps, sub in ofm_stripes(P, op, K, O):  # stripes of OFM rows: bounded im2col, --timelimit
            cols = im2col(Ps, sub, np.float32)
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
        wm = gemm_weights(weights, np.float64)
        acc = np.zeros((oh * ow, O), np.int64)
        for r0, r1, Ps, sub in ofm_stripes(P, op, K, O):
            acc[r0 * ow:r1 * ow] = (im2col(Ps, sub, np.float64) @ wm).astype(np.int64)
        return acc
    P = padded_ifm(ifm, op)
    acc = np.zeros((oh, ow, O), np.int64)
    W = np.ascontiguousarray(weights)
    for r0, r1, Ps, sub in ofm_stripes(P, op, K, O):
        _conv_int64(Ps, W, r1 - r0, ow, k.stride_y, k.stride_x, k.dilation_y, k.dilation_x, acc[r0:r1])
    return acc.reshape(oh * ow, O)


STRIPE_MACS = 1 << 28  # multiply-accumulates per stripe of OFM rows (about 0.1-1 s): --timelimit is checked between


def ofm_stripes(P, op, K, O):
    """Stripes of OFM rows ``(r0, r1, P rows they read, the operation restricted to them)``: the convolution is
    computed stripe by stripe (bounded im2col memory), with an interruption point before each."""
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
    prod = max(abs_max(ifm, op.ifm.zero_point) * abs_max(weights, 0), 1)
    dtype = np.float32 if kh * kw * prod < EXACT_F32 else np.int64
    P = padded_ifm(ifm[:, :, :C], op, dtype=dtype)
    w = weights[:, :, :, 0].astype(dtype)
    acc = np.zeros((op.ofm.height, op.ofm.width, C), dtype)
    tmp = np.empty_like(acc)
    for ky, kx, win in ref.kernel_taps(P, op):
        np.multiply(win, w[:, ky, kx], out=tmp)
        acc += tmp
    return acc.astype(np.int64) + np.asarray(bias, np.int64)

