"""Kernel test models whose oracle is TFLite Micro's own interpreter (``tflm_oracle.npz``, made by
``make_tflm_oracle.py`` with PyPI ``tflite-micro``): UNIDIRECTIONAL_SEQUENCE_LSTM and SVDF (variable tensors: every
model is invoked ``INVOCATIONS`` times on one interpreter, so the state carried between invocations is checked),
DIV (int8 is TFLite Micro's own arithmetic; LiteRT's reference kernel has no int8 DIV), SPLIT_V and QUANTIZE
between uint8 and int8 (what the real models of issue 31 carry)."""

from __future__ import annotations

import numpy as np

from tflite_builder import Op, T, build

INVOCATIONS = 3
ABSENT = -1


def _q(name, shape, scale, zp, dtype="int8", **kw):
    return T(name, shape, dtype, scale=[scale], zero_point=[zp], **kw)


def m_lstm(kind="int8", batch=1, steps=5, n_in=6, n_state=4, time_major=False, clip=10.0, cell_act=4,
           hidden_zp=3, cell_log2=-11, seed=31):
    """A Keras-shaped LSTM: 4 gates, no peephole/projection/layer norm; ``kind`` int8 (int8 x int8 -> int16 cell,
    int32 biases), 16x8 (int16 activations, int64 biases) or float32."""
    r = np.random.default_rng(seed)
    xshape = [steps, batch, n_in] if time_major else [batch, steps, n_in]
    oshape = [steps, batch, n_state] if time_major else [batch, steps, n_state]
    ts = []
    if kind == "float32":
        ts.append(T("x", xshape, "float32"))
        for g in "ifco":
            w = r.standard_normal((n_state, n_in)).astype(np.float32) * .4
            ts.append(T(f"w_{g}", [n_state, n_in], "float32", w))
        for g in "ifco":
            ts.append(T(f"r_{g}", [n_state, n_state], "float32",
                        r.standard_normal((n_state, n_state)).astype(np.float32) * .4))
        for g in "ifco":
            ts.append(T(f"b_{g}", [n_state], "float32", r.standard_normal(n_state).astype(np.float32) * .2))
        ts += [T("h", [batch, n_state], "float32", variable=True), T("c", [batch, n_state], "float32", variable=True),
               T("y", oshape, "float32")]
    else:
        act = "int8" if kind == "int8" else "int16"
        s_in, z_in = (1 / 64, -5) if kind == "int8" else (1 / 4096, 0)
        s_h, z_h = (1 / 128, hidden_zp) if kind == "int8" else (1 / 16384, 0)
        ts.append(_q("x", xshape, s_in, z_in, act))
        bias_t = "int32" if kind == "int8" else "int64"
        for g, sw in zip("ifco", (0.011, 0.009, 0.013, 0.010)):
            ts.append(T(f"w_{g}", [n_state, n_in], "int8", r.integers(-127, 128, (n_state, n_in), dtype=np.int8),
                        [sw], [0]))
        for g, sw in zip("ifco", (0.007, 0.012, 0.008, 0.006)):
            ts.append(T(f"r_{g}", [n_state, n_state], "int8",
                        r.integers(-127, 128, (n_state, n_state), dtype=np.int8), [sw], [0]))
        for g, sw in zip("ifco", (0.011, 0.009, 0.013, 0.010)):
            ts.append(T(f"b_{g}", [n_state], bias_t, r.integers(-3000, 3000, n_state).astype(bias_t),
                        [s_in * sw], [0]))
        ts += [_q("h", [batch, n_state], s_h, z_h, act, variable=True),
               _q("c", [batch, n_state], 2.0 ** cell_log2, 0, "int16", variable=True), _q("y", oshape, s_h, z_h, act)]
    inputs = ["x", "w_i", "w_f", "w_c", "w_o", "r_i", "r_f", "r_c", "r_o", ABSENT, ABSENT, ABSENT,
              "b_i", "b_f", "b_c", "b_o", ABSENT, ABSENT, "h", "c", ABSENT, ABSENT, ABSENT, ABSENT]
    opts = ("UnidirectionalSequenceLSTMOptions", {"FusedActivationFunction": cell_act, "CellClip": clip,
                                                  "ProjClip": 0.0, "TimeMajor": time_major})
    return build(ts, [Op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, ["y"], opts)], ["x"], ["y"])


def m_svdf(kind="int16", batch=2, n_in=7, n_unit=3, rank=2, n_memory=5, seed=32):
    """SVDF int8 with an int16 (or int8) state and time weights, or float32."""
    r = np.random.default_rng(seed)
    n_filter = n_unit * rank
    if kind == "float32":
        ts = [T("x", [batch, n_in], "float32"),
              T("wf", [n_filter, n_in], "float32", r.standard_normal((n_filter, n_in)).astype(np.float32)),
              T("wt", [n_filter, n_memory], "float32", r.standard_normal((n_filter, n_memory)).astype(np.float32)),
              T("b", [n_unit], "float32", r.standard_normal(n_unit).astype(np.float32)),
              T("s", [batch, n_memory * n_filter], "float32", variable=True), T("y", [batch, n_unit], "float32")]
        act = 1
    else:
        st = "int16" if kind == "int16" else "int8"
        s_in, s_wf, s_state, s_wt = np.float32(0.05), np.float32(0.01), np.float32(0.004 if st == "int16" else 0.3), \
            np.float32(0.003 if st == "int16" else 0.02)
        hi = 32767 if st == "int16" else 127
        ts = [_q("x", [batch, n_in], float(s_in), -3),
              T("wf", [n_filter, n_in], "int8", r.integers(-127, 128, (n_filter, n_in), dtype=np.int8), [float(s_wf)],
                [0]),
              T("wt", [n_filter, n_memory], st, r.integers(-hi, hi + 1, (n_filter, n_memory)).astype(st),
                [float(s_wt)], [0]),
              T("b", [n_unit], "int32", r.integers(-20000, 20000, n_unit).astype(np.int32),
                [float(np.float32(s_state * s_wt))], [0]),
              _q("s", [batch, n_memory * n_filter], float(s_state), 2 if st == "int8" else 0, st, variable=True),
              _q("y", [batch, n_unit], 0.2, 5)]
        act = 1  # TFLM's integer SVDF ignores the fused activation
    return build(ts, [Op("SVDF", ["x", "wf", "wt", "b", "s"], ["y"],
                         ("SVDFOptions", {"Rank": rank, "FusedActivationFunction": act}))], ["x"], ["y"])


