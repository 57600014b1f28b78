"""RESIZE_NEAREST_NEIGHBOR (float32, int8, int16) and RESIZE_BILINEAR (float32, int8), NHWC.

Prepare as TFLM ``resize_nearest_neighbor.cc`` / ``resize_bilinear.cc``: two inputs, a 4-D input, a constant
1-D int32 size of two values (new height, new width); bilinear refuses ``half_pixel_centers`` with
``align_corners``. This kernel also checks what the reference code only DCHECKs: the output is
[batch, new height, new width, depth] of the input's type, and the sizes are positive.

- nearest: ``reference_ops::ResizeNearestNeighbor`` / ``GetNearestNeighbor`` in float32: scale = (in - 1) /
  (out - 1) with align_corners (out > 1), else in / out; source = (i + 0.5 if half_pixel_centers) * scale,
  rounded half away from zero with align_corners, else floored; at most in - 1, at least 0 with half pixel
  centers. Data are copied (float32 as its bits).
- bilinear int8: ``reference_ops::ResizeBilinearInteger``: scales in Q10 (((in << 10) + out / 2) / out, or
  with in - 1 and out - 1 for align_corners), source = i * scale (+ scale / 2 - 512 with half pixel centers),
  y0 = max(source / 1024, 0) and y1 = min((source + 1023) / 1024, in - 1) in C division, the four products in
  int64 summed and divided by 2^20 rounding half away from zero (``TFLITE_SINGLE_ROUNDING`` 0).
- bilinear float32: ``reference_ops::ResizeBilinear``: the scales and (i + 0.5) * scale - 0.5 in float32, y0 =
  max(floor, 0), y1 = min(ceil, in - 1), the four weighted terms in the reference's order, each a float32
  product, summed left to right.
"""

from __future__ import annotations

import numpy as np

from ...fixedpoint import round_half_away_f32
from . import register
from .common import TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32, Prepared, ensure


def _options(op):
    o = op.options
    if o is None:
        return False, False
    return bool(o.AlignCorners()), bool(o.HalfPixelCenters())


def _prepare_common(ctx, op, name):
    ensure(len(op.inputs) == 2, f"{name}: needs 2 inputs ({len(op.inputs)} given)")
    ensure(len(op.outputs) == 1, f"{name}: needs 1 output ({len(op.outputs)} given)")
    ti, ts, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    ensure(len(ti.shape) == 4, f"{name}: the input must be 4-D (it has {len(ti.shape)} dimensions)")
    ensure(len(ts.shape) == 1, f"{name}: the size must be 1-D (it has {len(ts.shape)} dimensions)")
    ensure(ts.type == TYPE_INT32, f"{name}: the size must be int32 (it is {ts.type_name})")
    ensure(ts.shape[0] == 2, f"{name}: the size must have 2 values (it has {ts.shape[0]})")
    size = ctx.const(op.inputs[1])
    ensure(size is not None, f"{name}: Non-constant >size< tensor is not supported")
    oh, ow = (int(v) for v in size.reshape(-1))
    ensure(oh > 0 and ow > 0, f"{name}: the new size {oh}x{ow} must be positive")
    ensure(to.type == ti.type, f"{name}: output {to.type_name} differs from the input {ti.type_name}")
    want = (ti.shape[0], oh, ow, ti.shape[3])
    ensure(tuple(to.shape) == want, f"{name}: output shape {list(to.shape)}, the size gives {list(want)}")
    return ti, to, oh, ow


def nearest_indices(in_size: int, out_size: int, align_corners: bool, half_pixel_centers: bool) -> np.ndarray:
    """``GetNearestNeighbor`` for every output index."""
    if align_corners and out_size > 1:
        scale = np.float32(in_size - 1) / np.float32(out_size - 1)
    else:
        scale = np.float32(in_size) / np.float32(out_size)
    offset = np.float32(0.5 if half_pixel_centers else 0.0)
    v = ((np.arange(out_size, dtype=np.float32) + offset) * np.float32(scale)).astype(np.float32)
    src = round_half_away_f32(v) if align_corners else np.floor(v)
    src = np.minimum(src.astype(np.int64), in_size - 1)
    if half_pixel_centers:
        src = np.maximum(src, 0)
    return src


@register("RESIZE_NEAREST_NEIGHBOR")
def prepare_resize_nearest(ctx, op):
    name = "RESIZE_NEAREST_NEIGHBOR"
    ti, to, oh, ow = _prepare_common(ctx, op, name)
    ensure(ti.type in (TYPE_FLOAT32, TYPE_INT8, TYPE_INT16), f"{name}: Output tensor type {to.type_name} not "
                                                              f"supported (float32, int8 and int16 are)")
    align, half = _options(op)
    iy = nearest_indices(ti.shape[1], oh, align, half)
    ix = nearest_indices(ti.shape[2], ow, align, half)

    def run(ins, outs):
        outs[0][...] = ins[0][:, iy][:, :, ix]
    return Prepared(run, ("memcpy_byte", to.nbytes))


