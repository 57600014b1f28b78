"""Normalisation: batch norm (``_native_batch_norm_legit*``), ``native_layer_norm``, ``native_group_norm``.

Batch norm computes ``invstd = 1 / sqrt(var + eps)`` in double and ``(x - mean) * invstd * weight + bias`` in
float32, as op_native_batch_norm.cpp does; the portable kernels support inference only. Layer norm sums in float32
one element after another.
"""

from __future__ import annotations

import math

import numpy as np

from ...error import Error, RuntimeFailure
from .._util import arr, opt_arr, scalar, store, tensor, write_out
from ..registry import kernel


@kernel("aten::native_layer_norm.out", "T,I,T?,T?,f")
def native_layer_norm(ctx, args):
    """``native_layer_norm.out(input, normalized_shape, weight?, bias?, eps, *, out, mean_out, rstd_out)``:
    per row of the normalised trailing dims, ``mean = sum / n``, ``var = sum(x^2) / n - mean^2``,
    ``y = (x - mean) / sqrt(var + eps) * w + b`` in float32; mean and ``1 / std`` in the other outputs."""
    x = arr(ctx, args[0], "input").astype(np.float32)
    shape = ctx.int_list(args[1])
    k = len(shape)
    if k == 0 or tuple(x.shape[x.ndim - k:]) != tuple(shape):
        raise RuntimeFailure(Error.InvalidArgument, f"native_layer_norm: normalized_shape {shape} for {x.shape}")
    w = arr(ctx, args[2], "weight").astype(np.float32) if args[2] is not None else None
    b = arr(ctx, args[3], "bias").astype(np.float32) if args[3] is not None else None
    eps = np.float32(scalar(args[4], 1e-5))
    out, mean_t, rstd_t = tensor(args[5], "out"), tensor(args[6], "mean_out"), tensor(args[7], "rstd_out")
    n = math.prod(shape)
    rows = x.reshape(-1, n)
    s = np.zeros(rows.shape[0], np.float32)
    sq = np.zeros(rows.shape[0], np.float32)
    for j in range(n):  # sequential float32 sums, as reduce_add / vec_powerf
        s = (s + rows[:, j]).astype(np.float32)
        sq = (sq + rows[:, j] * rows[:, j]).astype(np.float32)
    mean = (s / np.float32(n)).astype(np.float32)
    var = (sq / np.float32(n) - mean * mean).astype(np.float32)
    std = np.sqrt(var + eps).astype(np.float32)
    y = ((rows - mean[:, None]) / std[:, None]).astype(np.float32)
    if w is not None:
        y = (y * w.reshape(1, n)).astype(np.float32)
    if b is not None:
        y = (y + b.reshape(1, n)).astype(np.float32)
    store(ctx, out, y.reshape(x.shape), "layer_norm")
    if mean_t.numel == mean.size:
        store(ctx, mean_t, mean, "layer_norm")
    if rstd_t.numel == std.size:
        store(ctx, rstd_t, (np.float32(1) / std).astype(np.float32), "layer_norm")
    return None


