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


# Every number a board holds is finite and ranged: a value outside its range is a one-line error here, never
# an overflow, a NaN comparison or a limit that stops at once later on.
def _ranged(parse, lo, hi, what, lo_open=False, unit=""):
    def check(v):
        x = parse(v)
        if (x <= lo if lo_open else x < lo) or x > hi:
            fmt = lambda n: f"{n:g}" if isinstance(n, float) else str(n)  # noqa: E731
            raise ValueError(f"{what} must be {'>' if lo_open else '>='} {fmt(lo)} and <= {fmt(hi)}{unit}")
        return x
    check.__name__ = f"{what} in range"
    return check


def uint(hi, lo=0, what="an integer"):
    return _ranged(units.parse_int, lo, hi, what)


def number(lo, hi, what="a number", lo_open=False, unit=""):
    return _ranged(units.parse_number, lo, hi, what, lo_open, unit)


def _scalar(v):
    """A firmware option value: a string, true/false, null, an integer or a finite number (never a mapping or a
    list: the firmware's own check then judges the value)."""
    if v is None or isinstance(v, (str, bool)):
        return v
    if isinstance(v, int):
        if abs(v) >= 1 << 63:
            raise ValueError(f"integer {v} is out of range (|n| < 2^63)")
        return v
    if isinstance(v, float):
        return units.parse_number(v)
    raise ValueError(f"expected a string, a number or true/false, got {v!r}")


MAX_IRQ = 479  # the Armv8.1-M NVIC has at most 480 external interrupts


def _irq_number(v):
    return uint(MAX_IRQ, what="an interrupt number")(v)


def _irq(v):
    """An interrupt number, or a mapping of names to interrupt numbers (a UART's ``{rx: 33, tx: 34}``)."""
    if isinstance(v, dict):
        out = {}
        for k, n in v.items():
            if not isinstance(k, str):
                raise ValueError(f"interrupt names must be strings, got {k!r}")
            out[k] = _irq_number(n)
        return out
    return _irq_number(v)


def _firmware_entry(v):
    from .firmware_registry import check_name

    return check_name(v)


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


ADDRESS_LIMIT = 1 << 40  # the Ethos-U65's 40-bit address space; the Cortex-M55 sees 32 bits of it
ADDRESS = uint(ADDRESS_LIMIT - 1, what="an address")
SIZE = _ranged(units.parse_size, 0, ADDRESS_LIMIT, "a size")
FREQ = _ranged(units.parse_frequency, 1_000, 10_000_000_000, "a clock", unit=" Hz")
NUMBER = number(-10 ** 12, 10 ** 12)
STR = _str
BOOL = _bool
UINT = uint((1 << 32) - 1)
U32 = uint((1 << 32) - 1, what="a 32-bit value")
CYCLES = number(0, 1_000_000, "a cycle count")  # costs, latencies, NPU timing knobs: per event, in cycles
COST = number(0, 1_000_000, "a cost (CPU cycles per unit)")
FIRMWARE = _firmware_entry
SCALAR = _scalar
IRQ = _irq


class MapOf:
    """A mapping with free keys (names), each value checked against ``item`` (a schema dict or a checker)."""

    def __init__(self, item, key_check: Callable | None = None):
        self.item = item
        self.key_check = key_check


class Free:
    """A sub-tree that is passed through without key checking (only ``extends:``, which the loader reads)."""


class Tagged:
    """A mapping whose allowed keys depend on the value of one key (a device's ``type``): ``variants`` maps each
    allowed tag to its own schema dict."""

    def __init__(self, tag: str, variants: dict):
        self.tag = tag
        self.variants = variants


