"""Whole-program references for the model zoo's cortex-m55 programs: ExecuTorch's own evaluation of each one.

For every cortex-m55 entry of ``fvp/host/programs/zoo/index.json`` this compiles the model again exactly as
``tools/build_zoo.py --jobs 2`` does (same ``aot_arm_compiler`` arguments and seeds, and the same two Cortex-M
worker processes compiling the same models in the same order: a compile depends on what its process compiled
before, e.g. an example model's inputs drawn when its module is first imported), checks that the program is byte
for byte the zoo's (its sha256), and runs the Cortex-M edge program, the graph of ``cortex_m::*`` operators with
their Python reference implementations, on the bundled inputs, writing the outputs to ``zoo_refs.npz``
(``<model>__out<i>``). Two things make this the computation the firmware does:

- the inputs as the runner sees them: ``load_bundled_input`` copies the bundled tensor's bytes (contiguous NCHW)
  into the program's channels-last input unchanged, so a 4-D input is the same bytes read as NHWC;
- the average pool rounded as CMSIS-NN does (mean of the int8 values, halves away from zero) instead of the
  reference's float average rounded to even (the one operator of these models where they differ).

Run with the optional toolchain (never a test dependency):

    /work/et-venv/bin/python tests/data/cortex_m/make_zoo_refs.py [--jobs 2]
"""

import copy
import hashlib
import json
import os
import random
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy
import torch

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tools"))
import build_zoo  # noqa: E402


def _as_runner_sees(t):
    if isinstance(t, (tuple, list)):
        return type(t)(_as_runner_sees(x) for x in t)
    if isinstance(t, torch.Tensor) and t.dim() == 4 and not t.is_contiguous():
        n, c, h, w = t.shape
        return t.contiguous().reshape(n, h, w, c).permute(0, 3, 1, 2)
    return t


def _flat(r):
    if isinstance(r, torch.Tensor):
        return [r]
    return [x for item in r for x in _flat(item)]


def reference(model: str, target: str, work: Path):
    """Compile as build_zoo's worker does (seed, then run aot_arm_compiler as __main__), keeping a copy of the
    Cortex-M edge program and the bundled inputs; return the program's sha256 and the edge program's outputs."""
    captured = {}
    torch.manual_seed(build_zoo.SEED)
    random.seed(build_zoo.SEED)
    numpy.random.seed(build_zoo.SEED)
    # imported after seeding, like the worker (an import may draw random numbers); patched before the compile
    from executorch.backends.cortex_m.passes.cortex_m_pass_manager import CortexMPassManager
    import executorch.backends.cortex_m.ops.operators as cm_ops
    from executorch.devtools.bundled_program.config import MethodTestCase

    transform, tc_init = CortexMPassManager.transform, MethodTestCase.__init__

    def keep_program(self, *args, **kwargs):
        ep = transform(self, *args, **kwargs)
        captured["program"] = copy.deepcopy(ep)
        return ep

    def keep_inputs(self, *args, **kwargs):
        tc_init(self, *args, **kwargs)
        captured["inputs"] = kwargs["inputs"] if "inputs" in kwargs else args[0]

    out = work / f"{model}.bpte"
    argv = [f"--model_name={model}", f"--target={target}",
            f"--system_config={build_zoo.default_system_config(target)}",
            f"--memory_mode={build_zoo.default_memory_mode(target)}", "--bundleio", "-o", str(out)]
    argv.insert(1, "--quantize")
    CortexMPassManager.transform, MethodTestCase.__init__ = keep_program, keep_inputs
    sys.argv = ["aot_arm_compiler"] + argv
    try:
        runpy.run_module("executorch.backends.arm.scripts.aot_arm_compiler", run_name="__main__")
    except SystemExit as e:
        if e.code not in (0, None):
            raise
    finally:
        CortexMPassManager.transform, MethodTestCase.__init__ = transform, tc_init
    # the average pool rounded as CMSIS-NN rounds it: the mean of the raw int8 values, halves away from zero
    dequant, quant = cm_ops.dequantize_per_tensor_cmsis, cm_ops.quantize_per_tensor_cmsis
    cm_ops.dequantize_per_tensor_cmsis = lambda q, zero_point, multiplier, shift: q.double()
    cm_ops.quantize_per_tensor_cmsis = lambda x, zero_point, multiplier, shift, qmin=-128, qmax=127: (
        (torch.sign(x) * torch.floor(x.abs() + 0.5)).clamp(qmin, qmax).to(torch.int8))
    try:
        with torch.no_grad():
            res = captured["program"].module()(*[_as_runner_sees(t) for t in captured["inputs"]])
    finally:
        cm_ops.dequantize_per_tensor_cmsis, cm_ops.quantize_per_tensor_cmsis = dequant, quant
    return hashlib.sha256(out.read_bytes()).hexdigest(), [r.contiguous().numpy().copy() for r in _flat(res)]


def worker(models: list[str], target: str, dest: Path) -> None:
    """Compile ``models`` in this process, in this order; write their references to ``dest`` (npz)."""
    index = {(e["model"], e["target"]): e for e in json.loads((ROOT / "fvp" / "host" / "programs" / "zoo" / "index.json").read_text())
             ["entries"]}
    refs = {}
    work = Path(tempfile.mkdtemp(prefix="zoo-refs-"))
    os.chdir(work)
    for model in models:
        e = index[(model, target)]
        digest, outs = reference(model, target, work)
        if digest != e["sha256"]:
            raise SystemExit(f"{model}: the recompiled program differs from the zoo's {e['file']}")
        for i, o in enumerate(outs):
            refs[f"{model}__out{i}"] = o
        print(f"{model}: {len(outs)} outputs, program identical to {e['file']}", flush=True)
    numpy.savez(dest, **refs)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        return worker(sys.argv[4:], sys.argv[2], Path(sys.argv[3]))
    jobs = int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else 2
    index = json.loads((ROOT / "fvp" / "host" / "programs" / "zoo" / "index.json").read_text())
    target = "cortex-m55"
    models = [m for m in build_zoo.MODELS if any(e["model"] == m and e["target"] == target
                                                 for e in index["entries"])]
    tmp = Path(tempfile.mkdtemp(prefix="zoo-refs-"))
    procs = []
    for k in range(jobs):
        batch = models[k::jobs]  # build_zoo's split of its job list
        if batch:
            procs.append(subprocess.Popen([sys.executable, __file__, "--worker", target, str(tmp / f"w{k}.npz"),
                                           *batch]))
    if any(p.wait() for p in procs):
        raise SystemExit("a worker failed")
    refs = {}
    for k in range(len(procs)):
        with numpy.load(tmp / f"w{k}.npz") as z:
            refs.update({name: z[name] for name in z.files})
    numpy.savez_compressed(Path(__file__).with_name("zoo_refs.npz"), **refs)
    print(f"wrote {len(refs)} outputs of {len(models)} programs")


if __name__ == "__main__":
    main()
