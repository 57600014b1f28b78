"""Reference outputs for tests/firmware/test_kernels_cortex_m.py: ExecuTorch's Cortex-M backend itself.

Every case calls the Python reference implementation of a ``cortex_m::*`` operator (the functional op that
``executorch.backends.cortex_m.ops.operators`` registers, the one ExecuTorch evaluates at export time) on random
int8 data, with quantization parameters made the way the backend's passes make them (``quantize_multiplier_aot``
of a real scale, the add's ``2 * max(scale)`` split and ``SHIFT_INT8``, the softmax's ``_compute_softmax_params``,
the linear's ``kernel_sum``). Run with the optional toolchain (never a test dependency):

    /work/et-venv/bin/python tests/data/cortex_m/make_refs.py

Writes refs.npz next to this file. Per case ``<case>__op`` (operator name), ``<case>__args`` (JSON: the argument
list, tensors as ``{"t": i, "cl": channels_last}``), ``<case>__t<i>`` (tensor inputs, logical layout),
``<case>__out`` (the reference output, logical layout) and ``<case>__cmp``: how the test compares, ``exact`` or
the documented places where the C kernels round differently from the Python reference (``ties``: average pool and
div at exact halves; ``softmax``: the fixed-point softmax against the float one).

aten has no integer dilated convolution, so the reference's integer ``F.conv2d`` is evaluated through float64
here (exact: every sum is far below 2**53).
"""

import json
import math
import types
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

import executorch.backends.cortex_m.passes  # noqa: F401  (imported first: it registers the operators)
import executorch.backends.cortex_m.ops.operators as cm_ops
from executorch.backends.cortex_m.passes.aten_to_cortex_m_pass import _compute_softmax_params
from executorch.backends.cortex_m.passes.passes_utils import SHIFT_INT8, build_activation_lut, quantize_multiplier_aot
from executorch.exir.dialects._ops import ops as exir_ops


def _conv2d(x, w, b=None, *args, **kwargs):
    if not x.dtype.is_floating_point:
        y = F.conv2d(x.double(), w.double(), None if b is None else b.double(), *args, **kwargs)
        return y.round().to(torch.int64).to(x.dtype)
    return F.conv2d(x, w, b, *args, **kwargs)


_shim = types.SimpleNamespace(**{n: getattr(F, n) for n in dir(F) if not n.startswith("__")})
_shim.conv2d = _conv2d
cm_ops.F = _shim

OPS = torch.ops.cortex_m
gen = torch.Generator().manual_seed(0)
rng = np.random.default_rng(0)
out: dict = {}


def i8(*shape, lo=-128, hi=127):
    return torch.randint(lo, hi + 1, shape, dtype=torch.int8, generator=gen)


def cl(t):
    return t.contiguous(memory_format=torch.channels_last)


def mult_shift(scale):
    m, s = quantize_multiplier_aot(float(scale))
    return int(m), int(s)


def case(name, op, args, result, cmp="exact"):
    """``args``: the operator's inputs (tensors, ints, floats, bools, int lists, None)."""
    spec, tensors = [], []
    for a in args:
        if isinstance(a, torch.Tensor):
            spec.append({"t": len(tensors), "cl": a.dim() == 4 and a.is_contiguous(memory_format=torch.channels_last)
                         and not a.is_contiguous()})
            tensors.append(a.contiguous().numpy())
        elif a is None:
            spec.append({"none": True})
        elif isinstance(a, bool):
            spec.append({"bool": a})
        elif isinstance(a, int):
            spec.append({"int": a})
        elif isinstance(a, float):
            spec.append({"float": a})
        elif isinstance(a, (list, tuple)):
            spec.append({"ints": [int(v) for v in a]})
        else:
            raise TypeError(type(a))
    res = result.contiguous()
    spec.append({"out": list(res.shape), "dtype": str(res.numpy().dtype),
                 "cl": result.dim() == 4 and result.is_contiguous(memory_format=torch.channels_last)
                 and not result.is_contiguous()})
    out[f"{name}__op"] = np.array(op)
    out[f"{name}__args"] = np.array(json.dumps(spec))
    for i, t in enumerate(tensors):
        out[f"{name}__t{i}"] = t
    out[f"{name}__out"] = res.numpy()
    out[f"{name}__cmp"] = np.array(cmp)


