"""Matrix products and distances: ``mm``, ``addmm``, ``bmm``, ``linear``, ``_cdist_forward``, ``_pdist_forward``.

Products use numpy's float32 matrix multiply (the summation order differs from the C++ loops in the last bits);
distances accumulate component by component like ``distance_util.h``. Work reported: multiply-accumulates.
"""

from __future__ import annotations

import math

import numpy as np

from ...error import Error, RuntimeFailure
from .._util import arr, check, emit, fail, float_ctype, is_float, opt_arr, out_tensor, scalar, tensor, write_out
from ..registry import kernel


@kernel("aten::mm.out", "T,T")
def mm(ctx, args):
    out = out_tensor(args)
    a = arr(ctx, args[0]).astype(np.float32)
    b = arr(ctx, args[1], "mat2").astype(np.float32)
    return write_out(ctx, out, (a @ b).astype(np.float32), "mm")


@kernel("aten::addmm.out", "T,T,T,s,s")
def addmm(ctx, args):
    out = out_tensor(args)
    bias = arr(ctx, args[0]).astype(np.float32)
    a = arr(ctx, args[1], "mat1").astype(np.float32)
    b = arr(ctx, args[2], "mat2").astype(np.float32)
    beta = np.float32(scalar(args[3], 1)) if len(args) > 4 else np.float32(1)
    alpha = np.float32(scalar(args[4], 1)) if len(args) > 5 else np.float32(1)
    return write_out(ctx, out, (beta * bias + alpha * (a @ b)).astype(np.float32), "mm")


def _distance(diff_fn, m: int, p: float, ct):
    """Norm over the last axis of ``diff_fn(k)`` (|a - b| for component k), accumulated component by component
    like distance_util.h: L0 count, L1 sum, L2 sqrt of the sum of squares, Linf max, Lp ``pow(sum pow(d, p),
    1.0 / p)``."""
    agg = None
    pf = ct(p)
    for k in range(m):
        d = diff_fn(k)
        if p == 0.0:
            up = (d != 0).astype(ct)
        elif p == 2.0:
            up = (d * d).astype(ct)
        elif p in (1.0, math.inf):
            up = d
        else:
            up = np.power(d, pf).astype(ct)
        if agg is None:
            agg = np.zeros_like(up)
        # Linf: std::max(agg, up) keeps agg unless agg < up (a NaN component is skipped)
        agg = (np.where(agg < up, up, agg) if p == math.inf else (agg + up)).astype(ct)
    if p == 2.0:
        agg = np.sqrt(agg).astype(ct)
    elif p not in (0.0, 1.0, math.inf):
        agg = np.power(agg.astype(np.float64), 1.0 / float(pf)).astype(ct)
    return agg


@kernel("aten::_cdist_forward.out", "T,T,f,i?")
def cdist_forward(ctx, args):
    """``_cdist_forward.out(x1, x2, p, compute_mode?)``: p-norm distances between the rows of x1 (.., P, M) and
    x2 (.., R, M) with broadcast batch dims; float tensors of one type."""
    out = out_tensor(args)
    a_t, b_t = tensor(args[0], "x1"), tensor(args[1], "x2")
    p = float(args[2])
    mode = args[3] if len(args) > 4 else None
    check(a_t.scalar_type == b_t.scalar_type == out.scalar_type, "cdist: x1, x2 and out types differ")
    check(is_float(out), "cdist: float tensors expected")
    check(len(a_t.sizes) >= 2 and len(b_t.sizes) >= 2, "cdist: x1 and x2 need at least 2 dimensions")
    check(a_t.sizes[-1] == b_t.sizes[-1], "cdist: x1 and x2 differ in the last dimension")
    check(p >= 0, f"cdist only supports non-negative p values; p = {p}")
    check(mode is None or 0 <= int(mode) <= 2, f"possible modes: 0, 1, 2, but was: {mode}")
    a, b = a_t.array(ctx.bus), b_t.array(ctx.bus)
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        fail("cdist: batch dimensions do not broadcast")
    ct = float_ctype(out.dtype)
    pn, rn, m = a.shape[-2], b.shape[-2], a.shape[-1]
    shape = batch + (pn, rn)
    if m == 0 or math.prod(shape) == 0:
        return emit(ctx, out, np.zeros(shape, ct), "cdist")
    a = np.broadcast_to(a, batch + a.shape[-2:]).astype(ct)
    b = np.broadcast_to(b, batch + b.shape[-2:]).astype(ct)
    r = _distance(lambda k: np.abs(a[..., :, None, k] - b[..., None, :, k]).astype(ct), m, p, ct)
    return emit(ctx, out, r, "cdist", math.prod(shape) * m)


@kernel("aten::_pdist_forward.out", "T,f")
def pdist_forward(ctx, args):
    """``_pdist_forward.out(self, p)``: distances between the rows ``i < j`` of a 2-d self, in that order."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    p = float(args[1])
    check(t.scalar_type == out.scalar_type and is_float(t), "pdist: float self and out of one type expected")
    check(len(t.sizes) == 2, "pdist: self must be 2-d")
    check(p >= 0, f"pdist only supports non-negative p values; p = {p}")
    x = t.array(ctx.bus)
    ct = float_ctype(t.dtype)
    n, m = x.shape
    i, j = np.triu_indices(n, 1)
    if i.size == 0 or m == 0:
        return emit(ctx, out, np.zeros(i.size, ct), "pdist")
    xf = x.astype(ct)
    r = _distance(lambda k: np.abs(xf[i, k] - xf[j, k]).astype(ct), m, p, ct)
    return emit(ctx, out, r, "pdist", i.size * m)


@kernel("aten::bmm.out", "T,T")
def bmm(ctx, args):
    out = out_tensor(args)
    a = arr(ctx, args[0]).astype(np.float32, copy=False)
    b = arr(ctx, args[1], "mat2").astype(np.float32, copy=False)
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeFailure(Error.InvalidArgument, f"bmm: shapes {a.shape} and {b.shape} do not fit")
    return write_out(ctx, out, np.matmul(a, b).astype(np.float32), "mm",
                     a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2])


@kernel("aten::linear.out", "T,T,T?")
def linear(ctx, args):
    """``aten::linear.out(input, weight, bias?, *, out)``: ``input @ weight.T + bias``."""
    out = out_tensor(args)
    x = arr(ctx, args[0], "input").astype(np.float32, copy=False)
    w = arr(ctx, args[1], "weight").astype(np.float32, copy=False)
    b = opt_arr(ctx, args[2], "bias") if len(args) > 3 else None
    r = np.matmul(x, w.T).astype(np.float32)
    if b is not None:
        r = (r + b.astype(np.float32)).astype(np.float32)
    return write_out(ctx, out, r, "mm", x.size * w.shape[0])
