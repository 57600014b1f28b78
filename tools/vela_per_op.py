#!/usr/bin/env python3
"""Per-operation comparison of the NPU timing model with Vela's per-layer estimate.

For a corpus program this puts, for every operation Vela scheduled, Vela's estimate beside what our timing
model (``fvp/machine/npu/timing/``) gives the NPU operations of the stream Vela generated for it.

Vela's side: Vela is run on the TOSA flatbuffer each delegate was compiled from (the oracle builder keeps them,
``<oracle>/<model>_u55-128/output_tag<N>_*.tosa``, ``meta.json`` maps delegates to files) with the program's own
accelerator, system config and memory mode, ``--config Arm/vela.ini`` (what ExecuTorch's Arm backend passes),
``--enable-debug-db`` and ``--verbose-performance``. The debug database (``<name>_debug.xml``) has, per scheduled
operation, the per-layer figures of the verbose-performance table (table ``perf``: op cycles = max(NPU cycles,
access cycles per memory), MACs), Vela's MAC/AO/command cycles and block shapes (``perf_debug_main``), the
shapes (``perf_debug``) and the command-stream byte offset of the operation's last kernel command (``queue``).

Mapping: Vela's output command stream must be byte-identical to the one in the program (checked: the stream
is searched for in the program file, and every ``queue`` offset must be the offset of one of our kernel
operations). Then every NPU operation of ours belongs to the scheduled operation with the smallest queue offset
at or after its own offset (a DMA belongs to the operation it is issued for; an operation Vela split into
several NPU commands, e.g. a transpose into 96 POOLs, gets all of them). Where the check fails the operation
table is not printed and the reason is (no guessing by order).

The per-operation Vela figures are cached in ``tests/data/vela_per_op.json`` (made with Vela 5.1.0, the
version the corpus programs were compiled with; the test environment has Vela 5.2, whose streams differ, so a
live run in the tests could not be mapped onto the corpus programs). ``--refresh-vela VELA`` re-makes the cache
with the given ``vela`` executable (e.g. ``/tmp/vela51/bin/vela`` from ``pip install ethos-u-vela==5.1.0`` in a
venv).

Usage: python tools/vela_per_op.py [--refresh-vela VELA] [--oracle DIR] [PROGRAM ...]
       (also ``python tools/validate_cycles.py --per-op [PROGRAM ...]``)
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CACHE = ROOT / "tests" / "data" / "vela_per_op.json"
CORPUS = ROOT / "tests" / "data" / "corpus"
ORACLE = Path("/work/shared/corpus/oracle")  # the oracle builder's output (TOSA files); only for --refresh-vela
FLAG = 1.5  # an operation more than this far apart (either way) is flagged
_WAITS = ("STOP", "IRQ", "PMU_MASK", "DMA_WAIT", "KERNEL_WAIT")
# ExecuTorch's Arm backend passes these besides the compile specs' target/system config/memory mode
VELA_FLAGS = ["--config", "Arm/vela.ini", "--output-format", "raw"]
# the Vela memory columns of the debug database's perf table (<memory>_ac), in display order
_MEMS = ("Sram", "Dram", "OnChipFlash", "OffChipFlash")


# ================================================================================================ Vela's side


def _tables(xml: str) -> dict:
    """{table name: [row dict]} of a Vela debug database."""
    out = {}
    for m in re.finditer(r'<table name="(\w+)">\s*<!\[CDATA\[(.*?)\]\]>', xml, re.S):
        out[m.group(1)] = list(csv.DictReader(io.StringIO(m.group(2).strip())))
    return out


def _int(v, default=0):
    try:
        return int(float(v))
    except (TypeError, ValueError):
        return default


def parse_debug_db(xml: str) -> list:
    """Vela's scheduled operations in command-stream order, each a compact dict."""
    t = _tables(xml)
    main = {r["id"]: r for r in t.get("perf_debug_main", [])}
    dbg = {r["id"]: r for r in t.get("perf_debug", [])}
    queue = {r["scheduled_id"]: _int(r["offset"]) for r in t.get("queue", [])}
    ops = []
    for r in t.get("perf", []):
        i = r["id"]
        m, d = main.get(i, {}), dbg.get(i, {})
        access = {k[:-3]: _int(v) for k, v in r.items() if k.endswith("_ac") and k != "shram_ac"}
        ops.append({
            "id": _int(i), "operator": r["operator"], "name": r["name"], "offset": queue.get(i),
            "op_cycles": _int(r["op_cycles"]), "npu_cycles": _int(r["npu_cycles"]), "macs": _int(r["mac_count"]),
            "access": {k: v for k, v in access.items() if v},
            "mac_cycles": _int(m.get("mac_cycles")), "ao_cycles": _int(m.get("ao_cycles")),
            "cmd_cycles": _int(m.get("cmd_cycles")), "traversal": m.get("traversal", ""),
            "ofm": [_int(d.get(f"ofm_shape_{a}")) for a in "hwc"] if d else None,
            "ifm": [_int(d.get(f"ifm_shape_{a}")) for a in "hwc"] if d else None,
            "ofm_block": [_int(m.get(f"ofm_block_{a}")) for a in "hwc"] if m else None,
            "kernel": [_int(d.get("kernel_size_y")), _int(d.get("kernel_size_x"))] if d else None,
            "dtypes": [d.get("ifm_dtype", ""), d.get("ofm_dtype", "")] if d else None,
        })
    ops.sort(key=lambda o: (o["offset"] is None, o["offset"] or 0))
    return ops


