"""Reports of a finished run: the per-operation profile (``fvp run --profile``) and a Chrome/Perfetto trace
(``fvp run --trace FILE``).

Hardware modelled: none; this reads what the run recorded. NPU operations come from the Ethos-U device's
stream records (``StreamRecord``: start/end in simulated time, the functional ``OpRecord`` and the timing
model's ``OpTiming`` per operation, see ``fvp/machine/npu/timing/``); CPU kernels, delegate calls and inferences come
from the firmware's begin/end trace marks (``BusPort.trace``), timed in simulated time.

Simplified: CPU cycles are simulated time x the CPU clock of the board, so they are the CPU cost model's
estimate (the FVP's own CPU cycle counts are not meaningful either: "the CPU performance is not cycle accurate",
ExecuTorch's ``backends/arm/scripts/run_fvp.sh``); a delegate
call's CPU time includes the time the CPU waited for the NPU.
"""

from __future__ import annotations

import json
import sys

from hwdesc.ethosu import PMU_EVENT

from ...boards.schema import NPU_CLOCK_HZ
from ...errors import ConfigError, FvpError

_PS = 10 ** 12


# ================================================================================================ helpers


def _streams(platform, result) -> list:
    streams = getattr(result, "npu_streams", None)
    if streams is None:
        streams = platform.npu_streams()
    return list(streams or [])


def _npu(platform):
    for dev in getattr(platform, "devices", {}).values():
        if hasattr(dev, "streams") and hasattr(dev, "clock_hz"):
            return dev
    return None


def _fmt_int(n) -> str:
    return f"{int(round(n)):,}"


def _fmt_bytes(n) -> str:
    n = int(n)
    if n >= 10 * 1024 * 1024:
        return f"{n / (1024 * 1024):.1f}M"
    if n >= 10 * 1024:
        return f"{n / 1024:.1f}K"
    return str(n)


def _shape(s) -> str:
    return "x".join(str(v) for v in s) if s else "-"


def _kernel(k) -> str:
    if not k:
        return "-"
    h, w, sy, sx = k
    return f"{h}x{w}" + (f"/{sy}" if sy == sx and sy > 1 else f"/{sy}x{sx}" if (sy, sx) != (1, 1) else "")


def cpu_spans(platform) -> list:
    """[(start_ps, end_ps, category, name)] from the firmware's begin/end trace marks (properly nested)."""
    events = getattr(getattr(platform, "port", None), "trace_events", None) or []
    stacks: dict = {}
    out = []
    for t, phase, cat, name in events:
        if phase == "B":
            stacks.setdefault((cat, name), []).append(t)
        elif phase == "E":
            st = stacks.get((cat, name))
            if st:
                out.append((st.pop(), t, cat, name))
    out.sort()
    return out


def _port_names(timing) -> dict:
    ports = getattr(timing, "ports", None) or {}
    return {p: ports.get(p, f"AXI{p}") for p in (0, 1)}


# ================================================================================================ profile


