"""The board keys, each declared once: its type and unit, default, documentation and validation.

A board YAML is checked against ``SCHEMA`` (unknown keys and bad values are errors naming the key path and
what is allowed), then turned into frozen dataclasses (``BoardSpec`` and friends) that the platform builder
reads. Both come from the declarations below: a :class:`Key` says what one key holds (its checker, which
parses the value, its unit and its range; its default; its documentation; the typed object's field it fills),
a :class:`Section` groups the keys of one mapping and makes its dataclass (``@SECTION.typed``), a
:class:`MapOf` is a mapping of free names, a :class:`Tagged` mapping takes its keys from one tag (a
device's ``type``). ``SCHEMA`` (the checker the loader walks), the dataclasses' fields, the defaults and
required keys ``build.py`` applies, the key table of ``docs/boards.md`` (:func:`key_table`) and the spellings
``fvp config`` writes values in (:func:`as_written`) are all derived from them; ``build.py`` keeps only the
checks across keys (overlaps, references, the linker layout).

Names follow the hardware documents and Vela's ``vela.ini`` (``core_clock``, ``burst_length``,
``read_latency``, ``axi0_port`` ...), so a Vela system config maps across unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, make_dataclass
from typing import Any, Callable

from .. import units

# --------------------------------------------------------------------------------------------------------
# Value checkers: each takes the raw YAML value and returns the parsed value or raises ValueError(what is allowed).
# ``describe`` is how the key table names what a checker accepts; ``show``, when set, writes a parsed value back
# as a board file writes it (`fvp config`: an address in hex, a size or a clock with its unit); without it the
# value is written as YAML writes the number.


def _described(check, describe: str, show: Callable | None = None):
    check.describe = describe
    check.show = show
    return check


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


# Every number a board holds is finite and ranged: a value outside its range is a one-line error here, never
# an overflow, a NaN comparison or a limit that stops at once later on.
def _ranged(parse, lo, hi, what, lo_open=False, unit="", describe="", show=None):
    fmt = lambda n: f"{n:g}" if isinstance(n, float) else str(n)  # noqa: E731

    def check(v):
        x = parse(v)
        if (x <= lo if lo_open else x < lo) or x > hi:
            raise ValueError(f"{what} must be {'>' if lo_open else '>='} {fmt(lo)} and <= {fmt(hi)}{unit}")
        return x
    check.__name__ = f"{what} in range"
    check.what = what
    noun = what.split(" ", 1)[1] if what.startswith(("a ", "an ")) else what
    return _described(check, describe or f"{noun}, {'>' if lo_open else '>='} {fmt(lo)} and <= {fmt(hi)}{unit}",
                      show)


def uint(hi, lo=0, what="an integer", describe="", show=None):
    return _ranged(units.parse_int, lo, hi, what, describe=describe, show=show)


def number(lo, hi, what="a number", lo_open=False, unit="", describe=""):
    return _ranged(units.parse_number, lo, hi, what, lo_open, unit, describe)


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
IRQ_NUMBER = uint(MAX_IRQ, what="an interrupt number", describe=f"interrupt number 0..{MAX_IRQ}")


def _firmware_entry(v):
    from .firmware_registry import check_name

    return check_name(v)


def enum(*allowed):
    def check(v):
        if v not in allowed:
            raise ValueError(f"{v!r} is not allowed; allowed: {', '.join(map(str, allowed))}")
        return v
    return _described(check, "one of " + ", ".join(f"`{a}`" for a in allowed))


def list_of(check, min_items=0, none_means=""):
    """A list of values ``check`` accepts; with ``min_items`` a shorter list is an error saying what it would
    mean (``none_means``)."""
    def inner(v):
        if not isinstance(v, list):
            raise ValueError(f"expected a list, got {v!r}")
        if len(v) < min_items:
            raise ValueError(f"expected at least {min_items} item{'s' if min_items > 1 else ''}: {none_means}")
        return [check(x) for x in v]
    inner.item = check
    return _described(inner, f"list of {check.describe}" + (f" (at least {min_items})" if min_items else ""))


ADDRESS_LIMIT = 1 << 40  # the Ethos-U65's 40-bit address space; the Cortex-M55 sees 32 bits of it
ADDRESS = uint(ADDRESS_LIMIT - 1, what="an address", describe="address < 2^40 (`0x7000_0000`)",
               show=units.format_address)
SIZE = _ranged(units.parse_size, 0, ADDRESS_LIMIT, "a size", describe="size in bytes <= 2^40 (`2MiB`, `0x200000`)",
               show=units.format_size)
FREQ = _ranged(units.parse_frequency, 1_000, 10_000_000_000, "a clock", unit=" Hz",
               describe="clock, 1 kHz .. 10 GHz (`32MHz`)", show=units.format_frequency)
STR = _described(_str, "string")
BOOL = _described(_bool, "true/false")
U32 = uint((1 << 32) - 1, what="a 32-bit value", describe="32-bit value")
CYCLES = number(0, 1_000_000, "a cycle count")  # costs, latencies, NPU timing knobs: per event, in cycles
COST = number(0, 1_000_000, "a cost (CPU cycles per unit)")
FIRMWARE = _described(_firmware_entry, "a firmware image's name (`module:function`, registered)")
SCALAR = _described(_scalar, "string, number, true/false or null")


# --------------------------------------------------------------------------------------------------------
# Declarations


class _Marker:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


REQUIRED = _Marker("REQUIRED")  # a missing key is an error ("required key is missing")
GIVEN = _Marker("GIVEN")  # the builder supplies the value (a reference resolved, a default that depends on where)
PROPS = _Marker("PROPS")  # the value goes into the typed object's ``props`` dict (a device's per-type keys)


@dataclass(frozen=True)
class Key:
    """One board key. ``check`` parses and validates the YAML value (a checker, or a nested :class:`Section`,
    :class:`MapOf` or :class:`Tagged`); ``default`` is what the typed object holds when the key is absent
    (``REQUIRED``: absence is an error; ``GIVEN``: the builder decides, ``default_doc`` says how); ``field``
    is the typed object's field (``""``: the key's own name, ``None``: not kept, documentation only,
    ``PROPS``: in ``props``); ``convert`` turns the checked value into the field's value."""

    check: Any
    doc: str
    default: Any = None
    field: Any = ""
    convert: Callable | None = None
    default_doc: str = ""


