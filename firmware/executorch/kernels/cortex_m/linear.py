"""``cortex_m::quantized_linear`` and ``cortex_m::quantized_batch_matmul``.

* **Linear** (``arm_fully_connected_s8``, MVE): ``kernel_sum[o] + sum(x * w) + filter_offset * sum(x)``; the MVE
  path needs the AoT ``kernel_sum`` (without one CMSIS-NN returns an argument error, as on the target).
* **Batch matmul** (``arm_batch_matmul_s8``): ``sum((l + lo) * (r + ro))`` requantized per tensor.

Work reported: multiply-accumulates.
"""

from __future__ import annotations

import numpy as np

from ...error import Error, RuntimeFailure
from .._util import out_tensor, tensor, wrap32
from ._common import ARG_ERROR, as_int, cortex_m_kernel, fail, is_i8, raw32, raw8, store8
from .fixed_point import requantize, to_i8


def fully_connected_s8(x, w, kernel_sum, filter_offset, out_off, mult, shift, amin, amax):
    """``arm_fully_connected_s8`` (MVE): x (B, K), w (O, K), kernel_sum (O,) -> (B, O) int8."""
    xv = x.astype(np.float64)
    acc = (xv @ w.astype(np.float64).T).astype(np.int64) + kernel_sum.astype(np.int64)[None, :]
    if filter_offset:
        acc = acc + np.int64(filter_offset) * xv.sum(axis=1).astype(np.int64)[:, None]
    r = requantize(wrap32(acc), mult, shift)
    return to_i8(np.minimum(np.maximum(wrap32(r + out_off), amin), amax))


def batch_matmul_s8(lhs, rhs_t, lhs_off, rhs_off, out_off, mult, shift, amin=-128, amax=127):
    """``arm_batch_matmul_s8``: lhs (B, M, K), rhs_t (B, N, K) -> (B, M, N) int8."""
    lv = lhs.astype(np.float64) + lhs_off
    rv = rhs_t.astype(np.float64) + rhs_off
    acc = np.matmul(lv, rv.transpose(0, 2, 1)).astype(np.int64)
    r = wrap32(requantize(wrap32(acc), mult, shift) + out_off)
    return to_i8(np.minimum(np.maximum(r, amin), amax))


@cortex_m_kernel("quantized_linear", "T,T,T?,T?,i,i,i,I,I,i,i")
def quantized_linear(ctx, args):
    """``cortex_m::quantized_linear.out`` (op_quantized_linear.cpp -> arm_fully_connected_s8, MVE path)."""
    x, w, out = tensor(args[0], "input"), tensor(args[1], "weights"), out_tensor(args)
    ksum = tensor(args[3], "kernel_sum") if args[3] is not None else None
    in_off, f_off, out_off = (as_int(v, "offsets") for v in args[4:7])
    mults, shifts = ctx.int_list(args[7]), ctx.int_list(args[8])
    amax, amin = as_int(args[9], "activation_max"), as_int(args[10], "activation_min")
    if not mults or not shifts:
        raise RuntimeFailure(Error.InvalidArgument, "quantized_linear: empty requantize multipliers/shifts")
    if not x.sizes or not out.sizes:
        raise RuntimeFailure(Error.InvalidArgument, "quantized_linear: input/out must have at least one dim")
    in_feat, out_feat = x.sizes[-1], out.sizes[-1]
    batches = int(np.prod(x.sizes[:-1], dtype=np.int64))
    if ksum is None:  # the MVE arm_fully_connected_s8 needs ctx.buf (the kernel sums)
        fail(Error.Internal, f"quantized_linear_out: CMSIS-NN failed with status [{ARG_ERROR}]")
    xv = raw8(ctx, x)[:batches * in_feat]
    wv = raw8(ctx, w)[:out_feat * in_feat]
    ks = raw32(ctx, ksum)[:out_feat]
    if xv.size != batches * in_feat or wv.size != out_feat * in_feat or ks.size != out_feat:
        raise RuntimeFailure(Error.InvalidArgument, "quantized_linear: tensor sizes do not fit")
    r = fully_connected_s8(xv.reshape(batches, in_feat), wv.reshape(out_feat, in_feat), ks, f_off, out_off,
                           int(mults[0]), int(shifts[0]), amin, amax)
    store8(ctx, out, r, "quantized_linear", batches * in_feat * out_feat)
    return out


@cortex_m_kernel("quantized_batch_matmul", "T,i,T,i,i,i,i,T")
def quantized_batch_matmul(ctx, args):
    """``cortex_m::quantized_batch_matmul.out`` (arm_batch_matmul_s8): ``lhs [B, M, K] x rhs_T [B, N, K]``."""
    fn = "quantized_batch_matmul_out"
    lhs, rhs, out = tensor(args[0], "lhs"), tensor(args[2], "rhs_transposed"), out_tensor(args)
    scratch = tensor(args[7], "scratch")
    lo, ro, oo, om, osh = (as_int(args[i], "qparams") for i in (1, 3, 4, 5, 6))
    if not (is_i8(lhs) and is_i8(rhs) and is_i8(out)):
        fail(Error.InvalidArgument, f"{fn}: tensors must be int8")
    if len(lhs.sizes) != 3 or len(rhs.sizes) != 3 or len(out.sizes) != 3:
        fail(Error.InvalidArgument, f"{fn}: tensors must be 3-D")
    if lhs.sizes[0] != rhs.sizes[0]:
        fail(Error.InvalidArgument, f"{fn}: batch sizes differ")
    if lhs.sizes[2] != rhs.sizes[2]:
        fail(Error.InvalidArgument, f"{fn}: inner dimensions differ")
    if out.sizes != (lhs.sizes[0], lhs.sizes[1], rhs.sizes[1]):
        fail(Error.InvalidArgument, f"{fn}: output shape mismatch")
    if scratch.nbytes == 0:  # MVE path: the vector sums live in ctx.buf
        fail(Error.Internal, f"{fn}: arm_batch_matmul_s8 failed with status [{ARG_ERROR}]")
    bsz, m, k = lhs.sizes
    n = rhs.sizes[1]
    r = batch_matmul_s8(raw8(ctx, lhs).reshape(bsz, m, k), raw8(ctx, rhs).reshape(bsz, n, k), lo, ro, oo, om, osh)
    store8(ctx, out, r, "quantized_batch_matmul", bsz * m * n * k)
    return out
