"""What executing one NPU operation did: :class:`OpRecord`, the operation with the bytes it moved per tensor and per
region, measured by the functional model (``execute.py``, the products' DMA engines) and read by the timing model
and the PMU; and what a DMA will write and read (:class:`DmaFootprint`, from its product, for the stream
checker)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .descriptors import NpuOperation

SHRAM_REGION = -1  # key of the SHRAM in the per-region byte counts


@dataclass
class OpRecord:
    """One executed operation with its traffic: bytes per tensor (``ifm``, ``ifm2``, ``weights``, ``scales``,
    ``lut``, ``ofm``, ``dma``) and per region (``SHRAM_REGION`` = -1 for the internal SHRAM)."""

    op: NpuOperation
    macs: int = 0
    bytes_read: dict = field(default_factory=dict)
    bytes_written: dict = field(default_factory=dict)
    region_read: dict = field(default_factory=dict)
    region_written: dict = field(default_factory=dict)

    def add(self, which: str, tensor: str, region: int, n: int) -> None:
        """Count ``n`` bytes of ``tensor`` read (``which`` "r") or written ("w") in ``region``."""
        d, r = (self.bytes_read, self.region_read) if which == "r" else (self.bytes_written, self.region_written)
        d[tensor] = d.get(tensor, 0) + int(n)
        r[region] = r.get(region, 0) + int(n)


class DmaFootprint(NamedTuple):
    """The bytes a DMA writes and reads, as its product computes them before it runs: ``dst_span`` bytes from
    its destination address; its source rows at ``src_rows`` (offsets from the source address, each of the DMA's
    ``LEN`` bytes), or ``src_bytes`` contiguous bytes when ``src_rows`` is None; ``index_bytes`` of its index
    table (a gather or scatter); ``gather``: its source rows are the ones its index table names (not known
    before it runs)."""

    dst_span: int
    src_bytes: int = 0
    src_rows: np.ndarray | None = None
    index_bytes: int = 0
    gather: bool = False
