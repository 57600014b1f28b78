"""The elementwise ``cortex_m::`` kernels: add, mul, div, the LUT activation, minimum and maximum.

* **Add** (``arm_elementwise_add_s8``): each input ``((x + offset) << 20)`` requantized with its own
  multiplier/shift, the sum requantized to the output, plus the output offset, clamped to the activation range.
  **Mul** (``arm_elementwise_mul_s8``): ``(x1 + o1) * (x2 + o2)`` requantized, clamped to int8. Both also do the
  channel broadcast of the C++ kernels (a ``[1, C, 1, 1]``-sized operand repeated over the other's memory).
* **Div** (ExecuTorch's own loop, no CMSIS-NN): float32 ``(x1 - z1) / (x2 - z2)``, times the effective scale,
  ``roundf`` (halves away from zero), plus the output zero point, clamped.
* **Activation** (LUT): ``lut[(uint8)(x + 128)]``. **Minimum/maximum**: ``arm_minimum_s8``/``arm_maximum_s8``,
  broadcasting over the last four dims of the raw data.
"""

from __future__ import annotations

import numpy as np

from ...error import Error, RuntimeFailure
from ...method import RtTensor
from .._util import out_tensor, tensor, wrap32
from ._common import (
    ARG_ERROR, CHAR, SHORT, as_int, check, cortex_m_kernel, fail, is_i8, raw8, store8, validate_i8_pair,
    validate_quant)
from .fixed_point import requantize, to_i8


def elementwise_add_s8(x1, x2, off1, m1, s1, off2, m2, s2, left_shift, out_off, out_m, out_s, amin, amax):
    """``arm_elementwise_add_s8``: int8 arrays in, int8 array out."""
    v1 = requantize(wrap32((x1.astype(np.int64) + off1) << left_shift), m1, s1)
    v2 = requantize(wrap32((x2.astype(np.int64) + off2) << left_shift), m2, s2)
    r = requantize(wrap32(v1 + v2), out_m, out_s)
    return to_i8(np.minimum(np.maximum(wrap32(r + out_off), amin), amax))


def elementwise_mul_s8(x1, x2, off1, off2, out_off, out_m, out_s, amin, amax):
    """``arm_elementwise_mul_s8``."""
    prod = wrap32((x1.astype(np.int64) + off1) * (x2.astype(np.int64) + off2))
    r = wrap32(requantize(prod, out_m, out_s) + out_off)
    return to_i8(np.minimum(np.maximum(r, amin), amax))


def _channel_broadcast(a: RtTensor, b: RtTensor) -> bool:
    """``is_channel_broadcast`` of cortex_m_ops_common.h."""
    if len(a.sizes) != len(b.sizes) or len(a.sizes) != 4 or a.sizes[1] != b.sizes[1]:
        return False
    return a.numel == a.sizes[1] or b.numel == b.sizes[1]


