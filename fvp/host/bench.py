"""``fvp bench`` / ``tools/bench.py``: how fast the simulator is, measured, not guessed.

For each program it starts one child process that loads the board, runs the program once to warm up (numba
JIT from its disk cache, weight decoding), then ``--repeat`` more times, each a full run (platform build,
program load, every NPU operation and CPU kernel, outputs), and reports the median and minimum wall time,
simulated NPU cycles, MACs, host MACs per second, the child's peak RSS, and the ratio of the median to a
reference measured in the same child (wall over wall, and CPU over CPU seconds) with the simulator's own BLAS
thread count: the time numpy's float64 matrix product takes for the same number of multiply-accumulates, which
is what exact integer accumulation can cost at best on this host. CPU seconds are printed beside wall seconds (shared hosts are noisy). It also times
``fvp run MODEL`` as a new process (with the same ``-c``/``--target``/``-C``) with empty caches (numba's and the
simulator's decoded weights, as after ``pip install``) and again with them warm. A run that fails is reported
as a failure (exit status 1), never as a fast run. Output: a table, and JSON with ``--json``.

``--elf "APP.elf [ARG...]"`` (repeatable) times full-system runs instead (docs/full-system.md): ``fvp run APP.elf
-- ARG...`` as a new process ``--repeat`` times, the application's own code on QEMU; CPU seconds are this
simulator's and QEMU's together (both processes are waited for).
"""

from __future__ import annotations

import argparse
import io
import json
import math
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
    here = Path(__file__).resolve().parents[2]
    for cand in (here / "tests" / "data" / "corpus", here.parent / "shared" / "corpus"):
        if cand.is_dir():
            return cand
    return Path("corpus")


def gemm_macs_per_second(repeat: int = 5) -> tuple:
    """This process's best float64 matrix-product rates (multiply-accumulates per wall second, per CPU second),
    with the BLAS thread count the simulator runs with (``fvp/__init__.py``), on a product large enough to run
    at full speed (1024 x 512 x 512, 268 M MACs); best of ``repeat`` each. The CPU rate is the one a loaded host
    distorts least: another process's work does not count in this one's CPU seconds."""
    import numpy as np

    m, k, n = 1024, 512, 512
    a = np.random.default_rng(0).standard_normal((m, k))
    b = np.random.default_rng(1).standard_normal((k, n))
    a @ b
    best, best_cpu = math.inf, math.inf
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        a @ b
        best, best_cpu = min(best, time.perf_counter() - t), min(best_cpu, time.process_time() - c)
    return m * k * n / best, m * k * n / max(best_cpu, 1e-9)


def _run_once(spec, model: bytes, name: str):
    from .run import session

    p = session.build(spec, model=model, model_name=name, out=io.StringIO(), quiet_guest=True)
    return session.run(p)


