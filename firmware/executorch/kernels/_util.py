"""Helpers shared by the CPU kernels: argument checks, output writes, 32-bit integer wrap-around."""

from __future__ import annotations

import numpy as np

from ..error import Error, RuntimeFailure
from ..method import RtTensor


def tensor(value, what: str) -> RtTensor:
    if not isinstance(value, RtTensor):
        raise RuntimeFailure(Error.InvalidArgument, f"{what}: expected a tensor, got {type(value).__name__}")
    return value


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
