"""ExecuTorch's Cortex-M backend kernels (``cortex_m::*``): the CMSIS-NN operators of ``--target=cortex-m55``.

Programs compiled by ``aot_arm_compiler --target=cortex-m55 --quantize`` run every quantized layer on the CPU as
a ``cortex_m::*`` kernel (ExecuTorch ``backends/cortex_m/ops/op_*.cpp``), most of them thin wrappers around a
CMSIS-NN function. These are those kernels, written from the C sources' arithmetic (CMSIS-NN at the commit
ExecuTorch 1.5.1 pins, built for a Cortex-M55 with MVE, so the ``ARM_MATH_MVEI`` paths), in integer numpy:

* **Requantization** (``arm_requantize_mve``, the default double rounding): ``v << max(shift, 0)`` in 32 bits
  (wrapping), a rounding doubling high multiply by the multiplier (``(v * m + 2^30) >> 31``, saturating only for
  ``INT32_MIN * INT32_MIN``), then a rounding divide by ``2^max(-shift, 0)`` that rounds halves away from zero.
  The scalar and MVE forms of these steps give the same results; accumulators are 32-bit and wrap.
* **Add** (``arm_elementwise_add_s8``): each input ``((x + offset) << 20)`` requantized with its own
  multiplier/shift, the sum requantized to the output, plus the output offset, clamped to the activation range.
  **Mul** (``arm_elementwise_mul_s8``): ``(x1 + o1) * (x2 + o2)`` requantized, clamped to int8. Both also do the
  channel broadcast of the C++ kernels (a ``[1, C, 1, 1]``-sized operand repeated over the other's memory).
* **Linear** (``arm_fully_connected_s8``, MVE): ``kernel_sum[o] + sum(x * w) + filter_offset * sum(x)``; the MVE
  path needs the AoT ``kernel_sum`` (without one CMSIS-NN returns an argument error, as on the target).
* **Convolution** (``arm_convolve_wrapper_s8``) and **depthwise** (``arm_depthwise_conv_wrapper_s8``):
  ``bias + sum((x + input_offset) * w)`` with padding contributing nothing, per-channel requantization, output
  offset, activation clamp. The wrapper's 1xN path (input height 1, ``stride_w * C % 4 == 0``) places the last
  window's taps the way CMSIS-NN does (it assumes the right-hand taps fall in padding, so a "valid" convolution
  whose window does not reach the input's end reads padding there, and it fails when ``2 * pad + odd != total
  padding``); depthwise with one input channel becomes a convolution, as the MVE wrapper does.
* **Average pool** (``arm_avgpool_s8``): the sum over the window clipped to the input, divided by the number of
  elements with ``sum > 0 ? (sum + n/2) / n : (sum - n/2) / n`` (C division, truncating). **Max pool**
  (``arm_max_pool_s8``): the maximum over the clipped window, then the activation clamp.
* **Softmax** (``arm_softmax_s8``): the fixed-point algorithm of CMSIS-NN (``exp_on_negative_values``, a sum
  with 12 accumulator bits, ``one_over_one_plus_x``, output zero point -128) over the last dimension.
* **Batch matmul** (``arm_batch_matmul_s8``): ``sum((l + lo) * (r + ro))`` requantized per tensor.
* **Div** (ExecuTorch's own loop, no CMSIS-NN): float32 ``(x1 - z1) / (x2 - z2)``, times the effective scale,
  ``roundf`` (halves away from zero), plus the output zero point, clamped.
* **Activation** (LUT): ``lut[(uint8)(x + 128)]``. **Minimum/maximum**, **transpose**, **pad**: data movement.

Where ExecuTorch's Python reference implementations (``backends/cortex_m/ops/operators.py``, used at export
time) compute differently, these kernels follow the C: softmax (the reference uses float softmax and
``torch.round``), average pool (float average and round-half-to-even), div (round-half-to-even), batch matmul
(float32 sums), requantization of values whose left shift overflows 32 bits, and the 1xN convolution quirk.

Kernels take the raw memory of their tensors as the C++ kernels do (the layout checks are those of the C++
code; a channels-last ``NCHW`` tensor is the ``NHWC`` array in memory). Failures: ``context.fail`` in the C++
code (argument checks, CMSIS-NN status) raise ``RuntimeFailure`` with the same error code after the kernel's
``ET_LOG`` line; ``ET_CHECK_MSG`` (which aborts on the target) logs the fatal line and fails with ``Internal``.

Work reported to the CPU cost model: multiply-accumulates for convolutions, linear and batch matmul; window
elements read for pooling; output elements for everything else.
"""

from __future__ import annotations

import numpy as np

from .. import log
from ..error import Error, RuntimeFailure
from ..method import RtTensor
from ._util import out_tensor, tensor, wrap32

I32_MIN = -(1 << 31)
I32_MAX = (1 << 31) - 1
ARG_ERROR = -1      # ARM_CMSIS_NN_ARG_ERROR
FAILURE = -3        # ARM_CMSIS_NN_FAILURE
CH_IN_BLOCK_MVE = 124
CHAR, SHORT, INT = 1, 2, 3  # ScalarType::Char, Short, Int


class _CmsisStatus(Exception):
    """A CMSIS-NN function returned a status other than ARM_CMSIS_NN_SUCCESS."""

    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


