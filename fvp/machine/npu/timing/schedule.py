"""The event-driven simulation of one command stream: the command processor (one command word per
``cmd_word_cycles``, waits on ``DMA_WAIT``/``KERNEL_WAIT``), the kernel pipeline and the DMA engine as jobs with a
head, a body that moves bytes through the AXI ports (max-min fair bandwidth sharing) and a tail; ``BLOCKDEP``
overlap; then each operation's share of the stream's cycles and what bound it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

from .records import KERNEL_KINDS, _EPS


class _Port(NamedTuple):
    """An AXI port of the model: its memory's name, bandwidth (bytes per cycle read), latencies, burst size and
    write bandwidth."""

    index: int
    name: str
    bw: float
    read_latency: float
    write_latency: float
    burst: int
    write_bw: float = 0.0  # bytes per cycle written (0: bw); writes cost bw / write_bw of the shared budget


@dataclass(slots=True, eq=False)
class _Job:
    """A kernel operation or a DMA in the event simulation: head (fixed), body (compute + shared bandwidth),
    tail (fixed); ``cost`` is port -> bytes at full-burst cost (the ports with bytes to move only), then the
    simulation's state of the job."""

    rec: object
    timing: object
    is_dma: bool
    head: float
    tail: float
    compute: float
    cost: dict
    blockdep: int = 0
    T: float = 0.0
    demand: dict = field(default_factory=dict)
    phase: str = "issued"
    phase_end: float = 0.0
    remaining: float = 1.0
    rate: float = 0.0
    start: float | None = None
    body_start: float | None = None
    body_end: float | None = None
    end: float | None = None
    shram: tuple | None = None  # SHRAM layout (IB_END, AB_START, IFM2_IB_START) of a kernel operation

    def __post_init__(self):
        self.cost = {p: c for p, c in self.cost.items() if c > 0}


