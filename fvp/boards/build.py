"""From a schema-checked mapping to a ``BoardSpec``, with the cross-field checks.

Checks (each failure is one line naming where the value was set, the key path, the value and what is
allowed): overlapping memory/device windows, unknown NPU variant / system config / memory mode, firmware link
regions not backed by memory, pools that do not fit or overlap, memory the NPU must reach placed where the NPU
cannot reach it (the TCMs are private to the Cortex-M55), a memory mode that needs a fast-scratch pool.
"""

from __future__ import annotations

from typing import Callable

from hwdesc.ethosu import NPU_VARIANTS, REGION_SCRATCH, REGION_SCRATCH_FAST, REGION_WEIGHTS, regioncfg_axi_port

from ..errors import ConfigError, ConfigProblems
from . import schema as S


def _fmt_range(base: int, size: int) -> str:
    return f"0x{base:08x}..0x{base + size - 1:08x}" if size else f"0x{base:08x} (empty)"


def build_spec(raw: dict, prov: dict, files: tuple, where: Callable[[str], str]) -> S.BoardSpec:
    """The typed spec of a schema-checked mapping: each section's defaults and required keys come from its
    declaration (``schema.py``); the checks here are the ones across keys."""
    problems: list[str] = []
    board = raw.get("board", {}) or {}

    # ---- memory map
    memory: dict[str, S.MemoryRegionSpec] = {}
    for name, r in (raw.get("memory") or {}).items():
        if S.MEMORY_REGION.first_missing(r, f"memory.{name}", where, problems):
            memory[name] = S.MEMORY_REGION.build(r, name=name)
    devices: dict[str, S.DeviceSpec] = {}
    for name, d in (raw.get("devices") or {}).items():
        if S.DEVICE_COMMON.first_missing(d, f"devices.{name}", where, problems):
            devices[name] = S.DEVICE.variants[d["type"]].build(d, name=name)

    windows = []
    for m in memory.values():
        for (b, s) in m.windows():
            windows.append((b, s, f"memory.{m.name}"))
    for d in devices.values():
        windows.append((d.base, d.size, f"devices.{d.name}"))
        if d.secure_base is not None:
            windows.append((d.secure_base, d.size, f"devices.{d.name}"))
    windows.sort()
    for (b1, s1, n1), (b2, s2, n2) in zip(windows, windows[1:]):
        if b2 < b1 + s1:
            problems.append(f"{where(n2)}: {n2}: {_fmt_range(b2, s2)} overlaps {n1} ({_fmt_range(b1, s1)})")
    for b, s, n in windows:
        if b + s > 1 << 40:
            problems.append(f"{where(n)}: {n}: {_fmt_range(b, s)} is beyond the 40-bit address space")

    # ---- CPU
    cpu = S.CPU.build(raw.get("cpu") or {})

    # ---- NPU
    npu_raw = raw.get("npu") or {}
    sys_cfgs = raw.get("system_configs") or {}
    modes = raw.get("memory_modes") or {}
    npu = None
    if S.NPU.first_missing(npu_raw, "npu", where, problems):
        dev = devices.get(npu_raw["device"])
        if dev is None or dev.type != "ethos-u":
            problems.append(f"{where('npu.device')}: npu.device: {npu_raw['device']!r} is not an ethos-u device; "
                            f"ethos-u devices: {', '.join(n for n, d in devices.items() if d.type == 'ethos-u') or 'none'}")
        if npu_raw["variant"] not in NPU_VARIANTS:
            problems.append(f"{where('npu.variant')}: npu.variant: {npu_raw['variant']!r} is not a known NPU; "
                            f"allowed: {', '.join(NPU_VARIANTS)}")
        sc = sys_cfgs.get(npu_raw["system_config"])
        if sc is None:
            problems.append(f"{where('npu.system_config')}: npu.system_config: unknown system config "
                            f"{npu_raw['system_config']!r}; allowed: {', '.join(sys_cfgs)}")
        mm = modes.get(npu_raw["memory_mode"])
        if mm is None:
            problems.append(f"{where('npu.memory_mode')}: npu.memory_mode: unknown memory mode "
                            f"{npu_raw['memory_mode']!r}; allowed: {', '.join(modes)}")
        if sc is not None and mm is not None:
            scname = npu_raw["system_config"]
            mems = {mtype: S.MEMORY_TIMING.build(t) for mtype, t in (sc.get("memories") or {}).items()}
            for port in ("axi0_port", "axi1_port"):
                if sc.get(port) and sc[port] not in mems:
                    problems.append(f"{where(f'system_configs.{scname}.{port}')}: system_configs.{scname}.{port}: "
                                    f"{sc[port]!r} has no entry under system_configs.{scname}.memories")
            tas = {m: S.TIMING_ADAPTERS.build(t or {}, name=m) for m, t in (sc.get("timing_adapters") or {}).items()}
            for m, pair in tas.items():
                for port in ("axi0", "axi1"):
                    ta = getattr(pair, port)
                    if ta is not None and ta.pulse_off and not ta.pulse_on:
                        key = f"system_configs.{scname}.timing_adapters.{m}.{port}"
                        problems.append(f"{where(key)}: {key}: pulse_on 0 with pulse_off {ta.pulse_off} lets no "
                                        f"address through (the NPU would wait forever)")
            sysc = S.SYSTEM_CONFIG.build(sc, name=scname, memories=mems, timing_adapters=tas)
            mode = S.MEMORY_MODE.build(mm, name=npu_raw["memory_mode"])
            if len(mode.regioncfg) != 8 or any(v > 3 for v in mode.regioncfg):
                problems.append(f"{where('memory_modes')}: memory_modes.{npu_raw['memory_mode']}.regioncfg: "
                                f"expected 8 values 0..3 (one per region), got {list(mode.regioncfg)}")
            else:  # the ports Vela compiled for are the ports the driver's REGIONCFG sends the traffic to
                for key, region in (("const", REGION_WEIGHTS), ("arena", REGION_SCRATCH),
                                    ("cache", REGION_SCRATCH_FAST)):
                    port = f"axi{regioncfg_axi_port(mode.regioncfg[region])}"
                    if mm.get(key, port) != port:
                        mname = npu_raw["memory_mode"]
                        problems.append(f"{where(f'memory_modes.{mname}.{key}')}: memory_modes.{mname}.{key}: "
                                        f"{mm[key]!r}, but its regioncfg sends region {region} to {port} "
                                        f"(memory type {mode.regioncfg[region]})")
            npu = S.NPU.build(npu_raw, system_config=sysc, memory_mode=mode)

    # ---- firmware
    fw_raw = raw.get("firmware") or {}
    firmware = None
    if S.FIRMWARE_SECTION.first_missing(fw_raw, "firmware", where, problems):
        links = {}
        for name, lr in (fw_raw.get("memory") or {}).items():
            if S.LINK_REGION.first_missing(lr, f"firmware.memory.{name}", where, problems):
                links[name] = (lr["base"], lr["size"])
        for name, (b, s) in links.items():
            missing = _uncovered(b, s, memory)
            if missing is not None:
                problems.append(f"{where(f'firmware.memory.{name}')}: firmware.memory.{name}: {_fmt_range(b, s)} is not "
                                f"backed by memory (nothing mapped at 0x{missing:08x})")

        def placement(name, p, path, default_npu):
            if not S.PLACEMENT.first_missing(p, path, where, problems):
                return None
            if p["region"] not in links:
                problems.append(f"{where(path + '.region')}: {path}.region: unknown region {p['region']!r}; "
                                f"allowed: {', '.join(links)}")
                return None
            pl = S.PLACEMENT.build(p, name=name, npu=p.get("npu", default_npu))
            if pl.align & (pl.align - 1):
                problems.append(f"{where(path + '.align')}: {path}.align: {pl.align} is not a power of two")
            return pl

        model = placement("model", fw_raw["model"], "firmware.model", True)
        pools = {}
        for name, p in (fw_raw.get("pools") or {}).items():
            pl = placement(name, p, f"firmware.pools.{name}", False)
            if pl is not None:
                if pl.size is None:  # the model's size is the program's; a pool's is the board's
                    problems.append(f"{where(f'firmware.pools.{name}')}: firmware.pools.{name}.size: required key is missing")
                    continue
                pools[name] = pl
        if model is not None:
            firmware = S.FIRMWARE_SECTION.build(fw_raw, link_regions=links, model=model, pools=pools)
            # reachability by the NPU
            for pl in [model] + list(pools.values()):
                if not pl.npu or (pl.size == 0 and pl is not model):
                    continue
                b, s = links[pl.region]
                blocked = _not_reachable(b, s, memory, "npu")
                if blocked is not None:
                    what = "firmware.model" if pl is model else f"firmware.pools.{pl.name}"
                    problems.append(f"{where(what)}: {what}: region {pl.region} ({_fmt_range(b, s)}) lies in memory "
                                    f"{blocked} which the NPU cannot reach; memory the NPU uses (model, scratch) must be "
                                    f"in a region whose masters include npu (e.g. SRAM or DDR, not a TCM)")
            if npu is not None and npu.memory_mode.arena_port != npu.memory_mode.cache_port:
                fs = pools.get("fast_scratch")
                if fs is None or not fs.size:
                    problems.append(f"{where('npu.memory_mode')}: npu.memory_mode: {npu.memory_mode.name} places the "
                                    f"NPU cache in a separate fast scratch; set firmware.pools.fast_scratch "
                                    f"(region SRAM, size e.g. 384KiB)")

    simulation = S.SIMULATION.build(raw.get("simulation") or {})
    if problems:
        raise ConfigProblems(problems)
    spec = S.BOARD.build(board, name=board.get("name", files[0]), files=files, memory=memory, devices=devices,
                         cpu=cpu, npu=npu, firmware=firmware, simulation=simulation, raw=raw, provenance=dict(prov))
    layout_firmware(spec, model_size=0)  # catch pools that cannot fit even with an empty model
    return spec


