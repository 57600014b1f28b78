"""SHAPE, FILL, ZEROS_LIKE, SELECT_V2, EQUAL/NOT_EQUAL/LESS/LESS_EQUAL/GREATER/GREATER_EQUAL, CAST: TFLM's
``shape.cc``, ``fill.cc``, ``zeros_like.cc``, ``select.cc``, ``comparisons.cc`` and ``cast.cc``.

- SHAPE: the input's dimensions into an int32 vector (TFLM writes no int64 shape).
- FILL: a constant dims tensor (int8/int16/int32/int64) equal to the output's shape, a scalar value of the
  output's type, float32/int32/int8 (TFLM's Eval; the bytes are copied, no requantization).
- ZEROS_LIKE: int64/int32/int8/float32 zeros; int8 writes the integer 0, not the zero point.
- SELECT_V2: a bool condition, x and y of one type (float32/int8/int16; their quantization is not looked at),
  broadcast over up to 5 dimensions (``BroadcastSelect5DSlow``).
- Comparisons (``ComparisonsPrepare``/``*WithScaling``): float32/int32/int64 compared as they are (EQUAL and
  NOT_EQUAL also bool); int8 compares (x - zp) << 8 scaled by ``QuantizeMultiplierSmallerThanOneExp(scale)``
  (each input's own scale, which must be below 1) with ``MultiplyByQuantizedMultiplierSmallerThanOneExp``.
  TFLM's GREATER also takes int16 in its Eval but its Prepare sets the scaling parameters for int8 only (the
  int16 comparison reads whatever the persistent buffer holds): refused at Prepare here.
- CAST: ``static_cast`` from int8/int16/int32/float32/bool to int8/int16/int32/float32 (uint32 is not modelled);
  float to integer truncates toward zero as the Cortex-M's VCVT does (saturating to int32, NaN to 0) and the
  narrowing to int8/int16 keeps the low bits, as a ``static_cast`` of that int32 does.
"""

from __future__ import annotations

import numpy as np

from ... import fixedpoint as fx
from . import register
from .common import (TYPE_BOOL, TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_INT64, Prepared, broadcast_shape,
                     ensure)


def _broadcasts(shapes, out, name):
    ensure(broadcast_shape(*shapes) == tuple(out),
           f"{name}: shapes {[list(s) for s in shapes]} do not broadcast to the output {list(out)}")


@register("SHAPE")
def prepare_shape(ctx, op):
    ensure(len(op.inputs) == 1 and len(op.outputs) == 1, "SHAPE: 1 input and 1 output")
    ti, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    ensure(to.type == TYPE_INT32, f"SHAPE: Output type {to.type_name} ({to.type}) not supported.")
    ensure(to.numel == len(ti.shape), f"SHAPE: output of {to.numel} elements for a {len(ti.shape)}-D input")
    dims = np.array(ti.shape, np.int32)

    def run(ins, outs):
        outs[0].reshape(-1)[...] = dims
    return Prepared(run, ("kernel.copy", max(to.numel, 1)))


@register("FILL")
def prepare_fill(ctx, op):
    td, tv, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    ensure(len(tv.shape) == 0, f"FILL: the value must be a scalar (it has {len(tv.shape)} dimensions)")
    ensure(tv.type == to.type, f"FILL: value {tv.type_name} and output {to.type_name} types differ")
    dims = ctx.const(op.inputs[0])
    ensure(dims is not None, "FILL: Non-constant >dims< tensor is not supported")
    ensure(td.type in (TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_INT64),
           f"FILL: cannot compare int array to tensor of type {td.type}.")
    ensure(len(td.shape) == 1 and [int(d) for d in dims.reshape(-1)] == [int(d) for d in to.shape],
           f"FILL: dims {dims.reshape(-1).tolist()} are not the output's shape {list(to.shape)}")
    ensure(tv.type in (TYPE_FLOAT32, TYPE_INT32, TYPE_INT8),
           f"FILL: Fill only currently supports float32 for input 1, got {tv.type_name}.")

    def run(ins, outs):
        outs[0][...] = ins[1].reshape(-1)[0]
    return Prepared(run, ("kernel.copy", max(to.numel, 1)))


@register("ZEROS_LIKE")
def prepare_zeros_like(ctx, op):
    ensure(len(op.inputs) == 1 and len(op.outputs) == 1, "ZEROS_LIKE: 1 input and 1 output")
    ti, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    ensure(ti.type in (TYPE_INT64, TYPE_INT32, TYPE_INT8, TYPE_FLOAT32),
           f"ZEROS_LIKE: ZerosLike only currently supports int64, int32, and float32, got {ti.type}.")
    ensure(to.type == ti.type and to.numel == ti.numel, "ZEROS_LIKE: the output must be the input's type and size")

    def run(ins, outs):
        outs[0][...] = 0
    return Prepared(run, ("kernel.copy", max(to.numel, 1)))


