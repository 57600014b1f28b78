"""``aten::convolution.out`` (``op_convolution.cpp``): 1-d and 2-d convolutions, plain and transposed, grouped and
dilated, in float32.

The sums use numpy's float32 matrix products, whose summation order differs from the C++ loops in the last bits,
well inside the runner's BundleIO tolerance (atol = rtol = 0.01). Work reported: multiply-accumulates.
"""

from __future__ import annotations

import numpy as np

from ...error import Error, RuntimeFailure
from .._util import arr, ints, opt_arr, out_tensor, write_out
from ..registry import kernel


def _conv_forward(x, w, b, stride, padding, dilation, groups):
    """x (N, C, H, W), w (O, C/groups, KH, KW) -> (N, O, OH, OW) in float32."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    sh, sw = stride
    ph, pw = padding
    dh, dw = dilation
    if c != cg * groups or o % groups:
        raise RuntimeFailure(Error.InvalidArgument, f"convolution: {c} input channels, weight {w.shape}, "
                                                    f"groups {groups} do not fit")
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw))) if (ph or pw) else x
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    oh = (xp.shape[2] - eh) // sh + 1
    ow = (xp.shape[3] - ew) // sw + 1
    if oh <= 0 or ow <= 0:
        raise RuntimeFailure(Error.InvalidArgument, "convolution: the kernel is larger than the padded input")
    win = np.lib.stride_tricks.sliding_window_view(xp, (eh, ew), axis=(2, 3))  # N, C, OH', OW', eh, ew
    win = win[:, :, ::sh, ::sw, ::dh, ::dw][:, :, :oh, :ow]                    # N, C, OH, OW, KH, KW
    og = o // groups
    # patches: N, G, Cg*KH*KW, OH*OW
    p = win.reshape(n, groups, cg, oh, ow, kh, kw).transpose(0, 1, 2, 5, 6, 3, 4).reshape(
        n, groups, cg * kh * kw, oh * ow)
    wm = w.reshape(groups, og, cg * kh * kw)
    r = np.matmul(wm[None], p.astype(np.float32, copy=False))                # N, G, Og, OH*OW
    r = r.reshape(n, o, oh, ow)
    if b is not None:
        r = r + b.reshape(1, o, 1, 1)
    return r.astype(np.float32, copy=False), n * o * oh * ow * cg * kh * kw


def _conv_transpose(x, w, b, stride, padding, dilation, groups, out_hw):
    """x (N, C, H, W), w (C, O/groups, KH, KW) -> (N, O, OH, OW) (``out_hw`` from the out tensor)."""
    n, c, h, wd = x.shape
    cin, og, kh, kw = w.shape
    sh, sw = stride
    ph, pw = padding
    dh, dw = dilation
    if cin != c or c % groups:
        raise RuntimeFailure(Error.InvalidArgument, f"convolution (transposed): {c} input channels, weight "
                                                    f"{w.shape}, groups {groups} do not fit")
    oh, ow = out_hw
    cg = c // groups
    full_h = (h - 1) * sh + (kh - 1) * dh + 1
    full_w = (wd - 1) * sw + (kw - 1) * dw + 1
    acc = np.zeros((n, groups * og, max(full_h, oh + ph), max(full_w, ow + pw)), np.float32)
    for g in range(groups):
        xg = x[:, g * cg:(g + 1) * cg]
        wg = w[g * cg:(g + 1) * cg]
        for ky in range(kh):
            for kx in range(kw):
                contrib = np.einsum("nchw,co->nohw", xg, wg[:, :, ky, kx]).astype(np.float32)
                y0, x0 = ky * dh, kx * dw
                acc[:, g * og:(g + 1) * og, y0:y0 + (h - 1) * sh + 1:sh, x0:x0 + (wd - 1) * sw + 1:sw] += contrib
    r = acc[:, :, ph:ph + oh, pw:pw + ow]
    if b is not None:
        r = r + b.reshape(1, -1, 1, 1)
    return r.astype(np.float32, copy=False), n * c * h * wd * og * kh * kw


@kernel("aten::convolution.out", "T,T,T?,I,I,I,b,I,i")
def convolution(ctx, args):
    """``aten::convolution.out(input, weight, bias?, stride, padding, dilation, transposed, output_padding,
    groups, *, out)`` for 1-d and 2-d convolutions (plain and transposed, grouped, dilated)."""
    out = out_tensor(args)
    x = arr(ctx, args[0], "input").astype(np.float32, copy=False)
    w = arr(ctx, args[1], "weight").astype(np.float32, copy=False)
    b = opt_arr(ctx, args[2], "bias")
    b = None if b is None else b.astype(np.float32, copy=False)
    spatial = x.ndim - 2
    if spatial not in (1, 2) or w.ndim != x.ndim:
        raise RuntimeFailure(Error.NotSupported, f"convolution: {x.ndim}-d input with {w.ndim}-d weight; "
                                                 f"1-d and 2-d convolutions are supported")
    stride = ints(ctx, args[3], spatial, [1])
    padding = ints(ctx, args[4], spatial, [0])
    dilation = ints(ctx, args[5], spatial, [1])
    transposed = bool(args[6])
    groups = int(args[8])
    if spatial == 1:
        x, w = x[:, :, None, :], w[:, :, None, :]
        stride, padding, dilation = [1] + stride, [0] + padding, [1] + dilation
    if transposed:
        osz = out.sizes
        out_hw = (1, osz[-1]) if spatial == 1 else (osz[-2], osz[-1])
        r, macs = _conv_transpose(x, w, b, stride, padding, dilation, groups, out_hw)
    else:
        r, macs = _conv_forward(x, w, b, stride, padding, dilation, groups)
    if spatial == 1:
        r = r[:, :, 0, :]
    return write_out(ctx, out, r, "convolution", macs)