def child_main(argv) -> int:
    """One program in this process: warm-up, then timed runs; prints one JSON line (``error`` when it failed)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--board", default=None)
    ap.add_argument("--target", default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("-C", dest="overrides", action="append", default=[])
    ap.add_argument("--session", type=int, default=0)
    a = ap.parse_args(argv)
    from .programs.program_board import resolve

    model = Path(a.model).read_bytes()
    res = resolve(model, board=a.board, target=a.target, overrides=a.overrides, model_name=Path(a.model).name)
    for note in res.notes:
        print(f"fvp: note: {note}", file=sys.stderr)
    spec = res.load(["devices.uart0.out_file=/dev/null"])
    from .launch import settle_heap

    settle_heap()  # the garbage collector as the `fvp` command sets it
    row = {"model": Path(a.model).name, "repeat": a.repeat}
    t0, c0 = time.perf_counter(), time.process_time()
    result = _run_once(spec, model, Path(a.model).name)
    row.update(first_s=time.perf_counter() - t0, first_cpu_s=time.process_time() - c0, exit_code=result.exit_code)
    if result.exit_code != 0:
        row["error"] = f"the run failed: exit status {result.exit_code} ({result.reason})"
        print(json.dumps(row))
        return 0
    times, cpu = [], []
    for _ in range(a.repeat):
        t, c = time.perf_counter(), time.process_time()
        result = _run_once(spec, model, Path(a.model).name)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        if result.exit_code != 0:
            row.update(exit_code=result.exit_code,
                       error=f"a timed run failed: exit status {result.exit_code} ({result.reason})")
            print(json.dumps(row))
            return 0
    macs = sum(getattr(op, "macs", 0) for s in result.npu_streams for op in s.operations)
    npu_cycles = sum(s.npu_cycles for s in result.npu_streams)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    rate, cpu_rate = gemm_macs_per_second()
    row.update(median_s=statistics.median(times) if times else row["first_s"],
               min_s=min(times) if times else row["first_s"],
               median_cpu_s=statistics.median(cpu) if cpu else row["first_cpu_s"],
               npu_cycles=npu_cycles, macs=macs, peak_rss_bytes=rss, gemm_macs_per_s=rate,
               gemm_ref_s=macs / rate, gemm_macs_per_cpu_s=cpu_rate, gemm_ref_cpu_s=macs / cpu_rate,
               runs_s=times, runs_cpu_s=cpu, blas_threads=os.environ.get("OPENBLAS_NUM_THREADS", ""))
    if a.session:
        row.update(_session_figures(model, Path(a.model).name, a, a.session))
    print(json.dumps(row))
    return 0


SESSION_WARMUP_CPU_S = 1.0  # a session's warm-up: at least 3 inferences and this much CPU time (a long run's
# state: the NPU engine's kernels for every size once a process has pushed 8M elements through them)


def _session_figures(model: bytes, name: str, a, n: int) -> dict:
    """Per inference in a session (``fvp.Session``): ``n`` inferences of the runner's own inputs on one booted
    machine after a warm-up (at least 3 inferences and ``SESSION_WARMUP_CPU_S`` of CPU), each timed in wall and
    CPU seconds; and the boot."""
    from .run.api import Session

    t, c = time.perf_counter(), time.process_time()
    s = Session(model, board=a.board, target=a.target, overrides=a.overrides, name=name)
    boot = (time.perf_counter() - t, time.process_time() - c)
    try:
        warm, c = 0, time.process_time()
        while warm < 3 or time.process_time() - c < SESSION_WARMUP_CPU_S:
            s.run()
            warm += 1
        times, cpu = [], []
        for _ in range(n):
            t, c = time.perf_counter(), time.process_time()
            s.run()
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
    finally:
        s.close()
    return {"session_n": n, "session_warmup": warm, "session_boot_s": boot[0], "session_boot_cpu_s": boot[1],
            "session_median_s": statistics.median(times), "session_min_s": min(times),
            "session_median_cpu_s": statistics.median(cpu), "session_min_cpu_s": min(cpu),
            "session_mean_cpu_s": statistics.fmean(cpu)}


def _board_args(board, target, overrides, board_flag="-c") -> list:
    out = []
    if board:
        out += [board_flag, board]
    if target:
        out += ["--target", target]
    for o in overrides:
        out += ["-C", o]
    return out


def _child(model: Path, board, target, repeat: int, overrides, session: int = 0) -> dict:
    cmd = [sys.executable, "-m", "fvp.host.bench", "--child", str(model), "--repeat", str(repeat),
           "--session", str(session)]
    cmd += _board_args(board, target, [], board_flag="--board")
    for o in overrides:
        cmd += ["-C", o]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0 or not p.stdout.strip():
        raise RuntimeError(f"{model.name}: benchmark child failed: {(p.stderr or p.stdout).strip().splitlines()[-1:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _timed_process(cmd: list, env=None) -> tuple:
    """(wall seconds, CPU seconds of the child) of one process; raises ``RuntimeError`` when it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        why = (p.stderr.decode("utf-8", "replace").strip().splitlines() or [""])[-1]
        raise RuntimeError(f"`{' '.join(cmd[2:])}` failed with status {p.returncode}: {why}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def time_new_process(model: Path | None, cache_dir: str | None, board_args=()) -> tuple:
    """``fvp run [MODEL]`` as a new process: (wall, CPU) seconds; ``cache_dir`` a directory for numba's cache
    and the simulator's own (decoded weights: ``FVP_CACHE_DIR``), None for the default ones."""
    env = None
    if cache_dir:
        env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(cache_dir, "numba"),
                   FVP_CACHE_DIR=os.path.join(cache_dir, "fvp"))
    cmd = [sys.executable, "-m", "fvp", "run"] + ([str(model)] if model else []) + list(board_args)
    return _timed_process(cmd + ["-C", "devices.uart0.out_file=/dev/null"], env)


