"""The results of a sweep: JSON lines (the journal), CSV, Parquet, the terminal summary and the plots.

``results.jsonl`` is written one row per finished point (flushed at once), so an interrupted sweep leaves
every finished point; a rerun reads it and skips the points whose key has a result (the last row per key
wins). CSV and Parquet (with pyarrow) are written from it at the end, flat: the axes first (their board keys
as column names), then the figures.
"""

from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path

from .point import RETRY_STATUSES, STATUSES
from .spec import format_value

HEAD = ("program", "status", "reason", "variant", "system_config", "memory_mode", "npu_cycles", "inference_ms",
        "npu_clock_hz", "sram_bytes", "npu_scratch_bytes")
TAIL = ("bundled_check", "result", "exit_code", "wall_seconds", "sim_wall_seconds", "stream", "program_file",
        "program_sha256", "board", "board_file", "board_sha", "simulator", "host", "key", "notes", "overrides")


_NUMBERS = ("npu_cycles", "inference_ms", "npu_clock_hz", "cpu_clock_hz", "sram_bytes", "npu_scratch_bytes",
            "cpu_cycles", "macs", "npu_streams", "exit_code", "wall_seconds", "sim_wall_seconds", "axi0_read_bytes",
            "axi0_written_bytes", "axi1_read_bytes", "axi1_written_bytes")
_MAPPINGS = ("axes", "pmu", "memory_bytes", "memory_stats", "bound_cycles", "compiled_for")
_LISTS = ("pmu_events", "notes", "overrides")


def _scalar(v) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def row_problem(row) -> str | None:
    """Why a row read back from ``results.jsonl`` cannot be one this sweep wrote (a damaged or edited line),
    or None: its key, program and status are strings (a status of ``point.STATUSES``), its figures numbers,
    its mappings of scalars (``memory_bytes`` of mappings), its lists lists; a row that ran has its figures."""
    if not isinstance(row, dict):
        return "not a mapping"
    for k in ("key", "program", "status"):
        if not isinstance(row.get(k), str):
            return f"{k} is not a string"
    if row["status"] not in STATUSES:
        return f"status {row['status']!r}"
    for k in _NUMBERS:
        if k in row and not (row[k] is None or (isinstance(row[k], (int, float)) and not isinstance(row[k], bool))):
            return f"{k} is not a number"
    for k in _MAPPINGS:
        v = row.get(k, {})
        if v is not None and not isinstance(v, dict):
            return f"{k} is not a mapping"
        for x in (v or {}).values():
            if not (isinstance(x, dict) and all(map(_scalar, x.values())) if k == "memory_bytes" else _scalar(x)):
                return f"{k} holds {type(x).__name__}"
    for k in _LISTS:
        if k in row and not isinstance(row[k], list):
            return f"{k} is not a list"
    if row["status"] == "ok" and any(not isinstance(row.get(k), (int, float)) for k in
                                     ("npu_cycles", "inference_ms", "sram_bytes")):
        return "a row that ran without its figures"
    for k, v in row.items():
        if k not in _MAPPINGS and k not in _LISTS and not _scalar(v) and k != "traceback":
            return f"{k} holds {type(v).__name__}"
    return None


