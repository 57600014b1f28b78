"""UNIDIRECTIONAL_SEQUENCE_LSTM, SVDF and DIV against TFLite Micro's own interpreter (``tflm_oracle.npz``: PyPI
``tflite-micro``, ``make_tflm_oracle.py``), every model invoked three times on one interpreter so the variable
tensors' state is compared after each invocation; the variable tensors' allocation and reset; the Prepare
refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness import MemBus, run_cpu_invocations
from models_stateful import INVOCATIONS, MODELS, m_lstm, m_svdf
from tflite_builder import Op, T, build

from firmware.tflm.interpreter import Interpreter, InterpreterError
from firmware.tflm.model import load_model

ORACLE = np.load(Path(__file__).with_name("tflm_oracle.npz"))
# float paths: TFLM's libm expf/tanhf against exp/tanh in double rounded to float32, over 5 recurrent steps
FLOAT_RTOL, FLOAT_ATOL = 2e-6, 1e-7


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
            if w.dtype.kind == "f":
                assert np.allclose(g, w, rtol=FLOAT_RTOL, atol=FLOAT_ATOL), f"{name} invocation {n}"
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
