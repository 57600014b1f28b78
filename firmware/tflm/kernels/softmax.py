"""SOFTMAX int8 -> int8, int8 -> int16, int16 -> int16 and float32.

int8 input: TFLM ``softmax_common.cc`` ``CalculateSoftmaxParams`` (an int8 output needs zero point -128 and scale
exactly 1/256, an int16 output zero point -32768 and a scale within 0.1% of 1/65536;
``PreprocessSoftmaxScaling(beta, s_in, 5)``: multiplier = min(beta * s_in * 2^26, 2^31 - 1),
``QuantizeMultiplierGreaterThanOne``; diff_min = -floor((2^5 - 1) * 2^26 / 2^left_shift)) and
``reference_ops::Softmax<int8_t, OutputT>``: per row, diff = x - max; where diff >= diff_min the rescaled
difference (``MultiplyByQuantizedMultiplierGreaterThanOne``) as Q5.26 goes through gemmlowp's
``exp_on_negative_values``; the sum of exps in Q12.19 (``Rescale<12>``); ``GetReciprocal``; exponent =
num_bits_over_unit + 31 - bits(OutputT) (TFLITE_CHECK 0..31: a row whose exps sum to 2^9 or more aborts an int8
output, in TFLM as in TFLite); output = ``RoundingDivideByPOT(scale * exp, exponent)`` + the type's minimum,
clamped; below diff_min: the type's minimum.

int16 -> int16: the zero points must be 0 and the output scale within 0.1% of 1/32768. Prepare fills two
513-entry tables with ``LUTPopulate<int16_t>`` (``kernels/internal/common.h``, float arithmetic): exp on [-10, 0]
and 1 / (1 + x) on [0, 1], each sampled at 512 steps with the half-step correction (the sample minus half the
rounded midpoint error); the input multiplier is ``QuantizeMultiplier(s_in * beta / (10 / 65535))``.
``reference_ops::SoftmaxInt16``: per row, (x - max) through ``MultiplyByQuantizedMultiplier``, + 32767,
saturated, looked up in the exp table (``LUTLookup``: 9-bit index, 7-bit linear interpolation); the int32 sum
normalised by its leading zeros to Q1.14 and recentred, looked up in the 1 / (1 + x) table; each output
(exp * reciprocal + round) >> (31 - leading zeros), clamped to [0, 32767]. The tables use ``std::exp`` in float:
here the C library's ``expf`` (``libm.py``: both tables equal those of TFLM's own ``LUTPopulate`` built with
glibc). A compiler that contracts ``input_min + i * step`` into a fused multiply-add could build other tables; that
is not modelled.

float32: ``reference_ops::Softmax`` (max, ``expf``((x - max) * beta) in float (the C library's, ``libm.py``: numpy's
float32 exp differs from glibc's in the last place), the sum accumulated in float in order, then each exp / sum).
"""

from __future__ import annotations

import math

import numpy as np

from ... import fixedpoint as fx
from . import register
from .activations import expf
from .common import TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, Prepared, ensure

SCALED_DIFF_INTEGER_BITS = 5
ACCUMULATION_INTEGER_BITS = 12


class KernelCheckFailed(Exception):
    """A TFLITE_CHECK inside a kernel's Eval failed (the C++ aborts)."""


def softmax_params(beta: float, input_scale: float) -> tuple[int, int, int]:
    """(input_multiplier, input_left_shift, diff_min) of ``CalculateSoftmaxParams`` for int8."""
    real = min(float(beta) * float(input_scale) * (1 << (31 - SCALED_DIFF_INTEGER_BITS)), float((1 << 31) - 1.0))
    mult, left_shift = fx.quantize_multiplier_greater_than_one(real)
    max_input_rescaled = (1.0 * ((1 << SCALED_DIFF_INTEGER_BITS) - 1) * (1 << (31 - SCALED_DIFF_INTEGER_BITS))
                          / (1 << left_shift))
    diff_min = -1 * int(math.floor(max_input_rescaled))
    return mult, left_shift, diff_min


