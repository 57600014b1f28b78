"""``fvp run MODEL --inputs DATA [--labels LABELS] [-o DIR] [--jobs N | --cluster ADDRESS]``: a data set through
one program on the simulated machine.

The program is booted once (``fvp.Session``; per worker with ``--jobs``/``--cluster``, ``fvp.host.run.scale``)
and every sample of DATA (``fvp.host.run.dataset``) is one more inference of the runner. With ``-o DIR`` each
sample's outputs are written as ``DIR/<sample>-<i>.bin`` (the tensors' raw bytes, what ``fvp run -o`` writes)
and the per-inference figures as ``DIR/inferences.csv`` and ``DIR/inferences.json`` (NPU cycles and time, the
runner's CPU cycles, each PMU event, the prediction, the label, the host's seconds). With ``--labels``, for a
classifier (output 0 one vector of class scores), the top-1 accuracy and a confusion summary. A progress bar
on a terminal (tqdm, the ``progress`` extra), else a line every few seconds on stderr for long runs.

A sample that cannot be read or does not fit the program (shape, dtype, size), a label that does not match,
an inference that fails: one line on stderr naming the sample; the rest of the set is evaluated and the exit
status is 1. A DATA or LABELS file that cannot be read at all is exit status 2 before anything runs.
"""

from __future__ import annotations

import csv
import io
import json
import os
import statistics
import sys
import time

import numpy as np

from ...errors import ConfigProblems
from ..entry import EXIT_FAILURE, EXIT_OK

# fvp run's options that describe one run and have no meaning (or no implementation) for a data set
_SINGLE_RUN = {"inputs": "-i", "etdump": "--etdump", "etdump_debug_buffer": "--etdump-debug-buffer",
               "profile": "--profile", "trace": "--trace", "data": "--data", "stat": "--stat",
               "cyclelimit": "--cyclelimit", "timelimit": "--timelimit"}
_CONFUSION_MATRIX_MAX = 16  # classes up to which the whole matrix is printed


def add_arguments(run) -> None:
    """``fvp run``'s options for a data set."""
    g = run.add_argument_group("a data set (fvp run MODEL --inputs DATA)")
    g.add_argument("--inputs", dest="dataset", metavar="DATA",
                   help="run every sample of DATA, one inference each on the same machine: a folder of .npy/.bin "
                        "files (or sub-folders / NAME-<i> files per input), an .npz of one array per input with a "
                        "leading batch dimension (DATA.npz:KEY,... to name them), or an .npy of the single input")
    g.add_argument("--labels", metavar="LABELS",
                   help="the class of each sample: an .npy of integers (FILE.npz:KEY), a text file of one integer "
                        "per line or of NAME,LABEL lines; prints the top-1 accuracy and a confusion summary")
    g.add_argument("--jobs", "-j", type=int, default=1, metavar="N",
                   help="with --inputs: spread the samples over N local processes (default 1: this process)")
    g.add_argument("--cluster", metavar="ADDRESS",
                   help="with --inputs: spread the samples over a Dask cluster (tcp://host:port; pip install "
                        "'fvp-corstone300[cluster]')")
    g.add_argument("--progress", choices=("auto", "bar", "lines", "none"), default="auto",
                   help="with --inputs: a tqdm bar on a terminal (auto), plain lines, or none")


def check_arguments(args) -> None:
    """Refuse what does not go with a data set, or data-set options without one (one line each)."""
    if not getattr(args, "dataset", None):
        extra = [o for o, set_ in (("--labels", args.labels), ("--cluster", args.cluster),
                                   ("--jobs", args.jobs != 1)) if set_]
        if extra:
            raise ConfigProblems([f"{extra[0]}: needs --inputs DATA"])
        return
    problems = []
    if not args.model:
        problems.append("--inputs: give the MODEL to run the data set through")
    for dest, flag in _SINGLE_RUN.items():
        v = getattr(args, dest, None)
        if v:
            problems.append(f"{flag}: not with --inputs (a data set); it describes a single run")
    if args.jobs < 1:
        problems.append(f"--jobs {args.jobs}: expected 1 or more")
    if args.cluster and args.jobs != 1:
        problems.append("use either --jobs or --cluster, not both")
    if args.target and args.board is not None:
        problems.append("use either -c/--config or --target, not both")
    if problems:
        raise ConfigProblems(problems)


