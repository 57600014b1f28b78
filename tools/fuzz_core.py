"""The fuzzer's machinery, shared by its targets (``fuzz.py``, ``fuzz_files.py``, ``fuzz_host.py``): what a case
ends in (``Outcome``), running a program image through the whole platform in this process (``run_program``) or a
command entry point with its output captured (``call``), and the monitor of a case's wall time and peak RSS.

A case ends ``ok`` or ``clean_failure`` (a one-line diagnosis), or in a finding: ``crash`` (a traceback or an
internal error), ``hang``, ``over_memory``, ``silent`` (a wrong answer given as right) or ``touched`` (a file
outside the case's named outputs changed).
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fvp.boards import load_board  # noqa: E402
from fvp.errors import ConfigError, FvpError  # noqa: E402
from fvp.host.run import session  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "corpus"
SEEDS = ["add_q.pte", "addint_u55.pte", "add_fp_cpu.pte", "softmax_fp_cpu.pte", "add_u55-128.bpte",
         "conv1d_u55-128.bpte", "mul_u55-128.bpte", "softmax_u55-128.bpte", "linear_u55-128.bpte",
         # Ethos-U85 programs (Corstone-320): chaining, transposes, LUT RAM, gather, comparisons
         "../oracle_u85/conv1d_u85-128/conv1d_u85-128.bpte", "../oracle_u85/softmax_u85-128/softmax_u85-128.bpte",
         "../oracle_u85/convt_u85-128/convt_u85-128.bpte", "../oracle_u85/r3_compare_u85-256/r3_compare_u85-256.bpte",
         "../u85/gatherish_u85-256.bpte"]
BAD_MARKERS = ("Traceback", "internal error", "simulator error", "[critical] simulator")
CASE_WALL_LIMIT_S = 20.0
GROWN_TIME_LIMIT_S = 2.0  # --timelimit of a grown-shape case: a long operation must stop within INTERRUPT_LATENCY_S
INTERRUPT_LATENCY_S = 1.5
CASE_RSS_LIMIT = 1536 << 20  # RSS growth of one case (the NPU's 1 GiB per operation host budget + 512 MiB)
CLOCK_FINDINGS = True  # wall time over a limit is a finding (campaigns); the test suite's smoke run sets False

_BOARD = None


def board():
    global _BOARD
    if _BOARD is None:
        _BOARD = load_board(None, ["firmware.options.log_outputs=false"])
    return _BOARD


class Outcome:
    __slots__ = ("kind", "detail", "seconds", "artifact")

    def __init__(self, kind: str, detail: str, seconds: float):
        self.kind = kind  # "ok", "clean_failure", "crash", "hang"
        self.detail = detail
        self.seconds = seconds
        self.artifact = None  # the input that produced it (program images)


def _classify_run(result, text: str, seconds: float) -> Outcome:
    if any(m in text for m in BAD_MARKERS) or result.reason in ("crash", "error"):
        seen = "traceback" if "Traceback" in text else "internal error"  # what the user saw
        line = next((l for l in text.splitlines() if any(m in l for m in BAD_MARKERS)), "")
        return Outcome("crash", f"{seen}: {result.reason}: {result.message} | {line.strip()[:300]}", seconds)
    if result.reason == "time_limit" or (CLOCK_FINDINGS and seconds > CASE_WALL_LIMIT_S):
        return Outcome("hang", f"ran {seconds:.1f} s", seconds)
    if result.exit_code == 0:
        return Outcome("ok", "", seconds)
    lines = [l for l in text.splitlines() if l.startswith(("F ", "E ", "E:", "Hard fault", "Info: Simulation is stopping"))]
    if not lines:
        return Outcome("crash", f"exit {result.exit_code} without a diagnosis ({result.reason})", seconds)
    first = next((l for l in lines if l.startswith("F ")), lines[0])
    return Outcome("clean_failure", re.sub(r"0x[0-9a-f]+|\d+", "N", first.split("] ", 1)[-1])[:120], seconds)


def run_program(image: bytes, overrides=(), time_limit: float | None = None) -> Outcome:
    """Run one program image through the whole platform in this process, on the default board. With a
    ``time_limit`` below the case's wall limit, a run the limit stopped within ``INTERRUPT_LATENCY_S`` of it is a
    clean outcome (the limit works); later is a hang."""
    spec = board() if not overrides else load_board(None, ["firmware.options.log_outputs=false", *overrides])
    return _run_on(spec, image, "fuzz", time_limit)


_SPECS: dict = {}


def run_image(image: bytes, name: str = "fuzz.pte", inputs=(), time_limit: float | None = None) -> Outcome:
    """``run_program`` on the board ``fvp run`` would pick for the image (its kind, its compile specs: an Ethos-U85
    program on the Corstone-320, a ``.tflite`` on the TFLite Micro image), with input files (``-i``)."""
    from fvp.host.programs.program_board import resolve

    t = time.monotonic()
    try:
        res = resolve(image, overrides=["firmware.options.log_outputs=false"], model_name=name)
        key = (res.board, tuple(map(str, res.overrides)))
        if key not in _SPECS:
            _SPECS[key] = res.load()
        spec = _SPECS[key]
    except (ConfigError, FvpError) as e:
        return Outcome("clean_failure", type(e).__name__ + ": " + str(e).splitlines()[0][:100], time.monotonic() - t)
    except Exception as e:  # noqa: BLE001
        return Outcome("crash", f"{type(e).__name__}: {e}", time.monotonic() - t)
    return _run_on(spec, image, name, time_limit, inputs)


def _run_on(spec, image: bytes, name: str, time_limit: float | None, inputs=()) -> Outcome:
    """One run; ``time_limit`` None is the case's wall limit (``CASE_WALL_LIMIT_S`` as it is when the case runs)."""
    from hwdesc.boot import RunArgs

    time_limit = CASE_WALL_LIMIT_S if time_limit is None else time_limit

    out = io.StringIO()
    notes = io.StringIO()  # the simulator's `fvp: note:` lines (stderr)
    uart = io.BytesIO()
    t = time.monotonic()
    try:
        p = session.build(spec, model=image, model_name=name, args=RunArgs(inputs=tuple(inputs)), out=out,
                          quiet_guest=True, time_limit=time_limit, console=uart)
        with contextlib.redirect_stderr(notes):
            r = session.run(p)
    except (ConfigError, FvpError) as e:
        return Outcome("clean_failure", type(e).__name__ + ": " + str(e).splitlines()[0][:100], time.monotonic() - t)
    except Exception as e:  # noqa: BLE001 - this is what the fuzzer looks for
        return Outcome("crash", f"{type(e).__name__}: {e}", time.monotonic() - t)
    text = uart.getvalue().decode("utf-8", "replace") + "\n" + out.getvalue() + notes.getvalue()
    seconds = time.monotonic() - t
    if time_limit < CASE_WALL_LIMIT_S and r.reason == "time_limit" and r.exit_code == 3 \
            and not any(m in text for m in BAD_MARKERS):
        if seconds <= time_limit + INTERRUPT_LATENCY_S or not CLOCK_FINDINGS:
            return Outcome("clean_failure", "stopped by --timelimit", seconds)
        return Outcome("hang", f"--timelimit {time_limit} s stopped the run only after {seconds:.1f} s", seconds)
    return _classify_run(r, text, seconds)


