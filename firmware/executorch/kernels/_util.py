"""Helpers shared by the CPU kernels: argument reading (tensors, scalars, tensor lists, dims, int lists), the
compute types, the three ways a result reaches its out tensor, the argument checks of the portable C++ kernels,
and 32-bit integer wrap-around.

A result reaches ``out`` in one of three ways, each charging ``kernel.<name>`` work to the CPU cost model:

* ``write_out``: the result has out's number of elements (else InvalidArgument); stored in out's type.
* ``store``: like ``write_out``, after reshaping a result with out's element count, or broadcasting a smaller
  one, to out's sizes.
* ``emit``: ``resize_tensor`` semantics (``resize``): a static out must already have the result's sizes; a
  ``DYNAMIC_BOUND`` out (``nonzero``, ``masked_select`` with an upper bound) is resized in place when the rank
  matches and the result fits the planned capacity.
"""

from __future__ import annotations

import math

import numpy as np

from ...fixedpoint import wrap32  # noqa: F401  (the kernels' 32-bit wrap, with the fixed-point helpers)

from ..error import Error, RuntimeFailure
from ..method import RtTensor

STATIC, DYNAMIC_BOUND = 0, 1  # TensorShapeDynamism


# ------------------------------------------------------------------------------------------------ arguments
def tensor(value, what: str) -> RtTensor:
    if not isinstance(value, RtTensor):
        raise RuntimeFailure(Error.InvalidArgument, f"{what}: expected a tensor, got {type(value).__name__}")
    return value


def arr(ctx, v, what="self") -> np.ndarray:
    """A tensor argument's elements (a view of simulated memory, logical shape)."""
    return tensor(v, what).array(ctx.bus)


def opt_arr(ctx, v, what):
    return None if v is None else arr(ctx, v, what)


def scalar(v, default=None):
    if v is None:
        return default
    if isinstance(v, (bool, int, float)):
        return v
    raise RuntimeFailure(Error.InvalidArgument, f"expected a scalar, got {type(v).__name__}")


def operand(ctx, v, dtype=None):
    """A tensor or scalar operand as an array (``dtype`` applied when given)."""
    if isinstance(v, RtTensor):
        a = v.array(ctx.bus)
    else:
        a = np.asarray(scalar(v))
        if a.dtype == np.float64:
            a = a.astype(np.float32)
    return a.astype(dtype, copy=False) if dtype is not None else a


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


def dim_set(ctx, v, ndim: int, what: str) -> tuple:
    """An optional ``int[]`` of dimensions (None or empty: all)."""
    ds = ctx.int_list(v) if v is not None else []
    if not ds:
        return tuple(range(ndim))
    return tuple(sorted({dim_index(d, ndim, what) for d in ds}))


def ints(ctx, v, n: int | None = None, default=None) -> list[int]:
    """An ``int[]`` argument (an IntList value or ``None``), expanded to ``n`` entries when it has one."""
    vals = ctx.int_list(v) if v is not None else []
    if not vals:
        vals = list(default) if default is not None else []
    if n is not None and len(vals) == 1:
        vals = vals * n
    return vals


# ------------------------------------------------------------------------------------------------ types
def compute_dtype(out: RtTensor):
    """float32 for a float out, out's type otherwise (float32 when out's type is not one numpy has)."""
    return np.float32 if out.dtype is not None and out.dtype.kind == "f" else (out.dtype or np.float32)


def compute_dtype_strict(out: RtTensor):
    """The compute type for an output: float32 for float outputs, the out type otherwise."""
    if out.dtype is None:
        raise RuntimeFailure(Error.NotSupported, f"ScalarType {out.type_name} is not supported")
    return np.float32 if out.dtype.kind == "f" else out.dtype


def float_ctype(dtype) -> type:
    """The C++ compute type for a float tensor type: double for Double, float for Float/Half."""
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


def is_float(t: RtTensor) -> bool:
    return t.dtype is not None and t.dtype.kind == "f"


def default_order(t: RtTensor) -> bool:
    return tuple(t.dim_order) == tuple(range(len(t.sizes)))


