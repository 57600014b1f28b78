"""Pooling: ``avg_pool2d``, ``max_pool2d_with_indices``, ``_adaptive_avg_pool2d``.

``avg_pool2d``: the window summed in float32 from its first in-bounds element, then divided by ``(float)count``
(bit for bit with the C++); ``_adaptive_avg_pool2d``: windows ``[floor(o * in / out), ceil((o + 1) * in / out))``
summed row by row. ``max_pool2d_with_indices`` returns flat positions in each input plane (int64), as PyTorch
does. Work reported: window elements read.
"""

from __future__ import annotations

import numpy as np

from .._util import arr, check, emit, ints, out_tensor, tensor, write_out
from ..registry import kernel


def _pool_bounds(size, k, s, p, ceil_mode):
    if ceil_mode:
        o = -(-(size + 2 * p - k) // s) + 1
        if (o - 1) * s >= size + p:
            o -= 1
    else:
        o = (size + 2 * p - k) // s + 1
    return o


@kernel("aten::avg_pool2d.out", "T,I,I,I,b,b,i?")
def avg_pool2d(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0]).astype(np.float32, copy=False)
    k = ctx.int_list(args[1])
    st = ctx.int_list(args[2]) or k
    pd = ctx.int_list(args[3]) or [0]
    kh, kw = (k * 2)[:2] if len(k) == 1 else k[:2]
    sh, sw = (st * 2)[:2] if len(st) == 1 else st[:2]
    ph, pw = (pd * 2)[:2] if len(pd) == 1 else pd[:2]
    ceil_mode = bool(args[4])
    include_pad = bool(args[5])
    divisor = args[6] if len(args) > 7 else None
    squeeze = x.ndim == 3
    if squeeze:
        x = x[None]
    n, c, h, w = x.shape
    oh = _pool_bounds(h, kh, sh, ph, ceil_mode)
    ow = _pool_bounds(w, kw, sw, pw, ceil_mode)
    hs = np.arange(oh) * sh - ph
    ws = np.arange(ow) * sw - pw
    he = np.minimum(hs + kh, h + ph)
    we = np.minimum(ws + kw, w + pw)
    pool = (he - hs)[:, None] * (we - ws)[None, :]
    hs0, ws0 = np.maximum(hs, 0), np.maximum(ws, 0)
    he0, we0 = np.minimum(he, h), np.minimum(we, w)
    valid = (he0 - hs0)[:, None] * (we0 - ws0)[None, :]
    # every tap of every window, in the C++ loop's order (row by row), each a float32 add; the input sits in a
    # field of zeros that covers every tap (padding, and windows that run past it in ceil mode): adding +0.0
    # leaves a sum that starts at +0.0 as it is (it is never -0.0), so the taps outside the input change nothing
    acc = np.zeros((n, c, oh, ow), np.float32)
    if acc.size:
        fh, fw = (oh - 1) * sh + kh, (ow - 1) * sw + kw
        field = np.zeros((n, c, fh, fw), np.float32)
        rows, cols = min(h, max(0, fh - ph)), min(w, max(0, fw - pw))
        field[:, :, ph:ph + rows, pw:pw + cols] = x[:, :, :rows, :cols]
        for dy in range(kh):
            for dx in range(kw):
                acc += field[:, :, dy:dy + (oh - 1) * sh + 1:sh, dx:dx + (ow - 1) * sw + 1:sw]
    if divisor is not None and divisor != 0:
        d = np.full((oh, ow), float(divisor), np.float32)
    else:
        d = (pool if include_pad else valid).astype(np.float32)
    r = (acc / d).astype(np.float32)
    if squeeze:
        r = r[0]
    ctx.bus.work("kernel.avg_pool2d", x.size)
    dst = out.array(ctx.bus)
    dst[...] = r.reshape(dst.shape)
    return out


