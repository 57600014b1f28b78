"""SLICE, GATHER, MAXIMUM, MINIMUM: TFLM's ``slice.cc``, ``gather.cc`` and ``maximum_minimum.cc``.

Data movement and comparisons, exact by construction; the rules are TFLM's:

- SLICE (``reference_ops::Slice``): float32/int8/int16/int32/bool, begin and size int32 or int64, at most 5
  dimensions; a size of -1 runs to the end of its dimension. TFLM checks begin/size only with debug-build
  DCHECKs; here a constant begin/size must give the output's shape (Prepare), a non-constant one is checked when
  the operator runs.
- GATHER: float32/int8 params (TFLM has no int16 or int32 gather), int32 positions, ``axis`` and
  ``batch_dims`` (negative ones counted from the end) with Prepare's checks; the output shape is
  input[:axis] + positions[batch_dims:] + input[axis+1:]. TFLM's positions are checked only by a DCHECK (a release
  build reads out of range); here a position outside the axis stops the run with one line.
- MAXIMUM/MINIMUM (``reference_ops::MaximumMinimumBroadcastSlow``): TFLM has no Prepare; its Eval takes
  float32/int8/int16/int32/int64 and compares the raw values (``a > b ? a : b``, ``a < b ? a : b``) with no
  look at the quantization; broadcasting up to 5 dimensions. The type check is done at Prepare here.
"""

from __future__ import annotations

import numpy as np

from . import register
from .common import (TYPE_BOOL, TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_INT64, Prepared, broadcast_shape,
                     ensure)
from .softmax import KernelCheckFailed


def _slice_bounds(shape, begin, size):
    start = [int(b) for b in begin]
    stop = [d if int(s) == -1 else int(b) + int(s) for d, b, s in zip(shape, begin, size)]
    return start, stop


@register("SLICE")
def prepare_slice(ctx, op):
    ti, tb, ts, to = (ctx.tensor(i) for i in (*op.inputs[:3], op.outputs[0]))
    ensure(len(op.inputs) == 3 and len(op.outputs) == 1, "SLICE: 3 inputs and 1 output")
    ensure(ti.type == to.type, f"SLICE: input {ti.type_name} and output {to.type_name} types differ")
    ensure(tb.type == ts.type and tb.type in (TYPE_INT32, TYPE_INT64),
           f"SLICE: Begin tensor type {tb.type_name} ({tb.type}) not supported.")
    ensure(ti.type in (TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_BOOL),
           f"SLICE: Input tensor type {ti.type_name} ({ti.type}) not supported.")
    ensure(len(tb.shape) == 1 and len(ts.shape) == 1 and tb.numel == ts.numel == len(ti.shape),
           f"SLICE: begin and size must be vectors of {len(ti.shape)} elements")
    ensure(len(ti.shape) <= 5, f"SLICE: {len(ti.shape)} dimensions (at most 5)")
    shape = tuple(ti.shape)
    out_shape = tuple(to.shape)

    def bounds(begin, size):
        start, stop = _slice_bounds(shape, begin.reshape(-1), size.reshape(-1))
        ok = all(0 <= a <= b <= d for a, b, d in zip(start, stop, shape)) and \
            tuple(b - a for a, b in zip(start, stop)) == out_shape
        return start, stop, ok

    cb, cs = ctx.const(op.inputs[1]), ctx.const(op.inputs[2])
    if cb is not None and cs is not None:
        ensure(bounds(cb, cs)[2], f"SLICE: begin {[int(v) for v in cb.reshape(-1)]} size {[int(v) for v in cs.reshape(-1)]} do not "
                   f"give the output shape {list(out_shape)} of input {list(shape)}")

    def run(ins, outs):
        start, stop, ok = bounds(ins[1], ins[2])
        if not ok:
            raise KernelCheckFailed(f"SLICE: begin {ins[1].reshape(-1).tolist()} size {ins[2].reshape(-1).tolist()} "
                                    f"do not give the output shape {list(out_shape)}")
        outs[0][...] = ins[0][tuple(slice(a, b) for a, b in zip(start, stop))]
    return Prepared(run, ("memcpy_byte", to.nbytes))


