"""BATCH_MATMUL: TFLM's ``batch_matmul.cc`` / ``batch_matmul_common.cc`` and ``reference_ops::BatchMatMul``.

Prepare (TFLM's checks): float32, int8 or int16 for both inputs and the output, all three the same; ranks 2 to
5; the batch dimensions (left-padded with 1s to the larger rank) broadcast (equal, or one of them 1); the
accumulation depths agree; the output shape is the broadcast batch, then lhs rows and rhs columns (with
``adj_x``/``adj_y`` transposing the last two dimensions of each input first). int16 needs every zero point 0.
The multiplier is ``GetQuantizedConvolutionMultipler`` without a bias: float(s_lhs * s_rhs) in double over
s_out, ``QuantizeMultiplier``.

Arithmetic: float32 sums lhs[i, k] * rhs[k, j] in float32 for k ascending; int8: the int32 sum of
(lhs - zp_lhs) * (rhs - zp_rhs), ``MultiplyByQuantizedMultiplier``, + zp_out, clamped to [-128, 127]; int16:
the sum in int64 and the int64 ``MultiplyByQuantizedMultiplier`` overload (the multiplier cut to 16 bits, one
rounding: LiteRT's int64 overload keeps all 31 and differs now and then), clamped to the int16 range. No fused
activation (the operator has none).
"""

from __future__ import annotations

import numpy as np

from ... import fixedpoint as fx
from . import register
from .common import QRANGE, TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, Prepared, clamp_cast, ensure


@register("BATCH_MATMUL")
def prepare_batch_matmul(ctx, op):
    ensure(len(op.inputs) == 2 and len(op.outputs) == 1, "BATCH_MATMUL: 2 inputs and 1 output")
    tl, tr, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    allowed = (TYPE_FLOAT32, TYPE_INT8, TYPE_INT16)
    ensure(tl.type in allowed, f"BATCH_MATMUL: lhs type {tl.type_name} (float32, int8 or int16)")
    ensure(tr.type in allowed, f"BATCH_MATMUL: rhs type {tr.type_name} (float32, int8 or int16)")
    ensure(tl.type == tr.type == to.type, f"BATCH_MATMUL: lhs {tl.type_name}, rhs {tr.type_name} and output "
                                          f"{to.type_name} types differ")
    rl, rr = len(tl.shape), len(tr.shape)
    ensure(2 <= rl <= 5 and 2 <= rr <= 5, f"BATCH_MATMUL: ranks {rl} and {rr} (2 to 5)")
    o = op.options
    adj_x = bool(o.AdjX()) if o is not None else False
    adj_y = bool(o.AdjY()) if o is not None else False
    rank = max(rl, rr)
    ls = (1,) * (rank - rl) + tuple(tl.shape)
    rs = (1,) * (rank - rr) + tuple(tr.shape)
    batch = []
    for a, b in zip(ls[:-2], rs[:-2]):
        ensure(a == b or a == 1 or b == 1, f"BATCH_MATMUL: batch dimensions {a} and {b} do not broadcast")
        batch.append(b if a == 1 else a)
    rows, depth_l = (ls[-1], ls[-2]) if adj_x else (ls[-2], ls[-1])
    depth_r, cols = (rs[-1], rs[-2]) if adj_y else (rs[-2], rs[-1])
    ensure(depth_l == depth_r, f"BATCH_MATMUL: accumulation depths {depth_l} and {depth_r} differ")
    want = tuple(batch) + (rows, cols)
    ensure(len(to.shape) >= rank and int(np.prod(want)) == to.numel,
           f"BATCH_MATMUL: the output shape is {list(want)}, the model's {list(to.shape)}")
    depth = depth_l
    out_shape = tuple(to.shape)

    def operands(ins):
        a = ins[0].reshape(ls)
        b = ins[1].reshape(rs)
        if adj_x:
            a = np.swapaxes(a, -1, -2)
        if adj_y:
            b = np.swapaxes(b, -1, -2)
        return a, b

    n = max(to.numel, 1) * depth
    if to.type == TYPE_FLOAT32:
        def run(ins, outs):
            a, b = operands(ins)
            a = a.astype(np.float32)
            b = b.astype(np.float32)
            acc = np.zeros(want, np.float32)
            for k in range(depth):
                acc += a[..., :, k:k + 1] * b[..., k:k + 1, :]
            outs[0][...] = acc.reshape(out_shape)
        return Prepared(run, ("kernel.batch_matmul_f32", n))
    zl, zr, zo = tl.params_zero_point, tr.params_zero_point, to.params_zero_point
    if to.type == TYPE_INT16:
        ensure((zl, zr, zo) == (0, 0, 0), f"BATCH_MATMUL: int16 zero points must be 0 (they are {[zl, zr, zo]})")
    ensure(tl.scale.size == 1 and tr.scale.size == 1, "BATCH_MATMUL: per-tensor quantization only")
    prod = float(np.float32(np.float32(tl.params_scale) * np.float32(tr.params_scale)))  # in float
    m, sh = fx.quantize_multiplier(prod / float(np.float64(np.float32(to.params_scale))))
    lo, hi = QRANGE[to.type]
    dtype = to.dtype
    wide = to.type == TYPE_INT16

    def run_q(ins, outs):
        a, b = operands(ins)
        acc = np.matmul(a.astype(np.int64) - zl, b.astype(np.int64) - zr)  # exact in int64
        r = fx.mbqm64(acc, m, sh) if wide else fx.mbqm(fx.wrap32(acc), m, sh)
        outs[0][...] = clamp_cast(r + zo, lo, hi, dtype).reshape(out_shape)
    return Prepared(run_q, ("kernel.quantized_batch_matmul", n))