def profile_rows(platform, result) -> dict:
    """The profile as data: {"npu": [per-operation dicts], "cpu": [per-kernel dicts], "totals": {...}}."""
    npu_rows = []
    for s_idx, rec in enumerate(_streams(platform, result)):
        timing = rec.timing
        per_op = list(getattr(timing, "per_op", []) or [])
        total = max(int(getattr(timing, "total_cycles", rec.npu_cycles) or rec.npu_cycles), 1)
        for t in per_op:
            if t.kind in ("STOP", "IRQ", "PMU_MASK", "DMA_WAIT", "KERNEL_WAIT"):
                continue  # a wait's cycles belong to what it waits for (the trace shows the waits)
            npu_rows.append({
                "stream": s_idx, "index": t.index, "op": t.mnemonic, "kind": t.kind, "ofm": t.ofm_shape,
                "kernel": t.kernel, "macs": t.macs, "cycles": t.exclusive_cycles, "duration": t.cycles,
                "start": t.start, "end": t.end, "share": t.exclusive_cycles / total, "util": t.mac_utilisation,
                "read": dict(t.bytes_read), "written": dict(t.bytes_written), "bound": t.bound,
                "stream_cycles": total,
            })
    cpu_hz = platform.spec.cpu.clock_hz
    by_name: dict = {}
    inference_ps = 0
    for a, b, cat, name in cpu_spans(platform):
        if cat == "runner":
            inference_ps += b - a
            continue
        key = (cat, name)
        d = by_name.setdefault(key, {"category": cat, "name": name, "calls": 0, "ps": 0})
        d["calls"] += 1
        d["ps"] += b - a
    base_ps = inference_ps or getattr(result, "sim_time_ps", 0) or 1
    cpu_rows = []
    for d in sorted(by_name.values(), key=lambda d: -d["ps"]):
        d = dict(d)
        d["cpu_cycles"] = d["ps"] * cpu_hz / _PS
        d["share"] = d["ps"] / base_ps
        cpu_rows.append(d)
    totals = {
        "npu_cycles": sum(r.npu_cycles for r in _streams(platform, result)),
        "npu_streams": len(_streams(platform, result)),
        "macs": sum(r["macs"] for r in npu_rows),
        "inference_cpu_cycles": inference_ps * cpu_hz / _PS,
        "cpu_cycles": getattr(result, "cpu_cycles", 0),
    }
    return {"npu": npu_rows, "cpu": cpu_rows, "totals": totals}


