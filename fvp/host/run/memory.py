"""How much memory a program takes on a board: high-water marks per firmware placement (the program, each pool) and
per linker memory region (SRAM, DDR, ...), for the end of ``fvp run``, ``fvp inspect`` and ``fvp sweep``'s
``sram_bytes``.

What each placement holds, from what the run (or the program) says:

- the program: its size, in ``firmware.model.region``;
- the method pool: the runner's ``method_allocator_used`` (planned buffers, everything ``Method::init``
  allocates, the inputs), from its log; ``fvp inspect`` gives the planned buffers, a lower bound;
- the temp pool: the largest Ethos-U scratch of the program's delegates (Vela's region 1; ExecuTorch resets the
  temp allocator between instructions, so the largest one is the peak) or the runner's ``peak_temp_allocator``
  when its runtime profile prints one, whichever is larger;
- a fast scratch (``dedicated_sram``, the NPU's region 2) or a planned fast-memory pool: its whole size (the NPU's
  cache uses it whole);
- the semihosting runner's ``input_file`` pool: ``input_file_allocator_used``;
- the TFLite Micro image's tensor arena: its log's ``Activation buffer (a.k.a tensor arena) size used``.

A pool whose use the log does not say (the ``minimal`` allocator keeps no statistics) is not counted, and its
memory's total is then a lower bound (said as such). The runner's 2 MiB temp pool itself is a build-time
reservation, not a need: only its use is counted.
"""

from __future__ import annotations

import re

_MEM_LINE = re.compile(r"(method_allocator_used|method_allocator_planned|method_allocator_loaded|"
                       r"method_allocator_input|method_allocator_executor|temp_allocator|peak_temp_allocator|"
                       r"input_file_allocator_used|model_pte_program_size|model_pte_loaded_size):\s*(\d+)")
_ARENA_LINE = re.compile(r"Activation buffer \(a\.k\.a tensor arena\) size used:\s*(\d+)")  # TFLite Micro's


def runner_memory_stats(log: str) -> dict:
    """The memory statistics ``arm_executor_runner`` logs (``method_allocator_used: N``, ...), and the TFLite Micro
    image's arena use (``arena_used``): name -> bytes."""
    out = {m.group(1): int(m.group(2)) for m in _MEM_LINE.finditer(log)}
    arena = _ARENA_LINE.findall(log)
    if arena:
        out["arena_used"] = max(int(a) for a in arena)
    return out


def ethosu_scratch(spec, model: bytes | None) -> int:
    """The largest Ethos-U scratch (Vela's region 1) of the program's delegates, 0 if none or unreadable."""
    if not model:
        return 0
    from ..programs.firmware_image import firmware_module

    try:
        lister = getattr(firmware_module(spec), "ethosu_command_streams", None)
        if lister is None:
            return 0
        return max([d["scratch_size"] for d in lister(model)] or [0])
    except Exception:  # noqa: BLE001 - a program the lister cannot read still ran (or failed) on its own terms
        return 0


def high_water(spec, model: bytes | None, stats: dict, scratch: int | None = None) -> dict:
    """``{"placements": {name: (region, used, size)}, "regions": {region: (used, complete)}}`` for the board
    ``spec``: ``used`` bytes of each placement (``None``: not reported); a region's total is ``complete`` when
    every placement in it was reported."""
    scratch = ethosu_scratch(spec, model) if scratch is None else scratch
    fw = spec.firmware
    out: dict = {}
    reported = {"method": "method_allocator_used", "input_file": "input_file_allocator_used", "arena": "arena_used"}
    if model:
        out["program"] = (fw.model.region, len(model), len(model))
    for name, pool in fw.pools.items():
        if not pool.size:
            continue
        if name in reported:
            used = stats.get(reported[name])
        elif name == "temp":
            used = min(max(scratch, stats.get("peak_temp_allocator", 0)), pool.size)
        elif name in ("fast_scratch", "planned_fast"):
            used = pool.size
        else:
            used = None
        out[name] = (pool.region, used, pool.size)
    regions: dict = {}
    for region, used, _ in out.values():
        total, complete = regions.get(region, (0, True))
        regions[region] = (total + (used or 0), complete and used is not None)
    return {"placements": out, "regions": regions}


def sram_bytes(spec, model: bytes, stats: dict) -> tuple:
    """(the SRAM the program needs on this board, its Ethos-U scratch): ``fvp sweep``'s ``sram_bytes``."""
    scratch = ethosu_scratch(spec, model)
    hw = high_water(spec, model, stats, scratch)
    sram = sum(used if used is not None else size for region, used, size in hw["placements"].values()
               if region == "SRAM")  # a pool of unreported use takes its whole size
    return sram, scratch


def _size(n: int) -> str:
    if n >= 1 << 20:
        return f"{n / (1 << 20):,.1f} MiB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):,.1f} KiB"
    return f"{n} B"


def high_water_line(hw: dict) -> str:
    """One line: each region's total, then what in it (``SRAM 72.8 KiB (temp 72.8 KiB of 2.0 MiB), ...``)."""
    parts = []
    for region, (total, complete) in hw["regions"].items():
        items = []
        for name, (r, used, size) in hw["placements"].items():
            if r != region:
                continue
            if name == "program":
                items.append(f"program {_size(used)}")
            elif used is None:
                items.append(f"{name} ? of {_size(size)}: its use is not reported")
            else:
                items.append(f"{name} {_size(used)} of {_size(size)}")
        parts.append(f"{region} {'' if complete else '>= '}{_size(total)} ({', '.join(items)})")
    return "; ".join(parts)
