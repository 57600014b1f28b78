"""``cortex_m::softmax`` (``arm_softmax_s8``): the fixed-point algorithm of CMSIS-NN (``exp_on_negative_values``,
a sum with 12 accumulator bits, ``one_over_one_plus_x``, output zero point -128) over the last dimension.
"""

from __future__ import annotations

import numpy as np

from ...error import Error
from .._util import out_tensor, tensor, wrap32
from ._common import as_int, cortex_m_kernel, fail, is_i8, raw8, store8, validate_quant
from .fixed_point import (
    I32_MAX, clz32, divide_by_power_of_two, doubling_high_mult, exp_on_negative_values, one_over_one_plus_x)


def softmax_rows(x: np.ndarray, mult: int, shift: int, diff_min: int) -> np.ndarray:
    """``arm_softmax_s8`` over the last axis of an int8 array ``(rows, row_size)``."""
    x = x.astype(np.int64)
    mx = x.max(axis=1, keepdims=True)
    diff = x - mx
    ok = diff >= diff_min
    mask = wrap32(np.int64(1) << shift) if shift >= 0 else 0
    e = exp_on_negative_values(doubling_high_mult(wrap32(diff * mask), mult))
    acc_bits = 12
    terms = np.where(ok, divide_by_power_of_two(e, acc_bits), 0)
    total = wrap32(terms.sum(axis=1))
    headroom = clz32(total)
    bits_over_unit = acc_bits - headroom + 23
    shifted = np.where(total > 0, wrap32(total << headroom), 0)
    shifted_scale = one_over_one_plus_x(wrap32(shifted - (1 << 31)))
    r = divide_by_power_of_two(doubling_high_mult(shifted_scale[:, None], e), bits_over_unit[:, None]) - 128
    r = np.clip(r, -128, 127)
    return np.where(ok, r, -128).astype(np.int8)


@cortex_m_kernel("softmax", "T,i,i,i,i,i,i")
def softmax(ctx, args):
    """``cortex_m::softmax.out`` (op_softmax.cpp -> arm_softmax_s8) over the last dimension."""
    fn = "softmax_out"
    x, out = tensor(args[0], "input"), out_tensor(args)
    dim, in_zp, out_zp, mult, shift, diff_min = (as_int(v, "softmax arguments") for v in args[1:7])
    if not (is_i8(x) and is_i8(out)):
        fail(Error.InvalidArgument, f"{fn}: only int8 tensors are supported (input={x.scalar_type}, "
                                     f"out={out.scalar_type})")
    rank = len(x.sizes)
    pdim = dim + rank if dim < 0 else dim
    if pdim != rank - 1:
        fail(Error.InvalidArgument, f"{fn}: only last-dimension softmax is supported (dim={dim}, rank={rank})")
    validate_quant(fn, mult, shift, "softmax input")
    row = x.sizes[-1] if rank else 0
    if row <= 0 or row > I32_MAX:
        fail(Error.InvalidArgument, f"{fn}: row size must fit in int32 (row_size={row})")
    rows = x.numel // row
    if rows <= 0:
        fail(Error.InvalidArgument, f"{fn}: num_rows must fit in int32 (num_rows={rows})")
    if out_zp != -128:
        fail(Error.InvalidArgument, f"{fn}: expected output zero_point=-128 (got zero_point={out_zp})")
    data = raw8(ctx, x)[:rows * row].reshape(rows, row)
    store8(ctx, out, softmax_rows(data, mult, shift, diff_min), "cmsis_softmax")
    return out
