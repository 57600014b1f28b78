"""Indexing, gathering, scattering and masks: ``index``, ``index_select``, ``gather``, ``embedding``, ``where``,
``masked_fill``/``masked_scatter``/``masked_select``, ``nonzero``, ``slice_scatter``/``select_scatter``,
``scatter``/``scatter_add``, ``index_put``/``index_put_``, ``repeat_interleave``.

Scatters keep the element order of the C++ loops: a later write to the same position wins; ``scatter_add`` and
``index_put(accumulate)`` add one element after another in index order. ``nonzero`` and ``masked_select`` resize a
``DYNAMIC_BOUND`` out (``emit``).
"""

from __future__ import annotations

import math

import numpy as np

from ...error import Error, RuntimeFailure
from .._util import (
    arr, check, compute_dtype_strict, default_order, emit, fail, operand, out_tensor, scalar, store, tensor)
from .._util import dim_index as _dim
from .._util import tensor_list as _tensor_list
from ..registry import kernel


@kernel("aten::where.self_out", "T,T,T")
def where(ctx, args):
    """``where.self_out(condition, self, other)``."""
    out = out_tensor(args)
    c = arr(ctx, args[0], "condition").astype(bool)
    a = operand(ctx, args[1])
    b = operand(ctx, args[2])
    dt = compute_dtype_strict(out)
    return store(ctx, out, np.where(c, a.astype(dt), b.astype(dt)), "where")


@kernel("aten::masked_fill.Scalar_out", "T,T,s")
def masked_fill(ctx, args):
    """``masked_fill.Scalar_out(self, mask, value)``."""
    out = out_tensor(args)
    x = arr(ctx, args[0])
    m = arr(ctx, args[1], "mask").astype(bool)
    v = np.asarray(scalar(args[2])).astype(x.dtype)
    return store(ctx, out, np.where(m, v, x), "masked_fill")


@kernel("aten::index.Tensor_out", "T,O")
def index_tensor(ctx, args):
    """``index.Tensor_out(self, indices: Tensor?[])``: advanced indexing with long/int or bool index tensors."""
    out = out_tensor(args)
    x = arr(ctx, args[0])
    idx = []
    for t in _tensor_list(ctx, args[1], "indices"):
        if t is None:
            idx.append(slice(None))
        else:
            a = t.array(ctx.bus)
            idx.append(a.astype(bool) if a.dtype == np.bool_ else a.astype(np.int64))
    return store(ctx, out, x[tuple(idx)], "index")


@kernel("aten::index_select.out", "T,i,T")
def index_select(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0])
    d = _dim(args[1], x.ndim, "index_select")
    i = arr(ctx, args[2], "index").astype(np.int64).reshape(-1)
    return store(ctx, out, np.take(x, i, axis=d), "index")


@kernel("aten::gather.out", "T,i,T,b")
def gather(ctx, args):
    """``gather.out(self, dim, index, *, sparse_grad)``."""
    out = out_tensor(args)
    x = arr(ctx, args[0])
    d = _dim(args[1], x.ndim, "gather")
    i = arr(ctx, args[2], "index").astype(np.int64)
    return store(ctx, out, np.take_along_axis(x[tuple(slice(0, s) if k != d else slice(None)
                                                        for k, s in enumerate(i.shape))], i, axis=d), "index")


@kernel("aten::embedding.out", "T,T,i,b,b")
def embedding(ctx, args):
    """``embedding.out(weight, indices, padding_idx, scale_grad_by_freq, sparse)``: rows of ``weight``."""
    out = out_tensor(args)
    w = arr(ctx, args[0], "weight")
    i = arr(ctx, args[1], "indices").astype(np.int64)
    if i.size and (i.min() < 0 or i.max() >= w.shape[0]):
        raise RuntimeFailure(Error.InvalidArgument, "embedding: index out of range")
    return store(ctx, out, w[i], "index")


