"""``fvp sweep GRID.yaml``: plan, run (locally or on a cluster), resume, write and summarise a sweep.

Exit status: 0 every point ran and passed; 1 some point did not (failed, could not run, needs a compile, or
an error: see its row's reason); 2 a bad sweep file or usage; 130 interrupted (the finished points are kept
and written).
"""

from __future__ import annotations

import json
import os
import sys

from ..cli_args import OneLineParser
from ..entry import guarded


def build_parser():
    p = OneLineParser(prog="fvp sweep",
                      description="Run programs over a grid of board keys (NPU variant, memory mode, bandwidths, "
                                  "clocks, pools, ...) from one YAML file, on all local cores or a Dask cluster; "
                                  "rows as JSON lines and CSV, a summary, plots. See docs/sweep.md.")
    p.add_argument("sweep", metavar="GRID.yaml", help="the sweep file")
    p.add_argument("-o", "--out", metavar="DIR",
                   help="results folder (default: sweep-<name> in the current directory; a checkout's .gitignore "
                        "ignores sweep-*/)")
    p.add_argument("-j", "--jobs", type=int, default=None,
                   help="local worker processes (default: every core; 1 runs in this process)")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="run on a Dask distributed scheduler (tcp://host:port) instead of locally")
    p.add_argument("--fresh", action="store_true", help="ignore earlier results in the folder (run every point)")
    p.add_argument("--dry-run", action="store_true", help="plan only: print the points and what each would run")
    p.add_argument("--no-plot", action="store_true", help="do not write the plots")
    p.add_argument("--plain-progress", action="store_true", help="plain progress lines instead of a bar")
    p.add_argument("--table-rows", type=int, default=60, metavar="N", help="rows in the terminal summary")
    p.add_argument("--allow-model-code", action="store_true",
                   help="let ExecuTorch's compiler run the code the sweep file names (a model .py it imports, a "
                        ".pt/.pth or model_input it unpickles, flags such as --so_library); without it such a sweep "
                        "is refused")
    return p


