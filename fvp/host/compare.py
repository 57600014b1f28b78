"""``fvp compare``: run one program on several boards and put the figures side by side.

Hardware modelled: none of its own; every board is a full ``Platform`` run (firmware, NPU functional engine,
timing model), with the UART captured in a temporary file (``devices.uart0.out_file``) instead of the console.
Figures per board: NPU cycles from the timing model (``fvp/machine/npu/timing/``), the inference time at the NPU
clock, the Ethos-U PMU block the runner printed (cycle counter and four event counters), bytes per memory
(the memory behind each AXI port in the board's system config), the CPU cycles of the inference (the CPU cost
model), the runner's memory statistics, and whether the bundled test passed.

Simplified: the runner's log is parsed for its PMU and memory lines (the same lines the FVP's users parse);
a board label may carry its own overrides (``NAME,key=value,...``).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sys
import tempfile
from dataclasses import asdict, dataclass, field

from ..errors import ConfigError
from ..safe_write import check_writable, write_file
from .run.memory import runner_memory_stats

_PMU_LINE = re.compile(r"ethosu_pmu_(cycle_cntr|cntr\d+)\s*:\s*(\d+)")
_PMU_EVENTS = re.compile(r"Ethos-U PMU Events:\[(.*)\]")
_RUNTIME = re.compile(r"Inference runtime:\s*(\d+) CPU cycles")
_RESULT = re.compile(r"Test_result:\s*(PASS|FAIL)")
_NPU_FAULT = re.compile(r"^\[warning \]\[ethosu@\d+\]\[\d+ ns\] (NPU .*fault.*)$", re.M)

MEMORY_ORDER = ("Sram", "Dram", "OnChipFlash", "OffChipFlash")


@dataclass
class BoardRun:
    """What one board did with the program."""

    label: str
    board: str = ""
    variant: str = ""
    system_config: str = ""
    memory_mode: str = ""
    npu_clock_hz: int = 0
    cpu_clock_hz: int = 0
    exit_code: int = 0
    result: str = ""  # PASS / FAIL / ok (no bundled test) / error text
    npu_cycles: int = 0
    npu_streams: int = 0
    npu_ms: float = 0.0
    pmu: dict = field(default_factory=dict)  # cycle_cntr, cntr0..3 -> value
    pmu_events: list = field(default_factory=list)
    memory_bytes: dict = field(default_factory=dict)  # memory -> {"read": n, "written": n}
    cpu_cycles: int = 0
    memory_stats: dict = field(default_factory=dict)
    wall_seconds: float = 0.0
    macs: int = 0
    bound_cycles: dict = field(default_factory=dict)  # what bounds the cycles: compute / a memory / latency
    error: str = ""  # the runner's first error line, if any
    notes: list = field(default_factory=list)  # where the board and the program's compile specs differ
    ran: bool = True  # False: not run (the stream cannot run on this board's NPU); the figures are empty

    def flat(self) -> dict:
        """One flat row (for CSV)."""
        row = {k: v for k, v in asdict(self).items() if not isinstance(v, (dict, list))}
        for k, v in self.pmu.items():
            row[f"pmu_{k}"] = v
        row["pmu_events"] = " ".join(self.pmu_events)
        row["notes"] = " | ".join(self.notes)
        for mem, d in self.memory_bytes.items():
            row[f"{mem}_read_bytes"] = d.get("read", 0)
            row[f"{mem}_written_bytes"] = d.get("written", 0)
        for k, v in self.memory_stats.items():
            row[k] = v
        for k, v in self.bound_cycles.items():
            row[f"cycles_bound_by_{k}"] = v
        return row


def parse_runner_log(text: str) -> dict:
    """PMU counters, PMU event names, CPU cycles, memory statistics and the test result from a runner log."""
    pmu = {m.group(1): int(m.group(2)) for m in _PMU_LINE.finditer(text)}
    ev = _PMU_EVENTS.search(text)
    events = [e.strip().replace("ETHOSU_PMU_", "") for e in ev.group(1).split(",")] if ev else []
    rt = _RUNTIME.search(text)
    mem = runner_memory_stats(text)
    res = _RESULT.findall(text)
    err = next((re.sub(r"^[EF] \[[^\]]*\]\s*", "", line).strip() for line in text.splitlines()
                if line.startswith(("E ", "F "))), "")
    fault = _NPU_FAULT.search(text)  # the NPU's own account of a failed invocation: the driver only says -1
    if fault:
        err = f"{err}: {fault.group(1)}" if err else fault.group(1)
    return {"pmu": pmu, "pmu_events": events, "cpu_cycles": int(rt.group(1)) if rt else None,
            "memory_stats": mem, "result": ("FAIL" if "FAIL" in res else "PASS") if res else None, "error": err}


def split_label(label: str) -> tuple:
    """``NAME,key=value,...`` -> (NAME, [key=value, ...])."""
    parts = [p.strip() for p in str(label).split(",")]
    return parts[0], [p for p in parts[1:] if p]


def run_board(model: bytes, model_name: str, label: str, overrides=(), timelimit: float | None = None) -> BoardRun:
    """Run ``model`` on the board ``label`` (a board name or YAML path, optionally ``,key=value`` overrides;
    ``target:ethos-u55-256`` picks a target's default board) with the UART captured; never prints."""
    from .run import session
    from .programs.firmware_image import firmware_image
    from .programs.program_board import resolve

    name, own = split_label(label)
    board, target = name, None
    if name.startswith("target:"):
        board, target = None, name[len("target:"):]
    elif name == "auto":  # the board the program was compiled for (its Vela compile specs)
        board = None
    res = resolve(model, board=board, target=target, overrides=list(overrides) + own, model_name=model_name)
    if res.cannot_run:
        spec = res.load()
        npu = spec.npu
        return BoardRun(label=label, board=spec.name, variant=npu.variant if npu else "",
                        system_config=npu.system_config.name if npu else "",
                        memory_mode=npu.memory_mode.name if npu else "", exit_code=1,
                        result=f"cannot run: {res.cannot_run}", notes=res.notes, ran=False)
    fd, log_path = tempfile.mkstemp(prefix="fvp-compare-", suffix=".log")
    os.close(fd)
    try:
        spec = res.load([f"devices.uart0.out_file={log_path}"])
        said = io.StringIO()  # the simulator's own lines (an NPU fault's account among them)
        platform = session.build(spec, model=model, model_name=model_name, out=said, quiet_guest=True,
                                 time_limit=timelimit)
        image = firmware_image(spec)
        problems = image.check_config(platform.boot_info)
        if problems:
            raise ConfigError("; ".join(problems))
        result = session.run(platform, image.main)
        with open(log_path, "r", encoding="utf-8", errors="replace") as f:
            text = f.read()
    finally:
        try:
            os.unlink(log_path)
        except OSError:
            pass
    parsed = parse_runner_log(text + "\n" + said.getvalue())
    npu = spec.npu
    streams = result.npu_streams
    mem: dict = {}
    for s in streams:
        timing = s.timing
        for m, (r, w) in (timing.bytes_by_memory() if hasattr(timing, "bytes_by_memory") else {}).items():
            d = mem.setdefault(m, {"read": 0, "written": 0})
            d["read"] += r
            d["written"] += w
    npu_cycles = sum(s.npu_cycles for s in streams)
    bound: dict = {}
    macs = 0
    for s in streams:
        for t in getattr(s.timing, "per_op", []) or []:
            macs += t.macs
            if t.exclusive_cycles > 0:
                bound[t.bound] = bound.get(t.bound, 0) + t.exclusive_cycles
    bound = {k: int(round(v)) for k, v in sorted(bound.items(), key=lambda kv: -kv[1])}
    clock = npu.system_config.core_clock_hz if npu else 0
    status = parsed["result"] or ("ok" if result.exit_code == 0 else f"exit {result.exit_code} ({result.reason})")
    if parsed["result"] == "PASS" and result.exit_code != 0:
        status = f"exit {result.exit_code} ({result.reason})"
    return BoardRun(
        label=label, board=spec.name, variant=npu.variant if npu else "",
        system_config=npu.system_config.name if npu else "",
        memory_mode=npu.memory_mode.name if npu else "", npu_clock_hz=clock, cpu_clock_hz=spec.cpu.clock_hz,
        exit_code=result.exit_code, result=status, npu_cycles=npu_cycles, npu_streams=len(streams),
        npu_ms=npu_cycles / clock * 1e3 if clock else 0.0, pmu=parsed["pmu"], pmu_events=parsed["pmu_events"],
        memory_bytes={m: mem[m] for m in sorted(mem, key=lambda m: (MEMORY_ORDER + (m,)).index(m))},
        cpu_cycles=parsed["cpu_cycles"] if parsed["cpu_cycles"] is not None else result.cpu_cycles,
        memory_stats=parsed["memory_stats"], wall_seconds=round(result.wall_seconds, 3), macs=macs,
        bound_cycles=bound, error=parsed["error"], notes=res.notes)


# ================================================================================================ output


def _n(v) -> str:
    if v is None or v == "":
        return "-"
    if isinstance(v, float):
        return f"{v:,.3f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _keys_of(runs: list, attr: str) -> list:
    """The keys of every run's ``attr`` mapping, in the order they first appear."""
    return list(dict.fromkeys(k for r in runs for k in getattr(r, attr)))


def table_rows(runs: list) -> list:
    """[(metric, [value per board])] in display order."""
    rows = [
        ("board", [r.board for r in runs]),
        ("NPU", [r.variant for r in runs]),
        ("system config", [r.system_config for r in runs]),
        ("memory mode", [r.memory_mode for r in runs]),
        ("result", [r.result for r in runs]),
    ]
    if any(r.error for r in runs):
        rows.append(("first error line", [(r.error[:60] + ("..." if len(r.error) > 60 else "")) or "-" for r in runs]))
    rows += [
        ("NPU cycles", [r.npu_cycles for r in runs]),
        ("command streams", [r.npu_streams for r in runs]),
        ("inference time (ms @ NPU clock)", [round(r.npu_ms, 3) for r in runs]),
        ("NPU clock (MHz)", [r.npu_clock_hz / 1e6 for r in runs]),
        ("MACs", [r.macs for r in runs]),
    ]
    for k in _keys_of(runs, "bound_cycles"):
        rows.append((f"NPU cycles bound by {k}", [r.bound_cycles.get(k, 0) for r in runs]))
    keys = ["cycle_cntr"] + sorted({k for r in runs for k in r.pmu if k != "cycle_cntr"})
    for k in keys:
        names = {r.pmu_events[int(k[4:])] for r in runs if k.startswith("cntr") and int(k[4:]) < len(r.pmu_events)}
        label = f"PMU {k}" + (f" ({'/'.join(sorted(names))})" if names else "")
        rows.append((label, [r.pmu.get(k) for r in runs]))
    for m in _keys_of(runs, "memory_bytes"):
        rows.append((f"{m} bytes read", [r.memory_bytes.get(m, {}).get("read", 0) for r in runs]))
        rows.append((f"{m} bytes written", [r.memory_bytes.get(m, {}).get("written", 0) for r in runs]))
    rows.append(("CPU cycles (inference)", [r.cpu_cycles for r in runs]))
    for k in _keys_of(runs, "memory_stats"):
        rows.append((k, [r.memory_stats.get(k) for r in runs]))
    rows.append(("wall time (s)", [r.wall_seconds for r in runs]))
    head = 6 if any(r.error for r in runs) else 5  # board, NPU, system config, memory mode, result (, error)
    return rows[:head] + [(m, [v if r.ran else None for v, r in zip(vals, runs)]) for m, vals in rows[head:]]


def print_table(runs: list, out=None) -> None:
    out = out or sys.stdout
    rows = table_rows(runs)
    heads = [r.label for r in runs]
    cells = [[_n(v) for v in vals] for _, vals in rows]
    w0 = max(len(m) for m, _ in rows)
    ws = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(heads)]
    out.write(f"{'':<{w0}}  " + "  ".join(f"{h:>{w}}" for h, w in zip(heads, ws)) + "\n")
    out.write("-" * (w0 + 2 + sum(w + 2 for w in ws) - 2) + "\n")
    for (m, _), c in zip(rows, cells):
        out.write(f"{m:<{w0}}  " + "  ".join(f"{v:>{w}}" for v, w in zip(c, ws)) + "\n")