def softmax_int8_rows(x: np.ndarray, mult: int, left_shift: int, diff_min: int, out_dtype=np.int8) -> np.ndarray:
    """The reference softmax over the last axis of int8 ``x`` (int8 or int16 out)."""
    rows = x.reshape(-1, x.shape[-1]).astype(np.int64)
    info = np.iinfo(out_dtype)
    bits = info.bits
    out = np.empty(rows.shape, out_dtype)
    for r, row in enumerate(rows):
        diff = row - row.max()
        ok = diff >= diff_min
        scaled = fx.mbqm_greater_than_one(diff, mult, left_shift)
        exps = fx.exp_on_negative_values(scaled, SCALED_DIFF_INTEGER_BITS)
        acc = fx.rescale(exps, 0, ACCUMULATION_INTEGER_BITS)
        total = 0
        for v, good in zip(acc.tolist(), ok.tolist()):
            if good:
                total = int(fx.wrap32(total + v))
        shifted_scale, num_bits_over_unit = fx.get_reciprocal(total, ACCUMULATION_INTEGER_BITS)
        exponent = num_bits_over_unit + 31 - bits
        if not 0 <= exponent <= 31:
            raise KernelCheckFailed(f"TFLITE_CHECK(0 <= exponent && exponent <= 31) failed: exponent {exponent} "
                                    f"(the row's exps sum to 2^{num_bits_over_unit} or more)")
        unsat = fx.rdbp(fx.srdhm(shifted_scale, exps), exponent)
        res = np.clip(unsat + info.min, info.min, info.max)
        out[r] = np.where(ok, res, info.min).astype(out_dtype)
    return out.reshape(x.shape)


# ----------------------------------------------------------------------------------------------- int16

LUT_STEPS = 512  # LUTPopulateInt16's nb_steps; 513 entries


def lut_populate_int16(input_scale, input_zp: int, output_scale, output_zp: int, fn) -> np.ndarray:
    """``LUTPopulateInt16<float>``: ``fn`` maps float32 arrays to float32; every step in float32 as in C++."""
    f = np.float32
    input_min = f(input_scale) * f(-32768 - input_zp)
    input_max = f(input_scale) * f(32767 - input_zp)
    output_min = f(output_scale) * f(-32768 - output_zp)
    output_max = f(output_scale) * f(32767 - output_zp)
    step = f(input_max - input_min) / f(LUT_STEPS)
    half_step = f(step / f(2))
    inv = f(65536) / f(output_max - output_min)
    i = np.arange(LUT_STEPS, dtype=np.float32)
    at = (input_min + i * step).astype(np.float32)
    val = fn(at)
    val_mid = fn((at + half_step).astype(np.float32))
    val_next = fn((input_min + (i + f(1)) * step).astype(np.float32))
    rnd = fx.round_half_away_f32
    sample = rnd(val * inv)
    mid_interp = rnd(((val_next * inv).astype(np.float32) + rnd(val * inv)) / f(2))
    mid = rnd(val_mid * inv)
    bias = rnd((mid_interp - mid).astype(np.float32) / f(2))
    lut = np.empty(LUT_STEPS + 1, np.int64)
    lut[:LUT_STEPS] = np.clip(sample - bias, -32768, 32767).astype(np.int64)
    last = rnd(fn(np.array([input_max], np.float32)) * inv)
    lut[LUT_STEPS] = int(np.clip(last, -32768, 32767)[0])
    return lut


_RANGE16 = np.float32(65535)  # numeric_limits<int16_t>::max() - min()
EXP_LUT = lut_populate_int16(np.float32(10.0) / _RANGE16, 32767, np.float32(2.0) / _RANGE16, 0, expf)
ONE_OVER_ONE_PLUS_X_LUT = lut_populate_int16(
    np.float32(1.0) / _RANGE16, -32768, np.float32(2.0) / _RANGE16, 0,
    lambda v: (np.float32(1.0) / (np.float32(1.0) + v)).astype(np.float32))


def lut_lookup_int16(value, lut: np.ndarray) -> np.ndarray:
    """``LUTLookup(int16_t, const int16_t*)``: base at the top 9 bits, slope times the low 7 bits, rounded."""
    v = np.asarray(value, dtype=np.int64)
    index = 256 + (v >> 7)
    offset = v & 0x7F
    base = lut[index]
    slope = fx.wrap16(lut[index + 1] - base)
    return fx.wrap16(base + ((slope * offset + 64) >> 7))


def softmax_int16_params(beta: float, input_scale: float) -> tuple[int, int]:
    return fx.quantize_multiplier(float(np.float64(np.float32(input_scale))) * float(beta) / (10.0 / 65535.0))