# ------------------------------------------------------------------------------------------------ add / mul
def add_case(name, a, b, s1, z1, s2, z2, so, zo, act=(-128, 127)):
    mx = 2 * max(s1, s2)
    m1, sh1 = mult_shift(s1 / mx)
    m2, sh2 = mult_shift(s2 / mx)
    mo, sho = mult_shift(mx / (so * (1 << SHIFT_INT8)))
    args = [a, z1, m1, sh1, b, z2, m2, sh2, zo, mo, sho, act[0], act[1]]
    case(name, "cortex_m::quantized_add.out", args, OPS.quantized_add(*args))


add_case("add_basic", i8(3, 5, 7), i8(3, 5, 7), 0.02, -3, 0.05, 10, 0.06, -7)
add_case("add_zero_points", i8(4, 9), i8(4, 9), 0.1, -128, 0.1, 127, 0.2, 0)
add_case("add_saturate", i8(64, lo=60), i8(64, lo=60), 0.5, -100, 0.5, -100, 0.1, 20)
add_case("add_relu_clamp", i8(2, 33), i8(2, 33), 0.03, 5, 0.01, -5, 0.02, -20, act=(-20, 127))
add_case("add_channel_broadcast", cl(i8(1, 6, 4, 5)), cl(i8(1, 6, 1, 1)), 0.04, 2, 0.08, -9, 0.05, 3)
add_case("add_channel_broadcast_swapped", cl(i8(1, 6, 1, 1)), cl(i8(2, 6, 3, 2)), 0.08, -1, 0.02, 4, 0.05, 0)


def mul_case(name, a, b, s1, z1, s2, z2, so, zo):
    mo, sho = mult_shift(s1 * s2 / so)
    args = [a, z1, b, z2, zo, mo, sho]
    case(name, "cortex_m::quantized_mul.out", args, OPS.quantized_mul(*args))


mul_case("mul_basic", i8(5, 11), i8(5, 11), 0.05, 3, 0.02, -8, 0.01, -4)
mul_case("mul_saturate", i8(40), i8(40), 0.3, 0, 0.3, 0, 0.01, 0)
mul_case("mul_left_shift", i8(3, 8), i8(3, 8), 0.5, -2, 0.4, 1, 0.01, 7)
mul_case("mul_channel_broadcast", cl(i8(1, 5, 3, 3)), cl(i8(1, 5, 1, 1)), 0.05, 1, 0.04, -2, 0.02, 6)

# ------------------------------------------------------------------------------------------------ linear
def linear_case(name, x, w, bias, in_zp, w_zp, s_in, s_w, s_out, out_zp, act=(-128, 127)):
    m, s = mult_shift(s_in * s_w / s_out)
    wt = w.to(torch.int32).T + (-w_zp)
    ksum = torch.sum(wt, dim=0, keepdim=True, dtype=torch.int32) * (-in_zp)
    if bias is not None:
        ksum = ksum + bias
    args = [x, w, None, ksum.to(torch.int32).reshape(-1), -in_zp, -w_zp, out_zp, [m], [s], act[1], act[0]]
    case(name, "cortex_m::quantized_linear.out", args, OPS.quantized_linear(*args))


linear_case("linear_basic", i8(3, 17), i8(6, 17), torch.randint(-500, 500, (6,), dtype=torch.int32, generator=gen),
            -5, 0, 0.05, 0.01, 0.04, 3)
linear_case("linear_batched_relu", i8(2, 3, 9), i8(4, 9), None, 12, 0, 0.1, 0.02, 0.05, -128, act=(-128, 127))
linear_case("linear_weight_zp", i8(2, 20), i8(5, 20), None, -128, 7, 0.02, 0.03, 0.3, 10, act=(-30, 100))
linear_case("linear_saturate", i8(2, 32, lo=100), i8(3, 32, lo=100), None, 0, 0, 0.5, 0.5, 0.1, 0)

