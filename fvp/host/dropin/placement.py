"""Which board the drop-in runs: the binary's default board, then what the program says (its compile specs: NPU,
memory mode, system config, the pools run.sh builds for them), then what the ELF's build placed (its pools, the
program's section, ETDump options), then the user's ``-C``.

A placement the ELF forces that the board cannot take is said in the ELF's terms (its symbol), not in the
``-C`` keys the drop-in set for it.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from ...boards import ConfigProblems, Layer, load_board
from .application import Application
from .params import FLAVOURS, Usage, spelled


@dataclass(frozen=True)
class Placement:
    """The board to run (``spec``) and what the start-up line says about how it was chosen."""
    spec: object
    notes: list  # memory mode / system config taken from the program's compile specs
    elf_note: str  # the pools (and memory mode) taken from the ELF


def board_for(app: Application, fl: dict, flavour: str, board_params: list) -> Placement:
    model, model_name, model_addr, elf = app.model, app.model_name, app.model_addr, app.elf
    # the board: base for this binary, then what the program and the ELF say, then the user's -C
    from ..programs.kind import is_tflite
    from ..programs.program_board import resolve

    tflite = is_tflite(model)  # MLEK's dynamic-model flow: the TFLite Micro image on this binary's NPU
    res = resolve(model, board=None if tflite else fl["board"], overrides=board_params, model_name=model_name,
                  fvp_flavour=flavour)
    base = res.board
    program = dict(res.program_layer.values)  # the keys the program's compile specs fix
    placed: dict = {}  # the keys the application's build placed (the ELF's pools and program, --data)
    origin = f"-a {elf.path}" if elf is not None else f"--data {model_name}"
    notes = [f"{what} {res.used[key][0]}" for key, what in (("memory_mode", "memory mode"),
                                                            ("system_config", "system config"))
             if key in res.used and res.used[key][1] == "program"]
    if res.cannot_run:  # the FVP runs it and the driver refuses it: say why up front
        from ..programs.et_build import flavour as flavour_of

        want = res.program.value("target")
        want_fl = FLAVOURS[flavour_of(want)]
        print(f"Warning: {model_name} was compiled for {want}; {res.cannot_run} ({spelled(fl, 'ethosu.num_macs')}), "
              f"the Ethos-U driver refuses it: give -C {spelled(want_fl, 'ethosu.num_macs')}={want.rsplit('-', 1)[-1]}"
              + (f" to {want_fl['binary']}" if want_fl is not fl else ""), file=sys.stderr)

    def layers():
        return [Layer(res.program_layer.origin, program), Layer(origin, placed)]

    mode_note = ""
    if tflite and elf is not None and model is elf.program:
        extra, mode_note = mlek_pool_settings(elf, base, layers(), board_params, flavour)
        placed.update(extra)
    elf_layout = elf is not None and elf.runner_layout
    elf_mode_note = ""
    if elf_layout:  # the ELF's build placed the pools: the program's compile specs do not place them again
        program = {k: v for k, v in program.items() if not k.startswith("firmware.pools.")}
        mode, src = res.used.get("memory_mode", ("", ""))
        if src == "program" and mode.startswith("Dedicated_Sram") and "fast_scratch" not in elf.pools:
            # no dedicated_sram: the ELF was not built for Dedicated_Sram; its driver runs the stream without a
            # fast scratch, in the memory mode run.sh builds for this NPU by default
            from ..programs.et_build import default_memory_mode

            elf_mode = default_memory_mode(res.program.value("target") or fl["board"].split("-", 2)[2])
            if elf_mode.startswith("Dedicated_Sram"):
                elf_mode = "Shared_Sram"
            program.pop("npu.memory_mode", None)
            placed["npu.memory_mode"] = elf_mode
            notes = [n for n in notes if not n.startswith("memory mode ")]
            elf_mode_note = (f"memory mode {elf_mode}, not the program's {mode}: the ELF has no fast scratch "
                             f"(dedicated_sram), it was not built for {mode}")
    spec0 = load_board(base, board_params, fvp_flavour=flavour, layers=layers())
    links = spec0.firmware.link_regions
    from .elf_image import region_of

    elf_note = ""
    if elf is not None:
        for pool, (addr, size) in sorted(elf.pools.items()):
            region = region_of(links, addr)
            if region is not None:
                placed[f"firmware.pools.{pool}.region"] = region
                if elf_layout:  # at the address the ELF's linker gave it
                    placed[f"firmware.pools.{pool}.address"] = addr
            placed[f"firmware.pools.{pool}.size"] = size
            if pool not in spec0.firmware.pools:  # a pool the board does not declare
                placed[f"firmware.pools.{pool}.align"] = 16
                if pool == "fast_scratch":
                    placed["firmware.pools.fast_scratch.npu"] = True
        if elf_layout:  # a pool of the board that the ELF's build does not have
            placed.update({f"firmware.pools.{pool}.size": 0 for pool in spec0.firmware.pools if pool not in elf.pools})
        if elf.runtime:  # the ELF's log strings say which runner it is (the user's -C still wins)
            placed["firmware.runtime"] = elf.runtime
        if elf.etdump:  # built with the ETDump event tracer: the runner prints the #[RUN THIS] block
            placed["firmware.options.etdump"] = True
            if elf.etdump_debug != "none":  # and with ET_DUMP_(INTERMEDIATE_)OUTPUTS: the debug buffer too
                placed["firmware.options.etdump_debug"] = elf.etdump_debug
        if elf.pools:
            elf_note = ("pools from the ELF: " + ", ".join(f"{k} {v[1]} bytes" for k, v in sorted(elf.pools.items()))
                        + mode_note)
        if elf_mode_note:
            elf_note = f"{elf_mode_note}; {elf_note}"
        if model_addr is None and elf.program is not None and model is elf.program:
            region = region_of(links, elf.program_address or 0)
            if region is not None and (region != spec0.firmware.model.region or elf_layout):
                placed["firmware.model.region"] = region
                if elf_layout:
                    placed["firmware.model.address"] = elf.program_address
        elif model_addr is None and elf_layout:
            # read from the host (semihosting -m): the runner reads it into its input_file pool; here it goes
            # after the ELF's pools in the model's region, where it overlaps nothing of the ELF's layout
            region = spec0.firmware.model.region
            ends = [a + n for a, n in elf.pools.values() if region_of(links, a) == region]
            if ends:
                placed.update({"firmware.model.region": region, "firmware.model.address": -(-max(ends) // 16) * 16})
    if model_addr is not None:
        region = region_of(links, model_addr)
        if region is None:
            raise Usage(f"--data {model_name}@0x{model_addr:08x}: the address is not in any memory the runner "
                        f"links (regions: {', '.join(links)})")
        if region != spec0.firmware.model.region or model_addr != links[region][0]:
            placed.update({"firmware.model.region": region, "firmware.model.address": model_addr})
    try:
        spec = load_board(base, board_params, fvp_flavour=flavour, layers=layers())
        if elf is not None:  # the placements checked here, so that a conflict is said in the ELF's terms
            from ...boards import layout_firmware

            layout_firmware(spec, len(model))
    except ConfigProblems as e:
        if elf is None:
            raise
        desc = (f"--data {model_name}@0x{model_addr:08x}" if model_addr is not None
                else f"the program ({elf.program_source})")
        raise ConfigProblems([elf_problem(p, elf, board_params, desc) for p in e.problems]) from None

    return Placement(spec, notes, elf_note)


def mlek_pool_settings(elf, base, layers, board_params, flavour) -> tuple[dict, str]:
    """The pools of an MLEK application ELF, before the board is checked: the arena's region and size, and an NPU
    cache (``cache_arena``) as the board's fast scratch. MLEK's ``ethosu_mem_config.h`` has a cache in a
    Dedicated_Sram build only (the arena then in DDR), so an ELF with one runs in that memory mode unless
    ``-C npu.memory_mode`` says otherwise (Dedicated_Sram requires the fast scratch). Returns (settings, note)."""
    from .elf_image import region_of

    links = load_board(base, fvp_flavour=flavour, layers=layers).firmware.link_regions
    out = {}
    for pool, (addr, size) in sorted(elf.pools.items()):
        region = region_of(links, addr)
        if region:
            out[f"firmware.pools.{pool}.region"] = region
        out[f"firmware.pools.{pool}.size"] = size
        if pool == "fast_scratch":
            out.update({"firmware.pools.fast_scratch.align": 16, "firmware.pools.fast_scratch.npu": True})
    if "fast_scratch" not in elf.pools or any(p.split("=", 1)[0].strip() == "npu.memory_mode" for p in board_params):
        return out, ""
    return {"npu.memory_mode": "Dedicated_Sram", **out}, "; memory mode Dedicated_Sram (the ELF has an NPU cache)"


def elf_problem(problem: str, elf, user_params: list, model_desc: str) -> str:
    """A board problem about a placement the drop-in took from the ELF, said in the ELF's terms (its symbol, or
    ``model_desc`` for the program), not in the ``-C`` keys the drop-in set for it: the user typed only
    ``user_params``."""
    m = re.search(r"firmware: (\w+) \((0x\w+\.\.0x\w+)\) overlaps (\w+) \((0x\w+\.\.0x\w+)\)", problem)
    if m:  # two placements on the same bytes (e.g. --data over the ELF's pools)
        def name(n):
            return model_desc if n == "model" else f"the ELF's {elf.pool_symbols.get(n, n)}"
        return f"-a {elf.path}: {name(m.group(1))} ({m.group(2)}) overlaps {name(m.group(3))} ({m.group(4)})"
    m = re.search(r"\bfirmware\.(?:pools\.(\w+)|model)\b", problem)
    if m is None or (m.group(1) is not None and m.group(1) not in elf.pools):
        return problem
    what = elf.pool_symbols.get(m.group(1), m.group(1)) if m.group(1) else elf.program_source
    yours = [p for p in user_params if p.split("=", 1)[0] in problem[:m.start()]]
    return (f"-a {elf.path}: {what}, as the ELF places it" + (f", with -C {', -C '.join(yours)}" if yours else "")
            + f": {problem[m.start():]}")
