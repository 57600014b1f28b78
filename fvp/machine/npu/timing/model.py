"""The timing model of one NPU: its AXI ports from the system config, REGIONCFG, and per operation the job
the schedule runs (traffic per port with burst efficiency, compute cycles from the block geometry). The product
family (``arch.family``) gives the compute cycles of an operation's blocks, how many AXI ports reach a memory
(the Ethos-U85's ``ports_used``) and the per-channel bandwidth limits (the Ethos-U85's AXI channels)."""

from __future__ import annotations

from .adapter import port_timing
from .counters import finish
from .geometry import contiguous_run, kernel_geometry
from .records import KERNEL_KINDS, _EPS, OpTiming, StreamTiming
from .schedule import _Job, _Port, _by_port, attribute, simulate


#: the knobs of ``npu.timing_params`` (board YAML); a missing knob counts as 0
PARAM_NAMES = ("cmd_word_cycles", "op_setup_cycles", "dma_setup_cycles", "stream_setup_cycles")


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
        self._bursts = None  # the AXI limits (device.axi_bursts) the ports were made for
        self.ports = self._ports()
        self._qport = None  # the port the running stream's commands come through
        # what the results depend on besides the stream: equal signatures give equal timings
        self.signature = (arch.name, repr(system_config), repr(memory_mode), enabled,
                          tuple(sorted(self.params.items())))

    # ------------------------------------------------------------------ configuration
    def timing_adapters(self):
        """The timing adapters (``TimingAdaptersSpec``) the runners program for this system config and memory
        mode, or ``None`` (the ports then follow Vela's system config)."""
        sc, mode = self.system_config, self.memory_mode
        tas = getattr(sc, "timing_adapters", None) or {}
        return tas.get(getattr(mode, "name", None)) if mode is not None else None

    def _ports(self, bursts=None) -> list:
        """The two AXI ports. Behind a timing adapter (``timing_adapters``) a port's bandwidth and latencies are
        the adapter's (``adapter.port_timing``, for the NPU's bursts ``bursts``: per port (bytes, pending reads,
        pending writes), the core driver's 64-byte bursts when not given); otherwise Vela's memory timing."""
        width = self.arch.axi_width_bytes
        sc = self.system_config
        tas = self.timing_adapters()
        out = []
        for i in (0, 1):
            name = getattr(sc, f"axi{i}_port", None) if sc is not None else None
            mem = (sc.memories.get(name) if sc is not None and name else None)
            if mem is None:  # no system config: an ideal SRAM-like port
                out.append(_Port(i, name or f"AXI{i}", float(width), 0.0, 0.0, 32))
                continue
            bus = float(width * self.arch.family.memory_ports(mem))
            ta = getattr(tas, f"axi{i}", None) if tas is not None else None
            if ta is not None:
                txn, reads, writes = bursts[i] if bursts else (64, 0, 0)
                pt = port_timing(ta, bus, txn, reads, writes)
                out.append(_Port(i, name, pt.read_bw, pt.read_latency, pt.write_latency,
                                 max(int(mem.burst_length), 1), pt.write_bw))
                continue
            bw = max(float(mem.clock_scale) * bus, 1e-6)
            out.append(_Port(i, name, bw, float(mem.read_latency), float(mem.write_latency),
                             max(int(mem.burst_length), 1), bw))
        return out

    def port_rates(self) -> dict:
        """Per port (bytes per cycle read, written, read latency, write latency, ``TA0``/``TA1`` when the FVP's
        timing adapter sets them, else ``""``): what the profile reports."""
        tas = self.timing_adapters()
        return {p.index: (p.bw, p.write_bw or p.bw, p.read_latency, p.write_latency,
                          f"TA{p.index}" if getattr(tas, f"axi{p.index}", None) is not None else "")
                for p in self.ports}

    def memory_of(self, port: int):
        """The system config's timing spec of the memory behind AXI ``port`` (``None`` without one)."""
        sc = self.system_config
        return sc.memories.get(self.ports[port].name) if sc is not None and sc.memories else None

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
        bursts = device.axi_bursts() if device is not None and hasattr(device, "axi_bursts") else None
        if bursts != self._bursts and self.timing_adapters() is not None:
            self._bursts, self.ports = bursts, self._ports(bursts)
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
        total, stalls = simulate(self, operations, jobs, timings, start)
        attribute(timings, jobs, total)
        return finish(self, timings, total, stalls, qport.index, qsize)

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
        # the IFM block read and the OFM block write, apart (the U85's formulas take their |difference| or max, the
        # U55's their sum)
        comp = arch.family.compute_cycles(arch, op, geo, self._block_transfers(op, geo, region_port), scale_latency)
        t.compute_cycles, t.mac_cycles, t.ao_cycles, t.wd_cycles = (comp["total"], comp["mac"], comp["ao"],
                                                                    comp["wd"])
        # traffic: measured bytes x re-fetch of the block traversal, per port
        cost: dict = {}
        costed = []  # (tensor, direction, port, bytes at full-burst cost) for the product's channel limits

        def add(tensor, direction, port, n, eff):
            n = int(round(n))
            if port is None or n <= 0:
                return
            t.transfers.append((tensor, port, direction, n))
            c = n / eff * (self._write_factor(port) if direction == "w" else 1.0)
            cost[port] = cost.get(port, 0.0) + c
            costed.append((tensor, direction, port, c))

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
        cost = arch.family.limit_by_channels(self, op, costed, cost)
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
        costed = []  # (tensor, direction, port, bytes at full-burst cost) for the product's channel limits
        if n:
            if src is not None:
                t.transfers.append(("dma", src, "r", n))
                cost[src] = cost.get(src, 0.0) + n
                costed.append(("dma", "r", src, float(n)))
            if dst is not None:
                t.transfers.append(("dma", dst, "w", n))
                # U65 2-D/3-D DMA writes runs of LEN bytes; a 1-D DMA is one long run
                e = min(1.0, d.length / self.ports[dst].burst) if d.mode and d.length else 1.0
                w = n / max(e, _EPS) * self._write_factor(dst)
                cost[dst] = cost.get(dst, 0.0) + w
                costed.append(("dma", "w", dst, w))
        t.bytes_read, t.bytes_written = _by_port(t.transfers, "r"), _by_port(t.transfers, "w")
        cost = self.arch.family.limit_by_channels(self, rec.op, costed, cost)
        head = self.params["dma_setup_cycles"] + (self.ports[src].read_latency if src is not None else 0.0)
        tail = self.ports[dst].write_latency if dst is not None else 0.0
        return _Job(rec, t, True, head, tail, 0.0, cost)

    def _write_factor(self, port: int) -> float:
        """Writes cost this many read bytes of the port's budget (its read over its write bandwidth; 1 without a
        timing adapter, whose reads and writes share one bandwidth as in Vela)."""
        p = self.ports[port]
        return p.bw / p.write_bw if p.write_bw > 0 else 1.0

    def _efficiency(self, port, fm, block, read: bool) -> float:
        """Burst efficiency of moving ``fm`` block by block: a contiguous run shorter than the memory's burst
        length costs a whole burst (Vela's rule: Regor's ``ethos_u55_performance.cpp``)."""
        if port is None or fm is None:
            return 1.0
        burst = self.ports[port].burst
        run = contiguous_run(fm, block, self.arch.cores if not read else 1)
        return min(1.0, run / burst) if run > 0 else 1.0

    def _block_transfers(self, op, geo, region_port) -> tuple:
        """(cycles to fetch one IFM block, cycles to write one OFM block)."""
        ifm_c = ofm_c = 0.0
        e = max(op.ifm.bits // 8, 1)
        p = region_port(op.ifm.region)
        bh, bw, bd = geo["ifm_block"]
        if p is not None:
            port = self.ports[p]
            eff = self._efficiency(p, op.ifm, geo["ifm_block"], True)
            ifm_c = port.read_latency + bh * bw * bd * e / eff / port.bw
        p = region_port(op.ofm.region)
        if p is not None:
            port = self.ports[p]
            oh, ow, od = geo["ofm_block"]
            eff = self._efficiency(p, op.ofm, geo["ofm_block"], False)
            ofm_c = port.write_latency + oh * ow * od * max(op.ofm.bits // 8, 1) / eff / (port.write_bw or port.bw)
        return ifm_c, ofm_c

    # ------------------------------------------------------------------ event simulation
