"""Pooling operations that copy: a 1x1 pool (stride 1, no padding, no upscaling, one IFM element per OFM element)
whose output stage gives back every value of the IFM's type unchanged. Vela transposes tensors with long runs of
them (ExecuTorch's NCHW inputs into NHWC: 64 of ds_cnn's 80 kernel operations, 224 of MobileNetV2's). For such an
operation the engine returns the IFM as it was read, instead of summing one tap, dividing by a count of one and
requantizing with an identity scale.

Whether an operation copies is decided once per operation object (a replayed stream passes the same ones) by
running the engine's own path for it on every value of the IFM's type (8 or 16 bits), laid out in the
operation's shape: exact, whatever the scale, round mode, zero points and clamp, and no case is assumed.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...memo import MISS, IdentityMemo

_COPIES = IdentityMemo()  # (operation,) -> bool


def copies(op, run) -> bool:
    """Whether the POOL ``op`` gives back its IFM unchanged for every input; ``run(op, ifm)`` is the engine's
    regular path (used once per operation object to find out)."""
    hit = _COPIES.get((op,))
    if hit is MISS:
        hit = _shape_copies(op) and _values_copy(op, run)
        _COPIES.put((op,), hit)
    return hit


def _shape_copies(op) -> bool:
    """One IFM element per OFM element, in place: the geometry of a copy (and nothing besides the IFM)."""
    k, i, o, act = op.kernel, op.ifm, op.ofm, op.activation
    if op.sub_op not in ("AVERAGE", "MAX", "MIN") or k is None or op.ifm2 is not None or op.scales:
        return False
    if (k.width, k.height, k.stride_x, k.stride_y) != (1, 1, 1, 1) or k.upscale != "NONE":
        return False
    if k.pad_top or k.pad_left or k.pad_bottom or k.pad_right or i.upscale != "NONE":
        return False
    if act.table is not None or act.builtin:
        return False
    if (i.source_height, i.source_width, i.depth) != (o.height, o.width, o.depth):
        return False
    return i.bits <= 16 and (i.bits, bool(i.signed)) == (o.bits, bool(o.signed))


def _values_copy(op, run) -> bool:
    i = op.ifm
    lo = -(1 << (i.bits - 1)) if i.signed else 0
    values = np.arange(lo, lo + (1 << i.bits), dtype=np.int32)
    h, w, c = i.source_height, i.source_width, i.depth
    if h * w * c == 0:
        return False
    probe = op
    if h * w * c < values.size:
        # the elements of a 1x1, stride-1, unpadded pool without a scale stream are independent of one another:
        # an operation smaller than the value range is tried with more rows of its own width and depth (every
        # other field its own), all values in one call instead of thousands (a 16-bit copy of a few elements)
        h = -(-values.size // (w * c))
        probe = replace(op, ifm=replace(i, height=h, height0=h, height1=h), ofm=replace(op.ofm, height=h))
    n = h * w * c
    shape = (h, w, c)
    for start in range(0, values.size, n):
        x = np.resize(values[start:start + n], n).reshape(shape)
        if not np.array_equal(run(probe, x), x):
            return False
    return True
