#!/usr/bin/env python3
"""Real third-party ``.tflite`` models through Vela and a plain ``fvp run``, against TFLite Micro's own interpreter.

For every model and every configuration asked for, this compiles the model with Vela (``fvp/host/programs/vela.py``,
the flags MLEK's build passes: ``--accelerator-config``, ``--system-config``, ``--memory-mode``, Vela's ``vela.ini``),
runs the compiled file with ``python -m fvp run MODEL_vela.tflite -i ... -o ...`` and NOTHING else (no
``--target``, no ``-C``: the program must pick its board itself), on a few seeded inputs, and compares every output
byte with TFLite Micro's interpreter (PyPI ``tflite-micro``) run on the model before Vela. It prints the table:

    model | origin | configuration | bit-exact (n/total) | our NPU cycles | Vela's estimate | note

Our NPU cycles are the ``NPU TOTAL cycles`` of the run's PMU block (the first input's run); Vela's estimate is the
``cycles_npu`` of its summary CSV. The note is the first line that says why a run was not exact (the runner's
``ERROR`` line, the trailer's reason, or how many output bytes differ).

A model that is already Vela-compiled (``person_detect_vela.tflite``) is given as ``COMPILED=SOURCE``: it runs as
it is (the configuration column says what its command stream was built for) and the oracle runs SOURCE.

Configurations (``--configs``, comma-separated; the default is all but the legacy ones):

    u55-64, u55-128, u55-256   Ethos_U55_High_End_Embedded, Shared_Sram
    u65-256, u65-512           Ethos_U65_High_End, Dedicated_Sram (MLEK: arena in DDR, a 384 KiB fast scratch)
    u85-256                    Ethos_U85_SYS_DRAM_Mid, Dedicated_Sram with a 384 KiB cache (ExecuTorch run.sh's
                               Dedicated_Sram_384KB for the U85)
    <name>-legacy              the same with Vela's ``--debug-force-legacy-core`` (Vela's older compiler core)
    cpu                        no Vela: the source model on the CPU alone (TFLite Micro's reference kernels), with
                               a 16 MiB tensor arena in DDR (a float or unplanned model needs more than 2 MiB)

``--vela PATH`` runs another Vela executable (e.g. a 3.x release in its own venv); ``--legacy-vela PATH`` only for
the ``-legacy`` configurations (then without the flag). ``--by-hand`` adds the flags a user would give by hand
(``--target``, ``-C npu.memory_mode`` and the MLEK pools) to every run, to tell a wrong configuration from a wrong
kernel.

The oracle: ``tflite_micro.python.tflite_micro.runtime.Interpreter`` on the source model, a fresh interpreter per
input (variable tensors start at zero, as after TFLite Micro's AllocateTensors). ``--litert`` also runs LiteRT's
reference kernels (``ai-edge-litert``, ``OpResolverType.BUILTIN_REF``) and notes where it disagrees with TFLite
Micro (TFLite Micro's answer is the one the firmware must give).

Needs ``ethos-u-vela`` and ``tflite-micro`` (tools extras, never needed by the core or the tests)::

    python -m venv /tmp/tflmvenv --system-site-packages && /tmp/tflmvenv/bin/pip install tflite-micro ai-edge-litert
    /tmp/tflmvenv/bin/python tools/validate_real_models.py --manifest models.json --work /tmp/vt \
        [--configs u55-128,u65-256]
    /tmp/tflmvenv/bin/python tools/validate_real_models.py model.tflite person_detect_vela.tflite=person_detect.tflite

Manifest (``--manifest``): a JSON list of ``{"name", "path", "origin", "oracle" (optional: the source of a compiled
file), "configs" (optional)}``; paths relative to the manifest. ``--json OUT`` writes every row with its details.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HEE, U65_HE, U85_MID = "Ethos_U55_High_End_Embedded", "Ethos_U65_High_End", "Ethos_U85_SYS_DRAM_Mid"
MLEK_CACHE = 384 * 1024  # MLEK's Ethos-U fast memory for Dedicated_Sram (ETHOS_U_NPU_CACHE_SIZE 0x60000)
# name -> (accelerator, system config, memory mode, extra Vela flags)
CONFIGS = {
    "u55-64": ("ethos-u55-64", HEE, "Shared_Sram", ()),
    "u55-128": ("ethos-u55-128", HEE, "Shared_Sram", ()),
    "u55-256": ("ethos-u55-256", HEE, "Shared_Sram", ()),
    "u65-256": ("ethos-u65-256", U65_HE, "Dedicated_Sram", (f"--arena-cache-size={MLEK_CACHE}",)),
    "u65-512": ("ethos-u65-512", U65_HE, "Dedicated_Sram", (f"--arena-cache-size={MLEK_CACHE}",)),
    "u85-256": ("ethos-u85-256", U85_MID, "Dedicated_Sram", (f"--arena-cache-size={MLEK_CACHE}",)),
}
for _n, _c in list(CONFIGS.items()):
    CONFIGS[f"{_n}-legacy"] = (*_c[:3], (*_c[3], "--debug-force-legacy-core"))
DEFAULT_CONFIGS = [n for n in CONFIGS if not n.endswith("-legacy")]
CPU = "cpu"  # the source model as it is, without Vela
CPU_ARGS = ["-C", "firmware.pools.arena.region=DDR", "-C", "firmware.pools.arena.size=16MiB"]


@dataclass
class Row:
    model: str
    origin: str
    config: str
    exact: int = 0
    total: int = 0
    npu_cycles: int | None = None
    vela_cycles: int | None = None
    note: str = ""
    details: list = field(default_factory=list)
    seconds: float = 0.0


def by_hand_args(accel: str, memory_mode: str) -> list[str]:
    """What a user passes by hand for a program compiled for ``accel``/``memory_mode`` (MLEK's layout)."""
    args = ["--target", accel]
    if memory_mode.startswith("Dedicated_Sram"):
        args += ["-C", f"npu.memory_mode={memory_mode}", "-C", "firmware.pools.arena.region=DDR",
                 "-C", "firmware.pools.fast_scratch.region=SRAM",
                 "-C", f"firmware.pools.fast_scratch.size={MLEK_CACHE}",
                 "-C", "firmware.pools.fast_scratch.npu=true"]
    return args


# ----------------------------------------------------------------------------------------------- inputs, oracle

def model_io(data: bytes):
    from firmware.tflm.model import load_model

    m = load_model(data)
    return ([(m.tensors[i].dtype, tuple(m.tensors[i].shape)) for i in m.inputs],
            [(m.tensors[i].dtype, tuple(m.tensors[i].shape)) for i in m.outputs])


def make_inputs(specs, seed: int) -> list[np.ndarray]:
    """Seeded inputs over each input type's whole range (floats: standard normal)."""
    r = np.random.default_rng(seed)
    out = []
    for dtype, shape in specs:
        dt = np.dtype(dtype)
        if dt.kind == "f":
            out.append(r.standard_normal(shape).astype(dt))
        elif dt.kind in "iu":
            info = np.iinfo(dt)
            out.append(r.integers(info.min, info.max, shape, dtype=dt, endpoint=True))
        elif dt.kind == "b":
            out.append(r.integers(0, 2, shape).astype(dt))
        else:
            raise SystemExit(f"input type {dt} not supported by this tool")
    return out


def tflm_oracle(source: bytes, inputs: list[np.ndarray], n_outputs: int) -> list[np.ndarray]:
    """TFLite Micro's interpreter (PyPI tflite-micro) on ``source``: one fresh interpreter, one inference."""
    try:
        from tflite_micro.python.tflite_micro import runtime
    except ImportError:
        raise SystemExit("the oracle needs TFLite Micro's interpreter: pip install tflite-micro") from None
    it = runtime.Interpreter.from_bytes(source, arena_size=16 * 1024 * 1024)
    for k, x in enumerate(inputs):
        it.set_input(x, k)
    it.invoke()
    return [np.array(it.get_output(k)) for k in range(n_outputs)]


def litert_outputs(source: bytes, inputs: list[np.ndarray]) -> list[np.ndarray] | None:
    """LiteRT's reference kernels on ``source`` (None when ai-edge-litert is not installed or refuses the model)."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        return None
    try:
        it = Interpreter(model_content=source, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
        for d, x in zip(it.get_input_details(), inputs):
            it.set_tensor(d["index"], x)
        it.invoke()
        return [it.get_tensor(d["index"]) for d in it.get_output_details()]
    except Exception:  # noqa: BLE001 - LiteRT refuses some TFLite Micro models (signal operators, ...)
        return None


# ----------------------------------------------------------------------------------------------- Vela, fvp run

def compile_model(src: Path, name: str, config: str, work: Path, vela: str | None) -> tuple[Path, int | None]:
    """The Vela output for ``config`` (kept in ``work`` by the source's hash and the flags) and Vela's estimate."""
    from fvp.host.programs.vela import compile_tflite, read_summary

    accel, sc, mm, extra = CONFIGS[config]
    key = hashlib.sha256(src.read_bytes() + repr((accel, sc, mm, extra, vela)).encode()).hexdigest()[:16]
    out = work / "vela" / f"{name}_{config}_{key}"
    compiled = out / f"{src.stem}_vela.tflite"
    summary = out / f"{src.stem}_summary_{sc}.csv"
    if not compiled.is_file():
        extra_args = [a for a in extra if not (vela and a == "--debug-force-legacy-core")]
        compile_tflite(src, out, accel, sc, mm, extra_args, vela=vela, label=name)
    est = read_summary(summary)
    return compiled, (est or {}).get("npu")


_ERROR = re.compile(r"^(?:E: |ERROR - |fvp: error: |Info: Simulation is stopping\. Reason: )(.*?)"
                    r"(?: \(\w+\.py:\d+\))?$", re.M)


def fvp_run(compiled: Path, inputs: list[np.ndarray], tmp: Path, extra=()) -> tuple[int, str, list[bytes]]:
    """``python -m fvp run COMPILED -i in0.npy ... -o out``: (exit status, log, the output files' bytes)."""
    args = []
    for k, x in enumerate(inputs):
        p = tmp / f"in{k}.npy"
        np.save(p, x)
        args += ["-i", str(p)]
    for old in tmp.glob("out-*.bin"):
        old.unlink()
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "fvp", "run", str(compiled), *args, "-o", str(tmp / "out"), *extra],
                       capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    outs, k = [], 0
    while (tmp / f"out-{k}.bin").is_file():
        outs.append((tmp / f"out-{k}.bin").read_bytes())
        k += 1
    return p.returncode, p.stdout + p.stderr, outs


def first_problem(log: str) -> str:
    m = _ERROR.search(log)
    if m:
        return m.group(1).strip()[:160]
    lines = [ln for ln in log.splitlines() if ln.strip()]
    return lines[-1][:160] if lines else "no output"


def npu_total(log: str) -> int | None:
    m = re.search(r"NPU TOTAL(?: cycles)?: (\d+)", log)
    return int(m.group(1)) if m else None


def compiled_config(data: bytes) -> str:
    """What a compiled file's command stream was built for (the OPTIMIZER_CONFIG word), for the table."""
    from fvp.host.programs.tflm_board import tflite_configurations

    ops = tflite_configurations(data)
    target = (ops[0]["target"] or "?") if ops else "?"
    mode = ops[0]["memory_mode"] if ops else ""
    return f"{target} {mode} (as compiled)".replace("  ", " ")


# ----------------------------------------------------------------------------------------------- the table

def validate(entry: dict, config: str | None, work: Path, n_inputs: int, seed: int, vela: str | None,
             legacy_vela: str | None, by_hand: bool, litert: bool) -> Row:
    name, src = entry["name"], Path(entry["path"])
    oracle_src = Path(entry.get("oracle") or src)
    row = Row(model=name, origin=entry.get("origin", ""), config=config or compiled_config(src.read_bytes()))
    t0 = time.perf_counter()
    try:
        if config is None or config == CPU:
            compiled, row.vela_cycles = src, None
        else:
            use = legacy_vela if (legacy_vela and config.endswith("-legacy")) else vela
            compiled, row.vela_cycles = compile_model(src, name, config, work, use)
    except Exception as e:  # noqa: BLE001 - Vela failed: the row says so
        row.note = f"Vela: {str(e).splitlines()[0][:150]}"
        return row
    source = oracle_src.read_bytes()
    in_specs, out_specs = model_io(source)
    extra = list(CPU_ARGS) if config == CPU else []
    if by_hand and config not in (None, CPU):
        accel, _, mm, _ = CONFIGS[config]
        extra = by_hand_args(accel, mm)
    notes = []
    with tempfile.TemporaryDirectory(prefix="vtflm-") as tmp:
        for k in range(n_inputs):
            inputs = make_inputs(in_specs, seed + k)
            try:
                want = tflm_oracle(source, inputs, len(out_specs))
            except Exception as e:  # noqa: BLE001 - TFLite Micro refuses the model: nothing to compare with
                row.note = f"oracle (TFLite Micro) failed: {str(e).splitlines()[0][:120]}"
                return row
            rc, log, got = fvp_run(compiled, inputs, Path(tmp), extra)
            row.total += 1
            if k == 0 and config != CPU:
                row.npu_cycles = npu_total(log)
            detail = {"input_seed": seed + k, "exit": rc}
            if litert:
                lite = litert_outputs(source, inputs)
                if lite is not None:
                    detail["litert_agrees"] = len(lite) == len(want) and all(
                        np.array_equal(a, b) for a, b in zip(lite, want))
            if rc != 0 or len(got) != len(want):
                detail["problem"] = first_problem(log)
                notes.append(f"exit {rc}: {detail['problem']}" if rc else
                             f"{len(got)} outputs written, {len(want)} expected")
            else:
                diff = [int(np.count_nonzero(np.frombuffer(g, np.uint8) != np.frombuffer(w.tobytes(), np.uint8)))
                        if len(g) == w.nbytes else -1 for g, w in zip(got, want)]
                detail["bytes_differ"] = diff
                if all(d == 0 for d in diff):
                    row.exact += 1
                else:
                    notes.append("outputs differ: " + ", ".join(
                        f"out{i} {'size' if d < 0 else f'{d}/{want[i].nbytes} bytes'}"
                        for i, d in enumerate(diff) if d))
            row.details.append(detail)
    row.note = notes[0] if notes else ""
    row.seconds = time.perf_counter() - t0
    return row


def print_table(rows: list[Row]) -> None:
    head = ["model", "origin", "configuration", "bit-exact", "our NPU cycles", "Vela estimate", "note"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cyc = f"{r.npu_cycles:,}" if r.npu_cycles is not None else "-"
        est = f"{r.vela_cycles:,}" if r.vela_cycles is not None else "-"
        print(f"| {r.model} | {r.origin} | {r.config} | {r.exact}/{r.total} | {cyc} | {est} | {r.note} |")
    exact = sum(r.exact for r in rows)
    total = sum(r.total for r in rows)
    print(f"\n{len(rows)} programs, {total} runs: {exact} bit-exact")


def load_entries(args) -> list[dict]:
    entries = []
    if args.manifest:
        base = Path(args.manifest).resolve().parent
        for e in json.loads(Path(args.manifest).read_text()):
            e = dict(e)
            e["path"] = str((base / e["path"]).resolve())
            if e.get("oracle"):
                e["oracle"] = str((base / e["oracle"]).resolve())
            entries.append(e)
    for spec in args.models:
        compiled, _, source = spec.partition("=")
        e = {"name": Path(compiled).stem, "path": compiled, "origin": ""}
        if source:
            e["oracle"] = source
        entries.append(e)
    return entries


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", help="MODEL.tflite (compiled for each configuration) or COMPILED=SOURCE")
    ap.add_argument("--manifest", help="a JSON list of models (name, path, origin, oracle, configs)")
    ap.add_argument("--configs", default=",".join(DEFAULT_CONFIGS),
                    help="comma-separated: " + ", ".join([*CONFIGS, CPU]))
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--inputs", type=int, default=2, help="seeded inputs per program (default 2)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", default=None, help="where the Vela outputs are kept (default: a temporary directory)")
    ap.add_argument("--vela", help="a Vela executable to use instead of this interpreter's ethosu.vela")
    ap.add_argument("--legacy-vela", help="the Vela executable for the -legacy configurations (e.g. Vela 3.x)")
    ap.add_argument("--by-hand", action="store_true", help="pass --target and the memory mode's -C flags as well")
    ap.add_argument("--litert", action="store_true", help="also compare LiteRT's reference kernels with TFLite Micro")
    ap.add_argument("--json", help="write the rows with their details to this file")
    args = ap.parse_args(argv)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    for c in configs:
        if c not in CONFIGS and c != CPU:
            ap.error(f"--configs: unknown configuration {c!r}; allowed: {', '.join([*CONFIGS, CPU])}")
    entries = load_entries(args)
    if args.only:
        keep = set(args.only.split(","))
        entries = [e for e in entries if e["name"] in keep]
    if not entries:
        ap.error("no models (give MODEL.tflite files or --manifest)")
    work_ctx = tempfile.TemporaryDirectory(prefix="validate-tflm-") if args.work is None else None
    work = Path(args.work or work_ctx.name)
    rows = []
    from fvp.host.programs.vela import has_ethosu_operator

    for e in entries:
        precompiled = has_ethosu_operator(Path(e["path"]).read_bytes())
        for c in ([None] if precompiled else [c for c in configs if c in (e.get("configs") or configs)]):
            row = validate(e, c, work, args.inputs, args.seed, args.vela, args.legacy_vela, args.by_hand, args.litert)
            rows.append(row)
            print(f"  {row.model} {row.config}: {row.exact}/{row.total} {row.note} ({row.seconds:.1f} s)",
                  file=sys.stderr, flush=True)
    print_table(rows)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
