"""RESHAPE (and SQUEEZE, EXPAND_DIMS), PAD/PADV2, CONCATENATION, TRANSPOSE, PACK, UNPACK, SPLIT, SPLIT_V, MEAN, SUM,
REDUCE_MAX, ARG_MAX.

Data movement is exact by construction (bytes are copied); the rules are TFLM's Prepare checks and the types
its Eval switches handle (a type TFLM's Eval refuses is refused at Prepare here, with TFLM's message):
``concatenation.cc`` (bool/float32/int8/int16/int32/int64, at most 10 inputs of at most 6 dimensions, no fused
activation; int8 inputs must share the output's scale and zero point, int16 inputs and output need zero point 0
and may differ in scale: the bytes are copied unscaled), ``pad.cc`` (float32/int8/int16/int32, at most 5
dimensions; without a constant value int8 pads with the output zero point, the others with 0; an int8 constant
must have the output's scale and zero point; the input's quantization is not checked), ``transpose.cc``
(float32/int8/int16, at most 5 dimensions), ``pack.cc`` (float32/int8/int16/int32/int64), ``unpack.cc``
(float32/int8/int16/int32), ``split.cc`` (float32/int8/int16/int32), ``arg_min_max.cc`` (float32/int8 input,
int32 axis and output; ties: the first index). MEAN int8/int16:
``reference_ops::QuantizedMeanOrSum`` with TFLM ``reduce_common.cc``'s multiplier (s_in / s_out in double,
``QuantizeMultiplier``), adjusted for the element count n: shift = min(63 - clz64(n), 32, 31 + output_shift),
multiplier = (multiplier << shift) / n (int64 division), output_shift -= shift; then
MBQM(sum - zp_in * n) + zp_out, clamped. MEAN float32: the sum in float32 in input order, divided by n. SUM (``reduce_common.cc`` ``EvalSumHelper``):
float32 summed in input order; int8/int16 the same ``QuantizedMeanOrSum`` without the 1/n adjustment (the int32
sum wraps, as TFLM's). REDUCE_MAX (``EvalMinMaxHelper``): float32/int8 only (TFLM has no int16), the int8
output's scale and zero point must be the input's (TFLM checks them in its Eval; here at Prepare).
"""

from __future__ import annotations

import numpy as np

from ... import fixedpoint as fx
from . import register
from .common import (QRANGE, TYPE_BOOL, TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_INT64, Prepared,
                     clamp_cast, ensure)


def _types(t, allowed, message: str) -> None:
    ensure(t.type in allowed, message.format(t.type_name))


def _copy_run(ins, outs):
    outs[0].reshape(-1)[...] = ins[0].reshape(-1)


@register("RESHAPE", "SQUEEZE", "EXPAND_DIMS")
def prepare_reshape(ctx, op):
    ti, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    ensure(ti.numel == to.numel, f"input of {ti.numel} elements reshaped to {list(to.shape)}")
    ensure(ti.type == to.type, "input and output types differ")
    return Prepared(_copy_run, ("memcpy_byte", to.nbytes))


def _const_int(ctx, index, what):
    v = ctx.const(index)
    ensure(v is not None, f"{what} must be a constant tensor")
    return v.astype(np.int64)


@register("PAD", "PADV2")
def prepare_pad(ctx, op):
    ti, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    name = op.op_name
    ensure(ti.type == to.type, f"{name}: input {ti.type_name} and output {to.type_name} types differ")
    _types(ti, (TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32), name + ": Type {} not currently supported by Pad.")
    ensure(len(ti.shape) <= 5, f"{name}: {len(ti.shape)} dimensions (at most 5)")
    pads = _const_int(ctx, op.inputs[1], "paddings").reshape(-1, 2)
    ensure(pads.shape[0] == len(ti.shape), f"paddings for {pads.shape[0]} dims, input has {len(ti.shape)}")
    ensure(bool((pads >= 0).all()), "negative padding")
    want = tuple(int(d + a + b) for d, (a, b) in zip(ti.shape, pads))
    ensure(want == tuple(to.shape), f"padded shape {list(want)} != output {list(to.shape)}")
    value = None
    if len(op.inputs) > 2 and op.inputs[2] >= 0:
        cv = ctx.const(op.inputs[2])
        tc = ctx.tensor(op.inputs[2])
        ensure(cv is not None, f"{name} constant value must be constant")
        ensure(tc.type == ti.type and cv.size == 1, f"{name}: the constant value must be one {ti.type_name}")
        if ti.type == TYPE_INT8:
            ensure(tc.params_zero_point == to.params_zero_point
                   and np.float32(tc.params_scale) == np.float32(to.params_scale),
                   f"{name}: the int8 constant value's scale and zero point must be the output's")
        value = cv.reshape(-1)[0]
    if value is None:
        value = to.params_zero_point if to.type == TYPE_INT8 else 0
        if to.type == TYPE_INT8:
            ensure(-128 <= value <= 127, f"{name}: output zero point {value} out of the int8 range")
    widths = [(int(a), int(b)) for a, b in pads]

    def run(ins, outs):
        outs[0][...] = np.pad(ins[0], widths, constant_values=value)
    return Prepared(run, ("kernel.pad", to.numel))


