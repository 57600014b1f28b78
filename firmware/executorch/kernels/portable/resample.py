"""Resampling: ``upsample_bilinear2d``, ``upsample_nearest2d``, ``_upsample_bilinear2d_aa`` and
``grid_sampler_2d``, each following its ``op_*.cpp`` arithmetic in float32 (source indices and weights as
``compute_source_index_and_lambda`` / ``compute_aa_kernel_params`` / ``grid_sampler_compute_source_index``).
"""

from __future__ import annotations

import numpy as np

from ...error import Error, RuntimeFailure
from .._util import arr, check, default_order, emit, float_ctype, is_float, out_tensor, resize, tensor, write_out
from ..registry import kernel


def _unnormalize(c, size, align, ct):
    if align:
        return (((c + ct(1)) / ct(2)) * ct(size - 1)).astype(ct)
    return (((c + ct(1)) * ct(size) - ct(1)) / ct(2)).astype(ct)


def _reflect(c, twice_low, twice_high, ct):
    if twice_low == twice_high:
        return np.zeros_like(c)
    lo = ct(twice_low) / ct(2)
    span = ct(twice_high - twice_low) / ct(2)
    c = np.abs(c - lo).astype(ct)
    extra = np.fmod(c, span).astype(ct)
    flips = np.floor(c / span).astype(np.int64)
    return np.where(flips % 2 == 0, extra + lo, span - extra + lo).astype(ct)


def _clip(c, size, ct=None):
    if ct is None:
        return np.minimum(size - 1, np.maximum(c, 0))
    return np.minimum(ct(size - 1), np.maximum(c, ct(0))).astype(ct)


def _source_index(c, size, padding, align, ct):
    c = _unnormalize(c, size, align, ct)
    if padding == 1:
        c = _clip(c, size, ct)
    elif padding == 2:
        c = _reflect(c, 0, 2 * (size - 1), ct) if align else _reflect(c, -1, 2 * size - 1, ct)
        c = _clip(c, size, ct)
    return c


def _cubic_coeffs(t, ct):
    a = ct(-0.75)

    def conv1(x):
        return ((((a + ct(2)) * x - (a + ct(3))) * x) * x + ct(1)).astype(ct)

    def conv2(x):
        return ((((a * x - ct(5) * a) * x + ct(8) * a) * x) - ct(4) * a).astype(ct)

    return conv2(t + ct(1)), conv1(t), conv1(ct(1) - t), conv2((ct(1) - t) + ct(1))