class Section:
    """A mapping with fixed keys, and the typed object it becomes (``@SECTION.typed`` on the class makes the
    class a frozen dataclass whose fields come from the keys: ``name`` first for the entries of a
    :class:`MapOf`, then each kept key in declaration order, then ``props`` and ``extra`` fields). A section
    without a class becomes a dict of the keys that were set."""

    def __init__(self, keys: dict, doc: str = "", *, named: bool = False, extra: tuple = ()):
        self.keys = keys
        self.doc = doc
        self.named = named
        self.extra = extra  # fields the builder gives that no key of this mapping holds
        self.cls = None

    @property
    def schema(self) -> dict:
        return {k: key.check for k, key in self.keys.items()}

    def field_names(self) -> list[str]:
        out = ["name"] if self.named else []
        out += [key.field or k for k, key in self.keys.items() if key.field is not None and key.field is not PROPS]
        if any(key.field is PROPS for key in self.keys.values()):
            out.append("props")
        return out + list(self.extra)

    def typed(self, cls):
        """Class decorator: ``cls`` (its methods and docstring) becomes the frozen dataclass of this section."""
        self.cls = make_dataclass(cls.__name__, [(f, Any) for f in self.field_names()], frozen=True,
                                  namespace=_namespace(cls))
        self.cls.__module__ = cls.__module__
        return self.cls

    def first_missing(self, raw: dict, path: str, where, problems: list) -> bool:
        """Appends the first required key ``raw`` lacks (as ``where: path.key: required key is missing``);
        True when none is missing."""
        for k, key in self.keys.items():
            if key.default is REQUIRED and raw.get(k) is None:
                sub = f"{path}.{k}" if path else k
                problems.append(f"{where(sub)}: {sub}: required key is missing")
                return False
        return True

    def values(self, raw: dict, /, **given) -> dict:
        """The typed object's fields from a checked mapping: set keys converted, absent keys defaulted;
        ``given`` fills the ``GIVEN`` keys and the extra fields and replaces any field it names."""
        out, props = {}, {}
        for k, key in self.keys.items():
            if key.field is None:
                continue
            name = key.field or k
            if name in given and key.field is not PROPS:
                continue
            if k in raw:
                value = key.convert(raw[k]) if key.convert else raw[k]
            elif key.default is REQUIRED or key.default is GIVEN:
                continue
            elif key.default is None:
                value = None
            else:
                value = key.convert(key.default) if key.convert else _fresh(key.default)
            if key.field is PROPS:
                props[k] = value
            else:
                out[name] = value
        if "props" in self.field_names():
            out["props"] = props
        # a variant of a Tagged mapping may lack a field another variant has (cortex-m55-system's irq): None
        return {**dict.fromkeys(f.name for f in fields(self.cls)), **out, **given}

    def build(self, raw: dict, /, **given):
        """The typed object (or, without a class, the dict of the kept keys that are set)."""
        if self.cls is None:  # in the order the mapping has them
            return {k: v for k, v in raw.items() if k in self.keys and self.keys[k].field is not None}
        return self.cls(**self.values(raw, **given))

    def with_keys(self, **keys) -> "Section":
        """The same section with keys added or replaced (a device type's own keys)."""
        return Section({**self.keys, **keys}, self.doc, named=self.named, extra=self.extra)