class Journal:
    """The rows of ``results.jsonl``; ``damaged`` counts the lines that are not rows (cut by a kill, edited):
    those points run again."""

    def __init__(self, out_dir: str):
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "results.jsonl"
        self.rows: dict = {}
        self.damaged = 0
        if self.path.is_file():
            with open(self.path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    try:
                        row = json.loads(line)
                    except (ValueError, RecursionError):  # a line cut by a kill: that point runs again
                        row = None
                    if row_problem(row) is None:
                        self.rows[row["key"]] = row
                    elif line.strip():
                        self.damaged += 1
        self._f = open(self.path, "a", encoding="utf-8")

    def done(self, key: str) -> bool:
        r = self.rows.get(key)
        return r is not None and r.get("status") not in RETRY_STATUSES

    def add(self, row: dict) -> None:
        self.rows[row["key"]] = row
        self._f.write(json.dumps(row, sort_keys=True, default=str) + "\n")
        self._f.flush()

    def close(self, compact: bool = True) -> None:
        self._f.close()
        if compact:  # one row per key, atomically
            tmp = self.path.with_suffix(".jsonl.tmp")
            with open(tmp, "w", encoding="utf-8") as f:
                for row in self.rows.values():
                    f.write(json.dumps(row, sort_keys=True, default=str) + "\n")
            os.replace(tmp, self.path)


def flat(row: dict) -> dict:
    out = {}
    for k, v in row.get("axes", {}).items():
        out[k] = v
    for k in HEAD:
        if k in row:
            out[k] = row[k]
    for k, v in (row.get("pmu") or {}).items():
        out[f"pmu_{k}"] = v
    if row.get("pmu_events"):
        out["pmu_events"] = " ".join(row["pmu_events"])
    for port in ("axi0", "axi1"):
        for k in ("memory", "read_bytes", "written_bytes"):
            if f"{port}_{k}" in row:
                out[f"{port}_{k}"] = row[f"{port}_{k}"]
    for mem, d in (row.get("memory_bytes") or {}).items():
        out[f"{mem}_read_bytes"] = d.get("read", 0)
        out[f"{mem}_written_bytes"] = d.get("written", 0)
    for k, v in (row.get("memory_stats") or {}).items():
        out[k] = v
    for k in ("cpu_cycles", "macs", "npu_streams"):
        if k in row:
            out[k] = row[k]
    for k, v in (row.get("bound_cycles") or {}).items():
        out[f"cycles_bound_by_{k}"] = v
    for k, v in (row.get("compiled_for") or {}).items():
        out[f"compiled_for_{k}"] = v
    for k in TAIL:
        if k in row:
            v = row[k]
            out[k] = " | ".join(map(str, v)) if isinstance(v, list) else v
    return out


def _columns(rows: list) -> list:
    cols: list = []
    seen = set()
    for r in rows:
        for k in r:
            if k not in seen:
                seen.add(k)
                cols.append(k)
    return cols


def write_csv(rows: list, path) -> None:
    flats = [flat(r) for r in rows]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=_columns(flats))
        w.writeheader()
        for r in flats:
            w.writerow(r)


def write_parquet(rows: list, path) -> bool:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return False
    flats = [flat(r) for r in rows]
    cols = _columns(flats)
    data = {}
    for c in cols:
        vals = [r.get(c) for r in flats]
        kinds = {type(v) for v in vals if v is not None}
        if len(kinds) > 1 and not kinds <= {int, float}:
            vals = [None if v is None else str(v) for v in vals]
        data[c] = vals
    pq.write_table(pa.table(data), path)
    return True


# ------------------------------------------------------------------------------------------------ summary
def _fmt(v) -> str:
    if v is None or v == "":
        return "-"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return f"{v:,.4f}" if abs(v) < 10 else f"{v:,.1f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def summary(rows: list, axis_keys: list, out, limit: int = 60) -> None:
    """A table: the axes, status, NPU cycles, inference time, SRAM, AXI traffic, check, wall time."""
    multi = len({r["program"] for r in rows}) > 1
    heads = (["program"] if multi else []) + list(axis_keys) + [
        "status", "NPU cycles", "ms @NPU clk", "SRAM KiB", "AXI0 rd KB", "AXI0 wr KB", "AXI1 rd KB", "check",
        "wall s"]
    table = []
    for r in rows[:limit]:
        ok = r.get("status") in ("ok", "fail")
        kb = (lambda v: f"{v / 1000:,.1f}") if ok else (lambda v: "-")
        cells = ([r["program"]] if multi else []) + [format_value(r.get("axes", {}).get(k, "-")) for k in axis_keys] + [
            r.get("status", "") + (" (what-if)" if r.get("stream") == "what-if" else ""),
            _fmt(r.get("npu_cycles")) if ok else "-",
            f"{r['inference_ms']:.4f}" if ok and "inference_ms" in r else "-",
            f"{r['sram_bytes'] / 1024:,.1f}" if ok and "sram_bytes" in r else "-",
            kb(r.get("axi0_read_bytes", 0)), kb(r.get("axi0_written_bytes", 0)), kb(r.get("axi1_read_bytes", 0)),
            r.get("bundled_check", "-") if ok else "-",
            f"{r['wall_seconds']:.2f}" if "wall_seconds" in r else "-"]
        table.append([_fmt(c) if not isinstance(c, str) else c for c in cells])
    ws = [max([len(h)] + [len(row[i]) for row in table]) for i, h in enumerate(heads)]
    out.write("  ".join(f"{h:<{w}}" if i < len(heads) - 9 else f"{h:>{w}}" for i, (h, w) in enumerate(zip(heads, ws)))
              + "\n")
    out.write("  ".join("-" * w for w in ws) + "\n")
    for row in table:
        out.write("  ".join(f"{c:<{w}}" if i < len(heads) - 9 else f"{c:>{w}}"
                            for i, (c, w) in enumerate(zip(row, ws))) + "\n")
    if len(rows) > limit:
        out.write(f"... {len(rows) - limit} more rows in results.csv\n")
    reasons = {}
    for r in rows:
        if r.get("status") not in ("ok",) and r.get("reason"):
            reasons.setdefault((r["status"], r["reason"]), 0)
            reasons[(r["status"], r["reason"])] += 1
    for (status, reason), n in list(reasons.items())[:8]:
        out.write(f"{status} x{n}: {reason}\n")
    for prog in dict.fromkeys(r["program"] for r in rows):
        ok = [r for r in rows if r["program"] == prog and r.get("status") == "ok" and r.get("stream") != "what-if"]
        if ok:
            best = min(ok, key=lambda r: r["npu_cycles"])
            where = ", ".join(f"{k}={format_value(v)}" for k, v in best["axes"].items())
            out.write(f"fewest NPU cycles for {prog}: {best['npu_cycles']:,} ({best['inference_ms']:.4f} ms) at "
                      f"{where or 'the base board'}\n")


