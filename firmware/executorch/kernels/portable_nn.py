"""Portable float kernels for the layers of non-quantized models left on the CPU (``--no_quantize``).

ExecuTorch's portable library (``kernels/portable/cpu``) implements these ``aten::*.out`` operators; programs
compiled without quantization for an Ethos-U55/U65 keep their float convolutions, batch norms, pools and LSTM
pieces on the Cortex-M55. Arithmetic is float32 like the C++ kernels; sums (convolution, matrix products) use
numpy's float32 products, whose summation order differs from the C++ loops in the last bits, well inside the
runner's BundleIO tolerance (atol = rtol = 0.01). Batch norm computes ``invstd = 1 / sqrt(var + eps)`` in double
and ``(x - mean) * invstd * weight + bias`` in float32, as op_native_batch_norm.cpp does.

Work reported to the cost model (``kernel.<name>`` x units): multiply-accumulates for convolution, linear and
matrix products; window elements read for pooling; output elements for everything else (copies, selects,
splits, batch norm).
"""

from __future__ import annotations

import math

import numpy as np

from ..error import Error, RuntimeFailure
from ..method import RtTensor
from ._util import dim_index as _dim
from ._util import out_tensor, tensor, tensor_list, write_out


def _arr(ctx, v, what="self") -> np.ndarray:
    return tensor(v, what).array(ctx.bus)


def _opt_arr(ctx, v, what):
    return None if v is None else _arr(ctx, v, what)


def _ints(ctx, v, n: int | None = None, default=None) -> list[int]:
    """An ``int[]`` argument (an IntList value or ``None``), expanded to ``n`` entries when it has one."""
    vals = ctx.int_list(v) if v is not None else []
    if not vals:
        vals = list(default) if default is not None else []
    if n is not None and len(vals) == 1:
        vals = vals * n
    return vals


def _tensor_list(ctx, v, what: str) -> list[RtTensor]:
    return tensor_list(ctx, v, what, kinds=("TensorList",))


def _store(ctx, out: RtTensor, values: np.ndarray, kernel: str, work: int) -> None:
    if out.numel != values.size:
        raise RuntimeFailure(Error.InvalidArgument,
                             f"{kernel}: out has {out.numel} elements, the result has {values.size}")
    dst = out.array(ctx.bus)
    dst[...] = values.reshape(dst.shape).astype(dst.dtype, copy=False)
    ctx.bus.work(f"kernel.{kernel}", work)


# ------------------------------------------------------------------------------------------------ convolution
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


def convolution(ctx, args):
    """``aten::convolution.out(input, weight, bias?, stride, padding, dilation, transposed, output_padding,
    groups, *, out)`` for 1-d and 2-d convolutions (plain and transposed, grouped, dilated)."""
    out = out_tensor(args)
    x = _arr(ctx, args[0], "input").astype(np.float32, copy=False)
    w = _arr(ctx, args[1], "weight").astype(np.float32, copy=False)
    b = _opt_arr(ctx, args[2], "bias")
    b = None if b is None else b.astype(np.float32, copy=False)
    spatial = x.ndim - 2
    if spatial not in (1, 2) or w.ndim != x.ndim:
        raise RuntimeFailure(Error.NotSupported, f"convolution: {x.ndim}-d input with {w.ndim}-d weight; "
                                                 f"1-d and 2-d convolutions are supported")
    stride = _ints(ctx, args[3], spatial, [1])
    padding = _ints(ctx, args[4], spatial, [0])
    dilation = _ints(ctx, args[5], spatial, [1])
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
    _store(ctx, out, r, "convolution", macs)
    return out


# ------------------------------------------------------------------------------------------------ normalization
def native_batch_norm_no_training(ctx, args):
    """``aten::_native_batch_norm_legit_no_training.out(input, weight?, bias?, running_mean, running_var,
    momentum, eps, *, out0, out1, out2)``: out0 normalized; out1/out2 (save_mean/invstd) are left empty."""
    if len(args) < 10:
        raise RuntimeFailure(Error.InvalidArgument, f"batch_norm: expected 10 arguments, got {len(args)}")
    out = tensor(args[7], "out")
    x = _arr(ctx, args[0], "input").astype(np.float32, copy=False)
    c = x.shape[1] if x.ndim > 1 else x.shape[0]
    w = _opt_arr(ctx, args[1], "weight")
    b = _opt_arr(ctx, args[2], "bias")
    mean = _arr(ctx, args[3], "running_mean").astype(np.float32)
    var = _arr(ctx, args[4], "running_var").astype(np.float32)
    eps = float(args[6])
    invstd = (1.0 / np.sqrt(var.astype(np.float64) + eps)).astype(np.float32)
    w = np.ones(c, np.float32) if w is None else w.astype(np.float32)
    b = np.zeros(c, np.float32) if b is None else b.astype(np.float32)
    shape = (1, c) + (1,) * (x.ndim - 2) if x.ndim > 1 else (c,)
    r = (x - mean.reshape(shape)) * invstd.reshape(shape)
    r = r.astype(np.float32) * w.reshape(shape) + b.reshape(shape)
    _store(ctx, out, r.astype(np.float32), "batch_norm", x.size)
    return out