def _classes(session) -> int | None:
    """The number of classes when output 0 is one vector of class scores, else None."""
    if not session.outputs or not session.outputs[0].is_tensor:
        return None
    shape = [d for d in session.outputs[0].shape if d != 1]
    return shape[0] if len(shape) == 1 and shape[0] >= 2 else None


def _say(line: str, stream=None) -> None:
    print(line, file=stream or sys.stderr, flush=True)


class _Report:
    """The rows, the accuracy and the files of one data set."""

    def __init__(self, session, dataset, labels, out_dir, classes):
        self.session, self.dataset, self.labels, self.out_dir, self.classes = session, dataset, labels, out_dir, classes
        self.rows = [None] * len(dataset)
        self.events: list = []
        self.failed = 0
        self.write_failures: list = []
        self.confusion = np.zeros((classes, classes), np.int64) if (classes and labels) else None
        self.clock = session.spec.npu.system_config.core_clock_hz if session.spec.npu is not None else None

    def add(self, i: int, r) -> None:
        name = self.dataset.names[i]
        row = {"index": i, "sample": name}
        label = self.labels.by_index.get(i) if self.labels else None
        if isinstance(r, Exception):
            self.failed += 1
            row.update(status="bad-input" if isinstance(r, ValueError) else "failed", error=str(r))
            _say(f"fvp: error: {r}" if str(r).startswith("sample ") else f"fvp: error: sample {name}: {r}")
            row["label"] = label
            self.rows[i] = row
            return
        for k in r.pmu:
            if k not in self.events:
                self.events.append(k)
        row.update(status="ok", npu_cycles=r.npu_cycles,
                   npu_ms=r.npu_cycles / self.clock * 1e3 if self.clock else None, cpu_cycles=r.cpu_cycles,
                   pmu=dict(r.pmu), host_wall_s=r.wall_seconds, host_cpu_s=r.cpu_seconds)
        if self.classes:
            scores = r.outputs[0].reshape(-1)
            row["prediction"] = int(np.argmax(scores))
        if label is not None and self.classes:
            if not 0 <= label < self.classes:
                self.failed += 1
                row["status"] = "bad-label"
                row["error"] = f"sample {name}: label {label} is not a class of output 0 ({self.classes} classes)"
                _say(f"fvp: error: {row['error']}")
            else:
                row["correct"] = row["prediction"] == label
                self.confusion[label, row["prediction"]] += 1
        row["label"] = label
        if self.out_dir is not None:
            self._write_outputs(name, r)
        self.rows[i] = row

    def _write_outputs(self, name: str, r) -> None:
        from ...safe_write import write_file

        for k, data in enumerate(r.raw_outputs):
            if data is None:
                continue
            path = os.path.join(self.out_dir, f"{name}-{k}.bin")
            res = write_file(path, data)
            if not res.ok:
                self.write_failures.append(f"{path}: {res.strerror}")

    # ------------------------------------------------------------------ summary
    def summary(self) -> dict:
        ok = [r for r in self.rows if r and r["status"] == "ok"]
        out = {"program": self.session.name, "board": self.session.spec.name, "data": self.dataset.source,
               "samples": len(self.rows), "ok": sum(1 for r in self.rows if r and r["status"] == "ok"),
               "failed": self.failed}
        for key in ("npu_cycles", "cpu_cycles"):
            vals = [r[key] for r in ok]
            if vals:
                out[key] = {"min": min(vals), "median": statistics.median(vals), "mean": statistics.fmean(vals),
                            "max": max(vals)}
        if self.confusion is not None:
            n = int(self.confusion.sum())
            correct = int(np.trace(self.confusion))
            out["accuracy"] = {"top1": correct / n if n else None, "correct": correct, "labelled": n,
                               "classes": self.classes, "confusion": self.confusion.tolist()}
        if self.labels is not None:
            out["label_problems"] = list(self.labels.problems)
        return out

    def print_summary(self, s: dict, seconds: float, cpu: float) -> None:
        say = lambda line: print(line)  # noqa: E731 - the report goes to stdout
        say(f"{s['program']} on {s['board']}: {s['samples']} samples from {s['data']}: {s['ok']} ok, "
            f"{s['failed']} failed" + (f", {s['samples'] - s['ok'] - s['failed']} not run" if s.get("interrupted")
                                       else ""))
        for key, what in (("npu_cycles", "NPU cycles"), ("cpu_cycles", "CPU cycles")):
            if key in s:
                f = s[key]
                extra = ""
                if key == "npu_cycles" and self.clock:
                    extra = f" ({f['median'] / self.clock * 1e3:.4f} ms at {self.clock / 1e6:g} MHz)"
                say(f"{what} per inference: min {f['min']:,}  median {f['median']:,.0f}  max {f['max']:,}{extra}")
        acc = s.get("accuracy")
        if acc:
            if acc["labelled"]:
                say(f"top-1 accuracy: {100 * acc['top1']:.2f} % ({acc['correct']} of {acc['labelled']} labelled "
                    f"samples)")
            else:
                say("top-1 accuracy: no labelled sample was evaluated")
            self._print_confusion(say)
        say(f"ran {s['samples']} samples in {seconds:.1f} s ({s['samples'] / max(seconds, 1e-9):.1f} per second; "
            f"{cpu:.1f} s CPU in this process)")

    def _print_confusion(self, say) -> None:
        m, c = self.confusion, self.classes
        if c <= _CONFUSION_MATRIX_MAX:
            width = max(5, len(str(int(m.max()))) + 1)
            say("confusion (rows: label, columns: prediction):")
            say("      " + "".join(f"{j:>{width}d}" for j in range(c)))
            for i in range(c):
                say(f"  {i:>3d} " + "".join(f"{int(v):>{width}d}" for v in m[i]))
        off = [(int(m[i, j]), i, j) for i in range(c) for j in range(c) if i != j and m[i, j]]
        off.sort(key=lambda t: (-t[0], t[1], t[2]))
        if off:
            say("most confused: " + ", ".join(f"{i} as {j} x{n}" for n, i, j in off[:10]))

    def write_files(self, s: dict) -> list:
        if self.out_dir is None:
            return []
        from ...safe_write import write_file

        events = self.events
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["index", "sample", "status", "npu_cycles", "npu_ms", "cpu_cycles", *events, "prediction",
                    "label", "correct", "host_wall_s", "host_cpu_s", "error"])
        for r in self.rows:
            if r is None:
                continue
            pmu = r.get("pmu") or {}
            w.writerow([r["index"], r["sample"], r["status"], r.get("npu_cycles", ""),
                        f"{r['npu_ms']:.6f}" if r.get("npu_ms") is not None else "", r.get("cpu_cycles", ""),
                        *(pmu.get(e, "") for e in events), _blank(r.get("prediction")), _blank(r.get("label")),
                        _blank(r.get("correct")), f"{r['host_wall_s']:.6f}" if "host_wall_s" in r else "",
                        f"{r['host_cpu_s']:.6f}" if "host_cpu_s" in r else "", r.get("error", "")])
        files = []
        for name, data in (("inferences.csv", buf.getvalue()),
                           ("inferences.json", json.dumps(dict(s, inferences=[r for r in self.rows if r]), indent=1))):
            path = os.path.join(self.out_dir, name)
            res = write_file(path, data.encode())
            if not res.ok:
                self.write_failures.append(f"{path}: {res.strerror}")
            else:
                files.append(path)
        return files