def _bench_elfs(a) -> int:
    """The full-system rows: each ``--elf`` as ``fvp run APP.elf -- ARGS`` in new processes."""
    import shlex

    rows, failed = [], False
    print(f"{'full-system run (fvp run APP.elf -- ARGS)':58s} {'median s':>9s} {'CPU s':>7s} {'min s':>7s} "
          f"{'min CPU s':>9s} {'runs':>5s}")
    for item in a.elf:
        elf, *args = shlex.split(item)
        cmd = [sys.executable, "-m", "fvp", "run", elf, *_board_args(a.board, a.target, a.overrides),
               "-C", "devices.uart0.out_file=/dev/null", "--", *args]
        label = " ".join([Path(elf).name, *args])[:58]
        try:
            runs = [_timed_process(cmd) for _ in range(max(1, a.repeat))]
        except RuntimeError as e:
            print(f"{label:58s} FAILED: {e}")
            rows.append({"elf": elf, "args": args, "error": str(e)})
            failed = True
            continue
        wall, cpu = [r[0] for r in runs], [r[1] for r in runs]
        row = {"elf": elf, "args": args, "median_s": statistics.median(wall), "median_cpu_s": statistics.median(cpu),
               "min_s": min(wall), "min_cpu_s": min(cpu), "runs_s": wall, "runs_cpu_s": cpu}
        rows.append(row)
        print(f"{label:58s} {row['median_s']:9.3f} {row['median_cpu_s']:7.3f} {row['min_s']:7.3f} "
              f"{row['min_cpu_s']:9.3f} {len(runs):5d}")
    print(f"CPU seconds: the fvp process and its QEMU together; {os.cpu_count()} cores on this host")
    if sys.flags.dont_write_bytecode:  # PYTHONDONTWRITEBYTECODE or -B: no .pyc, every run compiles the sources
        print("note: Python writes no bytecode cache here (PYTHONDONTWRITEBYTECODE or -B): unless the package was "
              "byte-compiled when installed, each run compiles fvp's modules first (0.15-0.3 s CPU more per run "
              "on the project's host)")
    if a.json:
        try:
            Path(a.json).write_text(json.dumps({"full_system": rows}, indent=2))
        except OSError as e:
            print(f"fvp bench: error: --json {a.json}: cannot write: {e.strerror or e}", file=sys.stderr)
            return 2
    return 1 if failed else 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--child":
        return child_main(argv[1:])
    a = build_parser().parse_args(argv)
    return _bench(a)


