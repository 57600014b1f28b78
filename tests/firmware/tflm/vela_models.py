"""A model that Vela splits: CONV_2D + ADD on the NPU (one ethos-u operator) and DEQUANTIZE + float SOFTMAX
left on the CPU; compiled with the installed Vela (a test dependency) for ethos-u55-128,
Ethos_U55_High_End_Embedded, Shared_Sram."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tflite_builder import Op, T, build


def source_model() -> bytes:
    r = np.random.default_rng(7)
    cin, cout = 8, 16
    w = r.integers(-127, 128, (cout, 3, 3, cin), dtype=np.int8)
    bias = r.integers(-1000, 1000, (cout,), dtype=np.int32)
    ws = [0.01] * cout
    ts = [T("x", [1, 6, 6, cin], "int8", scale=[0.05], zero_point=[-2]),
          T("w", [cout, 3, 3, cin], "int8", w, ws, [0] * cout), T("b", [cout], "int32", bias, [0.0005] * cout, [0] * cout),
          T("c", [1, 6, 6, cout], "int8", scale=[0.1], zero_point=[1]),
          T("k", [1, 1, 1, cout], "int8", r.integers(-100, 100, (1, 1, 1, cout), dtype=np.int8), [0.08], [0]),
          T("s", [1, 6, 6, cout], "int8", scale=[0.15], zero_point=[-3]),
          T("f", [1, 6, 6, cout], "float32"), T("y", [1, 6, 6, cout], "float32")]
    ops = [Op("CONV_2D", ["x", "w", "b"], ["c"], ("Conv2DOptions", {"Padding": 0, "StrideW": 1, "StrideH": 1,
                                                                    "FusedActivationFunction": 1,
                                                                    "DilationWFactor": 1, "DilationHFactor": 1})),
           Op("ADD", ["c", "k"], ["s"], ("AddOptions", {"FusedActivationFunction": 0})),
           Op("DEQUANTIZE", ["s"], ["f"]),
           Op("SOFTMAX", ["f"], ["y"], ("SoftmaxOptions", {"Beta": 1.0}))]
    return build(ts, ops, ["x"], ["y"], description="conv+add on the NPU, dequantize+softmax on the CPU")


def compile_with_vela(src: Path, out_dir: Path) -> Path:
    from fvp.host.programs.vela import compile_tflite

    return compile_tflite(src, out_dir, "ethos-u55-128", "Ethos_U55_High_End_Embedded", "Shared_Sram").path
