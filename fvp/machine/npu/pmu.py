"""The Ethos-U PMU: a 48-bit cycle counter with start/stop events and 32-bit event counters (four on U55/U65,
eight on U85, whose PMU block sits at 0x1180 instead of 0x180).

Registers and event numbers from the product's ISA module (:mod:`hwdesc.ethosu`, :mod:`hwdesc.ethosu85`:
``MMIO_PMU``, ``PMU_EVENT``; the fields this model uses have the same positions in both), dispatched by a
:class:`~fvp.machine.devices.regbank.RegisterBank`: PMCR, PMCNTENSET/CLR, PMOVSSET/CLR, PMINTSET/CLR, PMCCNTR/_HI (two
windows on the 48-bit counter), PMCCNTR_CFG (start and stop event), PMCAXI_CHAN, PMEVCNTR0..3, PMEVTYPER0..3.

Counting: time-based events (CYCLE, NPU_IDLE, NPU_ACTIVE and the cycle counter) accumulate from simulated time
at the NPU clock, split into the intervals where a command stream runs and where the NPU is idle; traffic and
unit events (AXI beats, MAC_ACTIVE, ...) come from the timing model's per-stream totals and are added when the
stream completes. The cycle counter with start event NPU_ACTIVE and stop event NPU_IDLE (what ExecuTorch's
perf monitor programs) counts the NPU's active cycles; with no start event it counts every enabled cycle.
Simplified: PMCAXI_CHAN filtering, overflow interrupts and NPU_OP_PMU_MASK gating are stored, not modelled.
"""

from __future__ import annotations

from hwdesc.ethosu import MMIO_PMU, PMU_EVENT

from ..devices.regbank import RegisterBank, register_property
from .command_stream import isa_of

NO_EVENT, CYCLE, NPU_IDLE, NPU_ACTIVE = PMU_EVENT.NO_EVENT, PMU_EVENT.CYCLE, PMU_EVENT.NPU_IDLE, PMU_EVENT.NPU_ACTIVE

_MASK32 = 0xFFFFFFFF
_MASK48 = (1 << 48) - 1
_PMCR = MMIO_PMU.PMCR
_CNT_EN, _EVENT_CNT_RST, _CYCLE_CNT_RST = (_PMCR.mask(n) for n in ("cnt_en", "event_cnt_rst", "cycle_cnt_rst"))
_PMCR_STORED = _PMCR.mask("cnt_en", "mask_en")
_CYCLE_CNT = MMIO_PMU.PMCNTENSET.mask("CYCLE_CNT")
_CFG_START = MMIO_PMU.PMCCNTR_CFG.field("cycle_cnt_cfg_start")


class Pmu:

    pmcr = register_property("PMCR")
    cnten = register_property("PMCNTENSET")
    ovs = register_property("PMOVSSET")
    inten = register_property("PMINTSET")
    ccntr_cfg = register_property("PMCCNTR_CFG")
    axi_chan = register_property("PMCAXI_CHAN")

    def __init__(self, arch, device):
        self.arch = arch
        self.dev = device
        mmio = isa_of(arch).MMIO_PMU
        self.num_counters = mmio.PMCR.get(mmio.PMCR.reset, "num_event_cnt")
        self.regs = RegisterBank(mmio, read={
            "PMCCNTR": lambda: self.ccntr & _MASK32,
            "PMCCNTR_HI": lambda: (self.ccntr >> 32) & mmio.PMCCNTR_HI.mask(),
        }, write={
            "PMCR": self._write_pmcr,
            "PMCNTENSET": lambda value: setattr(self, "cnten", self.cnten | value & mmio.PMCNTENSET.mask()),
            "PMCCNTR": lambda value: setattr(self, "ccntr", (self.ccntr & ~_MASK32) | value),
            "PMCCNTR_HI": lambda value: setattr(self, "ccntr", (self.ccntr & _MASK32)
                                                 | ((value & mmio.PMCCNTR_HI.mask()) << 32)),
            "PMCCNTR_CFG": lambda value: setattr(self, "ccntr_cfg", value & mmio.PMCCNTR_CFG.mask()),
            "PMEVTYPER": lambda i, value: self.evtype.__setitem__(i, value & mmio.PMEVTYPER.mask()),
        })
        self.reset()

    @property
    def evcntr(self) -> list:
        return self.regs.values["PMEVCNTR"]

    @property
    def evtype(self) -> list:
        return self.regs.values["PMEVTYPER"]

    def reset(self) -> None:
        self.regs.reset()
        self.ccntr = 0
        self.last_sync_ps = self.dev.sim.now_ps if hasattr(self.dev, "sim") else 0
        self.active_from_ps = None  # start of the running stream, if any

    def handles(self, offset: int) -> bool:
        return self.regs.handles(offset)

    # ------------------------------------------------------------------ time accounting
    def _cycles(self, ps: int) -> int:
        return (ps * self.dev.clock_hz) // 10 ** 12

    def sync(self) -> None:
        """Bring the time-based counters up to the current simulated time."""
        now = self.dev.sim.now_ps
        a = self.last_sync_ps
        self.last_sync_ps = now
        if now <= a or not self.pmcr & _CNT_EN:
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
        for i in range(self.num_counters):
            if self.cnten & (1 << i) and self.evtype[i] in per_event:
                self.evcntr[i] = (self.evcntr[i] + per_event[self.evtype[i]]) & _MASK32
        if self.cnten & _CYCLE_CNT:
            start = _CFG_START.get(self.ccntr_cfg)
            self.ccntr = (self.ccntr + (active if start == NPU_ACTIVE else total if start == NO_EVENT else
                                        per_event.get(start, active))) & _MASK48

    def stream_started(self, rec) -> None:
        self.sync()
        self.active_from_ps = rec.start_ps

    def stream_finished(self, rec) -> None:
        self.sync()
        self.active_from_ps = None
        if not self.pmcr & _CNT_EN or rec.timing is None:
            return
        events = getattr(rec.timing, "events", {}) or {}
        for i in range(self.num_counters):
            ev = self.evtype[i]
            if self.cnten & (1 << i) and ev in events and ev not in (CYCLE, NPU_ACTIVE, NPU_IDLE):
                self.evcntr[i] = (self.evcntr[i] + int(events[ev])) & _MASK32

    # ------------------------------------------------------------------ registers
    def read(self, offset: int) -> int:
        self.sync()
        value = self.regs.read(offset)
        return 0 if value is None else value

    def write(self, offset: int, value: int) -> None:
        self.sync()
        self.regs.write(offset, value)

    def _write_pmcr(self, value: int) -> None:
        if value & _EVENT_CNT_RST:
            self.evcntr[:] = [0] * self.num_counters
        if value & _CYCLE_CNT_RST:
            self.ccntr = 0
        self.pmcr = (value & _PMCR_STORED) | _PMCR.pack(num_event_cnt=self.num_counters)
