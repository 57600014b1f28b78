"""SVDF as TFLite Micro's reference kernel (``svdf.cc``, ``svdf_common.cc``: ``PrepareSvdf``,
``EvalIntegerSvdfReference``, ``EvalFloatSvdfReference``).

Inputs: the input [batch, n_input], the feature weights [n_filter, n_input], the time weights [n_filter, n_memory],
the bias [n_unit] (n_filter = n_unit * rank) and the activation state, a variable tensor [batch, n_memory *
n_filter] that persists across invocations (the interpreter resets it to zero, or the zero point for int8, at
AllocateTensors).

int8 (int8 input and feature weights; time weights and state both int16 or int8; int32 bias; int8 output):
Prepare takes effective_scale_1 = double(float(s_in * s_wf / s_state)) and effective_scale_2 = double(float(s_state
* s_wt / s_out)) through ``QuantizeMultiplier``, and requires |s_bias - float(s_state * s_wt)| < 1e-5 (TFLM reads the
bias's scale even when there is no bias: a model without one is refused here). Eval: the whole state shifts left
by one element; for each batch and filter, sum w_f * (x - zp_in) in int32, ``MultiplyByQuantizedMultiplier`` by
scale 1, clamped to the state type, + zp_state, into the filter's newest slot; then each filter's dot product of
its time weights with (state - zp_state) in int32; per unit the bias plus the sum over its rank filters;
``MultiplyByQuantizedMultiplier`` by scale 2, + zp_out, clamped to int8. The fused activation is not applied on
this path (TFLM's integer kernel ignores it).

float32: the same shift; the new slot is the float dot product of the feature weights with the input; per filter
the float dot product of time weights and state (in memory order), per unit bias + the rank sums, then the fused
activation. Two scratch buffers (batch x n_filter and batch x n_unit int32) for int8, one for float.
"""

from __future__ import annotations

import numpy as np

from ... import fixedpoint as fx
from . import register
from .common import QRANGE, TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32, Prepared, activation_range_float, ensure

OP_DATA_BYTES = 40  # sizeof(OpDataSvdf)


@register("SVDF")
def prepare_svdf(ctx, op):
    o = op.options
    ensure(o is not None, "SVDF: no options")
    ensure(len(op.inputs) == 5 and len(op.outputs) == 1, "SVDF: node->inputs->size != 5")
    ti, twf, twt = (ctx.tensor(op.inputs[k]) for k in range(3))
    tb = ctx.tensor(op.inputs[3]) if op.inputs[3] >= 0 else None
    ts, to = ctx.tensor(op.inputs[4]), ctx.tensor(op.outputs[0])
    rank = int(o.Rank())
    ensure(len(ti.shape) == 2, f"SVDF: input {list(ti.shape)} is not 2-D")
    ensure(len(twf.shape) == 2 and len(twt.shape) == 2, "SVDF: the weights must be 2-D")
    batch, n_input = ti.shape
    n_filter, n_memory = twf.shape[0], twt.shape[1]
    ensure(rank > 0 and n_filter % rank == 0, f"SVDF: {n_filter} filters are not a multiple of the rank {rank}")
    n_unit = n_filter // rank
    ensure(ti.type in (TYPE_FLOAT32, TYPE_INT8), f"SVDF: input type {ti.type_name} not supported")
    ensure(len(to.shape) == 2 and to.shape == (batch, n_unit), f"SVDF: output {list(to.shape)} is not "
                                                              f"[{batch}, {n_unit}]")
    ensure(twf.shape[1] == n_input, f"SVDF: feature weights {list(twf.shape)} do not match the input size {n_input}")
    ensure(twt.shape[0] == n_filter, f"SVDF: time weights {list(twt.shape)} do not have {n_filter} filters")
    if tb is not None:
        ensure(len(tb.shape) >= 1 and tb.shape[0] == n_unit, f"SVDF: bias {list(tb.shape)} is not [{n_unit}]")
    ensure(len(ts.shape) == 2 and ts.shape == (batch, n_memory * n_filter),
           f"SVDF: activation state {list(ts.shape)} is not [{batch}, {n_memory * n_filter}]")
    ensure(ts.is_variable, "SVDF: the activation state (input 4) must be a variable tensor")
    wf = ctx.const(op.inputs[1])
    wt = ctx.const(op.inputs[2])
    bias = ctx.const(op.inputs[3]) if tb is not None else None
    ensure(wf is not None and wt is not None and (tb is None or bias is not None), "SVDF: weights must be constant")
    geometry = (batch, n_input, n_filter, n_memory, n_unit, rank)
    macs = batch * n_filter * (n_input + n_memory)
    if ti.type == TYPE_INT8:
        ensure(twf.type == TYPE_INT8, f"SVDF: feature weights {twf.type_name} with an int8 input")
        ensure(twt.type in (TYPE_INT16, TYPE_INT8), f"SVDF: time weights {twt.type_name} not supported")
        ensure(ts.type in (TYPE_INT16, TYPE_INT8), f"SVDF: activation state {ts.type_name} not supported")
        ensure(tb is None or tb.type == TYPE_INT32, f"SVDF: bias {tb.type_name if tb else ''} must be INT32")
        ensure(to.type == TYPE_INT8, f"SVDF: output {to.type_name} must be INT8")
        ensure(tb is not None, "SVDF: an int8 SVDF without a bias is not supported (TFLite Micro's Prepare reads "
                               "the bias's scale)")
        ensure(ts.type == twt.type, f"SVDF: activation state {ts.type_name} and time weights {twt.type_name} differ "
                                    f"(TFLite Micro's kernel reads both as the time weights' type)")
        f32 = np.float32
        s1 = float(np.float64(f32(f32(ti.params_scale) * f32(twf.params_scale)) / f32(ts.params_scale)))
        prod2 = f32(f32(ts.params_scale) * f32(twt.params_scale))
        s2 = float(np.float64(prod2 / f32(to.params_scale)))
        ensure(abs(float(np.float64(f32(tb.params_scale))) - float(np.float64(prod2))) < 1e-5,
               "SVDF: bias scale is not activation state scale x time weights scale")
        m1, sh1 = fx.quantize_multiplier(s1)
        m2, sh2 = fx.quantize_multiplier(s2)
        run = _int_run(wf, wt, bias, geometry, (m1, sh1, m2, sh2), ti.params_zero_point, ts.params_zero_point,
                       to.params_zero_point, QRANGE[ts.type])
        scratch = [batch * n_filter * 4, batch * n_unit * 4]
        return Prepared(run, ("kernel.quantized_linear", macs), scratch=scratch, persistent=OP_DATA_BYTES)
    ensure(twf.type == twt.type == ts.type == to.type == TYPE_FLOAT32 and (tb is None or tb.type == TYPE_FLOAT32),
           "SVDF: a float32 SVDF needs float32 weights, state, bias and output")
    lo, hi = activation_range_float(int(o.FusedActivationFunction()))
    run = _float_run(wf, wt, bias, geometry, lo, hi)
    return Prepared(run, ("kernel.fully_connected_f32", macs), scratch=[batch * n_filter * 4],
                    persistent=OP_DATA_BYTES)


