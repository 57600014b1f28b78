#!/usr/bin/env python3
"""Rebuild the model zoo (``fvp/host/programs/zoo/``): ExecuTorch's example models compiled for each Ethos-U target and cortex-m55.

The zoo lets ``tools/run.sh --model_name=<name>`` work without ExecuTorch installed. Each entry is one
``aot_arm_compiler`` run with ``--bundleio`` (the plain ``.pte`` is the program inside the ``.bpte``, byte for
byte what the compiler writes without ``--bundleio``), seeded so that rebuilding gives the same files and so
that programs identical across targets (float models left on the CPU) are stored once.

Needs ExecuTorch with its Arm backend (``pip install '.[executorch]'``, or a separate venv given with
``--python``)::

    python tools/build_zoo.py --python /work/et-venv/bin/python --jobs 2 --check

``--check`` runs every program on the simulator afterwards and reports the ones whose bundled check fails.

``mv2``, the tutorial's headline model, is not compiled here: it is the corpus program
``tests/data/corpus/mv2_full_u55-128.bpte`` (MobileNetV2 1.0 224 in torchvision's layout with seeded random
weights, ``tools/models/mv2_full.py``; ExecuTorch's own ``mv2`` loads torchvision's pretrained weights, a
download), copied byte for byte for ``ethos-u55-128`` only. The same bytes are one git blob, so the repository
does not grow; the wheel does, by 4.3 MB, which is why there is one MobileNetV2 and not one per target.
``--merge`` rebuilds only the given ``--models``/``--targets`` and keeps the other entries of the existing index
(``--targets cortex-m55 --merge`` adds or refreshes the Cortex-M entries alone).

``--memory-modes`` adds quantized compiles for other memory modes than the target's default (Vela's
Dedicated_Sram only for the Ethos-U65), for the sweeps of ``docs/sweeps/`` (every point of a memory-mode axis
runs a program compiled for it) and ``tools/run.sh --memory_mode=...`` without ExecuTorch::

    python tools/build_zoo.py --python /work/et-venv/bin/python --models mobilenet_v1_025 \
        --targets ethos-u55-64 ethos-u55-128 ethos-u55-256 ethos-u65-256 \
        --memory-modes Shared_Sram Sram_Only Dedicated_Sram --merge --check

The Cortex-M target (``cortex-m55``) is compiled as run.sh compiles it: without ``--delegate`` (its quantized
layers become ``cortex_m::*`` CMSIS-NN kernels), quantized only (a float program has no Cortex-M kernels), and
checked the way ``run_fvp.sh --bundle`` runs it (the semihosting runner's tolerances).
The compile step runs in worker processes of the ExecuTorch interpreter; this script itself only needs the
standard library (and the project, for ``--check``).
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ZOO = ROOT / "fvp" / "host" / "programs" / "zoo"

MODELS = ["add", "mul", "add_mul", "softmax", "linear", "conv1d", "ds_cnn", "resnet8", "mobilenet_v1_025", "lstm",
          "mv2"]
# programs the zoo copies from the test corpus instead of compiling (model -> target, quantized, the program and
# its compile log; the log's delegation lines are the entry's summary)
COPIED = {"mv2": {"target": "ethos-u55-128", "quantize": True,
                  "program": ROOT / "tests" / "data" / "corpus" / "mv2_full_u55-128.bpte"}}
ETHOS_TARGETS = ["ethos-u55-64", "ethos-u55-128", "ethos-u55-256", "ethos-u65-256"]
CORTEX_M_TARGETS = ["cortex-m55"]
TARGETS = ETHOS_TARGETS + CORTEX_M_TARGETS
SEED = 0


# ------------------------------------------------------------------------------------------- worker side
def _worker() -> int:
    """Compile the jobs given as JSON on stdin, in this (ExecuTorch) interpreter; one JSON line per job."""
    import contextlib
    import io
    import random
    import runpy

    import numpy
    import torch

    jobs = json.load(sys.stdin)
    for job in jobs:
        torch.manual_seed(SEED)
        random.seed(SEED)
        numpy.random.seed(SEED)
        sys.argv = ["aot_arm_compiler"] + job["argv"]
        buf = io.StringIO()
        ok, err = True, ""
        try:
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
                runpy.run_module("executorch.backends.arm.scripts.aot_arm_compiler", run_name="__main__")
        except SystemExit as e:
            ok, err = (e.code in (0, None)), f"exit {e.code}"
        except Exception as e:  # a model the toolchain cannot compile: reported, the build goes on
            ok, err = False, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        log = buf.getvalue()
        Path(job["log"]).write_text(log)
        summary = [ln.strip() for ln in log.splitlines() if "Delegated partitions" in ln or "not delegated" in ln]
        print(json.dumps({"key": job["key"], "ok": ok and Path(job["out"]).is_file(), "error": err,
                          "summary": summary}), flush=True)
    return 0


# ------------------------------------------------------------------------------------------- main side
def _versions(python: str) -> dict:
    code = ("import json, importlib.metadata as m\n"
            "print(json.dumps({p: m.version(p) for p in ('torch', 'executorch', 'ethos-u-vela')}))")
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout
        return json.loads(out)
    except (subprocess.CalledProcessError, ValueError, OSError):
        return {}


def _has_executorch(python: str) -> bool:
    code = "import importlib.util as u, sys; sys.exit(0 if u.find_spec('executorch.backends.arm') else 1)"
    try:
        return subprocess.run([python, "-c", code], capture_output=True).returncode == 0
    except OSError:
        return False


def _file_name(model: str, quantize: bool, targets: list[str], all_targets: list[str], digest: str,
               memory_mode: str = "") -> str:
    """``memory_mode``: a memory mode other than the target's default (its compile has a name of its own)."""
    mode = "q" if quantize else "fp"
    if memory_mode:
        return f"{model}_{mode}_{targets[0]}_{memory_mode.lower()}.bpte"
    if sorted(targets) == sorted(all_targets):
        return f"{model}_{mode}.bpte"
    if len(targets) == 1:
        return f"{model}_{mode}_{targets[0]}.bpte"
    return f"{model}_{mode}_{digest[:8]}.bpte"


