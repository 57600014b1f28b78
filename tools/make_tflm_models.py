#!/usr/bin/env python3
"""Make the TFLite Micro fixtures of ``tests/data/tflm/`` with the real toolchain: Keras + the TFLite converter
(full-integer post-training quantization), Vela, and TFLite's reference-kernel interpreter.

What it builds (every weight and every input seeded; nothing trained):

- reconstructions of the MLEK networks whose architectures are published: MobileNetV2 1.0 224 in TF-slim's
  layout (SAME padding everywhere, 1001 classes, 1x1 logits convolution, RESHAPE, SOFTMAX: the
  ``mobilenet_v2_1.0_224_INT8`` of MLEK's img_class), KWS MicroNet-M and AD MicroNet-M (ML-zoo's
  ``kws_micronet_m.tflite`` / ``ad_medium_int8.tflite``: the layer list, kernel sizes, strides, paddings, channel
  counts and per-channel quantization read from those files, which ``--mlek DIR`` compares operator by operator
  with the reconstruction; the files themselves and their weights are never copied);
- small models for what the reconstructions do not cover: CPU operators between NPU parts (float in/out,
  RESIZE_BILINEAR x3 and AVERAGE_POOL_2D SAME 9x9, which Vela leaves on the CPU), int16 activations (16x8; int16
  LOGISTIC/TANH on every int16 input value at several input scales, for the U55's built-in SIGMOID/TANH and the
  U85's LUT_SIGMOID/LUT_TANH), the
  targets ethos-u55-64, ethos-u55-256 and ethos-u65-256 and the memory modes Sram_Only and Dedicated_Sram, each
  with the Vela system config of its family.

For each model: the Keras graph with seeded weights (He-normal kernels, batch-norm statistics set from one
forward pass over the calibration batch so that every layer sees normalised activations, as a trained network
does), the converter with a seeded representative dataset, Vela for the model's target (``--config`` the
``vela.ini`` shipped with Vela), and the reference output of TFLite's reference kernels
(``OpResolverType.BUILTIN_REF``) on the ORIGINAL (pre-Vela) model for a seeded input.

The int8 SOFTMAX trap: TFLite's reference int8 softmax aborts the process (TFLITE_CHECK on the exponent) when
a row's exps sum to 2^9 or more, which a 1001-class row can reach and a row of at most 512 cannot. For a model
ending in an int8 SOFTMAX deeper than 512 the reference is therefore the interpreter run on the model cut before
the SOFTMAX (same tensors, same quantization), then the softmax of ``firmware/tflm/kernels/softmax.py`` (the
project's port of the same reference formula); the port is checked against the interpreter, in a child process
so that an abort cannot stop the generator, on the softmax alone over the reference logits and over seeded
logit rows, and the record says how many agreed and how many aborted.

Writes ``<out>/<name>_vela.tflite`` (the Vela output the tests run), ``<out>/reference.npz`` (``<name>/in0``,
``<name>/out0``, ...) and ``<out>/models.json`` (per model: target, system config, memory mode, the ``fvp run``
arguments, operators left on the CPU, Vela's estimate, sizes, SHA-256 of the source model, the tool versions,
how the reference was made). The pre-Vela models and Vela's summaries go to ``--work``.

Needs TensorFlow and ethos-u-vela (a tools extra, never needed by the core or the tests):
  python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow ethos-u-vela==5.2.0
  /tmp/tfvenv/bin/python tools/make_tflm_models.py [--only NAME[,NAME]] [--out DIR] [--work DIR] [--mlek DIR]

Simplifies: weights are random, so weight compression (and so the command stream's size and AXI1 traffic)
differs from the trained models'; the calibration data are noise of the right range, not MFCCs or images.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "tests" / "data" / "tflm"
EXHAUSTIVE_INT16 = "every int16 value in order: numpy.arange(-32768, 32768, dtype=int16) in the input's shape"
SOFTMAX_REF_MAX_DEPTH = 512  # above this an int8 reference SOFTMAX row can abort (exps sum >= 2^9)

# Vela's system config of each family (vela.ini names; fvp/boards/vela.yaml holds their parameters)
U55_SC, U65_SC = "Ethos_U55_High_End_Embedded", "Ethos_U65_High_End"
U85_SC = "Ethos_U85_SYS_DRAM_Mid"  # ExecuTorch's default system config for the U85


@dataclass
class Spec:
    name: str
    build: object  # () -> keras.Model
    input_shape: tuple  # without the batch
    target: str
    system_config: str
    memory_mode: str
    seed: int
    quant: str = "int8"  # int8 or 16x8
    float_io: bool = False
    input_range: tuple = (-1.0, 1.0)  # the calibration and test inputs: uniform over this range
    calib_samples: int = 16
    mlek: str | None = None  # the ML-zoo file a reconstruction follows (compared with --mlek)
    published: str | None = None  # the key of tools/tflite_npu.py PUBLISHED / validate_cycles
    dropin: bool = False  # also the reference for the drop-in's inputs (MLEK's std::rand() & 0xFF bytes)
    # every int16 value as the test input (the input must hold 65536 elements), and the calibration batch's first
    # two elements set to +-input_range so that the input scale is exactly input_range[1] / 32767
    exhaustive_int16: bool = False
    notes: list = field(default_factory=list)


# ================================================================================================ Keras graphs


def _layers():
    import keras

    return keras, keras.layers


def conv_bn(x, ch, k, s=1, act=True):
    _, L = _layers()
    x = L.Conv2D(ch, k, strides=s, padding="same", use_bias=False)(x)
    x = L.BatchNormalization(momentum=0.0, epsilon=1e-3)(x)
    return L.ReLU(6.0)(x) if act else x


def dw_bn(x, s=1, k=3, act=True):
    _, L = _layers()
    x = L.DepthwiseConv2D(k, strides=s, padding="same", use_bias=False)(x)
    x = L.BatchNormalization(momentum=0.0, epsilon=1e-3)(x)
    return L.ReLU(6.0)(x) if act else x


def micronet(input_shape, first_kernel, first_ch, blocks, pool, classes):
    """ML-zoo's MicroNet layout: CONV+BN+ReLU6, then (depthwise 3x3 + BN + ReLU6, pointwise + BN + ReLU6) blocks
    given as (pointwise channels, depthwise stride), AVERAGE_POOL over the whole map, a 1x1 CONV (SAME) with bias to
    the classes, RESHAPE."""
    keras, L = _layers()
    x = keras.Input(input_shape, batch_size=1)
    y = conv_bn(x, first_ch, first_kernel)
    for ch, stride in blocks:
        y = dw_bn(y, s=stride)
        y = conv_bn(y, ch, 1)
    y = L.AveragePooling2D(pool_size=pool, strides=1, padding="valid")(y)
    y = L.Conv2D(classes, 1, padding="same", use_bias=True)(y)
    y = L.Reshape((classes,))(y)
    return keras.Model(x, y)


def kws_micronet_m():
    # kws_micronet_m.tflite: 49x10x1 MFCCs; CONV 10x4 140 SAME; DW s2 + CONV 140; 2 x (DW + CONV 140);
    # DW + CONV 112; DW + CONV 196; AVERAGE_POOL 25x5 VALID; CONV 1x1 12; RESHAPE
    return micronet((49, 10, 1), (10, 4), 140, [(140, 2), (140, 1), (140, 1), (112, 1), (196, 1)],
                    (25, 5), 12)


def ad_micronet_m():
    # ad_medium_int8.tflite: 32x32x1 log-mel; CONV 3x3 192 SAME; DW s2 + CONV 276; 2 x (DW s1 + CONV 276);
    # 2 x (DW s2 + CONV 276); AVERAGE_POOL 4x4 VALID; CONV 1x1 8; RESHAPE
    return micronet((32, 32, 1), (3, 3), 192, [(276, 2), (276, 1), (276, 1), (276, 2), (276, 2)], (4, 4), 8)


# TF-slim mobilenet_v2.py V2_DEF: (expansion t, channels c, repeats n, first stride s) after the stem
MV2_BLOCKS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
              (6, 320, 1, 1)]


def mobilenet_v2_slim(classes=1001):
    """TF-slim MobileNetV2 1.0 224: stem CONV 3x3 s2 32; inverted residuals (expand 1x1 + ReLU6 unless t = 1,
    depthwise 3x3 + ReLU6, linear project 1x1, ADD when the stride is 1 and the channels match); CONV 1x1 1280;
    AVERAGE_POOL 7x7 VALID; logits CONV 1x1 with bias; RESHAPE; SOFTMAX. SAME padding throughout (no explicit
    PAD, unlike Keras' MobileNetV2 application)."""
    keras, L = _layers()
    x = keras.Input((224, 224, 3), batch_size=1)
    y = conv_bn(x, 32, 3, s=2)
    cin = 32
    for t, c, n, s in MV2_BLOCKS:
        for i in range(n):
            stride = s if i == 0 else 1
            z = y if t == 1 else conv_bn(y, cin * t, 1)
            z = dw_bn(z, s=stride)
            z = conv_bn(z, c, 1, act=False)
            y = L.Add()([y, z]) if stride == 1 and cin == c else z
            cin = c
    y = conv_bn(y, 1280, 1)
    y = L.AveragePooling2D(pool_size=7, strides=1, padding="valid")(y)
    y = L.Conv2D(classes, 1, padding="same", use_bias=True)(y)
    y = L.Reshape((classes,))(y)
    y = L.Softmax()(y)
    return keras.Model(x, y)


def cpu_split():
    """Float in and out (QUANTIZE / DEQUANTIZE on the CPU) and two CPU islands between NPU parts: a bilinear
    x3 upscale (Vela: 2x/4x/8x only) and a SAME 9x9 average pool (Vela: SAME kernels up to 8x8)."""
    keras, L = _layers()
    x = keras.Input((12, 12, 3), batch_size=1)
    y = conv_bn(x, 16, 3)
    y = L.UpSampling2D(size=3, interpolation="bilinear")(y)  # RESIZE_BILINEAR half_pixel_centers, CPU
    y = dw_bn(y, s=2)
    y = conv_bn(y, 24, 1)
    y = L.AveragePooling2D(pool_size=9, strides=1, padding="same")(y)  # CPU
    y = conv_bn(y, 32, 3, s=2)
    y = L.GlobalAveragePooling2D()(y)
    y = L.Dense(10)(y)
    y = L.Softmax()(y)
    return keras.Model(x, y)


def int16_net():
    """16x8: CONV, depthwise, a residual ADD, LEAKY_RELU, MAX_POOL, a nearest x3 upscale (Vela: 2x/4x/8x only,
    so on the CPU), CONV s2, MEAN, FULLY_CONNECTED, SOFTMAX."""
    keras, L = _layers()
    x = keras.Input((16, 16, 4), batch_size=1)
    y = conv_bn(x, 16, 3)
    z = dw_bn(y)
    z = conv_bn(z, 16, 1, act=False)
    y = L.Add()([y, z])
    y = L.LeakyReLU(negative_slope=0.1)(y)
    y = L.MaxPooling2D(2)(y)
    y = L.Resizing(24, 24, interpolation="nearest")(y)  # RESIZE_NEAREST_NEIGHBOR x3, CPU
    y = L.Conv2D(24, 3, strides=2, padding="same", activation="relu")(y)
    y = L.GlobalAveragePooling2D()(y)
    y = L.Dense(8)(y)
    y = L.Softmax()(y)
    return keras.Model(x, y)


def int16_act():
    """16x8 LOGISTIC and TANH, which Vela gives the NPU's built-in int16 SIGMOID/TANH activation functions."""
    keras, L = _layers()
    x = keras.Input((8, 8, 8), batch_size=1)
    y = L.Conv2D(16, 3, padding="same", activation="sigmoid")(x)
    y = L.DepthwiseConv2D(3, padding="same", activation="tanh")(y)
    y = L.GlobalAveragePooling2D()(y)
    y = L.Dense(8)(y)
    return keras.Model(x, y)


def int16_sig_tanh():
    """int16 LOGISTIC and TANH straight on the model's input (two outputs): with ``exhaustive_int16`` every int16
    input value through both, at the input scale the spec's range gives (Vela: 1x1 AVERAGE pools with the NPU's
    built-in SIGMOID/TANH, or the U85's LUT_SIGMOID/LUT_TANH)."""
    keras, L = _layers()
    x = keras.Input((256, 256), batch_size=1)
    return keras.Model(x, [L.Activation("sigmoid")(x), L.Activation("tanh")(x)])


def int16_addmul_sig_tanh():
    """int16 ADD(x, x) -> LOGISTIC and MUL(x, x) -> TANH: the functions after elementwise operations (Vela 5.2
    gives them 1x1 AVERAGE pools of their own, with the input scales the ADD and MUL outputs have)."""
    keras, L = _layers()
    x = keras.Input((256, 256), batch_size=1)
    return keras.Model(x, [L.Activation("sigmoid")(L.Add()([x, x])), L.Activation("tanh")(L.Multiply()([x, x]))])


def convnet():
    """A small int8 CNN for the targets and memory modes: CONV s2, an inverted residual with ADD, MAX_POOL, two
    branches CONCATENATED, CONV s2, MEAN, FULLY_CONNECTED, SOFTMAX."""
    keras, L = _layers()
    x = keras.Input((48, 48, 3), batch_size=1)
    y = conv_bn(x, 16, 3, s=2)
    z = conv_bn(y, 48, 1)
    z = dw_bn(z)
    z = conv_bn(z, 16, 1, act=False)
    y = L.Add()([y, z])
    y = L.MaxPooling2D(2)(y)
    y = L.Concatenate()([conv_bn(y, 24, 1), conv_bn(y, 24, 3)])
    y = conv_bn(y, 64, 3, s=2)
    y = L.GlobalAveragePooling2D()(y)
    y = L.Dense(10)(y)
    y = L.Softmax()(y)
    return keras.Model(x, y)


MLEK_NOTE = ("random weights (seeded), so Vela's weight compression and the command stream's size differ from the "
             "trained model's; calibration from noise of the published input range, so the quantization scales "
             "differ")
U85_NOTE = ("no TFLite Micro board with an Ethos-U85: the tests run the ethos-u operator's command stream on the NPU "
            "model directly, the tensors at the offline-planned offsets")
SPECS = [
    Spec("kws_micronet_m_u55-128", kws_micronet_m, (49, 10, 1), "ethos-u55-128", U55_SC, "Shared_Sram", 101,
         input_range=(-25.0, 26.0), mlek="kws_micronet_m.tflite", published="kws_micronet_m", dropin=True,
         notes=[f"reconstruction of ML-zoo KWS MicroNet-M (MLEK kws): same layers, shapes, 12 classes; {MLEK_NOTE}"]),
    Spec("ad_micronet_m_u55-128", ad_micronet_m, (32, 32, 1), "ethos-u55-128", U55_SC, "Shared_Sram", 102,
         input_range=(-26.0, 22.0), mlek="ad_medium_int8.tflite", published="ad_medium_int8",
         notes=[(f"reconstruction of ML-zoo AD MicroNet-M (MLEK ad, ad_medium_int8): same layers, shapes, 8 "
                f"outputs; {MLEK_NOTE}")]),
    Spec("mobilenet_v2_1.0_224_u55-128", mobilenet_v2_slim, (224, 224, 3), "ethos-u55-128", U55_SC, "Shared_Sram",
         103, calib_samples=8, published="mobilenet_v2_1.0_224",
         notes=[("reconstruction of MLEK img_class mobilenet_v2_1.0_224_INT8 from TF-slim's published layout "
                 "(1001 classes, SAME padding, 1x1 logits convolution, RESHAPE, SOFTMAX); the ML-zoo file is not "
                 f"available to compare with; {MLEK_NOTE}")]),
    Spec("cpu_split_u55-128", cpu_split, (12, 12, 3), "ethos-u55-128", U55_SC, "Shared_Sram", 201, float_io=True),
    Spec("int16_u55-128", int16_net, (16, 16, 4), "ethos-u55-128", U55_SC, "Shared_Sram", 202, quant="16x8"),
    Spec("int16_act_u55-128", int16_act, (8, 8, 8), "ethos-u55-128", U55_SC, "Shared_Sram", 204, quant="16x8"),
    # every int16 input through the NPU's int16 SIGMOID/TANH at input scales 2^-12 (TFLite's power-of-two case
    # for both), 2^-11 (TANH's), 1/32767 (small arguments), 6/32767, 40/32767 and 1000/32767 (saturation)
    *[Spec(f"int16_sig_tanh_{tag}_u55-128", int16_sig_tanh, (256, 256), "ethos-u55-128", U55_SC, "Shared_Sram",
           205, quant="16x8", input_range=(-r, r), exhaustive_int16=True)
      for tag, r in (("q3_12", 32767 / 4096), ("q4_11", 32767 / 2048), ("r1", 1.0), ("r6", 6.0), ("r40", 40.0),
                     ("r1000", 1000.0))],
    Spec("int16_addmul_sig_tanh_u55-128", int16_addmul_sig_tanh, (256, 256), "ethos-u55-128", U55_SC, "Shared_Sram",
         206, quant="16x8", input_range=(-12.0, 12.0), exhaustive_int16=True),
    # the U85's LUT_SIGMOID/LUT_TANH (Vela's 2 KiB tables): no Corstone-320 TFLite Micro board, so the tests run
    # these command streams on the NPU model directly (tests/firmware/tflm/test_toolchain_fixtures.py)
    *[Spec(f"int16_sig_tanh_{tag}_u85-256", int16_sig_tanh, (256, 256), "ethos-u85-256", U85_SC, "Shared_Sram", 205,
           quant="16x8", input_range=(-r, r), exhaustive_int16=True, notes=[U85_NOTE])
      for tag, r in (("r6", 6.0), ("r40", 40.0))],
    Spec("convnet_u55-64", convnet, (48, 48, 3), "ethos-u55-64", U55_SC, "Shared_Sram", 203),
    Spec("convnet_u55-256_sramonly", convnet, (48, 48, 3), "ethos-u55-256", U55_SC, "Sram_Only", 203),
    Spec("convnet_u65-256_dedicated", convnet, (48, 48, 3), "ethos-u65-256", U65_SC, "Dedicated_Sram", 203),
]


# ================================================================================================ weights


def seed_weights(model, rng) -> None:
    """He-normal kernels, small biases, batch-norm affine terms near identity (numpy's PCG64: the same numbers
    on every machine)."""
    for layer in model.layers:
        new = []
        for w in layer.weights:
            shape, name = tuple(w.shape), w.path.rsplit("/", 1)[-1]
            if name == "depthwise_kernel":
                fan_in = shape[0] * shape[1]
                v = rng.normal(0.0, np.sqrt(2.0 / fan_in), shape)
            elif name == "kernel":
                fan_in = int(np.prod(shape[:-1]))
                v = rng.normal(0.0, np.sqrt(2.0 / fan_in), shape)
            elif name == "bias":
                v = rng.normal(0.0, 0.1, shape)
            elif name == "gamma":
                v = rng.uniform(0.6, 1.4, shape)
            elif name == "beta":
                v = rng.normal(0.3, 0.3, shape)
            elif name == "moving_mean":
                v = np.zeros(shape)
            elif name == "moving_variance":
                v = np.ones(shape)
            else:
                raise ValueError(f"{layer.name}: unexpected weight {w.path}")
            new.append(v.astype(np.float32))
        if new:
            layer.set_weights(new)


def calibration(spec: Spec, rng, n: int) -> np.ndarray:
    lo, hi = spec.input_range
    x = rng.uniform(lo, hi, (n, *spec.input_shape)).astype(np.float32)
    if spec.exhaustive_int16:  # the range's ends themselves: the converter's symmetric scale is then hi / 32767
        x.reshape(n, -1)[0, :2] = (lo, hi)
    return x


def build_source(spec: Spec) -> tuple[bytes, np.ndarray]:
    """(the quantized pre-Vela .tflite, the calibration batch)."""
    import keras
    import tensorflow as tf

    keras.backend.clear_session()  # layer names (and so the file's tensor names) restart for every model
    keras.utils.set_random_seed(spec.seed)
    rng = np.random.default_rng(spec.seed)
    model = spec.build()
    seed_weights(model, rng)
    calib = calibration(spec, rng, spec.calib_samples)
    # momentum 0: one training-mode pass sets every batch norm's statistics to those of its input on this batch
    model(calib, training=True)

    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]

    def rep():
        for i in range(len(calib)):
            yield [calib[i:i + 1]]

    conv.representative_dataset = rep
    if spec.quant == "16x8":
        conv.target_spec.supported_ops = [tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
        io_type = tf.int16
    else:
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        io_type = tf.int8
    if not spec.float_io:
        conv.inference_input_type = io_type
        conv.inference_output_type = io_type
    return bytes(conv.convert()), calib


# ================================================================================================ model surgery


def _model_t(data: bytes):
    from tensorflow.lite.tools import flatbuffer_utils as fu

    return fu.read_model_from_bytearray(bytearray(data))


def _model_bytes(m) -> bytes:
    from tensorflow.lite.tools import flatbuffer_utils as fu

    return bytes(fu.convert_object_to_bytearray(m))


def _op_name(m, op) -> str:
    from tensorflow.lite.python import schema_py_generated as s

    code = m.operatorCodes[op.opcodeIndex]
    bc = max(code.builtinCode, code.deprecatedBuiltinCode)
    if bc == s.BuiltinOperator.CUSTOM:
        return code.customCode.decode() if isinstance(code.customCode, bytes) else str(code.customCode)
    return {v: k for k, v in vars(s.BuiltinOperator).items() if not k.startswith("_")}[bc]


def op_names(data: bytes) -> list[str]:
    m = _model_t(data)
    return [_op_name(m, op) for op in m.subgraphs[0].operators]


def deep_int8_softmax(data: bytes) -> tuple | None:
    """(depth, beta, input scale) when the model's last operator is an int8 SOFTMAX deeper than 512."""
    m = _model_t(data)
    g = m.subgraphs[0]
    op = g.operators[-1]
    if _op_name(m, op) != "SOFTMAX":
        return None
    t = g.tensors[op.inputs[0]]
    from tensorflow.lite.python import schema_py_generated as s

    if t.type != s.TensorType.INT8 or int(t.shape[-1]) <= SOFTMAX_REF_MAX_DEPTH:
        return None
    return int(t.shape[-1]), float(op.builtinOptions.beta), float(t.quantization.scale[0])


def cut_before_last(data: bytes) -> bytes:
    """The model without its last operator; that operator's input becomes the output."""
    m = _model_t(data)
    g = m.subgraphs[0]
    last = g.operators.pop()
    g.outputs = [last.inputs[0]]
    return _model_bytes(m)


def only_last(data: bytes) -> bytes:
    """The model's last operator alone (its input the model's input)."""
    m = _model_t(data)
    g = m.subgraphs[0]
    last = g.operators[-1]
    g.operators = [last]
    g.inputs = [last.inputs[0]]
    return _model_bytes(m)


# ================================================================================================ reference


def reference(data: bytes, inputs: list) -> list:
    import tensorflow as tf

    it = tf.lite.Interpreter(model_content=data,
                             experimental_op_resolver_type=tf.lite.experimental.OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def reference_in_child(data: bytes, rows: np.ndarray) -> list:
    """The interpreter on each row in a child process each: the output, or None where the interpreter aborted."""
    out = []
    with tempfile.TemporaryDirectory() as d:
        mp, xp, yp = Path(d) / "m.tflite", Path(d) / "x.npy", Path(d) / "y.npy"
        mp.write_bytes(data)
        for row in rows:
            np.save(xp, row)
            code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import numpy as np; "
                    f"import make_tflm_models as g; "
                    f"np.save({str(yp)!r}, g.reference(open({str(mp)!r}, 'rb').read(), [np.load({str(xp)!r})])[0])")
            p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            out.append(np.load(yp) if p.returncode == 0 and yp.is_file() else None)
            if yp.is_file():
                yp.unlink()
    return out


def port_softmax(logits: np.ndarray, beta: float, scale: float) -> np.ndarray:
    sys.path.insert(0, str(ROOT))
    from firmware.tflm.kernels.softmax import softmax_int8_rows, softmax_params

    mult, shift, diff_min = softmax_params(beta, float(np.float32(scale)))
    return softmax_int8_rows(logits, mult, shift, diff_min)


def reference_outputs(data: bytes, inputs: list, rng) -> tuple[list, dict]:
    """Reference outputs of the pre-Vela model and how they were made."""
    deep = deep_int8_softmax(data)
    if deep is None:
        return reference(data, inputs), {"method": "TFLite reference kernels (BUILTIN_REF) on the pre-Vela model"}
    depth, beta, scale = deep
    logits = reference(cut_before_last(data), inputs)[0]
    ours = port_softmax(logits, beta, scale)
    # the port against the interpreter on the SOFTMAX alone: the reference logits, then seeded rows spread like
    # logits (a few peaked, most flat enough for the sum of exps to reach 2^9 and abort the interpreter)
    sm = only_last(data)
    rows = [logits] + [np.clip(np.round(rng.normal(0, sd, logits.shape)), -128, 127).astype(np.int8)
                       for sd in (40, 30, 20, 10, 5, 2)]
    agree = abort = differ = 0
    for row, got in zip(rows, reference_in_child(sm, np.stack(rows))):
        if got is None:
            abort += 1
        elif np.array_equal(got, port_softmax(row, beta, scale)):
            agree += 1
        else:
            differ += 1
    if differ:
        raise SystemExit(f"the softmax port differs from the interpreter on {differ} of {len(rows)} rows")
    full = reference_in_child(data, np.stack(inputs[:1]))[0]
    if full is not None and not np.array_equal(full, ours):
        raise SystemExit("the full model's interpreter output differs from interpreter logits + softmax port")
    how = {"method": f"TFLite reference kernels (BUILTIN_REF) on the pre-Vela model up to its int8 SOFTMAX "
                     f"({depth} deep), then firmware/tflm/kernels/softmax.py",
           "softmax_port_vs_interpreter": f"{len(rows)} rows (the reference logits + 6 seeded): {agree} identical, "
                                          f"{abort} aborted the interpreter (exps sum >= 2^9), 0 differ",
           "full_model_interpreter": "aborted" if full is None else "ran: identical to logits + port"}
    return [ours], how


# ================================================================================================ Vela


def vela(src: Path, spec: Spec, work: Path) -> tuple[Path, dict, str]:
    """Vela for the model's target through ``fvp.host.programs.vela`` (the project's one Vela runner: MLEK's flags and the
    ``vela.ini`` shipped with Vela); (compiled .tflite, Vela's estimate from its summary CSV, Vela's version)."""
    import csv

    sys.path.insert(0, str(ROOT))
    from fvp.host.programs.vela import VelaError, compile_tflite

    try:
        out = compile_tflite(src, work, spec.target, spec.system_config, spec.memory_mode)
    except VelaError as e:
        raise SystemExit(str(e)) from None
    est = {}
    if out.summary.is_file():
        with open(out.summary, newline="") as f:
            row = next(csv.DictReader(f))
        for key in ("cycles_npu", "cycles_sram_access", "cycles_dram_access", "cycles_on_chip_flash_access",
                    "cycles_off_chip_flash_access", "cycles_total", "nn_macs", "total_original_weights",
                    "total_npu_encoded_weights", "sram_memory_used", "off_chip_flash_memory_used",
                    "dram_memory_used"):
            if row.get(key) not in (None, ""):
                est[key] = float(row[key])
    return out.path, est, out.version


def fvp_args(spec: Spec) -> list[str]:
    """The `fvp run` arguments for the model's NPU and memory mode (the TFLM board is U55-128 Shared_Sram)."""
    args = [] if spec.target == "ethos-u55-128" else ["--target", spec.target]
    if spec.memory_mode != "Shared_Sram":
        args += ["-C", f"npu.memory_mode={spec.memory_mode}"]
    if spec.memory_mode == "Dedicated_Sram":
        # MLEK's Dedicated_Sram builds: the arena in DDR, the Ethos-U fast memory (the cache, region 2) in SRAM
        args += ["-C", "firmware.pools.arena.region=DDR", "-C", "firmware.pools.fast_scratch.region=SRAM",
                 "-C", "firmware.pools.fast_scratch.size=384KiB", "-C", "firmware.pools.fast_scratch.npu=true"]
    return args


# ================================================================================================ comparison


def layout(data: bytes) -> list:
    """Per operator: name, the shapes of its inputs and outputs, its options, the per-channel scale counts."""
    m = _model_t(data)
    g = m.subgraphs[0]
    out = []
    for op in g.operators:
        def shapes(idx):
            return [tuple(int(v) for v in g.tensors[i].shape) for i in idx if i >= 0]

        opts = {k: v for k, v in vars(op.builtinOptions).items()} if op.builtinOptions is not None else {}
        opts = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in opts.items()}
        nscales = [len(g.tensors[i].quantization.scale) if g.tensors[i].quantization is not None
                   and g.tensors[i].quantization.scale is not None else 0 for i in op.inputs if i >= 0]
        out.append((_op_name(m, op), shapes(op.inputs), shapes(op.outputs), opts, nscales))
    return out


