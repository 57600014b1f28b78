"""The Cortex-M55 private peripheral bus pieces the runner uses, and the interrupt controller.

* DWT (ARM DDI0553, Armv8-M ARM): DWT_CTRL 0xE000_1000, DWT_CYCCNT 0xE000_1004;
  DCB DEMCR 0xE000_EDFC (TRCENA bit 24 gates the counters).
* Armv8.1-M PMU at 0xE000_3000: PMU_CCNTR 0x07C, PMU_CNTENSET 0xC00 (bit 31 = CCNTR), PMU_CNTENCLR 0xC20,
  PMU_CTRL 0xE04 (bit0 E enable, bit2 C cycle-counter reset). This is what ExecuTorch's perf monitor reads
  through CMSIS ``ARM_PMU_Get_CCNTR``.
* SCB CPUID 0xE000_ED00 reads 0x410FD220 (Cortex-M55 r0p0, as the FVP reports).
* NVIC ISER/ICER/ISPR/ICPR (0xE000_E100.. ) accept writes; pending state is kept by ``InterruptController``.

The cycle counters count CPU clock cycles of simulated time (including time asleep in WFI), which is what
the hardware counters do; CPU timing itself comes from the cost model.
"""

from __future__ import annotations

from ..bus import Device

CPUID_M55_R0P0 = 0x410FD220


class InterruptController:
    """Pending interrupt lines (an NVIC without priorities): devices raise, the CPU takes on WFI."""

    def __init__(self):
        self.pending: set[int] = set()
        self.enabled: set[int] = set()
        self.raised_count: dict[int, int] = {}

    def raise_irq(self, n: int) -> None:
        self.pending.add(n)
        self.raised_count[n] = self.raised_count.get(n, 0) + 1

    def clear(self, n: int) -> None:
        self.pending.discard(n)

    def take(self) -> int | None:
        if not self.pending:
            return None
        n = min(self.pending)
        self.pending.discard(n)
        return n


class CortexM55System(Device):
    DWT_CTRL, DWT_CYCCNT = 0x1000, 0x1004
    PMU = 0x3000
    PMU_CCNTR, PMU_CNTENSET, PMU_CNTENCLR, PMU_CTRL = 0x07C, 0xC00, 0xC20, 0xE04
    NVIC_ISER, NVIC_ICER, NVIC_ISPR, NVIC_ICPR = 0xE100, 0xE180, 0xE200, 0xE280
    CPUID, DEMCR = 0xED00, 0xEDFC

    def __init__(self, name: str, cpu_cycles, nvic: InterruptController, guest_error=None):
        self.name = name
        self._cycles = cpu_cycles  # callable -> current CPU cycle count
        self.nvic = nvic
        self.guest_error = guest_error or (lambda msg: None)
        self.reset()

    def reset(self) -> None:
        self.demcr = 0
        self.dwt_ctrl = 0x40000000
        self.dwt_base = 0
        self.pmu_ctrl = 0
        self.pmu_cnten = 0
        self.ccntr_base = 0
        self.ccntr_frozen = 0

    def _ccntr_running(self) -> bool:
        return bool(self.pmu_ctrl & 1 and self.pmu_cnten & (1 << 31) and self.demcr & (1 << 24))

    def read(self, offset: int, size: int) -> int:
        if offset == self.DWT_CYCCNT:
            return (self._cycles() - self.dwt_base) & 0xFFFFFFFF if self.dwt_ctrl & 1 else self.dwt_base & 0xFFFFFFFF
        if offset == self.DWT_CTRL:
            return self.dwt_ctrl
        if offset == self.PMU + self.PMU_CCNTR:
            return ((self._cycles() - self.ccntr_base) if self._ccntr_running() else self.ccntr_frozen) & 0xFFFFFFFF
        if offset == self.PMU + self.PMU_CTRL:
            return self.pmu_ctrl
        if offset in (self.PMU + self.PMU_CNTENSET, self.PMU + self.PMU_CNTENCLR):
            return self.pmu_cnten
        if offset == self.CPUID:
            return CPUID_M55_R0P0
        if offset == self.DEMCR:
            return self.demcr
        if self.NVIC_ISPR <= offset < self.NVIC_ISPR + 64:
            base = (offset - self.NVIC_ISPR) * 8
            return sum(1 << (n - base) for n in self.nvic.pending if base <= n < base + 32)
        return 0

    def write(self, offset: int, value: int, size: int) -> None:
        now = self._cycles()
        if offset == self.DWT_CTRL:
            if (value & 1) and not (self.dwt_ctrl & 1):
                self.dwt_base = now - self.dwt_base
            self.dwt_ctrl = value
        elif offset == self.DWT_CYCCNT:
            self.dwt_base = now - value if self.dwt_ctrl & 1 else value
        elif offset == self.DEMCR:
            self.demcr = value
        elif offset == self.PMU + self.PMU_CTRL:
            running = self._ccntr_running()
            if value & 0x4:  # C: reset the cycle counter
                self.ccntr_base = now
                self.ccntr_frozen = 0
            self.pmu_ctrl = value & ~0x6
            self._update_running(running, now)
        elif offset == self.PMU + self.PMU_CNTENSET:
            running = self._ccntr_running()
            self.pmu_cnten |= value
            self._update_running(running, now)
        elif offset == self.PMU + self.PMU_CNTENCLR:
            running = self._ccntr_running()
            self.pmu_cnten &= ~value
            self._update_running(running, now)
        elif self.NVIC_ISER <= offset < self.NVIC_ISER + 64:
            base = (offset - self.NVIC_ISER) * 8
            self.nvic.enabled |= {base + i for i in range(32) if value >> i & 1}
        elif self.NVIC_ICER <= offset < self.NVIC_ICER + 64:
            base = (offset - self.NVIC_ICER) * 8
            self.nvic.enabled -= {base + i for i in range(32) if value >> i & 1}
        elif self.NVIC_ICPR <= offset < self.NVIC_ICPR + 64:
            base = (offset - self.NVIC_ICPR) * 8
            for i in range(32):
                if value >> i & 1:
                    self.nvic.clear(base + i)
        elif offset == self.CPUID:
            self.guest_error(f"{self.name}: write to read-only CPUID")

    def _update_running(self, was_running: bool, now: int) -> None:
        running = self._ccntr_running()
        if was_running and not running:
            self.ccntr_frozen = now - self.ccntr_base
        elif running and not was_running:
            self.ccntr_base = now - self.ccntr_frozen