@register("CONCATENATION")
def prepare_concat(ctx, op):
    to = ctx.tensor(op.outputs[0])
    o = op.options
    ensure(o is None or int(o.FusedActivationFunction()) == 0, "CONCATENATION: fused activation not supported")
    axis = int(o.Axis()) if o is not None else 0
    if axis < 0:
        axis += len(to.shape)
    ensure(0 <= axis < len(to.shape), f"axis {axis} out of range")
    ins = [ctx.tensor(i) for i in op.inputs]
    _types(to, (TYPE_BOOL, TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_INT64),
           "CONCATENATION: Op Concatenation does not currently support type '{}'.")
    ensure(len(ins) <= 10, f"CONCATENATION: {len(ins)} inputs (at most 10)")
    for t in ins:
        ensure(t.type == to.type, "CONCATENATION: input and output types differ")
        ensure(len(t.shape) <= 6, f"CONCATENATION: an input of {len(t.shape)} dimensions (at most 6)")
        if to.type == TYPE_INT8:
            ensure(np.float32(t.params_scale) == np.float32(to.params_scale)
                   and t.params_zero_point == to.params_zero_point,
                   "CONCATENATION: int8 inputs must have the output's scale and zero point")
        if to.type == TYPE_INT16:
            ensure(t.params_zero_point == 0, f"CONCATENATION: int16 input zero point {t.params_zero_point} (must "
                                             f"be 0)")
    if to.type == TYPE_INT16:
        ensure(to.params_zero_point == 0, f"CONCATENATION: int16 output zero point {to.params_zero_point} (must be 0)")
    ensure(sum(t.shape[axis] for t in ins) == to.shape[axis], "concatenated sizes do not match the output")

    def run(arrs, outs):
        outs[0][...] = np.concatenate(arrs, axis=axis)
    return Prepared(run, ("memcpy_byte", to.nbytes))


@register("TRANSPOSE")
def prepare_transpose(ctx, op):
    ti, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    ensure(ti.type == to.type, "TRANSPOSE: input and output types differ")
    _types(ti, (TYPE_FLOAT32, TYPE_INT8, TYPE_INT16), "TRANSPOSE: Type {} is currently not supported by Transpose.")
    ensure(len(ti.shape) <= 5, "TRANSPOSE: Transpose op only supports 1D-5D input arrays.")
    perm = [int(p) for p in _const_int(ctx, op.inputs[1], "perm").reshape(-1)]
    ensure(sorted(perm) == list(range(len(ti.shape))), f"bad permutation {perm}")
    ensure(tuple(ti.shape[p] for p in perm) == tuple(to.shape), "permuted shape != output")

    def run(ins, outs):
        outs[0][...] = np.transpose(ins[0], perm)
    return Prepared(run, ("kernel.transpose", to.numel))


@register("PACK")
def prepare_pack(ctx, op):
    to = ctx.tensor(op.outputs[0])
    _types(to, (TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_INT64),
           "PACK: Type '{}' is not supported by pack.")
    ensure(all(ctx.tensor(i).type == to.type for i in op.inputs), "PACK: input and output types differ")
    axis = int(op.options.Axis())
    if axis < 0:
        axis += len(to.shape)

    def run(ins, outs):
        outs[0][...] = np.stack(ins, axis=axis)
    return Prepared(run, ("memcpy_byte", to.nbytes))