@kernel("aten::grid_sampler_2d.out", "T,T,i,i,b")
def grid_sampler_2d(ctx, args):
    """``grid_sampler_2d.out(input, grid, interpolation_mode, padding_mode, align_corners)``: modes 0 bilinear,
    1 nearest (``nearbyint``, ties to even), 2 bicubic (A = -0.75); padding 0 zeros, 1 border, 2 reflection.
    Coordinates and weights in float; bilinear with zeros padding adds the in-bounds corners nw, ne, sw, se in
    that order from 0. Float inputs only here (the C++ also instantiates integer types)."""
    out = out_tensor(args)
    x_t, g_t = tensor(args[0], "input"), tensor(args[1], "grid")
    mode, pad, align = int(args[2]), int(args[3]), bool(args[4])
    x, g = x_t.array(ctx.bus), g_t.array(ctx.bus)
    check(x.ndim == 4, f"grid_sampler_2d: input must be 4-d, got {x.ndim}")
    check(default_order(x_t), "grid_sampler_2d: input must be in NCHW format")
    check(g.ndim == 4 and g.shape[3] == 2, f"grid_sampler_2d: grid must be (N, H, W, 2), got {list(g.shape)}")
    check(x.shape[0] == g.shape[0], "grid_sampler_2d: input and grid batch sizes differ")
    check(x_t.scalar_type == g_t.scalar_type == out.scalar_type, "grid_sampler_2d: input, grid and out types differ")
    resize(ctx, out, (x.shape[0], x.shape[1], g.shape[1], g.shape[2]), "grid_sampler_2d")
    check(mode in (0, 1, 2), f"grid_sampler_2d: interpolation_mode {mode}")
    check(pad in (0, 1, 2), f"grid_sampler_2d: padding_mode {pad}")
    check(is_float(x_t), f"grid_sampler_2d: {x_t.type_name} inputs are not supported by this kernel")
    ct = float_ctype(x.dtype)
    n, c, h, w = x.shape
    xf = x.astype(ct)
    gx, gy = g[..., 0].astype(ct), g[..., 1].astype(ct)          # N, Ho, Wo
    bidx = np.arange(n)[:, None, None]

    def fetch(iy, ix):  # N, Ho, Wo int coords -> N, C, Ho, Wo (coords must be in range)
        return np.moveaxis(xf[bidx, :, iy, ix], -1, 1)

    def inb(iy, ix):
        return (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w)

    if mode == 0:
        ix = _source_index(gx, w, pad, align, ct)
        iy = _source_index(gy, h, pad, align, ct)
        x0, y0 = np.floor(ix).astype(np.int64), np.floor(iy).astype(np.int64)
        x1, y1 = x0 + 1, y0 + 1
        wnw = ((x1.astype(ct) - ix) * (y1.astype(ct) - iy)).astype(ct)
        wne = ((ix - x0.astype(ct)) * (y1.astype(ct) - iy)).astype(ct)
        wsw = ((x1.astype(ct) - ix) * (iy - y0.astype(ct))).astype(ct)
        wse = ((ix - x0.astype(ct)) * (iy - y0.astype(ct))).astype(ct)
        corners = ((y0, x0, wnw), (y0, x1, wne), (y1, x0, wsw), (y1, x1, wse))
        if pad == 0:
            acc = np.zeros((n, c) + gx.shape[1:], ct)
            for yy, xx, wt in corners:
                m = inb(yy, xx)
                v = fetch(np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1))
                acc = np.where(m[:, None], (acc + v * wt[:, None]).astype(ct), acc)
        else:
            terms = [(fetch(_clip(yy, h), _clip(xx, w)) * wt[:, None]).astype(ct) for yy, xx, wt in corners]
            acc = (((terms[0] + terms[1]).astype(ct) + terms[2]).astype(ct) + terms[3]).astype(ct)
        r = acc
    elif mode == 1:
        ix = _source_index(gx, w, pad, align, ct)
        iy = _source_index(gy, h, pad, align, ct)
        xn, yn = np.rint(ix).astype(np.int64), np.rint(iy).astype(np.int64)
        if pad == 0:
            v = fetch(np.clip(yn, 0, h - 1), np.clip(xn, 0, w - 1))
            r = np.where(inb(yn, xn)[:, None], v, ct(0))
        else:
            r = fetch(_clip(yn, h), _clip(xn, w))
    else:
        ix = _unnormalize(gx, w, align, ct)
        iy = _unnormalize(gy, h, align, ct)
        x0, y0 = np.floor(ix).astype(np.int64), np.floor(iy).astype(np.int64)
        tx, ty = (ix - x0.astype(ct)).astype(ct), (iy - y0.astype(ct)).astype(ct)

        def value(yy, xx):
            if pad == 0:
                return np.where(inb(yy, xx)[:, None], fetch(np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)), ct(0))
            if pad == 1:
                return fetch(np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1))
            fy, fx = yy.astype(ct), xx.astype(ct)
            if align:
                fy, fx = _reflect(fy, 0, 2 * (h - 1), ct), _reflect(fx, 0, 2 * (w - 1), ct)
            else:
                fy, fx = _reflect(fy, -1, 2 * h - 1, ct), _reflect(fx, -1, 2 * w - 1, ct)
            return fetch(_clip(fy, h, ct).astype(np.int64), _clip(fx, w, ct).astype(np.int64))

        def interp(p0, p1, p2, p3, t):
            c0, c1, c2, c3 = (k[:, None] for k in _cubic_coeffs(t, ct))
            return ((((p0 * c0).astype(ct) + (p1 * c1)).astype(ct) + (p2 * c2)).astype(ct) + (p3 * c3)).astype(ct)

        rows = [interp(*(value(y0 + dy, x0 + dx) for dx in (-1, 0, 1, 2)), tx) for dy in (-1, 0, 1, 2)]
        r = interp(*rows, ty)
    return emit(ctx, out, r.astype(x.dtype), "grid_sampler_2d")


