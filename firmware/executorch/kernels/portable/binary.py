"""Binary elementwise arithmetic, comparison, logical and bitwise operators, tensor and scalar variants
(``op_add.cpp``, ``op_div.cpp``, ``op_pow.cpp``, ``op_eq.cpp``, ``op_bitwise_left_shift.cpp``, ...).

Broadcasting follows PyTorch rules. The ``.out`` tensor-tensor kernels of the basic set (``_binary_out_dtype``)
compute in the out's type (float32 for float outs); the scalar, mode and comparison variants
(``_binary_promoted``, ``_compare``) promote their operands as PyTorch does (tensors before scalars, float32 for
floats). Integer and boolean results are exact.
"""

from __future__ import annotations

import numpy as np

from ...error import Error, RuntimeFailure
from ...method import RtTensor
from .._util import compute_dtype, operand, out_tensor, scalar, store, write_out
from ..registry import kernel, register


def _operand(ctx, v, dtype):
    if isinstance(v, RtTensor):
        return v.array(ctx.bus).astype(dtype, copy=False)
    return np.asarray(scalar(v), dtype=dtype)


def _binary_out_dtype(name, fn, has_alpha=False):
    def kernel(ctx, args):
        out = out_tensor(args)
        dt = compute_dtype(out)
        a = _operand(ctx, args[0], dt)
        b = _operand(ctx, args[1], dt)
        if has_alpha:
            alpha = scalar(args[2], 1)
            if alpha != 1:
                b = (np.asarray(alpha, dtype=dt) * b).astype(dt)
        with np.errstate(all="ignore"):
            r = fn(a, b)
        r = np.broadcast_to(r, out.sizes) if r.shape != out.sizes else r
        return write_out(ctx, out, r, name)
    return kernel


def _common(a: np.ndarray, b: np.ndarray):
    """PyTorch type promotion for two operands (tensors before scalars, float32 for floats)."""
    fa, fb = a.dtype.kind == "f", b.dtype.kind == "f"
    if fa or fb:
        return np.float32
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        return np.bool_
    if a.ndim == 0 and b.ndim > 0:
        return b.dtype
    if b.ndim == 0 and a.ndim > 0:
        return a.dtype
    return np.promote_types(a.dtype, b.dtype)


def _binary_promoted(name, fn, alpha_at=None, reverse=False, float_result=False):
    """A binary ``self op other`` kernel (tensor or scalar operands, broadcasting)."""
    def kernel(ctx, args):
        out = out_tensor(args)
        a = operand(ctx, args[0])
        b = operand(ctx, args[1])
        dt = np.float32 if float_result else _common(a, b)
        if out.dtype is not None and out.dtype.kind == "f":
            dt = np.float32
        a = a.astype(dt, copy=False)
        b = b.astype(dt, copy=False)
        if alpha_at is not None and len(args) > alpha_at + 1:
            alpha = scalar(args[alpha_at], 1)
            if alpha != 1:
                b = (np.asarray(alpha).astype(dt) * b).astype(dt)
        r = fn(b, a) if reverse else fn(a, b)
        return store(ctx, out, np.asarray(r), name)
    return kernel


@kernel("aten::rsub.Scalar_out", "T,s,s")
def rsub(ctx, args):
    """``rsub.Scalar_out(self, other, alpha)``: ``other - alpha * self``."""
    out = out_tensor(args)
    a = operand(ctx, args[0])
    b = operand(ctx, args[1])
    dt = np.float32 if out.dtype.kind == "f" else _common(a, b)
    a = a.astype(dt, copy=False)
    alpha = scalar(args[2], 1) if len(args) > 3 else 1
    if alpha != 1:
        a = (np.asarray(alpha).astype(dt) * a).astype(dt)
    return store(ctx, out, b.astype(dt) - a, "sub")


def _py_remainder(a, b):
    if a.dtype.kind == "f":
        return (a - np.floor(a / b) * b).astype(a.dtype)
    return np.remainder(a, b)