def _slice_index(n, start, end, step):
    start = 0 if start is None else int(start)
    end = n if end is None else int(end)
    if start < 0:
        start += n
    if end < 0:
        end += n
    start = min(max(start, 0), n)
    end = min(max(end, start), n)
    return slice(start, end, int(step))


def _scatter_along(ctx, args, name, position):
    """A copy of ``self`` with ``src`` written at ``position(size)`` along ``dim`` (arguments ``self, src, dim,
    ...``)."""
    out = out_tensor(args)
    x = arr(ctx, args[0]).copy()
    src = arr(ctx, args[1], "src")
    d = _dim(args[2], x.ndim, name)
    sl = [slice(None)] * x.ndim
    sl[d] = position(x.shape[d])
    x[tuple(sl)] = src
    return store(ctx, out, x, "copy")


@kernel("aten::slice_scatter.out", "T,T,i,i?,i?,i")
def slice_scatter(ctx, args):
    """``slice_scatter.out(self, src, dim, start?, end?, step)``."""
    return _scatter_along(ctx, args, "slice_scatter",
                          lambda n: _slice_index(n, args[3], args[4], args[5] if len(args) > 6 else 1))


@kernel("aten::select_scatter.out", "T,T,i,i")
def select_scatter(ctx, args):
    """``select_scatter.out(self, src, dim, index)``."""
    def position(n):
        i = int(args[3])
        return i + n if i < 0 else i
    return _scatter_along(ctx, args, "select_scatter", position)


def _fits(value, dtype) -> bool:
    """``check_overflow_scalar_cast``: does the scalar convert to ``dtype`` without overflow (c10::overflows)?"""
    dt = np.dtype(dtype)
    if dt == np.bool_ or isinstance(value, bool):
        return True
    if dt.kind == "f":
        v = float(value)
        return math.isinf(v) or math.isnan(v) or abs(v) <= float(np.finfo(dt).max)
    info = np.iinfo(dt)
    if isinstance(value, float):
        return not math.isnan(value) and info.min <= value <= info.max
    v = int(value)
    if dt.kind == "u" and v < 0:  # negative values wrap into unsigned types (two's complement)
        return -v <= info.max
    return info.min <= v <= info.max


def _scatter_targets(ctx, name, self_t, d, index_t, src_t=None):
    """The flat out positions (index order) and, with ``src``, the source values of a scatter; the checks of
    check_scatter_add_args (with ``src``) or check_gather_args."""
    check(index_t.scalar_type == 4, f"{name}: index must be int64, got {index_t.type_name}")
    x = self_t.array(ctx.bus)
    xs = x.shape if x.ndim else (1,)
    d = _dim(d, x.ndim, name)
    idx = index_t.array(ctx.bus)
    if idx.size == 0:
        return d, np.zeros(0, np.int64), (None if src_t is None else np.zeros(0, x.dtype))
    ishape = idx.shape if idx.ndim else (1,)
    idx = idx.reshape(ishape)
    check(len(ishape) == len(xs), f"{name}: self and index dimensionality differ")
    if src_t is not None:
        src = src_t.array(ctx.bus)
        ss = src.shape if src.ndim else (1,)
        check(len(ss) == len(xs), f"{name}: self and src dimensionality differ")
        src = src.reshape(ss)
        for k in range(len(xs)):
            check(ishape[k] <= ss[k], f"{name}: index dimension {k} is larger than src's")
    for k in range(len(xs)):
        if k != d:
            check(ishape[k] <= xs[k], f"{name}: index dimension {k} is larger than self's")
    check(bool(np.all((idx >= 0) & (idx < xs[d]))), f"{name}: index out of bounds for dimension {d} "
                                                     f"with size {xs[d]}")
    coords = list(np.indices(ishape, dtype=np.int64))
    coords[d] = idx
    flat = np.ravel_multi_index(tuple(coords), xs).reshape(-1)
    vals = None
    if src_t is not None:
        vals = src[tuple(slice(0, s) for s in ishape)].reshape(-1)
    return d, flat, vals


