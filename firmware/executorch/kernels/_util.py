"""Helpers shared by the CPU kernels: argument checks (tensors, tensor lists, dims), output writes, 32-bit
integer wrap-around."""

from __future__ import annotations

import numpy as np

from ..error import Error, RuntimeFailure
from ..method import RtTensor


def tensor(value, what: str) -> RtTensor:
    if not isinstance(value, RtTensor):
        raise RuntimeFailure(Error.InvalidArgument, f"{what}: expected a tensor, got {type(value).__name__}")
    return value


def tensor_list(ctx, v, what: str, kinds=("TensorList", "OptionalTensorList")) -> list:
    """The tensors of a list argument of one of ``kinds`` (an OptionalTensorList's -1 entries are None)."""
    if not (isinstance(v, tuple) and v and v[0] in kinds):
        raise RuntimeFailure(Error.InvalidArgument, f"{what}: expected a tensor list")
    return [None if i < 0 else tensor(ctx.method.values[i], what) for i in v[1]]


def dim_index(d, ndim: int, what: str) -> int:
    """A dim argument in ``[-ndim, ndim)`` (a 0-d tensor counts as 1-d) as a non-negative index."""
    n = max(ndim, 1)
    d = int(d)
    if not -n <= d < n:
        raise RuntimeFailure(Error.InvalidArgument, f"{what}: dim {d} out of range for {ndim} dimensions")
    return d % n


def out_tensor(args: list) -> RtTensor:
    return tensor(args[-1], "out")


def write_out(ctx, out: RtTensor, values: np.ndarray, kernel: str) -> None:
    """Store ``values`` (logical shape, any dtype) into ``out`` with the out dtype; charge the work."""
    if out.numel != values.size:
        raise RuntimeFailure(Error.InvalidArgument,
                             f"{kernel}: out has {out.numel} elements, the result has {values.size}")
    dst = out.array(ctx.bus)
    dst[...] = values.reshape(dst.shape).astype(dst.dtype, copy=False)
    ctx.bus.work(f"kernel.{kernel}", out.numel)


def wrap32(x):
    """Two's complement 32-bit wrap of an integer array (or int), as int64."""
    x = np.asarray(x, dtype=np.int64)
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
