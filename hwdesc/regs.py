"""The vocabulary of the interface tables: bit-fields, registers, register maps and named codes.

A :class:`RegisterMap` is what a generated register header is in C (QEMU's ``REG32``/``FIELD`` macros, the
``ethosu55_interface.h`` structs): per register a name, an offset, an access type, a reset value and its
fields. It is data only; a device model generates its access dispatch from it, a driver takes its offsets
and bits from it.

Access types: ``RW``; ``RO`` (writes are a guest error); ``WO`` (reads as 0); ``W1S``/``W1C`` (writing 1s
sets/clears bits of the state the register, or the register named by ``alias``, reads back).
"""

from __future__ import annotations

from dataclasses import dataclass

ACCESS = ("RW", "RO", "WO", "W1S", "W1C")


class Codes(dict):
    """Named numeric codes: a ``value -> name`` mapping (``ROUND_MODE[2] == "NATURAL"``) that also gives the
    value of a name as an attribute (``ROUND_MODE.NATURAL == 2``)."""

    def __init__(self, names: dict):
        super().__init__(names)
        self._values = {n: v for v, n in names.items()}

    def __getattr__(self, name: str) -> int:
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(name) from None

    def value(self, name: str) -> int:
        return self._values[name]

    def __dir__(self):
        return list(self._values)


@dataclass(frozen=True)
class Field:
    """A bit-field: bits ``[lo + width - 1 : lo]`` of a register, a command parameter or a payload."""

    name: str
    lo: int
    width: int
    signed: bool = False
    enum: dict | None = None  # value -> symbolic name

    def get(self, value: int) -> int:
        v = (value >> self.lo) & ((1 << self.width) - 1)
        if self.signed and v >> (self.width - 1):
            v -= 1 << self.width
        return v

    def put(self, value: int) -> int:
        """``value`` placed in the field (the other bits 0)."""
        return (value & ((1 << self.width) - 1)) << self.lo

    def text(self, value: int) -> str:
        v = self.get(value)
        if self.enum is not None:
            return self.enum.get(v, str(v))
        return str(v)

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lo


def bit(name: str, lo: int) -> Field:
    return Field(name, lo, 1)


@dataclass(frozen=True)
class Register:
    """One memory-mapped register, or an array of ``count`` of them ``stride`` bytes apart.

    ``reset`` is the value after reset (``None``: it depends on the configuration, as ID and CONFIG do);
    ``alias`` names the register whose state a ``W1S``/``W1C`` register sets or clears.
    """

    name: str
    offset: int
    access: str = "RW"
    reset: int | None = 0
    fields: tuple = ()
    count: int = 1
    stride: int = 4
    alias: str | None = None
    doc: str = ""

    def __post_init__(self):
        assert self.access in ACCESS, self.access

    def at(self, i: int) -> int:
        """The offset of element ``i`` of an array register."""
        assert 0 <= i < self.count, (self.name, i)
        return self.offset + i * self.stride

    @property
    def offsets(self) -> range:
        return range(self.offset, self.offset + self.count * self.stride, self.stride)

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name}.{name}")

    def mask(self, *names: str) -> int:
        """The OR of the named fields' masks (all fields when none is named)."""
        fs = [self.field(n) for n in names] if names else self.fields
        m = 0
        for f in fs:
            m |= f.mask
        return m

    def get(self, value: int, name: str) -> int:
        return self.field(name).get(value)

    def pack(self, **values: int) -> int:
        v = 0
        for name, x in values.items():
            v |= self.field(name).put(x)
        return v


class RegisterMap:
    """The registers of one device (or one block of it) by name, by offset and as attributes
    (``MMIO.STATUS.offset``)."""

    def __init__(self, name: str, registers):
        self.name = name
        self.registers = tuple(registers)
        self.by_name = {r.name: r for r in self.registers}
        self.by_offset: dict[int, tuple[Register, int]] = {}
        for r in self.registers:
            for i, off in enumerate(r.offsets):
                assert off not in self.by_offset, f"{name}: {r.name} overlaps {self.by_offset[off][0].name} at 0x{off:x}"
                self.by_offset[off] = (r, i)
        assert len(self.by_name) == len(self.registers), f"{name}: duplicate register names"

    def __iter__(self):
        return iter(self.registers)

    def __len__(self):
        return len(self.registers)

    def __getitem__(self, name: str) -> Register:
        return self.by_name[name]

    def __getattr__(self, name: str) -> Register:
        try:
            return self.__dict__["by_name"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __add__(self, other: "RegisterMap") -> "RegisterMap":
        return RegisterMap(f"{self.name}+{other.name}", self.registers + other.registers)

    def at(self, offset: int):
        """``(register, index)`` of the register at ``offset``, or ``None``."""
        return self.by_offset.get(offset)

    def __dir__(self):
        return list(self.by_name)