def print_profile(platform, result, out=None) -> None:
    """Print a table of the NPU operations (per command stream) and of the CPU kernels of the run."""
    out = out or getattr(platform, "out", None) or sys.stdout
    data = profile_rows(platform, result)
    npu = _npu(platform)
    streams = _streams(platform, result)
    w = out.write
    w("\n")
    w("=== NPU profile " + "=" * 100 + "\n")
    if npu is not None:
        arch = npu.arch
        sc = getattr(npu.timing_model, "system_config", None)
        mm = getattr(npu.timing_model, "memory_mode", None)
        w(f"{arch.name}, {arch.total_macs} MACs/cycle, NPU clock {npu.clock_hz / 1e6:g} MHz"
          + (f", {sc.name}" if sc is not None else "") + (f", {mm.name}" if mm is not None else "")
          + (", timing model off (npu.timing: none)" if not npu.timing_model.enabled else "") + "\n")
    if not streams:
        w("no NPU command streams ran\n")
    for s_idx, rec in enumerate(streams):
        names = _port_names(rec.timing)
        rows = [r for r in data["npu"] if r["stream"] == s_idx]
        start_us = rec.start_ps / 1e6
        w(f"\ncommand stream {s_idx}: {rec.npu_cycles:,} NPU cycles ({(rec.end_ps - rec.start_ps) / 1e6:.1f} us "
          f"from {start_us:.1f} us), {sum(1 for r in rec.operations if r.op.kind not in ('STOP',))} operations"
          + (f", fault: {rec.fault}" if rec.fault is not None else "") + "\n")
        a0, a1 = f"AXI0 {names[0]} r/w", f"AXI1 {names[1]} r/w"
        hdr = (f"{'#':>4} {'operation':<22} {'OFM':>12} {'kernel':>7} {'MACs':>11} {'cycles':>10} {'share':>6} "
               f"{'util':>5} {a0:>22} {a1:>22}  bound")
        w(hdr + "\n" + "-" * len(hdr) + "\n")
        for r in rows:
            rw0 = f"{_fmt_bytes(r['read'].get(0, 0))}/{_fmt_bytes(r['written'].get(0, 0))}"
            rw1 = f"{_fmt_bytes(r['read'].get(1, 0))}/{_fmt_bytes(r['written'].get(1, 0))}"
            util = f"{100 * r['util']:.0f}%" if r["macs"] else "-"
            w(f"{r['index']:>4} {r['op'][:22]:<22} {_shape(r['ofm']):>12} {_kernel(r['kernel']):>7} "
              f"{(_fmt_int(r['macs']) if r['macs'] else '-'):>11} {_fmt_int(r['cycles']):>10} "
              f"{100 * r['share']:>5.1f}% {util:>5} {rw0:>22} {rw1:>22}  {r['bound']}\n")
        timing = rec.timing
        tot_r = getattr(timing, "bytes_read", {}) or {}
        tot_w = getattr(timing, "bytes_written", {}) or {}
        macs = sum(r["macs"] for r in rows)
        attributed = sum(r["cycles"] for r in rows)
        enabled = getattr(timing, "enabled", True)
        util = macs / (rec.npu_cycles * npu.arch.total_macs) if npu is not None and rec.npu_cycles else 0.0
        w("-" * len(hdr) + "\n")
        rw0 = f"{_fmt_bytes(tot_r.get(0, 0))}/{_fmt_bytes(tot_w.get(0, 0))}"
        rw1 = f"{_fmt_bytes(tot_r.get(1, 0))}/{_fmt_bytes(tot_w.get(1, 0))}"
        ut = f"{100 * util:.0f}%" if enabled else "-"
        w(f"{'':>4} {'total':<22} {'':>12} {'':>7} {_fmt_int(macs):>11} {_fmt_int(rec.npu_cycles):>10} "
          f"{100.0:>5.1f}% {ut:>5} {rw0:>22} {rw1:>22}\n")
        other = rec.npu_cycles - attributed
        if other > 0.5 and enabled:
            w(f"     ({_fmt_int(other)} cycles not inside any operation: stream start-up, command fetch)\n")
        bounds: dict = {}
        for r in rows:
            bounds[r["bound"]] = bounds.get(r["bound"], 0) + r["cycles"]
        if bounds:
            parts = ", ".join(f"{k} {100 * v / max(rec.npu_cycles, 1):.0f}%" for k, v in
                              sorted(bounds.items(), key=lambda kv: -kv[1]) if v > 0)
            w(f"     cycles by what bounds them: {parts}\n")
        rates = getattr(timing, "port_timing", None) or {}
        if rates and enabled:
            parts = []
            for p, (rb, wb, rl, wl, ta) in sorted(rates.items()):
                src = f"the FVP's timing adapter {ta}" if ta else "Vela's memory timing"
                parts.append(f"AXI{p} {timing.ports.get(p, '')} {rb:.2f}/{wb:.2f} B/cycle, latency {rl:g}/{wl:g} "
                             f"({src})")
            w(f"     ports (read/write): {'; '.join(parts)}\n")
        ev = getattr(timing, "events", {}) or {}
        if ev:
            width = npu.arch.axi_width_bytes if npu is not None else 8
            n = {name: ev.get(PMU_EVENT.value(name), 0) for name in (
                "AXI0_RD_DATA_BEAT_RECEIVED", "AXI0_WR_DATA_BEAT_WRITTEN", "AXI1_RD_DATA_BEAT_RECEIVED",
                "AXI1_WR_DATA_BEAT_WRITTEN", "MAC_ACTIVE", "AO_ACTIVE", "WD_ACTIVE")}
            w(f"     AXI beats ({width} B): AXI0 read {n['AXI0_RD_DATA_BEAT_RECEIVED']:,} "
              f"write {n['AXI0_WR_DATA_BEAT_WRITTEN']:,}; AXI1 read {n['AXI1_RD_DATA_BEAT_RECEIVED']:,} "
              f"write {n['AXI1_WR_DATA_BEAT_WRITTEN']:,}; MAC_ACTIVE {n['MAC_ACTIVE']:,}, "
              f"AO_ACTIVE {n['AO_ACTIVE']:,}, WD_ACTIVE {n['WD_ACTIVE']:,}\n")
    w("\n=== CPU profile " + "=" * 100 + "\n")
    cpu_hz = platform.spec.cpu.clock_hz
    t = data["totals"]
    w(f"{platform.spec.cpu.type}, {cpu_hz / 1e6:g} MHz (CPU cycles are the board's cost model, not "
      f"instruction timing)\n")
    if not data["cpu"]:
        w("no CPU kernels or delegate calls were traced\n")
    else:
        hdr = f"{'kind':<9} {'name':<48} {'calls':>6} {'CPU cycles':>14} {'share':>7}"
        w(hdr + "\n" + "-" * len(hdr) + "\n")
        for r in data["cpu"]:
            kind = "kernel" if r["category"] == "cpu" else r["category"]
            w(f"{kind:<9} {r['name'][:48]:<48} {r['calls']:>6} {_fmt_int(r['cpu_cycles']):>14} "
              f"{100 * r['share']:>6.1f}%\n")
        w("-" * len(hdr) + "\n")
        base = t["inference_cpu_cycles"]
        if base:
            w(f"{'total':<9} {'inference (runner)':<48} {'':>6} {_fmt_int(base):>14} {100.0:>6.1f}%\n")
        w(f"{'':<9} {'whole run':<48} {'':>6} {_fmt_int(t['cpu_cycles']):>14}\n")
    w(f"\nNPU total: {t['npu_cycles']:,} cycles in {t['npu_streams']} command stream(s)")
    if npu is not None and t["npu_cycles"]:
        w(f" = {t['npu_cycles'] / npu.clock_hz * 1e3:.3f} ms at {npu.clock_hz / 1e6:g} MHz")
    w("\n")
    out.flush()