def _blank(v):
    return "" if v is None else v


def _shared_keys(data: str, labels: str | None) -> tuple:
    """The arrays of DATA that LABELS names (``--inputs d.npz --labels d.npz:y``): not inputs."""
    from .dataset import split_keys

    if not labels:
        return ()
    (dbase, _), (lbase, lkeys) = split_keys(data), split_keys(labels)
    same = os.path.exists(dbase) and os.path.exists(lbase) and os.path.samefile(dbase, lbase)
    return tuple(lkeys) if same else ()


def _progress(args, total: int, name: str):
    from ..cluster import Progress

    if args.progress == "none":
        return None
    return Progress(total, f"fvp run {name}", plain=args.progress == "lines", unit="inferences", first_after=2.0)


def cmd_evaluate(args) -> int:
    from .api import Session
    from .dataset import open_dataset, read_labels

    check_arguments(args)
    t0, c0 = time.perf_counter(), time.process_time()
    session = Session(args.model, board=args.board, target=args.target, overrides=args.overrides,
                      check_stream=args.check_stream, strict=True if args.strict else None,
                      vela=bool(args.vela or args.vela_args), vela_args=args.vela_args)
    try:
        for note in session.notes:
            _say(f"fvp: note: {note}")
        dataset = open_dataset(args.dataset, session.inputs, exclude=_shared_keys(args.dataset, args.labels))
        for note in dataset.notes:
            _say(f"fvp: note: {note}")
        labels, classes = None, None
        if args.labels:
            classes = _classes(session)
            if classes is None:
                o = session.outputs[0].describe() if session.outputs else "nothing"
                raise ConfigProblems([f"--labels: {session.name} is not a classifier here: its output 0 is {o}, "
                                      f"not one vector of class scores"])
            labels = read_labels(args.labels, dataset)
            for p in labels.problems:
                _say(f"fvp: error: {p}")
        out_dir = args.output
        if out_dir is not None:
            if os.path.exists(out_dir) and not os.path.isdir(out_dir):
                raise ConfigProblems([f"-o {out_dir}: with --inputs, -o names a folder (it is a file)"])
            try:
                os.makedirs(out_dir, exist_ok=True)
            except OSError as e:
                raise ConfigProblems([f"-o {out_dir}: cannot make the folder: {e.strerror}"]) from None
        report = _Report(session, dataset, labels, out_dir, classes)
        bar = _progress(args, len(dataset), session.name)
        gen = session.iter_results(dataset, cluster=args.cluster, jobs=args.jobs)
        interrupted = False
        try:
            for i, r in gen:
                report.add(i, r)
                if bar is not None:
                    bar.update(n=1, failed=int(report.rows[i]["status"] != "ok"))
        except KeyboardInterrupt:  # Ctrl-C: what finished is reported and written, then the status is 130
            interrupted = True
        finally:
            gen.close()
            if bar is not None:
                bar.close()
    finally:
        session.close()
    s = report.summary()
    if interrupted:
        done = sum(1 for r in report.rows if r)
        _say(f"fvp: interrupted after {done} of {len(report.rows)} samples; the figures below are theirs")
        s["interrupted"] = True
    report.print_summary(s, time.perf_counter() - t0, time.process_time() - c0)
    files = report.write_files(s)
    if interrupted:
        if files:
            print(f"wrote {', '.join(files)} for the samples that finished")
        raise KeyboardInterrupt
    if out_dir is not None and not report.write_failures:
        print(f"wrote {', '.join(files)} and {s['ok']} output sets ({out_dir}/<sample>-<i>.bin)")
    elif out_dir is None:
        _say("fvp: note: -o DIR keeps each sample's outputs and the per-inference figures (CSV, JSON)")
    for f in report.write_failures[:3]:
        _say(f"fvp: error: cannot write {f}")
    bad = report.failed or report.write_failures or (labels is not None and labels.problems)
    return EXIT_FAILURE if bad else EXIT_OK
