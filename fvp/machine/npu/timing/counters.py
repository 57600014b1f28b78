"""The PMU events of one command stream: AXI beats and transactions per port and direction, MAC/AO/WD active
cycles, stalls on BLOCKDEP and SHRAM reconfiguration (event numbers from hwdesc/ethosu.py); time-based events
(CYCLE, NPU_ACTIVE, NPU_IDLE) are the PMU's own business (``npu/pmu.py``)."""

from __future__ import annotations

import math

from hwdesc.ethosu import PMU_AXI_EVENT_BASE as _AXI_BASE, PMU_EVENT as _EV

from .geometry import _cdiv
from .records import KERNEL_KINDS, _EPS, StreamTiming

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


def finish(model, timings, total: float, stalls: tuple, qport: int, qsize: int) -> StreamTiming:
    width = model.arch.axi_width_bytes
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
        rd_trans[qport] += _cdiv(qsize, model.ports[qport].burst)
    ev: dict = {}
    mac = {8: 0.0, 16: 0.0, 32: 0.0}
    ao = {8: 0.0, 16: 0.0}
    wd = 0.0
    for tm in timings:
        # a beat carries at most one AXI width of one transfer: each tensor's bytes round up on their own
        for _, p, d, n in tm.transfers:
            b = _cdiv(n, width)
            trans = _cdiv(n, model.ports[p].burst)
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
                        ports={p.index: p.name for p in model.ports}, bytes_read=rd, bytes_written=wr,
                        command_bytes=qsize, port_timing=model.port_rates())
