"""The PMU trace a run writes for ``ethosu.extra_args=--pmu-trace FILE`` (``run_fvp.sh --trace_file``).

Format, from the one public consumer of the FVP's trace, ExecuTorch's ``examples/arm/visualize.py`` (which
``run.sh``'s performance overlay calls with ``--trace pmu_trace.gz``): a gzip-compressed JSON object whose
``traceEvents`` list holds Chrome-trace events; the events of thread ``"qread"`` carry ``args.qread``, the
command processor's QREAD register (32-bit words of the command stream consumed), and ``ts`` the time. The
overlay ends a command's duration when QREAD reaches the next command's offset.

Written here, per command stream, in NPU cycles since the simulation started (``otherData.time_unit``):

* a ``"qread"`` counter event (``"ph": "C"``) when each operation is issued (its start, or the start of a later
  operation that began first: the command processor goes in stream order), QREAD then standing at the first
  command after the previous operation, and one at the end of the stream with QREAD = the stream's length;
* one complete event (``"ph": "X"``, thread ``"operations"``) per operation with its start, duration, byte
  offset, what bounds it and its MACs, for Perfetto or chrome://tracing.

Simplified: QREAD is sampled at operation starts from the timing model's schedule, not word by word; the
FVP's other trace events (if any) are not known publicly and are not written.
"""

from __future__ import annotations

import gzip
import json

from ...errors import OutputLost
from ...safe_write import check_writable, write_file

_PID = "ethosu"


def trace_events(streams, clock_hz: int) -> list:
    """Chrome-trace events for the ``StreamRecord``s of a run (``clock_hz``: the NPU clock)."""
    events = []
    for n, rec in enumerate(streams):
        base = (rec.start_ps * clock_hz) // 10 ** 12  # the stream's start in NPU cycles
        per_op = sorted(getattr(rec.timing, "per_op", None) or [], key=lambda t: t.offset)
        # the command processor issues in stream order: it reached operation k no later than any later one
        # started (a DMA may start while an earlier kernel operation still waits for the MAC array)
        issued = [0.0] * len(per_op)
        soonest = float("inf")
        for k in range(len(per_op) - 1, -1, -1):
            soonest = min(soonest, per_op[k].start)
            issued[k] = soonest
        prev_end_word = 0
        for k, t in enumerate(per_op):
            start = base + int(round(t.start))
            events.append({"name": "qread", "ph": "C", "ts": base + int(round(issued[k])), "pid": _PID,
                           "tid": "qread", "args": {"qread": prev_end_word}})
            events.append({"name": t.mnemonic, "ph": "X", "ts": start, "dur": max(int(round(t.end - t.start)), 0),
                           "pid": _PID, "tid": "operations",
                           "args": {"stream": n, "offset": t.offset, "bound": t.bound, "macs": t.macs}})
            prev_end_word = t.offset // 4 + 1  # NPU_OP_* is one word: the next command follows it
        end = base + int(rec.npu_cycles)
        events.append({"name": "qread", "ph": "C", "ts": end, "pid": _PID, "tid": "qread",
                       "args": {"qread": max(int(rec.qread) // 4, prev_end_word)}})
    events.sort(key=lambda e: (e["ts"], e["tid"] != "qread"))
    return events


def trace_document(streams, clock_hz: int) -> dict:
    return {"traceEvents": trace_events(streams, clock_hz),
            "otherData": {"time_unit": "NPU cycles", "npu_clock_hz": clock_hz,
                          "generator": "fvp (an open Corstone simulator, not Arm's FVP)"}}


def check(path: str) -> str | None:
    """A one-line reason why ``path`` cannot be written, or ``None``."""
    r = check_writable(path)
    return None if r.ok else f"npu.pmu_trace={path}: cannot write the PMU trace: {r.strerror}"


def write(path: str, streams, clock_hz: int) -> OutputLost | None:
    """Write the trace of ``streams`` to ``path`` (gzip JSON); ``None`` when written, else the error to raise
    once the run is reported (one line, exit status 1: the trace is lost)."""
    data = gzip.compress(json.dumps(trace_document(streams, clock_hz), separators=(",", ":")).encode(), mtime=0)
    r = write_file(path, data)
    return None if r.ok else OutputLost(f"npu.pmu_trace={path}: cannot write the PMU trace: {r.strerror}")