def _namespace(cls) -> dict:
    return {k: v for k, v in vars(cls).items() if k not in ("__dict__", "__weakref__", "__module__")}


def _fresh(default):
    return type(default)(default) if isinstance(default, (dict, list, set)) else default


class MapOf:
    """A mapping with free keys (names), each value checked against ``item`` (a section or a checker)."""

    def __init__(self, item, key_check: Callable | None = None, name: str = "<NAME>"):
        self.item = item
        self.key_check = key_check
        self.name = name  # how the key table writes the free key


class Free:
    """A sub-tree that is passed through without key checking (only ``extends:``, which the loader reads)."""


class Tagged:
    """A mapping whose allowed keys depend on the value of one key (a device's ``type``): ``variants`` maps each
    allowed tag to its own section."""

    def __init__(self, tag: str, variants: dict):
        self.tag = tag
        self.variants = variants

    def typed(self, cls):
        """Class decorator: one dataclass for all variants, with the fields of any of them."""
        names = list(dict.fromkeys(f for v in self.variants.values() for f in v.field_names()))
        typed = make_dataclass(cls.__name__, [(f, Any) for f in names], frozen=True, namespace=_namespace(cls))
        typed.__module__ = cls.__module__
        for v in self.variants.values():
            v.cls = typed
        return typed


# --------------------------------------------------------------------------------------------------------
# The board's keys

_DESCRIPTION = Key(STR, "what this is", "", field=None)
_SOURCE = Key(STR, "the document the values come from", "", field=None)
MASTER = enum("cpu", "npu", "dma")

MEMORY_REGION = Section({
    "base": Key(ADDRESS, "the non-secure base address", REQUIRED),
    "size": Key(SIZE, "bytes", REQUIRED),
    "secure_base": Key(ADDRESS, "the secure alias's base address (none: no alias)"),
    # an empty list used to mean [cpu]; a memory nobody can reach is a mistake, so it is now an error
    "masters": Key(list_of(MASTER, 1, "a memory needs a master that can reach it (cpu, npu, dma)"),
                   "the bus masters that can reach it", ("cpu",), convert=frozenset, default_doc="`[cpu]`"),
    "kind": Key(enum("ram", "rom"), "RAM or ROM", "ram"),
    "description": Key(STR, "what this is", ""),
    "source": Key(STR, "the document the values come from", ""),
}, "a RAM", named=True)

