"""Issue 31 item 6, the TFLite Micro side: models that used to give silent wrong answers now stop with one line
(a FLOAT16 bias on an int8 convolution; a Vela model's offline memory plan under the linear planner)."""

from __future__ import annotations

import numpy as np
import pytest

from harness import run_cpu
from tflite_builder import Op, T, build
from testutil import ROOT, run_fvp

from firmware.tflm.interpreter import InterpreterError

CONV = ("Conv2DOptions", {"Padding": 0, "StrideW": 1, "StrideH": 1, "DilationWFactor": 1, "DilationHFactor": 1})


def _conv(bias_type: str, op="CONV_2D", opts=CONV):
    r = np.random.default_rng(0)
    oc = 4
    wshape = [oc, 3, 3, 2] if op == "CONV_2D" else [1, 3, 3, oc]
    bias = r.integers(-100, 100, oc).astype(bias_type)
    ts = [T("x", [1, 5, 5, 2], "int8", scale=[0.05], zero_point=[1]),
          T("w", wshape, "int8", r.integers(-127, 128, wshape, dtype=np.int8), [0.01] * oc, [0] * oc,
            qdim=0 if op == "CONV_2D" else 3),
          T("b", [oc], bias_type, bias, [0.0005] * oc if bias_type == "int32" else [],
            [0] * oc if bias_type == "int32" else []),
          T("y", [1, 5, 5, oc], "int8", scale=[0.1], zero_point=[0])]
    return build(ts, [Op(op, ["x", "w", "b"], ["y"], opts)], ["x"], ["y"])


@pytest.mark.parametrize("op,opts", [("CONV_2D", CONV), ("DEPTHWISE_CONV_2D", (
    "DepthwiseConv2DOptions", {**CONV[1], "DepthMultiplier": 2}))])
def test_float16_bias_on_an_int8_convolution_is_refused(op, opts):
    """TFLite Micro's kernels cast the bias pointer to int32 without looking at its type: a FLOAT16 bias (PyPI
    tflite-micro runs it) is read as int32 past its own bytes. Refused at Prepare here."""
    x = np.zeros((1, 5, 5, 2), np.int8)
    run_cpu(_conv("int32", op, opts), [x])  # the same model with its int32 bias runs
    with pytest.raises(InterpreterError) as e:
        run_cpu(_conv("float16", op, opts), [x])
    assert e.value.lines[0] == f"{op}: a FLOAT16 bias with a INT8 input: the kernel reads the bias as INT32 " \
                               f"(TFLite Micro would misread it)"


@pytest.mark.slow
def test_linear_planner_refuses_an_offline_memory_plan(tmp_path):
    """Vela writes an OfflineMemoryAllocation plan; TFLite Micro's LinearMemoryPlanner cannot take an offline
    buffer (``AddBuffer(..., offline_offset)`` fails), so AllocateTensors fails. The run used to ignore the plan,
    put the NPU's tensors elsewhere and write all-zero outputs with exit status 0."""
    model = ROOT / "tests" / "data" / "tflm" / "int16_act_u55-128_vela.tflite"
    rc, out, err = run_fvp("run", model, "-C", "firmware.allocator=linear", "-o", tmp_path / "out")
    assert rc == 1, out + err
    assert "the linear memory planner cannot place offline-planned buffers" in out
    assert not (tmp_path / "out-0.bin").exists()
    rc, out, err = run_fvp("run", model, "-o", tmp_path / "out")  # the greedy planner takes it
    assert rc == 0, out + err
