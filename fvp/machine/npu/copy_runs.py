"""Runs of copying operations in a replayed command stream, executed as one copy.

Vela transposes a tensor with a long run of consecutive 1x1 pools that each copy one slab (ExecuTorch's NCHW
input into NHWC: 225 operations at the start of MobileNetV2's stream, 64 of ds_cnn's); the engine knows which
operations give back their IFM unchanged (``engine.is_copy``). Run one by one, each pays the whole per-operation
path (bounds, two memory views, a gather into a dense array, a scatter) for a few hundred bytes. A replayed
stream runs such a run as one byte gather from a view of the region they read and one byte scatter into a view
of the region they write, with each operation's record (its bytes per tensor and region) as it would be.

When it applies, for a run of at least two consecutive copying operations of a stream decoded before: every
operation already passed its bounds checks once (the checks that depend on the operation alone), reads one
region and writes one region, with OFMs neither transposed nor reversed; no byte is written twice (in one region an
operation may read what an earlier one wrote: followed back to the byte that one copied, every read is of memory
as it was before the run; two regions' byte ranges must not overlap at all, in absolute addresses, since the
base pointers may change between runs); the union of
what they read and of what they write are each one memory view (so each operation's area lies in memory the NPU
reaches, as its own checks find). Anything else (a view that faults, overlapping areas, the stream checker,
which must see every operation) runs the operations one by one, which then fault or not as they always do:
nothing has been written before the run is known to be good.
"""

from __future__ import annotations

import numpy as np

from . import bounds
from . import featuremap as fmap
from .memo import MISS, IdentityMemo
from .traffic import OpRecord

MIN_RUN = 2
_RUNS = IdentityMemo(64)  # (decoded operation list,) -> {start index: (stop index, plan or None)}


def runs(ctx, ops: list) -> dict:
    """``{start: (stop, plan)}`` for the runs of copying operations in a decoded stream ``ops`` (computed once per
    decoded list; a plan is built at the first run that meets the conditions)."""
    is_copy = getattr(ctx.engine, "is_copy", None)
    if is_copy is None or ctx.checker is not None:
        return {}
    found = _RUNS.get((ops,), (id(ctx.engine),))
    if found is MISS:
        found, start = {}, None
        for k, op in enumerate(list(ops) + [None]):
            if op is not None and _copies(op, is_copy):
                start = k if start is None else start
                continue
            if start is not None and k - start >= MIN_RUN:
                found[start] = [k, None]
            start = None
        _RUNS.put((ops,), found, (id(ctx.engine),))
    return found


def _copies(op, is_copy) -> bool:
    if op.kind != "POOL" or op.acc_format not in ("I32", "I40", "I48"):
        return False
    i, o = op.ifm, op.ofm
    if "CHAINED" in (i.storage, o.storage) or o.transpose != "HWC" or o.reverse != "NONE":
        return False
    return i.bits in (8, 16) and is_copy(op)


def _plan(ctx, ops: list):
    """The run's regions, the byte ranges and index arrays of its gather and scatter, and each operation's
    traffic; None when the run does not meet the conditions that do not depend on memory (for good: they are
    the operations' own)."""
    r_in, r_out = {op.ifm.region for op in ops}, {op.ofm.region for op in ops}
    if len(r_in) != 1 or len(r_out) != 1:
        return None
    (ri,), (ro,) = r_in, r_out
    src, dst, traffic = [], [], []
    for op in ops:
        i = op.ifm
        h, w, d = i.source_height, i.source_width, i.depth
        esz = np.arange(i.bits // 8, dtype=np.int64)
        src.append((fmap.element_offsets(i, h, w, d)[..., None] + esz).ravel())
        dst.append((fmap.element_offsets(op.ofm, h, w, d)[..., None] + esz).ravel())
        traffic.append((fmap.storage_bytes(i, h, w, d), fmap.storage_bytes(op.ofm, h, w, d)))
    every = np.concatenate(dst)
    if np.unique(every).size != every.size:  # a byte written twice: the order of the writes would matter
        return None
    # the read view covers every operation's IFM as it would read it (its own bounds), followed back or not
    rlo, rhi = min(int(a.min()) for a in src), max(int(a.max()) for a in src) + 1
    if ri == ro:
        # in one region an operation may read what an earlier one of the run wrote (Vela's transpositions do):
        # such a byte reads, in effect, the byte that earlier operation copied from; followed back, every read
        # is of memory as it was before the run, so one gather computes the run in order
        lo = min(int(a.min()) for a in src + dst)
        origin = np.full(max(int(a.max()) for a in src + dst) + 1 - lo, -1, np.int64)
        for k in range(len(ops)):
            came = origin[src[k] - lo]
            src[k] = np.where(came >= 0, came, src[k])
            origin[dst[k] - lo] = src[k]
    src, dst = np.concatenate(src), every
    wlo, whi = int(dst.min()), int(dst.max()) + 1
    return ri, ro, rlo, rhi, wlo, whi, src - rlo, dst - wlo, traffic


def run(ctx, ops: list, entry: list):
    """The records of the run ``ops`` (``entry``: its ``[stop, plan]``), or None to run them one by one."""
    plan = entry[1]
    if plan is None:
        if not all(bounds.checked_before(ctx, op) for op in ops):
            return None  # the first run of these operations: one by one (and their checks remembered)
        plan = entry[1] = _plan(ctx, ops) or False
    if plan is False:
        return None
    ri, ro, rlo, rhi, wlo, whi, src_idx, dst_idx, traffic = plan
    a_in = (ctx.bases[ri] + rlo) & ctx.mask
    a_out = (ctx.bases[ro] + wlo) & ctx.mask
    if ri != ro and a_in < a_out + (whi - wlo) and a_out < a_in + (rhi - rlo):
        return None  # the regions' bases make what is read and what is written overlap
    try:
        src = ctx.view(ri, rlo, rhi - rlo, False)
        dst = ctx.view(ro, wlo, whi - wlo, True)
    except Exception:  # noqa: BLE001 - a fault: the operations one by one say which and where
        return None
    dst[dst_idx] = src[src_idx]
    records = []
    for op, (n_in, n_out) in zip(ops, traffic):
        rec = OpRecord(op, macs=op.macs)
        rec.add("r", "ifm", ri, n_in)
        rec.add("w", "ofm", ro, n_out)
        records.append(rec)
    return records