def native_batch_norm_legit(ctx, args):
    """``aten::_native_batch_norm_legit.out(input, weight?, bias?, running_mean, running_var, training,
    momentum, eps, *, out, save_mean, save_invstd)``: the portable kernel supports inference only and then
    computes the no-training form."""
    if len(args) < 11:
        raise RuntimeFailure(Error.InvalidArgument, f"batch_norm: expected 11 arguments, got {len(args)}")
    if args[5]:
        raise RuntimeFailure(Error.InvalidArgument, "Portable kernels only support inference mode!")
    return native_batch_norm_no_training(ctx, list(args[:5]) + list(args[6:]))


def native_batch_norm_legit_no_stats(ctx, args):
    """``aten::_native_batch_norm_legit.no_stats_out(input, weight?, bias?, training, momentum, eps, *, out,
    save_mean, save_invstd)`` (instance norm and batch statistics): the portable kernel always fails with
    InvalidArgument (inference mode needs running statistics; training mode is not supported), as
    op_native_batch_norm.cpp does."""
    if len(args) > 3 and args[3]:
        raise RuntimeFailure(Error.InvalidArgument, "Portable kernels only support inference mode!")
    raise RuntimeFailure(Error.InvalidArgument, "running_mean & running_var must be provided during inference!")


# ------------------------------------------------------------------------------------------------ pooling
def max_pool2d_with_indices(ctx, args):
    """``aten::max_pool2d_with_indices.out(self, kernel_size, stride, padding, dilation, ceil_mode, *, out,
    indices)``; indices are flat positions in each input plane (int64), as PyTorch returns them."""
    out = tensor(args[6], "out")
    idx_out = tensor(args[7], "indices") if len(args) > 7 else None
    x = _arr(ctx, args[0]).astype(np.float32, copy=False)
    kh, kw = _ints(ctx, args[1], 2)[:2]
    sh, sw = (_ints(ctx, args[2], 2) or [kh, kw])[:2]
    ph, pw = _ints(ctx, args[3], 2, [0])[:2]
    dh, dw = _ints(ctx, args[4], 2, [1])[:2]
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
    _store(ctx, out, best, "max_pool2d", best.size * kh * kw)
    if idx_out is not None and idx_out.numel == best_idx.size and idx_out.dtype is not None:
        idx_out.array(ctx.bus)[...] = best_idx.reshape(idx_out.sizes).astype(idx_out.dtype)
    return out


# ------------------------------------------------------------------------------------------------ matrices
def bmm(ctx, args):
    out = out_tensor(args)
    a = _arr(ctx, args[0]).astype(np.float32, copy=False)
    b = _arr(ctx, args[1], "mat2").astype(np.float32, copy=False)
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeFailure(Error.InvalidArgument, f"bmm: shapes {a.shape} and {b.shape} do not fit")
    _store(ctx, out, np.matmul(a, b).astype(np.float32), "mm", a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2])
    return out


def linear(ctx, args):
    """``aten::linear.out(input, weight, bias?, *, out)``: ``input @ weight.T + bias``."""
    out = out_tensor(args)
    x = _arr(ctx, args[0], "input").astype(np.float32, copy=False)
    w = _arr(ctx, args[1], "weight").astype(np.float32, copy=False)
    b = _opt_arr(ctx, args[2], "bias") if len(args) > 3 else None
    r = np.matmul(x, w.T).astype(np.float32)
    if b is not None:
        r = (r + b.astype(np.float32)).astype(np.float32)
    _store(ctx, out, r, "mm", x.size * w.shape[0])
    return out


# ------------------------------------------------------------------------------------------------ views, copies
def select_copy(ctx, args):
    """``aten::select_copy.int_out(self, dim, index, *, out)``."""
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    d = _dim(int(args[1]), x.ndim, "select_copy")
    i = int(args[2])
    if not -x.shape[d] <= i < x.shape[d]:
        raise RuntimeFailure(Error.InvalidArgument, f"select_copy: index {i} out of range for size {x.shape[d]}")
    _store(ctx, out, np.take(x, i % x.shape[d], axis=d), "copy", out.numel)
    return out


