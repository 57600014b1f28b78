"""Portable ``aten::*.out`` kernels (ExecuTorch ``kernels/portable/cpu``) for operators left on the CPU.

Float arithmetic is done in float32 like the C++ kernels; reductions accumulate in the same order (row-major,
sequential) so results match bit for bit where the C++ is deterministic (``avg_pool2d``: the window summed in
float32 from its first in-bounds element, then divided by ``(float)count``; ``_softmax``: max, sequential
sum of ``exp(x - max)``, divide). Transcendentals use numpy's float32 functions, which may differ from newlib's
``expf`` in the last bit. Broadcasting follows PyTorch rules.
"""

from __future__ import annotations

import math

import numpy as np

from ..error import Error, RuntimeFailure
from ..method import RtTensor
from ._util import out_tensor, tensor, write_out


def _arr(ctx, v, what="self"):
    return tensor(v, what).array(ctx.bus)


def _scalar(v, default=None):
    if v is None:
        return default
    if isinstance(v, (bool, int, float)):
        return v
    raise RuntimeFailure(Error.InvalidArgument, f"expected a scalar, got {type(v).__name__}")


def _compute_dtype(out: RtTensor):
    return np.float32 if out.dtype is not None and out.dtype.kind == "f" else (out.dtype or np.float32)


def _operand(ctx, v, dtype):
    if isinstance(v, RtTensor):
        return v.array(ctx.bus).astype(dtype, copy=False)
    return np.asarray(_scalar(v), dtype=dtype)


def _binary(name, fn, has_alpha=False):
    def kernel(ctx, args):
        out = out_tensor(args)
        dt = _compute_dtype(out)
        a = _operand(ctx, args[0], dt)
        b = _operand(ctx, args[1], dt)
        if has_alpha:
            alpha = _scalar(args[2], 1)
            if alpha != 1:
                b = (np.asarray(alpha, dtype=dt) * b).astype(dt)
        with np.errstate(all="ignore"):
            r = fn(a, b)
        r = np.broadcast_to(r, out.sizes) if r.shape != out.sizes else r
        write_out(ctx, out, r, name)
        return out
    return kernel


def _unary(name, fn):
    def kernel(ctx, args):
        out = out_tensor(args)
        x = _arr(ctx, args[0]).astype(_compute_dtype(out), copy=False)
        with np.errstate(all="ignore"):
            write_out(ctx, out, fn(x), name)
        return out
    return kernel


def _relu(x):
    return np.maximum(x, np.asarray(0, x.dtype))


def _sigmoid(x):
    return (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(x.dtype)


def hardtanh(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0]).astype(_compute_dtype(out), copy=False)
    lo, hi = _scalar(args[1], -1.0), _scalar(args[2], 1.0)
    write_out(ctx, out, np.minimum(np.maximum(x, lo), hi).astype(x.dtype), "hardtanh")
    return out


def clamp(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0]).astype(_compute_dtype(out), copy=False)
    lo, hi = _scalar(args[1]), _scalar(args[2])
    if lo is not None:
        x = np.maximum(x, np.asarray(lo, x.dtype))
    if hi is not None:
        x = np.minimum(x, np.asarray(hi, x.dtype))
    write_out(ctx, out, x, "clamp")
    return out


def softmax(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0]).astype(np.float32, copy=False)
    dim = int(args[1]) % max(x.ndim, 1) if x.ndim else 0
    if x.ndim == 0:
        write_out(ctx, out, np.ones((), np.float32), "softmax")
        return out
    xm = np.moveaxis(x, dim, -1)
    mx = xm.max(axis=-1, keepdims=True)
    e = np.exp(xm - mx).astype(np.float32)
    s = np.zeros(xm.shape[:-1] + (1,), np.float32)
    for k in range(xm.shape[-1]):
        s = (s + e[..., k:k + 1]).astype(np.float32)
    r = np.moveaxis((e / s).astype(np.float32), -1, dim)
    write_out(ctx, out, r, "softmax")
    return out


def log_softmax(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0]).astype(np.float32, copy=False)
    dim = int(args[1]) % max(x.ndim, 1)
    xm = np.moveaxis(x, dim, -1)
    mx = xm.max(axis=-1, keepdims=True)
    s = np.zeros(xm.shape[:-1] + (1,), np.float32)
    for k in range(xm.shape[-1]):
        s = (s + np.exp(xm[..., k:k + 1] - mx)).astype(np.float32)
    r = np.moveaxis((xm - mx - np.log(s)).astype(np.float32), -1, dim)
    write_out(ctx, out, r, "softmax")
    return out