@kernel("aten::native_group_norm.out", "T,T?,T?,i,i,i,i,f")
def native_group_norm(ctx, args):
    """``native_group_norm.out(input, weight?, bias?, N, C, HxW, group, eps, *, out0, out1, out2)``."""
    x = arr(ctx, args[0], "input").astype(np.float32)
    w = arr(ctx, args[1], "weight").astype(np.float32) if args[1] is not None else None
    b = arr(ctx, args[2], "bias").astype(np.float32) if args[2] is not None else None
    n, c, hw, g = int(args[3]), int(args[4]), int(args[5]), int(args[6])
    eps = np.float32(scalar(args[7], 1e-5))
    out, mean_t, rstd_t = tensor(args[8], "out0"), tensor(args[9], "out1"), tensor(args[10], "out2")
    if g <= 0 or c % g or x.size != n * c * hw:
        raise RuntimeFailure(Error.InvalidArgument, "native_group_norm: bad N/C/HxW/group")
    xg = x.reshape(n, g, (c // g) * hw)
    mean = (xg.sum(axis=2, dtype=np.float32) / np.float32(xg.shape[2])).astype(np.float32)
    var = (((xg - mean[..., None]) ** 2).sum(axis=2, dtype=np.float32) / np.float32(xg.shape[2])).astype(np.float32)
    rstd = (np.float32(1) / np.sqrt(var + eps)).astype(np.float32)
    y = ((xg - mean[..., None]) * rstd[..., None]).reshape(n, c, hw)
    if w is not None:
        y = y * w.reshape(1, c, 1)
    if b is not None:
        y = y + b.reshape(1, c, 1)
    store(ctx, out, y.astype(np.float32).reshape(x.shape), "group_norm")
    store(ctx, mean_t, mean, "group_norm")
    store(ctx, rstd_t, rstd, "group_norm")
    return None


@kernel("aten::_native_batch_norm_legit_no_training.out", "T,T?,T?,T,T,f,f")
def native_batch_norm_no_training(ctx, args):
    """``aten::_native_batch_norm_legit_no_training.out(input, weight?, bias?, running_mean, running_var,
    momentum, eps, *, out0, out1, out2)``: out0 normalized; out1/out2 (save_mean/invstd) are left empty."""
    if len(args) < 10:
        raise RuntimeFailure(Error.InvalidArgument, f"batch_norm: expected 10 arguments, got {len(args)}")
    out = tensor(args[7], "out")
    x = arr(ctx, args[0], "input").astype(np.float32, copy=False)
    c = x.shape[1] if x.ndim > 1 else x.shape[0]
    w = opt_arr(ctx, args[1], "weight")
    b = opt_arr(ctx, args[2], "bias")
    mean = arr(ctx, args[3], "running_mean").astype(np.float32)
    var = arr(ctx, args[4], "running_var").astype(np.float32)
    eps = float(args[6])
    invstd = (1.0 / np.sqrt(var.astype(np.float64) + eps)).astype(np.float32)
    w = np.ones(c, np.float32) if w is None else w.astype(np.float32)
    b = np.zeros(c, np.float32) if b is None else b.astype(np.float32)
    shape = (1, c) + (1,) * (x.ndim - 2) if x.ndim > 1 else (c,)
    r = (x - mean.reshape(shape)) * invstd.reshape(shape)
    r = r.astype(np.float32) * w.reshape(shape) + b.reshape(shape)
    return write_out(ctx, out, r.astype(np.float32), "batch_norm", x.size)


@kernel("aten::_native_batch_norm_legit.out", "T,T?,T?,T,T,b,f,f")
def native_batch_norm_legit(ctx, args):
    """``aten::_native_batch_norm_legit.out(input, weight?, bias?, running_mean, running_var, training,
    momentum, eps, *, out, save_mean, save_invstd)``: the portable kernel supports inference only and then
    computes the no-training form."""
    if len(args) < 11:
        raise RuntimeFailure(Error.InvalidArgument, f"batch_norm: expected 11 arguments, got {len(args)}")
    if args[5]:
        raise RuntimeFailure(Error.InvalidArgument, "Portable kernels only support inference mode!")
    return native_batch_norm_no_training(ctx, list(args[:5]) + list(args[6:]))


@kernel("aten::_native_batch_norm_legit.no_stats_out", "T,T?,T?,b,f,f")
def native_batch_norm_legit_no_stats(ctx, args):
    """``aten::_native_batch_norm_legit.no_stats_out(input, weight?, bias?, training, momentum, eps, *, out,
    save_mean, save_invstd)`` (instance norm and batch statistics): the portable kernel always fails with
    InvalidArgument (inference mode needs running statistics; training mode is not supported), as
    op_native_batch_norm.cpp does."""
    if len(args) > 3 and args[3]:
        raise RuntimeFailure(Error.InvalidArgument, "Portable kernels only support inference mode!")
    raise RuntimeFailure(Error.InvalidArgument, "running_mean & running_var must be provided during inference!")
