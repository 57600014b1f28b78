"""Reductions and sorting (``op_sum.cpp``, ``op_mean.cpp``, ``op_amax.cpp``, ``op_argmax.cpp``, ``op_any.cpp``,
``op_var.cpp``, ``op_cumsum.cpp``, ``op_prod.cpp``, ``op_max.cpp``, ``op_topk.cpp``, ``op_sort.cpp``).

Float sums accumulate in float32 in the C++ loop order (row-major, one element after another; ``np.cumsum`` is
strictly sequential), so they match the C++ bit for bit; ``var.correction`` and the dim reductions over several
axes use numpy's float32 sums, which agree up to the last bits. ``argmax``/``argmin``/``max.dim``: the first
index of the extreme value, NaN counting as extreme. ``topk``/``sort``: stable order for ties.
"""

from __future__ import annotations

import math

import numpy as np

from .._util import (
    arr, check, compute_dtype_strict, dim_set, emit, float_ctype, is_float, out_tensor, scalar, store, tensor,
    write_out)
from .._util import dim_index as _dim
from ..registry import kernel, register


@kernel("aten::mean.out", "T,I?,b,i?")
def mean_dim(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0]).astype(np.float32, copy=False)
    dims = ctx.int_list(args[1]) if args[1] is not None else list(range(x.ndim))
    dims = tuple(d % x.ndim for d in dims) or tuple(range(x.ndim))
    n = math.prod(x.shape[d] for d in dims)
    xm = np.moveaxis(x, dims, tuple(range(x.ndim - len(dims), x.ndim))).reshape(
        tuple(s for i, s in enumerate(x.shape) if i not in dims) + (n,))
    s = np.zeros(xm.shape[:-1], np.float32)
    for k in range(n):
        s = (s + xm[..., k]).astype(np.float32)
    r = (s / np.float32(n)).astype(np.float32)
    return write_out(ctx, out, r.reshape(out.sizes), "mean")


def _reduce(name, fn, with_dims=True):
    """``amax.out(self, dim[], keepdim)`` style reductions over a dimension list."""
    def kernel(ctx, args):
        out = out_tensor(args)
        x = arr(ctx, args[0])
        dims = dim_set(ctx, args[1], x.ndim, name) if with_dims else tuple(range(x.ndim))
        keep = bool(args[2]) if with_dims and len(args) > 3 and isinstance(args[2], bool) else False
        if x.ndim == 0:
            return store(ctx, out, fn(x, None), name)
        r = fn(x, dims)
        if keep:
            r = np.expand_dims(r, dims)
        return store(ctx, out, r, name)
    return kernel


def _arg_reduce(name, fn):
    """``argmax.out(self, dim?, keepdim)``: the first index of the extreme value (NaN counts as extreme)."""
    def kernel(ctx, args):
        out = out_tensor(args)
        x = arr(ctx, args[0])
        dim = args[1]
        keep = bool(args[2]) if len(args) > 3 else False
        if dim is None:
            r = np.asarray(fn(x.reshape(-1)), np.int64)
            if keep:
                r = r.reshape((1,) * x.ndim)
        else:
            d = _dim(dim, x.ndim, name)
            r = fn(x, axis=d).astype(np.int64) if x.ndim else np.zeros((), np.int64)
            if keep and x.ndim:
                r = np.expand_dims(r, d)
        return store(ctx, out, r, name)
    return kernel


def _nan_argmax(x, axis=None):
    if x.dtype.kind == "f" and np.isnan(x).any():
        return np.argmax(np.isnan(x), axis=axis)
    return np.argmax(x, axis=axis)


def _nan_argmin(x, axis=None):
    if x.dtype.kind == "f" and np.isnan(x).any():
        return np.argmax(np.isnan(x), axis=axis)
    return np.argmin(x, axis=axis)


def _max_min_dim(name, vfn, ifn):
    """``max.dim_max(self, dim, keepdim, *, max, max_values)``: values and indices."""
    def kernel(ctx, args):
        x = arr(ctx, args[0])
        d = _dim(args[1], x.ndim, name)
        keep = bool(args[2])
        vals_t = tensor(args[3], "max")
        idx_t = tensor(args[4], "indices")
        v = vfn(x, axis=d)
        i = ifn(x, axis=d).astype(np.int64)
        if keep:
            v, i = np.expand_dims(v, d), np.expand_dims(i, d)
        store(ctx, vals_t, v, name)
        store(ctx, idx_t, i, name)
        return None
    return kernel


