"""The ``cortex_m::`` pools: ``quantized_avg_pool2d`` and ``quantized_max_pool2d`` (and ``_nhwc`` variants).

**Average pool** (``arm_avgpool_s8``): the sum over the window clipped to the input, divided by the number of
elements with ``sum > 0 ? (sum + n/2) / n : (sum - n/2) / n`` (C division, truncating). **Max pool**
(``arm_max_pool_s8``): the maximum over the clipped window, then the activation clamp. Work reported: window
elements read.
"""

from __future__ import annotations

import numpy as np

from ...error import Error, RuntimeFailure
from ...method import RtTensor
from .._util import out_tensor, tensor, wrap32
from ._common import (
    ARG_ERROR, CmsisStatus, as_bool, as_int, channels_last, contiguous, fail, is_i8, layout_variants,
    nhwc_sizes, raw8, store8, window_taps)
from .fixed_point import I32_MAX, I32_MIN, to_i8


def _pool_config(ctx, fn: str, x: RtTensor, out: RtTensor, kernel, stride, padding, dilation, ceil_mode: bool,
                 amin: int, amax: int, nhwc_logical: bool, allow_ceil: bool):
    """``prepare_cmsis_pool2d_config``: checks, then (N, H, W, C), (OH, OW), kernel, stride, padding."""
    if len(x.sizes) != 4 or len(out.sizes) != 4:
        fail(Error.InvalidArgument, f"{fn}: tensors must be 4-D")
    if not (is_i8(x) and is_i8(out)):
        fail(Error.InvalidArgument, f"{fn}: tensors must be int8")
    cd = 3 if nhwc_logical else 1
    if x.sizes[0] != out.sizes[0] or x.sizes[cd] != out.sizes[cd]:
        fail(Error.InvalidArgument, f"{fn}: batch and channel dimensions must match between input and output")
    if nhwc_logical:
        if not (contiguous(x) and contiguous(out)):
            fail(Error.InvalidArgument, f"{fn}: tensors must use contiguous dimension order")
    elif not (channels_last(x) and channels_last(out)):
        fail(Error.InvalidArgument, f"{fn}: tensors must use channels_last dimension order")
    for name, v in (("kernel_size", kernel), ("stride", stride), ("padding", padding), ("dilation", dilation)):
        if len(v) != 2:
            fail(Error.InvalidArgument, f"{fn}: {name} must have length 2")
    if ceil_mode and not allow_ceil:
        fail(Error.InvalidArgument, f"{fn}: ceil_mode=True is not supported")
    if amin > amax:
        fail(Error.InvalidArgument, f"{fn}: activation_min ({amin}) must be <= activation_max ({amax})")
    for name, v in (("activation_min", amin), ("activation_max", amax)):
        if not I32_MIN <= v <= I32_MAX:
            fail(Error.InvalidArgument, f"{fn}: {name} value ({v}) exceeds int32_t range")
    if dilation[0] != 1 or dilation[1] != 1:
        fail(Error.InvalidArgument, f"{fn}: dilation other than 1 is unsupported")
    n, h, w, c = nhwc_sizes(x, nhwc_logical)
    _, oh, ow, _ = nhwc_sizes(out, nhwc_logical)
    return (n, h, w, c), (oh, ow)