def softmax_int16_rows(x: np.ndarray, mult: int, shift: int) -> np.ndarray:
    rows = x.reshape(-1, x.shape[-1]).astype(np.int64)
    diff = rows - rows.max(axis=1, keepdims=True)
    scaled = fx.mbqm(diff, mult, shift)
    exps = lut_lookup_int16(np.clip(scaled + 32767, -32768, 32767), EXP_LUT)
    total = fx.wrap32(exps.sum(axis=1, keepdims=True))
    hpo = np.array([[fx.count_leading_zeros32(int(t))] for t in total.reshape(-1)], np.int64).reshape(total.shape)
    shifted = ((total << (hpo - 1)) + (1 << 13)) >> 14
    sym = np.clip(shifted - ((1 << 15) + (1 << 16)), -32768, 32767)
    recip = lut_lookup_int16(sym, ONE_OVER_ONE_PLUS_X_LUT)
    right = 31 - hpo
    res = fx.wrap32((exps * recip + (np.int64(1) << (right - 1))) >> right)
    return np.clip(res, 0, 32767).astype(np.int16).reshape(x.shape)


def softmax_float_rows(x: np.ndarray, beta: float) -> np.ndarray:
    rows = x.reshape(-1, x.shape[-1]).astype(np.float32)
    out = np.empty(rows.shape, np.float32)
    b = np.float32(beta)
    for r, row in enumerate(rows):
        e = expf((row - row.max()) * b)
        total = np.float32(0)
        for v in e:
            total = np.float32(total + v)
        out[r] = e / total
    return out.reshape(x.shape)


@register("SOFTMAX")
def prepare_softmax(ctx, op):
    ti, to = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    ensure(len(ti.shape) >= 1, "SOFTMAX input needs at least one dimension")
    beta = float(np.float32(op.options.Beta())) if op.options is not None else 1.0
    n = max(to.numel, 1)
    if ti.type == TYPE_FLOAT32:
        ensure(to.type == TYPE_FLOAT32, "SOFTMAX float input needs a float output")

        def run(ins, outs):
            outs[0][...] = softmax_float_rows(ins[0], beta)
        return Prepared(run, ("kernel.softmax", n))
    ensure((ti.type, to.type) in ((TYPE_INT8, TYPE_INT8), (TYPE_INT8, TYPE_INT16), (TYPE_INT16, TYPE_INT16)),
           f"SOFTMAX {ti.type_name} -> {to.type_name} not supported (int8 -> int8/int16, int16 -> int16 and "
           f"float32 are)")
    if ti.type == TYPE_INT16:
        ensure(ti.params_zero_point == 0, f"SOFTMAX: input->params.zero_point == 0 (it is {ti.params_zero_point})")
        ensure(to.params_zero_point == 0, f"SOFTMAX: output->params.zero_point == 0 (it is {to.params_zero_point})")
        _ensure_near(to, 1.0 / 32768)
        mult16, shift16 = softmax_int16_params(beta, ti.params_scale)

        def run16(ins, outs):
            outs[0][...] = softmax_int16_rows(ins[0], mult16, shift16)
        return Prepared(run16, ("kernel.softmax", n), persistent=2 * 2 * (LUT_STEPS + 1))
    if to.type == TYPE_INT16:
        ensure(to.params_zero_point == -32768, f"SOFTMAX: output->params.zero_point == -32768 "
                                               f"(it is {to.params_zero_point})")
        _ensure_near(to, 1.0 / 65536)
    else:
        ensure(to.params_zero_point == -128, f"SOFTMAX: output->params.zero_point == -128 "
                                             f"(it is {to.params_zero_point})")
        ensure(np.float32(to.params_scale) == np.float32(1.0 / 256), f"SOFTMAX: output->params.scale == 1.f / 256 "
                                                                       f"(it is {to.params_scale!r})")
    mult, left_shift, diff_min = softmax_params(beta, float(np.float64(np.float32(ti.params_scale))))
    out_dtype = to.dtype

    def run(ins, outs):
        outs[0][...] = softmax_int8_rows(ins[0], mult, left_shift, diff_min, out_dtype)
    return Prepared(run, ("kernel.softmax", n))


def _ensure_near(to, want: float) -> None:
    """``TF_LITE_ENSURE_NEAR(output->params.scale, want, 0.001f * want)`` in float."""
    f = np.float32
    ensure(abs(f(to.params_scale) - f(want)) <= f(f(0.001) * f(want)),
           f"SOFTMAX: output scale {to.params_scale!r} is not within 0.1% of {want!r}")
