"""The two-stage MAC/AO pipeline both products' compute models (``u55/performance.py``, ``u85/performance.py``) run
their blocks through: per block a MAC and an output-stage (AO) time, each at least the block's command-issue floor;
the stages overlap, so only the first block's shorter stage adds to the sum of the longer ones (Regor's
per-block estimate, ethosu.md section 5); and the accumulator delay both compute the same way."""

from __future__ import annotations


def pipeline(groups, uses_macs: bool, stages) -> dict:
    """The two-stage MAC/AO pipeline over the block groups ``[((h, w, c), count)]``: ``stages(block)`` gives a
    block's (MAC, AO, weight-buffer, command-issue floor) cycles; each stage takes at least the floor; blocks
    flow through the two stages, so the operation takes sum(max(M, A)) + min(M, A) of the first block.  Returns
    total, fill (that last term), mac, ao and wd (weight buffer) cycles."""
    total = mac_sum = ao_sum = wd_sum = 0.0
    fill = None
    for blk, count in groups:
        m, a, wb, cmd = stages(blk)
        ms, as_ = max(m, cmd) if uses_macs else 0.0, max(a, cmd)
        total += count * max(ms, as_)
        mac_sum += count * m
        ao_sum += count * a
        wd_sum += count * wb
        if fill is None:
            fill = min(ms, as_) if uses_macs else 0.0
    total += fill or 0.0
    return {"total": total, "fill": fill or 0.0, "mac": mac_sum, "ao": ao_sum, "wd": wd_sum}


def accumulator_delay(unit: int, nhw: int, nc: int, steps: int) -> int:
    """Regor's accumulator delay of a block whose OFM is one micro-block wide and high (``nhw == 1``):
    ``unit`` cycles per kernel step when the block is one micro-block deep, per step after the first and per
    depth micro-block otherwise; 0 for wider blocks (both products' performance models)."""
    if nhw != 1:
        return 0
    if nc == 1:
        return unit * steps
    return unit * (steps - 1) * nc if steps > 1 else 0