DEVICE_TYPES = ("cmsdk_uart", "ethos-u", "stub", "cortex-m55-system")
DEVICE_COMMON = Section({
    "type": Key(enum(*DEVICE_TYPES), "the device model", REQUIRED),
    "base": Key(ADDRESS, "the non-secure base address", REQUIRED),
    "secure_base": Key(ADDRESS, "the secure alias's base address (none: no alias)"),
    # size 0 used to mean 0x1000; a device with no registers is a mistake, so it is now an error
    "size": Key(_ranged(units.parse_size, 1, ADDRESS_LIMIT, "a device size",
                        describe="size in bytes, >= 1 and <= 2^40 (`4KiB`)", show=units.format_size),
                "bytes of its register window", 0x1000, default_doc="4 KiB"),
    "description": Key(STR, "what this is", "", field=PROPS),
    "source": Key(STR, "the document the values come from", "", field=PROPS),
}, "a device", named=True)
# Only the Ethos-U raises an interrupt here: the UART model is polled (no RX/TX interrupts; its IRQ numbers are
# in the board file's comments) and a stub answers reads only, so neither takes an ``irq`` that would do nothing.
DEVICE = Tagged("type", {
    "cmsdk_uart": DEVICE_COMMON.with_keys(
        out_file=Key(STR, "where the output goes: `-` (stdout) or a file (fvp/boards/outputs.py)", "-", field=PROPS),
        shutdown_on_eot=Key(BOOL, "the EOT byte (0x04) ends the simulation", True, field=PROPS),
        shutdown_tag=Key(STR, "a line that ends the simulation", None, field=PROPS),
        unbuffered_output=Key(BOOL, "write each byte at once", False, field=PROPS)),
    "ethos-u": DEVICE_COMMON.with_keys(irq=Key(IRQ_NUMBER, "its interrupt")),
    "stub": DEVICE_COMMON.with_keys(read_value=Key(U32, "what every read returns", 0, field=PROPS)),
    "cortex-m55-system": DEVICE_COMMON.with_keys(),
})

MEMORY_TYPES = ("Sram", "Dram", "OnChipFlash", "OffChipFlash")
MEMORY_TIMING = Section({
    "clock_scale": Key(number(0, 1000, "a clock scale", lo_open=True), "memory clock / NPU clock", 1.0),
    # written as a bare byte count, as vela.ini and the board files write it (no show)
    "burst_length": Key(_ranged(units.parse_size, 1, 4096, "a burst length", unit=" bytes"),
                        "bytes per burst", 32),
    "read_latency": Key(CYCLES, "cycles", 0.0),
    "write_latency": Key(CYCLES, "cycles", 0.0),
    "max_reads": Key(uint(1_000_000), "outstanding reads (0: no limit)", 0),
    "max_writes": Key(uint(1_000_000), "outstanding writes (0: no limit)", 0),
    # Vela's <Mem>_ports_used (Ethos-U85 system configs): AXI ports of this memory type the NPU uses at once
    "ports_used": Key(uint(4, lo=1, what="a port count"), "AXI ports used (Ethos-U85 configs)", 1),
    "description": _DESCRIPTION,
}, "one memory type's timing (Vela's `[Memory.*]`)")

# the clocks a board that names none runs at (and what the machine's parts assume when built without a board)
NPU_CLOCK_HZ = 500_000_000
CPU_CLOCK_HZ = 32_000_000

