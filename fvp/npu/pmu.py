"""The Ethos-U PMU: a 48-bit cycle counter with start/stop events and four 32-bit event counters (U55/U65).

Registers (``ethosu55_interface.h``; research/ethosu.md 6): PMCR 0x180 ([0] cnt_en, [1] event_cnt_rst,
[2] cycle_cnt_rst, [3] mask_en, [15:11] num_event_cnt), PMCNTENSET/CLR 0x184/0x188 (bit i = event counter i,
bit 31 = cycle counter), PMOVSSET/CLR 0x18C/0x190, PMINTSET/CLR 0x194/0x198, PMCCNTR 0x1A0/0x1A4,
PMCCNTR_CFG 0x1A8 ([9:0] start event, [25:16] stop event), PMCAXI_CHAN 0x1AC, PMEVCNTR0..3 0x300..0x30C,
PMEVTYPER0..3 0x380..0x38C.

Counting: time-based events (CYCLE, NPU_IDLE, NPU_ACTIVE and the cycle counter) accumulate from simulated time
at the NPU clock, split into the intervals where a command stream runs and where the NPU is idle; traffic and
unit events (AXI beats, MAC_ACTIVE, ...) come from the timing model's per-stream totals and are added when the
stream completes. The cycle counter with start event NPU_ACTIVE and stop event NPU_IDLE (what ExecuTorch's
perf monitor programs) counts the NPU's active cycles; with no start event it counts every enabled cycle.
Simplified: PMCAXI_CHAN filtering, overflow interrupts and NPU_OP_PMU_MASK gating are stored, not modelled.
"""

from __future__ import annotations

PMCR, PMCNTENSET, PMCNTENCLR, PMOVSSET, PMOVSCLR, PMINTSET, PMINTCLR = 0x180, 0x184, 0x188, 0x18C, 0x190, 0x194, 0x198
PMCCNTR_LO, PMCCNTR_HI, PMCCNTR_CFG, PMCAXI_CHAN = 0x1A0, 0x1A4, 0x1A8, 0x1AC
PMEVCNTR0, PMEVTYPER0 = 0x300, 0x380

# Hardware event numbers (research/ethosu.md 6)
NO_EVENT = 0x00
CYCLE = 0x11
NPU_IDLE = 0x20
NPU_ACTIVE = 0x23
MAC_ACTIVE = 0x30
AXI0_RD_DATA_BEAT_RECEIVED = 0x82
AXI0_WR_DATA_BEAT_WRITTEN = 0x87
AXI1_RD_DATA_BEAT_RECEIVED = 0x182
AXI1_WR_DATA_BEAT_WRITTEN = 0x187

EVENT_NAMES = {
    NO_EVENT: "NO_EVENT", CYCLE: "CYCLE", NPU_IDLE: "NPU_IDLE", 0x21: "CC_STALLED_ON_BLOCKDEP",
    0x22: "CC_STALLED_ON_SHRAM_RECONFIG", NPU_ACTIVE: "NPU_ACTIVE", MAC_ACTIVE: "MAC_ACTIVE",
    0x31: "MAC_ACTIVE_8BIT", 0x32: "MAC_ACTIVE_16BIT", 0x33: "MAC_DPU_ACTIVE", 0x38: "MAC_ACTIVE_32BIT",
    0x40: "AO_ACTIVE", 0x41: "AO_ACTIVE_8BIT", 0x42: "AO_ACTIVE_16BIT", 0x50: "WD_ACTIVE",
    0x80: "AXI0_RD_TRANS_ACCEPTED", 0x81: "AXI0_RD_TRANS_COMPLETED", AXI0_RD_DATA_BEAT_RECEIVED: "AXI0_RD_DATA_BEAT_RECEIVED",
    0x84: "AXI0_WR_TRANS_ACCEPTED", 0x85: "AXI0_WR_TRANS_COMPLETED_M", AXI0_WR_DATA_BEAT_WRITTEN: "AXI0_WR_DATA_BEAT_WRITTEN",
    0x8C: "AXI0_ENABLED_CYCLES",
    0x180: "AXI1_RD_TRANS_ACCEPTED", 0x181: "AXI1_RD_TRANS_COMPLETED", AXI1_RD_DATA_BEAT_RECEIVED: "AXI1_RD_DATA_BEAT_RECEIVED",
    0x184: "AXI1_WR_TRANS_ACCEPTED", 0x185: "AXI1_WR_TRANS_COMPLETED_M", AXI1_WR_DATA_BEAT_WRITTEN: "AXI1_WR_DATA_BEAT_WRITTEN",
    0x18C: "AXI1_ENABLED_CYCLES",
}

_MASK32 = 0xFFFFFFFF
_MASK48 = (1 << 48) - 1


