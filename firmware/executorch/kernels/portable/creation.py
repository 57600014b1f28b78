"""Creation ops: ``full``/``full_like``/``fill``, ``ones``/``zeros``, ``empty`` (and ``_empty_dim_order``),
``scalar_tensor``, ``arange`` (``start + i * step`` in the out type).
"""

from __future__ import annotations

import numpy as np

from .._util import check, emit, out_tensor, resize, scalar, store, tensor
from ..registry import kernel, register


@kernel("aten::full.out", "I,s")
@kernel("aten::full_like.out", "T,s,i?")
@kernel("aten::fill.Scalar_out", "T,s")
def full(ctx, args):
    """``full.out(size, fill_value)``, ``full_like.out(self, fill_value, *, memory_format?)`` and
    ``fill.Scalar_out(self, value)``: out's sizes filled with the scalar (argument 1) in out's type."""
    out = out_tensor(args)
    return store(ctx, out, np.full(out.sizes, scalar(args[1])).astype(out.dtype), "fill")


@kernel("aten::scalar_tensor.out", "s")
def scalar_tensor(ctx, args):
    out = out_tensor(args)
    return store(ctx, out, np.asarray(scalar(args[0])).astype(out.dtype), "fill")


@kernel("aten::arange.out", "s")
@kernel("aten::arange.start_out", "s,s,s")
def arange(ctx, args):
    """``arange.out(end)`` / ``arange.start_out(start, end, step)``: ``start + i * step`` in the out type."""
    out = out_tensor(args)
    if len(args) >= 5:
        start, step = scalar(args[0], 0), scalar(args[2], 1)
    else:
        start, step = 0, 1
    i = np.arange(out.numel, dtype=np.float64 if out.dtype.kind == "f" else np.int64)
    r = start + i * step
    return store(ctx, out, r.astype(out.dtype), "fill")


def _fill_const(name, value):
    def kernel(ctx, args):
        out = out_tensor(args)
        shape = ctx.int_list(args[0])
        resize(ctx, out, shape, name)
        check(out.dtype is not None, f"{name}: unsupported out type {out.type_name}")
        return emit(ctx, out, np.full(shape, value).astype(out.dtype), name)
    return kernel


@kernel("aten::empty.out", "I,i?")
@kernel("dim_order_ops::_empty_dim_order.out", "I,I?")
def empty(ctx, args):
    """``empty.out(size, *, memory_format?)`` / ``_empty_dim_order.out(size, *, dim_order?)``: only the resize."""
    out = out_tensor(args)
    resize(ctx, out, ctx.int_list(args[0]), "empty")
    return out


@kernel("aten::fill.Tensor_out", "T,T")
def fill_tensor(ctx, args):
    """``fill.Tensor_out(self, value)``: ``value`` must be a one-element tensor; out has self's type."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    v = tensor(args[1], "value")
    check(v.numel == 1, "fill: value must be a scalar tensor")
    check(t.scalar_type == out.scalar_type, "fill: self and out types differ")
    val = v.array(ctx.bus).reshape(-1)[0]
    return emit(ctx, out, np.full(t.sizes, val).astype(out.dtype), "fill")


register(
    ("aten::ones.out", "I", _fill_const("ones", 1)),
    ("aten::zeros.out", "I", _fill_const("zeros", 0)),
)