def _aa_axis(n_out: int, n_in: int, scale: np.float32):
    """compute_aa_kernel_params for each output index (float): (xmin, contributor count, normalised weights
    [n_out, max count])."""
    f = np.float32
    support = scale * f(1.0) if scale >= f(1.0) else f(1.0)
    invscale = f(1.0) / scale if scale >= f(1.0) else f(1.0)
    xmins, xmaxs, rows = [], [], []
    for o in range(n_out):
        center = f(scale * f(f(o) + f(0.5)))
        xmin = max(int(f(center - support + f(0.5))), 0)
        xmax = min(int(f(center + support + f(0.5))), n_in)
        fallback = None
        ws = []
        if xmax <= xmin:
            fallback = max(0, min(int(center), n_in - 1))
        else:
            total = f(0.0)
            for i in range(xmin, xmax):
                total = f(total + _aa_filter(f((f(i) - center + f(0.5)) * invscale)))
            if total <= f(0.0):
                fallback = max(0, min(int(center), n_in - 1))
            else:
                ws = [f(_aa_filter(f((f(i) - center + f(0.5)) * invscale)) / total) for i in range(xmin, xmax)]
        if fallback is not None:
            xmin, xmax, ws = fallback, fallback + 1, [f(1.0)]
        xmins.append(xmin)
        xmaxs.append(xmax)
        rows.append(ws)
    width = max(len(r) for r in rows)
    wts = np.zeros((n_out, width), np.float32)
    for o, r in enumerate(rows):
        wts[o, :len(r)] = r
    return np.array(xmins), np.array([len(r) for r in rows]), wts


def _aa_filter(x):
    x = abs(x)
    return np.float32(1.0) - x if x < np.float32(1.0) else np.float32(0.0)