# ------------------------------------------------------------------------------------------------ arithmetic
def doubling_high_mult(a, b):
    """``arm_nn_doubling_high_mult`` / VQRDMULH: ``(a * b + 2^30) >> 31`` (floor), saturating INT32_MIN^2."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    r = (a * b + (1 << 30)) >> 31
    return np.minimum(r, I32_MAX)


def divide_by_power_of_two(x, exponent):
    """``arm_nn_divide_by_power_of_two``: ``x / 2^exponent`` rounded, halves away from zero."""
    x = np.asarray(x, dtype=np.int64)
    e = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << e) - 1
    rem = x & mask
    q = x >> e
    threshold = (mask >> 1) + (q < 0)
    return q + (rem > threshold)


def requantize(val, multiplier, shift):
    """``arm_nn_requantize`` / ``arm_requantize_mve`` (double rounding) of 32-bit values.

    ``multiplier`` and ``shift`` may be scalars or arrays broadcasting against ``val``.
    """
    val = wrap32(val)
    m = np.asarray(multiplier, dtype=np.int64)
    s = np.asarray(shift, dtype=np.int64)
    left = np.maximum(s, 0)
    right = np.maximum(-s, 0)
    return divide_by_power_of_two(doubling_high_mult(wrap32(val << left), m), right)


def mult_by_power_of_two(val, exp: int):
    """``arm_nn_mult_by_power_of_two``: saturating ``val << exp``."""
    val = np.asarray(val, dtype=np.int64)
    thresh = (1 << (31 - exp)) - 1
    r = wrap32(val << exp)
    r = np.where(val > thresh, I32_MAX, r)
    return np.where(val < -thresh, I32_MIN, r)


def exp_on_negative_values(val):
    """``arm_nn_exp_on_negative_values``: exp of a Q5.26 value <= 0, as Q0.31."""
    val = wrap32(val)
    vmmq = (val & ((1 << 24) - 1)) - (1 << 24)
    remainder = wrap32(vmmq - val)
    x = wrap32((vmmq << 5) + (1 << 28))
    x2 = doubling_high_mult(x, x)
    t = divide_by_power_of_two(doubling_high_mult(x2, x2), 2)
    t = doubling_high_mult(wrap32(t + doubling_high_mult(x2, x)), 715827883)
    t = divide_by_power_of_two(wrap32(t + x2), 1)
    result = wrap32(1895147668 + doubling_high_mult(1895147668, wrap32(x + t)))
    for bit, factor in zip(range(24, 31), (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)):
        result = np.where((remainder & (1 << bit)) != 0, doubling_high_mult(result, factor), result)
    return np.where(val == 0, I32_MAX, result)


def one_over_one_plus_x(val):
    """``arm_nn_one_over_one_plus_x_for_x_in_0_1`` (Newton-Raphson in Q2.29)."""
    val = np.asarray(val, dtype=np.int64)
    s = val + I32_MAX
    half = np.where(s >= 0, (s + 1) // 2, -((-(s - 1)) // 2))  # C division truncates toward zero
    half = wrap32(half)
    x = wrap32(1515870810 + doubling_high_mult(half, -1010580540))
    one = 1 << 29
    for _ in range(3):
        x = wrap32(x + mult_by_power_of_two(doubling_high_mult(x, wrap32(one - doubling_high_mult(half, x))), 2))
    return mult_by_power_of_two(x, 1)


def _clz32(v):
    """CLZ of 32-bit values (``__CLZ``; 32 for 0): 32 minus the bit length, which ``frexp`` gives exactly."""
    u = (np.asarray(v, dtype=np.int64) & 0xFFFFFFFF).astype(np.float64)
    _, e = np.frexp(u)
    return np.where(u == 0, 32, 32 - e).astype(np.int64)


def softmax_rows(x: np.ndarray, mult: int, shift: int, diff_min: int) -> np.ndarray:
    """``arm_softmax_s8`` over the last axis of an int8 array ``(rows, row_size)``."""
    x = x.astype(np.int64)
    mx = x.max(axis=1, keepdims=True)
    diff = x - mx
    ok = diff >= diff_min
    mask = wrap32(np.int64(1) << shift) if shift >= 0 else 0
    e = exp_on_negative_values(doubling_high_mult(wrap32(diff * mask), mult))
    acc_bits = 12
    terms = np.where(ok, divide_by_power_of_two(e, acc_bits), 0)
    total = wrap32(terms.sum(axis=1))
    headroom = _clz32(total)
    bits_over_unit = acc_bits - headroom + 23
    shifted = np.where(total > 0, wrap32(total << headroom), 0)
    shifted_scale = one_over_one_plus_x(wrap32(shifted - (1 << 31)))
    r = divide_by_power_of_two(doubling_high_mult(shifted_scale[:, None], e), bits_over_unit[:, None]) - 128
    r = np.clip(r, -128, 127)
    return np.where(ok, r, -128).astype(np.int8)


# ------------------------------------------------------------------------------------------------ CMSIS-NN functions
def elementwise_add_s8(x1, x2, off1, m1, s1, off2, m2, s2, left_shift, out_off, out_m, out_s, amin, amax):
    """``arm_elementwise_add_s8``: int8 arrays in, int8 array out."""
    v1 = requantize(wrap32((x1.astype(np.int64) + off1) << left_shift), m1, s1)
    v2 = requantize(wrap32((x2.astype(np.int64) + off2) << left_shift), m2, s2)
    r = requantize(wrap32(v1 + v2), out_m, out_s)
    return _to_i8(np.minimum(np.maximum(wrap32(r + out_off), amin), amax))


def elementwise_mul_s8(x1, x2, off1, off2, out_off, out_m, out_s, amin, amax):
    """``arm_elementwise_mul_s8``."""
    prod = wrap32((x1.astype(np.int64) + off1) * (x2.astype(np.int64) + off2))
    r = wrap32(requantize(prod, out_m, out_s) + out_off)
    return _to_i8(np.minimum(np.maximum(r, amin), amax))


def fully_connected_s8(x, w, kernel_sum, filter_offset, out_off, mult, shift, amin, amax):
    """``arm_fully_connected_s8`` (MVE): x (B, K), w (O, K), kernel_sum (O,) -> (B, O) int8."""
    xv = x.astype(np.float64)
    acc = (xv @ w.astype(np.float64).T).astype(np.int64) + kernel_sum.astype(np.int64)[None, :]
    if filter_offset:
        acc = acc + np.int64(filter_offset) * xv.sum(axis=1).astype(np.int64)[:, None]
    r = requantize(wrap32(acc), mult, shift)
    return _to_i8(np.minimum(np.maximum(wrap32(r + out_off), amin), amax))


def batch_matmul_s8(lhs, rhs_t, lhs_off, rhs_off, out_off, mult, shift, amin=-128, amax=127):
    """``arm_batch_matmul_s8``: lhs (B, M, K), rhs_t (B, N, K) -> (B, M, N) int8."""
    lv = lhs.astype(np.float64) + lhs_off
    rv = rhs_t.astype(np.float64) + rhs_off
    acc = np.matmul(lv, rv.transpose(0, 2, 1)).astype(np.int64)
    r = wrap32(requantize(wrap32(acc), mult, shift) + out_off)
    return _to_i8(np.minimum(np.maximum(r, amin), amax))


def _to_i8(values) -> np.ndarray:
    """The int8 a C ``(int8_t)`` cast gives (two's complement truncation)."""
    return wrap32(values).astype(np.int8)


# ------------------------------------------------------------------------------------------------ helpers
def _fail(code: Error, message: str):
    log.error(message)
    raise RuntimeFailure(code, message)


def _check(cond: bool, func: str, what: str, message: str) -> None:
    """``ET_CHECK_MSG``: the target aborts; here the fatal line is logged and the call fails."""
    if not cond:
        text = f"In function {func}(), assert failed ({what}): {message}"
        log.fatal(text)
        raise RuntimeFailure(Error.Internal, text)


def _nargs(args: list, n_inputs: int, kernel: str) -> None:
    """A KernelCall passes the inputs, the out tensor and the returned tensor (the out tensor again)."""
    if len(args) not in (n_inputs + 1, n_inputs + 2):
        raise RuntimeFailure(Error.InvalidArgument, f"{kernel}: expected {n_inputs} inputs and out, got "
                                                    f"{len(args)} arguments")


def _t(v, what: str) -> RtTensor:
    return tensor(v, what)


def _int(v, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise RuntimeFailure(Error.InvalidArgument, f"{what}: expected an int, got {type(v).__name__}")
    return v


def _bool(v, what: str) -> bool:
    if not isinstance(v, (bool, int)):
        raise RuntimeFailure(Error.InvalidArgument, f"{what}: expected a bool, got {type(v).__name__}")
    return bool(v)


def _raw8(ctx, t: RtTensor) -> np.ndarray:
    """The tensor's bytes as int8, in memory order."""
    return t.raw(ctx.bus).view(np.int8)


def _raw32(ctx, t: RtTensor) -> np.ndarray:
    return t.raw(ctx.bus).view(np.int32)


def _is_i8(t: RtTensor) -> bool:
    return t.scalar_type == CHAR


def _store8(ctx, out: RtTensor, values: np.ndarray, kernel: str, work: int | None = None) -> None:
    dst = _raw8(ctx, out)
    if dst.size != values.size:
        raise RuntimeFailure(Error.InvalidArgument,
                             f"{kernel}: out has {dst.size} elements, the result has {values.size}")
    dst[:] = values.reshape(-1).astype(np.int8, copy=False)
    ctx.bus.work(f"kernel.{kernel}", out.numel if work is None else work)


def _channels_last(t: RtTensor) -> bool:
    """``is_channels_last_tensor``: 4-D, and NHWC dim order unless channels or the spatial dims are 1."""
    if len(t.sizes) != 4:
        return False
    if t.sizes[1] == 1 or (t.sizes[2] == 1 and t.sizes[3] == 1):
        return True
    return t.dim_order == (0, 2, 3, 1)


def _contiguous(t: RtTensor) -> bool:
    return t.dim_order == tuple(range(len(t.sizes)))


def _channel_broadcast(a: RtTensor, b: RtTensor) -> bool:
    """``is_channel_broadcast`` of cortex_m_ops_common.h."""
    if len(a.sizes) != len(b.sizes) or len(a.sizes) != 4 or a.sizes[1] != b.sizes[1]:
        return False
    return a.numel == a.sizes[1] or b.numel == b.sizes[1]


def _validate_i8_pair(fn: str, a: RtTensor, b: RtTensor, out: RtTensor, same_sizes: bool, dtype: int = CHAR) -> None:
    """``validate_cmsis_nn_tensor_requirements`` (ET_CHECK_MSG)."""
    for name, t in (("Input1", a), ("Input2", b), ("Output", out)):
        _check(t.scalar_type == dtype, fn, f"{name.lower()}.scalar_type() == expected_dtype",
               f"{name} dtype must be {dtype}, got {t.scalar_type}")
    if same_sizes:
        _check(a.sizes == b.sizes, fn, "input1.sizes() == input2.sizes()", "Input1 and Input2 must have the same sizes")
        _check(out.sizes == a.sizes, fn, "output.sizes() == input1.sizes()",
               "Output must have the same sizes as inputs")


def _validate_quant(fn: str, mult: int, shift: int, name: str) -> None:
    """``validate_single_quant_params`` (ET_CHECK_MSG)."""
    _check(I32_MIN <= mult <= I32_MAX, fn, "multiplier in int32 range", f"{name} multiplier must be in int32 range "
                                                                       f"[Value: {mult}]")
    _check(-31 <= shift <= 31, fn, "shift in [-31, 31]", f"{name} shift must be in range [-31, 31] [Value: {shift}]")


def _broadcast_operands(ctx, a: RtTensor, b: RtTensor, out: RtTensor):
    """The element pairs the C++ add/mul loops feed CMSIS-NN: (first, second) raw arrays of out.numel elements
    and whether the operands were swapped (the larger one goes first for a channel broadcast)."""
    x1 = _raw8(ctx, a)
    x2 = _raw8(ctx, b)
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


# ------------------------------------------------------------------------------------------------ elementwise
def quantized_add(ctx, args):
    """``cortex_m::quantized_add.out`` (op_quantized_add.cpp -> arm_elementwise_add_s8)."""
    fn = "quantized_add_out"
    _nargs(args, 13, "quantized_add")
    a, b, out = _t(args[0], "self"), _t(args[4], "other"), out_tensor(args)
    zp1, m1, s1 = (_int(v, "self qparams") for v in args[1:4])
    zp2, m2, s2 = (_int(v, "other qparams") for v in args[5:8])
    ozp, om, osh, amin, amax = (_int(v, "output qparams") for v in args[8:13])
    bcast = _channel_broadcast(a, b)
    _validate_i8_pair(fn, a, b, out, same_sizes=not bcast)
    for name, m, s in (("Single quant Input1", m1, s1), ("Single quant Input2", m2, s2), ("Single quant Output", om, osh)):
        _validate_quant(fn, m, s, name)
    x1, x2, swapped = _broadcast_operands(ctx, a, b, out)
    if swapped:
        zp1, zp2, m1, m2, s1, s2 = zp2, zp1, m2, m1, s2, s1
    r = elementwise_add_s8(x1, x2, -zp1, m1, s1, -zp2, m2, s2, 20, ozp, om, osh, amin, amax)
    _store8(ctx, out, r, "quantized_add")
    return out


def quantized_mul(ctx, args):
    """``cortex_m::quantized_mul.out`` (op_quantized_mul.cpp -> arm_elementwise_mul_s8)."""
    fn = "quantized_mul_out"
    _nargs(args, 7, "quantized_mul")
    a, b, out = _t(args[0], "self"), _t(args[2], "other"), out_tensor(args)
    zp1, zp2 = _int(args[1], "self_zero_point"), _int(args[3], "other_zero_point")
    ozp, om, osh = (_int(v, "output qparams") for v in args[4:7])
    bcast = _channel_broadcast(a, b)
    _validate_i8_pair(fn, a, b, out, same_sizes=not bcast)
    _validate_quant(fn, om, osh, "Single quant Output")
    x1, x2, swapped = _broadcast_operands(ctx, a, b, out)
    if swapped:
        zp1, zp2 = zp2, zp1
    r = elementwise_mul_s8(x1, x2, -zp1, -zp2, ozp, om, osh, -128, 127)
    _store8(ctx, out, r, "quantized_mul")
    return out


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """``roundf`` of float32 values (evaluated exactly in float64)."""
    x = x.astype(np.float64)
    return np.trunc(x + np.copysign(0.5, x))


def quantized_div(ctx, args):
    """``cortex_m::quantized_div.out`` (op_quantized_div.cpp): float32 quotient, scaled, roundf, clamped."""
    fn = "quantized_div_out"
    _nargs(args, 6, "quantized_div")
    a, b, out = _t(args[0], "self"), _t(args[2], "other"), out_tensor(args)
    zp1, zp2, ozp = _int(args[1], "self_zero_point"), _int(args[3], "other_zero_point"), _int(args[4], "output_zero_point")
    scale = args[5]
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise RuntimeFailure(Error.InvalidArgument, "quantized_div: output_scale must be a number")
    if out.scalar_type not in (CHAR, SHORT):
        _fail(Error.InvalidArgument, f"quantized_div_out: unsupported dtype {int(out.scalar_type)}")
    _validate_i8_pair(fn, a, b, out, same_sizes=True, dtype=out.scalar_type)
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


def quantized_activation(ctx, args):
    """``cortex_m::quantized_activation.out``: ``out[i] = lut[(uint8)(in[i] + 128)]``."""
    fn = "quantized_activation_out"
    _nargs(args, 2, "quantized_activation")
    x, lut, out = _t(args[0], "input"), _t(args[1], "lut"), out_tensor(args)
    _check(_is_i8(x), fn, "input.scalar_type() == ScalarType::Char", "input must be int8")
    _check(_is_i8(out), fn, "out.scalar_type() == ScalarType::Char", "out must be int8")
    _check(_is_i8(lut), fn, "lut.scalar_type() == ScalarType::Char", "lut must be int8")
    _check(lut.numel == 256, fn, "lut.numel() == 256", f"lut must have 256 entries, got {lut.numel}")
    _check(x.numel == out.numel, fn, "input.numel() == out.numel()", "input and out must have the same numel")
    table = _raw8(ctx, lut)
    idx = (_raw8(ctx, x).view(np.uint8).astype(np.int32) + 128) & 0xFF
    _store8(ctx, out, table[idx], "quantized_activation")
    return out


def _minmax(ctx, args, which: str):
    fn = f"{which}_out"
    _nargs(args, 2, which)
    a, b, out = _t(args[0], "self"), _t(args[1], "other"), out_tensor(args)
    _validate_i8_pair(fn, a, b, out, same_sizes=False)
    if len(a.sizes) > 5 or len(b.sizes) > 5:
        _fail(Error.InvalidArgument, f"{fn}: more than 5 dimensions")
    try:
        shape = np.broadcast_shapes(a.sizes, b.sizes)
    except ValueError:
        _fail(Error.InvalidArgument, f"{fn}: shapes {list(a.sizes)} and {list(b.sizes)} do not broadcast")
    if tuple(shape) != out.sizes:
        _fail(Error.InvalidArgument, f"{fn}: out has sizes {list(out.sizes)}, the broadcast is {list(shape)}")

    def dims4(sizes):  # CMSIS-NN dims: the last four sizes, 1 for missing leading ones
        s = list(sizes[-4:]) if sizes else []
        return [1] * (4 - len(s)) + s

    da, db, do = dims4(a.sizes), dims4(b.sizes), dims4(out.sizes)
    xa = _raw8(ctx, a)[:int(np.prod(da))].reshape(da)
    xb = _raw8(ctx, b)[:int(np.prod(db))].reshape(db)
    op = np.minimum if which == "minimum" else np.maximum
    r = op(xa, xb)
    if list(r.shape) != do:
        _fail(Error.Internal, f"{fn}: arm_{which}_s8 failed with status {ARG_ERROR}")
    _store8(ctx, out, r, which)
    return out


def minimum(ctx, args):
    """``cortex_m::minimum.out`` (arm_minimum_s8, broadcasting over the last four dims of the raw data)."""
    return _minmax(ctx, args, "minimum")


def maximum(ctx, args):
    """``cortex_m::maximum.out`` (arm_maximum_s8)."""
    return _minmax(ctx, args, "maximum")


# ------------------------------------------------------------------------------------------------ linear / bmm
def quantized_linear(ctx, args):
    """``cortex_m::quantized_linear.out`` (op_quantized_linear.cpp -> arm_fully_connected_s8, MVE path)."""
    _nargs(args, 11, "quantized_linear")
    x, w, out = _t(args[0], "input"), _t(args[1], "weights"), out_tensor(args)
    ksum = _t(args[3], "kernel_sum") if args[3] is not None else None
    in_off, f_off, out_off = (_int(v, "offsets") for v in args[4:7])
    mults, shifts = ctx.int_list(args[7]), ctx.int_list(args[8])
    amax, amin = _int(args[9], "activation_max"), _int(args[10], "activation_min")
    if not mults or not shifts:
        raise RuntimeFailure(Error.InvalidArgument, "quantized_linear: empty requantize multipliers/shifts")
    if not x.sizes or not out.sizes:
        raise RuntimeFailure(Error.InvalidArgument, "quantized_linear: input/out must have at least one dim")
    in_feat, out_feat = x.sizes[-1], out.sizes[-1]
    batches = int(np.prod(x.sizes[:-1], dtype=np.int64))
    if ksum is None:  # the MVE arm_fully_connected_s8 needs ctx.buf (the kernel sums)
        _fail(Error.Internal, f"quantized_linear_out: CMSIS-NN failed with status [{ARG_ERROR}]")
    xv = _raw8(ctx, x)[:batches * in_feat]
    wv = _raw8(ctx, w)[:out_feat * in_feat]
    ks = _raw32(ctx, ksum)[:out_feat]
    if xv.size != batches * in_feat or wv.size != out_feat * in_feat or ks.size != out_feat:
        raise RuntimeFailure(Error.InvalidArgument, "quantized_linear: tensor sizes do not fit")
    r = fully_connected_s8(xv.reshape(batches, in_feat), wv.reshape(out_feat, in_feat), ks, f_off, out_off,
                           int(mults[0]), int(shifts[0]), amin, amax)
    _store8(ctx, out, r, "quantized_linear", batches * in_feat * out_feat)
    return out


def quantized_batch_matmul(ctx, args):
    """``cortex_m::quantized_batch_matmul.out`` (arm_batch_matmul_s8): ``lhs [B, M, K] x rhs_T [B, N, K]``."""
    fn = "quantized_batch_matmul_out"
    _nargs(args, 8, "quantized_batch_matmul")
    lhs, rhs, scratch, out = _t(args[0], "lhs"), _t(args[2], "rhs_transposed"), _t(args[7], "scratch"), out_tensor(args)
    lo, ro, oo, om, osh = (_int(args[i], "qparams") for i in (1, 3, 4, 5, 6))
    if not (_is_i8(lhs) and _is_i8(rhs) and _is_i8(out)):
        _fail(Error.InvalidArgument, f"{fn}: tensors must be int8")
    if len(lhs.sizes) != 3 or len(rhs.sizes) != 3 or len(out.sizes) != 3:
        _fail(Error.InvalidArgument, f"{fn}: tensors must be 3-D")
    if lhs.sizes[0] != rhs.sizes[0]:
        _fail(Error.InvalidArgument, f"{fn}: batch sizes differ")
    if lhs.sizes[2] != rhs.sizes[2]:
        _fail(Error.InvalidArgument, f"{fn}: inner dimensions differ")
    if out.sizes != (lhs.sizes[0], lhs.sizes[1], rhs.sizes[1]):
        _fail(Error.InvalidArgument, f"{fn}: output shape mismatch")
    if scratch.nbytes == 0:  # MVE path: the vector sums live in ctx.buf
        _fail(Error.Internal, f"{fn}: arm_batch_matmul_s8 failed with status [{ARG_ERROR}]")
    bsz, m, k = lhs.sizes
    n = rhs.sizes[1]
    r = batch_matmul_s8(_raw8(ctx, lhs).reshape(bsz, m, k), _raw8(ctx, rhs).reshape(bsz, n, k), lo, ro, oo, om, osh)
    _store8(ctx, out, r, "quantized_batch_matmul", bsz * m * n * k)
    return out


# ------------------------------------------------------------------------------------------------ softmax
def softmax(ctx, args):
    """``cortex_m::softmax.out`` (op_softmax.cpp -> arm_softmax_s8) over the last dimension."""
    fn = "softmax_out"
    _nargs(args, 7, "softmax")
    x, out = _t(args[0], "input"), out_tensor(args)
    dim, in_zp, out_zp, mult, shift, diff_min = (_int(v, "softmax arguments") for v in args[1:7])
    if not (_is_i8(x) and _is_i8(out)):
        _fail(Error.InvalidArgument, f"{fn}: only int8 tensors are supported (input={x.scalar_type}, "
                                     f"out={out.scalar_type})")
    rank = len(x.sizes)
    pdim = dim + rank if dim < 0 else dim
    if pdim != rank - 1:
        _fail(Error.InvalidArgument, f"{fn}: only last-dimension softmax is supported (dim={dim}, rank={rank})")
    _validate_quant(fn, mult, shift, "softmax input")
    row = x.sizes[-1] if rank else 0
    if row <= 0 or row > I32_MAX:
        _fail(Error.InvalidArgument, f"{fn}: row size must fit in int32 (row_size={row})")
    rows = x.numel // row
    if rows <= 0:
        _fail(Error.InvalidArgument, f"{fn}: num_rows must fit in int32 (num_rows={rows})")
    if out_zp != -128:
        _fail(Error.InvalidArgument, f"{fn}: expected output zero_point=-128 (got zero_point={out_zp})")
    data = _raw8(ctx, x)[:rows * row].reshape(rows, row)
    _store8(ctx, out, softmax_rows(data, mult, shift, diff_min), "cmsis_softmax")
    return out


# ------------------------------------------------------------------------------------------------ data movement
def transpose(ctx, args):
    """``cortex_m::transpose.out`` (arm_transpose_s8 on the raw data, logical sizes)."""
    fn = "transpose_out"
    _nargs(args, 2, "transpose")
    x, out = _t(args[0], "input"), out_tensor(args)
    perm = ctx.int_list(args[1])
    if not (_is_i8(x) and _is_i8(out)):
        _fail(Error.InvalidArgument, f"{fn}: only int8 tensors are supported")
    rank = len(x.sizes)
    if rank == 0 or rank > 4:
        _fail(Error.InvalidArgument, f"{fn}: expected a rank in [1, 4], got {rank}")
    if len(perm) != rank:
        _fail(Error.InvalidArgument, f"{fn}: perm has {len(perm)} entries for rank {rank}")
    data = _raw8(ctx, x)[:x.numel].reshape(x.sizes)
    if rank == 1:
        r = data
    elif rank == 2:  # arm_transpose_s8 swaps the two dims whatever the permutation says
        r = data.T
    else:
        if any(p < 0 or p >= rank for p in perm) or sorted(perm) != list(range(rank)):
            _fail(Error.Internal, f"{fn}: arm_transpose_s8 failed with status {ARG_ERROR}")
        r = data.transpose(perm)
    if tuple(r.shape) != out.sizes:
        raise RuntimeFailure(Error.InvalidArgument, f"{fn}: out sizes {list(out.sizes)} != {list(r.shape)}")
    _store8(ctx, out, np.ascontiguousarray(r), "transpose")
    return out


def pad(ctx, args):
    """``cortex_m::pad.out`` (arm_pad_s8 on the physical layout; pads already in physical order)."""
    fn = "pad_out"
    _nargs(args, 4, "pad")
    x, out = _t(args[0], "input"), out_tensor(args)
    pre, post = ctx.int_list(args[1]), ctx.int_list(args[2])
    value = _int(args[3], "pad_value")
    if not (_is_i8(x) and _is_i8(out)):
        _fail(Error.InvalidArgument, f"{fn}: only int8 tensors are supported")
    rank = len(x.sizes)
    if rank == 0 or rank > 4:
        _fail(Error.InvalidArgument, f"{fn}: expected a rank in [1, 4], got {rank}")
    if len(pre) < 4 or len(post) < 4:
        raise RuntimeFailure(Error.InvalidArgument, f"{fn}: expected four padding values per side")
    offset = 4 - rank
    order = (0, 2, 3, 1)
    nhwc = _channels_last(x)
    dims = [1, 1, 1, 1]
    for i in range(rank):
        dims[offset + i] = x.sizes[order[offset + i]] if nhwc else x.sizes[i]
    if any(p < 0 for p in pre[:4] + post[:4]):
        raise RuntimeFailure(Error.InvalidArgument, f"{fn}: negative padding")
    data = _raw8(ctx, x)[:int(np.prod(dims))].reshape(dims)
    r = np.pad(data, [(pre[i], post[i]) for i in range(4)], constant_values=int(_to_i8(value)))
    _store8(ctx, out, r, "pad")
    return out


# ------------------------------------------------------------------------------------------------ convolution
def _nhwc_sizes(t: RtTensor, nhwc_logical: bool) -> tuple[int, int, int, int]:
    """(N, H, W, C) of an activation tensor for the two operator layouts."""
    s = t.sizes
    return (s[0], s[1], s[2], s[3]) if nhwc_logical else (s[0], s[2], s[3], s[1])


def _check_conv_operands(fn, x, w, out, bias, stride, padding, dilation, nhwc_logical, length_message=None):
    """The argument checks the C++ convolution kernels share (their own messages kept; no length check when
    ``length_message`` is None, as in the transposed convolution)."""
    _check_activation_layout(fn, x, out, nhwc_logical)
    if not (_is_i8(x) and _is_i8(out)):
        _fail(Error.InvalidArgument, f"{fn}: input and output must be int8")
    if not _is_i8(w):
        _fail(Error.InvalidArgument, f"{fn}: weight must be int8")
    if bias is not None and bias.scalar_type != INT:
        _fail(Error.InvalidArgument, f"{fn}: bias must be int32 if provided")
    if length_message is not None and (len(stride) != 2 or len(padding) != 2 or len(dilation) != 2):
        _fail(Error.InvalidArgument, f"{fn}: {length_message}")


def _check_activation_layout(fn: str, x: RtTensor, out: RtTensor, nhwc_logical: bool) -> None:
    if nhwc_logical:
        if not (_contiguous(x) and _contiguous(out)):
            _fail(Error.InvalidArgument, f"{fn}: input and output must have contiguous dim_order")
    elif not (_channels_last(x) and _channels_last(out)):
        _fail(Error.InvalidArgument, f"{fn}: input and output must have channels_last dim_order")


def _window_taps(in_len: int, out_len: int, k: int, stride: int, pad: int, dil: int) -> np.ndarray:
    """Input index of each (output position, tap), -1 where the tap falls outside the input (padding)."""
    idx = np.arange(out_len)[:, None] * stride - pad + np.arange(k)[None, :] * dil
    return np.where((idx >= 0) & (idx < in_len), idx, -1)


def _taps_1xn(in_w: int, out_w: int, k: int, stride: int, pad: int) -> np.ndarray:
    """Window taps of CMSIS-NN's ``arm_convolve_1_x_n_s8`` (MVE) along the width, including its right-edge rule.

    Raises ``_CmsisStatus`` where it returns ARM_CMSIS_NN_FAILURE; returns ``None`` when it falls back to
    ``arm_convolve_s8`` (plain windows).
    """
    total = (out_w - 1) * stride + k - in_w
    asym = int(np.fmod(total, 2))  # C remainder: negative for a negative total
    if pad * 2 + asym != total:
        raise _CmsisStatus(FAILURE)
    right_n = max(1, int(np.trunc((pad + asym + stride - 1) / stride))) if pad + asym != 0 else 0
    left_n = max(1, (pad + stride - 1) // stride) if pad != 0 else 0
    mid_n = max(out_w - (right_n + left_n), 0)
    if right_n + mid_n + left_n != out_w:
        return None
    taps = _window_taps(in_w, out_w, k, stride, pad, 1)
    if stride * left_n - pad < 0:
        raise _CmsisStatus(FAILURE)
    # right-padded rows: the buffer holds k-1 inputs from the row's start, then padding
    start = stride * (left_n + mid_n) - pad
    for r in range(right_n):
        o = left_n + mid_n + r
        for t in range(k):
            pos = r * stride + t  # offset in the im2col buffer (in pixels)
            taps[o, t] = start + pos if pos < k - 1 and 0 <= start + pos < in_w else -1
    return taps


def _conv_core(x: np.ndarray, w: np.ndarray, taps_h: np.ndarray, taps_w: np.ndarray, input_offset: int,
               groups: int) -> np.ndarray:
    """Sum of ``(x + input_offset) * w`` over the windows (taps -1 contribute nothing): int64 (N, OH, OW, O).

    x: (N, H, W, C) int8; w: (O, KH, KW, KC) int8.
    """
    n, h, wd, c = x.shape
    o, kh, kw, kc = w.shape
    oh, ow = taps_h.shape[0], taps_w.shape[0]
    xo = x.astype(np.float64) + input_offset
    xo = np.concatenate([xo, np.zeros((n, 1, wd, c))], axis=1)       # row h: padding
    xo = np.concatenate([xo, np.zeros((n, h + 1, 1, c))], axis=2)    # column w: padding
    th = np.where(taps_h < 0, h, taps_h)
    tw = np.where(taps_w < 0, wd, taps_w)
    # im2col: (N, OH, OW, KH, KW, C)
    cols = xo[:, th[:, None, :, None], tw[None, :, None, :], :]
    og = o // groups
    out = np.empty((n, oh, ow, o), dtype=np.float64)
    for g in range(groups):
        a = cols[..., g * kc:(g + 1) * kc].reshape(n * oh * ow, kh * kw * kc)
        b = w[g * og:(g + 1) * og].reshape(og, kh * kw * kc).astype(np.float64)
        out[..., g * og:(g + 1) * og] = (a @ b.T).reshape(n, oh, ow, og)
    return out.astype(np.int64)


def _finish(acc: np.ndarray, bias, mults: np.ndarray, shifts: np.ndarray, out_off: int, amin: int, amax: int):
    """bias, per-channel requantization (last axis), output offset, activation clamp, int8 store value."""
    if bias is not None:
        acc = acc + bias
    r = requantize(wrap32(acc), mults, shifts)
    r = np.minimum(np.maximum(wrap32(r + out_off), amin), amax)
    return _to_i8(r)


def _conv2d_impl(ctx, args, nhwc_logical: bool):
    fn = "quantized_conv2d_nhwc_out" if nhwc_logical else "quantized_conv2d_out"
    _nargs(args, 13, "quantized_conv2d")
    x, w, out = _t(args[0], "input"), _t(args[1], "weight"), out_tensor(args)
    bias = _t(args[2], "bias") if args[2] is not None else None
    stride, padding, dilation = ctx.int_list(args[3]), ctx.int_list(args[4]), ctx.int_list(args[5])
    in_off, out_off = _int(args[6], "input_offset"), _int(args[7], "output_offset")
    mt, st = _t(args[8], "requantize_multipliers"), _t(args[9], "requantize_shifts")
    amin, amax = _int(args[10], "activation_min"), _int(args[11], "activation_max")
    scratch = _t(args[12], "scratch")
    if len(x.sizes) != 4 or len(w.sizes) != 4 or len(out.sizes) != 4:
        _fail(Error.InvalidArgument, f"{fn}: tensors must be 4-D")
    _check_conv_operands(fn, x, w, out, bias, stride, padding, dilation, nhwc_logical,
                         "stride, padding, and dilation must have length 2")
    n, h, wd, c = _nhwc_sizes(x, nhwc_logical)
    _, oh, ow, o = _nhwc_sizes(out, nhwc_logical)
    if mt.numel != o or st.numel != o or (mt.sizes and mt.sizes[0] != o) or (st.sizes and st.sizes[0] != o):
        _fail(Error.InvalidArgument, f"{fn}: per-channel params must match output channels ({o})")
    ko, kh, kw, kc = w.sizes
    xv = _raw8(ctx, x)[:n * h * wd * c].reshape(n, h, wd, c)
    wv = _raw8(ctx, w)[:ko * kh * kw * kc].reshape(ko, kh, kw, kc)
    bv = _raw32(ctx, bias)[:o].astype(np.int64) if bias is not None else None
    try:
        r = convolve_wrapper_s8(xv, wv, bv, (oh, ow, o), stride, padding, dilation, in_off, out_off,
                              _raw32(ctx, mt)[:o].astype(np.int64), _raw32(ctx, st)[:o].astype(np.int64),
                              amin, amax, scratch.nbytes)
    except _CmsisStatus as e:
        _fail(Error.Internal, f"{fn}: arm_convolve_wrapper_s8 failed with status {e.status}")
    _store8(ctx, out, r, "quantized_conv2d", n * oh * ow * o * kh * kw * kc)
    return out


def convolve_wrapper_s8(xv, wv, bias, out_dims, stride, padding, dilation, in_off, out_off, mults, shifts, amin, amax,
                      scratch_bytes):
    """``arm_convolve_wrapper_s8`` (MVE): the path choice and its window placement, then the shared arithmetic."""
    n, h, wd, c = xv.shape
    ko, kh, kw, kc = wv.shape
    oh, ow, o = out_dims
    sh, sw = stride
    ph, pw = padding
    dh, dw = dilation
    if ko != o:
        raise _CmsisStatus(ARG_ERROR)
    taps_w = None
    if ph == 0 and pw == 0 and kh == 1 and kw == 1 and dh == 1 and dw == 1 and c == kc:
        pass  # arm_convolve_1x1_s8(_fast): plain strided windows, no buffer needed
    elif h == 1 and dw == 1 and kh == 1 and (sw * c) % 4 == 0 and c == kc:
        if scratch_bytes == 0 or sw == 0:
            raise _CmsisStatus(ARG_ERROR)
        taps_w = _taps_1xn(wd, ow, kw, sw, pw)
    else:
        if scratch_bytes == 0:
            raise _CmsisStatus(ARG_ERROR)
    if kc == 0 or c % kc:
        raise _CmsisStatus(ARG_ERROR)
    groups = c // kc
    if o % groups:
        raise _CmsisStatus(ARG_ERROR)
    taps_h = _window_taps(h, oh, kh, sh, ph, dh)
    if taps_w is None:
        taps_w = _window_taps(wd, ow, kw, sw, pw, dw)
    acc = _conv_core(xv, wv, taps_h, taps_w, in_off, groups)
    return _finish(acc, bias, mults, shifts, out_off, amin, amax)


def quantized_conv2d(ctx, args):
    """``cortex_m::quantized_conv2d.out``: NCHW-logical, channels-last tensors (arm_convolve_wrapper_s8)."""
    return _conv2d_impl(ctx, args, nhwc_logical=False)


def quantized_conv2d_nhwc(ctx, args):
    """``cortex_m::quantized_conv2d_nhwc.out``: the explicit-layout variant (NHWC-logical, contiguous)."""
    return _conv2d_impl(ctx, args, nhwc_logical=True)


def _depthwise_impl(ctx, args, nhwc_logical: bool):
    fn = "quantized_depthwise_conv2d_nhwc_out" if nhwc_logical else "quantized_depthwise_conv2d_out"
    _nargs(args, 14, "quantized_depthwise_conv2d")
    x, w, out = _t(args[0], "input"), _t(args[1], "weight"), out_tensor(args)
    bias = _t(args[2], "bias") if args[2] is not None else None
    stride, padding, dilation = ctx.int_list(args[3]), ctx.int_list(args[4]), ctx.int_list(args[5])
    mult = _int(args[6], "depth_multiplier")
    in_off, out_off = _int(args[7], "input_offset"), _int(args[8], "output_offset")
    mt, st = _t(args[9], "requantize_multipliers"), _t(args[10], "requantize_shifts")
    amin, amax = _int(args[11], "activation_min"), _int(args[12], "activation_max")
    scratch = _t(args[13], "scratch")
    if len(x.sizes) != 4 or len(w.sizes) != 4 or len(out.sizes) != 4:
        _fail(Error.InvalidArgument, f"{fn}: tensors must be 4-D")
    if x.sizes[0] != 1:
        _fail(Error.InvalidArgument, f"{fn}: batch size must be 1, got {x.sizes[0]}")
    if w.sizes[0] != 1:
        _fail(Error.InvalidArgument, f"{fn}: weight dim 0 must be 1, got {w.sizes[0]}")
    n, h, wd, c = _nhwc_sizes(x, nhwc_logical)
    _, oh, ow, o = _nhwc_sizes(out, nhwc_logical)
    if w.sizes[3] != o:
        _fail(Error.InvalidArgument, f"{fn}: weight out_ch ({w.sizes[3]}) != out_ch ({o})")
    _check_conv_operands(fn, x, w, out, bias, stride, padding, dilation, nhwc_logical,
                         "stride/padding/dilation must have length 2")
    if o != c * mult:
        _fail(Error.InvalidArgument, f"{fn}: out_ch ({o}) != in_ch ({c}) * depth_mult ({mult})")
    if mt.numel != o or st.numel != o:
        _fail(Error.InvalidArgument, f"{fn}: per-ch params size != out_ch ({o})")
    _, kh, kw, _ = w.sizes
    xv = _raw8(ctx, x)[:n * h * wd * c].reshape(n, h, wd, c)
    wv = _raw8(ctx, w)[:kh * kw * o].reshape(kh, kw, o)
    bv = _raw32(ctx, bias)[:o].astype(np.int64) if bias is not None else None
    mv, sv = _raw32(ctx, mt)[:o].astype(np.int64), _raw32(ctx, st)[:o].astype(np.int64)
    try:
        r = depthwise_conv_wrapper_s8(xv, wv, bv, (oh, ow, o), stride, padding, dilation, mult, in_off, out_off,
                                      mv, sv, amin, amax, scratch.nbytes)
    except _CmsisStatus as e:
        _fail(Error.Internal, f"{fn}: arm_depthwise_conv_wrapper_s8 failed with status {e.status}")
    _store8(ctx, out, r, "quantized_depthwise_conv2d", n * oh * ow * o * kh * kw)
    return out


def depthwise_conv_wrapper_s8(xv, wv, bias, out_dims, stride, padding, dilation, mult, in_off, out_off, mults,
                              shifts, amin, amax, scratch_bytes):
    """``arm_depthwise_conv_wrapper_s8`` (MVE): x (N, H, W, C), w (KH, KW, O) -> (N, OH, OW, O) int8."""
    c, o = xv.shape[3], wv.shape[2]
    if c == 1 and o > 1:
        # one input channel becomes a regular convolution (filter transposed to [O, KH, KW, 1])
        return convolve_wrapper_s8(xv, wv.transpose(2, 0, 1)[..., None], bias, out_dims, stride, padding, dilation,
                                   in_off, out_off, mults, shifts, amin, amax, scratch_bytes)
    return _depthwise(xv, wv, bias, out_dims, stride, padding, dilation, mult, in_off, out_off, mults, shifts, amin,
                      amax, scratch_bytes)


def _depthwise(xv, wv, bias, out_dims, stride, padding, dilation, mult, in_off, out_off, mults, shifts, amin, amax,
               scratch_bytes):
    """``arm_depthwise_conv_s8_opt`` / ``arm_depthwise_conv_s8``: out channel ``o`` reads input ``o // mult``."""
    n, h, wd, c = xv.shape
    kh, kw, o = wv.shape
    oh, ow, _ = out_dims
    if mult == 1 and n == 1 and dilation[0] == 1 and dilation[1] == 1:
        if c != o or (scratch_bytes == 0 and 4 * CH_IN_BLOCK_MVE * kh * kw > 0):
            raise _CmsisStatus(ARG_ERROR)
    taps_h = _window_taps(h, oh, kh, stride[0], padding[0], dilation[0])
    taps_w = _window_taps(wd, ow, kw, stride[1], padding[1], dilation[1])
    xo = xv.astype(np.int64) + in_off
    xo = np.concatenate([xo, np.zeros((n, 1, wd, c), dtype=np.int64)], axis=1)
    xo = np.concatenate([xo, np.zeros((n, h + 1, 1, c), dtype=np.int64)], axis=2)
    th = np.where(taps_h < 0, h, taps_h)
    tw = np.where(taps_w < 0, wd, taps_w)
    ch = np.arange(o) // mult
    acc = np.zeros((n, oh, ow, o), dtype=np.int64)
    wl = wv.astype(np.int64)
    for i in range(kh):
        rows = xo[:, th[:, i], :, :]                 # (N, OH, W+1, C)
        for j in range(kw):
            patch = rows[:, :, tw[:, j], :]           # (N, OH, OW, C)
            acc += patch[..., ch] * wl[i, j]
    return _finish(acc, bias, mults, shifts, out_off, amin, amax)


def quantized_depthwise_conv2d(ctx, args):
    """``cortex_m::quantized_depthwise_conv2d.out`` (arm_depthwise_conv_wrapper_s8; weight ``[1, KH, KW, O]``)."""
    return _depthwise_impl(ctx, args, nhwc_logical=False)


def quantized_depthwise_conv2d_nhwc(ctx, args):
    """``cortex_m::quantized_depthwise_conv2d_nhwc.out`` (explicit-layout variant)."""
    return _depthwise_impl(ctx, args, nhwc_logical=True)


def transpose_conv_s8(xv, wv, bias, out_dims, stride, padding, in_off, out_off, mults, shifts, amin, amax):
    """``arm_transpose_conv_wrapper_s8``: x (N, H, W, I), w (O, KH, KW, I) -> (N, OH, OW, O) int8.

    Input pixel (i, j) adds ``(x + input_offset) * w[:, ky, kx, :]`` to output ``(i*sh - ph + ky, j*sw - pw + kx)``;
    outputs outside the output size are dropped (the output size carries any output padding). Neither CMSIS-NN
    path applies a dilation (the reverse-convolution one sets it to 1), so none is applied here."""
    n, h, wd, c = xv.shape
    o, kh, kw, _ = wv.shape
    oh, ow, _ = out_dims
    xo = xv.astype(np.float64) + in_off
    acc = np.zeros((n, oh, ow, o), dtype=np.float64)
    prod = np.einsum("nhwc,okjc->nhwkjo", xo, wv.astype(np.float64))  # (N, H, W, KH, KW, O)
    for ky in range(kh):
        ys = np.arange(h) * stride[0] - padding[0] + ky
        vy = (ys >= 0) & (ys < oh)
        for kx in range(kw):
            xs = np.arange(wd) * stride[1] - padding[1] + kx
            vx = (xs >= 0) & (xs < ow)
            if vy.any() and vx.any():
                acc[:, ys[vy][:, None], xs[vx][None, :], :] += prod[:, vy][:, :, vx][:, :, :, ky, kx, :]
    return _finish(acc.astype(np.int64), bias, mults, shifts, out_off, amin, amax)


def _transpose_conv_impl(ctx, args, nhwc_logical: bool):
    fn = "quantized_transpose_conv2d_nhwc_out" if nhwc_logical else "quantized_transpose_conv2d_out"
    _nargs(args, 15, "quantized_transpose_conv2d")
    x, w, out = _t(args[0], "input"), _t(args[1], "weight"), out_tensor(args)
    bias = _t(args[2], "bias") if args[2] is not None else None
    stride, padding = ctx.int_list(args[3]), ctx.int_list(args[4])
    out_pad, dilation = ctx.int_list(args[5]), ctx.int_list(args[6])
    in_off, out_off = _int(args[7], "input_offset"), _int(args[8], "output_offset")
    mt, st = _t(args[9], "requantize_multipliers"), _t(args[10], "requantize_shifts")
    amin, amax = _int(args[11], "activation_min"), _int(args[12], "activation_max")
    scratch, out_scratch = _t(args[13], "scratch"), _t(args[14], "output_scratch")
    if len(x.sizes) != 4 or len(w.sizes) != 4 or len(out.sizes) != 4:
        _fail(Error.InvalidArgument, f"{fn}: tensors must be 4-D")
    _check_conv_operands(fn, x, w, out, bias, None, None, None, nhwc_logical)
    n, h, wd, c = _nhwc_sizes(x, nhwc_logical)
    _, oh, ow, o = _nhwc_sizes(out, nhwc_logical)
    if mt.numel != o or st.numel != o:
        _fail(Error.InvalidArgument, f"{fn}: per-channel params must match output channels ({o})")
    ko, kh, kw, kc = w.sizes
    if ko != o:
        _fail(Error.InvalidArgument, f"{fn}: weight out_ch ({ko}) != out_ch ({o})")
    if len(stride) != 2 or len(padding) != 2 or len(dilation) != 2 or len(out_pad) != 2:
        raise RuntimeFailure(Error.InvalidArgument, f"{fn}: stride/padding/output_padding/dilation need 2 values")
    if scratch.nbytes == 0 or (stride[0] <= 2 and stride[1] <= 2 and c > 16 and out_scratch.nbytes == 0):
        _fail(Error.Internal, f"{fn}: arm_transpose_conv_wrapper_s8 failed with status {ARG_ERROR}")
    if kc != c:
        _fail(Error.Internal, f"{fn}: arm_transpose_conv_wrapper_s8 failed with status {ARG_ERROR}")
    bv = _raw32(ctx, bias)[:o].astype(np.int64) if bias is not None else None
    r = transpose_conv_s8(_raw8(ctx, x)[:n * h * wd * c].reshape(n, h, wd, c),
                          _raw8(ctx, w)[:o * kh * kw * c].reshape(o, kh, kw, c), bv, (oh, ow, o), stride, padding,
                          in_off, out_off, _raw32(ctx, mt)[:o].astype(np.int64),
                          _raw32(ctx, st)[:o].astype(np.int64), amin, amax)
    _store8(ctx, out, r, "quantized_transpose_conv2d", n * h * wd * c * kh * kw * o)
    return out


def quantized_transpose_conv2d(ctx, args):
    """``cortex_m::quantized_transpose_conv2d.out`` (arm_transpose_conv_wrapper_s8; weight ``[O, KH, KW, I]``)."""
    return _transpose_conv_impl(ctx, args, nhwc_logical=False)


def quantized_transpose_conv2d_nhwc(ctx, args):
    """``cortex_m::quantized_transpose_conv2d_nhwc.out`` (explicit-layout variant)."""
    return _transpose_conv_impl(ctx, args, nhwc_logical=True)


# ------------------------------------------------------------------------------------------------ pooling
def _pool_config(ctx, fn: str, x: RtTensor, out: RtTensor, kernel, stride, padding, dilation, ceil_mode: bool,
                 amin: int, amax: int, nhwc_logical: bool, allow_ceil: bool):
    """``prepare_cmsis_pool2d_config``: checks, then (N, H, W, C), (OH, OW), kernel, stride, padding."""
    if len(x.sizes) != 4 or len(out.sizes) != 4:
        _fail(Error.InvalidArgument, f"{fn}: tensors must be 4-D")
    if not (_is_i8(x) and _is_i8(out)):
        _fail(Error.InvalidArgument, f"{fn}: tensors must be int8")
    cd = 3 if nhwc_logical else 1
    if x.sizes[0] != out.sizes[0] or x.sizes[cd] != out.sizes[cd]:
        _fail(Error.InvalidArgument, f"{fn}: batch and channel dimensions must match between input and output")
    if nhwc_logical:
        if not (_contiguous(x) and _contiguous(out)):
            _fail(Error.InvalidArgument, f"{fn}: tensors must use contiguous dimension order")
    elif not (_channels_last(x) and _channels_last(out)):
        _fail(Error.InvalidArgument, f"{fn}: tensors must use channels_last dimension order")
    for name, v in (("kernel_size", kernel), ("stride", stride), ("padding", padding), ("dilation", dilation)):
        if len(v) != 2:
            _fail(Error.InvalidArgument, f"{fn}: {name} must have length 2")
    if ceil_mode and not allow_ceil:
        _fail(Error.InvalidArgument, f"{fn}: ceil_mode=True is not supported")
    if amin > amax:
        _fail(Error.InvalidArgument, f"{fn}: activation_min ({amin}) must be <= activation_max ({amax})")
    for name, v in (("activation_min", amin), ("activation_max", amax)):
        if not I32_MIN <= v <= I32_MAX:
            _fail(Error.InvalidArgument, f"{fn}: {name} value ({v}) exceeds int32_t range")
    if dilation[0] != 1 or dilation[1] != 1:
        _fail(Error.InvalidArgument, f"{fn}: dilation other than 1 is unsupported")
    n, h, w, c = _nhwc_sizes(x, nhwc_logical)
    _, oh, ow, _ = _nhwc_sizes(out, nhwc_logical)
    return (n, h, w, c), (oh, ow)


def avgpool_s8(xv, kernel, stride, padding, out_hw, amin, amax):
    """``arm_avgpool_s8``: x (N, H, W, C) int8 -> ((N, OH, OW, C) int8, elements read)."""
    n, h, w, c = xv.shape
    oh, ow = out_hw
    y0 = np.maximum(np.arange(oh) * stride[0] - padding[0], 0)
    y1 = np.minimum(np.arange(oh) * stride[0] - padding[0] + kernel[0], h)
    x0 = np.maximum(np.arange(ow) * stride[1] - padding[1], 0)
    x1 = np.minimum(np.arange(ow) * stride[1] - padding[1] + kernel[1], w)
    count = np.maximum(y1 - y0, 0)[:, None] * np.maximum(x1 - x0, 0)[None, :]
    if n < 1 or (count <= 0).any():
        raise _CmsisStatus(ARG_ERROR)
    integral = np.zeros((n, h + 1, w + 1, c), dtype=np.int64)
    integral[:, 1:, 1:, :] = xv.astype(np.int64).cumsum(axis=1).cumsum(axis=2)
    y0c, y1c = np.clip(y0, 0, h), np.clip(y1, 0, h)
    x0c, x1c = np.clip(x0, 0, w), np.clip(x1, 0, w)
    s = (integral[:, y1c][:, :, x1c] - integral[:, y0c][:, :, x1c]
         - integral[:, y1c][:, :, x0c] + integral[:, y0c][:, :, x0c])
    s = wrap32(s)
    cnt = count[None, :, :, None]
    half = cnt // 2
    num = np.where(s > 0, s + half, s - half)
    q = np.sign(num) * (np.abs(num) // cnt)  # C division truncates toward zero
    return _to_i8(np.minimum(np.maximum(q, amin), amax)), int(count.sum()) * n * c


def max_pool_s8(xv, kernel, stride, padding, out_hw, amin, amax, stale=None):
    """``arm_max_pool_s8``: the maximum over each window clipped to the input; an empty window leaves the output
    byte as it was (``stale``); then the clamp with ``(int8_t)`` bounds, as the MVE ``clamp_output`` does."""
    n, h, w, c = xv.shape
    oh, ow = out_hw
    sentinel = np.int16(-1000)
    xp = np.concatenate([xv.astype(np.int16), np.full((n, 1, w, c), sentinel, dtype=np.int16)], axis=1)
    xp = np.concatenate([xp, np.full((n, h + 1, 1, c), sentinel, dtype=np.int16)], axis=2)
    th = _window_taps(h, oh, kernel[0], stride[0], padding[0], 1)
    tw = _window_taps(w, ow, kernel[1], stride[1], padding[1], 1)
    th = np.where(th < 0, h, th)
    tw = np.where(tw < 0, w, tw)
    res = np.full((n, oh, ow, c), sentinel, dtype=np.int16)
    for i in range(kernel[0]):
        rows = xp[:, th[:, i], :, :]
        for j in range(kernel[1]):
            np.maximum(res, rows[:, :, tw[:, j], :], out=res)
    if stale is None:
        stale = np.zeros((n, oh, ow, c), dtype=np.int8)
    res = np.where(res == sentinel, stale.astype(np.int16), res)
    lo, hi = int(_to_i8(amin)), int(_to_i8(amax))
    return np.minimum(np.maximum(res, lo), hi).astype(np.int8)


def _avg_pool_impl(ctx, args, nhwc_logical: bool):
    fn = "quantized_avg_pool2d_out"
    _nargs(args, 9, "quantized_avg_pool2d")
    x, out = _t(args[0], "input"), out_tensor(args)
    kernel, stride, padding = ctx.int_list(args[1]), ctx.int_list(args[2]), ctx.int_list(args[3])
    ceil_mode = _bool(args[4], "ceil_mode")
    (n, h, w, c), (oh, ow) = _pool_config(ctx, fn, x, out, kernel, stride, padding, [1, 1], ceil_mode, -128, 127,
                                          nhwc_logical, allow_ceil=True)

    def expected(inp, k, s, p):
        num = inp + 2 * p - k
        o = int(np.trunc(num / s)) + 1 if s else 0
        if ceil_mode and int(np.fmod(num, s)) != 0:
            o += 1
        if ceil_mode and (o - 1) * s >= inp + p:
            o -= 1
        return o

    if stride[0] == 0 or stride[1] == 0:
        raise RuntimeFailure(Error.InvalidArgument, f"{fn}: zero stride")
    eh, ew = expected(h, kernel[0], stride[0], padding[0]), expected(w, kernel[1], stride[1], padding[1])
    if (oh, ow) != (eh, ew):
        _fail(Error.InvalidArgument, f"{fn}: output shape mismatch - actual: ({oh}, {ow}) expected: ({eh}, {ew})")
    try:
        q, reads = avgpool_s8(_raw8(ctx, x)[:n * h * w * c].reshape(n, h, w, c), kernel, stride, padding, (oh, ow),
                              -128, 127)
    except _CmsisStatus as e:
        _fail(Error.Internal, f"{fn}: arm_avgpool_s8 failed with status [{e.status}]")
    _store8(ctx, out, q, "quantized_avg_pool2d", reads)
    return out


def quantized_avg_pool2d(ctx, args):
    """``cortex_m::quantized_avg_pool2d.out`` (arm_avgpool_s8; the qparams are not used by the kernel)."""
    return _avg_pool_impl(ctx, args, nhwc_logical=False)


def quantized_avg_pool2d_nhwc(ctx, args):
    """``cortex_m::quantized_avg_pool2d_nhwc.out`` (explicit-layout variant)."""
    return _avg_pool_impl(ctx, args, nhwc_logical=True)


def _max_pool_impl(ctx, args, nhwc_logical: bool):
    fn = "quantized_max_pool2d_out"
    _nargs(args, 10, "quantized_max_pool2d")
    x, out = _t(args[0], "input"), out_tensor(args)
    kernel, stride = ctx.int_list(args[1]), ctx.int_list(args[2])
    padding, dilation = ctx.int_list(args[3]), ctx.int_list(args[4])
    ceil_mode = _bool(args[5], "ceil_mode")
    in_zp, out_zp = _int(args[6], "input_zero_point"), _int(args[7], "output_zero_point")
    amin, amax = _int(args[8], "activation_min"), _int(args[9], "activation_max")
    (n, h, w, c), (oh, ow) = _pool_config(ctx, fn, x, out, kernel, stride, padding, dilation, ceil_mode, amin, amax,
                                          nhwc_logical, allow_ceil=False)
    for name, zp in (("input zero point", in_zp), ("output zero point", out_zp)):
        if not -128 <= zp <= 127:
            _fail(Error.InvalidArgument, f"{fn}: {name} must be int8, got {zp}")
    if in_zp != out_zp:
        _fail(Error.InvalidArgument, f"{fn}: input and output zero points must match")
    if n < 1:
        _fail(Error.Internal, f"{fn}: arm_max_pool_s8 failed with status {ARG_ERROR}")
    stale = _raw8(ctx, out)[:n * oh * ow * c].reshape(n, oh, ow, c)
    res = max_pool_s8(_raw8(ctx, x)[:n * h * w * c].reshape(n, h, w, c), kernel, stride, padding, (oh, ow), amin, amax,
                      stale)
    _store8(ctx, out, res, "quantized_max_pool2d", n * oh * ow * c * kernel[0] * kernel[1])
    return out


def quantized_max_pool2d(ctx, args):
    """``cortex_m::quantized_max_pool2d.out`` (arm_max_pool_s8)."""
    return _max_pool_impl(ctx, args, nhwc_logical=False)


def quantized_max_pool2d_nhwc(ctx, args):
    """``cortex_m::quantized_max_pool2d_nhwc.out`` (explicit-layout variant)."""
    return _max_pool_impl(ctx, args, nhwc_logical=True)


CORTEX_M_KERNELS = {
    "cortex_m::quantized_add.out": quantized_add,
    "cortex_m::quantized_mul.out": quantized_mul,
    "cortex_m::quantized_div.out": quantized_div,
    "cortex_m::quantized_activation.out": quantized_activation,
    "cortex_m::minimum.out": minimum,
    "cortex_m::maximum.out": maximum,
    "cortex_m::quantized_linear.out": quantized_linear,
    "cortex_m::quantized_batch_matmul.out": quantized_batch_matmul,
    "cortex_m::softmax.out": softmax,
    "cortex_m::transpose.out": transpose,
    "cortex_m::pad.out": pad,
    "cortex_m::quantized_conv2d.out": quantized_conv2d,
    "cortex_m::quantized_conv2d_nhwc.out": quantized_conv2d_nhwc,
    "cortex_m::quantized_depthwise_conv2d.out": quantized_depthwise_conv2d,
    "cortex_m::quantized_depthwise_conv2d_nhwc.out": quantized_depthwise_conv2d_nhwc,
    "cortex_m::quantized_transpose_conv2d.out": quantized_transpose_conv2d,
    "cortex_m::quantized_transpose_conv2d_nhwc.out": quantized_transpose_conv2d_nhwc,
    "cortex_m::quantized_avg_pool2d.out": quantized_avg_pool2d,
    "cortex_m::quantized_avg_pool2d_nhwc.out": quantized_avg_pool2d_nhwc,
    "cortex_m::quantized_max_pool2d.out": quantized_max_pool2d,
    "cortex_m::quantized_max_pool2d_nhwc.out": quantized_max_pool2d_nhwc,
}
