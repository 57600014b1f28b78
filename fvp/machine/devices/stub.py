"""A named range of registers that is not modelled (timing adapters, SCC, ...): reads return a fixed value,
writes are accepted; each access is counted and, like QEMU's unimplemented devices, reported as a guest note."""

from __future__ import annotations

from ..bus import Device


class StubDevice(Device):
    def __init__(self, name: str, read_value: int = 0, note=None):
        self.name = name
        self.read_value = read_value
        self.note = note or (lambda msg: None)
        self.accesses = 0

    def read(self, offset: int, size: int) -> int:
        self.accesses += 1
        self.note(f"read of unmodelled device {self.name} at offset 0x{offset:x}")
        return self.read_value & ((1 << (8 * size)) - 1)

    def write(self, offset: int, value: int, size: int) -> None:
        self.accesses += 1
        self.note(f"write of 0x{value:x} to unmodelled device {self.name} at offset 0x{offset:x} (ignored)")