def build_parser() -> argparse.ArgumentParser:
    """``fvp bench``'s command line."""
    ap = argparse.ArgumentParser(prog="fvp bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("programs", nargs="*", help=f"programs (default: {', '.join(DEFAULT_PROGRAMS)} from --corpus)")
    ap.add_argument("--corpus", type=Path, default=_default_corpus(), help="directory of the default programs")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per program after the warm-up (default 5)")
    ap.add_argument("-c", "--config", dest="board", default=None,
                    help="board (default: the one each program's compile specs name)")
    ap.add_argument("--target", default=None, help="the default board of an NPU, as for `fvp run`")
    ap.add_argument("-C", dest="overrides", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--no-process", action="store_true", help="skip the new-process (cold/warm cache) timings")
    ap.add_argument("--session", type=int, default=50, metavar="N",
                    help="also time N inferences of each program in one fvp.Session (0: skip; default 50)")
    ap.add_argument("--process-model", default=None, help="program for the new-process timings (default: first)")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    ap.add_argument("--elf", action="append", default=[], metavar='"APP.elf [ARG...]"',
                    help="time `fvp run APP.elf -- ARG...` (its own code on QEMU) instead of programs; repeatable")
    return ap


def _bench(a) -> int:
    if a.elf:
        return _bench_elfs(a)
    if a.board and a.target:
        print("fvp bench: error: use either -c/--config or --target, not both", file=sys.stderr)
        return 2
    programs = [Path(p) for p in a.programs] or [a.corpus / p for p in DEFAULT_PROGRAMS]
    missing = [str(p) for p in programs if not p.is_file()]
    if missing:
        print(f"fvp bench: error: program not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    rows, failed = [], False
    for prog in programs:
        try:
            row = _child(prog, a.board, a.target, a.repeat, a.overrides, a.session)
        except RuntimeError as e:
            row = {"model": prog.name, "error": str(e)}
        rows.append(row)
        failed |= "error" in row
    print(f"{'program':34s} {'median s':>9s} {'CPU s':>7s} {'min s':>8s} {'first s':>8s} {'NPU cycles':>11s} "
          f"{'MACs':>12s} {'MMAC/s':>8s} {'GEMM ref s':>10s} {'CPU s':>7s} {'x ref':>6s} {'CPU':>5s} {'peak RSS':>9s}")
    for r in rows:
        if "error" in r:
            print(f"{r['model']:34s} FAILED: {r['error']}")
            continue
        mmacs = r["macs"] / r["median_s"] / 1e6 if r["median_s"] > 0 else 0.0
        ratio = r["median_s"] / r["gemm_ref_s"] if r["gemm_ref_s"] > 0 else float("nan")
        ratio_cpu = r["median_cpu_s"] / r["gemm_ref_cpu_s"] if r["gemm_ref_cpu_s"] > 0 else float("nan")
        print(f"{r['model']:34s} {r['median_s']:9.3f} {r['median_cpu_s']:7.3f} {r['min_s']:8.3f} {r['first_s']:8.3f} "
              f"{r['npu_cycles']:11d} {r['macs']:12d} {mmacs:8.1f} {r['gemm_ref_s']:10.4f} {r['gemm_ref_cpu_s']:7.4f} "
              f"{ratio:6.1f} {ratio_cpu:5.1f} {r['peak_rss_bytes'] / 2**20:7.0f}MiB")
        r["host_macs_per_s"] = mmacs * 1e6
        r["ratio_to_gemm_ref"] = ratio
        r["cpu_ratio_to_gemm_ref"] = ratio_cpu
    ok_rows = [r for r in rows if "error" not in r]
    sess = [r for r in ok_rows if "session_median_s" in r]
    if sess:
        print(f"\nper inference in a session (fvp.Session: the runner booted once, then {sess[0]['session_n']} "
              f"inferences after a warm-up of at least 3 inferences and {SESSION_WARMUP_CPU_S:g} s CPU):")
        print(f"{'program':34s} {'median ms':>9s} {'CPU ms':>7s} {'min ms':>7s} {'min CPU ms':>10s} "
              f"{'mean CPU ms':>11s} {'boot s':>7s} {'CPU s':>6s}")
        for r in sess:
            print(f"{r['model']:34s} {1e3 * r['session_median_s']:9.2f} {1e3 * r['session_median_cpu_s']:7.2f} "
                  f"{1e3 * r['session_min_s']:7.2f} {1e3 * r['session_min_cpu_s']:10.2f} "
                  f"{1e3 * r['session_mean_cpu_s']:11.2f} {r['session_boot_s']:7.2f} {r['session_boot_cpu_s']:6.2f}")
    if ok_rows:
        print(f"GEMM reference: float64 matrix product at {ok_rows[0]['gemm_macs_per_s'] / 1e9:.2f} GMAC/s wall, "
              f"{ok_rows[0]['gemm_macs_per_cpu_s'] / 1e9:.2f} GMAC/s CPU in each child, BLAS threads "
              f"{ok_rows[0]['blas_threads'] or 'default'} (as the simulator runs); 'x ref' is the median run over it "
              f"in wall seconds, 'CPU' in CPU seconds, which other processes on a loaded host disturb less "
              f"({os.cpu_count()} cores on this host)")
    report = {"programs": rows}
    if not a.no_process and not failed:
        model = Path(a.process_model) if a.process_model else programs[0]
        board_args = _board_args(a.board, a.target, a.overrides)
        try:
            with tempfile.TemporaryDirectory(prefix="fvp-numba-") as cache:
                cold = time_new_process(model, cache, board_args)
                warm = time_new_process(model, cache, board_args)
            default_warm = time_new_process(None, None)
        except RuntimeError as e:
            print(f"fvp bench: new-process timing FAILED: {e}")
            report["new_process"] = {"error": str(e)}
            failed = True
        else:
            print(f"new process `fvp run {model.name}`: {cold[0]:.2f} s wall ({cold[1]:.2f} s CPU) with empty "
                  f"caches (numba, decoded weights), {warm[0]:.2f} s wall ({warm[1]:.2f} s CPU) warm; `fvp run` (embedded default): "
                  f"{default_warm[0]:.2f} s wall ({default_warm[1]:.2f} s CPU) warm")
            report["new_process"] = {"model": model.name, "cold_cache_s": cold[0], "cold_cache_cpu_s": cold[1],
                                     "warm_cache_s": warm[0], "warm_cache_cpu_s": warm[1],
                                     "default_run_warm_s": default_warm[0], "default_run_warm_cpu_s": default_warm[1]}
    if a.json:  # written whole, a device or FIFO in place (safe_write); a failed write says why, exit 1
        from ..safe_write import write_file

        res = write_file(a.json, json.dumps(report, indent=2).encode())
        if not res.ok:  # OutputLost (exit 1) once opened or for a write errno, else a path that cannot be (2)
            err = res.error(f"--json {a.json}: cannot write")
            print(f"fvp bench: error: {err}", file=sys.stderr)
            return getattr(err, "exit_status", 2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
