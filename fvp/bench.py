"""``fvp bench`` / ``tools/bench.py``: how fast the simulator is, measured, not guessed.

For each program it starts one child process that loads the board, runs the program once to warm up (numba
JIT from its disk cache, weight decoding), then ``--repeat`` more times, each a full run (platform build,
program load, every NPU operation and CPU kernel, outputs), and reports the median and minimum wall time,
simulated NPU cycles, MACs, host MACs per second, the child's peak RSS, and the ratio to a reference measured
in the same child: the time numpy's float64 matrix product (BLAS) takes for the same number of
multiply-accumulates, which is what exact integer accumulation can cost at best on this host. It also times
``fvp run MODEL`` as a new process with an empty and with a warm numba cache. Output: a table, and JSON with
``--json``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_PROGRAMS = ["mv2_full_u55-128.bpte", "mobilenet_v1_025_u55-128.bpte", "resnet8_u55-128.bpte",
                    "ds_cnn_u55-128.bpte"]


def _default_corpus() -> Path:
    here = Path(__file__).resolve().parent.parent
    for cand in (here / "tests" / "data" / "corpus", here.parent / "shared" / "corpus"):
        if cand.is_dir():
            return cand
    return Path("corpus")


_GEMM_SCRIPT = """
import time, numpy as np
m, k, n = 1024, 512, 512
a = np.random.default_rng(0).standard_normal((m, k)); b = np.random.default_rng(1).standard_normal((k, n))
a @ b
best = min((lambda t: (a @ b, time.perf_counter() - t)[1])(time.perf_counter()) for _ in range(7))
print(m * k * n / best)
"""


def gemm_macs_per_second() -> float:
    """This host's best float64 matrix-product rate (multiply-accumulates per second).

    Measured in a separate process with BLAS allowed every core (the simulator itself runs BLAS on one thread),
    on a product large enough (1024 x 512 x 512, 268 M MACs) to run at full speed; best of 7.
    """
    threads = str(os.cpu_count() or 1)
    env = dict(os.environ, OPENBLAS_NUM_THREADS=threads, MKL_NUM_THREADS=threads, BLIS_NUM_THREADS=threads)
    p = subprocess.run([sys.executable, "-c", _GEMM_SCRIPT], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"GEMM reference failed: {p.stderr.strip().splitlines()[-1:]}")
    return float(p.stdout.strip())


def _run_once(spec, model: bytes, name: str):
    from .platform import Platform

    p = Platform(spec, model=model, model_name=name, args={}, out=io.StringIO(), quiet_guest=True)
    r = p.run()
    return r


def child_main(argv) -> int:
    """One program in this process: warm-up, then timed runs; prints one JSON line."""
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--board", default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("-C", dest="overrides", action="append", default=[])
    a = ap.parse_args(argv)
    from .program_board import resolve

    model = Path(a.model).read_bytes()
    res = resolve(model, board=a.board, overrides=a.overrides, model_name=Path(a.model).name)
    for note in res.notes:
        print(f"fvp: note: {note}", file=sys.stderr)
    spec = res.load(["devices.uart0.out_file=/dev/null"])
    t0 = time.perf_counter()
    first = _run_once(spec, model, Path(a.model).name)
    first_s = time.perf_counter() - t0
    times = []
    result = first
    for _ in range(a.repeat):
        t = time.perf_counter()
        result = _run_once(spec, model, Path(a.model).name)
        times.append(time.perf_counter() - t)
    macs = sum(getattr(op, "macs", 0) for s in result.npu_streams for op in s.operations)
    npu_cycles = sum(s.npu_cycles for s in result.npu_streams)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    print(json.dumps({
        "model": Path(a.model).name, "exit_code": result.exit_code, "first_s": first_s,
        "median_s": statistics.median(times) if times else first_s, "min_s": min(times) if times else first_s,
        "npu_cycles": npu_cycles, "macs": macs, "peak_rss_bytes": rss, "repeat": a.repeat,
    }))
    return 0


def _child(model: Path, board, repeat: int, overrides) -> dict:
    cmd = [sys.executable, "-m", "fvp.bench", "--child", str(model), "--repeat", str(repeat)]
    if board:
        cmd += ["--board", board]
    for o in overrides:
        cmd += ["-C", o]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0 or not p.stdout.strip():
        raise RuntimeError(f"{model.name}: benchmark child failed: {(p.stderr or p.stdout).strip().splitlines()[-1:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def time_new_process(model: Path, cache_dir: str) -> float:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "fvp", "run", str(model), "-C", "devices.uart0.out_file=/dev/null"],
                       capture_output=True, env=env)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(f"fvp run {model.name} failed with status {p.returncode}")
    return dt


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--child":
        return child_main(argv[1:])
    ap = argparse.ArgumentParser(prog="fvp bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("programs", nargs="*", help=f"programs (default: {', '.join(DEFAULT_PROGRAMS)} from --corpus)")
    ap.add_argument("--corpus", type=Path, default=_default_corpus(), help="directory of the default programs")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per program after the warm-up (default 5)")
    ap.add_argument("-c", "--config", dest="board", default=None, help="board (default: default)")
    ap.add_argument("-C", dest="overrides", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--no-process", action="store_true", help="skip the new-process (cold/warm cache) timings")
    ap.add_argument("--process-model", default=None, help="program for the new-process timings (default: first)")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    a = ap.parse_args(argv)
    programs = [Path(p) for p in a.programs] or [a.corpus / p for p in DEFAULT_PROGRAMS]
    missing = [str(p) for p in programs if not p.is_file()]
    if missing:
        print(f"fvp bench: error: program not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    rate = gemm_macs_per_second()
    rows = []
    for prog in programs:
        try:
            row = _child(prog, a.board, a.repeat, a.overrides)
            row["gemm_ref_s"] = row["macs"] / rate
            rows.append(row)
        except RuntimeError as e:
            print(f"fvp bench: error: {e}", file=sys.stderr)
            return 1
    print(f"{'program':34s} {'median s':>9s} {'min s':>8s} {'first s':>8s} {'NPU cycles':>11s} {'MACs':>12s} "
          f"{'MMAC/s':>8s} {'GEMM ref s':>10s} {'x ref':>7s} {'peak RSS':>9s}")
    for r in rows:
        mmacs = r["macs"] / r["min_s"] / 1e6 if r["min_s"] > 0 else 0.0
        ratio = r["min_s"] / r["gemm_ref_s"] if r["gemm_ref_s"] > 0 else float("nan")
        print(f"{r['model']:34s} {r['median_s']:9.3f} {r['min_s']:8.3f} {r['first_s']:8.3f} {r['npu_cycles']:11d} "
              f"{r['macs']:12d} {mmacs:8.1f} {r['gemm_ref_s']:10.4f} {ratio:7.1f} {r['peak_rss_bytes'] / 2**20:7.0f}MiB")
        r["host_macs_per_s"] = mmacs * 1e6
        r["ratio_to_gemm_ref"] = ratio
    print(f"GEMM reference: float64 matrix product at {rate / 1e9:.2f} GMAC/s on this host ({os.cpu_count()} cores)")
    report = {"programs": rows, "gemm_macs_per_s": rate}
    if not a.no_process:
        model = Path(a.process_model) if a.process_model else programs[0]
        with tempfile.TemporaryDirectory(prefix="fvp-numba-") as cache:
            cold = time_new_process(model, cache)
            warm = time_new_process(model, cache)
        default_warm = time_new_process_default()
        print(f"new process `fvp run {model.name}`: {cold:.2f} s with an empty numba cache, {warm:.2f} s warm; "
              f"`fvp run` (embedded default): {default_warm:.2f} s warm")
        report["new_process"] = {"model": model.name, "cold_cache_s": cold, "warm_cache_s": warm,
                                 "default_run_warm_s": default_warm}
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=2))
    return 0


def time_new_process_default() -> float:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "fvp", "run", "-C", "devices.uart0.out_file=/dev/null"], capture_output=True)
    if p.returncode != 0:
        raise RuntimeError(f"fvp run failed with status {p.returncode}")
    return time.perf_counter() - t


if __name__ == "__main__":
    sys.exit(main())
