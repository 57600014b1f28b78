"""The Corstone-300 FVP's Ethos-U timing adapters (TA0 on AXI0, TA1 on AXI1) as a port's sustained bandwidth.

On the FVP the memories have no timing of their own: the two timing adapters between the NPU's AXI ports and the
memories add it, with the settings the firmware programs at boot (MLEK ``docs/sections/timing_adapters.md`` and
``scripts/cmake/timing_adapter/ta_config_*.cmake``, ExecuTorch ``backends/arm/scripts/corstone_utils.cmake``; the
values per system config and memory mode are in ``fvp/boards/vela.yaml``). What a setting does (the same document):

- ``RLATENCY``/``WLATENCY``: the minimum latency of a read (address to data) and of a write (last data to response);
- ``MAXR``/``MAXW``/``MAXRW``: the pending reads/writes/both allowed (0: no limit);
- ``PULSE_ON``/``PULSE_OFF``: a pulse period in which addresses are let through for ``PULSE_ON`` cycles, then blocked;
- ``BWCAP``: 64-bit words per pulse period, counted per transaction: "once the counter has reached or exceeded the
  configured cap, no transactions will be allowed before the next pulse cycle", so a period lets through
  ``ceil(BWCAP / words per transaction)`` whole transactions, which can be more than ``BWCAP`` words.

The NPU's transactions are bursts of at most ``AXI_LIMITn.max_beats`` bytes (64 with the core driver's defaults,
``ethosu_config_u55.h``/``ethosu_config_u65.h``), with at most ``AXI_LIMITn.max_outstanding_read_m1 + 1`` reads
pending. A port then sustains the least of:

- the bus: its width in bytes per cycle;
- the cap: ``ceil(BWCAP / (T / 8)) x T / (PULSE_ON + PULSE_OFF)`` bytes per cycle for transactions of ``T`` bytes;
- the pending limit (Little's law): ``n x T / (latency + beats)``, with ``n`` the lower of the TA's and the NPU's
  limit, each transaction holding its slot for the latency plus its data beats;
- the pulse: only ``n x ceil(PULSE_ON / (latency + beats))`` transactions start while addresses are let through.

For the Ethos_U55_High_End_Embedded TA1 (``MAXR`` 2, ``RLATENCY`` 64, 320/80, ``BWCAP`` 50) with 64-byte bursts:
7 transactions of 8 words per 400 cycles, 1.12 bytes per cycle, where Vela's system config (and the TA's nominal
50 words) says 1.0; TA0 (4000 words per 4000 cycles) gives the SRAM bus's 8 bytes per cycle, as Vela's.

Simplified: the averages over a pulse period, not the period's phase (the first transactions of a short transfer
may wait for the next period on the FVP); every transfer is taken as whole ``T``-byte transactions (the burst
efficiency of short runs is the timing model's, ``model.TimingModel._efficiency``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

#: the bytes of a burst for each value of ``AXI_LIMITn.max_beats`` (``ethosu.h``/the interface headers: 0 = 64 B,
#: 1 = 128 B, 2 = 256 B)
MAX_BEATS_BYTES = (64, 128, 256, 256)
#: the TA counts its bandwidth cap in 64-bit words (MLEK ``timing_adapters.md``: "BWCAP: Maximum number of 64-bit
#: words transferred per pulse cycle")
TA_WORD_BYTES = 8


class PortTiming(NamedTuple):
    """What a timing adapter leaves of a port: bytes per cycle read and written, latencies in cycles."""

    read_bw: float
    write_bw: float
    read_latency: float
    write_latency: float


def _limit(*values: int) -> float:
    """The lowest of the non-zero limits (0: no limit), ``inf`` if none."""
    finite = [v for v in values if v]
    return float(min(finite)) if finite else math.inf


def _direction_bw(ta, pending: float, latency: float, txn: int, bus: float) -> float:
    beats = txn / bus
    hold = latency + beats  # cycles a transaction keeps its pending slot
    bw = bus
    if pending != math.inf:
        bw = min(bw, pending * txn / hold)
    period = ta.pulse_on + ta.pulse_off
    if period > 0:
        per_period = math.inf
        if ta.bwcap:
            words = max(1, txn // TA_WORD_BYTES)
            per_period = math.ceil(ta.bwcap / words)
        if ta.pulse_off and pending != math.inf:
            per_period = min(per_period, pending * math.ceil(ta.pulse_on / hold))
        if per_period != math.inf:
            bw = min(bw, per_period * txn / period)
    return max(bw, 1e-6)


def port_timing(ta, bus_bytes: float, txn_bytes: int = 64, npu_reads: int = 0, npu_writes: int = 0) -> PortTiming:
    """The port behind timing adapter ``ta`` (a ``TimingAdapterSpec``): ``bus_bytes`` its width per cycle,
    ``txn_bytes`` the NPU's burst, ``npu_reads``/``npu_writes`` the NPU's own pending limits (0: none)."""
    reads = _limit(ta.maxr, ta.maxrw, npu_reads)
    writes = _limit(ta.maxw, ta.maxrw, npu_writes)
    return PortTiming(_direction_bw(ta, reads, float(ta.rlatency), txn_bytes, bus_bytes),
                      _direction_bw(ta, writes, float(ta.wlatency), txn_bytes, bus_bytes),
                      float(ta.rlatency), float(ta.wlatency))