def _last_wins(flat, vals):
    """Positions and values of a sequential scatter where a later write replaces an earlier one."""
    _, first_rev = np.unique(flat[::-1], return_index=True)
    keep = np.sort(flat.size - 1 - first_rev)
    return flat[keep], (vals[keep] if isinstance(vals, np.ndarray) and vals.ndim else vals)


def _assign_in_order(r, flat, vals):
    """``r[flat[i]] = vals[i]`` one after another: where a position repeats, the last write stays."""
    if flat.size:
        pos, v = _last_wins(flat, vals)
        r[pos] = v


@kernel("aten::scatter.src_out", "T,i,T,T")
def scatter_src(ctx, args):
    """``scatter.src_out(self, dim, index, src)``: ``out[..index[i]..] = src[i]`` in index order."""
    out = out_tensor(args)
    t, index_t, src_t = tensor(args[0], "self"), tensor(args[2], "index"), tensor(args[3], "src")
    check(t.scalar_type == out.scalar_type == src_t.scalar_type, "scatter: self, src and out types differ")
    _, flat, vals = _scatter_targets(ctx, "scatter", t, args[1], index_t, src_t)
    r = t.array(ctx.bus).copy().reshape(-1)
    _assign_in_order(r, flat, vals)
    return emit(ctx, out, r.reshape(t.sizes), "scatter")


@kernel("aten::scatter.value_out", "T,i,T,s")
def scatter_value(ctx, args):
    """``scatter.value_out(self, dim, index, value)``: the value must fit self's type."""
    out = out_tensor(args)
    t, index_t = tensor(args[0], "self"), tensor(args[2], "index")
    check(t.scalar_type == out.scalar_type, "scatter: self and out types differ")
    value = scalar(args[3])
    _, flat, _ = _scatter_targets(ctx, "scatter", t, args[1], index_t)
    check(_fits(value, t.dtype), f"scatter: value {value} overflows {t.type_name}")
    r = t.array(ctx.bus).copy().reshape(-1)
    r[flat] = np.asarray(value).astype(t.dtype)
    return emit(ctx, out, r.reshape(t.sizes), "scatter")


@kernel("aten::scatter_add.out", "T,i,T,T")
def scatter_add(ctx, args):
    """``scatter_add.out(self, dim, index, src)``: ``out[..index[i]..] += src[i]`` one after another in index
    order (in self's type); a 0-d self gets ``numel(index) * src[0]`` added."""
    out = out_tensor(args)
    t, index_t, src_t = tensor(args[0], "self"), tensor(args[2], "index"), tensor(args[3], "src")
    check(t.scalar_type == out.scalar_type == src_t.scalar_type, "scatter_add: self, src and out types differ")
    check(default_order(index_t), "scatter_add: index must have the default dim order")
    _, flat, vals = _scatter_targets(ctx, "scatter_add", t, args[1], index_t, src_t)
    x = t.array(ctx.bus)
    r = x.copy().reshape(-1)
    if flat.size:
        if x.ndim == 0:
            n = index_t.sizes[0] if index_t.sizes else 1
            r[0] = r[0] + np.asarray(n).astype(x.dtype) * src_t.array(ctx.bus).reshape(-1)[0]
        else:
            np.add.at(r, flat, vals)
    return emit(ctx, out, r.reshape(t.sizes), "scatter")


def _index_positions(ctx, x: np.ndarray, indices: list, name: str) -> np.ndarray:
    """The flat positions of ``x[indices]`` (advanced indexing; Bool/Byte tensors are masks), checking dtypes,
    mask shapes and bounds like check_index_args and get_in_coord (negative indices count from the end)."""
    check(len(indices) <= x.ndim, f"{name}: indexing too many dimensions")
    sel, k = [], 0
    for t in indices:
        if t is None:
            sel.append(slice(None))
            k += 1
            continue
        check(t.scalar_type in (0, 3, 4, 11), f"{name}: index tensors must be Long, Int, Byte or Bool, "
                                               f"got {t.type_name}")
        a = t.array(ctx.bus)
        if t.scalar_type in (0, 11):
            check(a.shape == x.shape[k:k + a.ndim], f"{name}: mask {list(a.shape)} does not match the input")
            sel.append(a.astype(bool))
            k += a.ndim
        else:
            n = x.shape[k]
            a = a.astype(np.int64)
            a = np.where(a < 0, a + n, a)
            check(bool(np.all((a >= 0) & (a < n))), f"{name}: index out of bounds for dimension {k} with size {n}")
            sel.append(a)
            k += 1
    try:
        return np.arange(x.size, dtype=np.int64).reshape(x.shape)[tuple(sel)]
    except IndexError as e:
        fail(f"{name}: indices do not broadcast ({e})")