def any_all(name, fn):
    """``any.out(self, dim, keepdim)``, ``any.dims_out(self, dim[]?, keepdim)``, ``any.all_out(self)``."""
    def kernel(ctx, args):
        out = out_tensor(args)
        x = arr(ctx, args[0]).astype(bool)
        if len(args) <= 2:
            return store(ctx, out, fn(x), name)
        v = args[1]
        if isinstance(v, int) and not isinstance(v, bool):
            dims = (_dim(v, x.ndim, name),)
        else:
            dims = dim_set(ctx, v, x.ndim, name)
        keep = bool(args[2]) if len(args) > 3 else False
        r = fn(x, axis=dims) if x.ndim else fn(x)
        if keep and x.ndim:
            r = np.expand_dims(r, dims)
        return store(ctx, out, r, name)
    return kernel


@kernel("aten::var.correction_out", "T,I?,s?,b")
def var_correction(ctx, args):
    """``var.correction_out(self, dim?, *, correction?, keepdim)``: float32 mean, then the sum of squared
    deviations divided by ``N - correction``."""
    out = out_tensor(args)
    x = arr(ctx, args[0]).astype(np.float32)
    dims = dim_set(ctx, args[1], x.ndim, "var")
    corr = scalar(args[2], 1) if len(args) > 4 else 1
    keep = bool(args[3]) if len(args) > 4 else False
    n = math.prod(x.shape[d] for d in dims) if x.ndim else 1
    mean = (x.sum(axis=dims, keepdims=True, dtype=np.float32) / np.float32(n)).astype(np.float32)
    ss = ((x - mean) ** 2).sum(axis=dims, keepdims=keep, dtype=np.float32)
    den = max(n - corr, 0)
    r = ss / np.float32(den) if den > 0 else np.full(ss.shape, np.nan, np.float32)
    return store(ctx, out, r.astype(np.float32), "var")


@kernel("aten::cumsum.out", "T,i,i?")
def cumsum(ctx, args):
    """``cumsum.out(self, dim, *, dtype?)``: sequential running sum in the output type."""
    out = out_tensor(args)
    x = arr(ctx, args[0])
    d = _dim(args[1], x.ndim, "cumsum") if x.ndim else 0
    dt = compute_dtype_strict(out) if out.dtype.kind == "f" else np.int64
    if x.ndim == 0:
        return store(ctx, out, x.astype(dt), "cumsum")
    return store(ctx, out, np.cumsum(x.astype(dt), axis=d, dtype=dt), "cumsum")


@kernel("aten::prod.int_out", "T,i,b,i?")
@kernel("aten::prod.out", "T,i?")
def prod(ctx, args):
    """``prod.int_out(self, dim, keepdim, *, dtype?)`` / ``prod.out(self, *, dtype?)``."""
    out = out_tensor(args)
    x = arr(ctx, args[0])
    dt = compute_dtype_strict(out) if out.dtype.kind == "f" else np.int64
    if len(args) > 3 and isinstance(args[1], int) and not isinstance(args[1], bool):
        d = _dim(args[1], x.ndim, "prod")
        r = np.prod(x.astype(dt), axis=d, dtype=dt, keepdims=bool(args[2]))
    else:
        r = np.prod(x.astype(dt), dtype=dt)
    return store(ctx, out, r, "prod")


@kernel("aten::topk.values", "T,i,i,b,b")
def topk(ctx, args):
    """``topk.values(self, k, dim, largest, sorted, *, values, indices)``: stable order for ties (lowest
    index first)."""
    x = arr(ctx, args[0])
    k = int(args[1])
    d = _dim(args[2], x.ndim, "topk") if x.ndim else 0
    largest = bool(args[3])
    vals_t, idx_t = tensor(args[5], "values"), tensor(args[6], "indices")
    key = -x if largest and x.dtype.kind != "u" else x
    order = np.argsort(key, axis=d, kind="stable")
    if largest and x.dtype.kind == "u":
        order = np.flip(np.argsort(x, axis=d, kind="stable"), axis=d)
    idx = np.take(order, np.arange(k), axis=d)
    store(ctx, vals_t, np.take_along_axis(x, idx, axis=d), "topk")
    store(ctx, idx_t, idx.astype(np.int64), "topk")
    return None


