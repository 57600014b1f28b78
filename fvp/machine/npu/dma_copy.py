"""A long DMA's copy: in chunks, each after a check of the time limit, with no temporary of the whole size.

``copy_chunked(dst, src)`` is ``dst[:] = src`` for two equal-length 1-D byte views, as if ``src`` were read whole
first (what the DMA engines' models promise: ``u55/dma.py``, ``u85/dma.py``), in chunks of ``DMA_CHUNK`` bytes with
``interruption_point()`` before each (so ``--timelimit`` stops a 1 GiB copy within a chunk's time), and in
memmove's order (from the end) when ``dst`` starts inside ``src``, the same memory at a later address.
"""

from __future__ import annotations

import numpy as np

from ..cancel import interruption_point

#: bytes copied between two checks of the time limit: a few milliseconds of copying
DMA_CHUNK = 1 << 24


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def copy_chunked(dst: np.ndarray, src: np.ndarray) -> None:
    n = len(src)
    if n <= DMA_CHUNK:
        dst[:] = src  # numpy copies through a temporary itself when the two overlap
        return
    s = _address(src)
    starts = range(0, n, DMA_CHUNK)
    for a in (reversed(starts) if s < _address(dst) < s + n else starts):
        interruption_point()
        dst[a:a + DMA_CHUNK] = src[a:a + DMA_CHUNK]