# the registers of one Ethos-U timing adapter (MLEK docs/sections/timing_adapters.md and ta_config_*.cmake: 6-bit
# pending counts, 12-bit latencies, 16-bit pulse lengths and cap), as the firmware programs them
_TA_PENDING = uint(63, what="a pending-transaction count")
_TA_LATENCY = uint(4095, what="a latency")
_TA_CYCLES = uint(65535, what="a cycle or word count")
TIMING_ADAPTER = Section({
    "maxr": Key(_TA_PENDING, "pending reads allowed (0: no limit)", 0),
    "maxw": Key(_TA_PENDING, "pending writes allowed (0: no limit)", 0),
    "maxrw": Key(_TA_PENDING, "pending reads and writes allowed (0: no limit)", 0),
    "rlatency": Key(_TA_LATENCY, "cycles from a read address to its first data", 0),
    "wlatency": Key(_TA_LATENCY, "cycles from a write's last data to its response", 0),
    "pulse_on": Key(_TA_CYCLES, "cycles of a pulse period in which addresses are let through", 0),
    "pulse_off": Key(_TA_CYCLES, "cycles of a pulse period in which addresses are blocked", 0),
    "bwcap": Key(_TA_CYCLES, "64-bit words per pulse period, counted per transaction (0: no cap)", 0),
    "description": _DESCRIPTION,
}, "one timing adapter's settings")

TIMING_ADAPTERS = Section({
    "axi0": Key(TIMING_ADAPTER, "TA0, on the NPU's AXI0 (SRAM) port", None, convert=TIMING_ADAPTER.build),
    "axi1": Key(TIMING_ADAPTER, "TA1, on the NPU's AXI1 (external) port", None, convert=TIMING_ADAPTER.build),
    "description": _DESCRIPTION,
    "source": _SOURCE,
}, "the timing adapters the firmware programs for one memory mode", named=True)

SYSTEM_CONFIG = Section({
    "core_clock": Key(FREQ, "the NPU clock", NPU_CLOCK_HZ, field="core_clock_hz", default_doc="500 MHz"),
    "axi0_port": Key(enum(*MEMORY_TYPES), "the memory type on AXI0", "Sram"),
    "axi1_port": Key(enum(*MEMORY_TYPES), "the memory type on AXI1", "OffChipFlash"),
    "memories": Key(MapOf(MEMORY_TIMING, enum(*MEMORY_TYPES), "<TYPE>"), "timing per memory type", GIVEN,
                    default_doc="none"),
    "timing_adapters": Key(MapOf(TIMING_ADAPTERS, None, "<MEMORY_MODE>"),
                           "per memory mode, the Corstone FVP's timing adapters as the runners program them for this "
                           "system config (they then set the ports' bandwidth and latency: docs/timing.md 1.2)",
                           GIVEN, default_doc="none"),
    "description": _DESCRIPTION,
    "source": _SOURCE,
}, "a Vela system config", named=True)

PORT = enum("axi0", "axi1")
MEMORY_MODE = Section({
    "const": Key(PORT, "the port of weights and constants (region 0; must be the port its regioncfg selects)", "axi1",
                 field="const_port"),
    "arena": Key(PORT, "the port of the tensor arena (region 1; checked against regioncfg)", "axi0",
                 field="arena_port"),
    "cache": Key(PORT, "the port of the NPU's cache (region 2; checked against regioncfg)", "axi0",
                 field="cache_port"),
    "arena_cache_size": Key(SIZE, "bytes of the arena cache: the fast scratch a runner built for this mode has "
                                  "(what a program compiled for it places in firmware.pools.fast_scratch)", 0),
    "qconfig": Key(U32, "the driver's QCONFIG", 2),
    # an empty list used to mean the default; it is now the length error of build.py
    "regioncfg": Key(list_of(uint(3, what="a region config", describe="0..3")),
                     "the driver's REGIONCFG, one value per region (8)", (3, 0, 1, 1, 1, 1, 1, 1), convert=tuple,
                     default_doc="`[3, 0, 1, 1, 1, 1, 1, 1]`"),
    "description": _DESCRIPTION,
    "source": _SOURCE,
}, "a Vela memory mode with the driver's AXI settings", named=True)