@kernel("aten::sort.values", "T,i,b")
def sort(ctx, args):
    """``sort.values(self, dim, descending, *, values, indices)`` (stable)."""
    x = arr(ctx, args[0])
    d = _dim(args[1], x.ndim, "sort") if x.ndim else 0
    desc = bool(args[2])
    vals_t, idx_t = tensor(args[3], "values"), tensor(args[4], "indices")
    order = np.argsort(-x if desc and x.dtype.kind in "fi" else x, axis=d, kind="stable")
    store(ctx, vals_t, np.take_along_axis(x, order, axis=d), "sort")
    store(ctx, idx_t, order.astype(np.int64), "sort")
    return None


def _seqsum(x: np.ndarray, dt) -> np.ndarray:
    """Sum over the last axis one element after another in ``dt`` (the C++ accumulation loop)."""
    if x.shape[-1] == 0:
        return np.zeros(x.shape[:-1], dt)
    return np.cumsum(x.astype(dt, copy=False), axis=-1, dtype=dt)[..., -1]


def _reduce_layout(x: np.ndarray, dims: tuple):
    """``x`` with the reduced dims moved last and merged (row-major over them), and the kept shape."""
    kept = [i for i in range(x.ndim) if i not in dims]
    n = math.prod(x.shape[d] for d in dims)
    xm = np.transpose(x, kept + list(dims)).reshape([x.shape[i] for i in kept] + [n])
    return xm, n


def _dim_list(ctx, v, ndim: int, what: str) -> tuple:
    """An ``int[]?`` dim list as check_dim_list_is_valid takes it (None or empty: every dim)."""
    ds = ctx.int_list(v) if v is not None else []
    if not ds:
        return tuple(range(ndim))
    norm = [_dim(d, ndim, what) for d in ds]
    check(len(set(norm)) == len(norm), f"{what}: dim list {ds} has duplicates")
    return tuple(sorted(norm)) if ndim else ()


def _reduced_shape(shape, dims, keep):
    if keep:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _can_cast(src, dst) -> bool:
    """c10::canCast: no float to integral/bool, no non-bool to bool, no complex to non-complex."""
    s, d = np.dtype(src), np.dtype(dst)
    if s.kind == "c" and d.kind != "c":
        return False
    if s.kind == "f" and d.kind in "iub":
        return False
    return not (s.kind != "b" and d.kind == "b")


def _variance(ctx, name, x_t, out_t, dims_v, denom_fn, keep, mean_t=None):
    x = x_t.array(ctx.bus)
    dims = _dim_list(ctx, dims_v, x.ndim, name)
    shape = _reduced_shape(x.shape, dims, keep)
    ct = float_ctype(out_t.dtype)
    xm, n = _reduce_layout(x, dims) if x.ndim else (x.reshape(1, 1), 1)
    den = denom_fn(n)
    if n == 0 or den <= 0:
        var = np.full(xm.shape[:-1], np.nan, ct)
        mean = np.full(xm.shape[:-1], np.nan, ct)
    else:
        xf = xm.astype(ct)
        mean = (_seqsum(xf, ct) / ct(n)).astype(ct)
        dev = (xf - mean[..., None]).astype(ct)
        s2 = _seqsum((dev * dev).astype(ct), ct)
        var = (s2.astype(np.float64) / float(den)).astype(ct)
    emit(ctx, out_t, var.reshape(shape), name, x.size)
    if mean_t is not None:
        emit(ctx, mean_t, mean.reshape(shape), name, 0)