# ------------------------------------------------------------------------------------------------ conv
def conv_case(name, x, w_oihw, bias, stride, padding, dilation, in_zp, out_zp, s_in, s_w, s_out,
              act=(-128, 127)):
    o = w_oihw.shape[0]
    scales = [s_in * sw / s_out for sw in s_w]
    ms = [mult_shift(sc) for sc in scales]
    mults = torch.tensor([m for m, _ in ms], dtype=torch.int32)
    shifts = torch.tensor([s for _, s in ms], dtype=torch.int32)
    w = w_oihw.permute(0, 2, 3, 1).contiguous()  # OHWI
    args = [cl(x), w, bias, list(stride), list(padding), list(dilation), -in_zp, out_zp, mults, shifts, act[0],
            act[1], torch.zeros(256, dtype=torch.int8)]
    case(name, "cortex_m::quantized_conv2d.out", args, OPS.quantized_conv2d(*args))


def bias_of(o):
    return torch.randint(-3000, 3000, (o,), dtype=torch.int32, generator=gen)


def wscales(o, lo=0.002, hi=0.02):
    return [float(v) for v in rng.uniform(lo, hi, o)]


conv_case("conv_3x3_pad", i8(1, 3, 7, 6), i8(5, 3, 3, 3), bias_of(5), (1, 1), (1, 1), (1, 1), -10, 4, 0.05,
          wscales(5), 0.1)
conv_case("conv_stride2_batch2", i8(2, 4, 9, 8), i8(6, 4, 3, 3), bias_of(6), (2, 2), (1, 1), (1, 1), 5, -3, 0.03,
          wscales(6), 0.2)
conv_case("conv_dilation_asym", i8(1, 6, 8, 9), i8(5, 6, 3, 2), bias_of(5), (1, 2), (2, 0), (2, 1), -128, 0, 0.02,
          wscales(5), 0.15)
conv_case("conv_1x1", i8(1, 8, 5, 5), i8(7, 8, 1, 1), None, (1, 1), (0, 0), (1, 1), 0, -128, 0.1, wscales(7), 0.3,
          act=(-128, 127))
conv_case("conv_1x1_stride2_relu", i8(1, 8, 6, 7), i8(4, 8, 1, 1), bias_of(4), (2, 2), (0, 0), (1, 1), 3, -20, 0.1,
          wscales(4), 0.05, act=(-20, 127))
conv_case("conv_grouped", i8(1, 6, 6, 6), i8(4, 3, 3, 3), bias_of(4), (1, 1), (1, 1), (1, 1), 0, 0, 0.05,
          wscales(4), 0.1)
conv_case("conv_1xn", i8(1, 4, 1, 13), i8(6, 4, 1, 3), bias_of(6), (1, 1), (0, 1), (1, 1), -7, 2, 0.05, wscales(6),
          0.1)
conv_case("conv_1xn_stride2", i8(1, 8, 1, 13), i8(3, 8, 1, 5), bias_of(3), (1, 2), (0, 0), (1, 1), 9, 1, 0.05,
          wscales(3), 0.1)
# per-channel shifts of both signs (tiny output scales give positive shifts) and a saturating channel
conv_case("conv_shift_signs", i8(1, 2, 4, 4), i8(4, 2, 2, 2), bias_of(4), (1, 1), (0, 0), (1, 1), 1, -2, 0.01,
          [0.9, 0.02, 0.0004, 3.0], 0.004)

# ------------------------------------------------------------------------------------------------ depthwise
def dw_case(name, x, w_o1hw, bias, stride, padding, dilation, mult, in_zp, out_zp, s_in, s_w, s_out,
            act=(-128, 127)):
    o = w_o1hw.shape[0]
    ms = [mult_shift(s_in * sw / s_out) for sw in s_w]
    mults = torch.tensor([m for m, _ in ms], dtype=torch.int32)
    shifts = torch.tensor([s for _, s in ms], dtype=torch.int32)
    w = w_o1hw.permute(1, 2, 3, 0).contiguous()  # IHWO [1, KH, KW, O]
    args = [cl(x), w, bias, list(stride), list(padding), list(dilation), mult, -in_zp, out_zp, mults, shifts,
            act[0], act[1], torch.zeros(256, dtype=torch.int8)]
    case(name, "cortex_m::quantized_depthwise_conv2d.out", args, OPS.quantized_depthwise_conv2d(*args))


