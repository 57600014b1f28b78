"""UNIDIRECTIONAL_SEQUENCE_LSTM as TFLite Micro's kernel (``unidirectional_sequence_lstm.cc``, ``lstm_eval.h``,
``lstm_eval.cc``, ``lstm_eval_common.cc``, ``lstm_shared.h``).

Only the standard LSTM TFLM runs: 24 inputs; the input-to-gate and recurrent weights of all four gates (inputs 1-8)
of one type, the four gate biases (12-15) of one type, no peephole (9-11), projection (16-17) or layer-norm
(20-23) tensors; the output state (18) and cell state (19) variable tensors; the output of the input's type, its
last dimension the state size. Types: int8 activations x int8 weights -> int16 cell state with int32 biases,
int16 x int8 -> int16 with int64 biases, float32 throughout.

Prepare (``PrepareGateParametersInteger``): each gate's two fully connected products write int16 at scale 2^-12
(zero point 0): the input one with the multiplier of double(float(s_in * s_w)) / 2^-12 and the input's zero point,
the recurrent one with the output state's scale and zero point; the three inter-gate products
(``CreateInterGateMulParams``: double(s1) * double(s2) / double(s_out), ``QuantizeMultiplier``): forget x cell
(2^-15, s_cell -> s_cell), input x cell gate (2^-15, 2^-15 -> s_cell), tanh(cell) x output gate (2^-15, 2^-15 ->
the output state's scale and zero point); the cell clip quantized as int16(clamp(clip / s_cell)) (truncated);
the cell scale's power of two (``CheckedLog2``, the tanh input shift). Four scratch buffers of batch x state
cell-state elements.

Eval, per time step (batch-major: each batch's steps in turn with its own state row; time-major: all batches in
one step): for the forget, input and cell gates, FC(x_t) + FC(h) (saturating int16 add) through the int16
``Logistic`` (the cell gate through the int16 ``Tanh`` of Q3.12, input shift 0: the options' activation, which
must be TANH); c = sat16(MulElementwise(f, c) + MulElementwise(i, g)), clipped to +-clip when the clip is positive;
the output gate likewise; h = MulElementwise(Tanh_{cell power}(c), o) (``Tanh(power)``: input left shift 15 +
power - 3, or multiplier 3 with the negated shift when that is negative); the output row at t is h. The fully
connected products are ``reference_integer_ops::FullyConnected`` (per tensor: (w - zp_w) * (x - zp_x) summed, +
bias, ``MultiplyByQuantizedMultiplier`` (its int64 overload for the 16x8 variant), clamped to int16). The float
variant runs the same steps with ``reference_ops`` float kernels (products summed in float32 in input order, bias
added after, ``Logistic``, ``std::tanh``, the clip), with the C library's ``expf`` and ``tanhf`` (``libm.py``: tanh
in double rounded to float32 differs from glibc's tanhf in the last place often enough to change most outputs of
a 28-step LSTM).

The state tensors are the model's variable tensors: they persist across invocations and are reset as TFLM resets
them (the interpreter: zero, or the zero point for int8) at AllocateTensors.
"""

from __future__ import annotations

import numpy as np

from ... import fixedpoint as fx
from . import register
from .activations import logistic_float, logistic_int16, tanh_int16, tanhf
from .common import TYPE_FLOAT32, TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_INT64, Prepared, ensure

N_INPUTS = 24
INPUT, STATE_OUT, CELL = 0, 18, 19
IN_WEIGHTS = {"input": 1, "forget": 2, "cell": 3, "output": 4}
REC_WEIGHTS = {"input": 5, "forget": 6, "cell": 7, "output": 8}
BIASES = {"input": 12, "forget": 13, "cell": 14, "output": 15}
ABSENT = (9, 10, 11, 16, 17, 20, 21, 22, 23)  # peephole, projection, layer norm: TFLM supports none
ACT_TANH, ACT_SIGMOID = 4, 6  # TfLiteFusedActivation (kTfLiteActSigmoid has no schema value: the gates' own)
GATE_INPUT_SCALE = 2.0 ** -12  # Q3.12: the gates' fully connected outputs
GATE_OUTPUT_SCALE = 2.0 ** -15  # Q0.15: the gates' nonlinear outputs
OP_DATA_BYTES = 400  # sizeof(OpDataLSTM) on a 32-bit core (size info, cell info, 4 x 2 FC params, 3 mul params)
I16_MIN, I16_MAX = -32768, 32767