@register("UNPACK")
def prepare_unpack(ctx, op):
    ti = ctx.tensor(op.inputs[0])
    _types(ti, (TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32), "UNPACK: Type '{}' is not supported by unpack.")
    axis = int(op.options.Axis())
    if axis < 0:
        axis += len(ti.shape)

    def run(ins, outs):
        for i, o in enumerate(outs):
            o[...] = np.take(ins[0], i, axis=axis)
    return Prepared(run, ("memcpy_byte", ti.nbytes))


@register("SPLIT")
def prepare_split(ctx, op):
    ti = ctx.tensor(op.inputs[1])
    _types(ti, (TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32), "SPLIT: Type {} currently not supported.")
    axis = int(_const_int(ctx, op.inputs[0], "axis").reshape(-1)[0])
    if axis < 0:
        axis += len(ti.shape)
    ensure(0 <= axis < len(ti.shape), f"SPLIT: axis {axis} out of range")
    n = len(op.outputs)
    ensure(ti.shape[axis] % n == 0, f"dimension {ti.shape[axis]} does not split into {n}")

    def run(ins, outs):
        for o, part in zip(outs, np.split(ins[1], n, axis=axis)):
            o[...] = part
    return Prepared(run, ("memcpy_byte", ti.nbytes))


@register("SPLIT_V")
def prepare_split_v(ctx, op):
    """``split_v.cc``: the sizes along the (constant) axis are the outputs' own (TFLM reads the output shapes, not
    the size_splits tensor, whose -1 the converter has resolved); they must add up to the input's."""
    ensure(len(op.inputs) == 3, "SPLIT_V: NumInputs(node) != 3")
    ti = ctx.tensor(op.inputs[0])
    _types(ti, (TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32), "SPLIT_V: Type {} currently not supported.")
    axis_t = ctx.const(op.inputs[2])
    ensure(axis_t is not None, "SPLIT_V: Non-constant >axis< tensor is not supported")
    axis = int(axis_t.reshape(-1)[0])
    if axis < 0:
        axis += len(ti.shape)
    ensure(0 <= axis < len(ti.shape), f"SPLIT_V: axis {axis} out of range")
    outs_t = [ctx.tensor(o) for o in op.outputs]
    for t in outs_t:
        ensure(len(t.shape) == len(ti.shape) and all(t.shape[d] == ti.shape[d] for d in range(len(ti.shape))
                                                     if d != axis) and t.type == ti.type,
               f"SPLIT_V: output {list(t.shape)} {t.type_name} does not split input {list(ti.shape)} on axis {axis}")
    bounds = np.cumsum([t.shape[axis] for t in outs_t])
    ensure(bounds[-1] == ti.shape[axis], f"SPLIT_V: the outputs take {bounds[-1]} of the axis' {ti.shape[axis]}")

    def run(ins, outs):
        for o, part in zip(outs, np.split(ins[0], bounds[:-1], axis=axis)):
            o[...] = part
    return Prepared(run, ("memcpy_byte", ti.nbytes))


@register("ARG_MAX")
def prepare_arg_max(ctx, op):
    ti, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    for t in (ctx.tensor(op.inputs[1]), to):
        _types(t, (TYPE_INT32,), "ARG_MAX: Only int32_t are supported currently, got {}.")
    _types(ti, (TYPE_FLOAT32, TYPE_INT8), "ARG_MAX: Only float32, uint8_t and int8_t are supported currently, got {}.")
    axis = int(_const_int(ctx, op.inputs[1], "axis").reshape(-1)[0])
    if axis < 0:
        axis += len(ti.shape)
    dtype = to.dtype

    def run(ins, outs):
        outs[0][...] = np.argmax(ins[0], axis=axis).astype(dtype).reshape(outs[0].shape)
    return Prepared(run, ("kernel.default", ti.numel))


def _reduced(ctx, op):
    ti, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    _types(ctx.tensor(op.inputs[1]), (TYPE_INT32,), op.op_name + ": axis type {} (must be INT32)")
    axes = sorted({int(a) % len(ti.shape) for a in _const_int(ctx, op.inputs[1], "axis").reshape(-1)})
    keep = bool(op.options.KeepDims()) if op.options is not None else False
    out_shape = tuple(1 if i in axes else d for i, d in enumerate(ti.shape)) if keep else \
        tuple(d for i, d in enumerate(ti.shape) if i not in axes)
    ensure(int(np.prod(out_shape, dtype=np.int64)) == to.numel, f"reduced shape {list(out_shape)} != output "
                                                                 f"{list(to.shape)}")
    return ti, to, axes


