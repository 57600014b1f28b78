#!/usr/bin/env python3
"""Make the Ethos-U85 feature fixtures of this folder: ``torch.cond`` and ``torch.while_loop`` models lowered by
ExecuTorch's Arm backend into one U85 command stream with ``NPU_OP_BRANCH`` (Vela's inlined THEN/ELSE and COND/BODY
blocks), and ``torch.gather`` / ``torch.index_select`` on rank-2 to rank-4 tensors, which Vela lowers to the 3-D
indexed DMA (SIZE1 planes of SIZE0 rows, one int32 index per row: ExecuTorch narrows the int64 indices to int32).

Needs an environment with ``torch==2.13.0`` and ``executorch[ethos-u]==1.5.1`` (never a dependency of the project
or its tests). Each model is quantized (int8, per-channel symmetric) with calibration inputs that take every branch
(as ExecuTorch's own control-flow tests do: the quantizer's ``_quantize_with_submodules`` quantizes both branches
only when both run), partitioned for ``ethos-u85-128`` (Ethos_U85_SYS_DRAM_Mid, Shared_Sram, Vela's 2 MiB arena
cache: ExecuTorch's test compile spec for the U85) and bundled with one test case per branch: the inputs and, as
expected outputs, the TOSA reference model's results on the TOSA graph Vela compiled (``tosa-tools``), dequantized
as the program dequantizes them (without it, the quantized model's own outputs, which round differently through a
loop); the runner checks test case 0, the tests every case. Beside each program, ``NAME_u85-128.tosa_ref.npz``:
the delegate's inputs and the reference's outputs per case (``in{case}_{i}``, ``out{case}_{j}``).

    python tests/data/u85/make_programs.py OUTDIR [NAME ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch


class CondSinCos(torch.nn.Module):
    """THEN sin(x) + 1, ELSE cos(x) - 1 on the sign of sum(x): two LUT branches."""

    def forward(self, x):
        def then_(a):
            return torch.sin(a) + 1.0

        def else_(a):
            return torch.cos(a) - 1.0

        return torch.cond(x.sum() > 0, then_, else_, [x])


class CondTwoInputs(torch.nn.Module):
    """THEN (a + b, a * b), ELSE (a - b, a * b) on sum(a - b) > 0: two outputs."""

    def forward(self, a, b):
        def then_(p, q):
            return p + q, p * q

        def else_(p, q):
            return p - q, p * q

        return torch.cond((a - b).sum() > 0, then_, else_, [a, b])


class WhileGrow(torch.nn.Module):
    """Grow x by half and count the iterations (from n) until its sum passes a limit: a data-dependent number of
    iterations (none for an input already past it)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("limit", torch.tensor((12.0,)))

    def forward(self, x, n):
        def cond_(v, n, lim):
            return torch.lt(v.sum(), lim).squeeze()

        def body_(v, n, lim):
            return v * 1.5, n + 1.0, lim.clone()

        return torch.ops.higher_order.while_loop(cond_, body_, (x, n, self.limit), ())


class GatherColumns(torch.nn.Module):
    """torch.gather along the last axis with an int64 index input."""

    def forward(self, x, index):
        return torch.gather(x, 1, index)