def _fc_params(x_t, w_t, n: int):
    """A gate FC's (multiplier, shift, input zero point): ``CalculateOpDataFullyConnected`` towards an int16 output
    at 2^-12 (``GetQuantizedConvolutionMultipler``: the scale product in float, then double)."""
    ensure(w_t.scale.size <= 1, "UNIDIRECTIONAL_SEQUENCE_LSTM: per-channel weights are not supported by TFLite "
                                "Micro's LSTM (its gate products are per tensor)")
    prod = float(np.float64(np.float32(x_t.params_scale) * np.float32(w_t.params_scale)))
    ensure(prod >= 0, "UNIDIRECTIONAL_SEQUENCE_LSTM: negative scale product")
    m, s = fx.quantize_multiplier(prod / GATE_INPUT_SCALE)
    return m, s, x_t.params_zero_point, w_t.params_zero_point


def _mul_params(s1: float, s2: float, so: float, zo: int = 0):
    m, s = fx.quantize_multiplier(float(np.float64(np.float32(s1))) * float(np.float64(np.float32(s2)))
                                  / float(np.float64(np.float32(so))))
    return m, s, zo


def _check(ctx, op):
    """``LstmTensors::ValidateTensorStatus`` and ``ValidateTensorSize``; returns the tensors by input index."""
    ensure(len(op.outputs) == 1, "UNIDIRECTIONAL_SEQUENCE_LSTM: node->outputs->size != 1")
    ensure(len(op.inputs) == N_INPUTS, f"UNIDIRECTIONAL_SEQUENCE_LSTM: node->inputs->size {len(op.inputs)} != 24")
    t = {i: (ctx.tensor(k) if k >= 0 else None) for i, k in enumerate(op.inputs)}
    out = ctx.tensor(op.outputs[0])
    x, h, c = t[INPUT], t[STATE_OUT], t[CELL]
    ensure(x is not None, "UNIDIRECTIONAL_SEQUENCE_LSTM: the input is missing")
    ensure(h is not None and h.is_variable, "UNIDIRECTIONAL_SEQUENCE_LSTM: the output state (input 18) must be a "
                                            "variable tensor")
    ensure(h.type == x.type, f"UNIDIRECTIONAL_SEQUENCE_LSTM: output state {h.type_name} != input {x.type_name}")
    ensure(c is not None and c.is_variable, "UNIDIRECTIONAL_SEQUENCE_LSTM: the cell state (input 19) must be a "
                                            "variable tensor")
    ensure(out.type == x.type, f"UNIDIRECTIONAL_SEQUENCE_LSTM: output {out.type_name} != input {x.type_name}")
    wtype = t[2].type if t[2] is not None else None
    for i in range(1, 9):
        ensure(t[i] is not None, f"UNIDIRECTIONAL_SEQUENCE_LSTM: input {i} (a gate weight) is missing (CIFG is not "
                                 f"supported by TFLite Micro)")
        ensure(t[i].type == wtype, f"UNIDIRECTIONAL_SEQUENCE_LSTM: weight {i} is {t[i].type_name}, not "
                                   f"{t[2].type_name}")
    btype = t[13].type if t[13] is not None else None
    for i in range(12, 16):
        ensure(t[i] is not None, f"UNIDIRECTIONAL_SEQUENCE_LSTM: gate bias {i} is missing")
        ensure(t[i].type == btype, f"UNIDIRECTIONAL_SEQUENCE_LSTM: bias {i} is {t[i].type_name}, not "
                                   f"{t[13].type_name}")
    for i in ABSENT:
        ensure(t[i] is None, f"UNIDIRECTIONAL_SEQUENCE_LSTM: input {i} (peephole, projection or layer norm) is "
                             f"not supported by TFLite Micro")
    return t, out


