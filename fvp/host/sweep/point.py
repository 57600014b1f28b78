"""One point of a sweep: run a program on a board and turn every figure into one flat row.

The run is ``fvp.host.compare.run_board`` (the full platform: firmware, Ethos-U functional engine and timing model,
the runner's log parsed for the PMU block and memory statistics); this module adds what a sweep row needs
beyond it: the axes, the AXI traffic per port (the memory behind AXI0/AXI1 in the point's system config), the
SRAM the program needs (for the Pareto front), a hash of the resolved board, the simulator version, the host,
and a status. It never raises: a failure is a row with ``status: error`` and the reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
import traceback

STATUSES = ("ok", "fail", "cannot-run", "needs-compile", "error")
# a rerun runs these again (the rest are results: the same point gives the same row)
RETRY_STATUSES = ("needs-compile", "error")

_VERSION: str | None = None


def _version() -> str:
    global _VERSION
    if _VERSION is None:
        from .plan import simulator_version

        _VERSION = simulator_version()
    return _VERSION


def board_hash(spec) -> str:
    """The resolved board (every key after extends: and -C), less where the UART log goes."""
    raw = {k: v for k, v in spec.raw.items() if not k.startswith("_")}
    raw = json.loads(json.dumps(raw, sort_keys=True, default=str))
    raw.get("devices", {}).get("uart0", {}).pop("out_file", None)
    return hashlib.sha256(json.dumps(raw, sort_keys=True).encode()).hexdigest()[:16]


def run_task(task: dict, model: bytes) -> dict:
    """Run one planned point (``plan.Planner.plan`` made ``task``) and return its row."""
    t0 = time.perf_counter()
    row = {"sweep": task.get("sweep", ""), "program": task["program"], "axes": dict(task["axes"]),
           "key": task["key"], "status": "error", "reason": "", "program_file": task["program_file"],
           "program_sha256": task["program_sha256"], "compiled_for": task["compiled_for"], "stream": task["stream"],
           "board_file": task["board"], "overrides": list(task["overrides"]), "simulator": _version(),
           "host": socket.gethostname(), "pid": os.getpid()}
    try:
        from ..compare import run_board
        from ..programs.program_board import resolve

        name = task["program_file"].split(":")[-1]
        res = resolve(model, board=task["board"], overrides=task["overrides"], model_name=name)
        spec = res.load()
        row["board_sha"] = board_hash(spec)
        run = run_board(model, name, task["board"], task["overrides"], task.get("timelimit"))
        npu = spec.npu
        row.update({
            "board": run.board, "variant": run.variant, "system_config": run.system_config,
            "memory_mode": run.memory_mode, "npu_clock_hz": run.npu_clock_hz, "cpu_clock_hz": run.cpu_clock_hz,
            "exit_code": run.exit_code, "result": run.result, "npu_cycles": run.npu_cycles,
            "npu_streams": run.npu_streams, "inference_ms": run.npu_ms, "macs": run.macs,
            "cpu_cycles": run.cpu_cycles, "pmu": dict(run.pmu), "pmu_events": list(run.pmu_events),
            "memory_bytes": run.memory_bytes, "memory_stats": dict(run.memory_stats),
            "bound_cycles": dict(run.bound_cycles), "sim_wall_seconds": run.wall_seconds,
            "notes": list(run.notes), "error": run.error})
        if npu is not None:
            for port in ("axi0", "axi1"):
                mem = getattr(npu.system_config, f"{port}_port")
                d = run.memory_bytes.get(mem, {})
                row[f"{port}_memory"] = mem
                row[f"{port}_read_bytes"] = d.get("read", 0)
                row[f"{port}_written_bytes"] = d.get("written", 0)
        from ..run.memory import sram_bytes

        row["sram_bytes"], row["npu_scratch_bytes"] = sram_bytes(spec, model, run.memory_stats)
        row["bundled_check"] = ("pass" if run.result == "PASS" else "fail" if run.result == "FAIL" else "none")
        if not run.ran:
            row["status"], row["reason"] = "cannot-run", run.result
        elif run.exit_code == 0 and run.result in ("PASS", "ok"):
            row["status"] = "ok"
        else:
            row["status"] = "fail"
            row["reason"] = run.error or run.result
        if task["stream"] == "what-if" and not row["reason"]:
            cf = task["compiled_for"]
            row["reason"] = (f"what-if: a stream compiled for {cf['target']} {cf['system_config']} "
                             f"{cf['memory_mode']} run with this point's board")
    except BaseException as e:  # noqa: BLE001 - a point never stops the sweep (KeyboardInterrupt re-raised)
        if isinstance(e, KeyboardInterrupt):
            raise
        lines = getattr(e, "problems", None) or str(e).splitlines() or [type(e).__name__]
        row["status"] = "error"
        row["reason"] = f"{type(e).__name__}: {lines[0]}"
        if os.environ.get("FVP_DEBUG"):
            row["traceback"] = traceback.format_exc()
    row["wall_seconds"] = round(time.perf_counter() - t0, 3)
    return row
