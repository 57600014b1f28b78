"""SOFTMAX int8 -> int8 and float32.

int8: TFLM ``softmax_common.cc`` ``CalculateSoftmaxParams`` (output zero point -128 and scale exactly 1/256
are required; ``PreprocessSoftmaxScaling(beta, s_in, 5)``: multiplier = min(beta * s_in * 2^26, 2^31 - 1),
``QuantizeMultiplierGreaterThanOne``; diff_min = -floor((2^5 - 1) * 2^26 / 2^left_shift)) and
``reference_ops::Softmax<int8_t, int8_t>``: per row, diff = x - max; where diff >= diff_min the rescaled
difference (``MultiplyByQuantizedMultiplierGreaterThanOne``) as Q5.26 goes through gemmlowp's
``exp_on_negative_values``; the sum of exps in Q12.19 (``Rescale<12>``); ``GetReciprocal``; exponent =
num_bits_over_unit + 31 - 8 (TFLITE_CHECK 0..31: a row whose exps sum to 2^9 or more aborts, in TFLM as in
TFLite); output = ``RoundingDivideByPOT(scale * exp, exponent)`` - 128 clamped; below diff_min: -128.

float32: ``reference_ops::Softmax`` (max, exp((x - max) * beta) in float, the sum accumulated in float in
order, then each exp / sum).
"""

from __future__ import annotations

import math

import numpy as np

from .. import fixedpoint as fx
from . import register
from .common import TYPE_FLOAT32, TYPE_INT8, Prepared, ensure

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


def softmax_int8_rows(x: np.ndarray, mult: int, left_shift: int, diff_min: int) -> np.ndarray:
    """The reference int8 softmax over the last axis of ``x`` (int8 in, int8 out)."""
    rows = x.reshape(-1, x.shape[-1]).astype(np.int64)
    out = np.empty(rows.shape, np.int8)
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
        exponent = num_bits_over_unit + 31 - 8
        if not 0 <= exponent <= 31:
            raise KernelCheckFailed(f"TFLITE_CHECK(0 <= exponent && exponent <= 31) failed: exponent {exponent} "
                                    f"(the row's exps sum to 2^{num_bits_over_unit} or more)")
        unsat = fx.rdbp(fx.srdhm(shifted_scale, exps), exponent)
        res = np.clip(unsat - 128, -128, 127)
        out[r] = np.where(ok, res, -128).astype(np.int8)
    return out.reshape(x.shape)


def softmax_float_rows(x: np.ndarray, beta: float) -> np.ndarray:
    rows = x.reshape(-1, x.shape[-1]).astype(np.float32)
    out = np.empty(rows.shape, np.float32)
    b = np.float32(beta)
    for r, row in enumerate(rows):
        e = np.exp((row - row.max()) * b).astype(np.float32)
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
    ensure(ti.type == TYPE_INT8 and to.type == TYPE_INT8,
           f"SOFTMAX {ti.type_name} -> {to.type_name} not supported (int8 -> int8 and float32 are)")
    ensure(to.params_zero_point == -128, f"output->params.zero_point == -128 (it is {to.params_zero_point})")
    ensure(np.float32(to.params_scale) == np.float32(1.0 / 256), f"output->params.scale == 1.f / 256 "
                                                                   f"(it is {to.params_scale!r})")
    mult, left_shift, diff_min = softmax_params(beta, float(np.float64(np.float32(ti.params_scale))))

    def run(ins, outs):
        outs[0][...] = softmax_int8_rows(ins[0], mult, left_shift, diff_min)
    return Prepared(run, ("kernel.softmax", n))