@register("UNIDIRECTIONAL_SEQUENCE_LSTM")
def prepare_lstm(ctx, op):
    t, out = _check(ctx, op)
    o = op.options
    ensure(o is not None, "UNIDIRECTIONAL_SEQUENCE_LSTM: no options")
    time_major = bool(o.TimeMajor())
    x, h, c = t[INPUT], t[STATE_OUT], t[CELL]
    ensure(len(x.shape) == 3, f"UNIDIRECTIONAL_SEQUENCE_LSTM: input {list(x.shape)} is not 3-D")
    ensure(len(h.shape) >= 2, f"UNIDIRECTIONAL_SEQUENCE_LSTM: output state {list(h.shape)} is not 2-D")
    batch, steps = (x.shape[1], x.shape[0]) if time_major else (x.shape[0], x.shape[1])
    n_in, n_state = x.shape[2], h.shape[1]
    for i in range(1, 5):
        ensure(t[i].shape == (n_state, n_in), f"UNIDIRECTIONAL_SEQUENCE_LSTM: weight {i} {list(t[i].shape)} is not "
                                              f"[{n_state}, {n_in}]")
    for i in range(5, 9):
        ensure(t[i].shape == (n_state, n_state), f"UNIDIRECTIONAL_SEQUENCE_LSTM: recurrent weight {i} "
                                                 f"{list(t[i].shape)} is not [{n_state}, {n_state}]")
    for i in range(12, 16):
        ensure(t[i].shape == (n_state,), f"UNIDIRECTIONAL_SEQUENCE_LSTM: bias {i} {list(t[i].shape)} is not "
                                         f"[{n_state}]")
    ensure(h.numel == batch * n_state and c.numel == batch * n_state,
           f"UNIDIRECTIONAL_SEQUENCE_LSTM: the states hold {h.numel} and {c.numel} elements, not {batch} x {n_state}")
    ensure(len(out.shape) == 3 and out.shape[:2] == x.shape[:2] and out.shape[2] == n_state,
           f"UNIDIRECTIONAL_SEQUENCE_LSTM: output {list(out.shape)} does not match the input {list(x.shape)} and the "
           f"state size {n_state}")
    cell_act = int(o.FusedActivationFunction())
    # CalculateLstmGate takes sigmoid or tanh (TFLITE_ASSERT_FALSE otherwise); the schema can express only tanh
    ensure(cell_act == ACT_TANH, f"UNIDIRECTIONAL_SEQUENCE_LSTM: cell gate activation {cell_act} is not TANH "
                                 f"(TFLite Micro asserts)")
    weights = {k: ctx.const(op.inputs[k]) for k in list(range(1, 9)) + list(range(12, 16))}
    for k, w in weights.items():
        ensure(w is not None, f"UNIDIRECTIONAL_SEQUENCE_LSTM: input {k} must be constant")
    geometry = (time_major, batch, steps, n_in, n_state)
    scratch = [batch * n_state * (4 if c.type == TYPE_FLOAT32 else 2)] * 4
    macs = steps * batch * 4 * n_state * (n_in + n_state)
    if c.type == TYPE_FLOAT32:
        ensure(x.type == TYPE_FLOAT32 and t[2].type == TYPE_FLOAT32 and t[13].type == TYPE_FLOAT32,
               f"UNIDIRECTIONAL_SEQUENCE_LSTM: float cell state with {x.type_name} input and {t[2].type_name} weights")
        run = _float_run(weights, geometry, cell_act, float(np.float32(o.CellClip())))
        return Prepared(run, ("kernel.fully_connected_f32", macs), scratch=scratch, persistent=OP_DATA_BYTES)
    ensure(c.type == TYPE_INT16, f"Cell state type {c.type_name} ({c.type}) not supported. The quantized "
                                 f"Unidirectional Sequence LSTM Op only support int16 cell state")
    if x.type == TYPE_INT8:
        ensure(t[2].type == TYPE_INT8, f"Filter type {t[2].type_name} ({x.type}) not supported.")
        ensure(t[13].type == TYPE_INT32, f"UNIDIRECTIONAL_SEQUENCE_LSTM: int8 needs int32 biases "
                                         f"({t[13].type_name} given)")
    elif x.type == TYPE_INT16:
        ensure(t[2].type == TYPE_INT8, f"Filter type {t[2].type_name} ({t[2].type}) not supported.")
        ensure(t[13].type == TYPE_INT64, f"UNIDIRECTIONAL_SEQUENCE_LSTM: 16x8 needs int64 biases "
                                         f"({t[13].type_name} given)")
    else:
        ensure(False, f"Input type {x.type_name} ({x.type}) not supported.")
    gates = {}
    for g in ("forget", "input", "cell", "output"):
        gates[g] = (_fc_params(x, t[IN_WEIGHTS[g]], n_in), _fc_params(h, t[REC_WEIGHTS[g]], n_state))
    s_cell = float(np.float32(c.params_scale))
    _, power = fx.checked_log2(s_cell)  # the kernel ignores whether it is exact
    clip = float(np.float32(o.CellClip()))
    qclip = int(min(max(float(np.float64(np.float32(clip))) / float(np.float64(s_cell)), -32768.0), 32767.0))
    muls = {"forget_cell": _mul_params(GATE_OUTPUT_SCALE, s_cell, s_cell),
            "input_cell": _mul_params(GATE_OUTPUT_SCALE, GATE_OUTPUT_SCALE, s_cell),
            "output": _mul_params(GATE_OUTPUT_SCALE, GATE_OUTPUT_SCALE, h.params_scale, h.params_zero_point)}
    qrange = (-128, 127) if h.type == TYPE_INT8 else (I16_MIN, I16_MAX)
    run = _integer_run(weights, geometry, cell_act, gates, muls, clip, qclip, int(power), qrange,
                       wide=(x.type == TYPE_INT16))
    return Prepared(run, ("kernel.quantized_linear", macs), scratch=scratch, persistent=OP_DATA_BYTES)


