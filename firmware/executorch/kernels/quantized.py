"""Quantize/dequantize kernels at the edges of delegated graphs.

``cortex_m::quantize_per_tensor.out`` (ExecuTorch ``backends/cortex_m/ops/op_quantize_per_tensor.cpp``):
``q = clamp(zp + (int32)nearbyint(x * (1.0f / (float)scale)), qmin, qmax)``, all in float32, rounding half to
even. ``cortex_m::dequantize_per_tensor.out``: ``(float)(int32(q) - zp) * (float)scale`` in float32. The
``quantized_decomposed`` kernels (portable) compute the same per-tensor formulas.
Arguments: ``(input, scale, zero_point, quant_min, quant_max, dtype, [out_dtype,] out)``.
"""

from __future__ import annotations

import numpy as np

from ..error import Error, RuntimeFailure
from ._util import out_tensor, tensor, write_out


def _params(args):
    if len(args) < 7:
        raise RuntimeFailure(Error.InvalidArgument, f"quantize/dequantize expects 7+ arguments, got {len(args)}")
    scale, zp, qmin, qmax = args[1], args[2], args[3], args[4]
    if not isinstance(scale, (int, float)) or not all(isinstance(v, int) for v in (zp, qmin, qmax)):
        raise RuntimeFailure(Error.InvalidArgument, "quantize/dequantize: bad scale/zero_point/range arguments")
    return float(scale), int(zp), int(qmin), int(qmax)


def quantize_per_tensor(ctx, args):
    x = tensor(args[0], "input").array(ctx.bus)
    scale, zp, qmin, qmax = _params(args)
    out = out_tensor(args)
    inv = np.float32(1.0) / np.float32(scale)
    with np.errstate(over="ignore", invalid="ignore"):
        v = np.rint(x.astype(np.float32, copy=False) * inv)
        v = np.nan_to_num(v, nan=0.0, posinf=2.0 ** 31 - 128, neginf=-(2.0 ** 31))
        q = np.clip(v, -(2.0 ** 31), 2.0 ** 31 - 128).astype(np.int64) + zp
    write_out(ctx, out, np.clip(q, qmin, qmax), "quantize_per_tensor")
    return out


def dequantize_per_tensor(ctx, args):
    q = tensor(args[0], "input").array(ctx.bus)
    scale, zp, _, _ = _params(args)
    out = out_tensor(args)
    v = (q.astype(np.int32) - np.int32(zp)).astype(np.float32) * np.float32(scale)
    write_out(ctx, out, v, "dequantize_per_tensor")
    return out


def dequantize_per_channel(ctx, args):
    """``quantized_decomposed::dequantize_per_channel.out(input, scales, zero_points?, axis, quant_min,
    quant_max, dtype, *, out_dtype?, out)`` (kernels/quantized/cpu/op_dequantize.cpp): per index ``c`` along
    ``axis``, ``out = (q - zero_point[c]) * scale[c]`` computed in double (the scale read as stored) and
    narrowed to float. Typically the weights of a layer left on the CPU."""
    q = tensor(args[0], "input").array(ctx.bus)
    scales = tensor(args[1], "scales").array(ctx.bus).astype(np.float64).ravel()
    zps = args[2]
    zp = tensor(zps, "zero_points").array(ctx.bus).astype(np.int64).ravel() if zps is not None else None
    if not isinstance(args[3], int) or q.ndim == 0:
        raise RuntimeFailure(Error.InvalidArgument, "dequantize_per_channel: bad axis")
    axis = args[3]
    if not -q.ndim <= axis < q.ndim:
        raise RuntimeFailure(Error.InvalidArgument, f"dequantize_per_channel: axis {axis} for {q.ndim} dims")
    axis %= q.ndim
    n = q.shape[axis]
    if scales.size != n or (zp is not None and zp.size != n):
        raise RuntimeFailure(Error.InvalidArgument,
                             "dequantize_per_channel: scales/zero_points size != input.size(axis)")
    shape = [1] * q.ndim
    shape[axis] = n
    d = q.astype(np.int64) - (zp.reshape(shape) if zp is not None else 0)
    out = out_tensor(args)
    write_out(ctx, out, (d.astype(np.float64) * scales.reshape(shape)).astype(np.float32), "dequantize_per_channel")
    return out


QUANTIZED_KERNELS = {
    "quantized_decomposed::dequantize_per_channel.out": dequantize_per_channel,
    "cortex_m::quantize_per_tensor.out": quantize_per_tensor,
    "cortex_m::dequantize_per_tensor.out": dequantize_per_tensor,
    "quantized_decomposed::quantize_per_tensor.out": quantize_per_tensor,
    "quantized_decomposed::dequantize_per_tensor.out": dequantize_per_tensor,
}
