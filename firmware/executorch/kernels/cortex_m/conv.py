"""The ``cortex_m::`` convolutions: ``quantized_conv2d``, ``quantized_depthwise_conv2d``,
``quantized_transpose_conv2d`` and their ``_nhwc`` explicit-layout variants.

**Convolution** (``arm_convolve_wrapper_s8``) and **depthwise** (``arm_depthwise_conv_wrapper_s8``):
``bias + sum((x + input_offset) * w)`` with padding contributing nothing, per-channel requantization, output
offset, activation clamp. The wrapper's 1xN path (input height 1, ``stride_w * C % 4 == 0``) places the last
window's taps the way CMSIS-NN does (it assumes the right-hand taps fall in padding, so a "valid" convolution
whose window does not reach the input's end reads padding there, and it fails when ``2 * pad + odd != total
padding``); depthwise with one input channel becomes a convolution, as the MVE wrapper does. **Transposed**
(``arm_transpose_conv_wrapper_s8``): each input pixel's products added into the output window, no dilation.
Work reported: multiply-accumulates.
"""

from __future__ import annotations

import numpy as np

from ...error import Error, RuntimeFailure
from ...method import RtTensor
from .._util import out_tensor, tensor, wrap32
from ._common import (
    ARG_ERROR, CH_IN_BLOCK_MVE, FAILURE, INT, CmsisStatus, as_int, channels_last, contiguous, fail, is_i8,
    layout_variants, nhwc_sizes, raw32, raw8, store8, window_taps)
from .fixed_point import requantize, to_i8


def _operands(args):
    """The input, weight and out tensors and the optional bias (arguments 0, 1 and 2) of every convolution."""
    x, w, out = tensor(args[0], "input"), tensor(args[1], "weight"), out_tensor(args)
    return x, w, out, (tensor(args[2], "bias") if args[2] is not None else None)


def _requantization_args(args, k: int):
    """Arguments ``k`` to ``k + 5`` of every convolution: input_offset, output_offset, the per-channel
    requantize_multipliers and requantize_shifts tensors, activation_min, activation_max."""
    in_off, out_off = as_int(args[k], "input_offset"), as_int(args[k + 1], "output_offset")
    mt, st = tensor(args[k + 2], "requantize_multipliers"), tensor(args[k + 3], "requantize_shifts")
    amin, amax = as_int(args[k + 4], "activation_min"), as_int(args[k + 5], "activation_max")
    return in_off, out_off, mt, st, amin, amax


def _check_4d(fn: str, x: RtTensor, w: RtTensor, out: RtTensor) -> None:
    if len(x.sizes) != 4 or len(w.sizes) != 4 or len(out.sizes) != 4:
        fail(Error.InvalidArgument, f"{fn}: tensors must be 4-D")


def _channel_values(ctx, bias, mt: RtTensor, st: RtTensor, o: int):
    """The bias (None without one), multipliers and shifts of the ``o`` output channels, as int64."""
    bv = raw32(ctx, bias)[:o].astype(np.int64) if bias is not None else None
    return bv, raw32(ctx, mt)[:o].astype(np.int64), raw32(ctx, st)[:o].astype(np.int64)


def _check_conv_operands(fn, x, w, out, bias, stride, padding, dilation, nhwc_logical, length_message=None):
    """The argument checks the C++ convolution kernels share (their own messages kept; no length check when
    ``length_message`` is None, as in the transposed convolution)."""
    _check_activation_layout(fn, x, out, nhwc_logical)
    if not (is_i8(x) and is_i8(out)):
        fail(Error.InvalidArgument, f"{fn}: input and output must be int8")
    if not is_i8(w):
        fail(Error.InvalidArgument, f"{fn}: weight must be int8")
    if bias is not None and bias.scalar_type != INT:
        fail(Error.InvalidArgument, f"{fn}: bias must be int32 if provided")
    if length_message is not None and (len(stride) != 2 or len(padding) != 2 or len(dilation) != 2):
        fail(Error.InvalidArgument, f"{fn}: {length_message}")


def _check_activation_layout(fn: str, x: RtTensor, out: RtTensor, nhwc_logical: bool) -> None:
    if nhwc_logical:
        if not (contiguous(x) and contiguous(out)):
            fail(Error.InvalidArgument, f"{fn}: input and output must have contiguous dim_order")
    elif not (channels_last(x) and channels_last(out)):
        fail(Error.InvalidArgument, f"{fn}: input and output must have channels_last dim_order")