def _memory_modes(target: str, wanted: list[str] | None, default: str) -> list[str]:
    """The memory modes to compile a quantized program for on ``target``: its default, and of ``wanted`` those
    Vela has for it (Dedicated_Sram: Ethos-U65 and U85 only; none for a Cortex-M target)."""
    modes = [default]
    for m in wanted or ():
        if m != default and not (m.startswith("Dedicated_Sram") and target.startswith("ethos-u55")):
            modes.append(m)
    return modes


def _check(entries: list[dict], zoo: Path) -> int:
    """Run every zoo program on the simulator (bundled check); returns the number of failures."""
    sys.path.insert(0, str(ROOT))
    from fvp.host.programs.et_build import board_overrides

    failures = 0
    for e in entries:
        board, keys = board_overrides(e["target"], e["system_config"], e["memory_mode"])
        cmd = [sys.executable, "-m", "fvp", "run", str(zoo / "programs" / e["file"]), "-c", board]
        cmd += [x for k in keys for x in ("-C", k)]
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        passed = p.returncode == 0 and "Test_result: PASS" in p.stdout
        if not passed:
            failures += 1
            bad = [ln for ln in (p.stdout + p.stderr).splitlines() if ln[:1] in "EF" or "Missing operator" in ln]
            print(f"CHECK FAIL {e['model']} {e['target']} q={e['quantize']}: exit {p.returncode}; "
                  f"{' | '.join(bad[:3])}")
        else:
            print(f"check ok   {e['model']} {e['target']} q={e['quantize']}")
    return failures