# ================================================================================================ time summary


def _union(intervals) -> list:
    """Sorted, disjoint ``[a, b)`` intervals covering the same points."""
    out: list = []
    for a, b in sorted(i for i in intervals if i[1] > i[0]):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _intersect(x: list, y: list) -> list:
    """The intersection of two unions (``_union``'s form)."""
    out, i, j = [], 0, 0
    while i < len(x) and j < len(y):
        a, b = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        if a < b:
            out.append([a, b])
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return out


def _length(u: list) -> int:
    return sum(b - a for a, b in u)


def time_summary(platform, result) -> dict:
    """Where the simulated time of the inferences went, in picoseconds of one clock (simulated time): the
    inferences' span (``total``); the CPU busy (not asleep in WFI), the NPU busy (a command stream running), both
    at once (``overlap``), the CPU asleep while the NPU runs (``waiting``), neither; per delegate (by its trace
    name): calls, time inside the calls, NPU busy and CPU busy inside them; the CPU kernels' time. Without
    inference marks (another firmware) the window is the whole run."""
    spans = cpu_spans(platform)
    window = _union([(a, b) for a, b, cat, _ in spans if cat == "runner"])
    inferences = len(window)
    if not window:
        window = [[0, getattr(result, "sim_time_ps", 0)]]
    sleeps = _union(getattr(getattr(platform, "port", None), "sleeps", None) or [])
    npu = _union([(r.start_ps, r.end_ps) for r in _streams(platform, result)])
    total = _length(window)
    asleep = _intersect(sleeps, window)
    npu_busy = _intersect(npu, window)
    waiting = _length(_intersect(asleep, npu_busy))
    delegates: dict = {}
    for a, b, cat, name in spans:
        if cat != "delegate":
            continue
        call = [[a, b]]
        d = delegates.setdefault(name, {"calls": 0, "ps": 0, "npu_ps": 0, "cpu_ps": 0})
        d["calls"] += 1
        d["ps"] += b - a
        d["npu_ps"] += _length(_intersect(npu, call))
        d["cpu_ps"] += (b - a) - _length(_intersect(sleeps, call))
    kernels = _length(_intersect(_union([(a, b) for a, b, cat, _ in spans if cat in ("cpu", "tflm")]), window))
    return {"inferences": inferences, "total_ps": total, "cpu_ps": total - _length(asleep),
            "npu_ps": _length(npu_busy), "overlap_ps": _length(npu_busy) - waiting, "waiting_ps": waiting,
            "neither_ps": _length(asleep) - waiting, "delegates": delegates, "cpu_kernels_ps": kernels}


