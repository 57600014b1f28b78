"""tools/tflite_npu.py: a tiny int8 TFLite model (one CONV_2D, written with the flatbuffers builder and the
generated TFLite schema classes, no TensorFlow), compiled by the installed Vela for ethos-u55-128 /
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "firmware" / "tflm"))  # tflite_builder


def _tool():
    spec = importlib.util.spec_from_file_location("tflite_npu", ROOT / "tools" / "tflite_npu.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["tflite_npu"] = mod
    spec.loader.exec_module(mod)
    return mod


def build_conv_tflite(h=8, w=8, cin=16, cout=16, k=3) -> bytes:
    """A TFLite flatbuffer: int8 [1,h,w,cin] -> CONV_2D k x k SAME, int8 weights, int32 bias -> int8 (built with
    the TFLM tests' builder, tests/firmware/tflm/tflite_builder.py)."""
    from tflite_builder import Op, T, build

    rng = np.random.default_rng(0)
    weights = rng.integers(-127, 128, size=(cout, k, k, cin), dtype=np.int8)
    bias = rng.integers(-1000, 1000, size=(cout,), dtype=np.int32)
    in_scale, w_scale, out_scale = 0.05, 0.01, 0.2
    tensors = [T("input", [1, h, w, cin], "int8", scale=[in_scale], zero_point=[0]),
               T("weights", [cout, k, k, cin], "int8", weights, [w_scale] * cout, [0] * cout),
               T("bias", [cout], "int32", bias, [in_scale * w_scale] * cout, [0] * cout),
               T("output", [1, h, w, cout], "int8", scale=[out_scale], zero_point=[0])]
    conv = Op("CONV_2D", ["input", "weights", "bias"], ["output"],
              ("Conv2DOptions", {"Padding": 0, "StrideW": 1, "StrideH": 1, "DilationWFactor": 1,
                                 "DilationHFactor": 1}))  # Padding 0 = SAME
    return build(tensors, [conv], ["input"], ["output"],
                 description="tiny int8 conv for tests/tools/test_tflite_npu.py")


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