def main(argv=None) -> int:
    # what run.sh fixes per target, from the simulator's own table (this side only: the worker runs under the
    # ExecuTorch interpreter, which need not have the simulator's dependencies)
    sys.path.insert(0, str(ROOT))
    from fvp.host.programs.et_build import default_memory_mode, default_system_config, is_cortex_m

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=None,
                    help="interpreter with ExecuTorch's Arm backend (default: this one; env EXECUTORCH_PYTHON)")
    ap.add_argument("--models", nargs="*", default=MODELS, help="model names (default: %(default)s)")
    ap.add_argument("--targets", nargs="*", default=TARGETS, help="targets (default: %(default)s)")
    ap.add_argument("--jobs", type=int, default=1, help="parallel compiler processes")
    ap.add_argument("--out", default=str(ZOO), help="zoo directory (default: fvp/host/programs/zoo)")
    ap.add_argument("--check", action="store_true", help="run every program on the simulator afterwards")
    ap.add_argument("--check-only", action="store_true", help="only run the check on the existing zoo")
    ap.add_argument("--keep-going", action="store_true", help="write the index even if some compiles failed")
    ap.add_argument("--merge", action="store_true",
                    help="keep the existing index's entries for the models/targets not rebuilt now")
    ap.add_argument("--memory-modes", nargs="*", default=None, metavar="MODE",
                    help="also compile the quantized Ethos-U programs for these memory modes (default: each "
                         "target's default only; Dedicated_Sram is skipped for Ethos-U55)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return _worker()

    if args.check_only:
        index = json.loads((Path(args.out) / "index.json").read_text())
        bad = _check(index["entries"], Path(args.out))
        print(f"check: {len(index['entries']) - bad} passed, {bad} failed")
        return 1 if bad else 0
    python = args.python or os.environ.get("EXECUTORCH_PYTHON") or sys.executable
    if not _has_executorch(python):
        print(f"build_zoo: error: {python} has no ExecuTorch Arm backend; pip install '.[executorch]' "
              f"(torch==2.13.0, executorch[ethos-u]==1.5.1) or pass --python", file=sys.stderr)
        return 2
    zoo = Path(args.out)
    work = Path(tempfile.mkdtemp(prefix="fvp-zoo-"))
    jobs = []
    for model in args.models:
        if model in COPIED:
            continue
        for target in args.targets:
            default_mode = default_memory_mode(target)
            for quantize in ((True,) if is_cortex_m(target) else (True, False)):
                modes = ([default_mode] if is_cortex_m(target) or not quantize
                         else _memory_modes(target, args.memory_modes, default_mode))
                for memory_mode in modes:
                    other = memory_mode if memory_mode != default_mode else ""
                    key = f"{model}|{target}|{int(quantize)}" + (f"|{other}" if other else "")
                    out = work / (f"{model}_{'q' if quantize else 'fp'}_{target}"
                                  + (f"_{other.lower()}" if other else "") + ".bpte")
                    argv = [f"--model_name={model}", "--delegate", f"--target={target}",
                            f"--system_config={default_system_config(target)}",
                            f"--memory_mode={memory_mode}", "--bundleio", "-o", str(out)]
                    if is_cortex_m(target):  # run.sh drops --delegate for the Cortex-M targets
                        argv.remove("--delegate")
                    if quantize:
                        argv.insert(2 if "--delegate" in argv else 1, "--quantize")
                    jobs.append({"key": key, "argv": argv, "out": str(out), "log": str(out.with_suffix(".log")),
                                 "model": model, "target": target, "quantize": quantize,
                                 "memory_mode": memory_mode, "other_mode": other})
    n = max(1, args.jobs)
    # a compile depends on what its worker compiled before it (an example model's inputs are drawn when its module
    # is first imported), so the Ethos-U and the Cortex-M jobs get workers of their own: each family's programs are
    # the same whatever the other family's job list is
    results = {}
    widx = 0
    for family in ([j for j in jobs if not is_cortex_m(j["target"])], [j for j in jobs if is_cortex_m(j["target"])]):
        procs = []
        for batch in (family[i::n] for i in range(n)):
            if not batch:
                continue
            errlog = open(work / f"worker{widx}.stderr", "w")
            widx += 1
            p = subprocess.Popen([python, str(Path(__file__).resolve()), "--worker"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=errlog, text=True, cwd=str(work))
            p.stdin.write(json.dumps(batch))
            p.stdin.close()
            procs.append(p)
        for p in procs:
            for line in p.stdout:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                results[r["key"]] = r
                status = "ok" if r["ok"] else f"FAILED ({r['error']})"
                print(f"compiled {r['key']:40s} {status} {' '.join(r['summary'])}", flush=True)
            p.wait()
    for model, c in COPIED.items():  # the corpus compile of record, with the summary of its log
        if model in args.models and c["target"] in args.targets:
            key = f"{model}|{c['target']}|{int(c['quantize'])}"
            log = c["program"].with_suffix(".log").read_text()
            results[key] = {"key": key, "ok": True, "summary": [ln.strip() for ln in log.splitlines() if
                                                                "Delegated partitions" in ln or "not delegated" in ln]}
            jobs.append({"key": key, "out": str(c["program"]), "model": model, "target": c["target"],
                         "quantize": c["quantize"], "memory_mode": default_memory_mode(c["target"]),
                         "other_mode": ""})
    failed = [j for j in jobs if not results.get(j["key"], {}).get("ok")]
    for j in failed:
        print(f"build_zoo: {j['key']} did not compile; see {j['log']} and {work}/worker*.stderr", file=sys.stderr)
    if failed and not args.keep_going:
        return 1

    # deduplicate identical programs, name the files, write the index
    groups: dict[str, list[dict]] = {}
    for j in jobs:
        if j in failed:
            continue
        data = Path(j["out"]).read_bytes()
        j["sha256"] = hashlib.sha256(data).hexdigest()
        j["size"] = len(data)
        groups.setdefault(j["sha256"], []).append(j)
    prog_dir = zoo / "programs"
    kept = []
    if args.merge and (zoo / "index.json").is_file():
        rebuilt = {(j["model"], j["target"], j["quantize"], j["memory_mode"]) for j in jobs}
        kept = [e for e in json.loads((zoo / "index.json").read_text())["entries"]
                if (e["model"], e["target"], e["quantize"], e["memory_mode"]) not in rebuilt]
    keep_files = {e["file"] for e in kept}
    if prog_dir.exists():
        for f in prog_dir.iterdir():
            if f.name not in keep_files:
                f.unlink()
    prog_dir.mkdir(parents=True, exist_ok=True)
    entries = list(kept)
    for digest, members in groups.items():
        m0 = members[0]
        name = _file_name(m0["model"], m0["quantize"], [m["target"] for m in members], ETHOS_TARGETS, digest,
                          m0["other_mode"])
        if name in keep_files:
            name = _file_name(m0["model"], m0["quantize"], [m["target"] for m in members], [], digest)
        shutil.copyfile(m0["out"], prog_dir / name)
        for m in members:
            entries.append({"model": m["model"], "target": m["target"], "quantize": m["quantize"],
                            "delegate": not is_cortex_m(m["target"]),
                            "system_config": default_system_config(m["target"]),
                            "memory_mode": m["memory_mode"], "file": name,
                            "sha256": digest, "summary": results[m["key"]]["summary"]})
    order_m = {m: i for i, m in enumerate(MODELS + [m for m in args.models if m not in MODELS])}
    order_t = {t: i for i, t in enumerate(TARGETS + [t for t in args.targets if t not in TARGETS])}
    entries.sort(key=lambda e: (order_t.get(e["target"], 99) >= len(ETHOS_TARGETS), order_m.get(e["model"], 99),
                                order_t.get(e["target"], 99), not e["quantize"],
                                e["memory_mode"] != default_memory_mode(e["target"]), e["memory_mode"]))
    index = {
        "about": "ExecuTorch example models compiled by tools/build_zoo.py with aot_arm_compiler --delegate "
                 "[--quantize] --bundleio for the Ethos-U targets and --quantize --bundleio for cortex-m55, "
                 "torch/random/numpy seeded with 0",
        "versions": _versions(python),
        "seed": SEED,
        "entries": entries,
    }
    (zoo / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    total = sum(f.stat().st_size for f in prog_dir.iterdir())
    nfiles = sum(1 for _ in prog_dir.iterdir())
    print(f"zoo: {len(entries)} entries, {nfiles} files, {total / 1e6:.2f} MB in {prog_dir}")
    if not failed:
        shutil.rmtree(work, ignore_errors=True)
    if args.check:
        bad = _check(entries, zoo)
        print(f"check: {len(entries) - bad} passed, {bad} failed")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