def _broadcast_operands(ctx, a: RtTensor, b: RtTensor, out: RtTensor):
    """The element pairs the C++ add/mul loops feed CMSIS-NN: (first, second) raw arrays of out.numel elements
    and whether the operands were swapped (the larger one goes first for a channel broadcast)."""
    x1 = raw8(ctx, a)
    x2 = raw8(ctx, b)
    n = out.numel
    if _channel_broadcast(a, b):
        swapped = a.numel < b.numel
        if swapped:
            x1, x2 = x2, x1
        per = a.sizes[1]
        if per <= 0 or n % per or x1.size < n or x2.size < per:
            raise RuntimeFailure(Error.InvalidArgument, "channel broadcast: operand sizes do not fit the output")
        return x1[:n], np.tile(x2[:per], n // per), swapped
    return x1[:n], x2[:n], False


def _checked_operands(ctx, fn: str, a: RtTensor, b: RtTensor, out: RtTensor, quants):
    """The add/mul checks (the tensor requirements, the same sizes unless a channel broadcast; each ``(name,
    multiplier, shift)`` of ``quants``), then the element pairs of ``_broadcast_operands``."""
    validate_i8_pair(fn, a, b, out, same_sizes=not _channel_broadcast(a, b))
    for name, m, s in quants:
        validate_quant(fn, m, s, name)
    return _broadcast_operands(ctx, a, b, out)


@cortex_m_kernel("quantized_add", "T,i,i,i,T,i,i,i,i,i,i,i,i")
def quantized_add(ctx, args):
    """``cortex_m::quantized_add.out`` (op_quantized_add.cpp -> arm_elementwise_add_s8)."""
    fn = "quantized_add_out"
    a, b, out = tensor(args[0], "self"), tensor(args[4], "other"), out_tensor(args)
    zp1, m1, s1 = (as_int(v, "self qparams") for v in args[1:4])
    zp2, m2, s2 = (as_int(v, "other qparams") for v in args[5:8])
    ozp, om, osh, amin, amax = (as_int(v, "output qparams") for v in args[8:13])
    quants = (("Single quant Input1", m1, s1), ("Single quant Input2", m2, s2), ("Single quant Output", om, osh))
    x1, x2, swapped = _checked_operands(ctx, fn, a, b, out, quants)
    if swapped:
        zp1, zp2, m1, m2, s1, s2 = zp2, zp1, m2, m1, s2, s1
    r = elementwise_add_s8(x1, x2, -zp1, m1, s1, -zp2, m2, s2, 20, ozp, om, osh, amin, amax)
    store8(ctx, out, r, "quantized_add")
    return out


@cortex_m_kernel("quantized_mul", "T,i,T,i,i,i,i")
def quantized_mul(ctx, args):
    """``cortex_m::quantized_mul.out`` (op_quantized_mul.cpp -> arm_elementwise_mul_s8)."""
    fn = "quantized_mul_out"
    a, b, out = tensor(args[0], "self"), tensor(args[2], "other"), out_tensor(args)
    zp1, zp2 = as_int(args[1], "self_zero_point"), as_int(args[3], "other_zero_point")
    ozp, om, osh = (as_int(v, "output qparams") for v in args[4:7])
    x1, x2, swapped = _checked_operands(ctx, fn, a, b, out, (("Single quant Output", om, osh),))
    if swapped:
        zp1, zp2 = zp2, zp1
    r = elementwise_mul_s8(x1, x2, -zp1, -zp2, ozp, om, osh, -128, 127)
    store8(ctx, out, r, "quantized_mul")
    return out


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """``roundf`` of float32 values (evaluated exactly in float64)."""
    x = x.astype(np.float64)
    return np.trunc(x + np.copysign(0.5, x))


@cortex_m_kernel("quantized_div", "T,i,T,i,i,f")
def quantized_div(ctx, args):
    """``cortex_m::quantized_div.out`` (op_quantized_div.cpp): float32 quotient, scaled, roundf, clamped."""
    fn = "quantized_div_out"
    a, b, out = tensor(args[0], "self"), tensor(args[2], "other"), out_tensor(args)
    zp1, zp2 = as_int(args[1], "self_zero_point"), as_int(args[3], "other_zero_point")
    ozp = as_int(args[4], "output_zero_point")
    scale = args[5]
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise RuntimeFailure(Error.InvalidArgument, "quantized_div: output_scale must be a number")
    if out.scalar_type not in (CHAR, SHORT):
        fail(Error.InvalidArgument, f"quantized_div_out: unsupported dtype {int(out.scalar_type)}")
    validate_i8_pair(fn, a, b, out, same_sizes=True, dtype=out.scalar_type)
    n = out.numel
    x1 = a.raw(ctx.bus).view(out.dtype)[:n].astype(np.int32) - np.int32(zp1)
    x2 = b.raw(ctx.bus).view(out.dtype)[:n].astype(np.int32) - np.int32(zp2)
    with np.errstate(all="ignore"):
        q = np.where(x2 != 0, x1.astype(np.float32) / np.where(x2 != 0, x2, 1).astype(np.float32), np.float32(0))
        q = q.astype(np.float32) * np.float32(scale)
        scaled = _round_half_away(q.astype(np.float32)).astype(np.float32) + np.float32(ozp)
    info = np.iinfo(out.dtype)
    lo, hi = np.float32(info.min), np.float32(info.max)
    t = np.where(scaled < hi, scaled, hi)          # std::min(kMax, scaled): NaN gives kMax
    c = np.where(lo < t, t, lo)                     # std::max(kMin, t)
    dst = out.raw(ctx.bus).view(out.dtype)
    dst[:] = np.trunc(c).astype(out.dtype)
    ctx.bus.work("kernel.quantized_div", n)
    return out


@cortex_m_kernel("quantized_activation", "T,T")
def quantized_activation(ctx, args):
    """``cortex_m::quantized_activation.out``: ``out[i] = lut[(uint8)(in[i] + 128)]``."""
    fn = "quantized_activation_out"
    x, lut, out = tensor(args[0], "input"), tensor(args[1], "lut"), out_tensor(args)
    check(is_i8(x), fn, "input.scalar_type() == ScalarType::Char", "input must be int8")
    check(is_i8(out), fn, "out.scalar_type() == ScalarType::Char", "out must be int8")
    check(is_i8(lut), fn, "lut.scalar_type() == ScalarType::Char", "lut must be int8")
    check(lut.numel == 256, fn, "lut.numel() == 256", f"lut must have 256 entries, got {lut.numel}")
    check(x.numel == out.numel, fn, "input.numel() == out.numel()", "input and out must have the same numel")
    table = raw8(ctx, lut)
    idx = (raw8(ctx, x).view(np.uint8).astype(np.int32) + 128) & 0xFF
    store8(ctx, out, table[idx], "quantized_activation")
    return out


def _minmax(ctx, args, which: str):
    fn = f"{which}_out"
    a, b, out = tensor(args[0], "self"), tensor(args[1], "other"), out_tensor(args)
    validate_i8_pair(fn, a, b, out, same_sizes=False)
    if len(a.sizes) > 5 or len(b.sizes) > 5:
        fail(Error.InvalidArgument, f"{fn}: more than 5 dimensions")
    try:
        shape = np.broadcast_shapes(a.sizes, b.sizes)
    except ValueError:
        fail(Error.InvalidArgument, f"{fn}: shapes {list(a.sizes)} and {list(b.sizes)} do not broadcast")
    if tuple(shape) != out.sizes:
        fail(Error.InvalidArgument, f"{fn}: out has sizes {list(out.sizes)}, the broadcast is {list(shape)}")

    def dims4(sizes):  # CMSIS-NN dims: the last four sizes, 1 for missing leading ones
        s = list(sizes[-4:]) if sizes else []
        return [1] * (4 - len(s)) + s

    da, db, do = dims4(a.sizes), dims4(b.sizes), dims4(out.sizes)
    xa = raw8(ctx, a)[:int(np.prod(da))].reshape(da)
    xb = raw8(ctx, b)[:int(np.prod(db))].reshape(db)
    op = np.minimum if which == "minimum" else np.maximum
    r = op(xa, xb)
    if list(r.shape) != do:
        fail(Error.Internal, f"{fn}: arm_{which}_s8 failed with status {ARG_ERROR}")
    store8(ctx, out, r, which)
    return out


@cortex_m_kernel("minimum", "T,T")
def minimum(ctx, args):
    """``cortex_m::minimum.out`` (arm_minimum_s8, broadcasting over the last four dims of the raw data)."""
    return _minmax(ctx, args, "minimum")


@cortex_m_kernel("maximum", "T,T")
def maximum(ctx, args):
    """``cortex_m::maximum.out`` (arm_maximum_s8)."""
    return _minmax(ctx, args, "maximum")
