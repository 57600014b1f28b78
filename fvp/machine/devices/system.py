"""The Cortex-M55 private peripheral bus pieces the runner uses, and the interrupt controller.

Registers from :mod:`hwdesc.cortex_m55`, dispatched by a :class:`~fvp.machine.devices.regbank.RegisterBank`:
the DWT cycle counter (DWT_CTRL, DWT_CYCCNT), the Armv8.1-M PMU cycle counter (PMU_CCNTR, PMU_CNTENSET/CLR,
PMU_CTRL: what ExecuTorch's perf monitor reads through CMSIS ``ARM_PMU_Get_CCNTR``), SCB CPUID (reads
0x410FD220, Cortex-M55 r0p0, as the FVP reports), DCB DEMCR (TRCENA bit 24 gates the counters) and NVIC
ISER/ICER/ICPR (ISPR reads the pending lines; pending state is kept by ``InterruptController``).

The cycle counters count CPU clock cycles of simulated time (including time asleep in WFI), which is what
the hardware counters do; CPU timing itself comes from the cost model.
"""

from __future__ import annotations

from hwdesc.cortex_m55 import CPUID_M55_R0P0, REGISTERS

from ..bus import Device
from .regbank import RegisterBank, register_property

_CYCCNTENA = REGISTERS.DWT_CTRL.mask("CYCCNTENA")
_PMU_E, _PMU_P, _PMU_C = (REGISTERS.PMU_CTRL.mask(n) for n in ("E", "P", "C"))
_CNT_C = REGISTERS.PMU_CNTENSET.mask("C")
_TRCENA = REGISTERS.DEMCR.mask("TRCENA")

__all__ = ["CortexM55System", "InterruptController", "CPUID_M55_R0P0"]


class InterruptController:
    """Pending interrupt lines (an NVIC without priorities): devices raise, the CPU takes on WFI."""

    def __init__(self):
        self.pending: set[int] = set()
        self.enabled: set[int] = set()
        self.raised_count: dict[int, int] = {}
        self.listeners: list = []  # called with n when line n is raised (a CPU engine with its own NVIC)

    def raise_irq(self, n: int) -> None:
        self.pending.add(n)
        self.raised_count[n] = self.raised_count.get(n, 0) + 1
        for listener in self.listeners:
            listener(n)

    def clear(self, n: int) -> None:
        self.pending.discard(n)

    def take(self) -> int | None:
        if not self.pending:
            return None
        n = min(self.pending)
        self.pending.discard(n)
        return n


def _lines(word: int, value: int) -> list[int]:
    """The interrupt numbers of the 1 bits of ``value`` written to NVIC word ``word``."""
    return [32 * word + i for i in range(32) if value >> i & 1]


class CortexM55System(Device):
    demcr = register_property("DEMCR")
    dwt_ctrl = register_property("DWT_CTRL")
    pmu_ctrl = register_property("PMU_CTRL")
    pmu_cnten = register_property("PMU_CNTENSET")

    def __init__(self, name: str, cpu_cycles, nvic: InterruptController, guest_error=None):
        self.name = name
        self._cycles = cpu_cycles  # callable -> current CPU cycle count
        self.nvic = nvic
        self.guest_error = guest_error or (lambda msg: None)
        self.regs = RegisterBank(REGISTERS, read={
            "DWT_CYCCNT": self._read_dwt_cyccnt,
            "PMU_CCNTR": self._read_ccntr,
            "NVIC_ISER": lambda i: 0, "NVIC_ICER": lambda i: 0, "NVIC_ICPR": lambda i: 0,
            "NVIC_ISPR": lambda i: sum(1 << (n - 32 * i) for n in self.nvic.pending if 32 * i <= n < 32 * i + 32),
        }, write={
            "DWT_CTRL": self._write_dwt_ctrl,
            "DWT_CYCCNT": self._write_dwt_cyccnt,
            "PMU_CCNTR": lambda value: None,
            "PMU_CTRL": self._write_pmu_ctrl,
            "PMU_CNTENSET": lambda value: self._update_cnten(self.pmu_cnten | value),
            "PMU_CNTENCLR": lambda value: self._update_cnten(self.pmu_cnten & ~value),
            "NVIC_ISER": lambda i, value: self.nvic.enabled.update(_lines(i, value)),
            "NVIC_ICER": lambda i, value: self.nvic.enabled.difference_update(_lines(i, value)),
            "NVIC_ISPR": lambda i, value: None,
            "NVIC_ICPR": lambda i, value: [self.nvic.clear(n) for n in _lines(i, value)],
        }, read_only=lambda reg, value: self.guest_error(f"{self.name}: write to read-only {reg.name}"))
        self.reset()

    def reset(self) -> None:
        self.regs.reset()
        self.dwt_base = 0
        self.ccntr_base = 0
        self.ccntr_frozen = 0

    def _ccntr_running(self) -> bool:
        return bool(self.pmu_ctrl & _PMU_E and self.pmu_cnten & _CNT_C and self.demcr & _TRCENA)

    def read(self, offset: int, size: int) -> int:
        value = self.regs.read(offset)
        return 0 if value is None else value

    def write(self, offset: int, value: int, size: int) -> None:
        self.regs.write(offset, value)

    def _read_dwt_cyccnt(self) -> int:
        return (self._cycles() - self.dwt_base) & 0xFFFFFFFF if self.dwt_ctrl & _CYCCNTENA else self.dwt_base & 0xFFFFFFFF

    def _read_ccntr(self) -> int:
        return ((self._cycles() - self.ccntr_base) if self._ccntr_running() else self.ccntr_frozen) & 0xFFFFFFFF

    def _write_dwt_ctrl(self, value: int) -> None:
        if (value & _CYCCNTENA) and not (self.dwt_ctrl & _CYCCNTENA):
            self.dwt_base = self._cycles() - self.dwt_base
        self.dwt_ctrl = value

    def _write_dwt_cyccnt(self, value: int) -> None:
        self.dwt_base = self._cycles() - value if self.dwt_ctrl & _CYCCNTENA else value

    def _write_pmu_ctrl(self, value: int) -> None:
        now = self._cycles()
        running = self._ccntr_running()
        if value & _PMU_C:  # reset the cycle counter
            self.ccntr_base = now
            self.ccntr_frozen = 0
        self.pmu_ctrl = value & ~(_PMU_P | _PMU_C)
        self._update_running(running, now)

    def _update_cnten(self, cnten: int) -> None:
        now = self._cycles()
        running = self._ccntr_running()
        self.pmu_cnten = cnten
        self._update_running(running, now)

    def _update_running(self, was_running: bool, now: int) -> None:
        running = self._ccntr_running()
        if was_running and not running:
            self.ccntr_frozen = now - self.ccntr_base
        elif running and not was_running:
            self.ccntr_base = now - self.ccntr_frozen