def slice_copy(ctx, args):
    """``aten::slice_copy.Tensor_out(self, dim, start?, end?, step, *, out)``."""
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    d = _dim(int(args[1]) if args[1] is not None else 0, x.ndim, "slice_copy")
    start = args[2] if args[2] is not None else 0
    end = args[3] if args[3] is not None else x.shape[d]
    step = int(args[4]) if len(args) > 5 and args[4] is not None else 1
    if step <= 0:
        raise RuntimeFailure(Error.InvalidArgument, f"slice_copy: step {step} must be positive")
    sl = [slice(None)] * x.ndim
    sl[d] = slice(int(start), int(end), step)
    _store(ctx, out, x[tuple(sl)], "copy", out.numel)
    return out


def _split_into(ctx, x, d, sizes, outs, kernel):
    if len(sizes) != len(outs) or sum(sizes) != x.shape[d]:
        raise RuntimeFailure(Error.InvalidArgument, f"{kernel}: sizes {sizes} do not split {x.shape[d]} into "
                                                    f"{len(outs)} outputs")
    pos = 0
    for s, o in zip(sizes, outs):
        sl = [slice(None)] * x.ndim
        sl[d] = slice(pos, pos + s)
        _store(ctx, o, x[tuple(sl)], "copy", o.numel)
        pos += s


def split_with_sizes_copy(ctx, args):
    """``aten::split_with_sizes_copy.out(self, split_sizes, dim, *, out[])``."""
    x = _arr(ctx, args[0])
    sizes = ctx.int_list(args[1])
    d = _dim(int(args[2]) if len(args) > 3 and args[2] is not None else 0, x.ndim, "split_with_sizes_copy")
    _split_into(ctx, x, d, sizes, _tensor_list(ctx, args[-1], "out"), "split_with_sizes_copy")
    return None


def split_copy(ctx, args):
    """``aten::split_copy.Tensor_out(self, split_size, dim, *, out[])``."""
    x = _arr(ctx, args[0])
    size = int(args[1])
    d = _dim(int(args[2]) if len(args) > 3 and args[2] is not None else 0, x.ndim, "split_copy")
    outs = _tensor_list(ctx, args[-1], "out")
    total = x.shape[d]
    sizes = [min(size, total - i) for i in range(0, total, size)] if size > 0 else [total]
    _split_into(ctx, x, d, sizes, outs, "split_copy")
    return None


def unbind_copy(ctx, args):
    """``aten::unbind_copy.int_out(self, dim, *, out[])``."""
    x = _arr(ctx, args[0])
    d = _dim(int(args[1]) if len(args) > 2 and args[1] is not None else 0, x.ndim, "unbind_copy")
    outs = _tensor_list(ctx, args[-1], "out")
    if len(outs) != x.shape[d]:
        raise RuntimeFailure(Error.InvalidArgument, f"unbind_copy: {len(outs)} outputs for size {x.shape[d]}")
    for i, o in enumerate(outs):
        _store(ctx, o, np.take(x, i, axis=d), "copy", o.numel)
    return None


def stack(ctx, args):
    """``aten::stack.out(tensors[], dim, *, out)``."""
    out = out_tensor(args)
    parts = [t.array(ctx.bus) for t in _tensor_list(ctx, args[0], "tensors")]
    d = int(args[1]) if len(args) > 2 and args[1] is not None else 0
    d = _dim(d, parts[0].ndim + 1 if parts else 1, "stack")
    _store(ctx, out, np.stack(parts, axis=d), "copy", out.numel)
    return out


def clone_dim_order(ctx, args):
    """``dim_order_ops::_clone_dim_order.out`` / ``_to_dim_order_copy.out(self, non_blocking, dim_order?, *,
    out)``: copy into ``out``'s dim order (and dtype)."""
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    _store(ctx, out, x, "copy", out.numel)
    return out


def constant_pad_nd(ctx, args):
    """``aten::constant_pad_nd.out(self, pad, value, *, out)``: pad pairs from the last dimension backwards."""
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    pad = ctx.int_list(args[1])
    value = args[2] if len(args) > 3 and args[2] is not None else 0
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise RuntimeFailure(Error.InvalidArgument, f"constant_pad_nd: bad pad {pad}")
    r = x
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo < 0:
            r = np.take(r, range(-lo, r.shape[d]), axis=d)
            lo = 0
        if hi < 0:
            r = np.take(r, range(0, r.shape[d] + hi), axis=d)
            hi = 0
        widths = [(0, 0)] * x.ndim
        widths[d] = (lo, hi)
        r = np.pad(r, widths, constant_values=np.asarray(value).astype(x.dtype))
    _store(ctx, out, r, "copy", out.numel)
    return out


