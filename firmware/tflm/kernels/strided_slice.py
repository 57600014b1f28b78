"""STRIDED_SLICE as TFLite Micro's kernel (float32, int8, int16, int32, bool; 1-4 dimensions).

Prepare follows TFLM ``strided_slice_common.cc``: four inputs, at most 4 input dimensions, constant int32
begin/end/strides, every stride non-zero, and the output shape checked (``CheckOutputSize``: per axis
``StartForAxis`` / ``StopForAxis`` of ``kernels/internal/strided_slice_logic.h``, a shrunk axis is begin + 1,
the size ceil((end - begin) / stride) in float, at least 0; shrunk axes are dropped). TFLM builds its
parameters with ``ellipsis_mask`` and ``new_axis_mask`` forced to 0 and without ``offset``, so for a model that
sets them its slice is not the one the model means; this kernel refuses them at Prepare (TFLM itself only fails
when the dropped mask changes the output shape it checks).

Eval is ``reference_ops::StridedSlice`` (the 5-D form, leading axes padded with full ranges): per axis
``StridedSliceStartForAxis`` / ``StridedSliceEndForAxis`` (negative indices wrapped once, clamped to [0, n] for
a positive stride or [-1, n - 1] for a negative one, the masks overriding; a shrunk axis stops at begin + 1, or
at begin when begin is past the end), the elements visited in row-major order and written one after another
(``SequentialTensorWriter``). A shrunk axis with a negative stride or a begin past the end writes nothing there,
as in TFLM; the rest of the output keeps what the arena held.
"""

from __future__ import annotations

import math

import numpy as np

from . import register
from .common import TYPE_BOOL, TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32, Prepared, ensure

MAX_DIMS = 4
INT_MAX, INT_LOWEST = (1 << 31) - 1, -(1 << 31)
SUPPORTED = (TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_BOOL)


def _clamp(v: int, lo: int, hi: int) -> int:
    return hi if v > hi else lo if v < lo else v


def check_start(begin: int, stride: int, size: int, masked: bool) -> int:
    """``StartForAxis`` (the output-shape check's begin)."""
    if size == 0:
        return 0
    start = (INT_LOWEST if stride > 0 else INT_MAX) if masked else begin
    if start < 0:
        start += size
    return _clamp(start, 0, size) if stride > 0 else _clamp(start, -1, size - 1)


def check_stop(end: int, stride: int, size: int, masked: bool, shrink: bool, start: int) -> int:
    """``StopForAxis``."""
    if size == 0:
        return 0
    if shrink:
        return start + 1
    stop = (INT_MAX if stride > 0 else INT_LOWEST) if masked else end
    if stop < 0:
        stop += size
    return _clamp(stop, 0, size) if stride > 0 else _clamp(stop, -1, size - 1)


def eval_start(begin: int, stride: int, size: int, masked: bool) -> int:
    """``StridedSliceStartForAxis`` (what Eval iterates from)."""
    start = begin + size if begin < 0 else begin
    start = _clamp(start, 0, size) if stride > 0 else _clamp(start, -1, size - 1)
    if masked:
        start = 0 if stride > 0 else size - 1
    return start


def eval_stop(end: int, stride: int, size: int, masked: bool, shrink: bool, start: int) -> int:
    """``StridedSliceEndForAxis``."""
    if shrink:
        return start if start >= size else start + 1
    stop = end + size if end < 0 else end
    stop = _clamp(stop, 0, size) if stride > 0 else _clamp(stop, -1, size - 1)
    if masked:
        stop = size if stride > 0 else -1
    return stop


def _vector(ctx, index, what, dims):
    t = ctx.tensor(index)
    v = ctx.const(index)
    ensure(v is not None, f"STRIDED_SLICE: Non-constant >{what}< tensor is not supported")
    ensure(t.type == TYPE_INT32, f"STRIDED_SLICE: {what} must be int32 (it is {t.type_name})")
    v = [int(a) for a in v.reshape(-1)]
    ensure(len(v) >= dims, f"STRIDED_SLICE: {what} has {len(v)} values for {dims} dimensions")
    return v[:dims]


def slice_plan(shape, begin, end, strides, begin_mask, end_mask, shrink_mask):
    """(the output shape the Prepare check computes, per-axis index ranges Eval visits)."""
    out_shape, ranges = [], []
    for axis, size in enumerate(shape):
        b, e, s = begin[axis], end[axis], strides[axis]
        bm, em, sh = bool(begin_mask >> axis & 1), bool(end_mask >> axis & 1), bool(shrink_mask >> axis & 1)
        c0 = check_start(b, s, size, bm)
        c1 = check_stop(e, s, size, em, sh, c0)
        if sh:
            c1 = c0 + 1
        if not sh:
            out_shape.append(max(math.ceil(np.float32(c1 - c0) / np.float32(s)), 0))
        e0 = eval_start(b, s, size, bm)
        e1 = eval_stop(e, s, size, em, sh, e0)
        ranges.append(range(e0, e1, s))
    return out_shape, ranges


@register("STRIDED_SLICE")
def prepare_strided_slice(ctx, op):
    ensure(len(op.inputs) == 4, f"STRIDED_SLICE: needs 4 inputs ({len(op.inputs)} given)")
    ensure(len(op.outputs) == 1, f"STRIDED_SLICE: needs 1 output ({len(op.outputs)} given)")
    ti, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    dims = len(ti.shape)
    ensure(dims <= MAX_DIMS, f"STRIDED_SLICE: input dim should not exceed 4 (it has {dims})")
    ensure(ti.type in SUPPORTED, f"STRIDED_SLICE: type {ti.type_name} not supported "
                                 f"(float32, int8, int16, int32 and bool are)")
    ensure(ti.type == to.type, f"STRIDED_SLICE: input {ti.type_name} and output {to.type_name} types differ")
    begin = _vector(ctx, op.inputs[1], "begin", dims)
    end = _vector(ctx, op.inputs[2], "end", dims)
    strides = _vector(ctx, op.inputs[3], "strides", dims)
    o = op.options
    begin_mask = int(o.BeginMask()) if o is not None else 0
    end_mask = int(o.EndMask()) if o is not None else 0
    shrink_mask = int(o.ShrinkAxisMask()) if o is not None else 0
    ellipsis = int(o.EllipsisMask()) if o is not None else 0
    new_axis = int(o.NewAxisMask()) if o is not None else 0
    offset = bool(o.Offset()) if o is not None else False
    ensure(ellipsis == 0, f"STRIDED_SLICE: ellipsis_mask {ellipsis} not supported (TFLM's kernel drops it)")
    ensure(new_axis == 0, f"STRIDED_SLICE: new_axis_mask {new_axis} not supported (TFLM's kernel drops it)")
    ensure(not offset, "STRIDED_SLICE: offset not supported (TFLM's kernel drops it)")
    for axis, s in enumerate(strides):
        ensure(s != 0, f"STRIDED_SLICE: stride value has to be non-zero (axis {axis})")
    want, ranges = slice_plan(ti.shape, begin, end, strides, begin_mask, end_mask, shrink_mask)
    ensure(tuple(want) == tuple(to.shape), f"STRIDED_SLICE: the slice gives shape {want}, the output is "
                                           f"{list(to.shape)}")
    index = np.ix_(*[np.asarray(r, dtype=np.int64) for r in ranges]) if dims else ()

    def run(ins, outs):
        picked = np.asarray(ins[0][index]).reshape(-1)
        flat = outs[0].reshape(-1)
        n = min(picked.size, flat.size)
        flat[:n] = picked[:n]
    return Prepared(run, ("memcpy_byte", to.nbytes))