@kernel("aten::_upsample_bilinear2d_aa.out", "T,I,b,f?,f?")
def upsample_bilinear2d_aa(ctx, args):
    """``_upsample_bilinear2d_aa.out(self, output_size, align_corners, scales_h?, scales_w?)``: the separable
    triangle filter with support ``max(scale, 1)``; kernel scale ``1 / scale`` (both scales given) or ``1 /
    (out / in)``, ``(in - 1) / (out - 1)`` with align_corners (the centre stays ``scale * (i + 0.5)``); per output
    ``value += in * h_weight * w_weight`` over rows, then columns, in float."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    osz = ctx.int_list(args[1])
    align = bool(args[2])
    sh = args[3] if len(args) > 5 else None
    sw = args[4] if len(args) > 5 else None
    x = t.array(ctx.bus)
    check(x.ndim == 4 and len(out.sizes) == 4, "upsample_bilinear2d_aa: 4-d input and out expected")
    check(t.scalar_type == out.scalar_type, "upsample_bilinear2d_aa: self and out types differ")
    check(len(osz) == 2 and osz[0] > 0 and osz[1] > 0, f"upsample_bilinear2d_aa: output_size {osz}")
    check(tuple(out.sizes) == (x.shape[0], x.shape[1], osz[0], osz[1]),
           f"upsample_bilinear2d_aa: out {list(out.sizes)} for output_size {osz}")
    check(is_float(t), f"upsample_bilinear2d_aa: {t.type_name} inputs are not supported by this kernel")
    ih, iw = x.shape[2:]
    oh, ow = osz
    if sh is not None and sw is not None:
        fh, fw = float(sh), float(sw)
    else:
        fh, fw = oh / ih, ow / iw

    def kscale(n_in, n_out, s):
        if align:
            return np.float32((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
        return np.float32(1.0 / s)

    hmin, hn, hw = _aa_axis(oh, ih, kscale(ih, oh, fh))
    wmin, wn, ww = _aa_axis(ow, iw, kscale(iw, ow, fw))
    xf = x.astype(np.float32)
    acc = np.zeros(x.shape[:2] + (oh, ow), np.float32)
    for a in range(hw.shape[1]):
        rows = np.minimum(hmin + a, ih - 1)
        wa = hw[:, a]
        for b in range(ww.shape[1]):
            cols = np.minimum(wmin + b, iw - 1)
            wb = ww[:, b]
            m = (a < hn)[:, None] & (b < wn)[None, :]
            v = ((xf[:, :, rows][:, :, :, cols] * wa[:, None]).astype(np.float32) * wb[None, :]).astype(np.float32)
            acc = np.where(m, (acc + v).astype(np.float32), acc)
    return emit(ctx, out, acc.astype(x.dtype), "upsample_bilinear2d_aa")


def _upsample_args(ctx, args, factors_at, x, out, what):
    """(scale_h, scale_w) from ``output_size?`` / ``scale_factors?`` as resize_upsample_2d: the scale factor
    itself, or ``out / in`` in double when only the size is given."""
    if x.ndim != 4 or len(out.sizes) != 4 or tuple(out.sizes[:2]) != x.shape[:2]:
        raise RuntimeFailure(Error.InvalidArgument, f"{what}: expects 4-d NCHW input and output")
    if tuple(out.dim_order) != (0, 1, 2, 3) and what == "upsample_bilinear2d":
        raise RuntimeFailure(Error.InvalidArgument, f"{what}: tensors must have the default dim order")
    size = ctx.int_list(args[1]) if args[1] is not None else []
    f = args[factors_at] if len(args) > factors_at else None
    factors = list(f) if isinstance(f, (list, tuple)) and f else []
    if bool(size) == bool(factors):
        raise RuntimeFailure(Error.InvalidArgument, f"{what}: exactly one of output_size and scale_factors")
    if factors:
        sh, sw = float(factors[0]), float(factors[1])
        oh, ow = int(x.shape[2] * sh), int(x.shape[3] * sw)
    else:
        oh, ow = int(size[0]), int(size[1])
        sh, sw = oh / x.shape[2], ow / x.shape[3]
    if (oh, ow) != tuple(out.sizes[2:]):
        raise RuntimeFailure(Error.InvalidArgument, f"{what}: out is {list(out.sizes)}, expected {oh}x{ow}")
    return sh, sw


def _area_scale(n_in: int, n_out: int, align_corners: bool, scale: float) -> np.float32:
    """area_pixel_compute_scale<double>, then narrowed to the kernels' float."""
    if align_corners:
        return np.float32((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    return np.float32(1.0 / scale)


def _bilinear_axis(n_in: int, n_out: int, ratio: np.float32, align_corners: bool):
    """compute_source_index_and_lambda for every output index: (i0, i1, lambda0, lambda1), float32."""
    d = np.arange(n_out)
    if n_out == n_in:
        return d, d, np.ones(n_out, np.float32), np.zeros(n_out, np.float32)
    df = d.astype(np.float32)
    if align_corners:
        real = (ratio * df).astype(np.float32)
    else:
        real = (ratio * (df + np.float32(0.5)) - np.float32(0.5)).astype(np.float32)
        real = np.where(real < 0, np.float32(0), real).astype(np.float32)
    i0 = np.minimum(np.floor(real).astype(np.int64), n_in - 1)
    l1 = np.minimum(np.maximum(real - i0.astype(np.float32), np.float32(0)), np.float32(1)).astype(np.float32)
    i1 = i0 + (i0 < n_in - 1)
    return i0, i1, (np.float32(1) - l1).astype(np.float32), l1


@kernel("aten::upsample_bilinear2d.vec_out", "T,I?,b,F?")
def upsample_bilinear2d(ctx, args):
    """``aten::upsample_bilinear2d.vec_out(input, output_size?, align_corners, scale_factors?, *, out)``:
    op_upsample_bilinear2d.cpp in float32 (indices and weights as ``compute_source_index_and_lambda``,
    ``top = tl * w0 + tr * w1``, ``bottom = bl * w0 + br * w1``, ``top * h0 + bottom * h1``)."""
    out = out_tensor(args)
    x = arr(ctx, args[0], "input")
    align = bool(args[2])
    sh, sw = _upsample_args(ctx, args, 3, x, out, "upsample_bilinear2d")
    oh, ow = out.sizes[2], out.sizes[3]
    h0i, h1i, h0, h1 = _bilinear_axis(x.shape[2], oh, _area_scale(x.shape[2], oh, align, sh), align)
    w0i, w1i, w0, w1 = _bilinear_axis(x.shape[3], ow, _area_scale(x.shape[3], ow, align, sw), align)
    xf = x.astype(np.float32, copy=False)
    tl = xf[:, :, h0i][:, :, :, w0i]
    tr = xf[:, :, h0i][:, :, :, w1i]
    bl = xf[:, :, h1i][:, :, :, w0i]
    br = xf[:, :, h1i][:, :, :, w1i]
    top = (tl * w0 + tr * w1).astype(np.float32)
    bottom = (bl * w0 + br * w1).astype(np.float32)
    r = (top * h0[:, None] + bottom * h1[:, None]).astype(np.float32)
    return write_out(ctx, out, r, "upsample_bilinear2d", out.numel)


@kernel("aten::upsample_nearest2d.vec_out", "T,I?,F?")
def upsample_nearest2d(ctx, args):
    """``aten::upsample_nearest2d.vec_out(input, output_size?, scale_factors?, *, out)``: source index
    ``min(floor(dst * scale), in - 1)`` with the float scale ``1 / factor`` (OpenCV INTER_NEAREST)."""
    out = out_tensor(args)
    x = arr(ctx, args[0], "input")
    sh, sw = _upsample_args(ctx, args, 2, x, out, "upsample_nearest2d")
    oh, ow = out.sizes[2], out.sizes[3]

    def src(n_in, n_out, scale):
        f = _area_scale(n_in, n_out, False, scale)
        return np.minimum(np.floor(np.arange(n_out).astype(np.float32) * f).astype(np.int64), n_in - 1)

    r = x[:, :, src(x.shape[2], oh, sh)][:, :, :, src(x.shape[3], ow, sw)]
    return write_out(ctx, out, r, "copy", out.numel)