# ------------------------------------------------------------------------------------------------ checks
def fail(msg: str):
    """``ET_KERNEL_CHECK`` failing: the call fails with InvalidArgument."""
    raise RuntimeFailure(Error.InvalidArgument, msg)


def check(cond, msg: str) -> None:
    if not cond:
        fail(msg)


# ------------------------------------------------------------------------------------------------ results
def out_tensor(args: list) -> RtTensor:
    return tensor(args[-1], "out")


def write_out(ctx, out: RtTensor, values: np.ndarray, kernel: str, work: int | None = None) -> RtTensor:
    """Store ``values`` (logical shape, any dtype) into ``out`` with the out dtype; charge ``work`` (default: out's
    elements); ``out``."""
    if out.numel != values.size:
        raise RuntimeFailure(Error.InvalidArgument,
                             f"{kernel}: out has {out.numel} elements, the result has {values.size}")
    dst = out.array(ctx.bus)
    dst[...] = values.reshape(dst.shape).astype(dst.dtype, copy=False)
    ctx.bus.work(f"kernel.{kernel}", out.numel if work is None else work)
    return out


def store(ctx, out: RtTensor, values, kernel: str) -> RtTensor:
    """``write_out`` of ``values`` reshaped (same element count) or broadcast to out's sizes."""
    values = np.asarray(values)
    if values.size == out.numel and values.shape != tuple(out.sizes):
        values = values.reshape(out.sizes)
    elif values.shape != tuple(out.sizes):
        values = np.broadcast_to(values, out.sizes)
    return write_out(ctx, out, values, kernel)


def _dynamism(ctx, out: RtTensor):
    """(shape dynamism, planned element capacity) of ``out`` from the program, STATIC when unknown."""
    method = ctx.method
    plan = getattr(method, "plan", None)
    if plan is None:
        return STATIC, out.numel
    for i, v in enumerate(method.values):
        if v is out:
            meta = plan.values[i].value
            return getattr(meta, "shape_dynamism", STATIC), math.prod(meta.sizes)
    return STATIC, out.numel


def resize(ctx, out: RtTensor, shape, what: str) -> None:
    """``resize_tensor(out, shape)``: a static tensor must have these sizes already; a bounded dynamic one takes
    them if the rank matches and the elements fit its planned capacity."""
    shape = tuple(int(s) for s in shape)
    if shape == tuple(out.sizes):
        return
    dyn, cap = _dynamism(ctx, out)
    if dyn == STATIC or len(shape) != len(out.sizes) or (dyn == DYNAMIC_BOUND and math.prod(shape) > cap):
        fail(f"{what}: cannot resize out {list(out.sizes)} to {list(shape)}")
    out.sizes = shape
    out.numel = math.prod(shape)
    out.nbytes = out.numel * out.elem_size


def emit(ctx, out: RtTensor, values, kernel: str, work: int | None = None) -> RtTensor:
    """Resize ``out`` to ``values``' shape, store them in out's type and charge the work."""
    values = np.asarray(values)
    resize(ctx, out, values.shape, kernel)
    dst = out.array(ctx.bus)
    dst[...] = values.astype(dst.dtype, copy=False)
    ctx.bus.work(f"kernel.{kernel}", out.numel if work is None else work)
    return out


# ------------------------------------------------------------------------------------------------ arithmetic
def erf(x: np.ndarray) -> np.ndarray:
    """``erf`` of each element in double (``math.erf``)."""
    f = np.frompyfunc(math.erf, 1, 1)
    return f(x.astype(np.float64)).astype(np.float64)


# ------------------------------------------------------------------------------------------------ kernel factories
def unary_out_dtype(name, fn):
    """An elementwise ``op.out(self)`` kernel computing ``fn`` in the out's compute type (``compute_dtype``)."""
    def kernel(ctx, args):
        out = out_tensor(args)
        x = arr(ctx, args[0]).astype(compute_dtype(out), copy=False)
        with np.errstate(all="ignore"):
            write_out(ctx, out, fn(x), name)
        return out
    return kernel