def avgpool_s8(xv, kernel, stride, padding, out_hw, amin, amax):
    """``arm_avgpool_s8``: x (N, H, W, C) int8 -> ((N, OH, OW, C) int8, elements read)."""
    n, h, w, c = xv.shape
    oh, ow = out_hw
    y0 = np.maximum(np.arange(oh) * stride[0] - padding[0], 0)
    y1 = np.minimum(np.arange(oh) * stride[0] - padding[0] + kernel[0], h)
    x0 = np.maximum(np.arange(ow) * stride[1] - padding[1], 0)
    x1 = np.minimum(np.arange(ow) * stride[1] - padding[1] + kernel[1], w)
    count = np.maximum(y1 - y0, 0)[:, None] * np.maximum(x1 - x0, 0)[None, :]
    if n < 1 or (count <= 0).any():
        raise CmsisStatus(ARG_ERROR)
    integral = np.zeros((n, h + 1, w + 1, c), dtype=np.int64)
    integral[:, 1:, 1:, :] = xv.astype(np.int64).cumsum(axis=1).cumsum(axis=2)
    y0c, y1c = np.clip(y0, 0, h), np.clip(y1, 0, h)
    x0c, x1c = np.clip(x0, 0, w), np.clip(x1, 0, w)
    s = (integral[:, y1c][:, :, x1c] - integral[:, y0c][:, :, x1c]
         - integral[:, y1c][:, :, x0c] + integral[:, y0c][:, :, x0c])
    s = wrap32(s)
    cnt = count[None, :, :, None]
    half = cnt // 2
    num = np.where(s > 0, s + half, s - half)
    q = np.sign(num) * (np.abs(num) // cnt)  # C division truncates toward zero
    return to_i8(np.minimum(np.maximum(q, amin), amax)), int(count.sum()) * n * c


def max_pool_s8(xv, kernel, stride, padding, out_hw, amin, amax, stale=None):
    """``arm_max_pool_s8``: the maximum over each window clipped to the input; an empty window leaves the output
    byte as it was (``stale``); then the clamp with ``(int8_t)`` bounds, as the MVE ``clamp_output`` does."""
    n, h, w, c = xv.shape
    oh, ow = out_hw
    sentinel = np.int16(-1000)
    xp = np.concatenate([xv.astype(np.int16), np.full((n, 1, w, c), sentinel, dtype=np.int16)], axis=1)
    xp = np.concatenate([xp, np.full((n, h + 1, 1, c), sentinel, dtype=np.int16)], axis=2)
    th = window_taps(h, oh, kernel[0], stride[0], padding[0], 1)
    tw = window_taps(w, ow, kernel[1], stride[1], padding[1], 1)
    th = np.where(th < 0, h, th)
    tw = np.where(tw < 0, w, tw)
    res = np.full((n, oh, ow, c), sentinel, dtype=np.int16)
    for i in range(kernel[0]):
        rows = xp[:, th[:, i], :, :]
        for j in range(kernel[1]):
            np.maximum(res, rows[:, :, tw[:, j], :], out=res)
    if stale is None:
        stale = np.zeros((n, oh, ow, c), dtype=np.int8)
    res = np.where(res == sentinel, stale.astype(np.int16), res)
    lo, hi = int(to_i8(amin)), int(to_i8(amax))
    return np.minimum(np.maximum(res, lo), hi).astype(np.int8)


@layout_variants("quantized_avg_pool2d", "T,I,I,I,b,i,i,i,T")
def _avg_pool_impl(ctx, args, nhwc_logical: bool):
    """``cortex_m::quantized_avg_pool2d.out`` and ``_nhwc.out`` (arm_avgpool_s8; the qparams are not used by the
    kernel)."""
    fn = "quantized_avg_pool2d_out"
    x, out = tensor(args[0], "input"), out_tensor(args)
    kernel, stride, padding = ctx.int_list(args[1]), ctx.int_list(args[2]), ctx.int_list(args[3])
    ceil_mode = as_bool(args[4], "ceil_mode")
    (n, h, w, c), (oh, ow) = _pool_config(ctx, fn, x, out, kernel, stride, padding, [1, 1], ceil_mode, -128, 127,
                                          nhwc_logical, allow_ceil=True)

    def expected(inp, k, s, p):
        num = inp + 2 * p - k
        o = int(np.trunc(num / s)) + 1 if s else 0
        if ceil_mode and int(np.fmod(num, s)) != 0:
            o += 1
        if ceil_mode and (o - 1) * s >= inp + p:
            o -= 1
        return o

    if stride[0] == 0 or stride[1] == 0:
        raise RuntimeFailure(Error.InvalidArgument, f"{fn}: zero stride")
    eh, ew = expected(h, kernel[0], stride[0], padding[0]), expected(w, kernel[1], stride[1], padding[1])
    if (oh, ow) != (eh, ew):
        fail(Error.InvalidArgument, f"{fn}: output shape mismatch - actual: ({oh}, {ow}) expected: ({eh}, {ew})")
    try:
        q, reads = avgpool_s8(raw8(ctx, x)[:n * h * w * c].reshape(n, h, w, c), kernel, stride, padding, (oh, ow),
                              -128, 127)
    except CmsisStatus as e:
        fail(Error.Internal, f"{fn}: arm_avgpool_s8 failed with status [{e.status}]")
    store8(ctx, out, q, "quantized_avg_pool2d", reads)
    return out


@layout_variants("quantized_max_pool2d", "T,I,I,I,I,b,i,i,i,i")
def _max_pool_impl(ctx, args, nhwc_logical: bool):
    """``cortex_m::quantized_max_pool2d.out`` and ``_nhwc.out`` (arm_max_pool_s8)."""
    fn = "quantized_max_pool2d_out"
    x, out = tensor(args[0], "input"), out_tensor(args)
    kernel, stride = ctx.int_list(args[1]), ctx.int_list(args[2])
    padding, dilation = ctx.int_list(args[3]), ctx.int_list(args[4])
    ceil_mode = as_bool(args[5], "ceil_mode")
    in_zp, out_zp = as_int(args[6], "input_zero_point"), as_int(args[7], "output_zero_point")
    amin, amax = as_int(args[8], "activation_min"), as_int(args[9], "activation_max")
    (n, h, w, c), (oh, ow) = _pool_config(ctx, fn, x, out, kernel, stride, padding, dilation, ceil_mode, amin, amax,
                                          nhwc_logical, allow_ceil=False)
    for name, zp in (("input zero point", in_zp), ("output zero point", out_zp)):
        if not -128 <= zp <= 127:
            fail(Error.InvalidArgument, f"{fn}: {name} must be int8, got {zp}")
    if in_zp != out_zp:
        fail(Error.InvalidArgument, f"{fn}: input and output zero points must match")
    if n < 1:
        fail(Error.Internal, f"{fn}: arm_max_pool_s8 failed with status {ARG_ERROR}")
    stale = raw8(ctx, out)[:n * oh * ow * c].reshape(n, oh, ow, c)
    res = max_pool_s8(raw8(ctx, x)[:n * h * w * c].reshape(n, h, w, c), kernel, stride, padding, (oh, ow), amin, amax,
                      stale)
    store8(ctx, out, res, "quantized_max_pool2d", n * oh * ow * c * kernel[0] * kernel[1])
    return out