class IndexSelect(torch.nn.Module):
    """torch.index_select on axis ``dim`` with an int64 index input (rank 3 and rank 4 inputs)."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x, index):
        return torch.index_select(x, self.dim, index)


def _cases():
    g = torch.Generator().manual_seed(31)
    x = torch.rand(1, 1, 4, 4, generator=g) + 0.05
    a, b = torch.rand(1, 2, 3, 3, generator=g), torch.rand(1, 2, 3, 3, generator=g)
    small = torch.rand(1, 1, 2, 4, generator=g) * 0.2 + 0.05
    x3, x4 = torch.randn(2, 6, 4, generator=g), torch.randn(2, 2, 5, 3, generator=g)
    cols = torch.randn(3, 8, generator=g)
    return {
        "gather_columns": (GatherColumns(), [(cols, torch.tensor([[7, 0, 3, 3, 1], [2, 2, 6, 0, 5], [4, 1, 7, 7, 0]]))]),
        "index_select_rank3": (IndexSelect(1), [(x3, torch.tensor([5, 0, 2, 5]))]),
        "index_select_rank4": (IndexSelect(2), [(x4, torch.tensor([4, 1, 1]))]),
        "cond_sincos": (CondSinCos(), [(x,), (-x,)]),
        "cond_two_inputs": (CondTwoInputs(), [(a + 0.5, b), (a, b + 0.5)]),
        "while_grow": (WhileGrow(), [(small, torch.zeros(1)), (small * 4.0, torch.ones(1)),
                                     (small * 40.0, torch.zeros(1))]),
    }


def build(name: str, module: torch.nn.Module, samples: list, out_dir: Path) -> Path:
    from executorch.backends.arm.test.tester.test_pipeline import EthosU85PipelineINT
    from executorch.backends.test.harness.stages import StageType
    from executorch.devtools import BundledProgram
    from executorch.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
    from executorch.devtools.bundled_program.serialize import serialize_from_bundled_program_to_flatbuffer

    module = module.eval()
    # ExecuTorch's own U85 test flow (compile spec, quantizer, partitioner), without its FVP run
    pipeline = EthosU85PipelineINT(module, samples[0], [], None, run_on_fvp=False,
                                   custom_path=str(out_dir / f"{name}_tosa"))  # the TOSA graph Vela compiled
    quantize = pipeline._stages[pipeline.find_pos("quantize")].args[0]
    quantize.calibration_samples = [tuple(s) for s in samples]
    pipeline.run()
    program = pipeline.tester.get_artifact(StageType.TO_EXECUTORCH)
    quantized = pipeline.tester.get_artifact(StageType.QUANTIZE)
    reference = _tosa_reference(quantized, samples, out_dir / f"{name}_tosa", out_dir / f"{name}_u85-128.tosa_ref.npz")
    cases = []
    for k, s in enumerate(samples):
        out = quantized(*s)
        out = list(out) if isinstance(out, (tuple, list)) else [out]
        if reference is not None:  # the TOSA reference model's integers, dequantized as the program does
            exact = reference[k]
            for j, (a, b) in enumerate(zip(out, exact)):
                print(f"{name} case {k} output {j}: TOSA reference - quantized model: max |difference| "
                      f"{float((a - b).abs().max()):.6f}")
            out = exact
        cases.append(MethodTestCase(inputs=list(s), expected_outputs=out))
    bundled = BundledProgram(program, [MethodTestSuite(method_name="forward", test_cases=cases)])
    path = out_dir / f"{name}_u85-128.bpte"
    path.write_bytes(serialize_from_bundled_program_to_flatbuffer(bundled))
    return path


def _input_quantization(quantized) -> list:
    """(scale, zero point, dtype) of each graph input's quantize node, in input order (None: not quantized)."""
    out = []
    for node in quantized.graph.nodes:
        if node.op != "placeholder" or "val" not in node.meta or not hasattr(node.meta["val"], "dtype"):
            continue
        q = [u for u in node.users if "quantize_per_tensor" in str(u.target)]
        out.append((float(q[0].args[1]), int(q[0].args[2]), q[0].args[5]) if q else None)
    return out


def _output_quantization(quantized) -> list:
    """(scale, zero point) of each graph output's dequantize node, in output order (None: not quantized)."""
    (node,) = [n for n in quantized.graph.nodes if n.op == "output"]
    outs = node.args[0] if isinstance(node.args[0], (tuple, list)) else [node.args[0]]
    return [(float(o.args[1]), int(o.args[2])) if "dequantize_per_tensor" in str(o.target) else None for o in outs]


def _tosa_reference(quantized, samples, tosa_dir: Path, npz: Path):
    """The delegate's oracle: each case's delegate inputs (the graph inputs quantized as the program quantizes
    them; int64 indices as int32, which is what the delegate receives) and the TOSA reference model's outputs
    for them on the TOSA graph Vela compiled (``tosa-tools``; skipped without it), written to ``npz``; returned
    per case as the program's outputs (dequantized as the program dequantizes them, in float32)."""
    try:
        import numpy as np
        import tosa_reference_model as trm
    except ImportError:
        print(f"note: tosa_reference_model is not installed: no {npz.name}", file=sys.stderr)
        return None
    (tosa,) = sorted(tosa_dir.glob("output_tag*.tosa"))
    quant = _input_quantization(quantized)
    arrays = {}
    for k, s in enumerate(samples):
        ins = []
        for i, (t, q) in enumerate(zip(s, quant)):
            a = t.detach().numpy()
            if q is not None:
                scale, zp, dtype = q
                info = torch.iinfo(dtype)
                a = np.clip(np.round(a / scale) + zp, info.min, info.max).astype(str(dtype).split(".")[-1])
            elif a.dtype == np.int64:
                a = a.astype(np.int32)
            ins.append(a)
            arrays[f"in{k}_{i}"] = a
        outs, status = trm.run(tosa.read_bytes(), ins, verbosity="LOW", initialize_variable_tensor_from_numpy=True)
        if status != trm.GraphStatus.TOSA_VALID:
            raise RuntimeError(f"tosa_reference_model: {status}")
        for j, o in enumerate(outs):
            arrays[f"out{k}_{j}"] = o
    np.savez_compressed(npz, **arrays)
    deq = _output_quantization(quantized)
    result = []
    for k, s in enumerate(samples):
        outs = []
        ref = quantized(*s)
        ref = list(ref) if isinstance(ref, (tuple, list)) else [ref]
        for j, q in enumerate(deq):
            o = arrays[f"out{k}_{j}"]
            if q is not None:
                o = (o.astype(np.float32) - np.float32(q[1])) * np.float32(q[0])
            outs.append(torch.from_numpy(np.ascontiguousarray(o.reshape(tuple(ref[j].shape)))).to(ref[j].dtype))
        result.append(outs)
    return result


def main(argv) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    out_dir = Path(argv[0])
    out_dir.mkdir(parents=True, exist_ok=True)
    cases = _cases()
    for name in argv[1:] or list(cases):
        module, samples = cases[name]
        print(build(name, module, samples, out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
