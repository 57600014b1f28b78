"""The Cortex-M55 cost model: firmware reports work, the board's cost table turns it into CPU cycles.

The firmware is Python, so the CPU is not simulated instruction by instruction. Instead every piece of work
the firmware does is reported with a kind and an amount (``memcpy_byte`` x 4096, ``kernel.quantize_per_tensor``
x 150528, ``mmio`` x 1, ...); the table under ``cpu.costs`` in the board YAML gives CPU cycles per unit.
Kinds ``kernel.<name>`` without an entry fall back to ``kernel.default``; any other unknown kind costs
``call`` cycles per unit, and is recorded so ``--stat`` can list it.

This is an estimate with a documented table, like the FVP's own CPU model (which is not cycle accurate
either); the NPU's cycles come from the NPU timing model, not from here.
"""

from __future__ import annotations

from collections import defaultdict

from .sim import Simulator


class CpuCostModel:
    def __init__(self, sim: Simulator, costs: dict):
        self.sim = sim
        self.costs = dict(costs)
        self.by_kind: dict[str, float] = defaultdict(float)
        self.unknown_kinds: set[str] = set()
        self._resolved: dict[str, float] = {}

    def cost_of(self, kind: str) -> float:
        c = self._resolved.get(kind)
        if c is None:
            if kind in self.costs:
                c = self.costs[kind]
            elif kind.startswith("kernel.") and "kernel.default" in self.costs:
                c = self.costs["kernel.default"]
            else:
                c = self.costs.get("call", 1.0)
                self.unknown_kinds.add(kind)
            self._resolved[kind] = c
        return c

    def charge(self, kind: str, amount: float = 1.0) -> float:
        """Charge ``amount`` units of ``kind``; returns the cycles charged."""
        cycles = self.cost_of(kind) * amount
        if cycles:
            self.by_kind[kind] += cycles
            self.sim.charge_cpu(cycles)
        return cycles

    @property
    def total_cycles(self) -> float:
        return sum(self.by_kind.values())
