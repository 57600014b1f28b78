"""Which bytes of RAM something has written since the program was loaded (``--check-stream``'s shadow map).

The stream checker's ``unwritten-read`` rule asks, for every byte the NPU reads, whether anything wrote it
before: the loader (the program image and ``--data`` files), the firmware (through the CPU's port: word writes,
``write``, ``memcpy``, ``memset`` and every zero-copy ``view``) or the NPU itself (OFMs, DMA destinations).
Kept as sorted, disjoint ``[start, end)`` byte intervals per backing RAM, so a region's secure and non-secure
aliases share one map.

Simplified, on the safe side (a missed finding, never a false one): a ``view`` the firmware takes counts as
written whether it then writes or only reads (a view is the firmware's counterpart of a pointer, and what it
does with it is not seen); an NPU write counts its whole bounding range per tile (a strided OFM's gaps too).
"""

from __future__ import annotations

import bisect

import numpy as np

from .bus import AddressMap, Ram


class WrittenMap:
    def __init__(self, amap: AddressMap):
        self._amap = amap
        self._maps: dict[int, tuple[list, list]] = {}  # id(Ram) -> (starts, ends), sorted and disjoint

    def _locate(self, addr: int):
        """(interval lists, offset of ``addr`` in its RAM, bytes to the RAM's end), or None off RAM."""
        w = self._amap.find(addr)
        if w is None or not isinstance(w.target, Ram):
            return None
        return self._maps.setdefault(id(w.target), ([], [])), addr - w.start, w.end - addr

    def mark(self, addr: int, size: int) -> None:
        """``[addr, addr + size)`` has been written (clipped to the RAM it starts in; devices are ignored)."""
        if size <= 0:
            return
        found = self._locate(addr)
        if found is None:
            return
        (starts, ends), lo, room = found
        hi = lo + min(size, room)
        i = bisect.bisect_left(ends, lo)  # the first interval ending at or after lo (touching ones merge)
        j = bisect.bisect_right(starts, hi)  # intervals from i to j - 1 start at or before hi
        if i < j:
            lo = min(lo, starts[i])
            hi = max(hi, ends[j - 1])
        starts[i:j] = [lo]
        ends[i:j] = [hi]

    def covered(self, addr: int, size: int) -> bool:
        """Whether every byte of ``[addr, addr + size)`` has been written (off RAM: True, nothing to say)."""
        if size <= 0:
            return True
        found = self._locate(addr)
        if found is None:
            return True
        (starts, ends), lo, _ = found
        i = bisect.bisect_right(starts, lo) - 1
        return i >= 0 and lo + size <= ends[i]

    def unwritten(self, addr: int, offsets: np.ndarray, length: int) -> np.ndarray:
        """Of the byte ranges ``[addr + o, addr + o + length)`` (``offsets`` int64, >= 0, within one RAM), the
        offsets of those not written in full."""
        found = self._locate(addr)
        if found is None or offsets.size == 0:
            return offsets[:0]
        (starts, ends), lo, room = found
        offsets = offsets[offsets + length <= room]  # past the RAM's end: the bounds checks' business
        if not starts:
            return offsets
        s = np.asarray(starts, dtype=np.int64)
        e = np.asarray(ends, dtype=np.int64)
        a = lo + offsets
        i = np.searchsorted(s, a, side="right") - 1
        ok = (i >= 0) & (a + length <= e[np.maximum(i, 0)])
        return offsets[~ok]

    def describe(self, addr: int) -> str:
        """``0x... (SRAM+0x...)`` for messages."""
        return self._amap.describe(addr)