def sum_dim(ctx, args):
    """``aten::sum.IntList_out(self, dim?, keepdim, *, dtype?, out)``: sequential float32 sum like the C++."""
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    dims = ctx.int_list(args[1]) if args[1] is not None else []
    dims = tuple(sorted({_dim(d, x.ndim, "sum") for d in dims})) or tuple(range(x.ndim))
    dt = np.float32 if out.dtype is not None and out.dtype.kind == "f" else np.int64
    xm = np.moveaxis(x.astype(dt), dims, tuple(range(x.ndim - len(dims), x.ndim)))
    n = math.prod(x.shape[d] for d in dims) if dims else 1
    xm = xm.reshape(xm.shape[:x.ndim - len(dims)] + (n,))
    s = np.zeros(xm.shape[:-1], dt)
    for k in range(n):
        s = (s + xm[..., k]).astype(dt)
    _store(ctx, out, s, "sum", x.size)
    return out


def leaky_relu(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0]).astype(np.float32, copy=False)
    slope = np.float32(args[1] if len(args) > 2 and args[1] is not None else 0.01)
    write_out(ctx, out, np.where(x > 0, x, x * slope).astype(np.float32), "leaky_relu")
    return out


def hardswish(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0]).astype(np.float32, copy=False)
    r = x * np.minimum(np.maximum(x + np.float32(3), np.float32(0)), np.float32(6)) / np.float32(6)
    write_out(ctx, out, r.astype(np.float32), "hardswish")
    return out



# ------------------------------------------------------------------------------------------------ resize
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


def upsample_bilinear2d(ctx, args):
    """``aten::upsample_bilinear2d.vec_out(input, output_size?, align_corners, scale_factors?, *, out)``:
    op_upsample_bilinear2d.cpp in float32 (indices and weights as ``compute_source_index_and_lambda``,
    ``top = tl * w0 + tr * w1``, ``bottom = bl * w0 + br * w1``, ``top * h0 + bottom * h1``)."""
    out = out_tensor(args)
    x = _arr(ctx, args[0], "input")
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
    _store(ctx, out, r, "upsample_bilinear2d", out.numel)
    return out


def upsample_nearest2d(ctx, args):
    """``aten::upsample_nearest2d.vec_out(input, output_size?, scale_factors?, *, out)``: source index
    ``min(floor(dst * scale), in - 1)`` with the float scale ``1 / factor`` (OpenCV INTER_NEAREST)."""
    out = out_tensor(args)
    x = _arr(ctx, args[0], "input")
    sh, sw = _upsample_args(ctx, args, 2, x, out, "upsample_nearest2d")
    oh, ow = out.sizes[2], out.sizes[3]

    def src(n_in, n_out, scale):
        f = _area_scale(n_in, n_out, False, scale)
        return np.minimum(np.floor(np.arange(n_out).astype(np.float32) * f).astype(np.int64), n_in - 1)

    r = x[:, :, src(x.shape[2], oh, sh)][:, :, :, src(x.shape[3], ow, sw)]
    _store(ctx, out, r, "copy", out.numel)
    return out

PORTABLE_NN_KERNELS = {
    "aten::convolution.out": convolution,
    "aten::_native_batch_norm_legit_no_training.out": native_batch_norm_no_training,
    "aten::_native_batch_norm_legit.out": native_batch_norm_legit,
    "aten::_native_batch_norm_legit.no_stats_out": native_batch_norm_legit_no_stats,
    "aten::max_pool2d_with_indices.out": max_pool2d_with_indices,
    "aten::bmm.out": bmm,
    "aten::linear.out": linear,
    "aten::select_copy.int_out": select_copy,
    "aten::slice_copy.Tensor_out": slice_copy,
    "aten::split_with_sizes_copy.out": split_with_sizes_copy,
    "aten::split_copy.Tensor_out": split_copy,
    "aten::unbind_copy.int_out": unbind_copy,
    "aten::stack.out": stack,
    "aten::constant_pad_nd.out": constant_pad_nd,
    "aten::sum.IntList_out": sum_dim,
    "aten::leaky_relu.out": leaky_relu,
    "aten::hardswish.out": hardswish,
    "aten::upsample_bilinear2d.vec_out": upsample_bilinear2d,
    "aten::upsample_nearest2d.vec_out": upsample_nearest2d,
    "dim_order_ops::_clone_dim_order.out": clone_dim_order,
    "dim_order_ops::_to_dim_order_copy.out": clone_dim_order,
}
