"""UNIDIRECTIONAL_SEQUENCE_LSTM, SVDF and DIV against TFLite Micro's own interpreter (``tflm_oracle.npz``: PyPI
``tflite-micro``, ``make_tflm_oracle.py``), every model invoked three times on one interpreter so the variable
tensors' state is compared after each invocation; the variable tensors' allocation and reset; the Prepare
refusals."""

from __future__ import annotations

import ctypes
import ctypes.util
from pathlib import Path

import numpy as np
import pytest

from harness import MemBus, run_cpu_invocations
from models_stateful import INVOCATIONS, MODELS, m_lstm, m_svdf
from tflite_builder import Op, T, build

from firmware.tflm.interpreter import Interpreter, InterpreterError
from firmware.tflm.model import load_model

ORACLE = np.load(Path(__file__).with_name("tflm_oracle.npz"))


def _invocations(name):
    ins, outs = [], []
    for n in range(INVOCATIONS):
        ins.append([ORACLE[k] for k in sorted(ORACLE.files) if k.startswith(f"{name}/{n}/in")])
        outs.append([ORACLE[k] for k in sorted(ORACLE.files) if k.startswith(f"{name}/{n}/out")])
    return ins, outs


def _div_outside_contract(data, ins):
    """Where TFLM's int8 DIV shifts by more than 31 (``RoundingDivideByPOT`` past its contract: |x1 - zp1| so
    small that headroom - recip_shift - shift > 31): a DCHECK in debug builds, an undefined shift in release ones
    (the x86 build the oracle ran wraps the count mod 32; an Arm ASR fills with the sign). The firmware divides
    exactly there (the rounded quotient); elsewhere it must equal TFLM."""
    from firmware import fixedpoint as fx
    from firmware.tflm.kernels.div import count_leading_sign_bits

    m = load_model(data)
    t1, t2, to = (m.tensors[i] for i in (*m.operators[0].inputs, *m.operators[0].outputs))
    f32 = np.float32
    _, shift = fx.quantize_multiplier(float(f32(t1.params_scale) / f32(f32(t2.params_scale) * f32(to.params_scale))))
    a, b = np.broadcast_arrays(ins[0].astype(np.int64) - t1.params_zero_point,
                               ins[1].astype(np.int64) - t2.params_zero_point)
    a, b = np.where(b < 0, -a, a), np.abs(b)
    recip = np.vectorize(lambda v: fx.get_reciprocal(int(v), 31)[1])(b)
    return count_leading_sign_bits(a) + recip - shift > 31


@pytest.mark.parametrize("name", sorted(MODELS))
def test_matches_tflite_micro_over_invocations(name):
    ins, want = _invocations(name)
    data = MODELS[name]()
    got = run_cpu_invocations(data, ins)
    for n, (g_list, w_list) in enumerate(zip(got, want)):
        for g, w in zip(g_list, w_list):
            assert g.dtype == w.dtype and g.shape == w.shape
            if w.dtype.kind == "f":  # bit for bit: the oracle's expf/tanhf are the C library's, as the firmware's
                assert np.array_equal(g.view(np.uint32), w.view(np.uint32)), \
                    f"{name} invocation {n}: {np.count_nonzero(g.view(np.uint32) != w.view(np.uint32))} differ"
                continue
            keep = ~_div_outside_contract(data, ins[n]) if name.startswith("div_int8") else np.ones(w.shape, bool)
            assert np.array_equal(g[keep], w[keep]), f"{name} invocation {n}: {np.count_nonzero(g != w)} differ"


def test_int8_div_outside_tflm_contract_divides_exactly():
    """x1 - zp1 in {-1, 0, 1} over a divisor of 119: TFLM's x86 build gives -128, 3, 127 (its shift by 33 wraps to
    1); the quotients are -0.084, 0, 0.084 output steps from the zero point 2, so the firmware gives 2."""
    data = MODELS["div_int8"]()
    a = np.full((2, 3, 4), 3, np.int8)
    a.flat[:3] = [2, 3, 4]
    b = np.full((2, 3, 4), 112, np.int8)
    ins = [a, b]
    assert _div_outside_contract(data, ins).ravel()[:3].all()
    (got,), = run_cpu_invocations(data, [ins])
    assert got.ravel()[:3].tolist() == [2, 2, 2]


def _c_float_fn(name):
    lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
    return lambda v: np.float32(fn(float(v)))


def _float_lstm_by_formula(model, data, xs, clip):
    """TFLite Micro's float LSTM written out scalar by scalar in its order (``LstmStep``): per step the forget,
    input, cell and output gates, each FC(x_t) (products summed in float32 from 0 in input order, then the bias) +
    FC(h) (no bias), through ``reference_ops::Logistic`` (1 above 16.619047, expf(x) below -9, else
    1 / (1 + expf(-x))) or ``std::tanh`` (tanhf); c = f * c, then + i * g, clipped; h = tanhf(c) * o. The state
    carries over the invocations. expf/tanhf are the C library's, called one float at a time."""
    expf, tanhf = _c_float_fn("expf"), _c_float_fn("tanhf")
    f32 = np.float32

    def const(k):
        t = model.tensors[model.operators[0].inputs[k]]
        return np.frombuffer(data, np.float32, t.numel, t.data_offset).reshape(t.shape)

    def sigmoid(v):
        if v > f32(16.619047164916992188):
            return f32(1.0)
        return expf(v) if v < f32(-9.0) else f32(f32(1.0) / f32(f32(1.0) + expf(-v)))

    def fc(w, v, b=None):
        out = []
        for row in range(w.shape[0]):
            total = f32(0.0)
            for k in range(w.shape[1]):
                total = f32(total + f32(v[k] * w[row, k]))
            out.append(f32(total + b[row]) if b is not None else total)
        return out

    gates = {"f": (2, 6, 13, sigmoid), "i": (1, 5, 12, sigmoid), "g": (3, 7, 14, tanhf), "o": (4, 8, 15, sigmoid)}
    n_state = const(5).shape[0]
    h, c, outs = [f32(0.0)] * n_state, [f32(0.0)] * n_state, []
    for x in xs:
        y = []
        for x_t in x.reshape(-1, x.shape[-1]):
            g = {}
            for name, (wi, wr, b, act) in gates.items():
                pre = [f32(a + r) for a, r in zip(fc(const(wi), x_t, const(b)), fc(const(wr), h))]
                g[name] = [act(v) for v in pre]
            c = [f32(f32(g["f"][j] * c[j]) + f32(g["i"][j] * g["g"][j])) for j in range(n_state)]
            c = [min(max(v, f32(-clip)), f32(clip)) for v in c] if clip > 0 else c
            h = [f32(tanhf(c[j]) * g["o"][j]) for j in range(n_state)]
            y.append(h)
        outs.append(np.array(y, np.float32).reshape(x.shape[:-1] + (n_state,)))
    return outs