MASTER = enum("cpu", "npu", "dma")
MEMORY_REGION = {
    "base": ADDRESS, "size": SIZE, "secure_base": ADDRESS, "masters": list_of(MASTER),
    "kind": enum("ram", "rom"), "description": STR, "source": STR,
}
DEVICE_TYPES = ("cmsdk_uart", "ethos-u", "stub", "cortex-m55-system")
_DEVICE_COMMON = {"type": enum(*DEVICE_TYPES), "base": ADDRESS, "secure_base": ADDRESS, "size": SIZE,
                  "description": STR, "source": STR}
DEVICE = Tagged("type", {
    "cmsdk_uart": {**_DEVICE_COMMON, "irq": IRQ, "out_file": STR, "shutdown_on_eot": BOOL, "shutdown_tag": STR,
                   "unbuffered_output": BOOL},
    "ethos-u": {**_DEVICE_COMMON, "irq": _irq_number},
    "stub": {**_DEVICE_COMMON, "irq": IRQ, "read_value": U32},
    "cortex-m55-system": dict(_DEVICE_COMMON),
})
MEMORY_TIMING = {
    "clock_scale": number(0, 1000, "a clock scale", lo_open=True),
    "burst_length": _ranged(units.parse_size, 1, 4096, "a burst length", unit=" bytes"),
    "read_latency": CYCLES, "write_latency": CYCLES,
    "max_reads": uint(1_000_000), "max_writes": uint(1_000_000), "description": STR,
}
MEMORY_TYPES = ("Sram", "Dram", "OnChipFlash", "OffChipFlash")
SYSTEM_CONFIG = {
    "core_clock": FREQ, "axi0_port": enum(*MEMORY_TYPES), "axi1_port": enum(*MEMORY_TYPES),
    "memories": MapOf(MEMORY_TIMING, enum(*MEMORY_TYPES)), "description": STR, "source": STR,
}
PORT = enum("axi0", "axi1")
MEMORY_MODE = {
    "const": PORT, "arena": PORT, "cache": PORT, "arena_cache_size": SIZE,
    "qconfig": U32, "regioncfg": list_of(uint(3, what="a region config")), "description": STR, "source": STR,
}
PLACEMENT = {
    "region": STR, "address": ADDRESS, "size": SIZE, "align": uint(1 << 32, what="an alignment"), "npu": BOOL,
    "description": STR,
}
LINK_REGION = {"base": ADDRESS, "size": SIZE, "description": STR}

SCHEMA: dict[str, Any] = {
    "extends": Free,
    "board": {"name": STR, "description": STR, "source": STR, "fvp_name": STR},
    "memory": MapOf(MEMORY_REGION),
    "devices": MapOf(DEVICE),
    "cpu": {
        "type": enum("cortex-m55", "cortex-m85"), "clock": FREQ,
        "mips_per_mhz": number(0, 100, "instructions per cycle", lo_open=True),
        "costs": MapOf(COST), "description": STR, "source": STR,
    },
    "npu": {
        "device": STR, "variant": STR, "system_config": STR, "memory_mode": STR,
        "timing": enum("analytic", "none"), "engine": enum("fast", "reference"),
        "max_commands": uint(1_000_000_000, what="a command count"), "description": STR,
        # knobs of the NPU timing model that Vela's system config has no name for (docs/timing.md)
        "timing_params": {"cmd_word_cycles": CYCLES, "op_setup_cycles": CYCLES, "dma_setup_cycles": CYCLES,
                          "stream_setup_cycles": CYCLES, "description": STR},
    },
    "system_configs": MapOf(SYSTEM_CONFIG),
    "memory_modes": MapOf(MEMORY_MODE),
    "firmware": {
        "entry": FIRMWARE, "runtime": STR, "allocator": STR, "memory": MapOf(LINK_REGION),
        "model": PLACEMENT, "pools": MapOf(PLACEMENT), "options": MapOf(SCALAR), "description": STR,
    },
    "simulation": {
        "cycle_limit": uint((1 << 63) - 1, lo=1, what="a cycle limit"),
        "time_limit": number(0, 10 ** 9, "a time limit", lo_open=True, unit=" s"), "strict": BOOL,
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
