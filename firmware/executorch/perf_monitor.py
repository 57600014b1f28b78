"""The runner's perf monitor (``arm_perf_monitor.cpp``): Ethos-U PMU and Cortex-M cycle counting.

At every Ethos-U inference begin (the driver hook) it enables the NPU PMU, sets the cycle counter to count
from NPU_ACTIVE to NPU_IDLE, programs the event counters, enables and resets them; at the end it adds the
counters to running totals and disables the PMU. The events are the runtime profile's for the NPU family the
runner is built for (``ETHOSU55``/``ETHOSU65``: AXI0 read beats, AXI1 read beats, AXI0 write beats, NPU idle;
``ETHOSU85``: SRAM read and write beats, EXT read and write beats, NPU idle, and from late 2025 MAC active and
WD active), in that family's PMU registers (the U85's PMU is at 0x1180, the U55's at 0x180). CPU cycles come
from the Armv8.1-M PMU cycle counter (CCNTR, enabled in ``et_pal_init``; the Cortex-M85's is the M55's): the
whole inference, the time inside ``EthosUBackend::execute`` and the time between inference begin and end.
``StopMeasurements`` prints the block with the selected profile's strings.
"""

from __future__ import annotations

from hwdesc import ethosu as U55, ethosu85 as U85
from hwdesc.cortex_m55 import REGISTERS as M55

from . import log

# the PMU register file and event numbers of each NPU family the runner can be built for
_PMU = {"u55": (U55.MMIO, U55.PMU_EVENT), "u85": (U85.MMIO, U85.PMU_EVENT)}

# Cortex-M55 (Armv8.1-M) PMU and DCB
CPU_PMU_CCNTR, CPU_PMU_CNTENSET, CPU_PMU_CTRL, DCB_DEMCR = (M55[n].offset for n in (
    "PMU_CCNTR", "PMU_CNTENSET", "PMU_CTRL", "DEMCR"))


def npu_family(variant: str | None) -> str:
    """``u85`` for a runner built for an Ethos-U85 (ETHOSU85), else ``u55`` (ETHOSU55/ETHOSU65)."""
    return "u85" if str(variant or "").startswith("ethos-u85") else "u55"


