"""From a schema-checked mapping to a ``BoardSpec``, with the cross-field checks.

Checks (each failure is one line naming where the value was set, the key path, the value and what is
allowed): overlapping memory/device windows, unknown NPU variant / system config / memory mode, firmware link
regions not backed by memory, pools that do not fit or overlap, memory the NPU must reach placed where the NPU
cannot reach it (the TCMs are private to the Cortex-M55), a memory mode that needs a fast-scratch pool.
"""

from __future__ import annotations

from typing import Callable

from ..errors import ConfigError, ConfigProblems
from . import schema as S

NPU_VARIANTS = ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256", "ethos-u65-256", "ethos-u65-512")


def _fmt_range(base: int, size: int) -> str:
    return f"0x{base:08x}..0x{base + size - 1:08x}" if size else f"0x{base:08x} (empty)"


def _require(d: dict, key: str, path: str, where, problems) -> bool:
    if d.get(key) is None:
        problems.append(f"{where(path + '.' + key if path else key)}: {path + '.' + key if path else key}: required key is missing")
        return False
    return True


def build_spec(raw: dict, prov: dict, files: tuple, where: Callable[[str], str]) -> S.BoardSpec:
    problems: list[str] = []
    board = raw.get("board", {}) or {}

    # ---- memory map
    memory: dict[str, S.MemoryRegionSpec] = {}
    for name, r in (raw.get("memory") or {}).items():
        path = f"memory.{name}"
        if not (_require(r, "base", path, where, problems) and _require(r, "size", path, where, problems)):
            continue
        memory[name] = S.MemoryRegionSpec(
            name=name, base=r["base"], size=r["size"], secure_base=r.get("secure_base"),
            masters=frozenset(r.get("masters") or ["cpu"]), kind=r.get("kind") or "ram",
            description=r.get("description", ""), source=r.get("source", ""))
    devices: dict[str, S.DeviceSpec] = {}
    for name, d in (raw.get("devices") or {}).items():
        path = f"devices.{name}"
        if not (_require(d, "type", path, where, problems) and _require(d, "base", path, where, problems)):
            continue
        props = {k: v for k, v in d.items() if k not in ("type", "base", "secure_base", "size", "irq")}
        devices[name] = S.DeviceSpec(name=name, type=d["type"], base=d["base"], size=d.get("size") or 0x1000,
                                     secure_base=d.get("secure_base"), irq=d.get("irq"), props=props)

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
    cpu_raw = raw.get("cpu") or {}
    cpu = S.CpuSpec(type=cpu_raw.get("type") or "cortex-m55", clock_hz=cpu_raw.get("clock") or 32_000_000,
                    costs=dict(cpu_raw.get("costs") or {}), mips_per_mhz=cpu_raw.get("mips_per_mhz") or 1.0)

    # ---- NPU
    npu_raw = raw.get("npu") or {}
    sys_cfgs = raw.get("system_configs") or {}
    modes = raw.get("memory_modes") or {}
    npu = None
    ok = all(_require(npu_raw, k, "npu", where, problems) for k in ("device", "variant", "system_config", "memory_mode"))
    if ok:
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
            mems = {}
            for mtype, t in (sc.get("memories") or {}).items():
                mems[mtype] = S.MemoryTimingSpec(
                    clock_scale=t.get("clock_scale", 1.0), burst_length=t.get("burst_length", 32),
                    read_latency=t.get("read_latency", 0.0), write_latency=t.get("write_latency", 0.0),
                    max_reads=t.get("max_reads", 0) or 0, max_writes=t.get("max_writes", 0) or 0)
            for port in ("axi0_port", "axi1_port"):
                if sc.get(port) and sc[port] not in mems:
                    problems.append(f"{where(f'system_configs.{scname}.{port}')}: system_configs.{scname}.{port}: "
                                    f"{sc[port]!r} has no entry under system_configs.{scname}.memories")
            sysc = S.SystemConfigSpec(name=scname, core_clock_hz=sc.get("core_clock") or 500_000_000,
                                      axi0_port=sc.get("axi0_port", "Sram"), axi1_port=sc.get("axi1_port", "OffChipFlash"),
                                      memories=mems)
            regioncfg = tuple(mm.get("regioncfg") or (3, 0, 1, 1, 1, 1, 1, 1))
            if len(regioncfg) != 8 or any(v > 3 for v in regioncfg):
                problems.append(f"{where('memory_modes')}: memory_modes.{npu_raw['memory_mode']}.regioncfg: "
                                f"expected 8 values 0..3 (one per region), got {list(regioncfg)}")
            mode = S.MemoryModeSpec(name=npu_raw["memory_mode"], const_port=mm.get("const", "axi1"),
                                    arena_port=mm.get("arena", "axi0"), cache_port=mm.get("cache", "axi0"),
                                    arena_cache_size=mm.get("arena_cache_size") or 0,
                                    qconfig=mm.get("qconfig", 2) if mm.get("qconfig") is not None else 2,
                                    regioncfg=regioncfg)
            npu = S.NpuSpec(device=npu_raw["device"], variant=npu_raw["variant"], system_config=sysc,
                            memory_mode=mode, timing=npu_raw.get("timing") or "analytic",
                            engine=npu_raw.get("engine") or "fast", max_commands=npu_raw.get("max_commands") or 1_000_000,
                            timing_params={k: v for k, v in (npu_raw.get("timing_params") or {}).items()
                                           if k != "description"})

    # ---- firmware
    fw_raw = raw.get("firmware") or {}
    firmware = None
    if all(_require(fw_raw, k, "firmware", where, problems) for k in ("entry", "model")):
        links = {}
        for name, lr in (fw_raw.get("memory") or {}).items():
            path = f"firmware.memory.{name}"
            if _require(lr, "base", path, where, problems) and _require(lr, "size", path, where, problems):
                links[name] = (lr["base"], lr["size"])
        for name, (b, s) in links.items():
            missing = _uncovered(b, s, memory)
            if missing is not None:
                problems.append(f"{where(f'firmware.memory.{name}')}: firmware.memory.{name}: {_fmt_range(b, s)} is not "
                                f"backed by memory (nothing mapped at 0x{missing:08x})")

        def placement(name, p, path, default_npu):
            if not _require(p, "region", path, where, problems):
                return None
            if p["region"] not in links:
                problems.append(f"{where(path + '.region')}: {path}.region: unknown region {p['region']!r}; "
                                f"allowed: {', '.join(links)}")
                return None
            align = p.get("align") or 16
            if align & (align - 1):
                problems.append(f"{where(path + '.align')}: {path}.align: {align} is not a power of two")
                align = 16
            return S.PlacementSpec(name=name, region=p["region"], size=p.get("size"), address=p.get("address"),
                                   align=align, npu=p.get("npu", default_npu))

        model = placement("model", fw_raw["model"], "firmware.model", True)
        pools = {}
        for name, p in (fw_raw.get("pools") or {}).items():
            pl = placement(name, p, f"firmware.pools.{name}", False)
            if pl is not None:
                if pl.size is None:
                    problems.append(f"{where(f'firmware.pools.{name}')}: firmware.pools.{name}.size: required key is missing")
                    continue
                pools[name] = pl
        if model is not None:
            firmware = S.FirmwareSpec(entry=fw_raw["entry"], runtime=fw_raw.get("runtime") or "",
                                      allocator=fw_raw.get("allocator") or "", link_regions=links, model=model,
                                      pools=pools, options=dict(fw_raw.get("options") or {}))
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

    sim_raw = raw.get("simulation") or {}
    simulation = S.SimulationSpec(cycle_limit=sim_raw.get("cycle_limit"), time_limit=sim_raw.get("time_limit"),
                                  strict=bool(sim_raw.get("strict", False)))
    if npu is not None and npu.device in devices and "uart0" not in devices:
        pass
    if problems:
        raise ConfigProblems(problems)
    spec = S.BoardSpec(name=board.get("name", files[0]), description=board.get("description", ""),
                       fvp_name=board.get("fvp_name", "FVP_MPS3_Corstone_SSE_300"), files=files, memory=memory,
                       devices=devices, cpu=cpu, npu=npu, firmware=firmware, simulation=simulation, raw=raw,
                       provenance=dict(prov))
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