def m_div(kind="int8", shape1=(2, 3, 4), shape2=(2, 3, 4), act=0):
    if kind == "int8":
        ts = [_q("a", list(shape1), 0.1, 3), _q("b", list(shape2), 0.05, -7), _q("y", list(np.broadcast_shapes(
            shape1, shape2)), 0.2, 2)]
    else:
        ts = [T("a", list(shape1), kind), T("b", list(shape2), kind), T("y", list(np.broadcast_shapes(shape1, shape2)),
                                                                          kind)]
    return build(ts, [Op("DIV", ["a", "b"], ["y"], ("DivOptions", {"FusedActivationFunction": act}))], ["a", "b"],
                 ["y"])


def m_split_v(dtype="float32", shape=(2, 7, 3), sizes=(2, 4, 1), axis=1):
    outs = [T(f"y{i}", [s if d == axis % len(shape) else n for d, n in enumerate(shape)], dtype,
              **({"scale": [0.1], "zero_point": [3]} if dtype == "int8" else {})) for i, s in enumerate(sizes)]
    ts = [T("x", list(shape), dtype, **({"scale": [0.1], "zero_point": [3]} if dtype == "int8" else {})),
          T("s", [len(sizes)], "int32", np.array([-1 if i == 0 else s for i, s in enumerate(sizes)], np.int32)),
          T("a", [1], "int32", np.array([axis], np.int32)), *outs]
    names = [o.name for o in outs]
    return build(ts, [Op("SPLIT_V", ["x", "s", "a"], names, ("SplitVOptions", {"NumSplits": len(sizes)}))], ["x"],
                 names)


def m_quantize(src="uint8", dst="int8", s_in=0.05, z_in=128, s_out=0.05, z_out=0):
    return build([_q("x", [1, 6, 5], s_in, z_in, src), _q("y", [1, 6, 5], s_out, z_out, dst)],
                 [Op("QUANTIZE", ["x"], ["y"])], ["x"], ["y"])


MODELS = {
    "lstm_int8": m_lstm, "lstm_int8_time_major_b2": lambda: m_lstm(batch=2, time_major=True, hidden_zp=-4),
    "lstm_int8_batches": lambda: m_lstm(batch=3, steps=4, n_in=5, n_state=7, cell_log2=-12),
    "lstm_int8_no_clip": lambda: m_lstm(clip=0.0, cell_log2=-9, seed=3),
    "lstm_16x8": lambda: m_lstm("int16"), "lstm_16x8_time_major": lambda: m_lstm("int16", batch=2, time_major=True),
    "lstm_f32": lambda: m_lstm("float32"),
    "svdf_int16": m_svdf, "svdf_int8_state": lambda: m_svdf("int8", rank=1, n_unit=4),
    "svdf_f32": lambda: m_svdf("float32"),
    "div_int8": m_div, "div_int8_broadcast_relu": lambda: m_div("int8", (2, 1, 4), (3, 1), act=1),
    "div_f32": lambda: m_div("float32", (3, 5), (5,)), "div_int32": lambda: m_div("int32", (4, 6), (4, 6)),
    "split_v_f32": m_split_v, "split_v_int8_last_axis": lambda: m_split_v("int8", (3, 10), (3, 5, 2), -1),
    "quantize_uint8_int8": m_quantize, "quantize_uint8_int8_rescale": lambda: m_quantize(s_in=0.02, z_in=100,
                                                                                          s_out=0.07, z_out=-5),
    "quantize_int8_uint8": lambda: m_quantize("int8", "uint8", 0.03, -10, 0.05, 128),
}


def inputs_for(data: bytes, seed: int = 0) -> list:
    """Seeded inputs: ints over the whole range (DIV divisors never equal their zero point), floats normal."""
    from firmware.tflm.model import load_model

    m = load_model(data)
    r = np.random.default_rng(seed)
    out = []
    for k, ti in enumerate(m.inputs):
        t = m.tensors[ti]
        dt = np.dtype(t.dtype)
        if dt.kind == "f":
            x = r.standard_normal(t.shape).astype(dt)
            if k == 1 and m.operators[0].op_name == "DIV":
                x = np.where(np.abs(x) < 0.1, np.float32(0.5), x).astype(dt)
        else:
            info = np.iinfo(dt)
            lo, hi = (info.min, info.max) if dt.itemsize < 4 else (-1000, 1000)
            x = r.integers(lo, hi, t.shape, dtype=dt, endpoint=True)
            if k == 1 and m.operators[0].op_name == "DIV":
                zp = t.params_zero_point
                x = np.where(x == zp, zp + 1, x).astype(dt)
        out.append(x)
    return out
