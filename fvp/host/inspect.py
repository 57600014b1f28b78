"""``fvp inspect MODEL [--json]``: what an ExecuTorch program holds, without running it.

The program is read by the firmware image of the default board (its ``inspect_program``, the runner's own
program reader and kernel registry, reached through ``firmware_image``, as ``fvp disasm`` does); this module
only formats the dict it returns: as text, or as JSON with ``--json`` (the dict as it is).
"""

from __future__ import annotations

import json
import os

from ..boards import load_board
from ..errors import ConfigError
from .programs.firmware_image import inspect_program


def describe(image: bytes, name: str) -> dict:
    """The firmware's facts about ``image`` plus the file's name and the memory it takes on its board."""
    facts = inspect_program(load_board(None), image, name)
    return {"file": name, **facts, "memory": memory_needed(image, name, facts)}


def memory_needed(image: bytes, name: str, facts: dict) -> dict | None:
    """The memory the program takes on the board it runs on (its compile specs' board, as ``fvp run`` resolves
    it), per linker region and placement (``run.memory.high_water``), before it runs: the method pool's use is
    at least the planned buffers (the runtime's own allocations come on top; ``fvp run`` prints the real figure).
    ``None`` for a program whose board does not load."""
    from ..boards import ConfigProblems
    from .programs.program_board import resolve
    from .run.memory import high_water

    try:
        spec = resolve(image, model_name=name).load()
    except (ConfigProblems, ConfigError):
        return None
    planned = max((m["planned_bytes"] for m in facts["methods"]), default=0)
    hw = high_water(spec, image, {"method_allocator_used": planned})
    board = os.path.splitext(os.path.basename(spec.files[-1]))[0] if spec.files else spec.name
    return {"board": board, "memory_mode": spec.npu.memory_mode.name if spec.npu is not None else None,
            "lower_bound": ["method"],
            "placements": {k: {"region": r, "bytes": u, "size": n} for k, (r, u, n) in hw["placements"].items()},
            "regions": {k: {"bytes": t, "complete": c} for k, (t, c) in hw["regions"].items()}}


def _tensor(io: dict) -> str:
    if io["kind"] != "Tensor":
        default = f" (default {io['default']!r})" if "default" in io else ""
        return f"{io['kind']}{default}"
    text = f"{io['dtype']}{io['shape']} dim order {tuple(io['dim_order'])}, {io['nbytes']} B"
    if io.get("name"):
        text = f"{io['name']}: {text}"
    return text


def _quant(q: dict | None, into: bool) -> str:
    if not q:
        return ""
    dtype = f" {'to' if into else 'from'} {q['dtype']}" if q.get("dtype") else ""
    rng = f", range [{q['quant_min']}, {q['quant_max']}]" if q.get("quant_min") is not None else ""
    verb = "quantized" if into else "dequantized"
    return f"; {verb}{dtype} by {q['op']} (scale {q['scale']:.9g}, zero point {q['zero_point']}{rng})"


def format_text(facts: dict) -> list[str]:
    kind = "bundled program (BP08)" if facts["format"] == "bpte" else "program (ET12)"
    methods = facts["methods"]
    lines = [f"{facts['file']}: {kind}, {facts['file_size']} bytes; program {facts['program_size']} bytes, "
             f"{len(methods)} method{'s' if len(methods) != 1 else ''}"]
    for m in methods:
        cases = f" ({m['bundled_test_cases']} bundled test case{'s' if m['bundled_test_cases'] != 1 else ''})" \
            if "bundled_test_cases" in m else ""
        lines.append(f"method {m['name']}{cases}")
        for k, io in enumerate(m["inputs"]):
            lines.append(f"  input {k}: {_tensor(io)}{_quant(io.get('quantization'), True)}")
        for k, io in enumerate(m["outputs"]):
            lines.append(f"  output {k}: {_tensor(io)}{_quant(io.get('quantization'), False)}")
        for d in m["delegates"]:
            where = ", ".join(v for v in (d["target"], d["memory_mode"], d["system_config"]) if v)
            head = f"  delegate {d['index']}: {d['id']}{', ' + where if where else ''}; {d['calls']} call" \
                   f"{'s' if d['calls'] != 1 else ''}, {d['data_size']} B"
            if "ethosu" in d:
                e = d["ethosu"]
                head += (f" (command stream {e['command_stream_bytes']} B, weights {e['weight_bytes']} B, "
                         f"scratch {e['scratch_bytes']} B)")
            lines.append(head)
            for key, value in d["compile_specs"].items():
                lines.append(f"    {key}: {value}")
        ops = m["operators"]
        missing = [o for o in ops if not o["available"]]
        verdict = "all available here" if not missing else f"{len(missing)} missing here"
        lines.append(f"  operators: {len(ops)}{', ' + verdict if ops else ''}")
        for o in ops:
            lines.append(f"    {o['name']}  x{o['calls']}  {'available' if o['available'] else 'MISSING'}")
        planned = ", ".join(f"mem_id {p['mem_id']}: {p['size']} B ({p['pool']} pool)" for p in m["planned_memory"])
        lines.append(f"  planned memory: {planned or 'none'}; total {m['planned_bytes']} B")
        pools = m["pools_needed"]
        need = [f"method >= {pools['method']} B (planned buffers, before the runtime's own allocations)"]
        if pools.get("planned_fast"):
            need.append(f"planned_fast >= {pools['planned_fast']} B")
        if pools.get("temp"):
            need.append(f"temp >= {pools['temp']} B (Ethos-U scratch)")
        lines.append(f"  pools needed ({facts['runner_profile']} runner): {', '.join(need)}")
    mem = facts.get("memory")
    if mem:
        parts = []
        for region, r in mem["regions"].items():
            items = []
            for pname, p in mem["placements"].items():
                if p["region"] != region:
                    continue
                what = {"program": "", "method": ">= ", "temp": ""}.get(pname, "")
                why = {"method": ": planned buffers", "temp": ": Ethos-U scratch"}.get(pname, "")
                items.append(f"{pname} {what}{_kib(p['bytes'])}{why}" if p["bytes"] is not None
                             else f"{pname} ? of {_kib(p['size'])}")
            lower = any(p["region"] == region for k, p in mem["placements"].items() if k in mem["lower_bound"])
            parts.append(f"{region} {'>= ' if lower or not r['complete'] else ''}{_kib(r['bytes'])} "
                         f"({', '.join(items)})")
        lines.append(f"memory on {mem['board']} ({mem['memory_mode']}): {'; '.join(parts)}")
    return lines


def _kib(n: int) -> str:
    return f"{n / 1024:,.1f} KiB" if n >= 1024 else f"{n} B"


def inspect_model(image: bytes, path: str, as_json: bool = False, out=print) -> int:
    facts = describe(image, os.path.basename(path))
    if as_json:
        out(json.dumps(facts, indent=2))
    else:
        for line in format_text(facts):
            out(line)
    return 0