dw_case("dw_3x3", i8(1, 8, 7, 9), i8(8, 1, 3, 3), bias_of(8), (1, 1), (1, 1), (1, 1), 1, -4, 6, 0.05, wscales(8),
        0.08)
dw_case("dw_mult2_stride2", i8(1, 5, 8, 7), i8(10, 1, 3, 3), bias_of(10), (2, 2), (1, 1), (1, 1), 2, 11, -1, 0.05,
        wscales(10), 0.08)
dw_case("dw_dilation", i8(1, 4, 9, 9), i8(4, 1, 3, 3), None, (1, 1), (2, 2), (2, 2), 1, -128, 0, 0.02, wscales(4),
        0.05, act=(0, 127))
dw_case("dw_one_channel", i8(1, 1, 6, 5), i8(3, 1, 3, 2), bias_of(3), (1, 1), (1, 0), (1, 1), 3, 0, 5, 0.1,
        wscales(3), 0.1)


def tconv_case(name, x, w_iohw, bias, stride, padding, in_zp, out_zp, s_in, s_w, s_out):
    ms = [mult_shift(s_in * sw / s_out) for sw in s_w]
    mults = torch.tensor([m for m, _ in ms], dtype=torch.int32)
    shifts = torch.tensor([s for _, s in ms], dtype=torch.int32)
    w = w_iohw.permute(1, 2, 3, 0).contiguous()  # [O, KH, KW, I]
    args = [cl(x), w, bias, list(stride), list(padding), [0, 0], [1, 1], -in_zp, out_zp, mults, shifts, -128, 127,
            torch.zeros(64, dtype=torch.int8), torch.zeros(64, dtype=torch.int8)]
    case(name, "cortex_m::quantized_transpose_conv2d.out", args, OPS.quantized_transpose_conv2d(*args))


tconv_case("tconv_stride2", i8(1, 6, 4, 5), i8(6, 4, 3, 3), bias_of(4), (2, 2), (1, 1), 3, -2, 0.05, wscales(4), 0.1)
tconv_case("tconv_stride3_wide", i8(1, 20, 3, 3), i8(20, 3, 2, 4), None, (3, 1), (0, 1), -128, 5, 0.02, wscales(3),
           0.2)

# ------------------------------------------------------------------------------------------------ pooling
def avg_case(name, x, k, s, p, ceil=False, cmp="ties"):
    m, sh = mult_shift(0.05)
    args = [cl(x), list(k), list(s), list(p), ceil, 3, m, sh, torch.zeros(0, dtype=torch.int8)]
    case(name, "cortex_m::quantized_avg_pool2d.out", args, OPS.quantized_avg_pool2d(*args), cmp)


avg_case("avgpool_3x3_pad", i8(1, 5, 9, 8), (3, 3), (2, 2), (1, 1))
avg_case("avgpool_2x2", i8(2, 4, 6, 6), (2, 2), (2, 2), (0, 0))
avg_case("avgpool_ceil", i8(1, 3, 7, 5), (2, 2), (2, 2), (0, 0), ceil=True)
avg_case("avgpool_global", i8(1, 16, 5, 5), (5, 5), (1, 1), (0, 0))


def max_case(name, x, k, s, p, zp=0, act=(-128, 127)):
    args = [cl(x), list(k), list(s), list(p), [1, 1], False, zp, zp, act[0], act[1]]
    case(name, "cortex_m::quantized_max_pool2d.out", args, OPS.quantized_max_pool2d(*args))


max_case("maxpool_2x2", i8(1, 6, 8, 6), (2, 2), (2, 2), (0, 0))
max_case("maxpool_3x3_pad", i8(1, 4, 9, 7), (3, 3), (2, 2), (1, 1), zp=-5)
max_case("maxpool_clamp", i8(1, 3, 6, 6), (3, 2), (1, 2), (1, 0), act=(-20, 50))

# ------------------------------------------------------------------------------------------------ softmax
def softmax_case(name, x, scale, zp):
    m, s, dmin = _compute_softmax_params(scale)
    args = [x, -1, zp, -128, m, s, dmin]
    case(name, "cortex_m::softmax.out", args, OPS.softmax(*args), "softmax")


softmax_case("softmax_rows", i8(4, 10), 0.05, 0)
softmax_case("softmax_wide", i8(2, 3, 37), 0.2, -20)
softmax_case("softmax_sharp", i8(3, 6), 1.0, 10)  # large input scale: most terms fall below diff_min

