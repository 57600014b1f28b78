"""The fast engine's fused kernels, for large operations once numba is in use: the sums, the bias, the output stage
and the clamp in one pass, int32 results (CONV: an im2col matrix built from the IFM in one pass, one float32
GEMM, then the fused output stage; DEPTHWISE: one kernel reading the padded IFM in place). Only for the common
output stage (no LUT, NATURAL/DBL rounding, shifts 0..62, every value |acc + bias| < 2**30, the requantize
kernel's domain); a kernel that meets a larger value returns 1 and the caller takes the general path, so the
result is the same either way."""

from __future__ import annotations

import numpy as np

from ....cancel import interruption_point
from ...bounds import IM2COL_STRIPE_ELEMENTS
from ...jit import njit
from ...memo import MISS, IdentityMemo
from .. import reference as ref
from . import convolution as conv
from .operands import abs_max, add_form, gemm_weights, weights_entry
from .scaling import branch_free_stage, per_channel

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
        requant_row(v, mult, rnd, rnd_dbl, shift, zp, lo, hi, out[i])
    return 0


@njit
def requant_row(v, mult, rnd, rnd_dbl, shift, zp, lo, hi, out):
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
            requant_row(acc, mult, rnd, rnd_dbl, shift, zp, lo, hi, out[oy, ox])
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
    p = branch_free_stage(op, per_channel(mult, c), per_channel(shift, c), c)
    if p is None or p[5] < -(1 << 31) or p[6] >= (1 << 31):  # the fused kernels write int32
        return None
    return (per_channel(bias, c), *p)


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


def fused_conv(op, ifm, weights, bias_scale, lut):
    """CONV with the fused output stage, or None (then the caller takes the general path)."""
    c = weights.shape[0]
    params = _fused_params(op, bias_scale, c, lut)
    if params is None:
        return None
    acc = _conv_sums_in_place(ifm, weights, op)
    if acc is None:
        acc = np.ascontiguousarray(conv.conv_sums(ifm, weights, op))
    if acc.dtype not in (np.float32, np.int64):
        acc = acc.astype(np.int64)
    out = np.empty(acc.shape, np.int32)
    if _requant_sums_kernel(acc, *params, out):
        return None
    return out.reshape(op.ofm.height, op.ofm.width, c)


def _conv_sums_in_place(ifm, weights, op):
    """:func:`convolution.conv_sums` as one float32 GEMM whose im2col matrix is built from the IFM in one pass (padding,
    zero point and upscale in place), or None when that is not its case (chunked, float64 or int64 sums,
    several stripes, not an int32 IFM): then :func:`convolution.conv_sums`."""
    O, KH, KW, I = weights.shape
    K = KH * KW * I
    oh, ow = op.ofm.height, op.ofm.width
    if ifm.dtype != np.int32 or ifm.shape[2] != I or oh * ow * K > IM2COL_STRIPE_ELEMENTS:
        return None
    if oh * ow * K * O > conv.STRIPE_MACS:
        return None
    prod = max(abs_max(ifm, op.ifm.zero_point) * weights_entry(weights)["amax"], 1)
    if (conv.EXACT_F32 - 1) // prod < K:
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
    return cols @ gemm_weights(weights, np.float32)


def fused_depthwise(op, ifm, weights, bias_scale, lut):
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
              and abs_max(x, zp_in) * weights_entry(weights)["amax"] * k.elements < DEPTHWISE_INT32_SUMS)
    if _depthwise_requant_kernel(x, w, zp_in, k.stride_y, k.stride_x, k.dilation_y, k.dilation_x,
                                 top, left, hh, ww, up, narrow, *params, out):
        return None
    return out


def _rows_read(n, up):
    """IFM rows (or columns) behind ``n`` rows of the padded IFM."""
    return n if up == 0 else (n + 1) // 2


def _depthwise_weights(weights):
    """(KH, KW, C) int32 of DEPTHWISE weights (O, KH, KW, 1), kept with the GEMM forms of the same array."""
    w = weights_entry(weights).get("dw")
    if w is None:
        w = np.array(np.transpose(weights[:, :, :, 0], (1, 2, 0)), dtype=np.int32, order="C")
        add_form(weights, "dw", w)  # writeable for the kernel's signature; never written
    return w