TIMING_PARAMS = Section({
    "cmd_word_cycles": Key(CYCLES, "per command word", default_doc="the timing model's"),
    "op_setup_cycles": Key(CYCLES, "per operation", default_doc="the timing model's"),
    "dma_setup_cycles": Key(CYCLES, "per DMA", default_doc="the timing model's"),
    "stream_setup_cycles": Key(CYCLES, "per command stream", default_doc="the timing model's"),
    "description": _DESCRIPTION,
}, "knobs of the NPU timing model that Vela's system config has no name for (docs/timing.md)")

NPU = Section({
    "device": Key(STR, "the `ethos-u` device", REQUIRED),
    "variant": Key(STR, "the NPU configuration (`ethos-u55-128`, ...)", REQUIRED),
    "system_config": Key(STR, "a name under `system_configs`", REQUIRED),
    "memory_mode": Key(STR, "a name under `memory_modes`", REQUIRED),
    "timing": Key(enum("analytic", "none"), "the timing model (`none`: no NPU time)", "analytic"),
    "engine": Key(enum("fast", "reference"), "the functional engine", "fast"),
    "check_stream": Key(enum("off", "warn", "strict"), "the stream checker (`fvp run --check-stream`, "
                        "docs/stream-checker.md): off, warn (one line per finding) or strict (the first error stops "
                        "the run, exit 1)", "off"),
    # 0 used to mean the default; a stream that may run no command is a mistake, so it is now an error
    "max_commands": Key(uint(1_000_000_000, lo=1, what="a command count"),
                        "commands per stream before the watchdog (STATUS.wd_fault)", 1_000_000),
    "pmu_trace": Key(STR, "a file for the PMU trace the FVP writes for `ethosu.extra_args=--pmu-trace FILE` "
                     "(gzip-compressed Chrome trace JSON: the command processor's QREAD and each operation over "
                     "NPU cycles; docs/pmu-trace.md); empty: none", ""),
    "description": _DESCRIPTION,
    "timing_params": Key(TIMING_PARAMS, TIMING_PARAMS.doc, {}, convert=TIMING_PARAMS.build, default_doc="none"),
}, "the NPU")

CPU = Section({
    "type": Key(enum("cortex-m55", "cortex-m85"), "the CPU", "cortex-m55"),
    "clock": Key(FREQ, "the CPU clock", CPU_CLOCK_HZ, field="clock_hz", default_doc="32 MHz"),
    "mips_per_mhz": Key(number(0, 100, "instructions per cycle", lo_open=True), "for the `--stat` estimate", 1.0),
    # the full-system engine (docs/full-system.md): what executes the application, and its CPU time basis
    "engine": Key(enum("auto", "qemu", "python"), "what runs the application: `qemu` its own code on QEMU "
                  "(an ELF with code, `-a`), `python` this project's firmware image in its place, `auto` qemu when "
                  "the application is an ELF with code and QEMU is installed", "auto"),
    "cpi_mul": Key(uint(1 << 16, lo=1, what="a multiplier"), "CPU cycles per instruction of code run on QEMU, "
                   "`cpi_mul / cpi_div` (the Fast Models' parameters; 1/1 is the FVP's default)", 1),
    "cpi_div": Key(uint(1 << 16, lo=1, what="a divider"), "see `cpi_mul`", 1),
    "costs": Key(MapOf(COST), "CPU cycles per unit of firmware work", {}, convert=dict, default_doc="none"),
    "description": _DESCRIPTION,
    "source": _SOURCE,
}, "the CPU and its cost table")

PLACEMENT = Section({
    "region": Key(STR, "a name under `firmware.memory`", REQUIRED),
    "address": Key(ADDRESS, "a fixed address (none: the next free one)"),
    "size": Key(SIZE, "bytes (required for a pool; the model's is the program's)"),
    # 0 used to mean 16; an alignment of 0 makes no sense (1 is no alignment), so it is now an error
    "align": Key(uint(1 << 32, lo=1, what="an alignment", describe="a power of two <= 2^32"), "bytes", 16),
    "npu": Key(BOOL, "the NPU must reach it", GIVEN, default_doc="true for the model, false for a pool"),
    "description": _DESCRIPTION,
}, "a placement, as the linker script places a section", named=True)

