"""``cortex_m::transpose`` (``arm_transpose_s8``) and ``cortex_m::pad`` (``arm_pad_s8``): data movement on the
raw int8 memory.
"""

from __future__ import annotations

import numpy as np

from ...error import Error, RuntimeFailure
from .._util import out_tensor, tensor
from ._common import ARG_ERROR, as_int, channels_last, cortex_m_kernel, fail, is_i8, raw8, store8
from .fixed_point import to_i8


@cortex_m_kernel("transpose", "T,I")
def transpose(ctx, args):
    """``cortex_m::transpose.out`` (arm_transpose_s8 on the raw data, logical sizes)."""
    fn = "transpose_out"
    x, out = tensor(args[0], "input"), out_tensor(args)
    perm = ctx.int_list(args[1])
    if not (is_i8(x) and is_i8(out)):
        fail(Error.InvalidArgument, f"{fn}: only int8 tensors are supported")
    rank = len(x.sizes)
    if rank == 0 or rank > 4:
        fail(Error.InvalidArgument, f"{fn}: expected a rank in [1, 4], got {rank}")
    if len(perm) != rank:
        fail(Error.InvalidArgument, f"{fn}: perm has {len(perm)} entries for rank {rank}")
    data = raw8(ctx, x)[:x.numel].reshape(x.sizes)
    if rank == 1:
        r = data
    elif rank == 2:  # arm_transpose_s8 swaps the two dims whatever the permutation says
        r = data.T
    else:
        if any(p < 0 or p >= rank for p in perm) or sorted(perm) != list(range(rank)):
            fail(Error.Internal, f"{fn}: arm_transpose_s8 failed with status {ARG_ERROR}")
        r = data.transpose(perm)
    if tuple(r.shape) != out.sizes:
        raise RuntimeFailure(Error.InvalidArgument, f"{fn}: out sizes {list(out.sizes)} != {list(r.shape)}")
    store8(ctx, out, np.ascontiguousarray(r), "transpose")
    return out


@cortex_m_kernel("pad", "T,I,I,i")
def pad(ctx, args):
    """``cortex_m::pad.out`` (arm_pad_s8 on the physical layout; pads already in physical order)."""
    fn = "pad_out"
    x, out = tensor(args[0], "input"), out_tensor(args)
    pre, post = ctx.int_list(args[1]), ctx.int_list(args[2])
    value = as_int(args[3], "pad_value")
    if not (is_i8(x) and is_i8(out)):
        fail(Error.InvalidArgument, f"{fn}: only int8 tensors are supported")
    rank = len(x.sizes)
    if rank == 0 or rank > 4:
        fail(Error.InvalidArgument, f"{fn}: expected a rank in [1, 4], got {rank}")
    if len(pre) < 4 or len(post) < 4:
        raise RuntimeFailure(Error.InvalidArgument, f"{fn}: expected four padding values per side")
    offset = 4 - rank
    order = (0, 2, 3, 1)
    nhwc = channels_last(x)
    dims = [1, 1, 1, 1]
    for i in range(rank):
        dims[offset + i] = x.sizes[order[offset + i]] if nhwc else x.sizes[i]
    if any(p < 0 for p in pre[:4] + post[:4]):
        raise RuntimeFailure(Error.InvalidArgument, f"{fn}: negative padding")
    data = raw8(ctx, x)[:int(np.prod(dims))].reshape(dims)
    r = np.pad(data, [(pre[i], post[i]) for i in range(4)], constant_values=int(to_i8(value)))
    store8(ctx, out, r, "pad")
    return out