class PerfMonitor:
    def __init__(self, bus, npu_base: int | None, system_base: int | None, profile: dict, family: str = "u55"):
        self.bus = bus
        self.npu_base = npu_base
        self.sys = system_base
        self.profile = profile
        self.regs, ev = _PMU[family]
        self.event_names = profile["pmu_events"][family]
        self.events = tuple(ev.value(n) for n in self.event_names)
        self.npu_active, self.npu_idle = ev.NPU_ACTIVE, ev.NPU_IDLE
        self.pmu_cycles = 0
        self.event_counts = [0] * len(self.events)
        self.delegations = 0
        self.npu_invocations = 0  # PR-era `ethosu_inference_count`, never reset
        self.backend_cycles = 0
        self.npu_wait_cycles = 0
        self.start_cycles = 0
        self.report: dict = {}  # the figures of the last StopMeasurements
        self._begin_cpu = 0
        self._exec_begin = 0

    # ------------------------------------------------------------------ CPU cycle counter
    def cpu_init(self) -> None:
        """``et_pal_init``: enable the Cortex-M55 PMU cycle counter."""
        if self.sys is None:
            return
        self.bus.write32(self.sys + DCB_DEMCR, self.bus.read32(self.sys + DCB_DEMCR) | M55.DEMCR.mask("TRCENA"))
        self.bus.write32(self.sys + CPU_PMU_CTRL, M55.PMU_CTRL.mask("E", "C"))  # enable + cycle counter reset
        self.bus.write32(self.sys + CPU_PMU_CNTENSET, M55.PMU_CNTENSET.mask("C"))

    def cpu_ccntr(self) -> int:
        return self.bus.read32(self.sys + CPU_PMU_CCNTR) if self.sys is not None else 0

    # ------------------------------------------------------------------ hooks
    def start(self) -> None:
        """``StartMeasurements``."""
        self.start_cycles = self.cpu_ccntr()
        self.pmu_cycles = 0
        self.event_counts = [0] * len(self.events)
        self.delegations = 0
        self.backend_cycles = 0
        self.npu_wait_cycles = 0

    def execute_begin(self) -> None:
        self._exec_begin = self.cpu_ccntr()

    def execute_end(self) -> None:
        self.backend_cycles += self._cycles_since(self._exec_begin)

    def _cycles_since(self, start: int) -> int:
        """``arm_pmu_cycles() - start`` in the profile's arithmetic: modulo 2^32 (a 32-bit difference) or, from
        #21911, in ``uint64_t`` (the 32-bit CCNTR read widened: a counter that wrapped gives a huge value)."""
        return (self.cpu_ccntr() - start) & ((1 << self.profile["cycle_bits"]) - 1)

    def inference_begin(self) -> None:
        """``ethosu_inference_begin``: program and reset the NPU PMU."""
        b = self.npu_base
        if b is not None:
            w, r, R = self.bus.write32, self.bus.read32, self.regs
            pmcr = b + R.PMCR.offset
            w(pmcr, r(pmcr) | R.PMCR.mask("cnt_en"))
            w(b + R.PMCCNTR_CFG.offset, R.PMCCNTR_CFG.pack(cycle_cnt_cfg_start=self.npu_active,
                                                           cycle_cnt_cfg_stop=self.npu_idle))
            for i, ev in enumerate(self.events):
                w(b + R.PMEVTYPER.at(i), ev)
            # the counters in use (CNT1..CNTn in the driver's names) and the cycle counter
            w(b + R.PMCNTENSET.offset, R.PMCNTENSET.mask(*(f"EVENT_CNT_{i}" for i in range(len(self.events))),
                                                         "CYCLE_CNT"))
            w(pmcr, r(pmcr) | R.PMCR.mask("cycle_cnt_rst"))
            w(pmcr, r(pmcr) | R.PMCR.mask("event_cnt_rst"))
        self._begin_cpu = self.cpu_ccntr()

    def inference_end(self) -> None:
        """``ethosu_inference_end``: accumulate the counters and disable the PMU."""
        self.npu_wait_cycles += self._cycles_since(self._begin_cpu)
        self.delegations += 1
        self.npu_invocations += 1
        b = self.npu_base
        if b is not None:
            r, R = self.bus.read32, self.regs
            self.pmu_cycles += r(b + R.PMCCNTR.offset) | (r(b + R.PMCCNTR_HI.offset) << 32)
            for i in range(len(self.events)):
                self.event_counts[i] += r(b + R.PMEVCNTR.at(i))
            pmcr = b + R.PMCR.offset
            self.bus.write32(pmcr, r(pmcr) & ~R.PMCR.mask("cnt_en"))

    # ------------------------------------------------------------------ report
    def stop(self, num_inferences: int) -> None:
        """``StopMeasurements``: the block in the profile's messages (``None``: a line that version does not
        print). Per-inference figures divide by ``num_inferences`` as a C double does (by 0: inf or nan)."""
        cycle_count = self._cycles_since(self.start_cycles)
        msgs = self.profile["messages"]
        # what the block reports, as numbers (the session entry hands them to the host with each inference)
        self.report = {"inferences": num_inferences, "cpu_cycles": cycle_count, "backend_cycles": self.backend_cycles,
                       "npu_wait_cycles": self.npu_wait_cycles, "delegations": self.delegations,
                       "pmu_cycles": self.pmu_cycles,
                       "pmu_events": dict(zip(self.event_names, self.event_counts))}

        def info(key: str, **values) -> None:  # logged as a line of stop(), where it is called
            out = log.current()
            if msgs.get(key) is not None and out is not None:
                out.log("I", msgs[key].format(**values), depth=1)

        def per(x: int) -> float:
            if num_inferences:
                return x / num_inferences
            return float("nan") if x == 0 else float("inf")

        count = num_inferences if self.profile["nopt_inference_count"] == "num_inferences" else self.npu_invocations
        info("perf_inferences", n=count)
        info("perf_delegations", n=self.delegations, per=per(self.delegations))
        info("profiler_report")
        info("perf_backend", n=self.backend_cycles, per=per(self.backend_cycles))
        info("perf_operators", n=self.backend_cycles, per=per(self.backend_cycles))
        info("perf_runtime", n=cycle_count, per=per(cycle_count))
        info("perf_note")
        if cycle_count == 0:
            info("cpu_ratio_unknown")
            info("npu_ratio_unknown")
        else:
            info("cpu_ratio", v=100.0 * (cycle_count - self.npu_wait_cycles) / cycle_count)
            info("npu_ratio", v=100.0 * self.npu_wait_cycles / cycle_count)
        info("perf_wait", n=self.npu_wait_cycles, per=per(self.npu_wait_cycles))
        info("pmu_report")
        info("perf_pmu_cycles", n=self.pmu_cycles, per=per(self.pmu_cycles))
        for i, c in enumerate(self.event_counts):
            info("perf_pmu_counter", i=i, n=c, per=per(c))
        info("perf_pmu_events", events=", ".join(f"ETHOSU_PMU_{n}" for n in self.event_names))