def bilinear_int_axis(in_size: int, out_size: int, align_corners: bool, half_pixel_centers: bool):
    """``ComputeInterpolationValuesInteger`` for every output index: (source in Q10, lower, upper)."""
    if align_corners and out_size > 1:
        scale_10 = ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale_10 = ((1 << 10) * in_size + out_size // 2) // out_size
    i = np.arange(out_size, dtype=np.int64)
    scaled = i * scale_10 + scale_10 // 2 - (1 << 9) if half_pixel_centers else i * scale_10

    def cdiv(a):  # C division by 1024 (truncation toward zero)
        return np.where(a < 0, -((-a) >> 10), a >> 10)
    lower = np.maximum(cdiv(scaled), 0)
    upper = np.minimum(cdiv(scaled + (1 << 10) - 1), in_size - 1)
    return scaled, lower, upper


def bilinear_int(x: np.ndarray, oh, ow, align, half, dtype) -> np.ndarray:
    _, ih, iw, _ = x.shape
    sy, y0, y1 = bilinear_int_axis(ih, oh, align, half)
    sx, x0, x1 = bilinear_int_axis(iw, ow, align, half)
    x = x.astype(np.int64)
    fy = (sy - (1 << 10) * y0)[None, :, None, None]
    fx_ = (sx - (1 << 10) * x0)[None, None, :, None]
    gy, gx = (1 << 10) - fy, (1 << 10) - fx_
    rows0, rows1 = x[:, y0], x[:, y1]
    out20 = (rows0[:, :, x0] * gy * gx + rows1[:, :, x0] * fy * gx + rows0[:, :, x1] * gy * fx_
             + rows1[:, :, x1] * fy * fx_)
    rnd = np.where(out20 > 0, np.int64(1 << 19), np.int64(-(1 << 19)))
    s = out20 + rnd
    q = np.where(s < 0, -((-s) >> 20), s >> 20)  # C division by 2^20
    info = np.iinfo(dtype)
    span = int(info.max) - int(info.min) + 1
    return ((q - int(info.min)) % span + int(info.min)).astype(dtype)  # static_cast<T>


def bilinear_float_axis(in_size: int, out_size: int, align_corners: bool, half_pixel_centers: bool):
    """``ComputeInterpolationValues`` for every output index: (source as float32, lower, upper)."""
    scale = np.float32(in_size) / np.float32(out_size)
    if align_corners and out_size > 1:
        scale = np.float32(in_size - 1) / np.float32(out_size - 1)
    v = np.arange(out_size, dtype=np.float32)
    if half_pixel_centers:
        src = ((v + np.float32(0.5)) * scale - np.float32(0.5)).astype(np.float32)
    else:
        src = (v * scale).astype(np.float32)
    lower = np.maximum(np.floor(src).astype(np.int64), 0)
    upper = np.minimum(np.ceil(src).astype(np.int64), in_size - 1)
    return src, lower, upper


def bilinear_float(x: np.ndarray, oh, ow, align, half) -> np.ndarray:
    _, ih, iw, _ = x.shape
    sy, y0, y1 = bilinear_float_axis(ih, oh, align, half)
    sx, x0, x1 = bilinear_float_axis(iw, ow, align, half)
    x = x.astype(np.float32)
    one = np.float32(1)
    dy = (sy - y0.astype(np.float32))[None, :, None, None]
    dx = (sx - x0.astype(np.float32))[None, None, :, None]
    gy, gx = one - dy, one - dx
    rows0, rows1 = x[:, y0], x[:, y1]
    t = rows0[:, :, x0] * gy * gx
    t = t + rows1[:, :, x0] * dy * gx
    t = t + rows0[:, :, x1] * gy * dx
    t = t + rows1[:, :, x1] * dy * dx
    return t.astype(np.float32)


@register("RESIZE_BILINEAR")
def prepare_resize_bilinear(ctx, op):
    name = "RESIZE_BILINEAR"
    ti, to, oh, ow = _prepare_common(ctx, op, name)
    align, half = _options(op)
    ensure(not (align and half), f"{name}: If half_pixel_centers is True, align_corners must be False.")
    ensure(ti.type in (TYPE_FLOAT32, TYPE_INT8), f"{name}: Output type is {to.type_name}, requires float or int8.")
    n = max(to.numel, 1)
    if ti.type == TYPE_FLOAT32:
        def run(ins, outs):
            outs[0][...] = bilinear_float(ins[0], oh, ow, align, half)
        return Prepared(run, ("kernel.resize_bilinear", n))

    def run(ins, outs):
        outs[0][...] = bilinear_int(ins[0], oh, ow, align, half, np.int8)
    return Prepared(run, ("kernel.resize_bilinear", n))