def _floor_divide(a, b):
    if a.dtype.kind == "f":
        return np.floor(a / b).astype(a.dtype)
    return np.floor_divide(a, b)


@kernel("aten::div.out_mode", "T,T,S?")
@kernel("aten::div.Scalar_mode_out", "T,s,S?")
def div_mode(ctx, args):
    """``div.out_mode`` / ``div.Scalar_mode_out(self, other, *, rounding_mode)``: true division in float32,
    then ``trunc`` / ``floor``; integer outputs for integer operands with a rounding mode."""
    out = out_tensor(args)
    a = operand(ctx, args[0])
    b = operand(ctx, args[1])
    mode = args[2] if len(args) > 3 else None
    if mode is None:
        r = a.astype(np.float32) / b.astype(np.float32)
    elif a.dtype.kind == "f" or b.dtype.kind == "f" or out.dtype.kind == "f":
        q = a.astype(np.float32) / b.astype(np.float32)
        r = np.trunc(q) if mode == "trunc" else np.floor(q)
    else:
        ai, bi = a.astype(np.int64), b.astype(np.int64)
        if np.any(bi == 0):
            raise RuntimeFailure(Error.InvalidArgument, "div: integer division by zero")
        r = np.floor_divide(ai, bi) if mode == "floor" else np.trunc(ai / bi).astype(np.int64)
    return store(ctx, out, r, "div")


def _compare(name, fn):
    def kernel(ctx, args):
        out = out_tensor(args)
        a = operand(ctx, args[0])
        b = operand(ctx, args[1])
        dt = _common(a, b)
        return store(ctx, out, fn(a.astype(dt, copy=False), b.astype(dt, copy=False)), name)
    return kernel


def _logical(name, fn):
    def kernel(ctx, args):
        out = out_tensor(args)
        a = operand(ctx, args[0]).astype(bool)
        b = operand(ctx, args[1]).astype(bool)
        return store(ctx, out, fn(a, b), name)
    return kernel


