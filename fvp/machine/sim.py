"""Simulated time, clock domains, the event queue and the run limits (the FVP's ``--cyclelimit``/``--timelimit``).

Time is an integer number of picoseconds. The CPU advances time only by charging cycles of work (the CPU cost
model) or by sleeping in ``wait_for_interrupt`` until the next event; devices schedule events (the NPU's
completion IRQ) at absolute times. Simplified: one CPU, no bus contention between CPU and NPU, events fire in
time order with ties broken by scheduling order, so runs are deterministic.
"""

from __future__ import annotations

import contextlib
import heapq
import time as _time
from dataclasses import dataclass
from typing import Callable

from ..errors import SimulationStop, StopReason
from .cancel import INTERRUPT as _INTERRUPT, interruption_point  # noqa: F401  (the hook long device work calls)

PS_PER_S = 10 ** 12


@dataclass(frozen=True)
class ClockDomain:
    name: str
    hz: int

    def cycles_to_ps(self, cycles: float) -> int:
        return int(round(cycles * PS_PER_S / self.hz))

    def ps_to_cycles(self, ps: int) -> int:
        return (ps * self.hz) // PS_PER_S


class Simulator:
    """The event queue and the clock. ``stop()`` reasons map to the FVP's stop messages in ``platform``."""

    def __init__(self, cpu_clock_hz: int, cycle_limit: int | None = None, time_limit_s: float | None = None):
        self.cpu = ClockDomain("cpu", cpu_clock_hz)
        self.now_ps = 0
        self._events: list = []
        self._seq = 0
        self.cycle_limit = cycle_limit
        self.time_limit_s = time_limit_s
        self.wall_start = _time.monotonic()
        self._frac_cycles = 0.0
        self.charged_cpu_cycles = 0.0  # cycles of work the CPU did (not sleeping)

    # ---- time
    @property
    def cpu_cycles(self) -> int:
        """The CPU cycle counter (runs while the CPU sleeps too, like DWT CYCCNT)."""
        return self.cpu.ps_to_cycles(self.now_ps)

    def charge_cpu(self, cycles: float) -> None:
        """The CPU worked for ``cycles``: advance time, fire due events, enforce the limits."""
        if cycles <= 0:
            return
        self.charged_cpu_cycles += cycles
        total = self._frac_cycles + cycles
        whole = int(total)
        self._frac_cycles = total - whole
        if whole:
            start = self.now_ps
            try:
                self.advance_to(self.now_ps + self.cpu.cycles_to_ps(whole))
            except SimulationStop as stop:
                if stop.reason == "cycle_limit":  # the work stopped at the limit: only that much was done
                    self.charged_cpu_cycles -= max(0, whole - self.cpu.ps_to_cycles(self.now_ps - start))
                raise

    def advance_to(self, t_ps: int) -> None:
        if self.cycle_limit is not None:  # a long piece of work stops at the limit, not at its own end
            limit_ps = self.cpu.cycles_to_ps(self.cycle_limit + 1)
            while self.cpu.ps_to_cycles(limit_ps) <= self.cycle_limit:  # rounding: the first time past the limit
                limit_ps += 1
            t_ps = min(t_ps, max(limit_ps, self.now_ps))
        while self._events and self._events[0][0] <= t_ps:
            when, _, fn = heapq.heappop(self._events)
            self.now_ps = max(self.now_ps, when)
            fn()
        self.now_ps = max(self.now_ps, t_ps)
        self.check_limits()

    def idle_fraction(self) -> float:
        """The part of a CPU cycle of work charged but not yet counted as a whole cycle."""
        return self._frac_cycles

    def idle_until(self, t_ps: int, fraction: float) -> None:
        """The CPU waits, doing no work, until ``t_ps`` (events due by then fire); its unfinished cycle of
        work is ``fraction`` afterwards. For a firmware that waits on the host (``fvp.machine.resident``)."""
        self.advance_to(t_ps)
        self._frac_cycles = fraction

    def check_limits(self) -> None:
        if self.cycle_limit is not None and self.cpu_cycles > self.cycle_limit:
            raise SimulationStop(StopReason.CYCLE_LIMIT)
        self.check_wall_limit()

    def check_wall_limit(self) -> None:
        if self.time_limit_s is not None and _time.monotonic() - self.wall_start > self.time_limit_s:
            raise SimulationStop(StopReason.TIME_LIMIT)

    @contextlib.contextmanager
    def interruptible(self):
        """Within this block ``interruption_point()`` checks this simulation's wall-clock limit (a device's long
        host computation, such as an NPU command stream, is then stopped between its chunks)."""
        token = _INTERRUPT.set(self.check_wall_limit if self.time_limit_s is not None else None)
        try:
            yield
        finally:
            _INTERRUPT.reset(token)

    # ---- events
    def schedule(self, at_ps: int, fn: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._events, (max(at_ps, self.now_ps), self._seq, fn))

    @property
    def has_events(self) -> bool:
        """Whether a device has an event scheduled (something a sleeping CPU would wake for)."""
        return bool(self._events)

    def run_next_event(self) -> bool:
        """Sleep until the next event and fire it (and any at the same time). False if there is none."""
        if not self._events:
            return False
        self.advance_to(self._events[0][0])
        return True

    @property
    def wall_seconds(self) -> float:
        return _time.monotonic() - self.wall_start