class Pmu:
    NUM_COUNTERS = 4

    def __init__(self, arch, device):
        self.arch = arch
        self.dev = device
        self.reset()

    def reset(self) -> None:
        self.pmcr = self.NUM_COUNTERS << 11
        self.cnten = 0
        self.ovs = 0
        self.inten = 0
        self.ccntr = 0
        self.ccntr_cfg = 0
        self.axi_chan = 0
        self.evcntr = [0] * self.NUM_COUNTERS
        self.evtype = [0] * self.NUM_COUNTERS
        self.last_sync_ps = self.dev.sim.now_ps if hasattr(self.dev, "sim") else 0
        self.active_from_ps = None  # start of the running stream, if any

    def handles(self, offset: int) -> bool:
        return 0x180 <= offset <= 0x1AC or 0x300 <= offset < 0x310 or 0x380 <= offset < 0x390

    # ------------------------------------------------------------------ time accounting
    def _cycles(self, ps: int) -> int:
        return (ps * self.dev.clock_hz) // 10 ** 12

    def sync(self) -> None:
        """Bring the time-based counters up to the current simulated time."""
        now = self.dev.sim.now_ps
        a = self.last_sync_ps
        self.last_sync_ps = now
        if now <= a or not self.pmcr & 1:
            return
        total = self._cycles(now) - self._cycles(a)
        active = 0
        if self.active_from_ps is not None:
            s = max(a, self.active_from_ps)
            if now > s:
                active = self._cycles(now) - self._cycles(s)
        idle = total - active
        self._add_time(total, active, idle)

    def _add_time(self, total: int, active: int, idle: int) -> None:
        per_event = {CYCLE: total, NPU_ACTIVE: active, NPU_IDLE: idle}
        for i in range(self.NUM_COUNTERS):
            if self.cnten & (1 << i) and self.evtype[i] in per_event:
                self.evcntr[i] = (self.evcntr[i] + per_event[self.evtype[i]]) & _MASK32
        if self.cnten & (1 << 31):
            start = self.ccntr_cfg & 0x3FF
            self.ccntr = (self.ccntr + (active if start == NPU_ACTIVE else total if start == NO_EVENT else
                                        per_event.get(start, active))) & _MASK48

    def stream_started(self, rec) -> None:
        self.sync()
        self.active_from_ps = rec.start_ps

    def stream_finished(self, rec) -> None:
        self.sync()
        self.active_from_ps = None
        if not self.pmcr & 1 or rec.timing is None:
            return
        events = getattr(rec.timing, "events", {}) or {}
        for i in range(self.NUM_COUNTERS):
            ev = self.evtype[i]
            if self.cnten & (1 << i) and ev in events and ev not in (CYCLE, NPU_ACTIVE, NPU_IDLE):
                self.evcntr[i] = (self.evcntr[i] + int(events[ev])) & _MASK32

    # ------------------------------------------------------------------ registers
    def read(self, offset: int) -> int:
        self.sync()
        if offset == PMCR:
            return self.pmcr
        if offset in (PMCNTENSET, PMCNTENCLR):
            return self.cnten
        if offset in (PMOVSSET, PMOVSCLR):
            return self.ovs
        if offset in (PMINTSET, PMINTCLR):
            return self.inten
        if offset == PMCCNTR_LO:
            return self.ccntr & _MASK32
        if offset == PMCCNTR_HI:
            return (self.ccntr >> 32) & 0xFFFF
        if offset == PMCCNTR_CFG:
            return self.ccntr_cfg
        if offset == PMCAXI_CHAN:
            return self.axi_chan
        if PMEVCNTR0 <= offset < PMEVCNTR0 + 16:
            return self.evcntr[(offset - PMEVCNTR0) // 4]
        if PMEVTYPER0 <= offset < PMEVTYPER0 + 16:
            return self.evtype[(offset - PMEVTYPER0) // 4]
        return 0

    def write(self, offset: int, value: int) -> None:
        self.sync()
        if offset == PMCR:
            if value & 2:
                self.evcntr = [0] * self.NUM_COUNTERS
            if value & 4:
                self.ccntr = 0
            self.pmcr = (value & 0x9) | (self.NUM_COUNTERS << 11)
        elif offset == PMCNTENSET:
            self.cnten |= value & (0x8000000F)
        elif offset == PMCNTENCLR:
            self.cnten &= ~value
        elif offset == PMOVSSET:
            self.ovs |= value
        elif offset == PMOVSCLR:
            self.ovs &= ~value
        elif offset == PMINTSET:
            self.inten |= value
        elif offset == PMINTCLR:
            self.inten &= ~value
        elif offset == PMCCNTR_LO:
            self.ccntr = (self.ccntr & ~_MASK32) | value
        elif offset == PMCCNTR_HI:
            self.ccntr = (self.ccntr & _MASK32) | ((value & 0xFFFF) << 32)
        elif offset == PMCCNTR_CFG:
            self.ccntr_cfg = value & 0x03FF03FF
        elif offset == PMCAXI_CHAN:
            self.axi_chan = value
        elif PMEVCNTR0 <= offset < PMEVCNTR0 + 16:
            self.evcntr[(offset - PMEVCNTR0) // 4] = value
        elif PMEVTYPER0 <= offset < PMEVTYPER0 + 16:
            self.evtype[(offset - PMEVTYPER0) // 4] = value & 0x3FF