@register("GATHER")
def prepare_gather(ctx, op):
    ensure(len(op.inputs) == 2 and len(op.outputs) == 1, "GATHER: 2 inputs and 1 output")
    ti, tc, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    ensure(tc.type == TYPE_INT32, f"GATHER: Positions of type '{tc.type_name}' are not supported by gather.")
    ensure(ti.type in (TYPE_FLOAT32, TYPE_INT8), f"GATHER: Type '{ti.type_name}' is not supported by gather.")
    ensure(to.type == ti.type, f"GATHER: output type {to.type_name} is not the input's {ti.type_name}")
    o = op.options
    axis = int(o.Axis()) if o is not None else 0
    batch_dims = int(o.BatchDims()) if o is not None else 0
    nd, nc = len(ti.shape), len(tc.shape)
    if axis < 0:
        axis += nd
    ensure(0 <= axis < nd, "GATHER: 0 <= axis && axis < NumDimensions(input) was not true.")
    if batch_dims < 0:
        batch_dims += nc
    ensure(batch_dims <= axis, "GATHER: batch_dims <= axis was not true.")
    ensure(0 <= batch_dims < nd, "GATHER: 0 <= batch_dims && batch_dims < NumDimensions(input) was not true.")
    ensure(batch_dims <= nc, "GATHER: batch_dims <= NumDimensions(coords) was not true.")
    for i in range(batch_dims):
        ensure(ti.shape[i] == tc.shape[i], f"GATHER: input->dims->data[{i}] != coords->dims->data[{i}] "
                                           f"({ti.shape[i]} != {tc.shape[i]})")
    want = tuple(ti.shape[:axis]) + tuple(tc.shape[batch_dims:]) + tuple(ti.shape[axis + 1:])
    ensure(want == tuple(to.shape), f"GATHER: the output shape is {list(want)}, the model's {list(to.shape)}")
    bshape = tuple(ti.shape[:batch_dims])
    batch = int(np.prod(bshape, dtype=np.int64))
    outer = int(np.prod(ti.shape[batch_dims:axis], dtype=np.int64))
    axis_size = ti.shape[axis]
    inner = int(np.prod(ti.shape[axis + 1:], dtype=np.int64))
    coord = int(np.prod(tc.shape[batch_dims:], dtype=np.int64))

    def run(ins, outs):
        c = ins[1].reshape(batch, coord).astype(np.int64)
        if c.size and (c.min() < 0 or c.max() >= axis_size):
            raise KernelCheckFailed(f"GATHER: a position outside [0, {axis_size})")
        x = ins[0].reshape(batch, outer, axis_size, inner)
        y = np.empty((batch, outer, coord, inner), x.dtype)
        for b in range(batch):
            y[b] = x[b][:, c[b], :]
        outs[0].reshape(-1)[...] = y.reshape(-1)
    return Prepared(run, ("memcpy_byte", to.nbytes))


def _max_min(ctx, op, greater: bool):
    t1, t2, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    name = op.op_name
    ensure(to.type in (TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_INT64),
           f"{name}: Type {to.type_name} ({to.type}) is not supported by Maximum/Minimum.")
    ensure(t1.type == t2.type == to.type, f"{name}: input and output types differ")
    ensure(broadcast_shape(t1.shape, t2.shape) == tuple(to.shape) and len(to.shape) <= 5,
           f"{name}: shapes {list(t1.shape)} and {list(t2.shape)} do not broadcast to the output {list(to.shape)}")

    def run(ins, outs):
        a, b = np.broadcast_arrays(ins[0], ins[1])
        outs[0][...] = np.where(a > b if greater else a < b, a, b)
    return Prepared(run, ("kernel.maximum" if greater else "kernel.minimum", max(to.numel, 1)))


@register("MAXIMUM")
def prepare_maximum(ctx, op):
    return _max_min(ctx, op, True)


@register("MINIMUM")
def prepare_minimum(ctx, op):
    return _max_min(ctx, op, False)