def write_csv(runs: list, path: str) -> None:
    rows = [r.flat() for r in runs]
    cols = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    text = io.StringIO(newline="")
    w = csv.DictWriter(text, fieldnames=cols)
    w.writeheader()
    for r in rows:
        w.writerow(r)
    _write(path, text.getvalue(), "--csv")


def write_json(runs: list, path: str, model_name: str = "") -> None:
    doc = {"model": model_name, "boards": [asdict(r) for r in runs]}
    _write(path, json.dumps(doc, indent=1), "--json")


def _write(path: str, text: str, option: str) -> None:
    """A report file, written whole or not at all (``fvp.safe_write``): a full disk is exit 1, a path that
    cannot be written exit 2, each one line."""
    res = write_file(path, text.encode())
    if not res.ok:
        raise res.error(f"{option} {path}: cannot write")


def write_plot(runs: list, path: str, model_name: str = "") -> bool:
    """A PNG of NPU cycles and of the NPU's traffic per memory, one bar (group) per run, each labelled with what
    tells it apart and its NPU and memory mode; ``False`` when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    from . import plotting

    short, pattern = plotting.short_labels([r.label for r in runs])
    labels = [plotting.wrap(s, 18) + (f"\n{r.variant}\n{r.memory_mode}" if r.variant else "")
              for s, r in zip(short, runs)]
    n = len(runs)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(max(9.0, 1.6 * n * 2 + 3), 4.8), layout="constrained")
    xs = list(range(n))
    bars = a1.bar(xs, [r.npu_cycles for r in runs], color=plotting.colours(1)[0], width=0.6)
    for b, r in zip(bars, runs):
        a1.annotate(plotting.count(r.npu_cycles), (b.get_x() + b.get_width() / 2, b.get_height()),
                    xytext=(0, 2), textcoords="offset points", ha="center", va="bottom", fontsize=8)
    a1.set_ylabel("NPU cycles")
    a1.set_title("NPU cycles", fontsize=10)
    a1.margins(y=0.12)
    mems = _keys_of(runs, "memory_bytes")
    width = 0.8 / max(len(mems), 1)
    for k, (m, col) in enumerate(zip(mems, plotting.colours(len(mems)))):
        a2.bar([i - 0.4 + width * (k + 0.5) for i in xs], [sum(r.memory_bytes.get(m, {}).values()) for r in runs],
               width=width, label=m, color=col)
    a2.set_ylabel("bytes moved by the NPU (read + written)")
    a2.set_title("NPU traffic per memory", fontsize=10)
    if mems:
        plotting.legend_outside(a2, title="memory")
    for a in (a1, a2):
        a.set_xticks(xs)
        a.set_xticklabels(labels, fontsize=8)
        a.yaxis.set_major_formatter(plotting.count_formatter())
        a.grid(True, axis="y", alpha=0.3)
    what = pattern or model_name
    fig.suptitle(plotting.wrap(f"fvp compare: {what}" if what else "fvp compare", 90), fontsize=11)
    plotting.save(fig, path)
    return True


def compare(model_paths, boards: list, overrides=(), csv_path=None, json_path=None, plot_path=None,
            timelimit=None, out=None) -> int:
    """The ``fvp compare`` command: 0 when every run ran and passed, 1 otherwise.

    One model: it runs on every board. Several models: without boards each runs on the board its compile specs
    name (label ``auto``); with as many boards as models they pair up.
    """
    out = out or sys.stdout
    paths = [model_paths] if isinstance(model_paths, str) else list(model_paths)
    models = []
    from .programs.identify import read_checked_program

    for path in paths:
        models.append((os.path.basename(path), read_checked_program(path)))  # bounded, one-line errors
    if len(models) == 1:
        if not boards:
            raise ConfigError("fvp compare: give at least one board (-c BOARD, repeat for more)")
        pairs = [(models[0], b, b) for b in boards]
        title = f"{models[0][0]} on {len(pairs)} board(s)"
    elif not boards:
        pairs = [(m, "auto", m[0]) for m in models]
        title = f"{len(models)} programs, each on the board it was compiled for"
    elif len(boards) == len(models):
        pairs = [(m, b, f"{m[0]} @ {b}") for m, b in zip(models, boards)]
        title = f"{len(models)} programs on their boards"
    else:
        raise ConfigError(f"fvp compare: {len(models)} models and {len(boards)} boards: give one board per model, "
                          f"or none (each model then runs on the board of its compile specs)")
    for option, path in (("--csv", csv_path), ("--json", json_path), ("--plot", plot_path)):
        res = check_writable(path) if path else None
        if res is not None and not res.ok:  # refused before the runs, as fvp run's --trace
            raise res.error(f"{option} {path}: cannot write")
    runs = []
    for (name, model), board, label in pairs:
        run = run_board(model, name, board, overrides, timelimit)
        run.label = label
        runs.append(run)
    name = ", ".join(m[0] for m in models)
    for run in runs:
        for note in run.notes:
            print(f"fvp: note: [{run.label}] {note}", file=sys.stderr)
    out.write(f"{title}\n\n")
    print_table(runs, out)
    if csv_path:
        write_csv(runs, csv_path)
        out.write(f"\nwrote {csv_path}\n")
    if json_path:
        write_json(runs, json_path, name)
        out.write(f"{'' if csv_path else chr(10)}wrote {json_path}\n")
    if plot_path:
        if write_plot(runs, plot_path, name):
            out.write(f"wrote {plot_path}\n")
        else:
            out.write("fvp compare: --plot needs matplotlib (pip install 'fvp-corstone300[plot]'); no plot written\n")
    out.flush()
    return 0 if all(r.exit_code == 0 and r.result in ("PASS", "ok") for r in runs) else 1