def view_copy(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    if x.size != out.numel:
        raise RuntimeFailure(Error.InvalidArgument, f"view_copy: {x.size} elements into {out.numel}")
    write_out(ctx, out, np.ascontiguousarray(x).reshape(out.sizes), "copy")
    return out


def permute_copy(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    dims = [d % x.ndim for d in ctx.int_list(args[1])] if x.ndim else []
    write_out(ctx, out, np.transpose(x, dims), "copy")
    return out


def expand_copy(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    write_out(ctx, out, np.broadcast_to(x, out.sizes), "copy")
    return out


def cat(ctx, args):
    out = out_tensor(args)
    lst = args[0]
    if not (isinstance(lst, tuple) and lst[0] == "TensorList"):
        raise RuntimeFailure(Error.InvalidArgument, "cat: expected a tensor list")
    parts = [tensor(ctx.method.values[i], "tensors").array(ctx.bus) for i in lst[1]]
    dim = int(args[1]) if len(args) > 2 else 0
    # like PyTorch, empty 1-D tensors are skipped in a concatenation of higher-rank tensors
    parts = [p for p in parts if not (p.ndim == 1 and p.size == 0 and len(out.sizes) > 1)]
    write_out(ctx, out, np.concatenate(parts, axis=dim % len(out.sizes)), "copy")
    return out


def mean_dim(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0]).astype(np.float32, copy=False)
    dims = ctx.int_list(args[1]) if args[1] is not None else list(range(x.ndim))
    dims = tuple(d % x.ndim for d in dims) or tuple(range(x.ndim))
    n = math.prod(x.shape[d] for d in dims)
    xm = np.moveaxis(x, dims, tuple(range(x.ndim - len(dims), x.ndim))).reshape(
        tuple(s for i, s in enumerate(x.shape) if i not in dims) + (n,))
    s = np.zeros(xm.shape[:-1], np.float32)
    for k in range(n):
        s = (s + xm[..., k]).astype(np.float32)
    r = (s / np.float32(n)).astype(np.float32)
    write_out(ctx, out, r.reshape(out.sizes), "mean")
    return out


def _pool_bounds(size, k, s, p, ceil_mode):
    if ceil_mode:
        o = -(-(size + 2 * p - k) // s) + 1
        if (o - 1) * s >= size + p:
            o -= 1
    else:
        o = (size + 2 * p - k) // s + 1
    return o


def avg_pool2d(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0]).astype(np.float32, copy=False)
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
    acc = np.zeros((n, c, oh, ow), np.float32)
    for dy in range(kh):
        iy = hs + dy
        my = (iy >= 0) & (iy < h) & (iy < he)
        for dx in range(kw):
            ix = ws + dx
            mx = (ix >= 0) & (ix < w) & (ix < we)
            m = my[:, None] & mx[None, :]
            vals = x[:, :, np.clip(iy, 0, h - 1)][:, :, :, np.clip(ix, 0, w - 1)]
            acc = np.where(m, (acc + vals).astype(np.float32), acc)
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


def mm(ctx, args):
    out = out_tensor(args)
    a = _arr(ctx, args[0]).astype(np.float32)
    b = _arr(ctx, args[1], "mat2").astype(np.float32)
    write_out(ctx, out, (a @ b).astype(np.float32), "mm")
    return out


def addmm(ctx, args):
    out = out_tensor(args)
    bias = _arr(ctx, args[0]).astype(np.float32)
    a = _arr(ctx, args[1], "mat1").astype(np.float32)
    b = _arr(ctx, args[2], "mat2").astype(np.float32)
    beta = np.float32(_scalar(args[3], 1)) if len(args) > 4 else np.float32(1)
    alpha = np.float32(_scalar(args[4], 1)) if len(args) > 5 else np.float32(1)
    write_out(ctx, out, (beta * bias + alpha * (a @ b)).astype(np.float32), "mm")
    return out


def to_copy(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    write_out(ctx, out, x, "copy")
    return out


PORTABLE_KERNELS = {
    "aten::add.out": _binary("add", np.add, has_alpha=True),
    "aten::sub.out": _binary("sub", np.subtract, has_alpha=True),
    "aten::mul.out": _binary("mul", np.multiply),
    "aten::div.out": _binary("div", np.divide),
    "aten::maximum.out": _binary("maximum", np.maximum),
    "aten::minimum.out": _binary("minimum", np.minimum),
    "aten::relu.out": _unary("relu", _relu),
    "aten::sigmoid.out": _unary("sigmoid", _sigmoid),
    "aten::tanh.out": _unary("tanh", np.tanh),
    "aten::exp.out": _unary("exp", np.exp),
    "aten::neg.out": _unary("neg", np.negative),
    "aten::abs.out": _unary("abs", np.abs),
    "aten::sqrt.out": _unary("sqrt", np.sqrt),
    "aten::rsqrt.out": _unary("rsqrt", lambda x: (np.float32(1) / np.sqrt(x)).astype(x.dtype)),
    "aten::hardtanh.out": hardtanh,
    "aten::clamp.out": clamp,
    "aten::_softmax.out": softmax,
    "aten::_log_softmax.out": log_softmax,
    "aten::view_copy.out": view_copy,
    "aten::_unsafe_view.out": view_copy,
    "aten::squeeze_copy.dims_out": view_copy,
    "aten::squeeze_copy.dim_out": view_copy,
    "aten::unsqueeze_copy.out": view_copy,
    "aten::clone.out": view_copy,
    "aten::_to_copy.out": to_copy,
    "aten::permute_copy.out": permute_copy,
    "aten::expand_copy.out": expand_copy,
    "aten::cat.out": cat,
    "aten::mean.out": mean_dim,
    "aten::avg_pool2d.out": avg_pool2d,
    "aten::mm.out": mm,
    "aten::addmm.out": addmm,
}