@kernel("aten::index_put.out", "T,O,T,b")
def index_put(ctx, args):
    """``index_put.out(self, indices: Tensor?[], values, accumulate)``: ``out[indices] = values`` (broadcast to
    the indexed shape), or ``+=`` one element after another with ``accumulate``; a later write wins."""
    out = out_tensor(args)
    t, v_t = tensor(args[0], "self"), tensor(args[2], "values")
    check(t.scalar_type == out.scalar_type, "index_put: self and out types differ")
    check(t.scalar_type == v_t.scalar_type, "index_put: self and values types differ")
    check(default_order(t), "index_put: self must have the default dim order")
    accumulate = bool(args[3])
    x = t.array(ctx.bus)
    indices = _tensor_list(ctx, args[1], "indices")
    pos = _index_positions(ctx, x, indices, "index_put")
    vals = v_t.array(ctx.bus)
    try:
        vals = np.broadcast_to(vals, pos.shape)
    except ValueError:
        fail(f"index_put: values {list(vals.shape)} do not broadcast to {list(pos.shape)}")
    r = x.copy().reshape(-1)
    pos, vals = pos.reshape(-1), vals.reshape(-1)
    if accumulate:
        np.add.at(r, pos, vals)
    else:
        _assign_in_order(r, pos, vals)
    return emit(ctx, out, r.reshape(t.sizes), "index_put")


@kernel("aten::index_put_", "T,O,T,b")
def index_put_inplace(ctx, args):
    """``index_put_(self, indices, values, accumulate)``: the portable special case: no accumulate, exactly one
    1-d Long/Int index (in range, not negative) and ``values`` shaped like self with that dim's length replaced."""
    t, v_t = tensor(args[0], "self"), tensor(args[2], "values")
    check(t.scalar_type == v_t.scalar_type, "index_put_: self and values types differ")
    check(not args[3], "Special case in-place index_put does not support accumulate")
    indices = _tensor_list(ctx, args[1], "indices")
    x = t.array(ctx.bus)
    check(len(indices) <= x.ndim, "index_put_: indexing too many dimensions")
    given = [i for i, v in enumerate(indices) if v is not None]
    check(len(given) == 1, "Special case in-place index_put needs exactly one non-null index tensor")
    d = given[0]
    it = indices[d]
    check(it.scalar_type in (3, 4) and len(it.sizes) == 1, "index_put_: the index must be a 1-d Long/Int tensor")
    idx = it.array(ctx.bus).astype(np.int64)
    check(bool(np.all((idx >= 0) & (idx < x.shape[d]))), "index_put_: index out of range")
    vals = v_t.array(ctx.bus)
    want = x.shape[:d] + (idx.size,) + x.shape[d + 1:]
    check(vals.shape == want, f"index_put_: values {list(vals.shape)}, expected {list(want)}")
    r = x.copy()
    if idx.size:
        _, first_rev = np.unique(idx[::-1], return_index=True)
        keep = np.sort(idx.size - 1 - first_rev)
        sl = [slice(None)] * x.ndim
        sl[d] = idx[keep]
        r[tuple(sl)] = np.take(vals, keep, axis=d)
    emit(ctx, t, r, "index_put")
    return t


