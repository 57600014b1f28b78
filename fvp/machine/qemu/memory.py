"""One memory, two machines: the board's RAM as QEMU's CPU and this project's NPU both see it.

- The DDR is shared: QEMU maps its RAM from the file ``process.QemuProcess`` made, and the board's DDR array is
  a view of the same mapping. Neither side copies; a store of either is at once a load of the other.
- Every other memory the NPU reaches (the internal SRAM, the code SRAM, the QSPI flash) exists twice, QEMU's
  and the board's, and is kept coherent around the NPU's work (``PageSync``): while QEMU's CPU runs, the board's
  copy is stale; the first time the NPU touches a 4 KiB page after the CPU ran, that page is read from QEMU; the
  pages the NPU wrote go back to QEMU before the CPU runs again. Only what the NPU touches moves.
- The memories only the CPU reaches (the TCMs) are QEMU's alone: the board's copies are not read.

What the loader wrote into the board's memories before the run (``--data`` files) is copied into QEMU's at the
start, as the FVP loads them.
"""

from __future__ import annotations

import numpy as np

from . import an547

PAGE = 4096


class PageSync:
    """Keeps ``data`` (the board's copy of the memory at ``base``) coherent with QEMU's, page by page."""

    def __init__(self, data: np.ndarray, base: int, io):
        self.data = data
        self.base = base
        self.io = io  # read(address, n) -> bytes, write(address, data)
        n = -(-data.size // PAGE)
        self.valid = np.zeros(n, dtype=bool)
        self.dirty = np.zeros(n, dtype=bool)
        self.active = False  # before the run the board's copy is the reference (the loader writes it)
        self.touched = False  # a page was read from QEMU since the last flush
        self.pages_read = self.pages_written = 0

    def access(self, offset: int, size: int, write: bool) -> None:
        """The NPU is about to read (and, with ``write``, write) ``[offset, offset + size)``."""
        if not self.active or size <= 0:
            return
        p0, p1 = offset // PAGE, -(-(offset + size) // PAGE)
        self.touched = True
        missing = np.flatnonzero(~self.valid[p0:p1])
        if missing.size:
            for lo, hi in _runs(missing + p0):
                a, b = lo * PAGE, min(hi * PAGE, self.data.size)
                self.data[a:b] = np.frombuffer(self.io.read(self.base + a, b - a), dtype=np.uint8)
                self.pages_read += hi - lo
            self.valid[p0:p1] = True
        if write:
            self.dirty[p0:p1] = True

    def flush(self) -> None:
        """Write the pages the NPU changed back to QEMU; every page is stale from now on (the CPU runs)."""
        if not self.touched:
            return
        self.touched = False
        dirty = np.flatnonzero(self.dirty)
        for lo, hi in _runs(dirty):
            a, b = lo * PAGE, min(hi * PAGE, self.data.size)
            self.io.write(self.base + a, self.data[a:b].tobytes())
            self.pages_written += hi - lo
        self.dirty[:] = False
        self.valid[:] = False


def _runs(pages: np.ndarray):
    """Consecutive runs ``(first, end)`` of sorted page numbers."""
    if not pages.size:
        return []
    cut = np.flatnonzero(np.diff(pages) != 1) + 1
    starts = np.concatenate(([0], cut))
    ends = np.concatenate((cut, [pages.size]))
    return [(int(pages[s]), int(pages[e - 1]) + 1) for s, e in zip(starts, ends)]


def shared_view(ddr_map, base: int, size: int) -> np.ndarray | None:
    """The board memory at ``base`` as a view of QEMU's DDR mapping, if QEMU's DDR holds all of it."""
    off = an547.DDR.holds(base, size)
    if off is None:
        return None
    return np.frombuffer(ddr_map, dtype=np.uint8, count=size, offset=off)