# ------------------------------------------------------------------------------------------------ plots
def pareto(points: list) -> list:
    """The points (x, y, ...) no other point beats in both x and y (both minimised), sorted by x."""
    front = []
    best_y = math.inf
    for p in sorted(points, key=lambda p: (p[0], p[1])):
        if p[1] < best_y:
            front.append(p)
            best_y = p[1]
    return front


def _label(r: dict, keys: list) -> str:
    return ", ".join(format_value(r["axes"].get(k, "-")) for k in keys)


def _ordered(values, order: list | None) -> list:
    """``values`` (distinct, as spelled) in the sweep file's ``order``; numbers by value when there is none."""
    values = list(dict.fromkeys(values))
    if order:
        rank = {v: i for i, v in enumerate(order)}
        return sorted(values, key=lambda v: (rank.get(v, len(rank)), v))
    try:
        return sorted(values, key=float)
    except ValueError:
        return values


def _styled(ax, ok: list, k: str, others: list, progs: list, order: dict) -> None:
    """One panel of ``cycles.png``: NPU cycles along axis ``k``, one line per combination of the other axes; the
    first other axis (with the program, for several) is the colour, the rest the marker and line style; two
    small legends to the right say which is which."""
    from matplotlib.lines import Line2D

    from .. import plotting

    values = _ordered((format_value(r["axes"].get(k, "-")) for r in ok), order.get(k))
    first = others[:1]
    rest = others[1:]

    def colour_key(r):
        return ((r["program"],) if len(progs) > 1 else ()) + tuple(format_value(r["axes"].get(o, "-")) for o in first)

    def style_key(r):
        return tuple(format_value(r["axes"].get(o, "-")) for o in rest)

    def ranked(key_of, keys):
        rank = [{v: i for i, v in enumerate(_ordered((format_value(r["axes"].get(o, "-")) for r in ok),
                                                      order.get(o)))} for o in keys]
        found = list(dict.fromkeys(key_of(r) for r in ok))
        n = len(found[0]) - len(keys) if found else 0  # the program (several programs) leads a colour key
        return sorted(found, key=lambda t: tuple(t[:n]) + tuple(rk.get(v, 0) for rk, v in zip(rank, t[n:])))

    ckeys = ranked(colour_key, first)
    skeys = ranked(style_key, rest)
    cols = dict(zip(ckeys, plotting.colours(len(ckeys))))
    styles = {sk: (plotting.MARKERS[i % len(plotting.MARKERS)], plotting.LINESTYLES[i % len(plotting.LINESTYLES)])
              for i, sk in enumerate(skeys)}
    series: dict = {}
    for r in ok:
        series.setdefault((colour_key(r), style_key(r)), {})[format_value(r["axes"].get(k, "-"))] = r["npu_cycles"]
    for (ck, sk), pts in series.items():
        xs = [values.index(v) for v in values if v in pts]
        marker, ls = styles[sk]
        ax.plot(xs, [pts[v] for v in values if v in pts], marker=marker, linestyle=ls, color=cols[ck], alpha=0.85,
                markersize=5)
    ax.set_xticks(range(len(values)))
    ax.set_xticklabels(values, fontsize=8)
    ax.set_xlabel(k)
    plotting.counts_axis(ax, [r["npu_cycles"] for r in ok], "NPU cycles")
    handles = []
    if len(ckeys) > 1 or first:
        title = ", ".join((["program"] if len(progs) > 1 else []) + first) or None
        handles += [Line2D([], [], color=cols[c], marker="o", linestyle="-", label=", ".join(c) or "-")
                    for c in ckeys]
        if title:
            handles.insert(0, Line2D([], [], linestyle="none", label=title))
    if len(skeys) > 1:
        handles.append(Line2D([], [], linestyle="none", label=", ".join(rest)))
        handles += [Line2D([], [], color="0.3", marker=styles[sk][0], linestyle=styles[sk][1],
                           label=", ".join(sk) or "-") for sk in skeys]
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=7,
                  frameon=False, handlelength=3)