def run_sweep(path: str, out_dir: str | None = None, jobs: int | None = None, cluster=None, fresh: bool = False,
              plot: bool = True, plain_progress: bool = False, out=None, err=None, table_rows: int = 60,
              allow_model_code: bool = False) -> dict:
    """Run a sweep; returns ``{"rows": [...], "ran": n, "reused": n, "seconds": s, "points_per_minute": r,
    "interrupted": bool, "out_dir": ...}``. ``cluster`` is an address or a ``distributed.Client``. A sweep file
    that names code for ExecuTorch's compiler to run is refused unless ``allow_model_code``."""
    from . import backends, results
    from .plan import Planner, check_axes
    from .spec import code_it_runs, load_sweep

    out = out or sys.stdout
    err = err or sys.stderr
    spec = load_sweep(path)
    check_axes(spec)
    code = code_it_runs(spec)
    if code and not allow_model_code:
        from ...boards import ConfigProblems

        raise ConfigProblems([f"{line}; give --allow-model-code to run it" for line in code])
    out_dir = out_dir or f"sweep-{spec.name}"
    if fresh and os.path.exists(os.path.join(out_dir, "results.jsonl")):
        os.unlink(os.path.join(out_dir, "results.jsonl"))
    planner = Planner(spec, log=lambda s: print(s, file=err))
    plan = planner.plan()
    journal = results.Journal(out_dir)
    if journal.damaged:
        err.write(f"fvp sweep: note: {journal.damaged} line(s) of {journal.path} are not rows of a sweep (cut "
                  f"by a kill or edited): ignored, their points run again\n")
    todo = [t for t in plan.tasks if not journal.done(t["key"])]
    reused = len(plan.tasks) - len(todo)
    for row in plan.rows:
        row.setdefault("sweep", spec.name)
        journal.add(row)
    where = "a Dask cluster" if cluster is not None else \
        f"{jobs or os.cpu_count() or 1} local process{'es' if (jobs or os.cpu_count() or 1) > 1 else ''}"
    err.write(f"fvp sweep: {spec.name}: {len(plan.tasks) + len(plan.rows)} points ({len(todo)} to run, {reused} "
              f"already in {journal.path}, {len(plan.rows)} not runnable, {plan.skipped} skipped by constraints) "
              f"on {where}; results in {out_dir}{os.sep}\n")
    err.flush()
    prog = backends.Progress(len(todo), f"fvp sweep {spec.name}", err, plain=plain_progress,
                             not_runnable=sum(1 for r in plan.rows if r.get("status") != "ok"))
    interrupted = False
    client, own = None, False
    try:
        if not todo:
            gen = iter(())
        elif cluster is not None:
            client, own = backends.connect(cluster)
            gen = backends.run_dask(todo, plan.blobs, client)
        elif (jobs or os.cpu_count() or 1) <= 1 or len(todo) == 1:
            gen = backends.run_inline(todo, plan.blobs)
        else:
            gen = backends.run_pool(todo, plan.blobs, min(jobs or os.cpu_count() or 1, len(todo)))
        try:
            for row in gen:
                journal.add(row)
                prog.update(row)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            close = getattr(gen, "close", None)
            if close:
                try:
                    close()
                except KeyboardInterrupt:
                    interrupted = True
    finally:
        prog.close()
        seconds = prog.seconds
        journal.close()
        if own and client is not None:
            client.close()
    keys = [t["key"] for t in plan.tasks] + [r["key"] for r in plan.rows]
    rows = [journal.rows[k] for k in dict.fromkeys(keys) if k in journal.rows]
    results.write_csv(rows, os.path.join(out_dir, "results.csv"))
    written = [str(journal.path), os.path.join(out_dir, "results.csv")]
    if results.write_parquet(rows, os.path.join(out_dir, "results.parquet")):
        written.append(os.path.join(out_dir, "results.parquet"))
    ran = prog.n
    rate = ran / seconds * 60 if seconds > 0 and ran else 0.0
    meta = {"sweep": spec.name, "file": spec.path, "points": len(rows), "ran": ran, "reused": reused,
            "seconds": round(seconds, 2), "points_per_minute": round(rate, 2), "where": where,
            "interrupted": interrupted, "simulators": sorted({r.get("simulator", "") for r in rows} - {""})}
    with open(os.path.join(out_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    out.write(f"\n{spec.name}: {len(rows)} points\n\n")
    results.summary(rows, spec.axis_keys, out, table_rows)
    if plot and not interrupted:
        pngs = results.write_plots(rows, spec.axis_keys, out_dir, spec.name, spec.axis_values())
        if pngs:
            written += pngs
        else:
            out.write("fvp sweep: plots need matplotlib (pip install 'fvp-corstone300[plot]'); none written\n")
    out.write(f"\nran {ran} point(s) in {seconds:.1f} s ({rate:.1f} points/min) on {where}"
              + (f"; {reused} reused from earlier runs" if reused else "") + "\n")
    out.write("wrote " + ", ".join(written) + "\n")
    if interrupted:
        err.write(f"fvp sweep: interrupted: {ran} finished point(s) kept in {journal.path}; run again to go on\n")
    out.flush()
    return {"rows": rows, "ran": ran, "reused": reused, "seconds": seconds, "points_per_minute": rate,
            "interrupted": interrupted, "out_dir": out_dir}


def dry_run(path: str, out=None) -> int:
    from .plan import Planner, check_axes
    from .spec import format_value, load_sweep

    out = out or sys.stdout
    spec = load_sweep(path)
    check_axes(spec)

    class _NoCompile:
        available = False
        misses = 0

    planner = Planner(spec, compiler=_NoCompile())
    plan = planner.plan()
    for t in plan.tasks:
        axes = ", ".join(f"{k}={format_value(v)}" for k, v in t["axes"].items())
        out.write(f"{t['program']} [{axes}]: {t['stream']} {t['program_file']} on {t['board']} "
                  f"-C {' -C '.join(t['overrides']) if t['overrides'] else '(none)'}\n")
    for r in plan.rows:
        axes = ", ".join(f"{k}={format_value(v)}" for k, v in r["axes"].items())
        out.write(f"{r['program']} [{axes}]: {r['status']}: {r['reason']}\n")
    out.write(f"{len(plan.tasks)} point(s) to run, {len(plan.rows)} not runnable, {plan.skipped} skipped by "
              f"constraints (a real run compiles what it can when ExecuTorch is available)\n")
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)

    def body():
        args = build_parser().parse_args(argv)
        if args.jobs is not None and args.jobs < 1:
            from ...boards import ConfigProblems

            raise ConfigProblems([f"--jobs {args.jobs}: expected 1 or more"])
        if args.dry_run:
            return dry_run(args.sweep)
        res = run_sweep(args.sweep, args.out, args.jobs, args.cluster, args.fresh, not args.no_plot,
                        args.plain_progress, table_rows=args.table_rows, allow_model_code=args.allow_model_code)
        if res["interrupted"]:
            return 130
        return 0 if all(r.get("status") == "ok" for r in res["rows"]) else 1

    return guarded("fvp sweep", body)


if __name__ == "__main__":
    sys.exit(main())
