"""Quantize/dequantize kernels at the edges of delegated graphs.

``cortex_m::quantize_per_tensor.out`` (ExecuTorch ``backends/cortex_m/ops/op_quantize_per_tensor.cpp``), built
for the Cortex-M55 with MVE (``HAS_HELIUM_SIMD``): whole blocks of 16 (int8) or 8 (int16) elements take the Helium
path, the rest the scalar ``quantize_val``:

* Helium: ``f = vfmaq(1.5 * 2**23, x, inv_scale)`` (one rounding, so ``nearbyint`` of the exact product while
  ``|x * inv| <= 2**22``), ``v = bits(f) - (0x4B400000 - zp)`` in int32; int8 narrows ``v`` to int16 *without*
  saturation (``vmovnb``) before the clamp, int16 clamps at int32 width;
* scalar: ``zp + (int32)nearbyint(x * inv_scale)``: float32 product, VCVT saturating to int32, int32 wrap-around
  add, clamp.

``inv_scale = 1.0f / (float)scale``; rounding half to even. ``cortex_m::dequantize_per_tensor.out``:
``(float)(int32(q) - zp) * (float)scale`` in float32 (its Helium path computes the same). The portable
``quantized_decomposed::quantize_per_tensor.out`` (kernels/quantized/cpu/op_quantize.cpp) has no vector path:
``(int64)((float)(int32)zp + nearbyint(x * inv_scale))`` then the clamp, for any integer out dtype;
``quantized_decomposed::dequantize_per_tensor.out`` is the float32 formula above.
Arguments: ``(input, scale, zero_point, quant_min, quant_max, dtype, [out_dtype,] out)``.
"""

from __future__ import annotations

import numpy as np

from ..error import Error, RuntimeFailure
from ._util import out_tensor, tensor, wrap32, write_out
from .registry import kernel


def _params(args):
    if len(args) < 7:
        raise RuntimeFailure(Error.InvalidArgument, f"quantize/dequantize expects 7+ arguments, got {len(args)}")
    scale, zp, qmin, qmax = args[1], args[2], args[3], args[4]
    if not isinstance(scale, (int, float)) or not all(isinstance(v, int) for v in (zp, qmin, qmax)):
        raise RuntimeFailure(Error.InvalidArgument, "quantize/dequantize: bad scale/zero_point/range arguments")
    return float(scale), int(zp), int(qmin), int(qmax)


_MAGIC_FLOAT = 12582912.0   # 1.5 * 2**23
_MAGIC_INT = 0x4B400000     # its float32 bit pattern


def _f32_to_i32_sat(v: np.ndarray) -> np.ndarray:
    """VCVT.S32.F32 of integral float values: saturating, NaN -> 0."""
    v = np.nan_to_num(v.astype(np.float64), nan=0.0, posinf=2.0 ** 31, neginf=-(2.0 ** 31))
    return np.clip(v, -(2.0 ** 31), 2.0 ** 31 - 1).astype(np.int64)


def _quantize_scalar_cortex_m(x: np.ndarray, inv: np.float32, zp: int, qmin: int, qmax: int) -> np.ndarray:
    """``quantize_val``: ``zp + (int32)nearbyint(inv * x)`` (float32 product), int32 add, clamp."""
    r = np.rint((x * inv).astype(np.float32))
    return np.clip(wrap32(_f32_to_i32_sat(r) + zp), qmin, qmax)


def _quantize_helium(x: np.ndarray, inv: np.float32, zp: int, qmin: int, qmax: int, bits: int) -> np.ndarray:
    """The MVE blocks: ``bits(vfmaq(magic, x, inv)) - (magic_int - zp)`` in int32; int8 narrows to int16 first."""
    p = x.astype(np.float64) * np.float64(inv)            # exact: two 24-bit significands
    small = np.abs(p) <= 2.0 ** 22                         # magic + p stays in [2**23, 2**24): ulp 1
    if small.all():  # the usual case: no masked copies
        v = np.rint(p).astype(np.int64)
        v += zp
    else:
        v = np.empty(x.shape, np.int64)
        v[small] = np.rint(p[small]).astype(np.int64) + zp  # bits(magic + rint(p)) - magic_int + zp
    big = ~small
    if big.any():
        # |p| > 2**22: magic + p is exact in float64, so one rounding to float32 is the FMA's
        f = (np.float64(_MAGIC_FLOAT) + p[big]).astype(np.float32)
        v[big] = wrap32(f.view(np.int32).astype(np.int64) - (_MAGIC_INT - zp))
    if bits == 8:
        v = ((v + (1 << 15)) & 0xFFFF) - (1 << 15)          # vmovnb: int32 -> int16, no saturation
    return np.clip(v, qmin, qmax)


@kernel("cortex_m::quantize_per_tensor.out", "T,f,i,i,i,i")
def quantize_per_tensor(ctx, args):
    """``cortex_m::quantize_per_tensor.out``: Helium blocks, then the scalar tail (see the module docstring)."""
    x = tensor(args[0], "input").array(ctx.bus)
    scale, zp, qmin, qmax = _params(args)
    out = out_tensor(args)
    inv = np.float32(1.0) / np.float32(scale)
    flat = x.astype(np.float32, copy=False).reshape(-1)
    bits = 8 * out.elem_size
    block = 16 if bits == 8 else 8
    nvec = flat.size // block * block if bits in (8, 16) else 0
    with np.errstate(over="ignore", invalid="ignore"):
        q = np.concatenate([_quantize_helium(flat[:nvec], inv, zp, qmin, qmax, bits),
                            _quantize_scalar_cortex_m(flat[nvec:], inv, zp, qmin, qmax)])
    return write_out(ctx, out, q.reshape(x.shape), "quantize_per_tensor")


@kernel("quantized_decomposed::quantize_per_tensor.out", "T,f,i,i,i,i")
def quantize_per_tensor_portable(ctx, args):
    """``quantized_decomposed::quantize_per_tensor.out``: ``(int64)((float)zp + nearbyint(x * inv_scale))``
    (float32 sum), clamp to [qmin, qmax]; any integer out dtype (int32 too)."""
    x = tensor(args[0], "input").array(ctx.bus)
    scale, zp, qmin, qmax = _params(args)
    out = out_tensor(args)
    inv = np.float32(1.0) / np.float32(scale)
    with np.errstate(over="ignore", invalid="ignore"):
        r = (np.rint((x.astype(np.float32, copy=False) * inv).astype(np.float32)) + np.float32(np.int32(zp)))
        r = np.nan_to_num(r.astype(np.float64), nan=0.0, posinf=2.0 ** 63, neginf=-(2.0 ** 63))
        q = np.clip(r, -(2.0 ** 63), 2.0 ** 63 - 1024).astype(np.int64)
    return write_out(ctx, out, np.clip(q, qmin, qmax), "quantize_per_tensor")


@kernel("cortex_m::dequantize_per_tensor.out", "T,f,i,i,i,i")
@kernel("quantized_decomposed::dequantize_per_tensor.out", "T,f,i,i,i,i,i?")
def dequantize_per_tensor(ctx, args):
    q = tensor(args[0], "input").array(ctx.bus)
    scale, zp, _, _ = _params(args)
    out = out_tensor(args)
    v = (q.astype(np.int32) - np.int32(zp)).astype(np.float32) * np.float32(scale)
    return write_out(ctx, out, v, "dequantize_per_tensor")


@kernel("quantized_decomposed::dequantize_per_channel.out", "T,T,T?,i,i,i,i,i?")
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
    return write_out(ctx, out, (d.astype(np.float64) * scales.reshape(shape)).astype(np.float32),
                     "dequantize_per_channel")