# ------------------------------------------------------------------------------------------------ batch matmul
def bmm_case(name, a, b_t, za, zb, s_a, s_b, s_o, zo):
    m, s = mult_shift(s_a * s_b / s_o)
    args = [a, -za, b_t, -zb, zo, m, s, torch.zeros(64, dtype=torch.int8)]
    case(name, "cortex_m::quantized_batch_matmul.out", args, OPS.quantized_batch_matmul(*args))


bmm_case("bmm_basic", i8(2, 5, 7), i8(2, 4, 7), 3, -2, 0.05, 0.04, 0.1, 1)
bmm_case("bmm_saturate", i8(1, 3, 16, lo=50), i8(1, 2, 16, lo=50), 0, 0, 0.1, 0.1, 0.05, -10)

# ------------------------------------------------------------------------------------------------ activation (LUT)
for fn_name, target in (("sigmoid", exir_ops.edge.aten.sigmoid.default), ("tanh", exir_ops.edge.aten.tanh.default)):
    lut = build_activation_lut(target, 0.05, -3, 1.0 / 256 if fn_name == "sigmoid" else 1.0 / 128,
                               -128 if fn_name == "sigmoid" else 0)
    x = torch.arange(-128, 128, dtype=torch.int8).reshape(16, 16)
    case(f"activation_{fn_name}", "cortex_m::quantized_activation.out", [x, lut], OPS.quantized_activation(x, lut))

# ------------------------------------------------------------------------------------------------ min / max
for nm, op in (("minimum", OPS.minimum), ("maximum", OPS.maximum)):
    a, b = i8(2, 3, 4, 5), i8(1, 3, 1, 5)
    case(f"{nm}_broadcast", f"cortex_m::{nm}.out", [a, b], op(a, b))
    a, b = i8(6, 7), i8(6, 7)
    case(f"{nm}_same", f"cortex_m::{nm}.out", [a, b], op(a, b))

# ------------------------------------------------------------------------------------------------ transpose / pad
x = i8(2, 3, 4, 5)
case("transpose_4d", "cortex_m::transpose.out", [x, [0, 2, 3, 1]], OPS.transpose(x, [0, 2, 3, 1]))
x = i8(3, 4, 5)
case("transpose_3d", "cortex_m::transpose.out", [x, [2, 0, 1]], OPS.transpose(x, [2, 0, 1]))
x = i8(6, 7)
case("transpose_2d", "cortex_m::transpose.out", [x, [1, 0]], OPS.transpose(x, [1, 0]))
x = i8(2, 5, 3)
case("pad_3d", "cortex_m::pad.out", [x, [0, 1, 0, 2], [0, 0, 3, 1], -7],
     OPS.pad(x, [0, 1, 0, 2], [0, 0, 3, 1], -7))
x = cl(i8(1, 3, 4, 5))  # channels-last: pads in physical (N, H, W, C) order
case("pad_channels_last", "cortex_m::pad.out", [x, [0, 1, 2, 0], [0, 0, 1, 2], 5],
     OPS.pad(x, [0, 1, 2, 0], [0, 0, 1, 2], 5))

# ------------------------------------------------------------------------------------------------ div
a, b = i8(5, 8), i8(5, 8)
case("div_basic", "cortex_m::quantized_div.out", [a, 2, b, -3, 4, 0.75], OPS.quantized_div(a, 2, b, -3, 4, 0.75),
     "ties")
# exact halves: (x1 - z1) / (x2 - z2) * scale = k + 0.5
a = torch.tensor([[1, 3, 5, -1, -3, -5, 7, -7, 0, 9]], dtype=torch.int8)
b = torch.tensor([[2, 2, 2, 2, 2, 2, 2, 2, 0, 2]], dtype=torch.int8)
case("div_ties", "cortex_m::quantized_div.out", [a, 0, b, 0, 0, 1.0], OPS.quantized_div(a, 0, b, 0, 0, 1.0), "ties")

np.savez_compressed(Path(__file__).with_name("refs.npz"), **out)
print(f"wrote {sum(1 for k in out if k.endswith('__op'))} cases")
