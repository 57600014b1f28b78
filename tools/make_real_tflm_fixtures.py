#!/usr/bin/env python3
"""Make the fixtures of ``tests/data/tflm/real/``: small int8 models made here, compiled by Vela as users compile
theirs (MLEK's configurations, Vela's older core), with TFLite Micro's own interpreter as the oracle.

Nothing is fetched: every model is built from seeded numbers by this script.

- ``tiny_int8``: a Keras CNN (CONV_2D, DEPTHWISE_CONV_2D, MAX_POOL_2D, FULLY_CONNECTED) through the TFLite
  converter (``tools/make_tflm_models.py``'s ``build_source``: seeded He-normal weights, full-integer
  post-training quantization with a seeded representative dataset, int8 input and output);
- ``softmax_int8``: CONV_2D, FULLY_CONNECTED and an int8 SOFTMAX, the same way;
- ``lstm_int8``: an LSTM (``return_sequences``) and a FULLY_CONNECTED through the converter, which emits
  UNIDIRECTIONAL_SEQUENCE_LSTM with two variable tensors (its state). The graph is ``tf_keras``' (Keras 2): the
  converter fuses that LSTM (its ``keras_lstm`` function annotation); Keras 3's LSTM reaches the converter as a
  loop over resource variables, which its calibrator cannot run;
- ``svdf_int8``: the converter emits no SVDF, so this model is written with the project's TFLite builder
  (``tests/firmware/tflm/tflite_builder.py``): SVDF, FULLY_CONNECTED, SVDF, FULLY_CONNECTED (RELU), SVDF (int8
  state), FULLY_CONNECTED, SOFTMAX; seeded float weights, quantized by hand from a float pass of the same graph in
  numpy over seeded calibration inputs, each from a zero state as the fixture runs (int8 activations asymmetric
  over the range seen, weights symmetric per tensor, the state symmetric, SVDF bias scale = state scale x
  time-weight scale as TFLite Micro requires); its outputs are the last SVDF's and the SOFTMAX's.

Each fixture is the source compiled by Vela (``fvp/host/programs/vela.py``: ``--accelerator-config``,
``--system-config``, ``--memory-mode`` and the configuration's flags, ``tools/validate_real_models.py``
``CONFIGS``; ``--config`` Vela's own ``vela.ini``), or the source itself (``lstm_int8``). Two seeded inputs over
each input type's whole range, and the outputs of TFLite Micro's interpreter (PyPI ``tflite-micro``, one fresh
interpreter per input: variable tensors start as AllocateTensors leaves them) on the SOURCE model.

Writes ``<out>/<fixture>.tflite``, ``<out>/expected.npz`` (``<fixture>/<k>/in<i>``, ``<fixture>/<k>/out<i>``) and
``<out>/fixtures.json`` (per fixture: the source, how it was made, its seed, its SHA-256 and operators, the Vela
flags, what the compiled file records, and ``expect``: ``exact``, or ``xfail`` with the reason; ``_tools``: the
versions). The sources go to ``--work``.

Needs TensorFlow, tf_keras, tflite-micro and ethos-u-vela (tools extras, never needed by the tests)::

    python -m venv /tmp/v --system-site-packages
    /tmp/v/bin/pip install tensorflow==2.21.0 tf_keras==2.21.0 tflite-micro ethos-u-vela==5.2.0
    /tmp/v/bin/python tools/make_real_tflm_fixtures.py [--out tests/data/tflm/real] [--work DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tools"), str(ROOT / "tests" / "firmware" / "tflm")]

from validate_real_models import CONFIGS, make_inputs, model_io, tflm_oracle  # noqa: E402

# fixture -> (source, configuration or None for the source itself, expect)
FIXTURES = {
    **{f"tiny_int8_{c}": ("tiny_int8", c, "exact") for c in ("u55-64", "u55-256", "u65-256", "u65-512", "u85-256")},
    "softmax_int8_u65-512": ("softmax_int8", "u65-512", "exact"),
    "softmax_int8_u55-128-legacy": ("softmax_int8", "u55-128-legacy", "exact"),
    "lstm_int8": ("lstm_int8", None, "exact"),
    "lstm_int8_u55-128": ("lstm_int8", "u55-128", "exact"),
    "svdf_int8_u55-128": ("svdf_int8", "u55-128", "exact"),
}
INPUT_SEEDS = (1, 2)


# ================================================================================================ Keras sources


def tiny_cnn():
    import keras

    L = keras.layers
    x = keras.Input((10, 10, 2), batch_size=1)
    y = L.Conv2D(8, 3, padding="same", activation="relu")(x)
    y = L.DepthwiseConv2D(3, strides=2, padding="same", activation="relu")(y)
    y = L.MaxPooling2D(2)(y)
    y = L.Flatten()(y)
    y = L.Dense(16)(y)
    return keras.Model(x, y)


def conv_softmax():
    import keras

    L = keras.layers
    x = keras.Input((12, 10, 1), batch_size=1)
    y = L.Conv2D(8, (5, 4), strides=2, padding="same", activation="relu")(x)
    y = L.Flatten()(y)
    y = L.Dense(10)(y)
    y = L.Softmax()(y)
    return keras.Model(x, y)


def keras_source(build, input_shape, seed) -> bytes:
    from make_tflm_models import Spec, build_source

    spec = Spec(build.__name__, build, input_shape, target="", system_config="", memory_mode="", seed=seed)
    return build_source(spec)[0]


LSTM_STEPS, LSTM_IN, LSTM_UNITS, LSTM_CLASSES = 8, 6, 12, 10


def lstm_source(seed: int) -> bytes:
    """tf_keras LSTM(12, return_sequences) -> Flatten -> Dense(10), both outputs (the LSTM's whole sequence and
    the classes): Glorot-uniform input kernels, recurrent kernels
    N(0, 1/units), forget-gate bias 1 (Keras' ``unit_forget_bias``), the rest small; converted from a concrete
    function of batch 1 (the converter's fused-LSTM path), int8 in and out."""
    import tensorflow as tf
    import tf_keras as keras

    keras.backend.clear_session()
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    L = keras.layers
    x = keras.Input((LSTM_STEPS, LSTM_IN), batch_size=1)
    lstm, dense = L.LSTM(LSTM_UNITS, return_sequences=True), L.Dense(LSTM_CLASSES)
    h = lstm(x)
    y = dense(L.Flatten()(h))
    model = keras.Model(x, [h, y])
    u = LSTM_UNITS
    lim = np.sqrt(6.0 / (LSTM_IN + 4 * u))
    bias = rng.normal(0.0, 0.1, 4 * u)
    bias[u:2 * u] += 1.0
    lstm.set_weights([rng.uniform(-lim, lim, (LSTM_IN, 4 * u)).astype(np.float32),
                      rng.normal(0.0, np.sqrt(1.0 / u), (u, 4 * u)).astype(np.float32), bias.astype(np.float32)])
    fan_in = LSTM_STEPS * u
    dense.set_weights([rng.normal(0.0, np.sqrt(2.0 / fan_in), (fan_in, LSTM_CLASSES)).astype(np.float32),
                       rng.normal(0.0, 0.1, LSTM_CLASSES).astype(np.float32)])
    calib = rng.uniform(-1.0, 1.0, (16, LSTM_STEPS, LSTM_IN)).astype(np.float32)
    fn = tf.function(lambda t: model(t)).get_concrete_function(tf.TensorSpec([1, LSTM_STEPS, LSTM_IN], tf.float32))
    conv = tf.lite.TFLiteConverter.from_concrete_functions([fn], model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([calib[i:i + 1]] for i in range(len(calib)))
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = conv.inference_output_type = tf.int8
    return bytes(conv.convert())


# ================================================================================================ SVDF by hand

# (input size, units, rank, memory, state type) of each SVDF; FULLY_CONNECTED sizes between them
SVDF_LAYERS = [(24, 16, 1, 6, "int16"), (32, 12, 2, 5, "int16"), (16, 8, 1, 4, "int8")]
SVDF_FC = [(16, 32, 0), (12, 16, 1), (8, 12, 0)]  # (in, out, fused activation: 0 NONE, 1 RELU)
SVDF_CALIB_SAMPLES = 32


def _svdf_float(x, wf, wt, b, state, rank):
    """TFLite's float SVDF for one invocation (batch 1): shift the state left, the newest slot = wf . x, per
    filter the time weights . state, per unit bias + the sum over its rank filters (activation NONE)."""
    n_filter, n_memory = wt.shape
    s = state.reshape(n_filter, n_memory)
    s[:, :-1] = s[:, 1:]
    s[:, -1] = wf @ x
    return (s * wt).sum(1).reshape(-1, rank).sum(1) + b


def _asym(lo, hi):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = float(np.float32((hi - lo) / 255.0))
    return scale, int(np.clip(round(-128 - lo / scale), -128, 127))


def _sym(w, qmax):
    scale = float(np.float32(np.abs(w).max() / qmax))
    return scale, np.clip(np.round(w / scale), -qmax, qmax)


def svdf_source(seed: int) -> bytes:
    from tflite_builder import Op, T, build

    rng = np.random.default_rng(seed)
    svdf_w, fc_w = [], []
    for n_in, units, rank, mem, _ in SVDF_LAYERS:
        nf = units * rank
        svdf_w.append((rng.normal(0, 1 / np.sqrt(n_in), (nf, n_in)), rng.normal(0, 1 / np.sqrt(mem), (nf, mem)),
                       rng.normal(0, 0.1, units)))
    for n_in, n_out, _ in SVDF_FC:
        fc_w.append((rng.normal(0, np.sqrt(2 / n_in), (n_out, n_in)), rng.normal(0, 0.1, n_out)))
    calib = rng.uniform(-1.0, 1.0, (SVDF_CALIB_SAMPLES, SVDF_LAYERS[0][0]))
    # the float graph on every calibration input from a zero state (one invocation, as the fixture's runs and its
    # oracle start): the range of every tensor
    seen: dict = {}

    def note(key, v):
        lo, hi = seen.get(key, (np.inf, -np.inf))
        seen[key] = (min(lo, float(v.min())), max(hi, float(v.max())))

    for x in calib:
        states = [np.zeros(u * r * m) for _, u, r, m, _ in SVDF_LAYERS]
        for i, ((wf, wt, b), (_, _, rank, _, _), (w, bf), (_, _, act)) in enumerate(
                zip(svdf_w, SVDF_LAYERS, fc_w, SVDF_FC)):
            x = _svdf_float(x, wf, wt, b, states[i], rank)
            note(f"state{i}", states[i])
            note(f"s{i}", x)
            x = w @ x + bf
            x = np.maximum(x, 0) if act else x
            note(f"f{i}", x)
    s_x, z_x = 1.0 / 128, 0
    ts = [T("x", [1, SVDF_LAYERS[0][0]], "int8", scale=[s_x], zero_point=[z_x])]
    ops, prev, s_prev, z_prev = [], "x", s_x, z_x
    for i, ((wf, wt, b), (n_in, units, rank, mem, st), (w, bf), (fin, fout, act)) in enumerate(
            zip(svdf_w, SVDF_LAYERS, fc_w, SVDF_FC)):
        qmax = 32767 if st == "int16" else 127
        s_state = float(np.float32(np.abs(np.array(seen[f"state{i}"])).max() / qmax))
        s_wf, q_wf = _sym(wf, 127)
        s_wt, q_wt = _sym(wt, qmax)
        s_b = float(np.float32(s_state) * np.float32(s_wt))
        s_out, z_out = _asym(*seen[f"s{i}"])
        ts += [T(f"svdf{i}_wf", list(wf.shape), "int8", q_wf, [s_wf], [0]),
               T(f"svdf{i}_wt", list(wt.shape), st, q_wt, [s_wt], [0]),
               T(f"svdf{i}_b", [units], "int32", np.round(b / s_b), [s_b], [0]),
               T(f"svdf{i}_state", [1, mem * units * rank], st, scale=[s_state], zero_point=[0], variable=True),
               T(f"svdf{i}_out", [1, units], "int8", scale=[s_out], zero_point=[z_out])]
        ops.append(Op("SVDF", [prev, f"svdf{i}_wf", f"svdf{i}_wt", f"svdf{i}_b", f"svdf{i}_state"], [f"svdf{i}_out"],
                      ("SVDFOptions", {"Rank": rank, "FusedActivationFunction": 0})))
        s_w, q_w = _sym(w, 127)
        s_fc, z_fc = _asym(*seen[f"f{i}"])
        ts += [T(f"fc{i}_w", [fout, fin], "int8", q_w, [s_w], [0]),
               T(f"fc{i}_b", [fout], "int32", np.round(bf / (s_out * s_w)), [s_out * s_w], [0]),
               T(f"fc{i}_out", [1, fout], "int8", scale=[s_fc], zero_point=[z_fc])]
        ops.append(Op("FULLY_CONNECTED", [f"svdf{i}_out", f"fc{i}_w", f"fc{i}_b"], [f"fc{i}_out"],
                      ("FullyConnectedOptions", {"FusedActivationFunction": act})))
        prev = f"fc{i}_out"
    ts.append(T("y", [1, SVDF_FC[-1][1]], "int8", scale=[1.0 / 256], zero_point=[-128]))
    ops.append(Op("SOFTMAX", [prev], ["y"], ("SoftmaxOptions", {"Beta": 1.0})))
    return build(ts, ops, ["x"], ["svdf2_out", "y"], description="svdf_int8 (tools/make_real_tflm_fixtures.py)")


SOURCES = {  # name -> (how, seed, maker)
    "tiny_int8": ("Keras CNN + TFLite converter (full-integer)", 301, lambda s: keras_source(tiny_cnn, (10, 10, 2), s)),
    "softmax_int8": ("Keras CONV/FC/SOFTMAX + TFLite converter (full-integer)", 302,
                     lambda s: keras_source(conv_softmax, (12, 10, 1), s)),
    "lstm_int8": ("tf_keras LSTM + TFLite converter (full-integer, fused UNIDIRECTIONAL_SEQUENCE_LSTM)", 303,
                  lstm_source),
    "svdf_int8": ("the project's TFLite builder, quantized by hand from a numpy float pass", 304, svdf_source),
}


# ================================================================================================ main


def op_names(data: bytes) -> list[str]:
    from firmware.tflm.model import load_model

    return [op.op_name for op in load_model(data).operators]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "tests" / "data" / "tflm" / "real"))
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "real_tflm_fixtures"),
                    help="the source models (before Vela) and Vela's outputs")
    args = ap.parse_args(argv)
    from fvp.host.programs.tflm_board import tflite_configurations
    from fvp.host.programs.vela import compile_tflite, version

    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    sources = {}
    for name, (_, seed, maker) in SOURCES.items():
        sources[name] = maker(seed)
        (work / f"{name}.tflite").write_bytes(sources[name])
        print(f"{name}: {len(sources[name])} bytes, {op_names(sources[name])}", file=sys.stderr)
    arrays, meta = {}, {}
    for name, (src_name, config, expect) in FIXTURES.items():
        source = sources[src_name]
        how, seed, _ = SOURCES[src_name]
        entry = {"source": src_name, "made_by": how, "seed": seed,
                 "source_sha256": hashlib.sha256(source).hexdigest(), "source_operators": op_names(source),
                 "expect": expect}
        if config is None:
            data = source
        else:
            accel, sc, mm, extra = CONFIGS[config]
            compiled = compile_tflite(work / f"{src_name}.tflite", work / name, accel, sc, mm, list(extra),
                                      label=name).path
            data = compiled.read_bytes()
            ops = tflite_configurations(data)
            entry.update(vela=version(), vela_flags=[accel, sc, mm, *extra], operators=op_names(data),
                         records={"targets": [o["target"] for o in ops],
                                  "memory_modes": [o["memory_mode"] for o in ops],
                                  "fast_scratch_bytes": max((o["fast_scratch"] for o in ops), default=0)})
        (out / f"{name}.tflite").write_bytes(data)
        specs_in, specs_out = model_io(source)
        for k, seed_in in enumerate(INPUT_SEEDS):
            ins = make_inputs(specs_in, seed_in)
            for i, x in enumerate(ins):
                arrays[f"{name}/{k}/in{i}"] = x
            for i, y in enumerate(tflm_oracle(source, ins, len(specs_out))):
                arrays[f"{name}/{k}/out{i}"] = y
        entry["bytes"] = len(data)
        meta[name] = entry
        print(f"{name}: {len(data)} bytes", file=sys.stderr)
    import tensorflow as tf

    meta["_tools"] = {"tensorflow": tf.__version__, "tf_keras": importlib.metadata.version("tf_keras"),
                      "keras": importlib.metadata.version("keras"), "ethos-u-vela": version(),
                      "tflite-micro": importlib.metadata.version("tflite-micro"), "input_seeds": list(INPUT_SEEDS)}
    np.savez_compressed(out / "expected.npz", **arrays)
    (out / "fixtures.json").write_text(json.dumps(meta, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