def print_time_summary(platform, result, out=None) -> None:
    """The time summary (``time_summary``) in microseconds of simulated time, one unit for the CPU and the NPU."""
    out = out or getattr(platform, "out", None) or sys.stdout
    t = time_summary(platform, result)
    us = 1e-6
    total = t["total_ps"] or 1
    npu = _npu(platform)
    what = (f"{t['inferences']} inference{'s' if t['inferences'] != 1 else ''}" if t["inferences"]
            else "the whole run")
    w = out.write
    w(f"\n=== Where the time went: {what}, {t['total_ps'] * us:,.1f} us of simulated time " + "=" * 40 + "\n")

    def line(label, ps, note=""):
        w(f"{label:<28} {ps * us:>12,.1f} us {100 * ps / total:>6.1f} %" + (f"   {note}" if note else "") + "\n")

    cpu_hz = platform.spec.cpu.clock_hz
    line("CPU busy", t["cpu_ps"], f"{platform.spec.cpu.type} at {cpu_hz / 1e6:g} MHz (the cost model)"
         + (f"; CPU kernels {t['cpu_kernels_ps'] * us:,.1f} us" if t["cpu_kernels_ps"] else ""))
    line("NPU busy", t["npu_ps"], f"{npu.arch.name} at {npu.clock_hz / 1e6:g} MHz" if npu is not None else "")
    line("  CPU and NPU at once", t["overlap_ps"])
    line("  CPU waiting for the NPU", t["waiting_ps"])
    line("CPU asleep, NPU idle", t["neither_ps"])
    for name, d in sorted(t["delegates"].items(), key=lambda kv: -kv[1]["ps"]):
        w(f"delegate {name[:40]} ({d['calls']} call{'s' if d['calls'] != 1 else ''}): {d['ps'] * us:,.1f} us, "
          f"of which NPU busy {d['npu_ps'] * us:,.1f} us, CPU busy {d['cpu_ps'] * us:,.1f} us\n")
    w("(the runner's 'Inference CPU ratio' is ExecuTorch's formula: the inference's CPU cycles outside the Ethos-U "
      "driver's inference_begin..end, over all of them)\n")
    out.flush()


# ================================================================================================ trace