LINK_REGION = Section({
    "base": Key(ADDRESS, "address", REQUIRED),
    "size": Key(SIZE, "bytes", REQUIRED),
    "description": _DESCRIPTION,
}, "a MEMORY region of the linker script")

FIRMWARE_SECTION = Section({
    "entry": Key(FIRMWARE, "the firmware image", REQUIRED),
    "runtime": Key(STR, "the runtime profile (docs/runtime-profiles.md); the firmware image checks it", ""),
    "allocator": Key(STR, "the allocator (docs/allocators.md); the firmware image checks it", ""),
    "memory": Key(MapOf(LINK_REGION), "the linker's MEMORY regions", GIVEN, field="link_regions",
                  default_doc="none"),
    "model": Key(PLACEMENT, "where the program goes", REQUIRED),
    "pools": Key(MapOf(PLACEMENT), "the runner's pools (`method`, `temp`, `fast_scratch`, `planned_fast`)", GIVEN,
                 default_doc="none"),
    "options": Key(MapOf(SCALAR), "options the firmware checks itself", {}, convert=dict, default_doc="none"),
    "description": _DESCRIPTION,
}, "the firmware and its link layout")

SIMULATION = Section({
    "cycle_limit": Key(uint((1 << 63) - 1, lo=1, what="a cycle limit"), "CPU cycles before the run stops",
                       default_doc="none"),
    "time_limit": Key(number(0, 10 ** 9, "a time limit", lo_open=True, unit=" s"), "seconds of host time",
                      default_doc="none"),
    "strict": Key(BOOL, "guest errors fail the run", False),
}, "limits and strictness")

BOARD = Section({
    "name": Key(STR, "the board's name", GIVEN, default_doc="the file's name"),
    "description": Key(STR, "what this is", ""),
    "source": _SOURCE,
    "fvp_name": Key(STR, "the `--stat` header", "FVP_MPS3_Corstone_SSE_300"),
    "platform": Key(enum("corstone-300", "corstone-320"), "the Corstone FVP it stands for: which FVP parameter names "
                    "it takes (`ethosu.*`, `mps3_board.*`, `cpu0.*` / `mps4_board.*`)", "corstone-300"),
}, "the board", extra=("files", "memory", "devices", "cpu", "npu", "firmware", "simulation", "raw", "provenance"))

SCHEMA: dict[str, Any] = {
    "extends": Free,
    "board": BOARD,
    "memory": MapOf(MEMORY_REGION),
    "devices": MapOf(DEVICE),
    "cpu": CPU,
    "npu": NPU,
    "system_configs": MapOf(SYSTEM_CONFIG),
    "memory_modes": MapOf(MEMORY_MODE),
    "firmware": FIRMWARE_SECTION,
    "simulation": SIMULATION,
}

# --------------------------------------------------------------------------------------------------------
# Typed spec: the fields come from the sections above


@MEMORY_REGION.typed
class MemoryRegionSpec:
    def windows(self) -> list[tuple[int, int]]:
        """Bus windows (base, size) where this region appears: the NS base and the secure alias."""
        out = [(self.base, self.size)]
        if self.secure_base is not None:
            out.append((self.secure_base, self.size))
        return out


@DEVICE.typed
class DeviceSpec:
    """A device; ``props`` holds its type's own keys (``out_file``, ``read_value``, ...), defaults filled;
    ``irq`` is None for a type without one (only the Ethos-U raises an interrupt)."""


@MEMORY_TIMING.typed
class MemoryTimingSpec:
    pass


@TIMING_ADAPTER.typed
class TimingAdapterSpec:
    pass


@TIMING_ADAPTERS.typed
class TimingAdaptersSpec:
    pass


@SYSTEM_CONFIG.typed
class SystemConfigSpec:
    pass


