"""The board-description schema: which keys exist, what each value must be, and the typed spec they become.

A board YAML is checked against ``SCHEMA`` (unknown keys and bad values are errors naming the key path and
what is allowed), then turned into frozen dataclasses (``BoardSpec`` and friends) that the platform builder
reads. Names follow the hardware documents and Vela's ``vela.ini`` (``core_clock``, ``burst_length``,
``read_latency``, ``axi0_port`` ...), so a Vela system config maps across unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .. import units

# --------------------------------------------------------------------------------------------------------
# Value checkers: each takes the raw YAML value and returns the parsed value or raises ValueError(what is allowed)


def _str(v):
    if not isinstance(v, str):
        raise ValueError(f"expected a string, got {v!r}")
    return v


def _bool(v):
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in ("0", "1", "true", "false", "yes", "no", "on", "off"):
        return v.strip().lower() in ("1", "true", "yes", "on")
    raise ValueError(f"expected true/false (or 1/0), got {v!r}")


def _nonneg_int(v):
    n = units.parse_int(v)
    if n < 0:
        raise ValueError(f"expected a non-negative integer, got {v!r}")
    return n


def _opt(check):
    def inner(v):
        return None if v is None else check(v)
    inner.__name__ = getattr(check, "__name__", "optional")
    return inner


def enum(*allowed):
    def check(v):
        if v not in allowed:
            raise ValueError(f"{v!r} is not allowed; allowed: {', '.join(map(str, allowed))}")
        return v
    return check


def list_of(check):
    def inner(v):
        if not isinstance(v, list):
            raise ValueError(f"expected a list, got {v!r}")
        return [check(x) for x in v]
    return inner


def _cost(v):
    x = units.parse_number(v)
    if x < 0:
        raise ValueError(f"a cost must not be negative, got {v!r}")
    return x


ADDRESS = units.parse_int
SIZE = units.parse_size
FREQ = units.parse_frequency
NUMBER = units.parse_number
STR = _str
BOOL = _bool
UINT = _nonneg_int


class MapOf:
    """A mapping with free keys (names), each value checked against ``item`` (a schema dict or a checker)."""

    def __init__(self, item, key_check: Callable | None = None):
        self.item = item
        self.key_check = key_check


class Free:
    """A sub-tree that is passed through without key checking (firmware options)."""


MASTER = enum("cpu", "npu", "dma")
MEMORY_REGION = {
    "base": ADDRESS, "size": SIZE, "secure_base": ADDRESS, "masters": list_of(MASTER),
    "kind": enum("ram", "rom"), "description": STR, "source": STR,
}
DEVICE = {
    "type": enum("cmsdk_uart", "ethos-u", "stub", "cortex-m55-system"),
    "base": ADDRESS, "secure_base": ADDRESS, "size": SIZE, "irq": Free, "description": STR, "source": STR,
    # cmsdk_uart
    "out_file": STR, "shutdown_on_eot": BOOL, "shutdown_tag": STR, "unbuffered_output": BOOL,
    # stub
    "read_value": UINT,
}
MEMORY_TIMING = {
    "clock_scale": NUMBER, "burst_length": SIZE, "read_latency": NUMBER, "write_latency": NUMBER,
    "max_reads": UINT, "max_writes": UINT, "description": STR,
}
MEMORY_TYPES = ("Sram", "Dram", "OnChipFlash", "OffChipFlash")
SYSTEM_CONFIG = {
    "core_clock": FREQ, "axi0_port": enum(*MEMORY_TYPES), "axi1_port": enum(*MEMORY_TYPES),
    "memories": MapOf(MEMORY_TIMING, enum(*MEMORY_TYPES)), "description": STR, "source": STR,
}
PORT = enum("axi0", "axi1")
MEMORY_MODE = {
    "const": PORT, "arena": PORT, "cache": PORT, "arena_cache_size": SIZE,
    "qconfig": UINT, "regioncfg": list_of(UINT), "description": STR, "source": STR,
}
PLACEMENT = {
    "region": STR, "address": ADDRESS, "size": SIZE, "align": UINT, "npu": BOOL, "description": STR,
}
LINK_REGION = {"base": ADDRESS, "size": SIZE, "description": STR}

SCHEMA: dict[str, Any] = {
    "extends": Free,
    "board": {"name": STR, "description": STR, "source": STR, "fvp_name": STR},
    "memory": MapOf(MEMORY_REGION),
    "devices": MapOf(DEVICE),
    "cpu": {
        "type": enum("cortex-m55", "cortex-m85"), "clock": FREQ, "mips_per_mhz": NUMBER,
        "costs": MapOf(_cost), "description": STR, "source": STR,
    },
    "npu": {
        "device": STR, "variant": STR, "system_config": STR, "memory_mode": STR,
        "timing": enum("analytic", "none"), "engine": enum("fast", "reference"),
        "max_commands": UINT, "description": STR,
        # knobs of the NPU timing model that Vela's system config has no name for (docs/timing.md)
        "timing_params": {"cmd_word_cycles": NUMBER, "op_setup_cycles": NUMBER, "dma_setup_cycles": NUMBER, "stream_setup_cycles": NUMBER,
                          "description": STR},
    },
    "system_configs": MapOf(SYSTEM_CONFIG),
    "memory_modes": MapOf(MEMORY_MODE),
    "firmware": {
        "entry": STR, "runtime": STR, "allocator": STR, "memory": MapOf(LINK_REGION),
        "model": PLACEMENT, "pools": MapOf(PLACEMENT), "options": Free, "description": STR,
    },
    "simulation": {
        "cycle_limit": UINT, "time_limit": NUMBER, "strict": BOOL, "stop_on_eot": BOOL,
    },
}

# --------------------------------------------------------------------------------------------------------
# Typed spec


@dataclass(frozen=True)
class MemoryRegionSpec:
    name: str
    base: int
    size: int
    secure_base: int | None
    masters: frozenset
    kind: str
    description: str = ""
    source: str = ""

    def windows(self) -> list[tuple[int, int]]:
        """Bus windows (base, size) where this region appears: the NS base and the secure alias."""
        out = [(self.base, self.size)]
        if self.secure_base is not None:
            out.append((self.secure_base, self.size))
        return out


@dataclass(frozen=True)
class DeviceSpec:
    name: str
    type: str
    base: int
    size: int
    secure_base: int | None
    irq: Any
    props: dict = field(default_factory=dict)


@dataclass(frozen=True)
class MemoryTimingSpec:
    clock_scale: float
    burst_length: int
    read_latency: float
    write_latency: float
    max_reads: int = 0
    max_writes: int = 0


@dataclass(frozen=True)
class SystemConfigSpec:
    name: str
    core_clock_hz: int
    axi0_port: str
    axi1_port: str
    memories: dict  # memory type name -> MemoryTimingSpec
    # the board's npu.timing_params (fixed NPU costs), carried here so the timing model gets them with the clock
    # and the memories it already receives


@dataclass(frozen=True)
class MemoryModeSpec:
    name: str
    const_port: str
    arena_port: str
    cache_port: str
    arena_cache_size: int
    qconfig: int
    regioncfg: tuple


@dataclass(frozen=True)
class NpuSpec:
    device: str
    variant: str
    system_config: SystemConfigSpec
    memory_mode: MemoryModeSpec
    timing: str
    engine: str
    max_commands: int
    timing_params: dict = field(default_factory=dict)  # npu.timing_params: knobs of the timing model


@dataclass(frozen=True)
class CpuSpec:
    type: str
    clock_hz: int
    costs: dict
    mips_per_mhz: float = 1.0


@dataclass(frozen=True)
class PlacementSpec:
    name: str
    region: str
    size: int | None
    address: int | None
    align: int
    npu: bool


@dataclass(frozen=True)
class FirmwareSpec:
    entry: str
    runtime: str
    allocator: str
    link_regions: dict  # name -> (base, size)
    model: PlacementSpec
    pools: dict  # name -> PlacementSpec
    options: dict


@dataclass(frozen=True)
class SimulationSpec:
    cycle_limit: int | None
    time_limit: float | None
    strict: bool
    stop_on_eot: bool = True


@dataclass(frozen=True)
class BoardSpec:
    name: str
    description: str
    fvp_name: str
    files: tuple
    memory: dict  # name -> MemoryRegionSpec (declaration order)
    devices: dict  # name -> DeviceSpec
    cpu: CpuSpec
    npu: NpuSpec
    firmware: FirmwareSpec
    simulation: SimulationSpec
    raw: dict  # the merged, checked mapping (for `fvp config`)
    provenance: dict  # dotted key path -> where it was set