def trace_events(platform, result) -> list:
    """Chrome trace-event list (``ph`` "X" complete events, ``ts``/``dur`` in microseconds of simulated time):
    process 1 = the CPU (threads: inferences, delegate calls, kernels), process 2 = the NPU (threads: kernel
    operations, DMA, command-processor waits, command streams)."""
    npu = _npu(platform)
    ev = []

    def meta(pid, tid, what, name):
        e = {"ph": "M", "pid": pid, "name": what, "args": {"name": name}}
        if tid is not None:
            e["tid"] = tid
        ev.append(e)

    cpu_name = f"CPU ({platform.spec.cpu.type}, {platform.spec.cpu.clock_hz / 1e6:g} MHz)"
    meta(1, None, "process_name", cpu_name)
    meta(1, 1, "thread_name", "inferences")
    meta(1, 2, "thread_name", "delegate calls")
    meta(1, 3, "thread_name", "CPU kernels")
    npu_name = f"NPU ({npu.arch.name}, {npu.clock_hz / 1e6:g} MHz)" if npu is not None else "NPU"
    meta(2, None, "process_name", npu_name)
    meta(2, 1, "thread_name", "command streams")
    meta(2, 2, "thread_name", "kernel operations")
    meta(2, 3, "thread_name", "DMA")
    meta(2, 4, "thread_name", "command processor waits")
    for i, (pid, tids) in enumerate(((1, (1, 2, 3)), (2, (1, 2, 3, 4)))):
        for t in tids:
            ev.append({"ph": "M", "pid": pid, "tid": t, "name": "thread_sort_index", "args": {"sort_index": t}})
    cpu_hz = platform.spec.cpu.clock_hz
    tids = {"runner": 1, "delegate": 2, "cpu": 3}
    for a, b, cat, name in cpu_spans(platform):
        ev.append({"ph": "X", "pid": 1, "tid": tids.get(cat, 3), "name": name, "cat": cat, "ts": a / 1e6,
                   "dur": (b - a) / 1e6, "args": {"cpu_cycles": round((b - a) * cpu_hz / _PS)}})
    clock = npu.clock_hz if npu is not None else NPU_CLOCK_HZ
    for s_idx, rec in enumerate(_streams(platform, result)):
        base = rec.start_ps / 1e6
        us = 1e6 / clock
        names = _port_names(rec.timing)
        ev.append({"ph": "X", "pid": 2, "tid": 1, "name": f"command stream {s_idx}", "cat": "npu",
                   "ts": base, "dur": (rec.end_ps - rec.start_ps) / 1e6,
                   "args": {"npu_cycles": rec.npu_cycles, "operations": len(rec.operations),
                            "fault": str(rec.fault) if rec.fault is not None else None,
                            "events": {f"0x{k:x}": v for k, v in
                                       sorted((getattr(rec.timing, "events", {}) or {}).items())}}})
        for t in getattr(rec.timing, "per_op", []) or []:
            if t.kind in ("STOP", "IRQ", "PMU_MASK"):
                continue
            if t.kind in ("DMA_WAIT", "KERNEL_WAIT"):
                if t.cycles <= 0:
                    continue
                tid = 4
            else:
                tid = 3 if t.kind == "DMA" else 2
            args = {"index": t.index, "offset": f"0x{t.offset:04x}", "cycles": round(t.cycles, 1),
                    "exclusive_cycles": round(t.exclusive_cycles, 1), "bound": t.bound}
            if t.kind not in ("DMA_WAIT", "KERNEL_WAIT"):
                args.update({f"{names[p]}_read_bytes": n for p, n in t.bytes_read.items()})
                args.update({f"{names[p]}_written_bytes": n for p, n in t.bytes_written.items()})
            if t.ofm_shape:
                args.update({"ofm": _shape(t.ofm_shape), "kernel": _kernel(t.kernel), "macs": t.macs,
                             "mac_utilisation": round(t.mac_utilisation, 4),
                             "compute_cycles": round(t.compute_cycles, 1),
                             "mac_cycles": round(t.mac_cycles, 1), "ao_cycles": round(t.ao_cycles, 1),
                             "blocks": t.blocks})
            ev.append({"ph": "X", "pid": 2, "tid": tid, "name": t.mnemonic, "cat": "npu",
                       "ts": base + t.start * us, "dur": max(t.cycles, 0.0) * us, "args": args})
    return ev


def check_trace_path(path: str) -> None:
    """Fail early (``ConfigError``, exit 2) when the trace file cannot be created; an existing file is left as
    it is (it is replaced only by a complete trace, ``write_trace``)."""
    from ...safe_write import check_writable

    res = check_writable(path)
    if not res.ok:
        raise ConfigError(f"--trace {path}: cannot write the trace: {res.strerror}")


class TraceWriteError(FvpError):
    """The trace of a finished run could not be written (exit status 1: the run's output is lost)."""

    exit_status = 1


def write_trace(platform, result, path: str) -> None:
    """Write the run's trace as Chrome/Perfetto JSON, atomically: a failed write (full disk, ...) leaves what
    was at ``path`` and raises ``TraceWriteError`` with the reason (one line, exit status 1)."""
    from ...safe_write import write_file

    doc = {"traceEvents": trace_events(platform, result), "displayTimeUnit": "ns",
           "otherData": {"generator": "fvp", "board": platform.spec.name,
                         "time": "simulated; ts/dur in microseconds"}}
    res = write_file(path, json.dumps(doc, separators=(",", ":")).encode())
    if not res.ok:
        raise TraceWriteError(f"--trace {path}: cannot write the trace: {res.strerror}")
