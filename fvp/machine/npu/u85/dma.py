"""Ethos-U85 DMA (NPU_OP_DMA_START): 1-D, 2-D and 3-D copies with strides of their own on each side, and the 2-D
and 3-D gather and scatter, whose int32 index table takes the place of the row counter on one side; in 3-D the
table skips IDX_SKIP1 bytes after each plane's SIZE0 entries (Vela's gather/scatter of int64 indices: one row per
plane, IDX_SKIP1 = 4 leaves out the high words) [inferred from Regor's GenerateDMA and its Gather/Scatter lowering
(``HLCStreamGenerator::GenerateHLCDMACommands``); the 2-D gather checked by a held-out embedding program, the 3-D
one (SIZE1 planes of SIZE0 indexed rows, IDX_SKIP1 = 0: ExecuTorch hands Vela int32 indices) by gather and
index_select programs against the TOSA reference model; IDX_SKIP1 != 0 by Regor's lowering alone]; what a DMA
writes and reads, for the stream checker."""

from __future__ import annotations

import numpy as np

from ...cancel import interruption_point
from ....errors import NpuFault
from .. import bounds
from ..dma_copy import copy_chunked
from ..traffic import SHRAM_REGION, DmaFootprint, OpRecord


def run_dma(ctx, op) -> OpRecord:
    """An Ethos-U85 DMA (``operations.py``): SIZE1 planes x SIZE0 rows x LEN bytes (1-D: one row), row and plane
    strides on each side; a gather/scatter reads one int32 row number per row from the index table, which takes
    the place of the row counter on the indexed side. Rows are copied in order (a later row wins); every row's
    source and destination are checked against the memory map as it is copied."""
    d = op.dma
    rec = OpRecord(op)
    rows = 1 if d.src_stride_mode == 0 else d.size0
    planes = d.size1 if d.src_stride_mode == 2 else 1
    n = d.length * rows * planes
    if n == 0:
        return rec
    if n > bounds.HOST_BYTES_PER_OP:
        raise NpuFault("unsupported", f"DMA at 0x{op.offset:x} of {n} bytes is too large to simulate",
                       offset=op.offset)
    index = None
    if d.indexed:
        index = _index_table(ctx, d, rows, planes)
        rec.add("r", "dma", d.idx_region, 4 * rows * planes)
        bad = np.flatnonzero((index < 0) | (index > d.idx_max))
        if bad.size:
            raise NpuFault("bus_error", f"DMA index {int(index.flat[bad[0]])} (entry {int(bad[0])}) is outside 0.."
                           f"{d.idx_max} (IDX_MAX)", offset=op.offset)

    def at(internal, region, address, stride0, stride1, p, row, write):
        off = address + p * stride1 + row * stride0
        return ctx.shram_slice(off, d.length) if internal else ctx.view(region, off, d.length, write)

    for p in range(planes):
        for r in range(rows):
            if (p * rows + r) % 4096 == 0:
                interruption_point()
            src_row = int(index[p, r]) if d.indexed == "src" else r
            dst_row = int(index[p, r]) if d.indexed == "dst" else r
            src = at(d.src_internal, d.src_region, d.src_address, d.src_stride0, d.src_stride1, p, src_row, False)
            copy_chunked(at(d.dst_internal, d.dst_region, d.dst_address, d.dst_stride0, d.dst_stride1, p, dst_row,
                            True), src)  # a long row in chunks, each after a time-limit check
    rec.add("r", "dma", SHRAM_REGION if d.src_internal else d.src_region, n)
    rec.add("w", "dma", SHRAM_REGION if d.dst_internal else d.dst_region, n)
    return rec


def index_offsets(d, rows: int, planes: int) -> np.ndarray:
    """The byte offset, from IDX, of the index of each (plane, row) of an indexed DMA ``d``: int32 entries one
    after the other, IDX_SKIP1 bytes skipped after each plane."""
    return (np.arange(planes, dtype=np.int64)[:, None] * (4 * rows + d.idx_skip1)
            + 4 * np.arange(rows, dtype=np.int64)[None, :])


def _index_table(ctx, d, rows: int, planes: int) -> np.ndarray:
    """The int32 index of each (plane, row), read from the index table."""
    offs = index_offsets(d, rows, planes)
    lo, hi = int(offs.min()), int(offs.max()) + 4
    table = ctx.view(d.idx_region, d.idx_address + lo, hi - lo, False)
    flat = (offs - lo).ravel()
    entries = table[flat[:, None] + np.arange(4)[None, :]].copy().view("<i4").astype(np.int64)
    return entries.reshape(planes, rows)


def footprint(arch, op) -> DmaFootprint:
    """The destination span the DMA writes (a scatter's rows go anywhere up to IDX_MAX), the source rows it reads
    (none for a gather: its index table chooses them) and its index table."""
    d = op.dma
    mode = d.mode
    rows = 1 if mode == 0 else d.size0
    planes = d.size1 if mode == 2 else 1
    nrows = d.idx_max + 1 if d.indexed == "dst" else rows
    span = d.length + max(0, nrows - 1) * abs(d.dst_stride0) + max(0, planes - 1) * abs(d.dst_stride1)
    rows = 1 if d.src_stride_mode == 0 else d.size0
    planes = d.size1 if d.src_stride_mode == 2 else 1
    starts = None
    if d.indexed != "src":
        starts = (np.arange(planes, dtype=np.int64)[:, None] * d.src_stride1
                  + np.arange(rows, dtype=np.int64)[None, :] * d.src_stride0).ravel()
    index_bytes = 0
    if d.indexed:
        offs = index_offsets(d, rows, planes)
        index_bytes = int(offs.max()) + 4  # the span from IDX (a negative IDX_SKIP1 is not Vela's)
    return DmaFootprint(dst_span=span, src_rows=starts, index_bytes=index_bytes, gather=d.indexed == "src")