@register("SELECT_V2")
def prepare_select_v2(ctx, op):
    ensure(len(op.inputs) == 3 and len(op.outputs) == 1, "SELECT_V2: 3 inputs and 1 output")
    tc, tx, ty, to = (ctx.tensor(i) for i in (*op.inputs, op.outputs[0]))
    ensure(tc.type == TYPE_BOOL, f"SELECT_V2: condition type {tc.type_name} (must be BOOL)")
    ensure(tx.type == ty.type, f"SELECT_V2: x {tx.type_name} and y {ty.type_name} types differ")
    ensure(tx.type in (TYPE_FLOAT32, TYPE_INT8, TYPE_INT16),
           f"SELECT_V2: Does not support type other than int8|int16|float32, but got {tx.type_name}")
    ensure(to.type == tx.type, f"SELECT_V2: output {to.type_name} is not the inputs' {tx.type_name}")
    ensure(max(len(tc.shape), len(tx.shape), len(ty.shape)) <= 5, "SELECT_V2: at most 5 dimensions")
    if not (tc.numel == tx.numel == ty.numel == to.numel == 1):
        _broadcasts((tc.shape, tx.shape, ty.shape), to.shape, "SELECT_V2")

    def run(ins, outs):
        outs[0][...] = np.where(ins[0], ins[1], ins[2]).reshape(outs[0].shape)
    return Prepared(run, ("kernel.default", max(to.numel, 1)))


_COMPARE = {"EQUAL": np.equal, "NOT_EQUAL": np.not_equal, "GREATER": np.greater, "GREATER_EQUAL": np.greater_equal,
            "LESS": np.less, "LESS_EQUAL": np.less_equal}


def _prepare_compare(ctx, op):
    name = op.op_name
    t1, t2, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    allowed = [TYPE_FLOAT32, TYPE_INT32, TYPE_INT64, TYPE_INT8]
    if name in ("EQUAL", "NOT_EQUAL"):
        allowed.append(TYPE_BOOL)
    if name == "GREATER" and t1.type == TYPE_INT16:
        ensure(False, "GREATER: int16 not supported (TFLM's Prepare sets the scaling parameters for int8 only)")
    ensure(t1.type in allowed, f"{name}: Type {t1.type_name} ({t1.type}) not supported.")
    ensure(t2.type == t1.type, f"{name}: input1 {t1.type_name} and input2 {t2.type_name} types differ")
    ensure(to.type == TYPE_BOOL, f"{name}: output type {to.type_name} (must be BOOL)")
    ensure(max(len(t1.shape), len(t2.shape)) <= 4, f"{name}: at most 4 dimensions")
    _broadcasts((t1.shape, t2.shape), to.shape, name)
    fn = _COMPARE[name]
    if t1.type != TYPE_INT8:
        def run(ins, outs):
            outs[0][...] = fn(ins[0], ins[1])
        return Prepared(run, ("kernel.default", max(to.numel, 1)))
    params = []
    for t in (t1, t2):
        s = float(np.float64(np.float32(t.params_scale)))
        ensure(0 < s < 1, f"{name}: int8 input scale {s} (QuantizeMultiplierSmallerThanOneExp needs it below 1)")
        params.append((t.params_zero_point, *fx.quantize_multiplier_smaller_than_one_exp(s)))

    def scaled(x, p):
        zp, m, sh = p
        return fx.mbqm_smaller_than_one_exp((x.astype(np.int64) - zp) * 256, m, sh)

    def run_q(ins, outs):
        outs[0][...] = fn(scaled(ins[0], params[0]), scaled(ins[1], params[1]))
    return Prepared(run_q, ("kernel.default", max(to.numel, 1)))


for _name in _COMPARE:
    register(_name)(_prepare_compare)


_CAST_IN = (TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_FLOAT32, TYPE_BOOL)
_CAST_OUT = (TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_FLOAT32)


def _float_to_int32(x: np.ndarray) -> np.ndarray:
    """VCVT.S32.F32: toward zero, saturating, NaN to 0."""
    x = x.astype(np.float64)
    t = np.trunc(np.nan_to_num(x, nan=0.0))
    return np.clip(t, -(1 << 31), (1 << 31) - 1).astype(np.int64)


@register("CAST")
def prepare_cast(ctx, op):
    ensure(len(op.inputs) == 1 and len(op.outputs) == 1, "CAST: 1 input and 1 output")
    ti, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    ensure(ti.type in _CAST_IN, f"CAST: Input type {ti.type_name} ({ti.type}) not supported.")
    ensure(to.type in _CAST_OUT, f"CAST: Output type {to.type_name} ({to.type}) not supported.")
    ensure(ti.numel == to.numel, f"CAST: input of {ti.numel} elements, output of {to.numel}")
    dtype = to.dtype

    def run(ins, outs):
        x = ins[0]
        if to.type == TYPE_FLOAT32:
            y = x.astype(np.float32)
        elif ti.type == TYPE_FLOAT32:
            y = _float_to_int32(x).astype(dtype)  # int64 -> int8/int16/int32 keeps the low bits
        else:
            y = x.astype(np.int64).astype(dtype)
        outs[0].reshape(-1)[...] = y.reshape(-1)
    return Prepared(run, ("kernel.copy", max(to.numel, 1)))
