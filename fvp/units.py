"""Unit strings used in board descriptions: sizes, frequencies, addresses, times.

``parse_size("2MiB")``, ``parse_frequency("500MHz")``, ``parse_int("0x7000_0000")``, ``parse_time("1ms")``;
``format_size``, ``format_frequency`` and ``format_address`` write a value back in the shortest exact spelling.
Binary prefixes (KiB, MiB, GiB) are powers of 1024; for sizes the bare ``KB``/``MB``/``GB`` spellings used
by Arm's linker scripts and CMake options (``Dedicated_Sram_384KB``) also mean powers of 1024, as they do
there. Frequencies use decimal prefixes. Every parser raises ``ValueError`` with a message saying what is
allowed; the config loader turns that into a one-line ``ConfigError`` naming the file and key.
"""

from __future__ import annotations

import math
import re

_SIZE_UNITS = {
    "": 1, "b": 1, "B": 1,
    "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3,
    "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3,
    "kB": 1024, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3,
}
_FREQ_UNITS = {"": 1, "Hz": 1, "kHz": 10 ** 3, "KHz": 10 ** 3, "MHz": 10 ** 6, "GHz": 10 ** 9}
_TIME_UNITS_PS = {"ps": 1, "ns": 10 ** 3, "us": 10 ** 6, "ms": 10 ** 9, "s": 10 ** 12}

_NUMBER = r"[0-9][0-9_]*(?:\.[0-9_]+)?(?:[eE][+-]?[0-9]+)?"
_NUM_UNIT = re.compile(r"^\s*(" + _NUMBER + r")\s*([A-Za-z]*)\s*$")

SIZE_HELP = "a byte count such as 4096, 0x1000, 512KiB, 2MiB, 1GiB"
FREQ_HELP = "a frequency such as 32MHz, 500MHz, 1GHz or 500e6"
INT_HELP = "an integer such as 42, 0x7000_0000 or 0b1010"
TIME_HELP = "a time such as 10ms, 2.5s, 500ns"


def parse_int(value) -> int:
    """An integer: Python int, or a string in decimal, hex (``0x``), octal (``0o``), binary, with ``_``."""
    if isinstance(value, bool):
        raise ValueError(f"expected {INT_HELP}, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text.replace("_", ""), 0) if text[:2].lower() in ("0x", "0o", "0b") else int(text.replace("_", ""), 10)
        except ValueError:
            pass
    raise ValueError(f"expected {INT_HELP}, got {value!r}")


def _number_and_unit(value, help_text: str) -> tuple[float, str]:
    if isinstance(value, bool):
        raise ValueError(f"expected {help_text}, got {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"expected {help_text}, got {value!r} (not a finite number)")
        return float(value), ""
    if not isinstance(value, str):
        raise ValueError(f"expected {help_text}, got {value!r}")
    text = value.strip()
    if text[:2].lower() in ("0x", "0o", "0b") and len(text) > 2:
        try:
            return float(parse_int(text)), ""
        except ValueError:
            pass  # e.g. "0B" = zero bytes
    m = _NUM_UNIT.match(text)
    if not m:
        raise ValueError(f"expected {help_text}, got {value!r}")
    number = float(m.group(1).replace("_", ""))
    if not math.isfinite(number):
        raise ValueError(f"expected {help_text}, got {value!r} (not a finite number)")
    return number, m.group(2)


def parse_size(value) -> int:
    """A size in bytes. ``2MiB`` -> 2097152. Fractions must give a whole number of bytes."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"expected {SIZE_HELP}, got a negative size {value}")
        return value
    number, unit = _number_and_unit(value, SIZE_HELP)
    if unit not in _SIZE_UNITS:
        raise ValueError(f"unknown size unit {unit!r} in {value!r}; allowed: B, KiB, MiB, GiB (KB/MB/GB mean the same)")
    result = number * _SIZE_UNITS[unit]
    if result < 0 or not float(result).is_integer():
        raise ValueError(f"size {value!r} is not a whole, non-negative number of bytes")
    return int(result)


def parse_frequency(value) -> int:
    """A frequency in Hz. ``500MHz`` -> 500000000."""
    number, unit = _number_and_unit(value, FREQ_HELP)
    if unit not in _FREQ_UNITS:
        raise ValueError(f"unknown frequency unit {unit!r} in {value!r}; allowed: Hz, kHz, MHz, GHz")
    result = number * _FREQ_UNITS[unit]
    if result <= 0:
        raise ValueError(f"frequency {value!r} must be positive")
    return int(round(result))


def parse_time_ps(value) -> int:
    """A duration in picoseconds. A bare number means seconds."""
    number, unit = _number_and_unit(value, TIME_HELP)
    unit = unit or "s"
    if unit not in _TIME_UNITS_PS:
        raise ValueError(f"unknown time unit {unit!r} in {value!r}; allowed: ps, ns, us, ms, s")
    result = number * _TIME_UNITS_PS[unit]
    if result < 0:
        raise ValueError(f"time {value!r} must not be negative")
    return int(round(result))


def parse_number(value) -> float:
    """A plain, finite real number (clock scales, latencies in cycles, cost-table entries): no NaN, no infinity."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    x = None
    if isinstance(value, (int, float)):
        try:
            x = float(value)
        except OverflowError:
            raise ValueError(f"expected a finite number, got {value!r}") from None
    elif isinstance(value, str):
        try:
            x = float(value.replace("_", ""))
        except ValueError:
            pass
    if x is None:
        raise ValueError(f"expected a number, got {value!r}")
    if not math.isfinite(x):
        raise ValueError(f"expected a finite number, got {value!r}")
    return x


def format_size(n: int) -> str:
    """The shortest exact spelling of a byte count: 2097152 -> '2MiB', 1000 -> '1000B'."""
    for unit, mult in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if n and n % mult == 0:
            return f"{n // mult}{unit}"
    return f"{n}B"


def format_frequency(hz: int) -> str:
    """The shortest exact spelling of a frequency: 32000000 -> '32MHz', 10**9 -> '1GHz', 1234 -> '1234Hz'."""
    for unit, mult in (("GHz", 10 ** 9), ("MHz", 10 ** 6), ("kHz", 10 ** 3)):
        if hz and hz % mult == 0:
            return f"{hz // mult}{unit}"
    return f"{hz}Hz"


def format_address(a: int) -> str:
    """An address as board files and the FVP write it: eight hex digits at least, 0x21000000 -> '0x21000000'."""
    return f"0x{a:08x}"