@register("SUM")
def prepare_sum(ctx, op):
    ti, to, axes = _reduced(ctx, op)
    ensure(ti.type == to.type, f"SUM: input {ti.type_name} and output {to.type_name} types differ")
    _types(ti, (TYPE_FLOAT32, TYPE_INT8, TYPE_INT16), "SUM: Only float32, int8, and int16 types are supported.")
    if ti.type == TYPE_FLOAT32:
        def run(ins, outs):
            outs[0][...] = _float_sum(ins[0], axes).reshape(outs[0].shape)
        return Prepared(run, ("kernel.mean", ti.numel))
    return _quantized_mean_or_sum(ti, to, axes, compute_sum=True)


@register("REDUCE_MAX")
def prepare_reduce_max(ctx, op):
    ti, to, axes = _reduced(ctx, op)
    ensure(ti.type == to.type, f"REDUCE_MAX: input {ti.type_name} and output {to.type_name} types differ")
    _types(ti, (TYPE_FLOAT32, TYPE_INT8), "REDUCE_MAX: Only float32 and int8 types are supported.")
    if ti.type == TYPE_INT8:
        ensure(np.float32(ti.params_scale) == np.float32(to.params_scale) and
               ti.params_zero_point == to.params_zero_point,
               "REDUCE_MAX: the int8 output's scale and zero point must be the input's")

    def run(ins, outs):
        outs[0][...] = ins[0].max(axis=tuple(axes)).reshape(outs[0].shape)
    return Prepared(run, ("kernel.mean", ti.numel))


def _float_sum(x, axes):
    """``ReduceSumImpl`` in float32: each output's sum in the input's order."""
    x = np.moveaxis(x.astype(np.float32), axes, list(range(-len(axes), 0)))
    x = x.reshape(x.shape[:x.ndim - len(axes)] + (-1,))
    acc = np.zeros(x.shape[:-1], np.float32)
    for k in range(x.shape[-1]):
        acc += x[..., k]
    return acc


def _quantized_mean_or_sum(ti, to, axes, compute_sum: bool):
    ensure(ti.type == to.type and ti.type in (TYPE_INT8, TYPE_INT16), f"MEAN of {ti.type_name} not supported")
    n = 1
    for a in axes:
        n *= ti.shape[a]
    m, sh = fx.quantize_multiplier(float(np.float64(ti.params_scale)) / float(np.float64(to.params_scale)))
    if not compute_sum:
        shift = min(63 - (64 - int(n).bit_length()), 32, 31 + sh)
        m = (m << shift) // n if shift >= 0 else (m >> -shift) // n
        sh -= shift
    zi, zo = ti.params_zero_point, to.params_zero_point
    lo, hi = QRANGE[to.type]
    dtype = to.dtype

    def run(ins, outs):
        s = fx.wrap32(ins[0].astype(np.int64).sum(axis=tuple(axes)))
        r = fx.mbqm(fx.wrap32(s - zi * n), m, sh) + zo
        outs[0][...] = clamp_cast(r, lo, hi, dtype).reshape(outs[0].shape)
    return Prepared(run, ("kernel.mean", ti.numel))


@register("MEAN")
def prepare_mean(ctx, op):
    ti, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    axes = sorted({int(a) % len(ti.shape) for a in _const_int(ctx, op.inputs[1], "axis").reshape(-1)})
    keep = bool(op.options.KeepDims()) if op.options is not None else False
    n = 1
    for a in axes:
        n *= ti.shape[a]
    out_shape = tuple(1 if i in axes else d for i, d in enumerate(ti.shape)) if keep else \
        tuple(d for i, d in enumerate(ti.shape) if i not in axes)
    ensure(int(np.prod(out_shape, dtype=np.int64)) == to.numel, f"reduced shape {list(out_shape)} != output "
                                                                 f"{list(to.shape)}")
    if ti.type == TYPE_FLOAT32:
        def run(ins, outs):
            acc = _float_sum(ins[0], axes)
            outs[0][...] = (acc / np.float32(n)).astype(np.float32).reshape(outs[0].shape)
        return Prepared(run, ("kernel.mean", ti.numel))
    return _quantized_mean_or_sum(ti, to, axes, compute_sum=False)
