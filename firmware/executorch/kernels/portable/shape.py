"""Shape, view and copy operators: views as copies (``view_copy``, ``squeeze``/``unsqueeze``, ``permute``,
``transpose``, ``expand``, ``narrow``, ``diagonal``, ``unfold``, ``as_strided``, ...), plain and converting copies
(``clone``, ``_to_copy``, ``copy``/``copy_``, the dim-order copies), concatenation, stacking and splits, and data
movement (``repeat``, ``flip``, ``roll``, ``pixel_shuffle``, ``tril``, constant/reflection/replication padding).

The kernels of the later set (``narrow_copy`` onwards in ExecuTorch's list) keep the argument checks of their
``op_*.cpp`` (InvalidArgument like ``ET_KERNEL_CHECK``) and ``resize_tensor`` output semantics (``emit``).
"""

from __future__ import annotations

import numpy as np

from ...error import Error, RuntimeFailure
from ...method import RtTensor
from .._util import (
    arr, check, default_order, dim_set, emit, fail, is_float, out_tensor, resize, store, tensor, tensor_list,
    write_out)
from .._util import dim_index as _dim
from ..registry import kernel, register


@kernel("aten::view_copy.out", "T,I")
@kernel("aten::_unsafe_view.out", "T,I")
@kernel("aten::squeeze_copy.dims_out", "T,I")
@kernel("aten::squeeze_copy.dim_out", "T,i")
@kernel("aten::unsqueeze_copy.out", "T,i")
@kernel("aten::clone.out", "T,i?")
def view_copy(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0])
    if x.size != out.numel:
        raise RuntimeFailure(Error.InvalidArgument, f"view_copy: {x.size} elements into {out.numel}")
    return write_out(ctx, out, np.ascontiguousarray(x).reshape(out.sizes), "copy")


@kernel("aten::permute_copy.out", "T,I")
def permute_copy(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0])
    dims = [d % x.ndim for d in ctx.int_list(args[1])] if x.ndim else []
    return write_out(ctx, out, np.transpose(x, dims), "copy")


@kernel("aten::expand_copy.out", "T,I,b")
def expand_copy(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0])
    return write_out(ctx, out, np.broadcast_to(x, out.sizes), "copy")


@kernel("aten::cat.out", "L,i")
def cat(ctx, args):
    out = out_tensor(args)
    lst = args[0]
    if not (isinstance(lst, tuple) and lst[0] == "TensorList"):
        raise RuntimeFailure(Error.InvalidArgument, "cat: expected a tensor list")
    parts = [tensor(ctx.method.values[i], "tensors").array(ctx.bus) for i in lst[1]]
    dim = int(args[1]) if len(args) > 2 else 0
    # like PyTorch, empty 1-D tensors are skipped in a concatenation of higher-rank tensors
    parts = [p for p in parts if not (p.ndim == 1 and p.size == 0 and len(out.sizes) > 1)]
    return write_out(ctx, out, np.concatenate(parts, axis=dim % len(out.sizes)), "copy")


@kernel("aten::_to_copy.out", "T,b,i?")
@kernel("dim_order_ops::_clone_dim_order.out", "T,b,I?")
@kernel("dim_order_ops::_to_dim_order_copy.out", "T,b,I?")
def to_copy(ctx, args):
    """``_to_copy.out(self, non_blocking, memory_format?)``, ``dim_order_ops::_clone_dim_order.out`` /
    ``_to_dim_order_copy.out(self, non_blocking, dim_order?, *, out)``: copy into ``out``'s dim order and dtype."""
    out = out_tensor(args)
    x = arr(ctx, args[0])
    return write_out(ctx, out, x, "copy")


@kernel("aten::repeat.out", "T,I")
def repeat(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0])
    reps = ctx.int_list(args[1])
    x = x.reshape((1,) * (len(reps) - x.ndim) + x.shape)
    return store(ctx, out, np.tile(x, reps), "copy")


@kernel("aten::flip.out", "T,I")
def flip(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0])
    return store(ctx, out, np.flip(x, axis=dim_set(ctx, args[1], x.ndim, "flip")), "copy")


