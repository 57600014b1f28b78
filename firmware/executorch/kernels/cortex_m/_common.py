"""What the ``cortex_m::`` kernels share: CMSIS-NN status codes, the argument reading and checks of the C++
kernels (``cortex_m_ops_common.h``), raw int8/int32 views of tensor memory, layouts, window taps, registration.

Failures: ``context.fail`` in the C++ code (argument checks, CMSIS-NN status) is ``fail``: the kernel's
``ET_LOG`` line, then ``RuntimeFailure`` with the same error code; ``ET_CHECK_MSG`` (which aborts on the
target) is ``check``: the fatal line, then a failure with ``Internal``.
"""

from __future__ import annotations

import numpy as np

from ... import log
from ...error import Error, RuntimeFailure
from ...method import RtTensor
from ..registry import REGISTRY
from .fixed_point import I32_MAX, I32_MIN

ARG_ERROR = -1      # ARM_CMSIS_NN_ARG_ERROR
FAILURE = -3        # ARM_CMSIS_NN_FAILURE
CH_IN_BLOCK_MVE = 124
CHAR, SHORT, INT = 1, 2, 3  # ScalarType::Char, Short, Int


class CmsisStatus(Exception):
    """A CMSIS-NN function returned a status other than ARM_CMSIS_NN_SUCCESS."""

    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


# ------------------------------------------------------------------------------------------------ failures
def fail(code: Error, message: str):
    log.error(message)
    raise RuntimeFailure(code, message)


def check(cond: bool, func: str, what: str, message: str) -> None:
    """``ET_CHECK_MSG``: the target aborts; here the fatal line is logged and the call fails."""
    if not cond:
        text = f"In function {func}(), assert failed ({what}): {message}"
        log.fatal(text)
        raise RuntimeFailure(Error.Internal, text)


# ------------------------------------------------------------------------------------------------ arguments
def nargs(args: list, n_inputs: int, kernel: str) -> None:
    """A KernelCall passes the inputs, the out tensor and the returned tensor (the out tensor again)."""
    if len(args) not in (n_inputs + 1, n_inputs + 2):
        raise RuntimeFailure(Error.InvalidArgument, f"{kernel}: expected {n_inputs} inputs and out, got "
                                                    f"{len(args)} arguments")


def as_int(v, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise RuntimeFailure(Error.InvalidArgument, f"{what}: expected an int, got {type(v).__name__}")
    return v


def as_bool(v, what: str) -> bool:
    if not isinstance(v, (bool, int)):
        raise RuntimeFailure(Error.InvalidArgument, f"{what}: expected a bool, got {type(v).__name__}")
    return bool(v)


def validate_i8_pair(fn: str, a: RtTensor, b: RtTensor, out: RtTensor, same_sizes: bool, dtype: int = CHAR) -> None:
    """``validate_cmsis_nn_tensor_requirements`` (ET_CHECK_MSG)."""
    for name, t in (("Input1", a), ("Input2", b), ("Output", out)):
        check(t.scalar_type == dtype, fn, f"{name.lower()}.scalar_type() == expected_dtype",
              f"{name} dtype must be {dtype}, got {t.scalar_type}")
    if same_sizes:
        check(a.sizes == b.sizes, fn, "input1.sizes() == input2.sizes()", "Input1 and Input2 must have the same sizes")
        check(out.sizes == a.sizes, fn, "output.sizes() == input1.sizes()",
              "Output must have the same sizes as inputs")


def validate_quant(fn: str, mult: int, shift: int, name: str) -> None:
    """``validate_single_quant_params`` (ET_CHECK_MSG)."""
    check(I32_MIN <= mult <= I32_MAX, fn, "multiplier in int32 range", f"{name} multiplier must be in int32 range "
                                                                      f"[Value: {mult}]")
    check(-31 <= shift <= 31, fn, "shift in [-31, 31]", f"{name} shift must be in range [-31, 31] [Value: {shift}]")


# ------------------------------------------------------------------------------------------------ memory and layout
def raw8(ctx, t: RtTensor) -> np.ndarray:
    """The tensor's bytes as int8, in memory order."""
    return t.raw(ctx.bus).view(np.int8)


def raw32(ctx, t: RtTensor) -> np.ndarray:
    return t.raw(ctx.bus).view(np.int32)


def is_i8(t: RtTensor) -> bool:
    return t.scalar_type == CHAR


def store8(ctx, out: RtTensor, values: np.ndarray, kernel: str, work: int | None = None) -> None:
    dst = raw8(ctx, out)
    if dst.size != values.size:
        raise RuntimeFailure(Error.InvalidArgument,
                             f"{kernel}: out has {dst.size} elements, the result has {values.size}")
    dst[:] = values.reshape(-1).astype(np.int8, copy=False)
    ctx.bus.work(f"kernel.{kernel}", out.numel if work is None else work)


def channels_last(t: RtTensor) -> bool:
    """``is_channels_last_tensor``: 4-D, and NHWC dim order unless channels or the spatial dims are 1."""
    if len(t.sizes) != 4:
        return False
    if t.sizes[1] == 1 or (t.sizes[2] == 1 and t.sizes[3] == 1):
        return True
    return t.dim_order == (0, 2, 3, 1)


def contiguous(t: RtTensor) -> bool:
    return t.dim_order == tuple(range(len(t.sizes)))


def nhwc_sizes(t: RtTensor, nhwc_logical: bool) -> tuple[int, int, int, int]:
    """(N, H, W, C) of an activation tensor for the two operator layouts."""
    s = t.sizes
    return (s[0], s[1], s[2], s[3]) if nhwc_logical else (s[0], s[2], s[3], s[1])


def window_taps(in_len: int, out_len: int, k: int, stride: int, pad: int, dil: int) -> np.ndarray:
    """Input index of each (output position, tap), -1 where the tap falls outside the input (padding)."""
    idx = np.arange(out_len)[:, None] * stride - pad + np.arange(k)[None, :] * dil
    return np.where((idx >= 0) & (idx < in_len), idx, -1)


# ------------------------------------------------------------------------------------------------ registration
# Every kernel is registered with the types of its inputs (``sig``) and runs behind ``nargs`` for as many.
def cortex_m_kernel(op: str, sig: str):
    """Decorator: register ``impl(ctx, args)`` as ``cortex_m::<op>.out`` with argument types ``sig``; the
    module keeps the registered function."""
    def decorate(impl):
        kernel = _counted(impl, op, sig, impl.__name__)
        REGISTRY.add(f"cortex_m::{op}.out", sig, kernel)
        return kernel
    return decorate


def layout_variants(op: str, sig: str):
    """Decorator: register ``impl(ctx, args, nhwc_logical)`` as ``cortex_m::<op>.out`` (NCHW-logical tensors in
    channels-last memory) and as ``cortex_m::<op>_nhwc.out`` (the explicit-layout variant: NHWC-logical,
    contiguous), both with argument types ``sig``."""
    def decorate(impl):
        for suffix, nhwc in (("", False), ("_nhwc", True)):
            REGISTRY.add(f"cortex_m::{op}{suffix}.out", sig, _counted(impl, op, sig, op + suffix, nhwc_logical=nhwc))
        return impl
    return decorate


def _counted(impl, op: str, sig: str, name: str, **kwargs):
    """``impl(ctx, args, **kwargs)`` behind the argument count check, named ``name``, with ``impl``'s module and
    doc."""
    n_inputs = len(sig.split(","))

    def kernel(ctx, args):
        nargs(args, n_inputs, op)
        return impl(ctx, args, **kwargs)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__module__ = impl.__module__
    kernel.__doc__ = impl.__doc__
    return kernel
