"""Ethos-U55/U65 DMA (NPU_OP_DMA_START): 1-D copies between memory and the SHRAM (its LUT slots), and on the U65
2-D and 3-D copies whose destination rows and planes are spread by SKIP0 and SKIP1 (the source contiguous); what
a DMA writes and reads, for the stream checker."""

from __future__ import annotations

import numpy as np

from ...cancel import interruption_point
from .. import bounds
from ..dma_copy import copy_chunked
from ..traffic import SHRAM_REGION, DmaFootprint, OpRecord
from .variants import is_u65


def _mode(arch, d) -> int:
    """The DMA's stride mode: the U65's destination mode (0: 1-D, 1: 2-D, 2: 3-D); the U55 copies 1-D."""
    return d.dst_stride_mode if is_u65(arch) else 0


def run_dma(ctx, op) -> OpRecord:
    """Copy ``LEN`` bytes (U65 2-D/3-D: ``SIZE1`` planes of ``SIZE0`` rows of ``LEN`` bytes, from a contiguous
    source to rows ``LEN + SKIP0`` and planes ``LEN * SIZE0 + SKIP1`` apart at the destination), between memory and
    the SHRAM; the whole source read first, the destination checked against its memory before it is written.
    ``ctx``: the executing stream's context (``execute._Ctx``)."""
    d = op.dma
    rec = OpRecord(op)
    mode = _mode(ctx.arch, d)
    rows = 1 if mode == 0 else d.size0
    planes = d.size1 if mode == 2 else 1
    total = d.length * rows * planes
    if total == 0:
        return rec
    if d.src_internal:
        src = ctx.shram_slice(d.src_address, total)
        rec.add("r", "dma", SHRAM_REGION, total)
    else:
        src = ctx.view(d.src_region, d.src_address, total, False)
        rec.add("r", "dma", d.src_region, total)
    # [inferred from Regor's U65 generator] row r of plane p goes to
    # dst + p * (LEN * SIZE0 + SKIP1) + r * (LEN + SKIP0); the source is contiguous.
    row_stride = d.length + (d.skip0 if mode else 0)
    plane_stride = d.length * rows + (d.skip1 if mode == 2 else 0)
    lo = min(0, (planes - 1) * plane_stride) + min(0, (rows - 1) * row_stride)
    hi = max(0, (planes - 1) * plane_stride) + max(0, (rows - 1) * row_stride) + d.length
    bounds.check_dma(ctx, op, total, hi - lo)
    if d.dst_internal:
        dst = ctx.shram_slice(d.dst_address + lo, hi - lo)
        region = SHRAM_REGION
    else:
        dst = ctx.view(d.dst_region, d.dst_address + lo, hi - lo, True)
        region = d.dst_region
    if rows * planes == 1:  # one row: in chunks, each after a time-limit check, no temporary of its size
        copy_chunked(dst[-lo:-lo + d.length], src)
        rec.add("w", "dma", region, total)
        return rec
    data = np.array(src, copy=True)  # rows: the source as it was (bounded by bounds.HOST_BYTES_PER_OP)
    if row_stride >= d.length and (planes == 1 or plane_stride >= (rows - 1) * row_stride + d.length):
        # rows that do not overlap (nor planes, when there are several): one strided copy
        target = np.lib.stride_tricks.as_strided(dst, shape=(planes, rows, d.length),
                                                 strides=(plane_stride, row_stride, 1), writeable=True)
        target[...] = data.reshape(planes, rows, d.length)
    else:  # overlapping rows: in order, the later row wins
        i = 0
        for p in range(planes):
            for r in range(rows):
                if i % 4096 == 0:
                    interruption_point()
                o = p * plane_stride + r * row_stride - lo
                dst[o:o + d.length] = data[i * d.length:(i + 1) * d.length]
                i += 1
    rec.add("w", "dma", region, total)
    return rec


def footprint(arch, op) -> DmaFootprint:
    """The destination span the DMA writes (rows ``LEN + SKIP0`` apart, planes ``LEN * SIZE0 + SKIP1``) and its
    contiguous source."""
    d = op.dma
    mode = d.mode if is_u65(arch) else 0
    rows = 1 if mode == 0 else d.size0
    planes = d.size1 if mode == 2 else 1
    span = max(d.length * rows * planes, d.length + max(0, rows - 1) * (d.length + (d.skip0 if mode else 0))
               + max(0, planes - 1) * (d.length * rows + (d.skip1 if mode == 2 else 0)))
    mode = _mode(arch, d)  # as run_dma: the source is contiguous
    n = d.length * (1 if mode == 0 else d.size0) * (d.size1 if mode == 2 else 1)
    return DmaFootprint(dst_span=span, src_bytes=n)