@kernel("aten::roll.out", "T,I,I")
def roll(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0])
    shifts = ctx.int_list(args[1])
    dims = ctx.int_list(args[2]) if args[2] is not None else []
    if not dims:
        return store(ctx, out, np.roll(x.reshape(-1), shifts[0]).reshape(x.shape), "copy")
    return store(ctx, out, np.roll(x, shifts, axis=[_dim(d, x.ndim, "roll") for d in dims]), "copy")


@kernel("aten::pixel_shuffle.out", "T,i")
def pixel_shuffle(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0])
    r = int(args[1])
    *lead, c, h, w = x.shape
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    nl = len(lead)
    y = y.transpose(*range(nl), nl, nl + 3, nl + 1, nl + 4, nl + 2)
    return store(ctx, out, y.reshape(*lead, c // (r * r), h * r, w * r), "copy")


@kernel("aten::pixel_unshuffle.out", "T,i")
def pixel_unshuffle(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0])
    r = int(args[1])
    *lead, c, h, w = x.shape
    nl = len(lead)
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    y = y.transpose(*range(nl), nl, nl + 2, nl + 4, nl + 1, nl + 3)
    return store(ctx, out, y.reshape(*lead, c * r * r, h // r, w // r), "copy")


@kernel("aten::transpose_copy.int_out", "T,i,i")
def transpose_copy(ctx, args):
    """``transpose_copy.int_out(self, dim0, dim1)``."""
    out = out_tensor(args)
    x = arr(ctx, args[0])
    if x.ndim < 2:
        return store(ctx, out, x, "copy")
    return store(ctx, out, np.swapaxes(x, _dim(args[1], x.ndim, "transpose"), _dim(args[2], x.ndim, "transpose")),
                  "copy")


@kernel("aten::t_copy.out", "T")
def t_copy(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0])
    return store(ctx, out, x.T if x.ndim == 2 else x, "copy")


@kernel("aten::alias_copy.out", "T")
def alias_copy(ctx, args):
    out = out_tensor(args)
    return store(ctx, out, arr(ctx, args[0]), "copy")


def _pad_kernel(name, mode):
    """``reflection_pad{1,2,3}d.out(self, padding)`` / ``replication_pad*``: pad pairs from the last dim."""
    def kernel(ctx, args):
        out = out_tensor(args)
        x = arr(ctx, args[0])
        pad = ctx.int_list(args[1])
        widths = [(0, 0)] * x.ndim
        for i in range(len(pad) // 2):
            widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
        return store(ctx, out, np.pad(x, widths, mode=mode), "copy")
    return kernel


def _same_copy(name):
    """``detach_copy.out`` / ``lift_fresh_copy.out``: a byte copy into an out of the same type."""
    def kernel(ctx, args):
        out = out_tensor(args)
        t = tensor(args[0], "self")
        check(t.scalar_type == out.scalar_type, f"{name}: self is {t.type_name}, out {out.type_name}")
        return emit(ctx, out, t.array(ctx.bus), "copy")
    return kernel


@kernel("aten::copy.out", "T,T,b")
def copy_out(ctx, args):
    """``copy.out(self, src, non_blocking)``: ``src`` broadcast to self's shape, converted to self's type."""
    out = out_tensor(args)
    t, src = tensor(args[0], "self"), tensor(args[1], "src")
    check(not args[2], "copy: non_blocking copies are not supported")
    check(t.scalar_type == out.scalar_type, "copy: self and out types differ")
    try:
        s = np.broadcast_to(src.array(ctx.bus), t.sizes)
    except ValueError:
        fail(f"copy: src {list(src.sizes)} does not broadcast to {list(t.sizes)}")
    return emit(ctx, out, s.astype(t.dtype), "copy")


@kernel("aten::copy_", "T,T,b")
def copy_inplace(ctx, args):
    """``copy_(self, src, non_blocking)``: the same, into ``self``."""
    t, src = tensor(args[0], "self"), tensor(args[1], "src")
    check(not args[2], "copy_: non_blocking copies are not supported")
    try:
        s = np.broadcast_to(src.array(ctx.bus), t.sizes)
    except ValueError:
        fail(f"copy_: src {list(src.sizes)} does not broadcast to {list(t.sizes)}")
    emit(ctx, t, s.astype(t.dtype), "copy")
    return t


@kernel("aten::_conj_physical.out", "T")
def conj_physical(ctx, args):
    """``_conj_physical.out(self)``: complex tensors only."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    check(t.dtype is not None and t.dtype.kind == "c" and t.scalar_type == out.scalar_type,
           "_conj_physical: complex self and out of the same type expected")
    return emit(ctx, out, np.conj(t.array(ctx.bus)), "copy")


@kernel("aten::view_as_real_copy.out", "T")
def view_as_real_copy(ctx, args):
    """``view_as_real_copy.out(self)``: a complex tensor as (..., 2) real and imaginary parts."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    check(t.dtype is not None and t.dtype.kind == "c", "view_as_real_copy: the input must be complex")
    check(is_float(out), "view_as_real_copy: out must be a float tensor")
    x = t.array(ctx.bus)
    return emit(ctx, out, np.stack([x.real, x.imag], axis=-1), "copy")


@kernel("aten::narrow_copy.out", "T,i,i,i")
def narrow_copy(ctx, args):
    """``narrow_copy.out(self, dim, start, length)``. check_narrow_copy_args accepts ``-size <= start <= size``
    but the slice copy (compute_slice) is given the start unnormalised, so a negative start fails there."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    x = t.array(ctx.bus)
    check(x.ndim > 0, "narrow_copy: self must have at least one dimension")
    check(t.scalar_type == out.scalar_type, "narrow_copy: self and out types differ")
    d = _dim(args[1], x.ndim, "narrow_copy")
    start, length = int(args[2]), int(args[3])
    n = x.shape[d]
    check(length >= 0, f"narrow_copy: length {length} must be non-negative")
    check(-n <= start <= n, f"narrow_copy: start {start} out of range for size {n}")
    check((start + n if start < 0 else start) + length <= n, "narrow_copy: start + length exceeds the size")
    resize(ctx, out, x.shape[:d] + (length,) + x.shape[d + 1:], "narrow_copy")
    if length > 0:
        check(start >= 0, "narrow_copy: Input args should be >= 0 (compute_slice)")
        emit(ctx, out, np.take(x, np.arange(start, start + length), axis=d), "copy")
    return out


@kernel("aten::diagonal_copy.out", "T,i,i,i")
def diagonal_copy(ctx, args):
    """``diagonal_copy.out(self, offset, dim1, dim2)``: the diagonal as the last dimension."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    x = t.array(ctx.bus)
    check(t.scalar_type == out.scalar_type, "diagonal_copy: self and out types differ")
    check(x.ndim >= 2, "diagonal_copy: self must have at least 2 dimensions")
    d1, d2 = _dim(args[2], x.ndim, "diagonal_copy"), _dim(args[3], x.ndim, "diagonal_copy")
    check(d1 != d2, "diagonal_copy: dim1 and dim2 must differ")
    check(default_order(t), "diagonal_copy: self must have the default dim order")
    return emit(ctx, out, np.diagonal(x, int(args[1]), d1, d2), "copy")


@kernel("aten::unfold_copy.out", "T,i,i,i")
def unfold_copy(ctx, args):
    """``unfold_copy.out(self, dimension, size, step)``: windows of ``size`` every ``step`` along ``dimension``
    as a new last dimension (converted to the out type)."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    x = t.array(ctx.bus)
    check(x.ndim > 0, "unfold_copy: 0-d inputs are not supported")
    d = _dim(args[1], x.ndim, "unfold_copy")
    size, step = int(args[2]), int(args[3])
    check(0 <= size <= x.shape[d], f"unfold_copy: size {size} for dimension of {x.shape[d]}")
    check(step > 0, f"unfold_copy: step {step} must be > 0")
    check(out.dtype is not None and out.dtype.kind in "fiub", f"unfold_copy: unsupported out {out.type_name}")
    count = (x.shape[d] - size + step) // step
    idx = np.arange(count)[:, None] * step + np.arange(size)[None, :]          # count, size
    w = np.take(x, idx, axis=d)                                                 # ..., count, size, ...
    w = np.moveaxis(w, d + 1, -1)
    return emit(ctx, out, w, "copy")


@kernel("aten::as_strided_copy.out", "T,I,I,i?")
def as_strided_copy(ctx, args):
    """``as_strided_copy.out(self, size, stride, storage_offset?)``: elements of self's contiguous storage at
    ``offset + sum(i_k * stride_k)``; non-negative strides and offset, inside the storage."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    size, stride = ctx.int_list(args[1]), ctx.int_list(args[2])
    off = int(args[3]) if len(args) > 4 and args[3] is not None else 0
    check(t.scalar_type == out.scalar_type, "as_strided_copy: self and out types differ")
    check(len(size) == len(stride), "as_strided_copy: size and stride lengths differ")
    check(all(s >= 0 for s in stride), "as_strided: Negative strides are not supported at the moment")
    check(off >= 0, "as_strided_copy: negative storage offset")
    check(default_order(t), "as_strided_copy: self must have the default dim order")
    if all(s > 0 for s in size):
        need = 1 + sum(st * (s - 1) for s, st in zip(size, stride))
        check(need + off <= t.numel, f"as_strided_copy: storage of {need + off} elements, self has {t.numel}")
    resize(ctx, out, size, "as_strided_copy")
    if t.numel == 0 or out.numel == 0:
        return out
    flat = t.raw(ctx.bus).view(t.dtype)
    pos = np.full(tuple(size), off, np.int64)
    for k, (s, st) in enumerate(zip(size, stride)):
        shp = [1] * len(size)
        shp[k] = s
        pos = pos + (np.arange(s, dtype=np.int64) * st).reshape(shp)
    return emit(ctx, out, flat[pos], "copy")


@kernel("aten::tril.out", "T,i")
def tril(ctx, args):
    """``tril.out(self, diagonal)``: elements with ``col <= row + diagonal`` kept, the rest zero."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    check(t.scalar_type == out.scalar_type, "tril: self and out types differ")
    x = t.array(ctx.bus)
    check(x.ndim >= 2, "tril: self must have at least 2 dimensions")
    check(default_order(t), "tril: self must have the default dim order")
    rows, cols = x.shape[-2:]
    keep = np.arange(cols)[None, :] <= np.arange(rows)[:, None] + int(args[1])
    return emit(ctx, out, np.where(keep, x, np.zeros((), x.dtype)), "copy")


def _tensor_list_only(ctx, v, what: str) -> list[RtTensor]:
    return tensor_list(ctx, v, what, kinds=("TensorList",))


@kernel("aten::select_copy.int_out", "T,i,i")
def select_copy(ctx, args):
    """``aten::select_copy.int_out(self, dim, index, *, out)``."""
    out = out_tensor(args)
    x = arr(ctx, args[0])
    d = _dim(int(args[1]), x.ndim, "select_copy")
    i = int(args[2])
    if not -x.shape[d] <= i < x.shape[d]:
        raise RuntimeFailure(Error.InvalidArgument, f"select_copy: index {i} out of range for size {x.shape[d]}")
    return write_out(ctx, out, np.take(x, i % x.shape[d], axis=d), "copy", out.numel)


@kernel("aten::slice_copy.Tensor_out", "T,i,i?,i?,i")
def slice_copy(ctx, args):
    """``aten::slice_copy.Tensor_out(self, dim, start?, end?, step, *, out)``."""
    out = out_tensor(args)
    x = arr(ctx, args[0])
    d = _dim(int(args[1]) if args[1] is not None else 0, x.ndim, "slice_copy")
    start = args[2] if args[2] is not None else 0
    end = args[3] if args[3] is not None else x.shape[d]
    step = int(args[4]) if len(args) > 5 and args[4] is not None else 1
    if step <= 0:
        raise RuntimeFailure(Error.InvalidArgument, f"slice_copy: step {step} must be positive")
    sl = [slice(None)] * x.ndim
    sl[d] = slice(int(start), int(end), step)
    return write_out(ctx, out, x[tuple(sl)], "copy", out.numel)


def _split_into(ctx, x, d, sizes, outs, kernel):
    if len(sizes) != len(outs) or sum(sizes) != x.shape[d]:
        raise RuntimeFailure(Error.InvalidArgument, f"{kernel}: sizes {sizes} do not split {x.shape[d]} into "
                                                    f"{len(outs)} outputs")
    pos = 0
    for s, o in zip(sizes, outs):
        sl = [slice(None)] * x.ndim
        sl[d] = slice(pos, pos + s)
        write_out(ctx, o, x[tuple(sl)], "copy", o.numel)
        pos += s


@kernel("aten::split_with_sizes_copy.out", "T,I,i")
def split_with_sizes_copy(ctx, args):
    """``aten::split_with_sizes_copy.out(self, split_sizes, dim, *, out[])``."""
    x = arr(ctx, args[0])
    sizes = ctx.int_list(args[1])
    d = _dim(int(args[2]) if len(args) > 3 and args[2] is not None else 0, x.ndim, "split_with_sizes_copy")
    _split_into(ctx, x, d, sizes, _tensor_list_only(ctx, args[-1], "out"), "split_with_sizes_copy")
    return None


@kernel("aten::split_copy.Tensor_out", "T,i,i")
def split_copy(ctx, args):
    """``aten::split_copy.Tensor_out(self, split_size, dim, *, out[])``."""
    x = arr(ctx, args[0])
    size = int(args[1])
    d = _dim(int(args[2]) if len(args) > 3 and args[2] is not None else 0, x.ndim, "split_copy")
    outs = _tensor_list_only(ctx, args[-1], "out")
    total = x.shape[d]
    sizes = [min(size, total - i) for i in range(0, total, size)] if size > 0 else [total]
    _split_into(ctx, x, d, sizes, outs, "split_copy")
    return None


@kernel("aten::unbind_copy.int_out", "T,i")
def unbind_copy(ctx, args):
    """``aten::unbind_copy.int_out(self, dim, *, out[])``."""
    x = arr(ctx, args[0])
    d = _dim(int(args[1]) if len(args) > 2 and args[1] is not None else 0, x.ndim, "unbind_copy")
    outs = _tensor_list_only(ctx, args[-1], "out")
    if len(outs) != x.shape[d]:
        raise RuntimeFailure(Error.InvalidArgument, f"unbind_copy: {len(outs)} outputs for size {x.shape[d]}")
    for i, o in enumerate(outs):
        write_out(ctx, o, np.take(x, i, axis=d), "copy", o.numel)
    return None


@kernel("aten::stack.out", "L,i")
def stack(ctx, args):
    """``aten::stack.out(tensors[], dim, *, out)``."""
    out = out_tensor(args)
    parts = [t.array(ctx.bus) for t in _tensor_list_only(ctx, args[0], "tensors")]
    d = int(args[1]) if len(args) > 2 and args[1] is not None else 0
    d = _dim(d, parts[0].ndim + 1 if parts else 1, "stack")
    return write_out(ctx, out, np.stack(parts, axis=d), "copy", out.numel)


@kernel("aten::constant_pad_nd.out", "T,I,s")
def constant_pad_nd(ctx, args):
    """``aten::constant_pad_nd.out(self, pad, value, *, out)``: pad pairs from the last dimension backwards."""
    out = out_tensor(args)
    x = arr(ctx, args[0])
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
    return write_out(ctx, out, r, "copy", out.numel)


register(
    ("aten::reflection_pad1d.out", "T,I", _pad_kernel("reflection_pad", "reflect")),
    ("aten::reflection_pad2d.out", "T,I", _pad_kernel("reflection_pad", "reflect")),
    ("aten::reflection_pad3d.out", "T,I", _pad_kernel("reflection_pad", "reflect")),
    ("aten::replication_pad1d.out", "T,I", _pad_kernel("replication_pad", "edge")),
    ("aten::replication_pad2d.out", "T,I", _pad_kernel("replication_pad", "edge")),
    ("aten::replication_pad3d.out", "T,I", _pad_kernel("replication_pad", "edge")),
    ("aten::detach_copy.out", "T", _same_copy("detach_copy")),
    ("aten::lift_fresh_copy.out", "T", _same_copy("lift_fresh_copy")),
)
