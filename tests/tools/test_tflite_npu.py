"""tools/tflite_npu.py: a tiny int8 TFLite model (one CONV_2D, written here with the flatbuffers builder and the
TFLite schema classes Vela ships, no TensorFlow), compiled by the installed Vela for ethos-u55-128 /
Ethos_U55_High_End_Embedded / Shared_Sram, then run through the tool: it must find the ethos-u operator and
report non-zero NPU cycles and AXI beats (weights from flash over AXI1, arena traffic over AXI0)."""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ethosu.vela")
flatbuffers = pytest.importorskip("flatbuffers")

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("tflite_npu", ROOT / "tools" / "tflite_npu.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["tflite_npu"] = mod
    spec.loader.exec_module(mod)
    return mod


def _int_vector(b, start, values, kind="int32"):
    start(b, len(values))
    for v in reversed(values):
        getattr(b, {"int32": "PrependInt32", "int64": "PrependInt64", "float32": "PrependFloat32"}[kind])(v)
    return b.EndVector()


def build_conv_tflite(h=8, w=8, cin=16, cout=16, k=3) -> bytes:
    """A TFLite flatbuffer: int8 [1,h,w,cin] -> CONV_2D k x k SAME, int8 weights, int32 bias -> int8."""
    from ethosu.vela.tflite import (Buffer, Conv2DOptions, Model, Operator, OperatorCode, QuantizationParameters,
                                    SubGraph, Tensor)
    from ethosu.vela.tflite.BuiltinOperator import BuiltinOperator
    from ethosu.vela.tflite.BuiltinOptions import BuiltinOptions
    from ethosu.vela.tflite.Padding import Padding
    from ethosu.vela.tflite.TensorType import TensorType

    rng = np.random.default_rng(0)
    weights = rng.integers(-127, 128, size=(cout, k, k, cin), dtype=np.int8)
    bias = rng.integers(-1000, 1000, size=(cout,), dtype=np.int32)
    b = flatbuffers.Builder(4096)

    def data_buffer(arr):
        vec = b.CreateNumpyVector(np.frombuffer(arr.tobytes(), dtype=np.uint8)) if arr is not None else None
        Buffer.Start(b)
        if vec is not None:
            Buffer.AddData(b, vec)
        return Buffer.End(b)

    buffers = [data_buffer(None), data_buffer(None), data_buffer(weights), data_buffer(bias), data_buffer(None)]

    def quant(scales, zero_points, dim=0):
        s = _int_vector(b, QuantizationParameters.StartScaleVector, scales, "float32")
        z = _int_vector(b, QuantizationParameters.StartZeroPointVector, zero_points, "int64")
        QuantizationParameters.Start(b)
        QuantizationParameters.AddScale(b, s)
        QuantizationParameters.AddZeroPoint(b, z)
        QuantizationParameters.AddQuantizedDimension(b, dim)
        return QuantizationParameters.End(b)

    in_scale, w_scale, out_scale = 0.05, 0.01, 0.2
    specs = [  # name, shape, type, buffer, quantization
        ("input", [1, h, w, cin], TensorType.INT8, 1, quant([in_scale], [0])),
        ("weights", [cout, k, k, cin], TensorType.INT8, 2, quant([w_scale] * cout, [0] * cout)),
        ("bias", [cout], TensorType.INT32, 3, quant([in_scale * w_scale] * cout, [0] * cout)),
        ("output", [1, h, w, cout], TensorType.INT8, 4, quant([out_scale], [0])),
    ]
    tensors = []
    for name, shape, ttype, buf, q in specs:
        n = b.CreateString(name)
        sh = _int_vector(b, Tensor.StartShapeVector, shape)
        Tensor.Start(b)
        Tensor.AddShape(b, sh)
        Tensor.AddType(b, ttype)
        Tensor.AddBuffer(b, buf)
        Tensor.AddName(b, n)
        Tensor.AddQuantization(b, q)
        tensors.append(Tensor.End(b))

    Conv2DOptions.Start(b)
    Conv2DOptions.AddPadding(b, Padding.SAME)
    Conv2DOptions.AddStrideW(b, 1)
    Conv2DOptions.AddStrideH(b, 1)
    Conv2DOptions.AddDilationWFactor(b, 1)
    Conv2DOptions.AddDilationHFactor(b, 1)
    opts = Conv2DOptions.End(b)
    ins = _int_vector(b, Operator.StartInputsVector, [0, 1, 2])
    outs = _int_vector(b, Operator.StartOutputsVector, [3])
    Operator.Start(b)
    Operator.AddOpcodeIndex(b, 0)
    Operator.AddInputs(b, ins)
    Operator.AddOutputs(b, outs)
    Operator.AddBuiltinOptionsType(b, BuiltinOptions.Conv2DOptions)
    Operator.AddBuiltinOptions(b, opts)
    op = Operator.End(b)

    def vector_of(start, items):
        start(b, len(items))
        for it in reversed(items):
            b.PrependUOffsetTRelative(it)
        return b.EndVector()

    t_vec = vector_of(SubGraph.StartTensorsVector, tensors)
    o_vec = vector_of(SubGraph.StartOperatorsVector, [op])
    sg_in = _int_vector(b, SubGraph.StartInputsVector, [0])
    sg_out = _int_vector(b, SubGraph.StartOutputsVector, [3])
    name = b.CreateString("main")
    SubGraph.Start(b)
    SubGraph.AddTensors(b, t_vec)
    SubGraph.AddInputs(b, sg_in)
    SubGraph.AddOutputs(b, sg_out)
    SubGraph.AddOperators(b, o_vec)
    SubGraph.AddName(b, name)
    sg = SubGraph.End(b)

    OperatorCode.Start(b)
    OperatorCode.AddDeprecatedBuiltinCode(b, BuiltinOperator.CONV_2D)
    OperatorCode.AddBuiltinCode(b, BuiltinOperator.CONV_2D)
    OperatorCode.AddVersion(b, 3)
    oc = OperatorCode.End(b)

    oc_vec = vector_of(Model.StartOperatorCodesVector, [oc])
    sg_vec = vector_of(Model.StartSubgraphsVector, [sg])
    buf_vec = vector_of(Model.StartBuffersVector, buffers)
    desc = b.CreateString("tiny int8 conv for tests/tools/test_tflite_npu.py")
    Model.Start(b)
    Model.AddVersion(b, 3)
    Model.AddOperatorCodes(b, oc_vec)
    Model.AddSubgraphs(b, sg_vec)
    Model.AddDescription(b, desc)
    Model.AddBuffers(b, buf_vec)
    b.Finish(Model.End(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def test_tiny_conv_through_vela_and_our_npu(tmp_path):
    tool = _tool()
    src = tmp_path / "tiny_conv.tflite"
    src.write_bytes(build_conv_tflite())
    # the source has no ethos-u operator: the tool compiles it with Vela first
    assert not tool.read_tflite(src).ethosu_ops
    out = io.StringIO()
    results = tool.run_paths([tmp_path], work_dir=tmp_path / "vela", out=out, profile=True)
    text = out.getvalue()
    assert len(results) == 1, text
    _, run = results[0]
    assert len(run.ops) == 1 and len(run.model.ethosu_ops) == 1, text
    op = run.ops[0]
    # TFLM's convention: input 0 the command stream, then flash, scratch, scratch_fast, the IFM; then the OFM
    names = [t.name for t in op.op.inputs]
    assert names[0] == "ethos_u_command_stream", names
    assert op.op.inputs[1].data_offset is not None  # the flash tensor is constant data in the file
    assert run.npu_cycles > 0 and op.pmu["active"] > 0 and op.pmu["total"] >= op.pmu["active"]
    assert op.pmu["axi0_rd"] > 0 and op.pmu["axi0_wr"] > 0 and op.pmu["axi1_rd"] > 0, op.pmu
    # the OFM (8x8x16 int8 = 1,024 bytes) is written over AXI0 (the arena) in 8-byte beats
    assert op.pmu["axi0_wr"] >= 1024 // 8
    # the weights (16x3x3x16 = 2,304 bytes before compression) come from flash over AXI1
    assert op.pmu["axi1_rd"] * 8 >= 1000
    assert "Vela" in text and "ours, operator" in text and "CONV" in text


def test_no_ethosu_operator_is_an_error(tmp_path):
    tool = _tool()
    src = tmp_path / "tiny_conv.tflite"
    src.write_bytes(build_conv_tflite())
    with pytest.raises(tool.ToolError, match="no ethos-u custom operator"):
        tool.run_model(tool.read_tflite(src))
