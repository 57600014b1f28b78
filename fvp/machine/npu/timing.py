"""Ethos-U55/U65 timing model: how many NPU cycles one command stream takes, where they go, and the PMU counts.

What it models (docs/timing.md has the full description, the parameters and the validation):

* **Kernel operations** (CONV, DEPTHWISE, POOL, ELEMENTWISE) are walked block by block, with the OFM block the
  stream itself programs (``NPU_SET_OFM_BLK_*``).  Per block: the MAC array's cycles (micro-blocks of the
  variant, sub-kernels of at most 8x8, depth-first vs part-kernel traversal, IFM block depth, the weight-buffer
  floor of 32 cycles per 8 OFM channels, the accumulator delay for single-micro-block work), the output/
  activation stage's cycles (the per-element tables of ``arch.py``; at least the block's scale fetch), and a
  command-issue floor from the block's own memory transfers.  MAC and AO stages form a two-stage pipeline.
* **Memory traffic** starts from the bytes the functional engine measured (``OpRecord``), scaled by what the
  block traversal re-fetches: the IFM halo between blocks, the IFM once per OFM depth block (convolution),
  the weights and scales once per spatial OFM block.  Each region goes to the AXI port its REGIONCFG field
  selects (0/1 -> AXI0, 2/3 -> AXI1), each port to the memory the system config names (``axi0_port``/
  ``axi1_port``), with that memory's bandwidth (``clock_scale`` x AXI width), read/write latency and burst
  length (a transfer whose contiguous run is shorter than ``burst_length`` costs a whole burst).  The command
  stream is fetched through the port QCONFIG selects.
* **Concurrency**: an event-driven simulation of the command processor (one command word per
  ``cmd_word_cycles``, no faster than its port delivers 4 bytes), the kernel pipeline and the DMA engine.
  DMAs run alongside kernels (weight prefetch under the previous operation); ``DMA_WAIT``/``KERNEL_WAIT``
  stall the command processor; at most ``max_outstanding_kernels`` kernels and ``max_outstanding_dma`` DMAs
  are in flight; ``BLOCKDEP`` > 0 with an unchanged SHRAM layout lets an operation's start-up overlap the
  previous one's drain.  Jobs that run at the same time share each port's bandwidth (max-min fair).
* **PMU**: AXI beats (bytes / AXI width, per tensor transfer) and transactions per port and direction,
  MAC/AO/WD active cycles, cycles stalled on BLOCKDEP or a SHRAM reconfiguration; time-based events (CYCLE,
  NPU_ACTIVE, NPU_IDLE) are the PMU's own business (``pmu.py``).

Sources (facts only): research/ethosu.md sections 4 (configurations, cycle tables, block fitting), 5 (Vela's
estimator: Regor's per-block MAC cycles, AO cost, burst efficiency, memory terms, DMA/weight prefetch) and 6
(PMU events, beats per AXI width, REGIONCFG); Vela's ``npu_performance.py`` and Regor's
``ethos_u55_performance.cpp`` for the same formulas.

Simplified: fixed costs per operation/DMA/stream are board parameters (``npu.timing_params``) with no public
figures behind them; no SHRAM bank conflicts, AXI outstanding-transaction limits or timing-adapter pulse
shaping; reads and writes of a port share one bandwidth budget (as in Vela); the command fetch does not
compete with other traffic; the weight decoder is the MAC formula's weight-buffer floor, not a decode rate; a
port's latency is paid once at the start (reads) and end (writes) of an operation, double buffering hides the
rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hwdesc.ethosu import PMU_AXI_EVENT_BASE as _AXI_BASE, PMU_EVENT as _EV

# PMU hardware event numbers (hwdesc/ethosu.py); an AXI1 event is _AXI_BASE[1] + the AXI0 event's offset
(EV_CC_STALLED_ON_BLOCKDEP, EV_CC_STALLED_ON_SHRAM_RECONFIG, EV_MAC_ACTIVE, EV_MAC_ACTIVE_8BIT, EV_MAC_ACTIVE_16BIT,
 EV_MAC_DPU_ACTIVE, EV_MAC_ACTIVE_32BIT, EV_AO_ACTIVE, EV_AO_ACTIVE_8BIT, EV_AO_ACTIVE_16BIT, EV_WD_ACTIVE) = (
    _EV.value(n) for n in ("CC_STALLED_ON_BLOCKDEP", "CC_STALLED_ON_SHRAM_RECONFIG", "MAC_ACTIVE", "MAC_ACTIVE_8BIT",
                           "MAC_ACTIVE_16BIT", "MAC_DPU_ACTIVE", "MAC_ACTIVE_32BIT", "AO_ACTIVE", "AO_ACTIVE_8BIT",
                           "AO_ACTIVE_16BIT", "WD_ACTIVE"))
(_RD_TRANS_ACCEPTED, _RD_TRANS_COMPLETED, _RD_BEATS, _WR_TRANS_ACCEPTED, _WR_TRANS_COMPLETED_M, _WR_TRANS_COMPLETED_S,
 _WR_BEATS, _ENABLED_CYCLES) = (_EV.value("AXI0_" + n) - _AXI_BASE[0] for n in (
    "RD_TRANS_ACCEPTED", "RD_TRANS_COMPLETED", "RD_DATA_BEAT_RECEIVED", "WR_TRANS_ACCEPTED", "WR_TRANS_COMPLETED_M",
    "WR_TRANS_COMPLETED_S", "WR_DATA_BEAT_WRITTEN", "ENABLED_CYCLES"))

KERNEL_KINDS = ("CONV", "DEPTHWISE", "POOL", "ELEMENTWISE")
_UNARY = ("ABS", "CLZ", "LRELU")
_SUBKERNEL = 8  # sub-kernel limit (height and width) of convolution, depthwise and pooling
_EPS = 1e-9

#: the knobs of ``npu.timing_params`` (board YAML); a missing knob counts as 0
PARAM_NAMES = ("cmd_word_cycles", "op_setup_cycles", "dma_setup_cycles", "stream_setup_cycles")


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _roundup(a: int, b: int) -> int:
    return _cdiv(a, b) * b


# ================================================================================================ records


@dataclass
class OpTiming:
    """Timing of one operation of the stream (one per ``OpRecord``, same order).

    ``start``/``end`` are NPU cycles from the stream start (for waits: the interval the command processor was
    stalled); ``cycles`` = ``end - start``; ``exclusive_cycles`` is this operation's share of the stream when
    every cycle is given to one operation (the oldest running kernel, else the running DMA, else nobody), so
    the shares of a stream add up to its total.  ``bound`` says what limited the operation's body: ``compute``,
    the name of a memory (``Sram``, ``OffChipFlash``, ``Dram`` ...), ``latency`` (fixed costs dominate) or ``-``.
    Bytes are per AXI port (0, 1) as the hardware moves them (re-fetches included); ``beats`` likewise.
    """

    index: int
    kind: str
    mnemonic: str
    offset: int
    start: float = 0.0
    end: float = 0.0
    exclusive_cycles: float = 0.0
    compute_cycles: float = 0.0  # MAC/AO pipeline over all blocks, no memory limits
    mac_cycles: float = 0.0
    ao_cycles: float = 0.0
    wd_cycles: float = 0.0
    memory_cycles: dict = field(default_factory=dict)  # port -> cycles at full bandwidth (burst efficiency in)
    body_cycles: float = 0.0  # the body as it ran (shared bandwidth), without fixed start/end costs
    fixed_cycles: float = 0.0  # setup + latencies
    bound: str = "-"
    macs: int = 0
    mac_utilisation: float = 0.0
    transfers: list = field(default_factory=list)  # (tensor, port, "r"/"w", bytes) as the hardware moves them
    bytes_read: dict = field(default_factory=dict)  # port -> bytes
    bytes_written: dict = field(default_factory=dict)
    beats_read: dict = field(default_factory=dict)
    beats_written: dict = field(default_factory=dict)
    blocks: int = 0
    ifm_bits: int = 0
    ofm_bits: int = 0
    ofm_shape: tuple | None = None
    kernel: tuple | None = None  # (h, w, stride_y, stride_x)

    @property
    def cycles(self) -> float:
        return self.end - self.start


@dataclass
class StreamTiming:
    """Timing of one command stream: ``total_cycles`` (NPU cycles from start to the completion IRQ), one
    :class:`OpTiming` per operation, ``events`` {PMU hardware event number: count} added when the stream
    completes, and per port the memory it reaches and the bytes moved."""

    total_cycles: int
    per_op: list = field(default_factory=list)
    events: dict = field(default_factory=dict)
    ports: dict = field(default_factory=dict)  # port -> memory name ("Sram", ...)
    bytes_read: dict = field(default_factory=dict)  # port -> bytes
    bytes_written: dict = field(default_factory=dict)
    command_bytes: int = 0
    enabled: bool = True

    def bytes_by_memory(self) -> dict:
        """{memory name: (bytes read, bytes written)} over both ports."""
        out: dict = {}
        for p, mem in self.ports.items():
            r, w = out.get(mem, (0, 0))
            out[mem] = (r + self.bytes_read.get(p, 0), w + self.bytes_written.get(p, 0))
        return out


# ================================================================================================ the model


class _Port:
    __slots__ = ("index", "name", "bw", "read_latency", "write_latency", "burst")

    def __init__(self, index, name, bw, read_latency, write_latency, burst):
        self.index = index
        self.name = name
        self.bw = bw
        self.read_latency = read_latency
        self.write_latency = write_latency
        self.burst = burst


class _Job:
    """A kernel operation or a DMA in the event simulation: head (fixed), body (compute + shared bandwidth),
    tail (fixed)."""

    __slots__ = ("rec", "timing", "is_dma", "head", "tail", "compute", "cost", "T", "demand", "phase",
                 "phase_end", "remaining", "rate", "start", "body_start", "body_end", "end", "blockdep", "shram")

    def __init__(self, rec, timing, is_dma, head, tail, compute, cost, blockdep=0):
        self.rec = rec
        self.timing = timing
        self.is_dma = is_dma
        self.head = head
        self.tail = tail
        self.compute = compute
        self.cost = {p: c for p, c in cost.items() if c > 0}  # port -> bytes at full-burst cost
        self.T = 0.0
        self.demand = {}
        self.phase = "issued"
        self.phase_end = 0.0
        self.remaining = 1.0
        self.rate = 0.0
        self.start = self.body_start = self.body_end = self.end = None
        self.blockdep = blockdep
        self.shram = None  # SHRAM layout (IB_END, AB_START, IFM2_IB_START) of a kernel operation


class TimingModel:
    """The timing model of one NPU: ``stream(ops, device)`` -> :class:`StreamTiming`.

    ``arch`` an :class:`~fvp.machine.npu.arch.NpuArch`; ``system_config`` a ``SystemConfigSpec`` (core clock, the
    memory behind each AXI port, per-memory clock scale, burst length, latencies); ``params`` the board's
    ``npu.timing_params``; ``memory_mode`` a ``MemoryModeSpec`` (REGIONCFG when the device gives none).
    ``enabled=False`` (``npu.timing: none``, the FVP's ``--fast``): every stream takes one cycle and counts no
    events.
    """

    def __init__(self, arch, system_config, memory_mode, enabled: bool = True, params: dict | None = None):
        self.arch = arch
        self.system_config = system_config
        self.memory_mode = memory_mode
        self.enabled = enabled
        params = dict(params or {})
        self.params = {k: float(params.get(k, 0) or 0) for k in PARAM_NAMES}
        self.ports = self._ports()
        self._qport = None  # the port the running stream's commands come through
        # what the results depend on besides the stream: equal signatures give equal timings
        self.signature = (arch.name, repr(system_config), repr(memory_mode), enabled,
                          tuple(sorted(self.params.items())))

    # ------------------------------------------------------------------ configuration
    def _ports(self) -> list:
        width = self.arch.axi_width_bytes
        sc = self.system_config
        out = []
        for i in (0, 1):
            name = getattr(sc, f"axi{i}_port", None) if sc is not None else None
            mem = (sc.memories.get(name) if sc is not None and name else None)
            if mem is None:  # no system config: an ideal SRAM-like port
                out.append(_Port(i, name or f"AXI{i}", float(width), 0.0, 0.0, 32))
                continue
            bw = max(float(mem.clock_scale) * width, 1e-6)
            out.append(_Port(i, name, bw, float(mem.read_latency), float(mem.write_latency),
                             max(int(mem.burst_length), 1)))
        return out

    def port_of_region(self, region: int, device=None) -> int | None:
        """AXI port (0/1) of a region via REGIONCFG; ``None`` for the internal SHRAM (region -1)."""
        if region is None or region < 0:
            return None
        if device is not None and hasattr(device, "regioncfg_of"):
            cfg = device.regioncfg_of(region)
        else:
            rc = tuple(getattr(self.memory_mode, "regioncfg", ()) or ())
            cfg = rc[region] if region < len(rc) else 0
        return 0 if cfg < 2 else 1

    # ------------------------------------------------------------------ entry point
    def stream(self, operations, device=None) -> StreamTiming:
        """Time the executed operations (``OpRecord`` list) of one command stream."""
        if not self.enabled:
            per_op = [OpTiming(index=i, kind=r.op.kind, mnemonic=r.op.mnemonic, offset=r.op.offset, macs=r.macs)
                      for i, r in enumerate(operations)]
            return StreamTiming(total_cycles=1, per_op=per_op, events={}, enabled=False,
                                ports={p.index: p.name for p in self.ports})
        region_port = (lambda r: self.port_of_region(r, device))
        jobs = []
        timings = []
        for i, rec in enumerate(operations):
            op = rec.op
            t = OpTiming(index=i, kind=op.kind, mnemonic=op.mnemonic, offset=op.offset, macs=int(rec.macs or 0))
            timings.append(t)
            if op.kind == "DMA":
                jobs.append(self._dma_job(rec, t, region_port))
            elif op.kind in KERNEL_KINDS:
                jobs.append(self._kernel_job(rec, t, region_port))
            else:
                jobs.append(None)
        # the command stream itself is fetched through the port QCONFIG selects
        qsize = int(getattr(device, "qsize", 0) or 0) if device is not None else 0
        qcfg = int(getattr(device, "qconfig", 2) if device is not None else 2) & 3
        qport = self.ports[0 if qcfg < 2 else 1]
        self._qport = qport if qsize else None
        start = self.params["stream_setup_cycles"] + (qport.read_latency if qsize else 0.0)
        total, stalls = self._simulate(operations, jobs, timings, start)
        self._attribute(timings, jobs, total)
        return self._finish(timings, total, stalls, qport.index, qsize)

    # ------------------------------------------------------------------ per-operation costs
    def _kernel_job(self, rec, t: OpTiming, region_port) -> _Job:
        op = rec.op
        arch = self.arch
        ofm = op.ofm
        t.ofm_shape = (ofm.height, ofm.width, ofm.depth)
        t.ifm_bits, t.ofm_bits = op.ifm.bits, ofm.bits
        if op.kernel is not None:
            t.kernel = (op.kernel.height, op.kernel.width, op.kernel.stride_y, op.kernel.stride_x)
        geo = kernel_geometry(arch, op)
        t.blocks = geo["blocks"]
        scale_latency = 0.0
        if op.scales:
            sp = region_port(op.scales[0].region)
            scale_latency = self.ports[sp].read_latency if sp is not None else 0.0
        comp = compute_cycles(arch, op, geo, self._block_memory(op, geo, region_port), scale_latency)
        t.compute_cycles, t.mac_cycles, t.ao_cycles, t.wd_cycles = (comp["total"], comp["mac"], comp["ao"],
                                                                    comp["wd"])
        # traffic: measured bytes x re-fetch of the block traversal, per port
        cost: dict = {}

        def add(tensor, direction, port, n, eff):
            n = int(round(n))
            if port is None or n <= 0:
                return
            t.transfers.append((tensor, port, direction, n))
            cost[port] = cost.get(port, 0.0) + n / eff

        br = rec.bytes_read
        ifm_port = region_port(op.ifm.region)
        add("ifm", "r", ifm_port, br.get("ifm", 0) * geo["ifm_refetch"],
            self._efficiency(ifm_port, op.ifm, geo["ifm_block"], read=True))
        if op.ifm2 is not None and br.get("ifm2", 0):
            p2 = region_port(op.ifm2.region)
            add("ifm2", "r", p2, br.get("ifm2", 0), self._efficiency(p2, op.ifm2, geo["ofm_block"], read=True))
        for key, ranges in (("weights", op.weights), ("scales", op.scales)):
            n = br.get(key, 0)
            if n and ranges:
                add(key, "r", region_port(ranges[0].region), n * geo["spatial_blocks"], 1.0)
        ofm_port = region_port(ofm.region)
        add("ofm", "w", ofm_port, rec.bytes_written.get("ofm", 0),
            self._efficiency(ofm_port, ofm, geo["ofm_block"], read=False))
        t.bytes_read, t.bytes_written = _by_port(t.transfers, "r"), _by_port(t.transfers, "w")
        # fixed costs: command processing, first reads' latency (IFM, weights), last write's latency
        head = self.params["op_setup_cycles"]
        lat = []
        if ifm_port is not None:
            lat.append(self.ports[ifm_port].read_latency)
        if op.weights:
            wp = region_port(op.weights[0].region)
            if wp is not None:
                lat.append(self.ports[wp].read_latency)
        head += max(lat) if lat else 0.0
        # the pipeline drain (the last block's second stage) and the last write's latency form the tail, which
        # the next operation may overlap (BLOCKDEP)
        tail = comp["fill"] + (self.ports[ofm_port].write_latency if ofm_port is not None else 0.0)
        job = _Job(rec, t, False, head, tail, comp["total"] - comp["fill"], cost, blockdep=op.blockdep)
        job.shram = (op.ifm_ib_end, op.ab_start, op.ifm2_ib_start)
        return job

    def _dma_job(self, rec, t: OpTiming, region_port) -> _Job:
        d = rec.op.dma
        n = int(rec.bytes_read.get("dma", 0))
        src = None if d.src_internal else region_port(d.src_region)
        dst = None if d.dst_internal else region_port(d.dst_region)
        cost = {}
        if n:
            if src is not None:
                t.transfers.append(("dma", src, "r", n))
                cost[src] = cost.get(src, 0.0) + n
            if dst is not None:
                t.transfers.append(("dma", dst, "w", n))
                # U65 2-D/3-D DMA writes runs of LEN bytes; a 1-D DMA is one long run
                e = min(1.0, d.length / self.ports[dst].burst) if d.mode and d.length else 1.0
                cost[dst] = cost.get(dst, 0.0) + n / max(e, _EPS)
        t.bytes_read, t.bytes_written = _by_port(t.transfers, "r"), _by_port(t.transfers, "w")
        head = self.params["dma_setup_cycles"] + (self.ports[src].read_latency if src is not None else 0.0)
        tail = self.ports[dst].write_latency if dst is not None else 0.0
        return _Job(rec, t, True, head, tail, 0.0, cost)

    def _efficiency(self, port, fm, block, read: bool) -> float:
        """Burst efficiency of moving ``fm`` block by block: a contiguous run shorter than the memory's burst
        length costs a whole burst (Vela's rule; research/ethosu.md 5.2)."""
        if port is None or fm is None:
            return 1.0
        burst = self.ports[port].burst
        run = contiguous_run(fm, block, self.arch.cores if not read else 1)
        return min(1.0, run / burst) if run > 0 else 1.0

    def _block_memory(self, op, geo, region_port) -> float:
        """Cycles to fetch one IFM block and write one OFM block (Regor's command-issue term)."""
        total = 0.0
        e = max(op.ifm.bits // 8, 1)
        p = region_port(op.ifm.region)
        bh, bw, bd = geo["ifm_block"]
        if p is not None:
            port = self.ports[p]
            eff = self._efficiency(p, op.ifm, geo["ifm_block"], True)
            total += port.read_latency + bh * bw * bd * e / eff / port.bw
        p = region_port(op.ofm.region)
        if p is not None:
            port = self.ports[p]
            oh, ow, od = geo["ofm_block"]
            eff = self._efficiency(p, op.ofm, geo["ofm_block"], False)
            total += port.write_latency + oh * ow * od * max(op.ofm.bits // 8, 1) / eff / port.bw
        return total

    # ------------------------------------------------------------------ event simulation
    def _simulate(self, records, jobs, timings, t0: float):
        """Event-driven run of the command processor (in-order issue, waits, outstanding limits), the kernel
        pipeline (one body at a time; BLOCKDEP overlap of drain and start-up) and the DMA engine (one job at a
        time); between events every job's body progresses at its bandwidth-shared rate."""
        arch = self.arch
        max_k = max(1, arch.max_outstanding_kernels)
        max_d = max(1, arch.max_outstanding_dma)
        bw = {p.index: p.bw for p in self.ports}
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
        cmd_c = max(self.params["cmd_word_cycles"], 4.0 / self._qport.bw if self._qport is not None else 0.0)
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
                    self._begin(dmas[d_next], t, live)
                    d_next += 1
                    changed = True
                # kernel pipeline: the next kernel starts when the previous is done, or already in its drain
                # (tail) when BLOCKDEP allows overlap and the SHRAM layout stays the same
                if k_next < len(kernels):
                    job = kernels[k_next]
                    prev = kernels[k_next - 1] if k_next else None
                    if prev is None or prev.phase == "done" or (
                            job.blockdep > 0 and prev.phase == "tail" and job.shram == prev.shram):
                        self._begin(job, t, live)
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
            tm.bound = self._bound(job)
            if tm.macs and tm.cycles > 0:
                tm.mac_utilisation = tm.macs / (tm.cycles * arch.total_macs)
        return t, (blockdep_stall, shram_stall)

    @staticmethod
    def _begin(job: _Job, now: float, live: list) -> None:
        job.start = now
        job.phase = "head"
        job.phase_end = now + job.head
        live.append(job)

    def _bound(self, job: _Job) -> str:
        parts = {"compute": job.compute}
        for p, c in job.cost.items():
            parts[self.ports[p].name] = max(parts.get(self.ports[p].name, 0.0), c / self.ports[p].bw)
        name, val = max(parts.items(), key=lambda kv: kv[1])
        if val <= 0 and job.head + job.tail <= 0:
            return "-"
        if job.head + job.tail > max(val, job.timing.body_cycles):
            return "latency"
        return name

    # ------------------------------------------------------------------ attribution and totals
    @staticmethod
    def _attribute(timings, jobs, total: float) -> None:
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
            owner = None
            for j in kern[ki:]:
                if j.start <= mid < j.end:
                    owner = j
                    break
                if j.start > mid:
                    break
            if owner is None:
                for j in dmas[di:]:
                    if j.start <= mid < j.end:
                        owner = j
                        break
                    if j.start > mid:
                        break
            if owner is not None:
                owner.timing.exclusive_cycles += b - a

    def _finish(self, timings, total: float, stalls: tuple, qport: int, qsize: int) -> StreamTiming:
        width = self.arch.axi_width_bytes
        total_cycles = max(1, int(math.ceil(total - _EPS)))
        rd = {0: 0, 1: 0}
        wr = {0: 0, 1: 0}
        rd_beats = {0: 0, 1: 0}
        wr_beats = {0: 0, 1: 0}
        rd_trans = {0: 0, 1: 0}
        wr_trans = {0: 0, 1: 0}
        if qsize:
            rd[qport] += qsize
            rd_beats[qport] += _cdiv(qsize, width)
            rd_trans[qport] += _cdiv(qsize, self.ports[qport].burst)
        ev: dict = {}
        mac = {8: 0.0, 16: 0.0, 32: 0.0}
        ao = {8: 0.0, 16: 0.0}
        wd = 0.0
        for tm in timings:
            # a beat carries at most one AXI width of one transfer: each tensor's bytes round up on their own
            for _, p, d, n in tm.transfers:
                b = _cdiv(n, width)
                trans = _cdiv(n, self.ports[p].burst)
                if d == "r":
                    rd[p] += n
                    tm.beats_read[p] = tm.beats_read.get(p, 0) + b
                    rd_beats[p] += b
                    rd_trans[p] += trans
                else:
                    wr[p] += n
                    tm.beats_written[p] = tm.beats_written.get(p, 0) + b
                    wr_beats[p] += b
                    wr_trans[p] += trans
            if tm.kind in KERNEL_KINDS:
                mb = 8 if tm.ifm_bits <= 8 else 16 if tm.ifm_bits <= 16 else 32
                mac[mb] += min(tm.mac_cycles, tm.cycles)
                ab = 8 if tm.ofm_bits <= 8 else 16
                ao[ab] += min(tm.ao_cycles, tm.cycles)
                wd += min(tm.wd_cycles, tm.cycles)
        for p in (0, 1):
            base = _AXI_BASE[p]
            ev[base + _RD_BEATS] = rd_beats[p]
            ev[base + _WR_BEATS] = wr_beats[p]
            ev[base + _RD_TRANS_ACCEPTED] = ev[base + _RD_TRANS_COMPLETED] = rd_trans[p]
            ev[base + _WR_TRANS_ACCEPTED] = ev[base + _WR_TRANS_COMPLETED_M] = wr_trans[p]
            ev[base + _WR_TRANS_COMPLETED_S] = wr_trans[p]
            ev[base + _ENABLED_CYCLES] = total_cycles
        mac_total = sum(mac.values())
        ev[EV_MAC_ACTIVE] = int(round(mac_total))
        ev[EV_MAC_DPU_ACTIVE] = int(round(mac_total))
        ev[EV_MAC_ACTIVE_8BIT] = int(round(mac.get(8, 0.0)))
        ev[EV_MAC_ACTIVE_16BIT] = int(round(mac.get(16, 0.0)))
        ev[EV_MAC_ACTIVE_32BIT] = int(round(mac.get(32, 0.0)))
        ev[EV_AO_ACTIVE] = int(round(sum(ao.values())))
        ev[EV_AO_ACTIVE_8BIT] = int(round(ao.get(8, 0.0)))
        ev[EV_AO_ACTIVE_16BIT] = int(round(ao.get(16, 0.0)))
        ev[EV_WD_ACTIVE] = int(round(wd))
        ev[EV_CC_STALLED_ON_BLOCKDEP] = int(round(stalls[0]))
        ev[EV_CC_STALLED_ON_SHRAM_RECONFIG] = int(round(stalls[1]))
        return StreamTiming(total_cycles=total_cycles, per_op=timings, events=ev,
                            ports={p.index: p.name for p in self.ports}, bytes_read=rd, bytes_written=wr,
                            command_bytes=qsize)


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


# ================================================================================================ geometry


def _axis_blocks(n: int, b: int) -> list:
    """[(block size, count)] along one axis of length ``n`` with blocks of ``b``."""
    b = max(1, min(b, n))
    full, rem = divmod(n, b)
    out = [(b, full)] if full else []
    if rem:
        out.append((rem, 1))
    return out


def _fetched(out_len: int, blk: int, stride: int, k: int, dil: int, pad: int, in_len: int) -> int:
    """Input rows (or columns) fetched over all blocks of one axis: each block reads its window (halo
    included, padding not fetched), once per sub-kernel of at most 8 taps."""
    total = 0
    blk = max(1, min(blk, out_len))
    for ks in range(0, max(k, 1), _SUBKERNEL):
        ksub = min(_SUBKERNEL, k - ks)
        span = (ksub - 1) * dil + 1
        o = 0
        while o < out_len:
            e = min(o + blk, out_len)
            lo = o * stride - pad + ks * dil
            hi = (e - 1) * stride - pad + ks * dil + span
            total += max(0, min(hi, in_len) - max(lo, 0))
            o = e
    return total


def ifm_block_depth(arch, op) -> int:
    """IFM depth the MAC array consumes per pass (research/ethosu.md 4: 8-bit part-kernel 16, depth-first 32,
    rounded to the IFM micro-block; 16-bit min(depth, 16) rounded to 4); depthwise/pooling: the OFM block."""
    d = max(op.ifm.depth, 1)
    if op.kind in ("DEPTHWISE", "ELEMENTWISE") or (op.kind == "POOL" and op.sub_op != "REDUCE_SUM"):
        return max(1, min(op.ofm_block[2], op.ofm.depth))
    if op.ifm.bits >= 16:
        return _roundup(min(d, 16), 4)
    limit = 16 if op.kernel is not None and op.kernel.part_kernel_first else 32
    return _roundup(min(d, limit), arch.ifm_ublock_depth)


def micro_block(arch, op) -> tuple:
    """The OFM micro-block (h, w, c); Regor's 1-D case: a 2-high micro-block becomes 1x4 for a convolution
    with OFM height 1, even OFM width and kernel height 1."""
    uh, uw, uc = arch.ofm_ublock
    if (uh == 2 and op.kind == "CONV" and op.ofm.height == 1 and op.ofm.width % 2 == 0
            and op.kernel is not None and op.kernel.height == 1):
        return (1, 4, uc)
    return (uh, uw, uc)


def kernel_geometry(arch, op) -> dict:
    """Block traversal of a kernel operation: OFM block (clipped), block groups, counts, IFM re-fetch."""
    ofm = op.ofm
    oh, ow, od = max(ofm.height, 1), max(ofm.width, 1), max(ofm.depth, 1)
    bh, bw, bd = op.ofm_block or (oh, ow, od)
    bh, bw, bd = min(bh, oh), min(bw, ow), min(bd, od)
    ys, xs, zs = _axis_blocks(oh, bh), _axis_blocks(ow, bw), _axis_blocks(od, bd)
    groups = [((h, w, c), nh * nw * nc) for h, nh in ys for w, nw in xs for c, nc in zs]
    spatial = sum(n for _, n in ys) * sum(n for _, n in xs)
    depth_blocks = sum(n for _, n in zs)
    k = op.kernel
    ifm = op.ifm
    if op.kind == "ELEMENTWISE" or k is None:
        refetch = 1.0
        ifm_blk = (bh, bw, bd)
    else:
        ih, iw = max(ifm.height, 1), max(ifm.width, 1)
        rows = _fetched(oh, bh, k.stride_y, k.height, k.dilation_y, k.pad_top, ih)
        cols = _fetched(ow, bw, k.stride_x, k.width, k.dilation_x, k.pad_left, iw)
        refetch = rows * cols / float(ih * iw)
        if op.kind == "CONV" or (op.kind == "POOL" and op.sub_op == "REDUCE_SUM"):
            refetch *= depth_blocks
        ibh = min((bh - 1) * k.stride_y + min(k.dilated_height, _SUBKERNEL * k.dilation_y), ih)
        ibw = min((bw - 1) * k.stride_x + min(k.dilated_width, _SUBKERNEL * k.dilation_x), iw)
        ifm_blk = (max(ibh, 1), max(ibw, 1), ifm_block_depth(arch, op))
    return {"ofm_block": (bh, bw, bd), "groups": groups, "blocks": sum(n for _, n in groups),
            "spatial_blocks": spatial, "depth_blocks": depth_blocks, "ifm_refetch": refetch, "ifm_block": ifm_blk}


def contiguous_run(fm, block, cores: int = 1) -> int:
    """Bytes the NPU moves in one contiguous run when it reads/writes ``block`` (h, w, c) of ``fm``: NHWC
    rows of ``w x C`` when the block spans the whole depth, else ``c`` channels; NHCWB16 16-channel bricks of
    ``w`` pixels (the whole row of bricks when the block spans the full width)."""
    _, bw, bc = block
    e = max(fm.bits // 8, 1)
    if fm.format == "NHCWB16":
        if bw >= fm.width:
            return 16 * fm.width * e * _cdiv(max(bc, 1), 16)
        return 16 * bw * e * max(cores, 1)
    if bc >= fm.depth:
        return bw * fm.depth * e
    return bc * e


# ================================================================================================ compute


def ao_cycles_per_element(arch, op) -> float:
    """Output/activation stage cycles per OFM element: max(output table[idx], activation table[act])
    (research/ethosu.md 4; Regor's index rules)."""
    out = arch.output_cycles_per_elem
    act_t = arch.activation_cycles_per_elem
    kind, sub = op.kind, op.sub_op
    if kind == "ELEMENTWISE" and op.ifm.bits == 32:
        idx = 0 if sub in _UNARY else 1
    elif sub == "MUL" and op.ofm.bits == 32:
        idx = 2
    elif sub == "MUL" or (kind != "ELEMENTWISE" and op.acc_format == "I40"):
        idx = 3
    elif sub in ("ADD", "SUB"):
        idx = 5
    elif kind == "POOL" and sub == "MAX":
        idx = 6
    else:
        idx = 7
    a = op.activation
    if a is not None and (a.table is not None or a.function in (3, 4)):
        aidx = 0
    elif a is not None and (a.min > op.ofm.min_value or a.max < op.ofm.max_value):
        aidx = 1  # a clamp narrower than the OFM type: a fused ReLU-family activation
    else:
        aidx = 2
    return max(out[idx], act_t[aidx])


def mac_cycles_per_block(arch, op, block: tuple) -> tuple:
    """(MAC cycles, weight-buffer cycles) of one OFM block (h, w, c) of a CONV/DEPTHWISE/POOL operation
    (Regor's per-block model, ``ethos_u55_performance.cpp`` ``EstimateMacCyclesPerBlock``, research/ethosu.md
    5.2 steps 2-6, pooling included)."""
    kind = op.kind
    ub = micro_block(arch, op)
    nh, nw, nc = (_cdiv(block[0], ub[0]), _cdiv(block[1], ub[1]), _cdiv(block[2], ub[2]))
    nhw = nh * nw
    cycles_wb = 32 * ub[2] // 8
    bits = op.ifm.bits
    acc40 = op.acc_format == "I40"
    reduce_sum = kind == "POOL" and op.sub_op == "REDUCE_SUM"
    conv_like = kind == "CONV" or reduce_sum
    part_kernel = kind == "CONV" and op.kernel.part_kernel_first
    ibd = ifm_block_depth(arch, op)
    u55_32 = arch.is_u55 and arch.macs == 32
    k = op.kernel
    total = 0
    wb_total = 0
    for y in range(0, k.height, _SUBKERNEL):
        for x in range(0, k.width, _SUBKERNEL):
            elems = min(_SUBKERNEL, k.height - y) * min(_SUBKERNEL, k.width - x)
            wb = 0
            if kind == "POOL" and not reduce_sum:
                # Regor: max(4, k) cycles per micro-block, times ifm_bits / 2 except on U55-32 (4 for 8-bit)
                steps = 1
                cyc = max(4, elems) * nhw * nc
                if not u55_32:
                    cyc *= bits // 2
            elif kind == "DEPTHWISE":
                steps = _cdiv(elems, 4)
                per = 4 * nhw * max(bits // 8, 1)
                cyc = max(cycles_wb, per) * steps * nc
                wb = cycles_wb * steps * nc
            elif conv_like and not part_kernel:
                steps = elems
                cyc = max(cycles_wb, 4 * nhw) * steps * nc
                wb = 0 if reduce_sum else cycles_wb * steps * nc
            else:
                steps = _cdiv(elems, 2 if bits == 16 else 4)
                cyc = max(cycles_wb, 4 * nhw) * steps * nc * _cdiv(ibd, 8)
                wb = cycles_wb * steps * nc * _cdiv(ibd, 8)
            delay = 0
            if u55_32:
                d = 7 if acc40 else 3
                if nhw == 1:
                    if nc == 1:
                        delay = d * steps
                    elif steps > 1:
                        delay = d * (steps - 1) * nc
                if (nw == 1 or nh == 1) and nc > 1 and acc40:
                    delay += d * nc
            else:
                d = 3 if (acc40 and arch.macs <= 128) else 2
                if nhw == 1:
                    if nc == 1:
                        delay = d * steps
                    elif steps > 1:
                        delay = d * (steps - 1) * nc
            if part_kernel:
                delay *= _cdiv(ibd, 8)
            total += cyc + delay
            wb_total += wb
    if conv_like:
        passes = _cdiv(max(op.ifm.depth, 1), ibd)
        total *= passes
        wb_total *= passes
    cores = max(op.cores, 1)
    return total / cores, wb_total / cores


def compute_cycles(arch, op, geo: dict, block_memory_cycles: float = 0.0, scale_latency: float = 0.0) -> dict:
    """MAC/AO pipeline over all blocks: per block M (MAC) and A (AO) stages, each at least Regor's
    command-issue floor (block memory + M + A) / 4, and A at least the block's scale/bias fetch
    (10 x block depth x the scales' read latency / 256, Regor); blocks flow through the two stages, so the
    operation takes sum(max(M, A)) + min(M, A) of the first block.  Returns total, fill (that last term), mac,
    ao and wd (weight buffer) cycles."""
    ao_pe = ao_cycles_per_element(arch, op)
    uses_macs = op.kind in ("CONV", "DEPTHWISE", "POOL")
    nhcwb16_ew = op.kind == "ELEMENTWISE" and op.ofm.is_nhcwb16
    total = mac_sum = ao_sum = wd_sum = 0.0
    fill = None
    for (h, w, c), count in geo["groups"]:
        if uses_macs:
            m, wb = mac_cycles_per_block(arch, op, (h, w, c))
        else:
            m, wb = 0.0, 0.0
        elems = h * w * (_roundup(c, 16) if nhcwb16_ew else c)
        a = math.ceil(ao_pe * elems)
        if op.kind in ("CONV", "DEPTHWISE") and scale_latency > 0:
            a = max(a, 10.0 * c * scale_latency / 256.0)
        cmd = (block_memory_cycles + m + a) / 4.0
        ms, as_ = max(m, cmd) if uses_macs else 0.0, max(a, cmd)
        total += count * max(ms, as_)
        mac_sum += count * m
        ao_sum += count * a
        wd_sum += count * wb
        if fill is None:
            fill = min(ms, as_) if uses_macs else 0.0
    total += fill or 0.0
    return {"total": total, "fill": fill or 0.0, "mac": mac_sum, "ao": ao_sum, "wd": wd_sum}
