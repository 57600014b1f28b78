"""Ethos-U85 DMA (NPU_OP_DMA_START): 1-D, 2-D and 3-D copies with strides of their own on each side, and the 2-D
gather and scatter, whose int32 index table takes the place of the row counter on one side [inferred from Regor's
GenerateDMA and its Gather/Scatter lowering; the gather checked by a held-out embedding program]; what a DMA
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
        index = ctx.view(d.idx_region, d.idx_address, 4 * rows, False).view("<i4").astype(np.int64)
        rec.add("r", "dma", d.idx_region, 4 * rows)
        bad = np.flatnonzero((index < 0) | (index > d.idx_max))
        if bad.size:
            raise NpuFault("bus_error", f"DMA index {int(index[bad[0]])} (entry {int(bad[0])}) is outside 0.."
                           f"{d.idx_max} (IDX_MAX)", offset=op.offset)

    def at(internal, region, address, stride0, stride1, p, row, write):
        off = address + p * stride1 + row * stride0
        return ctx.shram_slice(off, d.length) if internal else ctx.view(region, off, d.length, write)

    for p in range(planes):
        for r in range(rows):
            if (p * rows + r) % 4096 == 0:
                interruption_point()
            src_row = int(index[r]) if d.indexed == "src" else r
            dst_row = int(index[r]) if d.indexed == "dst" else r
            src = at(d.src_internal, d.src_region, d.src_address, d.src_stride0, d.src_stride1, p, src_row, False)
            copy_chunked(at(d.dst_internal, d.dst_region, d.dst_address, d.dst_stride0, d.dst_stride1, p, dst_row,
                            True), src)  # a long row in chunks, each after a time-limit check
    rec.add("r", "dma", SHRAM_REGION if d.src_internal else d.src_region, n)
    rec.add("w", "dma", SHRAM_REGION if d.dst_internal else d.dst_region, n)
    return rec


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
    return DmaFootprint(dst_span=span, src_rows=starts, index_bytes=4 * rows if d.indexed else 0,
                        gather=d.indexed == "src")