def _memory_at(addr: int, memory: dict):
    for m in memory.values():
        for b, s in m.windows():
            if b <= addr < b + s:
                return m, b, s
    return None


def _uncovered(base: int, size: int, memory: dict):
    addr, end = base, base + size
    while addr < end:
        hit = _memory_at(addr, memory)
        if hit is None:
            return addr
        _, b, s = hit
        addr = b + s
    return None


def _not_reachable(base: int, size: int, memory: dict, master: str):
    addr, end = base, base + size
    while addr < end:
        hit = _memory_at(addr, memory)
        if hit is None:
            return f"<unmapped 0x{addr:08x}>"
        m, b, s = hit
        if master not in m.masters:
            return f"{m.name} (masters: {', '.join(sorted(m.masters))})"
        addr = b + s
    return None


def layout_firmware(spec: S.BoardSpec, model_size: int) -> dict:
    """Place the model and pools like the runner's linker script: in declaration order inside each region.

    Returns ``{name: (address, size)}`` (``model`` included). Raises ``ConfigProblems`` when something does not
    fit or two placements overlap ("region DDR overflowed" in the linker's words).
    """

    fw = spec.firmware
    where = lambda p: spec.provenance.get(p) or spec.provenance.get(p.rpartition('.')[0]) or (spec.files[0] if spec.files else "<board>")
    cursor = {name: base for name, (base, size) in fw.link_regions.items()}
    placed: dict[str, tuple[int, int]] = {}
    problems = []
    items = [(fw.model, model_size)] + [(p, p.size) for p in fw.pools.values()]
    for pl, size in items:
        key = "firmware.model" if pl is fw.model else f"firmware.pools.{pl.name}"
        rbase, rsize = fw.link_regions[pl.region]
        if pl.address is not None:
            addr = pl.address
        else:
            addr = -(-cursor[pl.region] // pl.align) * pl.align
        if not (rbase <= addr and addr + size <= rbase + rsize):
            problems.append(f"{where(key)}: {key}: {size} bytes at 0x{addr:08x} do not fit in region {pl.region} "
                            f"({_fmt_range(rbase, rsize)}): region {pl.region} overflowed")
            continue
        if pl.address is None:
            cursor[pl.region] = addr + size
        placed[pl.name] = (addr, size)
    names = sorted(((a, s, n) for n, (a, s) in placed.items() if s), key=lambda t: t[0])
    for (a1, s1, n1), (a2, s2, n2) in zip(names, names[1:]):
        if a2 < a1 + s1:
            problems.append(f"{where('firmware.pools')}: firmware: {n2} ({_fmt_range(a2, s2)}) overlaps {n1} ({_fmt_range(a1, s1)})")
    if problems:
        raise ConfigProblems(problems)
    return placed


__all__ = ["build_spec", "layout_firmware", "NPU_VARIANTS", "ConfigError"]