def _shift(name, left: bool):
    """``bitwise_{left,right}_shift.Tensor_out`` / ``.Tensor_Scalar_out`` (pattern/bitwise_op.h):
    ``static_cast<T>(a << b)`` / ``(a >> b)`` in the common integer type ``T`` (arithmetic right shift; types
    narrower than int are shifted as int). Out-of-range amounts are undefined in C++: the Cortex-M register shift
    (the amount's low byte; 32 or more gives 0, or the sign for a right shift) is what the runtime does."""
    def kernel(ctx, args):
        out = out_tensor(args)
        a = operand(ctx, args[0])
        b = operand(ctx, args[1])
        dt = np.dtype(_common(a, b))
        if dt.kind not in "iub":
            raise RuntimeFailure(Error.InvalidArgument, f"{name}: integer or bool operands expected")
        x = a.astype(dt, copy=False).astype(np.int64)
        amt = b.astype(dt, copy=False).astype(np.int64) & 0xFF
        width = 64 if dt.itemsize == 8 else 32
        sh = np.minimum(amt, width - 1)
        if left:
            r = np.where(amt >= width, 0, np.left_shift(x, sh))
            if width == 32:
                r = ((r + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
        else:
            r = np.where(amt >= width, np.where(x < 0, -1, 0), np.right_shift(x, sh))
        return store(ctx, out, r.astype(dt), name)
    return kernel


register(
    ("aten::add.out", "T,T,s", _binary_out_dtype("add", np.add, has_alpha=True)),
    ("aten::sub.out", "T,T,s", _binary_out_dtype("sub", np.subtract, has_alpha=True)),
    ("aten::mul.out", "T,T", _binary_out_dtype("mul", np.multiply)),
    ("aten::div.out", "T,T", _binary_out_dtype("div", np.divide)),
    ("aten::maximum.out", "T,T", _binary_out_dtype("maximum", np.maximum)),
    ("aten::minimum.out", "T,T", _binary_out_dtype("minimum", np.minimum)),
    ("aten::add.Scalar_out", "T,s,s", _binary_promoted("add", np.add, alpha_at=2)),
    ("aten::sub.Scalar_out", "T,s,s", _binary_promoted("sub", np.subtract, alpha_at=2)),
    ("aten::mul.Scalar_out", "T,s", _binary_promoted("mul", np.multiply)),
    ("aten::div.Scalar_out", "T,s", _binary_promoted("div", np.divide, float_result=True)),
    ("aten::pow.Tensor_Scalar_out", "T,s", _binary_promoted("pow", np.power)),
    ("aten::pow.Tensor_Tensor_out", "T,T", _binary_promoted("pow", np.power)),
    ("aten::pow.Scalar_out", "s,T", _binary_promoted("pow", np.power)),
    ("aten::remainder.Tensor_out", "T,T", _binary_promoted("remainder", _py_remainder)),
    ("aten::remainder.Scalar_out", "T,s", _binary_promoted("remainder", _py_remainder)),
    ("aten::fmod.Tensor_out", "T,T", _binary_promoted("fmod", np.fmod)),
    ("aten::fmod.Scalar_out", "T,s", _binary_promoted("fmod", np.fmod)),
    ("aten::floor_divide.out", "T,T", _binary_promoted("div", _floor_divide)),
    ("aten::atan2.out", "T,T", _binary_promoted("atan2", np.arctan2, float_result=True)),
    ("aten::eq.Scalar_out", "T,s", _compare("eq", np.equal)),
    ("aten::eq.Tensor_out", "T,T", _compare("eq", np.equal)),
    ("aten::ne.Scalar_out", "T,s", _compare("ne", np.not_equal)),
    ("aten::ne.Tensor_out", "T,T", _compare("ne", np.not_equal)),
    ("aten::lt.Scalar_out", "T,s", _compare("lt", np.less)),
    ("aten::lt.Tensor_out", "T,T", _compare("lt", np.less)),
    ("aten::le.Scalar_out", "T,s", _compare("le", np.less_equal)),
    ("aten::le.Tensor_out", "T,T", _compare("le", np.less_equal)),
    ("aten::gt.Scalar_out", "T,s", _compare("gt", np.greater)),
    ("aten::gt.Tensor_out", "T,T", _compare("gt", np.greater)),
    ("aten::ge.Scalar_out", "T,s", _compare("ge", np.greater_equal)),
    ("aten::ge.Tensor_out", "T,T", _compare("ge", np.greater_equal)),
    ("aten::bitwise_and.Scalar_out", "T,s", _compare("bitwise_and", np.bitwise_and)),
    ("aten::bitwise_and.Tensor_out", "T,T", _compare("bitwise_and", np.bitwise_and)),
    ("aten::bitwise_or.Scalar_out", "T,s", _compare("bitwise_or", np.bitwise_or)),
    ("aten::bitwise_or.Tensor_out", "T,T", _compare("bitwise_or", np.bitwise_or)),
    ("aten::bitwise_xor.Scalar_out", "T,s", _compare("bitwise_xor", np.bitwise_xor)),
    ("aten::bitwise_xor.Tensor_out", "T,T", _compare("bitwise_xor", np.bitwise_xor)),
    ("aten::logical_and.out", "T,T", _logical("logical_and", np.logical_and)),
    ("aten::logical_or.out", "T,T", _logical("logical_or", np.logical_or)),
    ("aten::logical_xor.out", "T,T", _logical("logical_xor", np.logical_xor)),
    ("aten::bitwise_left_shift.Tensor_out", "T,T", _shift("bitwise_left_shift", left=True)),
    ("aten::bitwise_left_shift.Tensor_Scalar_out", "T,s", _shift("bitwise_left_shift", left=True)),
    ("aten::bitwise_right_shift.Tensor_out", "T,T", _shift("bitwise_right_shift", left=False)),
    ("aten::bitwise_right_shift.Tensor_Scalar_out", "T,s", _shift("bitwise_right_shift", left=False)),
)