def _shift_state(state: np.ndarray) -> None:
    """The whole state buffer moves left by one element (the last element keeps its value)."""
    flat = state.reshape(-1)
    flat[:-1] = flat[1:].copy()


def _int_run(wf, wt, bias, geometry, scales, zi: int, zs: int, zo: int, state_range):
    batch, n_input, n_filter, n_memory, n_unit, rank = geometry
    m1, sh1, m2, sh2 = scales
    wf64 = wf.astype(np.int64)
    wt64 = wt.astype(np.int64)
    b64 = bias.astype(np.int64)
    lo, hi = state_range

    def run(ins, outs):
        state = ins[4]
        _shift_state(state)
        st = state.reshape(batch, n_filter, n_memory)
        x = ins[0].astype(np.int64).reshape(batch, n_input) - zi
        dot = fx.wrap32(x @ wf64.T)  # [batch, n_filter], int32 accumulation
        # stored as the state's C type: zp + the clamped value wraps if it leaves the type
        st[:, :, n_memory - 1] = (zs + np.clip(fx.mbqm(dot, m1, sh1), lo, hi)).astype(state.dtype)
        scratch = fx.wrap32(np.einsum("bfm,fm->bf", st.astype(np.int64) - zs, wt64))
        acc = fx.wrap32(b64 + scratch.reshape(batch, n_unit, rank).sum(axis=2))
        outs[0][...] = np.clip(fx.mbqm(acc, m2, sh2) + zo, -128, 127).astype(np.int8).reshape(outs[0].shape)
    return run


def _float_run(wf, wt, bias, geometry, lo, hi):
    batch, n_input, n_filter, n_memory, n_unit, rank = geometry
    wf32, wt32 = wf.astype(np.float32), wt.astype(np.float32)
    b32 = bias.astype(np.float32) if bias is not None else np.zeros(n_unit, np.float32)

    def run(ins, outs):
        state = ins[4]
        _shift_state(state)
        st = state.reshape(batch, n_filter, n_memory)
        x = ins[0].astype(np.float32).reshape(batch, n_input)
        new = np.zeros((batch, n_filter), np.float32)
        for k in range(n_input):
            new += x[:, k:k + 1] * wf32[:, k]
        st[:, :, n_memory - 1] = new
        scratch = np.zeros((batch, n_filter), np.float32)
        for j in range(n_memory):
            scratch += wt32[:, j] * st[:, :, j]
        out = np.broadcast_to(b32, (batch, n_unit)).astype(np.float32)
        r = scratch.reshape(batch, n_unit, rank)
        for j in range(rank):
            out = out + r[:, :, j]
        outs[0][...] = np.clip(out, np.float32(lo), np.float32(hi)).astype(np.float32).reshape(outs[0].shape)
    return run