def write_plots(rows: list, axis_keys: list, out_dir, title: str, order: dict | None = None) -> list:
    """``cycles.png`` (NPU cycles along each axis) and ``pareto.png`` (cycles against SRAM, with the Pareto front);
    ``order``: each axis's values in the sweep file's order (``SweepSpec.axis_values``); [] without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    from .. import plotting

    ok = [r for r in rows if r.get("status") == "ok" and r.get("npu_cycles")]
    if not ok:
        return []
    written = []

    def save(fig, name: str) -> None:
        p = Path(out_dir) / name
        plotting.save(fig, p)
        written.append(str(p))

    keys = [k for k in axis_keys if len({format_value(r["axes"].get(k, "-")) for r in ok}) > 1] or axis_keys[:1]
    progs = list(dict.fromkeys(r["program"] for r in ok))
    if keys:
        fig, axs = plt.subplots(len(keys), 1, figsize=(9, 3.0 * len(keys) + 0.6), squeeze=False,
                                layout="constrained")
        for ax, k in zip(axs[:, 0], keys):
            _styled(ax, ok, k, [o for o in keys if o != k], progs, order or {})
        whatif = sum(1 for r in ok if r.get("stream") == "what-if")
        note = f"; {whatif} of the {len(ok)} points what-if (a stream compiled for another configuration)" \
            if whatif else ""
        fig.suptitle(plotting.wrap(f"{title}: NPU cycles along each axis (lines: the other axes' values){note}", 100),
                     fontsize=11)
        save(fig, "cycles.png")
    fig, ax = plt.subplots(figsize=(9, 5.2), layout="constrained")
    variants = list(dict.fromkeys(r.get("variant", "") for r in ok))
    modes = list(dict.fromkeys(r.get("memory_mode", "") for r in ok))
    cols = dict(zip(variants, plotting.colours(len(variants))))
    marks = {m: plotting.MARKERS[i % len(plotting.MARKERS)] for i, m in enumerate(modes)}
    for v in variants:
        for m in modes:
            sel = [r for r in ok if r.get("variant", "") == v and r.get("memory_mode", "") == m]
            if sel:
                ax.scatter([r["sram_bytes"] / 1024 for r in sel], [r["npu_cycles"] for r in sel], color=cols[v],
                           marker=marks[m], s=42, alpha=0.75, edgecolors="none")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], linestyle="none", label="NPU")]
    handles += [Line2D([], [], color=cols[v], marker="o", linestyle="none", label=v) for v in variants]
    if len(modes) > 1:
        handles.append(Line2D([], [], linestyle="none", label="memory mode"))
        handles += [Line2D([], [], color="0.3", marker=marks[m], linestyle="none", label=m) for m in modes]
    for prog in progs:
        pts = [(r["sram_bytes"] / 1024, r["npu_cycles"], r) for r in ok if r["program"] == prog]
        front = pareto(pts)
        ax.step([p[0] for p in front], [p[1] for p in front], where="post", color="k", linewidth=1)
        ax.scatter([p[0] for p in front], [p[1] for p in front], s=130, facecolors="none", edgecolors="k",
                   linewidths=1)
        for n, (x, y, r) in enumerate(front):
            ax.annotate(plotting.wrap(_label(r, axis_keys), 28), (x, y), fontsize=7, xytext=(6, 6 + 10 * (n % 2)),
                        textcoords="offset points")
    handles.append(Line2D([], [], color="k", linewidth=1, marker="o", markerfacecolor="none", markersize=10,
                          label="Pareto front" + (" (per program)" if len(progs) > 1 else "")))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=8,
              frameon=False)
    ax.set_xlabel("SRAM the program needs (KiB)")
    plotting.counts_axis(ax, [r["npu_cycles"] for r in ok], "NPU cycles")
    ax.margins(x=0.08, y=0.08)
    ax.set_title(plotting.wrap(f"{title}: NPU cycles against the SRAM the program needs", 90), fontsize=11)
    save(fig, "pareto.png")
    return written