@pytest.mark.parametrize("clip", [0.0, 0.25])
def test_float_lstm_is_tflite_micros_formula_bit_for_bit(clip):
    """The float LSTM against its formula (above) on three invocations of a 7-step model whose sigmoid inputs span
    both logistic cut-offs (of the 378, 30 below -9 and 5 above 16.62 without the clip), with and without a biting
    cell clip."""
    r = np.random.default_rng(7)
    data = m_lstm("float32", steps=7, n_in=5, n_state=6, clip=clip, seed=11)
    model = load_model(data)
    xs = [(r.standard_normal((1, 7, 5)) * 8).astype(np.float32) for _ in range(3)]
    got = [g[0] for g in run_cpu_invocations(data, [[x] for x in xs])]
    want = _float_lstm_by_formula(model, data, xs, clip)
    for n, (g, w) in enumerate(zip(got, want)):
        assert np.array_equal(g.view(np.uint32), w.view(np.uint32)), f"invocation {n}"


def test_state_changes_the_second_invocation():
    """The oracle's own evidence that the state carries: the same input twice gives two different outputs."""
    data = m_lstm()
    x = [np.full((1, 5, 6), 40, np.int8)]
    first, second = run_cpu_invocations(data, [x, x])
    assert not np.array_equal(first[0], second[0])


def _interp(data, arena=1 << 16):
    model = load_model(data)
    arena_at = (len(data) + 15) // 16 * 16
    bus = MemBus(arena_at + arena)
    bus.mem[:len(data)] = np.frombuffer(data, np.uint8)
    return Interpreter(bus, model, 0, arena_at, arena), bus, model


def test_variable_tensors_live_in_the_tail_and_reset_to_the_zero_point():
    interp, bus, model = _interp(m_svdf("int8", rank=1, n_unit=4))
    state = next(t for t in model.tensors if t.is_variable)
    interp.allocate_tensors()
    addr = interp.addresses[state.index]
    end = interp.arena_address + interp.arena_size
    assert interp.arena_address + interp.head <= addr < end  # not in the planned head
    assert (bus.mem[addr:addr + state.nbytes] == 2).all()  # int8 state, zero point 2
    bus.mem[addr:addr + state.nbytes] = 99
    interp.reset_variables()
    assert (bus.mem[addr:addr + state.nbytes] == 2).all()
    lstm, bus, model = _interp(m_lstm())
    lstm.allocate_tensors()
    cell = next(t for t in model.tensors if t.is_variable and t.type_name == "INT16")
    hidden = next(t for t in model.tensors if t.is_variable and t.type_name == "INT8")
    assert (bus.mem[lstm.addresses[cell.index]:][:cell.nbytes] == 0).all()  # int16: 0 whatever the zero point
    assert (bus.mem[lstm.addresses[hidden.index]:][:hidden.nbytes] == 3).all()  # int8 hidden state, zero point 3


def _lstm_refused(**change):
    data = m_lstm(**change)
    interp, _, _ = _interp(data)
    with pytest.raises(InterpreterError) as e:
        interp.allocate_tensors()
    return e.value.lines[0]


def test_lstm_prepare_refusals():
    assert "cell gate activation 1 is not TANH" in _lstm_refused(cell_act=1)


def test_svdf_without_a_variable_state_is_refused():
    r = np.random.default_rng(0)
    ts = [T("x", [1, 4], "float32"), T("wf", [2, 4], "float32", r.standard_normal((2, 4)).astype(np.float32)),
          T("wt", [2, 3], "float32", r.standard_normal((2, 3)).astype(np.float32)),
          T("b", [2], "float32", np.zeros(2, np.float32)), T("s", [1, 6], "float32"), T("y", [1, 2], "float32")]
    data = build(ts, [Op("SVDF", ["x", "wf", "wt", "b", "s"], ["y"], ("SVDFOptions", {"Rank": 1}))], ["x"], ["y"])
    interp, _, _ = _interp(data)
    with pytest.raises(InterpreterError) as e:
        interp.allocate_tensors()
    assert "must be a variable tensor" in e.value.lines[0]


def test_int8_div_by_the_zero_point_stops_the_run():
    data = MODELS["div_int8"]()
    ins = [np.zeros((2, 3, 4), np.int8), np.full((2, 3, 4), -7, np.int8)]  # the divisor's zero point is -7
    interp, _, model = _interp(data)
    interp.allocate_tensors()
    for ti, x in zip(model.inputs, ins):
        interp.array(ti)[...] = x
    with pytest.raises(InterpreterError) as e:
        interp.invoke()
    assert "division by zero" in e.value.lines[0]