def compare_layout(ours: bytes, theirs: bytes) -> list[str]:
    a, b = layout(ours), layout(theirs)
    diffs = []
    if len(a) != len(b):
        diffs.append(f"{len(a)} operators, the ML-zoo file has {len(b)}")
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            diffs.append(f"operator {i}: ours {x}, ML-zoo {y}")
    return diffs


# ================================================================================================ main


def make(spec: Spec, out: Path, work: Path, mlek: Path | None) -> tuple[dict, dict]:
    import tensorflow as tf

    src_bytes, _ = build_source(spec)
    src = work / f"{spec.name}.tflite"
    src.write_bytes(src_bytes)
    compiled, est, vela_ver = vela(src, spec, work)
    dst = out / f"{spec.name}_vela.tflite"
    shutil.copyfile(compiled, dst)
    # the seeded test input: the calibration distribution, another draw, quantized as the model's input is
    rng = np.random.default_rng(spec.seed + 1000)
    x = calibration(spec, rng, 1)
    it = tf.lite.Interpreter(model_content=src_bytes)
    d = it.get_input_details()[0]
    if spec.exhaustive_int16:  # not stored: models.json says so (test_input)
        x = np.arange(-32768, 32768, dtype=np.int16).reshape(d["shape"])
    elif d["dtype"] != np.float32:
        s, z = d["quantization"]
        info = np.iinfo(d["dtype"])
        x = np.clip(np.round(x / s) + z, info.min, info.max).astype(d["dtype"])
    outs, how = reference_outputs(src_bytes, [x], rng)
    arrays = {} if spec.exhaustive_int16 else {f"{spec.name}/in0": x}
    arrays.update({f"{spec.name}/out{i}": y for i, y in enumerate(outs)})
    if spec.dropin:  # what the runner fills the input with when no file is given (firmware.options.inputs)
        sys.path.insert(0, str(ROOT))
        from firmware.tflm.runner import newlib_rand_bytes

        xr = newlib_rand_bytes(x.nbytes).view(x.dtype).reshape(x.shape)
        arrays[f"{spec.name}/dropin_in0"] = xr
        outs_r = reference_outputs(src_bytes, [xr], rng)[0]
        arrays.update({f"{spec.name}/dropin_out{i}": y for i, y in enumerate(outs_r)})
    cdata = compiled.read_bytes()
    rec = {
        "target": spec.target, "system_config": spec.system_config, "memory_mode": spec.memory_mode,
        "quantization": spec.quant, "float_io": spec.float_io, "seed": spec.seed,
        "fvp_args": fvp_args(spec),
        "source_operators": op_names(src_bytes), "vela_operators": op_names(cdata),
        "source_bytes": len(src_bytes), "source_sha256": hashlib.sha256(src_bytes).hexdigest(),
        "vela_bytes": len(cdata), "vela_estimate": est, "reference": how, "notes": spec.notes,
        "test_input": (EXHAUSTIVE_INT16 if spec.exhaustive_int16 else "reference.npz <name>/in0"),
        "published": spec.published, "versions": {"tensorflow": tf.__version__, "vela": vela_ver},
    }
    if spec.mlek:
        rec["mlek_file"] = spec.mlek
        if mlek is not None and (mlek / spec.mlek).is_file():
            diffs = compare_layout(src_bytes, (mlek / spec.mlek).read_bytes())
            rec["layout_vs_mlek_file"] = diffs or "identical (operators, shapes, options, per-channel scales)"
            # Vela on the ML-zoo file itself, for the record (weights compress differently)
            _, theirs, _ = vela(mlek / spec.mlek, spec, work / "mlek")
            rec["vela_estimate_mlek_file"] = theirs
    return rec, arrays


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="fixture directory (default tests/data/tflm)")
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "tflm_models"),
                    help="pre-Vela models, Vela logs and summaries")
    ap.add_argument("--only", default=None, help="comma-separated model names (the others are kept)")
    ap.add_argument("--mlek", default=None, help="directory with ML-zoo's kws_micronet_m.tflite, ad_medium_int8.tflite "
                                                 "to compare the reconstructions' layouts with")
    args = ap.parse_args(argv)
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    (work / "mlek").mkdir(exist_ok=True)
    mlek = Path(args.mlek) if args.mlek else None
    only = set(args.only.split(",")) if args.only else None
    meta_path, ref_path = out / "models.json", out / "reference.npz"
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    arrays = dict(np.load(ref_path)) if ref_path.is_file() else {}
    for spec in SPECS:
        if only is not None and spec.name not in only:
            continue
        print(f"{spec.name}: building, converting, Vela ({spec.target}, {spec.system_config}, {spec.memory_mode})",
              flush=True)
        rec, arr = make(spec, out, work, mlek)
        meta[spec.name] = rec
        arrays = {k: v for k, v in arrays.items() if not k.startswith(spec.name + "/")}
        arrays.update(arr)
        cpu_ops = [o for o in rec["vela_operators"] if o != "ethos-u"]
        print(f"  {rec['vela_bytes']:,} B compiled; CPU operators {cpu_ops}; reference: "
              f"{rec['reference']['method']}", flush=True)
        if "layout_vs_mlek_file" in rec:
            print(f"  layout against {spec.mlek}: {rec['layout_vs_mlek_file']}")
    order = [s.name for s in SPECS]
    meta = {k: meta[k] for k in sorted(meta, key=lambda k: order.index(k) if k in order else len(order))}
    meta_path.write_text(json.dumps(meta, indent=1, sort_keys=False) + "\n")
    np.savez_compressed(ref_path, **arrays)
    print(f"wrote {out}: {len(meta)} models")
    return 0


if __name__ == "__main__":
    sys.exit(main())
