"""The system address map: RAM regions backed by numpy arrays, memory-mapped devices, and bus masters.

Each memory region appears at its non-secure base and at its secure alias (AN552: +0x1000_0000); both map
the same backing array. Each region lists the bus masters that can reach it (the Cortex-M55's TCMs are not
reachable by the Ethos-U). RAM is a ``numpy.uint8`` array created with ``np.zeros`` (pages are committed by the
host OS only when touched, so a 2 GiB DDR costs nothing until used). RAM accesses never go through Python
callbacks when a caller asks for a ``view``; only device registers do.

Simplified: no MPC/PPC security filtering, no bus contention, no caches; an access must not straddle two
regions.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from ..errors import BusFault


class Device:
    """A memory-mapped device: registers at offsets from its base. Subclasses override ``read``/``write``."""

    name = "device"

    def read(self, offset: int, size: int) -> int:  # pragma: no cover - interface
        return 0

    def write(self, offset: int, value: int, size: int) -> None:  # pragma: no cover - interface
        pass

    def reset(self) -> None:
        pass


@dataclass
class Ram:
    name: str
    size: int
    masters: frozenset
    kind: str = "ram"
    data: np.ndarray = field(init=False, repr=False)
    # a memory another agent keeps a second copy of (the CPU engine's): told before each access of the bus's
    # masters, ``coherence.access(offset, size, write)`` makes the bytes current (fvp.machine.qemu.memory)
    coherence: object = field(default=None, init=False, repr=False)

    def __post_init__(self):
        self.data = np.zeros(self.size, dtype=np.uint8)

    def release(self) -> None:
        """Drop this memory's bytes (``Platform.close``): the array is freed once no view of it is left."""
        self.data = _RELEASED


_RELEASED = np.zeros(0, dtype=np.uint8)
_RELEASED.flags.writeable = False


def _released(w, addr: int, master: str) -> BusFault:
    return BusFault(f"{master} access to {w.name} at 0x{addr:08x} after the platform was closed", addr, master)


@dataclass(frozen=True)
class Window:
    start: int
    end: int  # exclusive
    target: object  # Ram or Device
    name: str
    masters: frozenset
    secure: bool


class AddressMap:
    """Windows sorted by start address with bisect lookup."""

    def __init__(self):
        self._starts: list[int] = []
        self._windows: list[Window] = []

    def add(self, start: int, size: int, target, name: str, masters, secure: bool = False) -> None:
        w = Window(start, start + size, target, name, frozenset(masters), secure)
        i = bisect.bisect_left(self._starts, start)
        for other in self._windows[max(0, i - 1): i + 1]:
            if other.start < w.end and w.start < other.end:
                raise ValueError(f"{name} at 0x{start:08x} overlaps {other.name}")
        self._starts.insert(i, start)
        self._windows.insert(i, w)

    def find(self, addr: int) -> Window | None:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0:
            w = self._windows[i]
            if addr < w.end:
                return w
        return None

    @property
    def windows(self) -> list[Window]:
        return list(self._windows)

    def describe(self, addr: int) -> str:
        """``0x... (in SRAM)`` or ``0x... (unmapped; nearest: DTCM ends at 0x...)`` for messages."""
        w = self.find(addr)
        if w is not None:
            return f"0x{addr:08x} ({w.name}+0x{addr - w.start:x})"
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0:
            w = self._windows[i]
            return f"0x{addr:08x} (unmapped; after {w.name} which ends at 0x{w.end:08x})"
        return f"0x{addr:08x} (unmapped)"


class Bus:
    """Routes accesses of a master (``cpu`` or ``npu``) to RAM or devices."""

    def __init__(self, amap: AddressMap):
        self.map = amap

    def _window(self, addr: int, size: int, master: str) -> Window:
        w = self.map.find(addr)
        if w is None:
            raise BusFault(f"{master} access to unmapped address {self.map.describe(addr)}", addr, master)
        if master not in w.masters:
            raise BusFault(f"{master} cannot reach {w.name} at 0x{addr:08x} (only {', '.join(sorted(w.masters))})",
                           addr, master)
        if addr + size > w.end:
            raise BusFault(f"{master} access of {size} bytes at 0x{addr:08x} runs past the end of {w.name} "
                           f"(0x{w.end:08x})", addr, master)
        return w

    def view(self, addr: int, size: int, master: str = "cpu", write: bool = False) -> np.ndarray:
        """A zero-copy uint8 view of RAM ``[addr, addr+size)``; BusFault if not plain RAM reachable by master.
        ``write``: the master will write through it (a memory with a ``coherence`` agent is told so)."""
        if size < 0:
            raise BusFault(f"negative access size {size} at 0x{addr:08x}", addr, master)
        w = self._window(addr, max(size, 1), master)
        if not isinstance(w.target, Ram):
            raise BusFault(f"{master} block access to device registers of {w.name} at 0x{addr:08x}", addr, master)
        off = addr - w.start
        data = w.target.data
        if data is _RELEASED:
            raise _released(w, addr, master)
        if w.target.coherence is not None:
            w.target.coherence.access(off, size, write)
        return data[off: off + size]

    def _word_target(self, addr: int, size: int, master: str):
        """(window, target, offset) of a word access, which a closed platform's RAM refuses."""
        w = self._window(addr, size, master)
        t = w.target
        if isinstance(t, Ram):
            if t.data is _RELEASED:
                raise _released(w, addr, master)
            if t.coherence is not None:
                t.coherence.access(addr - w.start, size, True)
        return w, t, addr - w.start

    def read_word(self, addr: int, size: int, master: str = "cpu") -> int:
        w, t, off = self._word_target(addr, size, master)
        if isinstance(t, Ram):
            return int.from_bytes(t.data[off: off + size].tobytes(), "little")
        return t.read(off, size)

    def write_word(self, addr: int, value: int, size: int, master: str = "cpu") -> None:
        w, t, off = self._word_target(addr, size, master)
        if isinstance(t, Ram):
            if t.kind == "rom" and master != "loader":
                raise BusFault(f"{master} write to read-only {w.name} at 0x{addr:08x}", addr, master)
            t.data[off: off + size] = np.frombuffer((value & ((1 << (8 * size)) - 1)).to_bytes(size, "little"), np.uint8)
            return
        t.write(off, value, size)

    def is_device(self, addr: int) -> bool:
        w = self.map.find(addr)
        return w is not None and not isinstance(w.target, Ram)
