"""What the kernels share: the prepared-operator record, errors, activation ranges, padding, broadcast checks, the
requantizing run."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...fixedpoint import mbqm, round_half_away_f32

TYPE_FLOAT32, TYPE_INT32, TYPE_INT64, TYPE_INT16, TYPE_INT8, TYPE_BOOL, TYPE_UINT8 = 0, 2, 4, 7, 9, 6, 3
QRANGE = {TYPE_INT8: (-128, 127), TYPE_INT16: (-32768, 32767), TYPE_INT32: (-(1 << 31), (1 << 31) - 1),
          TYPE_UINT8: (0, 255)}

# ActivationFunctionType (schema.fbs)
ACT_NONE, ACT_RELU, ACT_RELU_N1_TO_1, ACT_RELU6 = 0, 1, 2, 3


class PrepareError(Exception):
    """A kernel's Prepare failed (TF_LITE_ENSURE): the message names the check."""


@dataclass
class Prepared:
    run: object  # callable(inputs: list[np.ndarray | None], outputs: list[np.ndarray]) -> None
    work: tuple = ("kernel.default", 0.0)  # (cost kind, amount) reported per invocation
    scratch: list = field(default_factory=list)  # scratch buffer sizes requested in the arena
    persistent: int = 0  # bytes the kernel's Prepare takes from the arena's persistent tail (tables)


def ensure(cond, message: str) -> None:
    if not cond:
        raise PrepareError(message)


def _quantize_f(scale: float, zp: int, f: float) -> int:
    """``Quantize`` in kernel_util.cc: zero_point + round(f / scale) in float."""
    return int(zp + int(round_half_away_f32(np.float32(f) / np.float32(scale))))


def activation_range_quantized(act: int, tensor) -> tuple[int, int]:
    """``CalculateActivationRangeQuantized``."""
    qmin, qmax = QRANGE[tensor.type]
    scale, zp = tensor.params_scale, tensor.params_zero_point
    if act == ACT_RELU:
        return max(qmin, _quantize_f(scale, zp, 0.0)), qmax
    if act == ACT_RELU6:
        return max(qmin, _quantize_f(scale, zp, 0.0)), min(qmax, _quantize_f(scale, zp, 6.0))
    if act == ACT_RELU_N1_TO_1:
        return max(qmin, _quantize_f(scale, zp, -1.0)), min(qmax, _quantize_f(scale, zp, 1.0))
    ensure(act == ACT_NONE, f"unsupported fused activation {act}")
    return qmin, qmax


def activation_range_float(act: int) -> tuple[float, float]:
    """``CalculateActivationRange<float>``."""
    if act == ACT_RELU:
        return 0.0, math.inf
    if act == ACT_RELU6:
        return 0.0, 6.0
    if act == ACT_RELU_N1_TO_1:
        return -1.0, 1.0
    ensure(act == ACT_NONE, f"unsupported fused activation {act}")
    return -math.inf, math.inf


PADDING_SAME, PADDING_VALID = 0, 1


def out_size(padding: int, image: int, filt: int, stride: int, dilation: int = 1) -> int:
    """``ComputeOutSize``."""
    eff = (filt - 1) * dilation + 1
    if padding == PADDING_SAME:
        return (image + stride - 1) // stride
    return (image + stride - eff) // stride


def pad_before(stride: int, dilation: int, in_size: int, filt: int, out: int) -> int:
    """``ComputePaddingWithOffset``: the padding before (total // 2; the odd unit goes after)."""
    eff = (filt - 1) * dilation + 1
    total = max((out - 1) * stride + eff - in_size, 0)
    return total // 2


def broadcast_shape(*shapes) -> tuple | None:
    """The shape ``shapes`` broadcast to (numpy's rules, TFLite's ``BroadcastShape``), None when they do not."""
    try:
        return tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        return None


def check_broadcast(a, b, out, prefix: str = "") -> None:
    """The two inputs' shapes broadcast to the output's."""
    ensure(broadcast_shape(a.shape, b.shape) == tuple(out.shape),
           f"{prefix}shapes {list(a.shape)} and {list(b.shape)} do not broadcast to the output {list(out.shape)}")


def clamp_cast(x: np.ndarray, lo: int, hi: int, dtype) -> np.ndarray:
    return np.clip(x, lo, hi).astype(dtype)


def requantizer(zi: int, multiplier: int, shift: int, zo: int, lo: int, hi: int, dtype):
    """The run of a requantizing Eval (QUANTIZE between integer types, RELU): zp_out + ``MultiplyByQuantizedMultiplier``
    of x - zp_in, clamped to [lo, hi], in ``dtype``."""
    def run(ins, outs):
        r = mbqm(ins[0].astype(np.int64) - zi, multiplier, shift) + zo
        outs[0][...] = clamp_cast(r, lo, hi, dtype)
    return run