def _mask_args(name, t, mask_t, out):
    check(t.dtype is not None and t.dtype.kind in "fiub", f"{name}: unsupported input {t.type_name}")
    check(mask_t.scalar_type == 11, f"{name}: mask must be Bool, got {mask_t.type_name}")
    check(out.scalar_type == t.scalar_type, f"{name}: out type {out.type_name} differs from {t.type_name}")


@kernel("aten::masked_scatter.out", "T,T,T")
def masked_scatter(ctx, args):
    """``masked_scatter.out(self, mask, source)``: in the broadcast shape of self and mask, positions where
    the mask is true take source's elements in order; too few source elements fail."""
    out = out_tensor(args)
    t, m_t, s_t = tensor(args[0], "self"), tensor(args[1], "mask"), tensor(args[2], "source")
    _mask_args("masked_scatter", t, m_t, out)
    check(s_t.scalar_type == t.scalar_type, "masked_scatter: source type differs")
    try:
        x, m = np.broadcast_arrays(t.array(ctx.bus), m_t.array(ctx.bus))
    except ValueError:
        fail("masked_scatter: self and mask do not broadcast")
    src = s_t.array(ctx.bus).reshape(-1)
    n = int(np.count_nonzero(m))
    check(n <= src.size, "masked_scatter: src doesn't have enough elements")
    r = x.copy()
    r[m] = src[:n]
    return emit(ctx, out, r, "masked_scatter")


@kernel("aten::masked_select.out", "T,T")
def masked_select(ctx, args):
    """``masked_select.out(self, mask)``: a 1-d out of self's elements where the (broadcast) mask is true, in
    row-major order of the broadcast shape."""
    out = out_tensor(args)
    t, m_t = tensor(args[0], "self"), tensor(args[1], "mask")
    _mask_args("masked_select", t, m_t, out)
    try:
        x, m = np.broadcast_arrays(t.array(ctx.bus), m_t.array(ctx.bus))
    except ValueError:
        fail("masked_select: self and mask do not broadcast")
    if t.numel == 0 or m_t.numel == 0:
        return emit(ctx, out, np.zeros(0, t.dtype), "masked_select")
    return emit(ctx, out, x[m], "masked_select", x.size)


@kernel("aten::nonzero.out", "T")
def nonzero(ctx, args):
    """``nonzero.out(self)``: an int64 (count, ndim) out of the coordinates of non-zero elements (NaN counts)."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    check(out.scalar_type == 4, f"nonzero: out must be Long, got {out.type_name}")
    check(len(out.sizes) == 2, f"nonzero: out must be 2-d, got {len(out.sizes)}-d")
    check(t.dtype is not None and t.dtype.kind in "fiub", f"nonzero: unsupported input {t.type_name}")
    x = t.array(ctx.bus)
    r = np.argwhere(x != 0).astype(np.int64) if x.ndim else np.zeros((int(x != 0), 0), np.int64)
    return emit(ctx, out, r, "nonzero", x.size)


@kernel("aten::repeat_interleave.Tensor_out", "T,i?")
def repeat_interleave(ctx, args):
    """``repeat_interleave.Tensor_out(repeats, *, output_size?)``: ``i`` repeated ``repeats[i]`` times; repeats
    is a 1-d Int/Long tensor of non-negative counts, out has its type."""
    out = out_tensor(args)
    r_t = tensor(args[0], "repeats")
    check(r_t.scalar_type in (3, 4), f"repeat_interleave: repeats must be Int or Long, got {r_t.type_name}")
    reps = r_t.array(ctx.bus).astype(np.int64)
    total = int(reps.sum())
    size = int(args[1]) if len(args) > 2 and args[1] is not None else total
    check(len(r_t.sizes) == 1, "repeat_interleave: repeats must be 1-D")
    check(size == total, f"repeat_interleave: output_size {size} != sum(repeats) {total}")
    check(out.scalar_type == r_t.scalar_type, "repeat_interleave: out type differs from repeats'")
    check(bool(np.all(reps >= 0)), "repeat_interleave: repeats cannot be negative")
    return emit(ctx, out, np.repeat(np.arange(reps.size, dtype=np.int64), reps), "repeat_interleave")