def _tanh_state(cell, power: int) -> np.ndarray:
    """``lstm_internal::Tanh(cell_state_scale_power, ...)`` on int16 values."""
    shift = (15 + power) - 3
    multiplier = 0
    if shift < 0:
        shift, multiplier = -shift, 3
    return tanh_int16(cell, multiplier, shift).astype(np.int64)


def _step_slices(geometry):
    """(input rows, state rows) per step, in the kernel's order: the input as [steps x batch-or-1, n_in] rows."""
    time_major, batch, steps, _, _ = geometry
    if time_major:
        return [(slice(t * batch, (t + 1) * batch), slice(0, batch)) for t in range(steps)]
    return [(slice(b * steps + t, b * steps + t + 1), slice(b, b + 1)) for b in range(batch) for t in range(steps)]


def _steps(geometry, cell_act, gate, new_cell, new_hidden, dtype):
    """The Eval both variants share (``EvalLstm``/``LstmStep``): per step the forget, input and cell gates from
    x_t and the old hidden state, the new cell state, the output gate, the new hidden state, which is also the
    step's output row. ``gate(name, x, hidden, activation)``, ``new_cell(f, i, g, c)``, ``new_hidden(c, o)``."""
    _, _, _, n_in, n_state = geometry

    def run(ins, outs):
        x_all = ins[INPUT].reshape(-1, n_in)
        h_var, c_var = ins[STATE_OUT].reshape(-1, n_state), ins[CELL].reshape(-1, n_state)
        out = outs[0].reshape(-1, n_state)
        for rows, st in _step_slices(geometry):
            x, hidden = x_all[rows].astype(dtype), h_var[st].astype(dtype)
            f = gate("forget", x, hidden, ACT_SIGMOID)
            i = gate("input", x, hidden, ACT_SIGMOID)
            g = gate("cell", x, hidden, cell_act)
            cell = new_cell(f, i, g, c_var[st].astype(dtype))
            c_var[st] = cell
            h_var[st] = out[rows] = new_hidden(cell, gate("output", x, hidden, ACT_SIGMOID))
    return run


def _integer_run(weights, geometry, cell_act, gates, muls, clip, qclip, power, qrange, wide: bool):
    w = {k: v.astype(np.int64) for k, v in weights.items()}
    requant = fx.mbqm64 if wide else (lambda acc, m, s: fx.mbqm(fx.wrap32(acc), m, s))

    def fc(x, wk, bias, params):
        m, s, zx, zw = params
        acc = (x - zx) @ (w[wk] - zw).T
        if bias is not None:
            acc = acc + w[bias]
        return np.clip(requant(acc, m, s), I16_MIN, I16_MAX)

    def gate(g, x, hidden, act):
        p_in, p_rec = gates[g]
        pre = np.clip(fc(x, IN_WEIGHTS[g], BIASES[g], p_in) + fc(hidden, REC_WEIGHTS[g], None, p_rec),
                      I16_MIN, I16_MAX)  # AddElementWise saturates
        if act == ACT_SIGMOID:
            return logistic_int16(pre, 0, 0).astype(np.int64)
        return tanh_int16(pre, 0, 0).astype(np.int64)  # Tanh(-12): Q3.12, input shift 0

    def mul(a, b, params, lo=I16_MIN, hi=I16_MAX):
        m, s, zo = params
        return np.clip(fx.mbqm(a * b, m, s) + zo, lo, hi)

    def new_cell(f, i, g, c):
        cell = np.clip(mul(f, c, muls["forget_cell"]) + mul(i, g, muls["input_cell"]), I16_MIN, I16_MAX)
        return np.clip(cell, -qclip, qclip) if clip > 0 else cell

    return _steps(geometry, cell_act, gate, new_cell,
                  lambda c, o: mul(_tanh_state(c, power), o, muls["output"], *qrange), np.int64)


def _float_fc(x, w, bias):
    """``reference_ops::FullyConnected`` (float): the products summed in float32 in input order, then the bias."""
    acc = np.zeros((x.shape[0], w.shape[0]), np.float32)
    for k in range(w.shape[1]):
        acc += x[:, k:k + 1] * w[:, k]
    return acc + bias if bias is not None else acc


def _float_run(weights, geometry, cell_act, clip: float):
    w = {k: v.astype(np.float32) for k, v in weights.items()}

    def gate(g, x, hidden, act):
        pre = _float_fc(x, w[IN_WEIGHTS[g]], w[BIASES[g]]) + _float_fc(hidden, w[REC_WEIGHTS[g]], None)
        return logistic_float(pre) if act == ACT_SIGMOID else tanhf(pre)

    def new_cell(f, i, g, c):
        cell = (f * c + i * g).astype(np.float32)
        return np.clip(cell, np.float32(-clip), np.float32(clip)) if clip > 0 else cell

    return _steps(geometry, cell_act, gate, new_cell, lambda c, o: (tanhf(c) * o).astype(np.float32), np.float32)
