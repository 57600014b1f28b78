"""Where an activation's lookup table lives in the NPU's internal memory (the U55/U65's SHRAM, whose last 2 KiB
hold the LUT slots; the U85's 2 KiB LUT RAM): its first byte and size, which the executor reads the table from
and the stream checker's LUT rules compare DMA destinations with.

A table at slot t starts 256 bytes per slot after the LUT area's start (``arch.lut_start_bytes``); an 8-bit
index (an 8-bit OFM, or any OFM with the FORCE_INT8 / FORCE_UINT8 clip range) reads 256 entries of the OFM's
size, a 16-bit index (FORCE_INT16, a 16-bit OFM, the built-in TANH/SIGMOID of the U85's LUT_TANH/LUT_SIGMOID) a
2 KiB table of interpolation pairs."""

from __future__ import annotations

from .descriptors import ClipRange


def table_slot(op) -> int | None:
    """The LUT slot the operation's activation reads, or None (no table: no activation, or the U55/U65's
    built-in TANH/SIGMOID, which has its own ROM)."""
    act = op.activation
    if act is None:
        return None
    t = act.table
    if t is None and act.builtin:
        t = act.lut_slot
    return t


def table_extent(arch, op) -> tuple[int, int] | None:
    """(first byte, bytes) of the operation's table in the SHRAM / LUT RAM, the size as the table's format
    needs it (it may run past the memory's end: the caller judges), or None without a table."""
    t = table_slot(op)
    if t is None:
        return None
    act = op.activation
    clip = act.clip_range
    index_bits = (16 if act.builtin else 8 if clip in (ClipRange.FORCE_UINT8, ClipRange.FORCE_INT8) else
                  16 if clip == ClipRange.FORCE_INT16 else op.ofm.bits)
    return arch.lut_start_bytes + 256 * t, (256 * (op.ofm.bits // 8) if index_bits == 8 else 2048)