class ResourceMonitor:
    """Wall time and peak RSS of one case. A thread samples the process's resident set (psutil when installed,
    else /proc/self/statm, else the rusage high-water mark) every ``interval`` seconds; ``growth`` is the peak
    minus the RSS when the case started."""

    def __init__(self, interval: float = 0.02):
        self.interval = interval
        self.base = self.peak = 0
        self.seconds = 0.0
        self._stop = None
        self._thread = None
        self._rss = self._rss_reader()

    @staticmethod
    def _rss_reader():
        try:
            import psutil

            proc = psutil.Process()
            return lambda: proc.memory_info().rss
        except ImportError:
            pass
        import os

        if os.path.exists("/proc/self/statm"):
            page = os.sysconf("SC_PAGE_SIZE")

            def statm():
                with open("/proc/self/statm") as f:
                    return int(f.read().split()[1]) * page
            return statm
        import resource

        return lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def _sample(self):
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self._rss())

    def __enter__(self):
        import threading

        self.base = self.peak = self._rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())
        self.seconds = time.monotonic() - self._t0
        return False

    @property
    def growth(self) -> int:
        return self.peak - self.base


def call(entry, argv):
    """Run a command entry point with stdout/stderr captured: ``(status, stdout, stderr, seconds)``, or a
    ``crash`` Outcome for an exception that escaped it (argparse's ``SystemExit`` is a status)."""
    out, err = io.StringIO(), io.StringIO()
    t = time.monotonic()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        try:
            rc = entry()
        except SystemExit as e:  # argparse usage errors
            rc = e.code if isinstance(e.code, int) else 2
    except Exception as e:  # noqa: BLE001
        return Outcome("crash", f"{type(e).__name__}: {e} for {argv}", time.monotonic() - t)
    finally:
        sys.stdout, sys.stderr = old
    return rc, out.getvalue(), err.getvalue(), time.monotonic() - t