def _taps_1xn(in_w: int, out_w: int, k: int, stride: int, pad: int) -> np.ndarray:
    """Window taps of CMSIS-NN's ``arm_convolve_1_x_n_s8`` (MVE) along the width, including its right-edge rule.

    Raises ``CmsisStatus`` where it returns ARM_CMSIS_NN_FAILURE; returns ``None`` when it falls back to
    ``arm_convolve_s8`` (plain windows).
    """
    total = (out_w - 1) * stride + k - in_w
    asym = int(np.fmod(total, 2))  # C remainder: negative for a negative total
    if pad * 2 + asym != total:
        raise CmsisStatus(FAILURE)
    right_n = max(1, int(np.trunc((pad + asym + stride - 1) / stride))) if pad + asym != 0 else 0
    left_n = max(1, (pad + stride - 1) // stride) if pad != 0 else 0
    mid_n = max(out_w - (right_n + left_n), 0)
    if right_n + mid_n + left_n != out_w:
        return None
    taps = window_taps(in_w, out_w, k, stride, pad, 1)
    if stride * left_n - pad < 0:
        raise CmsisStatus(FAILURE)
    # right-padded rows: the buffer holds k-1 inputs from the row's start, then padding
    start = stride * (left_n + mid_n) - pad
    for r in range(right_n):
        o = left_n + mid_n + r
        for t in range(k):
            pos = r * stride + t  # offset in the im2col buffer (in pixels)
            taps[o, t] = start + pos if pos < k - 1 and 0 <= start + pos < in_w else -1
    return taps


def _conv_core(x: np.ndarray, w: np.ndarray, taps_h: np.ndarray, taps_w: np.ndarray, input_offset: int,
               groups: int) -> np.ndarray:
    """Sum of ``(x + input_offset) * w`` over the windows (taps -1 contribute nothing): int64 (N, OH, OW, O).

    x: (N, H, W, C) int8; w: (O, KH, KW, KC) int8.
    """
    n, h, wd, c = x.shape
    o, kh, kw, kc = w.shape
    oh, ow = taps_h.shape[0], taps_w.shape[0]
    xo = x.astype(np.float64) + input_offset
    xo = np.concatenate([xo, np.zeros((n, 1, wd, c))], axis=1)       # row h: padding
    xo = np.concatenate([xo, np.zeros((n, h + 1, 1, c))], axis=2)    # column w: padding
    th = np.where(taps_h < 0, h, taps_h)
    tw = np.where(taps_w < 0, wd, taps_w)
    # im2col: (N, OH, OW, KH, KW, C)
    cols = xo[:, th[:, None, :, None], tw[None, :, None, :], :]
    og = o // groups
    out = np.empty((n, oh, ow, o), dtype=np.float64)
    for g in range(groups):
        a = cols[..., g * kc:(g + 1) * kc].reshape(n * oh * ow, kh * kw * kc)
        b = w[g * og:(g + 1) * og].reshape(og, kh * kw * kc).astype(np.float64)
        out[..., g * og:(g + 1) * og] = (a @ b.T).reshape(n, oh, ow, og)
    return out.astype(np.int64)


def _finish(acc: np.ndarray, bias, mults: np.ndarray, shifts: np.ndarray, out_off: int, amin: int, amax: int):
    """bias, per-channel requantization (last axis), output offset, activation clamp, int8 store value."""
    if bias is not None:
        acc = acc + bias
    r = requantize(wrap32(acc), mults, shifts)
    r = np.minimum(np.maximum(wrap32(r + out_off), amin), amax)
    return to_i8(r)


@layout_variants("quantized_conv2d", "T,T,T?,I,I,I,i,i,T,T,i,i,T")
def _conv2d_impl(ctx, args, nhwc_logical: bool):
    """``cortex_m::quantized_conv2d.out`` and ``_nhwc.out`` (arm_convolve_wrapper_s8)."""
    fn = "quantized_conv2d_nhwc_out" if nhwc_logical else "quantized_conv2d_out"
    x, w, out, bias = _operands(args)
    stride, padding, dilation = ctx.int_list(args[3]), ctx.int_list(args[4]), ctx.int_list(args[5])
    in_off, out_off, mt, st, amin, amax = _requantization_args(args, 6)
    scratch = tensor(args[12], "scratch")
    _check_4d(fn, x, w, out)
    _check_conv_operands(fn, x, w, out, bias, stride, padding, dilation, nhwc_logical,
                         "stride, padding, and dilation must have length 2")
    n, h, wd, c = nhwc_sizes(x, nhwc_logical)
    _, oh, ow, o = nhwc_sizes(out, nhwc_logical)
    if mt.numel != o or st.numel != o or (mt.sizes and mt.sizes[0] != o) or (st.sizes and st.sizes[0] != o):
        fail(Error.InvalidArgument, f"{fn}: per-channel params must match output channels ({o})")
    ko, kh, kw, kc = w.sizes
    xv = raw8(ctx, x)[:n * h * wd * c].reshape(n, h, wd, c)
    wv = raw8(ctx, w)[:ko * kh * kw * kc].reshape(ko, kh, kw, kc)
    bv, mv, sv = _channel_values(ctx, bias, mt, st, o)
    try:
        r = convolve_wrapper_s8(xv, wv, bv, (oh, ow, o), stride, padding, dilation, in_off, out_off, mv, sv,
                                amin, amax, scratch.nbytes)
    except CmsisStatus as e:
        fail(Error.Internal, f"{fn}: arm_convolve_wrapper_s8 failed with status {e.status}")
    store8(ctx, out, r, "quantized_conv2d", n * oh * ow * o * kh * kw * kc)
    return out


def convolve_wrapper_s8(xv, wv, bias, out_dims, stride, padding, dilation, in_off, out_off, mults, shifts, amin, amax,
                      scratch_bytes):
    """``arm_convolve_wrapper_s8`` (MVE): the path choice and its window placement, then the shared arithmetic."""
    n, h, wd, c = xv.shape
    ko, kh, kw, kc = wv.shape
    oh, ow, o = out_dims
    sh, sw = stride
    ph, pw = padding
    dh, dw = dilation
    if ko != o:
        raise CmsisStatus(ARG_ERROR)
    taps_w = None
    if ph == 0 and pw == 0 and kh == 1 and kw == 1 and dh == 1 and dw == 1 and c == kc:
        pass  # arm_convolve_1x1_s8(_fast): plain strided windows, no buffer needed
    elif h == 1 and dw == 1 and kh == 1 and (sw * c) % 4 == 0 and c == kc:
        if scratch_bytes == 0 or sw == 0:
            raise CmsisStatus(ARG_ERROR)
        taps_w = _taps_1xn(wd, ow, kw, sw, pw)
    else:
        if scratch_bytes == 0:
            raise CmsisStatus(ARG_ERROR)
    if kc == 0 or c % kc:
        raise CmsisStatus(ARG_ERROR)
    groups = c // kc
    if o % groups:
        raise CmsisStatus(ARG_ERROR)
    taps_h = window_taps(h, oh, kh, sh, ph, dh)
    if taps_w is None:
        taps_w = window_taps(wd, ow, kw, sw, pw, dw)
    acc = _conv_core(xv, wv, taps_h, taps_w, in_off, groups)
    return _finish(acc, bias, mults, shifts, out_off, amin, amax)


@layout_variants("quantized_depthwise_conv2d", "T,T,T?,I,I,I,i,i,i,T,T,i,i,T")
def _depthwise_impl(ctx, args, nhwc_logical: bool):
    """``cortex_m::quantized_depthwise_conv2d.out`` and ``_nhwc.out`` (arm_depthwise_conv_wrapper_s8; weight
    ``[1, KH, KW, O]``)."""
    fn = "quantized_depthwise_conv2d_nhwc_out" if nhwc_logical else "quantized_depthwise_conv2d_out"
    x, w, out, bias = _operands(args)
    stride, padding, dilation = ctx.int_list(args[3]), ctx.int_list(args[4]), ctx.int_list(args[5])
    mult = as_int(args[6], "depth_multiplier")
    in_off, out_off, mt, st, amin, amax = _requantization_args(args, 7)
    scratch = tensor(args[13], "scratch")
    _check_4d(fn, x, w, out)
    if x.sizes[0] != 1:
        fail(Error.InvalidArgument, f"{fn}: batch size must be 1, got {x.sizes[0]}")
    if w.sizes[0] != 1:
        fail(Error.InvalidArgument, f"{fn}: weight dim 0 must be 1, got {w.sizes[0]}")
    n, h, wd, c = nhwc_sizes(x, nhwc_logical)
    _, oh, ow, o = nhwc_sizes(out, nhwc_logical)
    if w.sizes[3] != o:
        fail(Error.InvalidArgument, f"{fn}: weight out_ch ({w.sizes[3]}) != out_ch ({o})")
    _check_conv_operands(fn, x, w, out, bias, stride, padding, dilation, nhwc_logical,
                         "stride/padding/dilation must have length 2")
    if o != c * mult:
        fail(Error.InvalidArgument, f"{fn}: out_ch ({o}) != in_ch ({c}) * depth_mult ({mult})")
    if mt.numel != o or st.numel != o:
        fail(Error.InvalidArgument, f"{fn}: per-ch params size != out_ch ({o})")
    _, kh, kw, _ = w.sizes
    xv = raw8(ctx, x)[:n * h * wd * c].reshape(n, h, wd, c)
    wv = raw8(ctx, w)[:kh * kw * o].reshape(kh, kw, o)
    bv, mv, sv = _channel_values(ctx, bias, mt, st, o)
    try:
        r = depthwise_conv_wrapper_s8(xv, wv, bv, (oh, ow, o), stride, padding, dilation, mult, in_off, out_off,
                                      mv, sv, amin, amax, scratch.nbytes)
    except CmsisStatus as e:
        fail(Error.Internal, f"{fn}: arm_depthwise_conv_wrapper_s8 failed with status {e.status}")
    store8(ctx, out, r, "quantized_depthwise_conv2d", n * oh * ow * o * kh * kw)
    return out


def depthwise_conv_wrapper_s8(xv, wv, bias, out_dims, stride, padding, dilation, mult, in_off, out_off, mults,
                              shifts, amin, amax, scratch_bytes):
    """``arm_depthwise_conv_wrapper_s8`` (MVE): x (N, H, W, C), w (KH, KW, O) -> (N, OH, OW, O) int8."""
    c, o = xv.shape[3], wv.shape[2]
    if c == 1 and o > 1:
        # one input channel becomes a regular convolution (filter transposed to [O, KH, KW, 1])
        return convolve_wrapper_s8(xv, wv.transpose(2, 0, 1)[..., None], bias, out_dims, stride, padding, dilation,
                                   in_off, out_off, mults, shifts, amin, amax, scratch_bytes)
    return _depthwise(xv, wv, bias, out_dims, stride, padding, dilation, mult, in_off, out_off, mults, shifts, amin,
                      amax, scratch_bytes)


def _depthwise(xv, wv, bias, out_dims, stride, padding, dilation, mult, in_off, out_off, mults, shifts, amin, amax,
               scratch_bytes):
    """``arm_depthwise_conv_s8_opt`` / ``arm_depthwise_conv_s8``: out channel ``o`` reads input ``o // mult``."""
    n, h, wd, c = xv.shape
    kh, kw, o = wv.shape
    oh, ow, _ = out_dims
    if mult == 1 and n == 1 and dilation[0] == 1 and dilation[1] == 1:
        if c != o or (scratch_bytes == 0 and 4 * CH_IN_BLOCK_MVE * kh * kw > 0):
            raise CmsisStatus(ARG_ERROR)
    taps_h = window_taps(h, oh, kh, stride[0], padding[0], dilation[0])
    taps_w = window_taps(wd, ow, kw, stride[1], padding[1], dilation[1])
    xo = xv.astype(np.int64) + in_off
    xo = np.concatenate([xo, np.zeros((n, 1, wd, c), dtype=np.int64)], axis=1)
    xo = np.concatenate([xo, np.zeros((n, h + 1, 1, c), dtype=np.int64)], axis=2)
    th = np.where(taps_h < 0, h, taps_h)
    tw = np.where(taps_w < 0, wd, taps_w)
    ch = np.arange(o) // mult
    acc = np.zeros((n, oh, ow, o), dtype=np.int64)
    wl = wv.astype(np.int64)
    for i in range(kh):
        rows = xo[:, th[:, i], :, :]                 # (N, OH, W+1, C)
        for j in range(kw):
            patch = rows[:, :, tw[:, j], :]           # (N, OH, OW, C)
            acc += patch[..., ch] * wl[i, j]
    return _finish(acc, bias, mults, shifts, out_off, amin, amax)


def transpose_conv_s8(xv, wv, bias, out_dims, stride, padding, in_off, out_off, mults, shifts, amin, amax):
    """``arm_transpose_conv_wrapper_s8``: x (N, H, W, I), w (O, KH, KW, I) -> (N, OH, OW, O) int8.

    Input pixel (i, j) adds ``(x + input_offset) * w[:, ky, kx, :]`` to output ``(i*sh - ph + ky, j*sw - pw + kx)``;
    outputs outside the output size are dropped (the output size carries any output padding). Neither CMSIS-NN
    path applies a dilation (the reverse-convolution one sets it to 1), so none is applied here."""
    n, h, wd, c = xv.shape
    o, kh, kw, _ = wv.shape
    oh, ow, _ = out_dims
    xo = xv.astype(np.float64) + in_off
    acc = np.zeros((n, oh, ow, o), dtype=np.float64)
    prod = np.einsum("nhwc,okjc->nhwkjo", xo, wv.astype(np.float64))  # (N, H, W, KH, KW, O)
    for ky in range(kh):
        ys = np.arange(h) * stride[0] - padding[0] + ky
        vy = (ys >= 0) & (ys < oh)
        for kx in range(kw):
            xs = np.arange(wd) * stride[1] - padding[1] + kx
            vx = (xs >= 0) & (xs < ow)
            if vy.any() and vx.any():
                acc[:, ys[vy][:, None], xs[vx][None, :], :] += prod[:, vy][:, :, vx][:, :, :, ky, kx, :]
    return _finish(acc.astype(np.int64), bias, mults, shifts, out_off, amin, amax)


@layout_variants("quantized_transpose_conv2d", "T,T,T?,I,I,I,I,i,i,T,T,i,i,T,T")
def _transpose_conv_impl(ctx, args, nhwc_logical: bool):
    """``cortex_m::quantized_transpose_conv2d.out`` and ``_nhwc.out`` (arm_transpose_conv_wrapper_s8; weight
    ``[O, KH, KW, I]``)."""
    fn = "quantized_transpose_conv2d_nhwc_out" if nhwc_logical else "quantized_transpose_conv2d_out"
    x, w, out, bias = _operands(args)
    stride, padding = ctx.int_list(args[3]), ctx.int_list(args[4])
    out_pad, dilation = ctx.int_list(args[5]), ctx.int_list(args[6])
    in_off, out_off, mt, st, amin, amax = _requantization_args(args, 7)
    scratch, out_scratch = tensor(args[13], "scratch"), tensor(args[14], "output_scratch")
    _check_4d(fn, x, w, out)
    _check_conv_operands(fn, x, w, out, bias, None, None, None, nhwc_logical)
    n, h, wd, c = nhwc_sizes(x, nhwc_logical)
    _, oh, ow, o = nhwc_sizes(out, nhwc_logical)
    if mt.numel != o or st.numel != o:
        fail(Error.InvalidArgument, f"{fn}: per-channel params must match output channels ({o})")
    ko, kh, kw, kc = w.sizes
    if ko != o:
        fail(Error.InvalidArgument, f"{fn}: weight out_ch ({ko}) != out_ch ({o})")
    if len(stride) != 2 or len(padding) != 2 or len(dilation) != 2 or len(out_pad) != 2:
        raise RuntimeFailure(Error.InvalidArgument, f"{fn}: stride/padding/output_padding/dilation need 2 values")
    if scratch.nbytes == 0 or (stride[0] <= 2 and stride[1] <= 2 and c > 16 and out_scratch.nbytes == 0):
        fail(Error.Internal, f"{fn}: arm_transpose_conv_wrapper_s8 failed with status {ARG_ERROR}")
    if kc != c:
        fail(Error.Internal, f"{fn}: arm_transpose_conv_wrapper_s8 failed with status {ARG_ERROR}")
    bv = raw32(ctx, bias)[:o].astype(np.int64) if bias is not None else None
    r = transpose_conv_s8(raw8(ctx, x)[:n * h * wd * c].reshape(n, h, wd, c),
                          raw8(ctx, w)[:o * kh * kw * c].reshape(o, kh, kw, c), bv, (oh, ow, o), stride, padding,
                          in_off, out_off, raw32(ctx, mt)[:o].astype(np.int64),
                          raw32(ctx, st)[:o].astype(np.int64), amin, amax)
    store8(ctx, out, r, "quantized_transpose_conv2d", n * h * wd * c * kh * kw * o)
    return out