@kernel("aten::var.out", "T,I?,b,b")
def var_out(ctx, args):
    """``var.out(self, dim[]?, unbiased, keepdim)``: float input and out only; ``N - 1`` or ``N``."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    check(is_float(t) and is_float(out), "var: input and out must be float tensors")
    unbiased = bool(args[2])
    _variance(ctx, "var", t, out, args[1], lambda n: n - 1 if unbiased else n, bool(args[3]))
    return out


@kernel("aten::var_mean.correction_out", "T,I?,s?,b")
def var_mean_correction(ctx, args):
    """``var_mean.correction_out(self, dim[]?, *, correction?, keepdim, out0, out1)``: the variance (``N -
    correction``, NaN when that is not positive) in out0 and the mean in out1."""
    t = tensor(args[0], "self")
    out0, out1 = tensor(args[4], "out0"), tensor(args[5], "out1")
    check(is_float(t) and is_float(out0) and is_float(out1), "var_mean: float tensors expected")
    corr = float(scalar(args[2], 1)) if args[2] is not None else 1.0
    _variance(ctx, "var_mean", t, out0, args[1], lambda n: n - corr, bool(args[3]), mean_t=out1)
    return None


def _extreme_all(name, is_max):
    """``max.unary_out`` / ``min.unary_out(self)``: a 0-d out; values cast to the out type, the first NaN wins,
    an empty input gives -inf/+inf (lowest/highest for integers)."""
    def kernel(ctx, args):
        out = out_tensor(args)
        t = tensor(args[0], "self")
        check(t.dtype is not None and out.dtype is not None and t.dtype.kind in "fiub" and out.dtype.kind in "fiub",
               f"{name}: unsupported types")
        check(_can_cast(t.dtype, out.dtype), f"{name}: cannot cast {t.type_name} to {out.type_name}")
        v = t.array(ctx.bus).astype(out.dtype).reshape(-1)
        if v.dtype.kind == "f":
            if np.isnan(v).any():
                return emit(ctx, out, np.asarray(np.nan, out.dtype), name, t.numel)
            init = -np.inf if is_max else np.inf
        elif v.dtype == np.bool_:
            init = False if is_max else True
        else:
            info = np.iinfo(v.dtype)
            init = info.min if is_max else info.max
        r = (np.max if is_max else np.min)(v, initial=init)
        return emit(ctx, out, np.asarray(r, out.dtype), name, t.numel)
    return kernel


@kernel("aten::mean.dtype_out", "T,i?")
def mean_dtype(ctx, args):
    """``mean.dtype_out(self, *, dtype?)``: the mean of every element, summed in float in row-major order and
    divided by ``(float)N``."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    dtype = args[1] if len(args) > 2 else None
    if dtype is not None:
        check(int(dtype) == out.scalar_type and is_float(out), f"mean: dtype {dtype} and out {out.type_name}")
    else:
        check(is_float(t) and is_float(out), "mean: input and out must be float tensors")
    ct = float_ctype(out.dtype)
    x = t.array(ctx.bus).reshape(-1)
    s = _seqsum(x.astype(ct), ct)
    r = (s / np.float32(x.size)).astype(ct) if x.size else np.asarray(np.nan, ct)
    return emit(ctx, out, np.asarray(r), "mean", x.size)


@kernel("aten::sum.IntList_out", "T,I?,b,i?")
def sum_dim(ctx, args):
    """``aten::sum.IntList_out(self, dim?, keepdim, *, dtype?, out)``: sequential float32 sum like the C++."""
    out = out_tensor(args)
    x = arr(ctx, args[0])
    dims = ctx.int_list(args[1]) if args[1] is not None else []
    dims = tuple(sorted({_dim(d, x.ndim, "sum") for d in dims})) or tuple(range(x.ndim))
    dt = np.float32 if out.dtype is not None and out.dtype.kind == "f" else np.int64
    xm = np.moveaxis(x.astype(dt), dims, tuple(range(x.ndim - len(dims), x.ndim)))
    n = math.prod(x.shape[d] for d in dims) if dims else 1
    xm = xm.reshape(xm.shape[:x.ndim - len(dims)] + (n,))
    s = np.zeros(xm.shape[:-1], dt)
    for k in range(n):
        s = (s + xm[..., k]).astype(dt)
    return write_out(ctx, out, s, "sum", x.size)


register(
    ("aten::amax.out", "T,I,b", _reduce("amax", lambda x, d: np.max(x, axis=d))),
    ("aten::amin.out", "T,I,b", _reduce("amin", lambda x, d: np.min(x, axis=d))),
    ("aten::argmax.out", "T,i?,b", _arg_reduce("argmax", _nan_argmax)),
    ("aten::argmin.out", "T,i?,b", _arg_reduce("argmin", _nan_argmin)),
    ("aten::max.dim_max", "T,i,b", _max_min_dim("max", np.max, _nan_argmax)),
    ("aten::min.dim_min", "T,i,b", _max_min_dim("min", np.min, _nan_argmin)),
    ("aten::any.out", "T,i,b", any_all("any", np.any)),
    ("aten::any.dims_out", "T,I?,b", any_all("any", np.any)),
    ("aten::any.all_out", "T", any_all("any", np.any)),
    ("aten::all.out", "T,i,b", any_all("all", np.all)),
    ("aten::all.dims_out", "T,I?,b", any_all("all", np.all)),
    ("aten::all.all_out", "T", any_all("all", np.all)),
    ("aten::max.unary_out", "T", _extreme_all("max", True)),
    ("aten::min.unary_out", "T", _extreme_all("min", False)),
)
