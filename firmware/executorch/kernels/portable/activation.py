"""Activation functions, softmax and dropout (``op_relu.cpp``, ``op_hardtanh.cpp``, ``op_clamp.cpp``,
``op_softmax.cpp``, ``op_gelu.cpp``, ``op_glu.cpp``, ``op_native_dropout.cpp``, ...).

Float32 like the C++ kernels. ``_softmax``: the max, a sequential float32 sum of ``exp(x - max)``, then the
division, so results match bit for bit where ``expf`` does; ``_log_softmax`` likewise with ``x - max - log(sum)``.
"""

from __future__ import annotations

import math

import numpy as np

from ...error import Error, RuntimeFailure
from .._util import (
    arr, check, compute_dtype, compute_dtype_strict, emit, erf, float_ctype, is_float, operand, out_tensor, resize,
    scalar, store, tensor, unary_out_dtype, write_out)
from .._util import dim_index as _dim
from ..registry import kernel, register


def _relu(x):
    return np.maximum(x, np.asarray(0, x.dtype))


def _sigmoid(x):
    return (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(x.dtype)


@kernel("aten::hardtanh.out", "T,s,s")
def hardtanh(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0]).astype(compute_dtype(out), copy=False)
    lo, hi = scalar(args[1], -1.0), scalar(args[2], 1.0)
    return write_out(ctx, out, np.minimum(np.maximum(x, lo), hi).astype(x.dtype), "hardtanh")


@kernel("aten::clamp.out", "T,s?,s?")
def clamp(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0]).astype(compute_dtype(out), copy=False)
    lo, hi = scalar(args[1]), scalar(args[2])
    if lo is not None:
        x = np.maximum(x, np.asarray(lo, x.dtype))
    if hi is not None:
        x = np.minimum(x, np.asarray(hi, x.dtype))
    return write_out(ctx, out, x, "clamp")


def _exp_sum(x, dim: int):
    """What softmax and log_softmax compute alike: ``x`` with ``dim`` moved last, its max along it, ``exp(x - max)``
    and their float32 sum taken in order (the C++ loop)."""
    xm = np.moveaxis(x, dim, -1)
    mx = xm.max(axis=-1, keepdims=True)
    e = np.exp(xm - mx).astype(np.float32)
    s = np.zeros(xm.shape[:-1] + (1,), np.float32)
    for k in range(xm.shape[-1]):
        s = (s + e[..., k:k + 1]).astype(np.float32)
    return xm, mx, e, s


@kernel("aten::_softmax.out", "T,i,b")
def softmax(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0]).astype(np.float32, copy=False)
    dim = int(args[1]) % max(x.ndim, 1) if x.ndim else 0
    if x.ndim == 0:
        return write_out(ctx, out, np.ones((), np.float32), "softmax")
    xm, mx, e, s = _exp_sum(x, dim)
    r = np.moveaxis((e / s).astype(np.float32), -1, dim)
    return write_out(ctx, out, r, "softmax")


@kernel("aten::_log_softmax.out", "T,i,b")
def log_softmax(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0]).astype(np.float32, copy=False)
    dim = int(args[1]) % max(x.ndim, 1)
    xm, mx, _, s = _exp_sum(x, dim)
    r = np.moveaxis((xm - mx - np.log(s)).astype(np.float32), -1, dim)
    return write_out(ctx, out, r, "softmax")


@kernel("aten::gelu.out", "T,S")
def gelu(ctx, args):
    """``gelu.out(self, approximate="none")``: ``0.5 x (1 + erf(x / sqrt 2))`` or the tanh approximation."""
    out = out_tensor(args)
    x = arr(ctx, args[0]).astype(np.float32, copy=False)
    approx = args[1] if len(args) > 2 and isinstance(args[1], str) else "none"
    if approx == "tanh":
        k = np.float32(math.sqrt(2.0 / math.pi))
        inner = (k * (x + np.float32(0.044715) * x * x * x)).astype(np.float32)
        r = np.float32(0.5) * x * (np.float32(1) + np.tanh(inner))
    elif approx == "none":
        r = np.float32(0.5) * x * (np.float32(1) + erf(x * np.float32(math.sqrt(0.5))).astype(np.float32))
    else:
        raise RuntimeFailure(Error.InvalidArgument, f"gelu: approximate={approx!r}")
    return store(ctx, out, r.astype(np.float32), "gelu")


@kernel("aten::elu.out", "T,s,s,s")
def elu(ctx, args):
    """``elu.out(self, alpha, scale, input_scale)``: ``x > 0 ? x * scale : expm1(x * input_scale) * alpha * scale``."""
    out = out_tensor(args)
    x = arr(ctx, args[0]).astype(np.float32, copy=False)
    alpha = np.float32(scalar(args[1], 1.0))
    scale = np.float32(scalar(args[2], 1.0)) if len(args) > 4 else np.float32(1)
    iscale = np.float32(scalar(args[3], 1.0)) if len(args) > 5 else np.float32(1)
    neg = (np.expm1(x * iscale) * (alpha * scale)).astype(np.float32)
    return store(ctx, out, np.where(x > 0, x * scale, neg).astype(np.float32), "elu")