def run_vela(vela: str, tosa: Path, accel: str, system_config: str, memory_mode: str) -> dict:
    """Compile ``tosa`` with ``vela`` and return its scheduled operations and command stream fingerprint."""
    with tempfile.TemporaryDirectory(prefix="vela-per-op-") as tmp:
        cmd = [vela, "--accelerator-config", accel, "--system-config", system_config, "--memory-mode",
               memory_mode, *VELA_FLAGS, "--output-dir", tmp, "--enable-debug-db", "--verbose-performance",
               str(tosa)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
        xml = next(Path(tmp).glob("*_debug.xml")).read_text()
        import numpy as np

        npz = np.load(next(Path(tmp).glob("*_vela.npz")), allow_pickle=True)
        stream = npz["cmd_data"].tobytes()
    ver = subprocess.run([vela, "--version"], capture_output=True, text=True).stdout.strip()
    ops = parse_debug_db(xml)
    attach_signatures(ops, stream_operations(stream, accel))
    return {"vela": ver, "tosa": tosa.name, "cmd_sha256": hashlib.sha256(stream).hexdigest(),
            "cmd_bytes": len(stream), "ops": ops, "_stream": stream}


def stream_operations(stream: bytes, accel: str) -> list:
    """[(byte offset, kind, (h, w, c) or None)] of every operation command of a command stream (decoded with
    the simulator's own command decoder; only the OFM size registers are read)."""
    from fvp.machine.npu.command_stream import RegisterState, iter_commands, parse_driver_payload

    state = RegisterState(accel)
    out = []
    for c in iter_commands(parse_driver_payload(stream).stream, accel):
        if not c.is_operation:
            state.apply(c)
            continue
        kind = c.name[len("NPU_OP_"):] if c.name.startswith("NPU_OP_") else c.name
        shape = None
        if kind in ("CONV", "DEPTHWISE", "POOL", "ELEMENTWISE"):
            shape = (state.m1("NPU_SET_OFM_HEIGHT_M1"), state.m1("NPU_SET_OFM_WIDTH_M1"),
                     state.m1("NPU_SET_OFM_DEPTH_M1"))
        out.append((c.offset, kind, shape))
    return out


def attach_signatures(ops: list, stream_ops: list) -> None:
    """Give every scheduled operation ``sig``: the [kind, h, w, c] of the kernel commands Vela emitted for it
    (those after the previous scheduled operation's last kernel command, up to its own ``offset``)."""
    kernels = [(o, k, s) for o, k, s in stream_ops if s is not None]
    prev = -1
    for op in ops:
        end = op["offset"]
        sig = [[k, *s] for o, k, s in kernels if prev < o <= end] if end is not None else []
        op["sig"] = []  # run-length coded: [kind, h, w, c, repeats]
        for e in sig:
            if op["sig"] and op["sig"][-1][:4] == e:
                op["sig"][-1][4] += 1
            else:
                op["sig"].append(e + [1])
        prev = end if end is not None else prev


def _sig(op: dict) -> list:
    """The expanded signature of a scheduled operation: [(kind, h, w, c)] per kernel command."""
    return [tuple(e[:4]) for e in op.get("sig", []) for _ in range(e[4])]


def _model_of(program: str) -> str:
    return re.split(r"_u(?:55|65)-\d+", Path(program).stem)[0]


def refresh(vela: str, programs: list, oracle: Path = ORACLE, cache: Path = CACHE) -> dict:
    """Re-make the cache for ``programs`` (corpus files) with ``vela``; keeps other programs' entries."""
    from fvp.host.programs.program_board import program_config

    doc = json.loads(cache.read_text()) if cache.is_file() else {"programs": {}}
    doc["made_with"] = ("tools/vela_per_op.py --refresh-vela: Vela on the oracle TOSA files with the program's "
                        f"compile-spec target/system config/memory mode and {' '.join(VELA_FLAGS)}")
    for prog in programs:
        prog = Path(prog)
        image = prog.read_bytes()
        cfg = program_config(image).as_flags()
        if not cfg.get("target"):
            continue
        odir = oracle / f"{_model_of(prog.name)}_u55-128"
        meta_p = odir / "meta.json"
        if not meta_p.is_file():
            doc["programs"][prog.name] = {"error": f"no TOSA files ({odir.name} not made by the oracle builder)"}
            continue
        meta = json.loads(meta_p.read_text())
        tosas = {d["delegate"]: d["tosa_file"] for d in meta.get("delegate_io", [])}
        delegates = []
        for i in sorted(tosas):
            try:
                d = run_vela(vela, odir / tosas[i], cfg["target"], cfg["system_config"], cfg["memory_mode"])
            except Exception as e:  # noqa: BLE001 - report per delegate
                delegates.append({"delegate": i, "tosa": tosas[i], "error": str(e)})
                continue
            d["stream_in_program"] = d.pop("_stream") in image
            d["delegate"] = i
            delegates.append(d)
        log = CORPUS / (prog.stem + ".log")
        doc["programs"][prog.name] = {"config": cfg, "oracle": odir.name, "delegates": delegates,
                                     "log": log.name if log.is_file() else None}
    doc["programs"] = dict(sorted(doc["programs"].items()))
    cache.write_text(json.dumps(doc, indent=None, separators=(",", ":")).replace('{"id"', '\n{"id"') + "\n")
    return doc


def load_cache(cache: Path = CACHE) -> dict:
    return json.loads(cache.read_text()) if cache.is_file() else {"programs": {}}


# ================================================================================================ our side


def run_ours(path: Path, label_overrides=()):
    """Run a program on the board of its compile specs; returns (board spec, [StreamRecord])."""
    from fvp.host.run import session
    from fvp.host.programs.program_board import resolve

    model = path.read_bytes()
    res = resolve(model, overrides=list(label_overrides), model_name=path.name)
    if res.cannot_run:
        raise RuntimeError(f"cannot run: {res.cannot_run}")
    fd, log = tempfile.mkstemp(prefix="fvp-per-op-", suffix=".log")
    os.close(fd)
    try:
        spec = res.load([f"devices.uart0.out_file={log}"])
        platform = session.build(spec, model=model, model_name=path.name, out=io.StringIO(), quiet_guest=True)
        result = session.run(platform)
    finally:
        os.unlink(log)
    return spec, list(result.npu_streams)


# ================================================================================================ mapping


def map_stream(per_op: list, vela_ops: list) -> tuple:
    """Assign our operations to Vela's scheduled operations.

    Every scheduled operation has the signature of the kernel commands Vela emitted for it (kind and OFM shape,
    ``sig``); our kernel operations, in stream order, must be exactly the concatenation of those signatures.
    Then each gets the scheduled operation of its signature entry, and a DMA the scheduled operation of the
    next kernel operation (the weights it fetches are that operation's). Returns (groups, problems):
    groups[i] = our OpTimings of vela_ops[i]; problems is non-empty (and groups empty) when the streams differ.
    """
    owner = [i for i, o in enumerate(vela_ops) for _ in _sig(o)]
    want = [e for o in vela_ops for e in _sig(o)]
    ours = [t for t in per_op if t.kind not in _WAITS and t.kind != "DMA"]
    have = [(t.kind, *(t.ofm_shape or ())) for t in ours]
    if not want:
        return [], ["Vela's stream has no kernel operations (or the cache has no signatures)"]
    if have != want:
        k = next((i for i, (a, b) in enumerate(zip(have, want)) if a != b), min(len(have), len(want)))
        a = have[k] if k < len(have) else "end"
        b = want[k] if k < len(want) else "end"
        return [], [f"our {len(have)} kernel operations are not Vela's {len(want)} (first difference at kernel "
                    f"operation {k}: ours {a}, Vela {b}): a different command stream, not mapped"]
    groups = [[] for _ in vela_ops]
    k = 0
    pending = []
    for t in per_op:
        if t.kind in _WAITS:
            continue
        if t.kind == "DMA":
            pending.append(t)
            continue
        groups[owner[k]] += pending + [t]
        pending = []
        k += 1
    problems = []
    if pending:
        problems.append(f"{len(pending)} DMA(s) after the last kernel operation, counted with the last operation")
        groups[owner[-1]] += pending
    return groups, problems


def _match_delegate(per_op: list, delegates: list):
    """The cached delegate whose kernel-operation signature is this stream's (kind and OFM shape, in order)."""
    have = [(t.kind, *(t.ofm_shape or ())) for t in per_op if t.kind not in _WAITS and t.kind != "DMA"]
    for d in delegates:
        want = [e for o in d.get("ops", []) for e in _sig(o)]
        if want and want == have:
            return d
    return None


def _our_bound(group: list) -> str:
    by: dict = {}
    for t in group:
        by[t.bound] = by.get(t.bound, 0) + t.exclusive_cycles
    if not by:
        return "-"
    name, v = max(by.items(), key=lambda kv: kv[1])
    return name if v > 0 else "-"


def vela_bound(o: dict) -> str:
    """What bounds Vela's op cycles: the largest of its MAC/AO/command cycles, or a memory's access cycles."""
    mem = max(o["access"].items(), key=lambda kv: kv[1], default=("", 0))
    if mem[1] > o["npu_cycles"]:
        return mem[0]
    parts = {"mac": o.get("mac_cycles", 0), "ao": o.get("ao_cycles", 0), "cmd": o.get("cmd_cycles", 0)}
    k = max(parts, key=parts.get)
    return f"compute ({k})" if parts[k] else "compute"


def compare_program(path: Path, cache: dict | None = None, streams=None) -> dict:
    """Per-operation rows and totals for one program (runs it unless ``streams`` are given)."""
    cache = load_cache() if cache is None else cache
    entry = cache.get("programs", {}).get(path.name)
    out = {"program": path.name, "rows": [], "problems": [], "streams": []}
    if streams is None:
        spec, streams = run_ours(path)
        out["board"] = f"{spec.npu.variant} {spec.npu.system_config.name} {spec.npu.memory_mode.name}"
    out["ours_total"] = sum(s.npu_cycles for s in streams)
    if entry is None:
        out["problems"].append("no Vela per-operation figures in the cache (run --refresh-vela)")
        return out
    if "error" in entry:
        out["problems"].append(entry["error"])
        return out
    out["vela_version"] = next((d.get("vela") for d in entry["delegates"] if d.get("vela")), "")
    out["vela_log_total"] = vela_log_total(path.with_suffix(".log"))
    out["vela_sum"] = 0
    for si, s in enumerate(streams):
        per_op = list(getattr(s.timing, "per_op", []) or [])
        d = _match_delegate(per_op, entry["delegates"])
        srow = {"stream": si, "ours": s.npu_cycles, "delegate": None, "vela_sum": None, "attributed": 0}
        out["streams"].append(srow)
        if d is None:
            why = "; ".join(map_stream(per_op, dd.get("ops", []))[1][0] for dd in entry["delegates"]
                            if dd.get("ops")) or "no delegate compiled"
            out["problems"].append(f"stream {si}: no cached Vela compile has this stream's operations: {why}")
            continue
        srow["exact"] = bool(d.get("stream_in_program"))
        if not srow["exact"]:
            out["problems"].append(
                f"stream {si}: Vela's stream for {entry.get('oracle')}/{d['tosa']} is not byte-identical to the "
                f"program's (a separate compile of the same network: the bytes differ); mapped by structure "
                f"(same kernel operations, kinds and OFM shapes, in the same order)")
        groups, problems = map_stream(per_op, d["ops"])
        out["problems"] += [f"stream {si}: {p}" for p in problems]
        srow["delegate"] = d["delegate"]
        srow["vela_sum"] = sum(o["op_cycles"] for o in d["ops"])
        out["vela_sum"] += srow["vela_sum"]
        if not groups:
            continue
        for vi, (o, g) in enumerate(zip(d["ops"], groups)):
            ours = sum(t.exclusive_cycles for t in g)
            srow["attributed"] += ours
            kern = [t for t in g if t.kind != "DMA"]
            kinds = sorted({t.mnemonic for t in kern})
            shapes = sorted({tuple(t.ofm_shape) for t in kern if t.ofm_shape})
            fused = not g and not o.get("sig")  # no command of its own (fused into its neighbour)
            ratio = None if fused else ours / o["op_cycles"] if o["op_cycles"] else (float("inf") if ours else None)
            out["rows"].append({
                "stream": si, "vela_index": vi, "ours_index": [t.index for t in g], "operator": o["operator"],
                "name": o["name"], "ours_kind": "+".join(kinds) + (f" x{len(kern)}" if len(kern) > 1 else ""),
                "dma": len(g) - len(kern), "vela_ofm": o["ofm"], "ours_ofm": shapes, "vela_macs": o["macs"],
                "ours_macs": sum(t.macs for t in g), "ours": ours, "vela": o["op_cycles"],
                "vela_npu": o["npu_cycles"], "ratio": ratio, "ours_bound": _our_bound(g),
                "vela_bound": "fused" if fused else vela_bound(o), "fused": fused,
                "flag": ratio is not None and (ratio > FLAG or ratio < 1 / FLAG), "vela_op": o, "ours_ops": g,
            })
    return out


# ================================================================================================ output


def vela_log_total(log: Path):
    """Sum of "Total cycles" over the network summaries of a compile log (``None`` without a log)."""
    if not log.is_file():
        return None
    vals = [int(m.group(1)) for m in re.finditer(r"^\s*Total cycles\s+(\d+)", log.read_text(errors="replace"), re.M)]
    return sum(vals) if vals else None


def _shape(s) -> str:
    return "x".join(str(v) for v in s) if s else "-"


def _n(v) -> str:
    return "-" if v is None else f"{int(round(v)):,}"


def print_program(res: dict, out=None) -> None:
    out = out or sys.stdout
    w = out.write
    w(f"\n=== {res['program']}  ({res.get('board', '')}; Vela {res.get('vela_version', '?')})\n")
    if not res["rows"]:
        for p in res["problems"] or ["no rows"]:
            w(f"  no per-operation table: {p}\n")
        return
    hdr = (f"{'#':>3} {'ours #':>9} {'Vela op':<16} {'ours':<22} {'OFM (Vela hxwxc)':>17} {'MACs':>10} "
           f"{'ours':>9} {'Vela':>9} {'ratio':>6}  {'our bound':<13} {'Vela bound':<14}")
    w(hdr + "\n" + "-" * len(hdr) + "\n")
    for r in res["rows"]:
        idx = r["ours_index"]
        rng = "-" if not idx else (str(idx[0]) if len(idx) == 1 else f"{idx[0]}-{idx[-1]}")
        kind = r["ours_kind"] + (f"+{r['dma']}DMA" if r["dma"] else "")
        macs = r["vela_macs"] if r["vela_macs"] == r["ours_macs"] else f"{r['vela_macs']}/{r['ours_macs']}"
        rt = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
        w(f"{r['vela_index']:>3} {rng:>9} {r['operator'][:16]:<16} {kind[:22]:<22} {_shape(r['vela_ofm']):>17} "
          f"{macs if isinstance(macs, str) else f'{macs:,}':>10} {_n(r['ours']):>9} {_n(r['vela']):>9} "
          f"{rt:>6}  "
          f"{r['ours_bound'][:13]:<13} {r['vela_bound'][:14]:<14}"
          f"{'  <-- >1.5x apart' if r['flag'] else ''}\n")
    for s in res["streams"]:
        rest = s["ours"] - s["attributed"]
        w(f"stream {s['stream']}: ours {s['ours']:,} = {_n(s['attributed'])} in operations + {_n(rest)} not "
          f"attributed (command fetch, latencies, waits); Vela per-op sum {_n(s['vela_sum'])}\n")
    for p in res["problems"]:
        w(f"  note: {p}\n")
    tot_v = res.get("vela_sum") or 0
    w(f"total: ours {res['ours_total']:,}, Vela per-op sum {tot_v:,}, ratio "
      f"{res['ours_total'] / tot_v if tot_v else float('nan'):.2f}; "
      f"{sum(r['flag'] for r in res['rows'])} of {len(res['rows'])} operations >{FLAG}x apart\n")


def summarise_classes(results: list, out=None) -> None:
    """Per Vela operator class: count, flagged count, summed cycles and ratio."""
    out = out or sys.stdout
    cls: dict = {}
    for res in results:
        for r in res["rows"]:
            if r["ratio"] is None:
                continue
            c = cls.setdefault(r["operator"], {"n": 0, "flag": 0, "ours": 0.0, "vela": 0, "lo": 9e9, "hi": 0})
            c["n"] += 1
            c["flag"] += r["flag"]
            c["ours"] += r["ours"]
            c["vela"] += r["vela"]
            c["lo"] = min(c["lo"], r["ratio"])
            c["hi"] = max(c["hi"], r["ratio"])
    out.write(f"\nper operator class over all programs\n{'class':<18} {'ops':>4} {'>1.5x':>6} {'ours':>11} "
              f"{'Vela':>11} {'ratio':>6} {'min':>6} {'max':>6}\n")
    for k, c in sorted(cls.items(), key=lambda kv: -kv[1]["vela"]):
        out.write(f"{k:<18} {c['n']:>4} {c['flag']:>6} {_n(c['ours']):>11} {_n(c['vela']):>11} "
                  f"{c['ours'] / c['vela'] if c['vela'] else float('nan'):>6.2f} {c['lo']:>6.2f} {c['hi']:>6.2f}\n")


def summarise_networks(results: list, out=None) -> None:
    """One line per program: ours, Vela's compile-log total, Vela's per-op sum, the ratios, how it was mapped."""
    out = out or sys.stdout
    out.write(f"\nper network\n{'program':<40} {'ours':>9} {'Vela log':>9} {'Vela ops':>9} {'ours/ops':>8} "
              f"{'ours/log':>8} {'>1.5x':>7}  mapping\n")
    for res in results:
        if not res["rows"]:
            out.write(f"{res['program']:<40} {res['ours_total']:>9,} {'-':>9} {'-':>9} {'-':>8} {'-':>8} {'-':>7}  "
                      f"not mapped: {(res['problems'] or ['-'])[0][:70]}\n")
            continue
        log, ops = res.get("vela_log_total"), res.get("vela_sum") or 0
        exact = all(s.get("exact") for s in res["streams"] if s.get("delegate") is not None)
        n = [r for r in res["rows"] if r["ratio"] is not None]
        out.write(f"{res['program']:<40} {res['ours_total']:>9,} {_n(log):>9} {ops:>9,} "
                  f"{res['ours_total'] / ops if ops else float('nan'):>8.2f} "
                  f"{res['ours_total'] / log if log else float('nan'):>8.2f} "
                  f"{sum(r['flag'] for r in n):>3}/{len(n):<3}  "
                  f"{'exact (same stream)' if exact else 'by structure (proxy TOSA)'}\n")


def default_programs(corpus: Path = CORPUS, cache: dict | None = None) -> list:
    cache = load_cache() if cache is None else cache
    return [corpus / n for n in cache.get("programs", {}) if (corpus / n).is_file()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("programs", nargs="*", help="corpus programs (default: every program in the cache)")
    ap.add_argument("--refresh-vela", metavar="VELA", help="re-run this vela executable on the TOSA files")
    ap.add_argument("--oracle", default=str(ORACLE), help="oracle directory with the TOSA files")
    ap.add_argument("--corpus", default=str(CORPUS))
    args = ap.parse_args(argv)
    corpus = Path(args.corpus)
    progs = [Path(p) if Path(p).is_file() else corpus / p for p in args.programs]
    if args.refresh_vela:
        if not progs:
            progs = sorted(corpus.glob("*.bpte")) + sorted(corpus.glob("*.pte"))
        refresh(args.refresh_vela, progs, Path(args.oracle))
    cache = load_cache()
    progs = progs or default_programs(corpus, cache)
    print("Per operation: our exclusive cycles (kernel + its weight DMAs) beside Vela's per-layer op cycles")
    print("(max of Vela's NPU cycles and its access cycles per memory); '#' is Vela's scheduled-op order, 'ours #'")
    print("our NPU operation indices (fvp run --profile). Exclusive cycles: while two kernels overlap the cycles")
    print("go to the older one, so an operation hidden behind its predecessor shows 0; Vela adds layers serially.")
    results = []
    for p in progs:
        try:
            res = compare_program(p, cache)
        except Exception as e:  # noqa: BLE001 - a broken program: report, keep going
            print(f"\n=== {p.name}: error: {e}")
            continue
        if not res["streams"] and not res["rows"] and res["ours_total"] == 0:
            continue  # no NPU command stream (a CPU-only program)
        print_program(res)
        results.append(res)
    summarise_classes(results)
    summarise_networks(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