@MEMORY_MODE.typed
class MemoryModeSpec:
    pass


@NPU.typed
class NpuSpec:
    """``system_config`` and ``memory_mode`` hold the resolved specs of the names."""


@CPU.typed
class CpuSpec:
    pass


@PLACEMENT.typed
class PlacementSpec:
    pass


@FIRMWARE_SECTION.typed
class FirmwareSpec:
    """``link_regions``: name -> (base, size); ``pools``: name -> PlacementSpec."""


@SIMULATION.typed
class SimulationSpec:
    pass


@BOARD.typed
class BoardSpec:
    """``memory``, ``devices``: name -> spec (declaration order); ``raw``: the merged, checked mapping (for `fvp
    config`); ``provenance``: dotted key path -> where it was set."""


# --------------------------------------------------------------------------------------------------------
# A checked board written back as a board file writes it (`fvp config`)


def as_written(node, decl: Any = None):
    """``node`` (a checked board mapping, or the part of one that ``decl`` declares; default: the whole board,
    ``SCHEMA``) with each value in the spelling its key's checker shows it in (``show``: an address in hex, a
    size or a clock with its unit); values whose checker has no ``show``, and anything undeclared, stay as
    they are. Keys keep ``node``'s order."""
    if decl is None:
        decl = SCHEMA
    if isinstance(decl, Tagged):
        decl = decl.variants.get(node.get(decl.tag)) if isinstance(node, dict) else None
    if isinstance(decl, Section):
        decl = decl.schema
    if isinstance(node, dict):
        if isinstance(decl, dict):
            return {k: as_written(v, decl.get(k, Free)) for k, v in node.items()}
        if isinstance(decl, MapOf):
            return {k: as_written(v, decl.item) for k, v in node.items()}
        return node
    if isinstance(node, list):
        return [as_written(v, getattr(decl, "item", Free)) for v in node]
    show = getattr(decl, "show", None)
    if show is not None and isinstance(node, (int, float)) and not isinstance(node, bool):
        return show(node)
    return node


# --------------------------------------------------------------------------------------------------------
# The key table of docs/boards.md


def _rows(node, path: str):
    if isinstance(node, Section):
        for k, key in node.keys.items():
            sub = f"{path}.{k}" if path else k
            if isinstance(key.check, MapOf) and not isinstance(key.check.item, (Section, Tagged)):
                yield f"{sub}.{key.check.name}", Key(key.check.item, key.doc, default_doc=key.default_doc)
            elif isinstance(key.check, (Section, MapOf, Tagged)):
                yield from _rows(key.check, sub)
            else:
                yield sub, key
    elif isinstance(node, MapOf):  # of sections (a MapOf of values is written by its key, above)
        yield from _rows(node.item, f"{path}.{node.name}")
    elif isinstance(node, Tagged):
        seen = {}
        for tag, variant in node.variants.items():
            for sub, key in _rows(variant, path):
                seen.setdefault(sub, (key, []))[1].append(tag)
        for sub, (key, tags) in seen.items():
            yield sub, key if len(tags) == len(node.variants) else Key(key.check, f"{key.doc} ({', '.join(tags)})",
                                                                       key.default, key.field, key.convert,
                                                                       key.default_doc)


def _default_text(key: Key) -> str:
    if key.default_doc:
        return key.default_doc
    if key.default is REQUIRED:
        return "required"
    if key.default is None:
        return "none"
    if isinstance(key.default, bool):
        return "true" if key.default else "false"
    if key.default == "":
        return '""'
    return f"`{key.default}`"


def key_table() -> str:
    """The Markdown table of every board key: path, what it takes, default, what it is."""
    lines = ["| key | takes | default | what |", "|---|---|---|---|"]
    for name, node in SCHEMA.items():
        if node is Free:
            continue
        for path, key in _rows(node, name):
            takes = getattr(key.check, "describe", "")
            lines.append(f"| `{path}` | {takes} | {_default_text(key)} | {key.doc} |")
    return "\n".join(lines)