@kernel("aten::hardsigmoid.out", "T")
def hardsigmoid(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0]).astype(np.float32, copy=False)
    r = np.minimum(np.maximum(x + np.float32(3), np.float32(0)), np.float32(6)) / np.float32(6)
    return store(ctx, out, r.astype(np.float32), "hardsigmoid")


@kernel("aten::silu.out", "T")
def silu(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0]).astype(np.float32, copy=False)
    return store(ctx, out, (x / (np.float32(1) + np.exp(-x))).astype(np.float32), "silu")


@kernel("aten::softplus.out", "T,s,s")
def softplus(ctx, args):
    """``softplus.out(self, beta, threshold)``."""
    out = out_tensor(args)
    x = arr(ctx, args[0]).astype(np.float32, copy=False)
    beta = np.float32(scalar(args[1], 1.0))
    th = np.float32(scalar(args[2], 20.0))
    bx = x * beta
    r = np.where(bx > th, x, np.log1p(np.exp(bx)) / beta)
    return store(ctx, out, r.astype(np.float32), "softplus")


@kernel("aten::clamp.Tensor_out", "T,T?,T?")
def clamp_tensor(ctx, args):
    """``clamp.Tensor_out(self, min?, max?)``."""
    out = out_tensor(args)
    dt = compute_dtype_strict(out)
    x = arr(ctx, args[0]).astype(dt)
    if args[1] is not None:
        x = np.maximum(x, operand(ctx, args[1], dt))
    if args[2] is not None:
        x = np.minimum(x, operand(ctx, args[2], dt))
    return store(ctx, out, x, "clamp")


@kernel("aten::glu.out", "T,i")
def glu(ctx, args):
    """``glu.out(self, dim)``: ``a * (1 / (1 + exp(-b)))`` of the two halves along ``dim``, in the input's float
    type (float for Half)."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    d = _dim(args[1], len(t.sizes), "glu")
    check(is_float(t) and is_float(out), "glu: input and out must be float tensors")
    x = t.array(ctx.bus)
    check(x.ndim > 0 and x.shape[d] % 2 == 0, f"glu: halving dimension {d} must be even")
    ct = float_ctype(x.dtype)
    h = x.shape[d] // 2
    a = np.take(x, np.arange(h), axis=d).astype(ct)
    b = np.take(x, np.arange(h, 2 * h), axis=d).astype(ct)
    want = x.shape[:d] + (h,) + x.shape[d + 1:]
    check(len(out.sizes) == x.ndim, f"glu: out has rank {len(out.sizes)}, the input {x.ndim}")
    with np.errstate(all="ignore"):
        r = (a * (ct(1) / (ct(1) + np.exp(-b)))).astype(ct)
    return emit(ctx, out, r.reshape(want), "glu")


@kernel("aten::native_dropout.out", "T,f,b?")
def native_dropout(ctx, args):
    """``native_dropout.out(input, p, train?, out0, out1)``: with ``train`` false (or ``p == 0``) a copy and an
    all-true mask. Training mode (``train`` true or None) draws a random mask (``u >= p``) as the C++ does (from
    std::random_device there; here from a generator seeded with the simulated CPU cycle count, so that a run is
    reproducible); kept values are not rescaled."""
    t = tensor(args[0], "input")
    out, mask = tensor(args[3], "out"), tensor(args[4], "mask")
    p = float(args[1])
    train = args[2]
    check(t.scalar_type == out.scalar_type, "native_dropout: input and out types differ")
    check(mask.scalar_type == 11, "native_dropout: mask must be Bool")
    check(0 <= p <= 1, f"dropout probability has to be between 0 and 1 but got {p}")
    x = t.array(ctx.bus)
    if (train is None or bool(train)) and p != 0:
        check(is_float(t), "native_dropout: training mode needs a float input")
        keep = np.random.default_rng(ctx.bus.cpu_cycles()).random(x.shape) >= p
        emit(ctx, mask, keep, "dropout")
        emit(ctx, out, np.where(keep, x, np.zeros((), x.dtype)), "dropout")
    else:
        resize(ctx, mask, x.shape, "native_dropout")
        emit(ctx, out, x, "copy")
        emit(ctx, mask, np.ones(x.shape, bool), "copy")
    return None


@kernel("aten::leaky_relu.out", "T,s")
def leaky_relu(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0]).astype(np.float32, copy=False)
    slope = np.float32(args[1] if len(args) > 2 and args[1] is not None else 0.01)
    return write_out(ctx, out, np.where(x > 0, x, x * slope).astype(np.float32), "leaky_relu")


@kernel("aten::hardswish.out", "T")
def hardswish(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0]).astype(np.float32, copy=False)
    r = x * np.minimum(np.maximum(x + np.float32(3), np.float32(0)), np.float32(6)) / np.float32(6)
    return write_out(ctx, out, r.astype(np.float32), "hardswish")


register(
    ("aten::relu.out", "T", unary_out_dtype("relu", _relu)),
    ("aten::sigmoid.out", "T", unary_out_dtype("sigmoid", _sigmoid)),
)
