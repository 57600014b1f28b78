"""Ethos-U85 AXI read/write channels: the bandwidth one kind of transfer can reach on a memory, below the
memory's own bandwidth when its outstanding transactions or the channel's read buffers run out.

Sources (facts only): Vela 5.1's Regor ``ethos_u85_performance.cpp`` (``ChannelBW``, ``LookupChannel``,
``MeasureAccessCycles``: a memory's access time is the larger of all bytes / its bandwidth and, for each
channel, that channel's bytes / its channel bandwidth) and ``ethos_u85.cpp`` (``channelRBs``: read buffers
per channel of each configuration, ``arch.microarch.channel_rbs``); the parameters are vela.ini's
``Ethos_U85_SYS_*`` memory keys (burst length, latencies, ``max_reads``/``max_writes``, ``ports_used``).

A read channel reaches burst x min(read buffers / (burst / 16), max_reads x ports_used x 0.8) / read latency
x 0.8 bytes per cycle, the write channel burst x max_writes x ports_used x 0.8 / write latency x 0.8.
Simplified: a memory with no outstanding-transaction limit (``max_reads``/``max_writes`` 0) or no latency
has no channel limit (Regor would divide by zero there).
"""

from __future__ import annotations

#: Regor's MemChannel order, as ``arch.microarch.channel_rbs`` lists the read buffers; WRITE has none
READ_CHANNELS = ("MEM2MEM", "IFM_STREAM", "WEIGHT", "FAST_WEIGHT", "IFM", "SCALE")
#: the fraction of the outstanding transactions, and of the ideal rate, Regor assumes in use
_UTILISATION = 0.8
#: bytes per read-buffer word
_RB_WORD_BYTES = 16


def channel(op, tensor: str, direction: str) -> str | None:
    """The channel a transfer of ``tensor`` ("ifm", "ifm2", "weights", "scales", "ofm", "dma", ...) uses
    (Regor ``LookupChannel``): elementwise/RESIZE inputs and a second matrix input stream; weights by their
    format; writes share one channel; DMA reads are MEM2MEM.  ``None``: no channel limit known."""
    if direction == "w":
        return "WRITE"
    if tensor == "weights":
        return "FAST_WEIGHT" if getattr(op, "weight_format", "SWD") == "FWD" else "WEIGHT"
    if tensor == "scales":
        return "SCALE"
    if tensor == "dma":
        return "MEM2MEM"
    if tensor in ("ifm", "ifm2"):
        return "IFM_STREAM" if op.kind in ("ELEMENTWISE", "RESIZE") or tensor == "ifm2" else "IFM"
    return None


def channel_bandwidth(arch, mem, ch: str) -> float | None:
    """Bytes per NPU cycle channel ``ch`` reaches on memory ``mem`` (a ``MemoryTimingSpec``), before the
    memory's own bandwidth caps it; ``None`` when nothing limits it."""
    burst = max(int(mem.burst_length), 1)
    ports = max(int(getattr(mem, "ports_used", 1) or 1), 1)
    if ch == "WRITE":
        outstanding, latency, rb_limit = int(mem.max_writes), float(mem.write_latency), float("inf")
    else:
        outstanding, latency = int(mem.max_reads), float(mem.read_latency)
        rb_limit = arch.microarch.channel_rbs[READ_CHANNELS.index(ch)] / max(burst // _RB_WORD_BYTES, 1)
    if outstanding <= 0 or latency <= 0:
        return None
    transactions = min(rb_limit, outstanding * ports * _UTILISATION)
    return burst * transactions / latency * _UTILISATION


def limit_by_channels(model, op, transfers, cost: dict) -> dict:
    """``cost`` (port -> bytes at the port's full bandwidth) raised where one channel's bytes take longer at
    its channel bandwidth: the port then costs channel bytes x port bandwidth / channel bandwidth.
    ``transfers``: (tensor, direction, port, bytes as costed)."""
    per: dict = {}
    for tensor, direction, port, n in transfers:
        ch = channel(op, tensor, direction)
        if ch is not None and port is not None:
            per[(port, ch)] = per.get((port, ch), 0.0) + n
    out = dict(cost)
    for (port, ch), n in per.items():
        mem = model.memory_of(port)
        cbw = channel_bandwidth(model.arch, mem, ch) if mem is not None else None
        bw = model.ports[port].bw
        if cbw is not None and cbw < bw:
            out[port] = max(out.get(port, 0.0), n * bw / cbw)
    return out
