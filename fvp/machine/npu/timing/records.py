"""What the timing model reports: ``OpTiming`` per operation and ``StreamTiming`` per command stream."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..descriptors import KERNEL_KINDS  # noqa: F401  (the operations that run on the MAC array and output stage)

_EPS = 1e-9  # shared tolerance of the timing arithmetic


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
    # port -> (bytes per cycle read, written, read latency, write latency, "TA0"/"TA1" when a timing adapter sets
    # them, else "" for Vela's memory timing)
    port_timing: dict = field(default_factory=dict)

    def bytes_by_memory(self) -> dict:
        """{memory name: (bytes read, bytes written)} over both ports."""
        out: dict = {}
        for p, mem in self.ports.items():
            r, w = out.get(mem, (0, 0))
            out[mem] = (r + self.bytes_read.get(p, 0), w + self.bytes_written.get(p, 0))
        return out