def simulate(model, records, jobs, timings, t0: float):
    """Event-driven run of the command processor (in-order issue, waits, outstanding limits), the kernel
    pipeline (one body at a time; BLOCKDEP overlap of drain and start-up) and the DMA engine (one job at a
    time); between events every job's body progresses at its bandwidth-shared rate."""
    arch = model.arch
    max_k = max(1, arch.max_outstanding_kernels)
    max_d = max(1, arch.max_outstanding_dma)
    bw = {p.index: p.bw for p in model.ports}
    n = len(records)
    t = float(t0)
    kernels: list[_Job] = []  # issued, in order
    dmas: list[_Job] = []
    k_next = d_next = 0  # next issued kernel / DMA not started yet
    k_done = d_done = 0  # finished counts (outstanding = issued - done)
    live: list[_Job] = []
    blockdep_stall = shram_stall = 0.0

    # command words each operation costs the command processor: its register writes and itself
    # (at least the time the command stream's port needs to deliver a 4-byte word)
    cmd_c = max(model.params["cmd_word_cycles"], 4.0 / model._qport.bw if model._qport is not None else 0.0)
    words = []
    prev_off = -4
    for r in records:
        off = r.op.offset if r.op.offset is not None else prev_off + 4
        words.append(max(1, (off - prev_off) // 4))
        prev_off = off
    i = 0
    cp_time = t  # when the command processor finished its last action
    ready = None  # when the command processor has decoded operation i (None: not started on it)
    guard = 0
    while True:
        guard += 1
        if guard > 20 * (n + 10):  # pragma: no cover - a bug in the model, never a hang
            break
        changed = True
        while changed:
            changed = False
            # command processor: decode and issue operations in order until something blocks it
            while i < n:
                if ready is None:
                    ready = cp_time + words[i] * cmd_c
                if ready > t + _EPS:
                    break
                op = records[i].op
                kind = op.kind
                if kind == "DMA":
                    if len(dmas) - d_done >= max_d:
                        break
                    dmas.append(jobs[i])
                elif kind in KERNEL_KINDS:
                    if len(kernels) - k_done >= max_k:
                        break
                    kernels.append(jobs[i])
                elif kind in ("DMA_WAIT", "KERNEL_WAIT", "STOP"):
                    busy = (len(dmas) - d_done if kind != "KERNEL_WAIT" else 0) + \
                           (len(kernels) - k_done if kind != "DMA_WAIT" else 0)
                    if busy > (op.count if kind != "STOP" else 0):
                        break
                    timings[i].start = ready
                    timings[i].end = t
                else:
                    timings[i].start = timings[i].end = t
                cp_time = t
                ready = None
                i += 1
                changed = True
            # DMA engine: one job at a time, in issue order
            if d_next < len(dmas) and (d_next == 0 or dmas[d_next - 1].phase == "done"):
                _begin(dmas[d_next], t, live)
                d_next += 1
                changed = True
            # kernel pipeline: the next kernel starts when the previous is done, or already in its drain
            # (tail) when BLOCKDEP allows overlap and the SHRAM layout stays the same
            if k_next < len(kernels):
                job = kernels[k_next]
                prev = kernels[k_next - 1] if k_next else None
                if prev is None or prev.phase == "done" or (
                        job.blockdep > 0 and prev.phase == "tail" and job.shram == prev.shram):
                    _begin(job, t, live)
                    k_next += 1
                    changed = True
            # phase transitions due now
            for job in list(live):
                if job.phase == "head" and job.phase_end <= t + _EPS:
                    job.phase = "body"
                    job.body_start = t
                    job.remaining = 1.0
                    job.T = max([job.compute] + [c / bw[p] for p, c in job.cost.items()])
                    job.demand = {p: c / job.T for p, c in job.cost.items()} if job.T > 0 else {}
                    changed = True
                if job.phase == "body" and (job.T <= 0 or job.remaining <= _EPS):
                    job.phase = "tail"
                    job.body_end = t
                    job.phase_end = t + job.tail
                    changed = True
                if job.phase == "tail" and job.phase_end <= t + _EPS:
                    job.phase = "done"
                    job.end = t
                    live.remove(job)
                    if job.is_dma:
                        d_done += 1
                    else:
                        k_done += 1
                    changed = True
        if i >= n and not live:
            break
        t_next = ready if (i < n and ready is not None and ready > t + _EPS) else math.inf
        if not live and not math.isfinite(t_next):  # pragma: no cover - blocked with nothing running
            break
        body = [j for j in live if j.phase == "body"]
        _share_bandwidth(body, bw)
        for j in live:
            if j.phase != "body":
                t_next = min(t_next, j.phase_end)
            elif j.rate > 0:
                t_next = min(t_next, t + j.remaining * j.T / j.rate)
        if not math.isfinite(t_next):  # pragma: no cover
            break
        dt = max(t_next - t, 0.0)
        for j in body:
            if j.rate > 0 and j.T > 0:
                j.remaining -= dt * j.rate / j.T
        # cycles the next kernel waits only because BLOCKDEP or a SHRAM layout change forbids overlapping the
        # previous one's drain
        if 0 < k_next < len(kernels) and kernels[k_next - 1].phase == "tail":
            job = kernels[k_next]
            if job.blockdep == 0:
                blockdep_stall += dt
            elif job.shram != kernels[k_next - 1].shram:
                shram_stall += dt
        t = t_next
    for job in jobs:
        if job is None:
            continue
        tm = job.timing
        tm.start = job.start if job.start is not None else t
        tm.end = job.end if job.end is not None else t
        if job.body_start is not None and job.body_end is not None:
            tm.body_cycles = job.body_end - job.body_start
        tm.fixed_cycles = job.head + job.tail
        tm.memory_cycles = {p: c / bw[p] for p, c in job.cost.items()}
        tm.bound = _bound(model, job)
        if tm.macs and tm.cycles > 0:
            tm.mac_utilisation = tm.macs / (tm.cycles * arch.total_macs)
    return t, (blockdep_stall, shram_stall)


def _begin(job: _Job, now: float, live: list) -> None:
    job.start = now
    job.phase = "head"
    job.phase_end = now + job.head
    live.append(job)


def _bound(model, job: _Job) -> str:
    parts = {"compute": job.compute}
    for p, c in job.cost.items():
        parts[model.ports[p].name] = max(parts.get(model.ports[p].name, 0.0), c / model.ports[p].bw)
    name, val = max(parts.items(), key=lambda kv: kv[1])
    if val <= 0 and job.head + job.tail <= 0:
        return "-"
    if job.head + job.tail > max(val, job.timing.body_cycles):
        return "latency"
    return name

# ------------------------------------------------------------------ attribution and totals


def attribute(timings, jobs, total: float) -> None:
    """Give every cycle of the stream to one operation: the oldest running kernel, else the oldest running
    DMA (an exposed transfer), else nobody (stream start-up, command fetch)."""
    points = {0.0, float(total)}
    spans = []
    for j in jobs:
        if j is None or j.start is None or j.end is None or j.end <= j.start:
            continue
        spans.append(j)
        points.add(j.start)
        points.add(j.end)
    xs = sorted(points)
    kern = [j for j in spans if not j.is_dma]
    dmas = [j for j in spans if j.is_dma]
    ki = di = 0
    for a, b in zip(xs, xs[1:]):
        mid = (a + b) / 2
        while ki < len(kern) and kern[ki].end <= mid:
            ki += 1
        while di < len(dmas) and dmas[di].end <= mid:
            di += 1
        owner = _running_at(kern[ki:], mid)
        if owner is None:
            owner = _running_at(dmas[di:], mid)
        if owner is not None:
            owner.timing.exclusive_cycles += b - a


def _running_at(jobs, t: float):
    """The first of ``jobs`` (in issue order, taken as start order) that runs at time ``t``, or None."""
    for j in jobs:
        if j.start <= t < j.end:
            return j
        if j.start > t:
            return None
    return None


def _by_port(transfers, direction: str) -> dict:
    out: dict = {}
    for _, port, d, n in transfers:
        if d == direction:
            out[port] = out.get(port, 0) + n
    return out


def _share_bandwidth(jobs, bw: dict) -> None:
    """Max-min fair rates for the jobs in their body phase: each wants rate 1 (full speed), a port carries at
    most its bandwidth; raise all unfrozen rates together until a port saturates, freeze its jobs, repeat."""
    for j in jobs:
        j.rate = 0.0
    active = [j for j in jobs if j.T > 0]
    for j in jobs:
        if j.T <= 0:
            j.rate = 1.0
    used = {p: 0.0 for p in bw}
    while active:
        level = 1.0
        tight = None
        for p, cap in bw.items():
            want = sum(j.demand.get(p, 0.0) for j in active)
            if want <= 0:
                continue
            lv = (cap - used[p]) / want
            if lv < level:
                level, tight = max(lv, 0.0), p
        if tight is None:
            for j in active:
                j.rate = 1.0
            return
        frozen = [j for j in active if j.demand.get(tight, 0.0) > 0]
        for j in frozen:
            j.rate = level
            for p, d in j.demand.items():
                used[p] += d * level
        active = [j for j in active if j not in frozen]