@kernel("aten::_adaptive_avg_pool2d.out", "T,I")
def adaptive_avg_pool2d(ctx, args):
    """``_adaptive_avg_pool2d.out(self, output_size)``: window ``[floor(o * in / out), ceil((o + 1) * in / out))``
    (the quotients in float), summed in float row by row, divided by ``(float)count``."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    osz = ctx.int_list(args[1])
    check(t.scalar_type == out.scalar_type, "adaptive_avg_pool2d: self and out types differ")
    check(t.dtype is not None and (t.dtype.kind == "f" or t.scalar_type == 4),
           f"adaptive_avg_pool2d: unsupported type {t.type_name}")
    x = t.array(ctx.bus)
    ok = (x.ndim == 3 and min(x.shape) > 0) or (x.ndim == 4 and min(x.shape[1:]) > 0)
    check(ok, f"adaptive_avg_pool2d: expected a 3-d or 4-d input, got {list(x.shape)}")
    check(len(osz) == 2 and osz[0] > 0 and osz[1] > 0, f"adaptive_avg_pool2d: bad output_size {osz}")
    oh, ow = osz
    ih, iw = x.shape[-2:]

    def bounds(o, n_out, n_in):
        i = np.arange(o, dtype=np.int64)
        start = np.floor((i * n_in).astype(np.float32) / np.float32(n_out)).astype(np.int64)
        end = np.ceil(((i + 1) * n_in).astype(np.float32) / np.float32(n_out)).astype(np.int64)
        return start, end

    hs, he = bounds(oh, oh, ih)
    ws, we = bounds(ow, ow, iw)
    xf = x.astype(np.float32)
    acc = np.zeros(x.shape[:-2] + (oh, ow), np.float32)
    for dy in range(int((he - hs).max())):
        yy = hs + dy
        my = yy < he
        for dx in range(int((we - ws).max())):
            xx = ws + dx
            m = my[:, None] & (xx < we)[None, :]
            v = xf[..., np.minimum(yy, ih - 1), :][..., np.minimum(xx, iw - 1)]
            acc = np.where(m, (acc + v).astype(np.float32), acc)
    cnt = ((he - hs)[:, None] * (we - ws)[None, :]).astype(np.float32)
    r = (acc / cnt).astype(np.float32)
    return emit(ctx, out, r.astype(x.dtype), "adaptive_avg_pool2d", x.size)


@kernel("aten::max_pool2d_with_indices.out", "T,I,I,I,I,b")
def max_pool2d_with_indices(ctx, args):
    """``aten::max_pool2d_with_indices.out(self, kernel_size, stride, padding, dilation, ceil_mode, *, out,
    indices)``; indices are flat positions in each input plane (int64), as PyTorch returns them."""
    out = tensor(args[6], "out")
    idx_out = tensor(args[7], "indices") if len(args) > 7 else None
    x = arr(ctx, args[0]).astype(np.float32, copy=False)
    kh, kw = ints(ctx, args[1], 2)[:2]
    sh, sw = (ints(ctx, args[2], 2) or [kh, kw])[:2]
    ph, pw = ints(ctx, args[3], 2, [0])[:2]
    dh, dw = ints(ctx, args[4], 2, [1])[:2]
    ceil_mode = bool(args[5])
    squeeze = x.ndim == 3
    if squeeze:
        x = x[None]
    n, c, h, w = x.shape

    def osize(size, k, s, p, d):
        eff = (k - 1) * d + 1
        num = size + 2 * p - eff
        o = (-(-num // s) if ceil_mode else num // s) + 1
        if ceil_mode and (o - 1) * s >= size + p:
            o -= 1
        return o

    oh, ow = osize(h, kh, sh, ph, dh), osize(w, kw, sw, pw, dw)
    best = np.full((n, c, oh, ow), -np.inf, np.float32)
    best_idx = np.zeros((n, c, oh, ow), np.int64)
    ys = np.arange(oh) * sh - ph
    xs = np.arange(ow) * sw - pw
    for ky in range(kh):
        iy = ys + ky * dh
        my = (iy >= 0) & (iy < h)
        for kx in range(kw):
            ix = xs + kx * dw
            mx = (ix >= 0) & (ix < w)
            m = my[:, None] & mx[None, :]
            vals = x[:, :, np.clip(iy, 0, h - 1)][:, :, :, np.clip(ix, 0, w - 1)]
            take = m & ((vals > best) | np.isnan(vals))
            best = np.where(take, vals, best)
            best_idx = np.where(take, (np.clip(iy, 0, h - 1)[:, None] * w + np.clip(ix, 0, w - 1)[None, :]), best_idx)
    if squeeze:
        best, best_idx = best[0], best_idx[0]
    write_out(ctx, out, best, "max_pool2d", best.size * kh * kw)
    if idx_out is not None and idx_out.numel == best_idx.size and idx_out.dtype is not None:
        idx_out.array(ctx.bus)[...] = best_idx.reshape(idx_out.sizes).astype(idx_out.dtype)
    return out
