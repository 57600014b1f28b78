"""TFLite Micro's tensor-arena planning: buffer lifetimes and the memory planners.

Facts from tflite-micro (``micro_allocation_info.cc``, ``memory_planner/greedy_memory_planner.cc``,
``memory_planner/linear_memory_planner.cc``, ``micro_allocator.cc``, ``micro_arena_constants.h``); the code is
written here from those descriptions:

- lifetimes (``AllocationInfoBuilder``): the subgraph inputs live from time 0; operator *i* is time *i + 1*;
  an operator's outputs are created at its time, its inputs and outputs are used until its time; the subgraph
  outputs are used until the last time. Buffers are needed for tensors without constant data, not variable,
  of non-zero size (``needs_allocating``); offline-planned offsets (the ``OfflineMemoryAllocation`` metadata
  that Vela writes) are honoured as given.
- sizes are rounded up to ``MicroArenaBufferAlignment()`` = 16 bytes (``CreatePlan``).
- the greedy planner: offline-planned buffers first, in order, at their offsets; then the online ones in
  decreasing size (a bubble sort that swaps only on ``<``, over the online buffers taken in reverse order, so
  ties end up in reverse index order); the first of them goes at offset 0, each next one at the lowest offset
  at or after which no buffer that overlaps it in time intersects it, walking the placed buffers in offset
  order (first fit); the arena head needed is the maximum of offset + size.
- the linear planner: every buffer after the previous one, no reuse.
"""

from __future__ import annotations

from dataclasses import dataclass

ALIGNMENT = 16  # MicroArenaBufferAlignment()
ONLINE = -1  # kOnlinePlannedBuffer


def align_up(n: int, a: int = ALIGNMENT) -> int:
    return (n + a - 1) // a * a


@dataclass
class Buffer:
    tensor: int  # tensor index (or -1 - n for scratch buffer n)
    size: int  # aligned size
    first: int
    last: int
    offline_offset: int = ONLINE
    offset: int = -1


def lifetimes(model, needs) -> list[Buffer]:
    """The planner's buffer list, in allocation-info order (tensor index order)."""
    n = len(model.tensors)
    first = [-1] * n
    last = [-1] * n
    scope = 0
    for t in model.inputs:
        if t >= 0:
            if first[t] == -1:
                first[t] = scope
            last[t] = scope
    for op in model.operators:
        scope += 1
        for t in op.outputs:
            if t >= 0 and first[t] == -1:
                first[t] = scope
        for t in op.inputs:
            if t >= 0:
                last[t] = scope
        for t in op.outputs:
            if t >= 0:
                last[t] = scope
    for t in model.outputs:
        if t >= 0:
            if first[t] == -1:
                first[t] = scope
            last[t] = scope
    offline = model.offline_offsets
    out = []
    for t, tensor in enumerate(model.tensors):
        if not needs(tensor):
            continue
        off = offline[t] if offline is not None else ONLINE
        out.append(Buffer(tensor=t, size=align_up(tensor.nbytes), first=first[t], last=last[t],
                          offline_offset=off))
    return out


def _overlaps(a: Buffer, first: int, last: int) -> bool:
    return not (a.first > last or first > a.last)


def plan_greedy(buffers: list[Buffer]) -> int:
    """Set ``offset`` of every buffer as TFLM's GreedyMemoryPlanner does; returns the head size needed."""
    if not buffers:
        return 0
    head = [b for b in buffers if b.offline_offset != ONLINE]
    online = [b for b in buffers if b.offline_offset == ONLINE][::-1]
    # ReverseSortInPlace: a bubble sort that swaps neighbours when the left one is strictly smaller
    sizes = [b.size for b in online]
    swapped = True
    while swapped:
        swapped = False
        for i in range(1, len(online)):
            if sizes[i - 1] < sizes[i]:
                sizes[i - 1], sizes[i] = sizes[i], sizes[i - 1]
                online[i - 1], online[i] = online[i], online[i - 1]
                swapped = True
    order = head + online
    for b in head:
        b.offset = b.offline_offset
    by_offset: list[Buffer] = []  # placed buffers, sorted by offset (insertion after equal offsets)
    first = order[0]
    if first.offline_offset == ONLINE:
        first.offset = 0
    by_offset.append(first)
    for b in order[1:]:
        if b.offline_offset == ONLINE:
            candidate = 0
            prior = None
            actives = [e for e in by_offset if _overlaps(e, b.first, b.last)]
            idx = 0
            while True:
                nxt = actives[idx] if idx < len(actives) else None
                if prior is not None:
                    candidate = max(candidate, prior.offset + prior.size)
                if nxt is None:
                    break
                if nxt.offset - candidate >= b.size:
                    break
                prior = nxt
                idx += 1
            b.offset = candidate
        # insert keeping offset order: before the first entry whose offset is greater
        pos = len(by_offset)
        if by_offset[0].offset > b.offset:
            pos = 0
        else:
            for i in range(1, len(by_offset)):
                if by_offset[i].offset > b.offset:
                    pos = i
                    break
        by_offset.insert(pos, b)
    return max(b.offset + b.size for b in buffers)


def plan_linear(buffers: list[Buffer]) -> int:
    """TFLM's LinearMemoryPlanner: each buffer after the previous one."""
    off = 0
    for b in buffers:
        b.offset = off
        off += b.size
    return off


PLANNERS = {"greedy": plan_greedy, "linear": plan_linear}
