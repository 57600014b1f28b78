"""The Ethos-U55/U65 as a memory-mapped device: its registers, starting a command stream, completion, faults.

Register map from the Arm Ethos-U core driver's ``ethosu55_interface.h`` (arch 1.1.0; research/ethosu.md 1.3):
ID 0x000, STATUS 0x004, CMD 0x008, RESET 0x00C, QBASE 0x010/0x014, QREAD 0x018, QCONFIG 0x01C, QSIZE 0x020,
PROT 0x024, CONFIG 0x028, LOCK 0x02C, REGIONCFG 0x03C, AXI_LIMIT0..3 0x040-0x04C, BASEP0..7 0x080+8n (high
word +4, U65), PMU 0x180-0x1AC and 0x300-0x38C (see ``pmu.py``).

Behaviour: writing CMD.transition_to_running_state starts the stream at QBASE/QSIZE. The whole stream executes
functionally at once on the host (``execute.execute_stream``), the timing model gives its duration in NPU
cycles, and completion (STATUS.cmd_end_reached, irq_raised, IRQ line) is scheduled at now + that time, so
simulated time stays honest. Faults behave like hardware: a malformed stream sets STATUS.cmd_parse_error, an
access to memory the NPU cannot reach sets STATUS.bus_status; both stop the stream and raise the IRQ. A
stream that runs too long (``npu.max_commands``) is stopped with STATUS.wd_fault. Nothing raises a Python
exception into the firmware. Simplified: one stream at a time, no clock/power Q-channels, PROT reflects the
last soft reset, LOCK/AXI limits are plain storage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..bus import Bus, Device
from ..errors import BusFault, NpuFault
from .pmu import Pmu

ID, STATUS, CMD, RESET, QBASE, QBASE_HI, QREAD, QCONFIG, QSIZE, PROT, CONFIG, LOCK = (
    0x000, 0x004, 0x008, 0x00C, 0x010, 0x014, 0x018, 0x01C, 0x020, 0x024, 0x028, 0x02C)
REGIONCFG = 0x03C
AXI_LIMIT0 = 0x040
BASEP0 = 0x080

# STATUS bits
ST_STATE_RUNNING = 1 << 0
ST_IRQ_RAISED = 1 << 1
ST_BUS_STATUS = 1 << 2
ST_RESET_STATUS = 1 << 3
ST_CMD_PARSE_ERROR = 1 << 4
ST_CMD_END_REACHED = 1 << 5
ST_PMU_IRQ_RAISED = 1 << 6
ST_WD_FAULT = 1 << 7
ST_ECC_FAULT = 1 << 8
ST_FAULTING_INTERFACE = 1 << 11
ST_FAULTING_CHANNEL_SHIFT = 12

# CMD bits
CMD_TRANSITION_TO_RUNNING = 1 << 0
CMD_CLEAR_IRQ = 1 << 1
CMD_CLOCK_Q_ENABLE = 1 << 2
CMD_POWER_Q_ENABLE = 1 << 3
CMD_STOP_REQUEST = 1 << 4

CMD_RESET_VALUE = CMD_CLOCK_Q_ENABLE | CMD_POWER_Q_ENABLE
_READ_ONLY = {ID: "ID", STATUS: "STATUS", QREAD: "QREAD", PROT: "PROT", CONFIG: "CONFIG"}


@dataclass
class StreamRecord:
    """What one started command stream did: for the PMU, the profile and the trace."""
    start_ps: int
    end_ps: int
    npu_cycles: int
    operations: list = field(default_factory=list)
    timing: object = None
    fault: NpuFault | None = None
    commands: int = 0


_WEIGHT_CACHE = None
_TIMING_CACHE: dict = {}


def shared_weight_cache():
    """One content-keyed cache of decoded weight streams per host process: a stream is decoded once and
    reused by every inference, command stream and platform instance that meets the same bytes."""
    global _WEIGHT_CACHE
    if _WEIGHT_CACHE is None:
        from .weights import WeightCache

        _WEIGHT_CACHE = WeightCache()
    return _WEIGHT_CACHE


class NpuMemoryPort:
    """The NPU's AXI masters: zero-copy views of memory the NPU can reach, bus faults otherwise."""

    def __init__(self, bus: Bus, address_mask: int):
        self.bus = bus
        self.mask = address_mask

    def view(self, address: int, length: int, write: bool = False) -> np.ndarray:
        if address < 0 or address + max(length, 0) - 1 > self.mask:
            raise NpuFault("bus_error", f"address 0x{address:x} (+{length}) is outside the NPU's address space",
                           address=address)
        try:
            return self.bus.view(address, length, "npu")
        except BusFault as e:
            raise NpuFault("bus_error", str(e), address=e.address) from None


class EthosU(Device):
    def __init__(self, name: str, arch, bus: Bus, sim, raise_irq, irq: int, *, system_config=None,
                 memory_mode=None, timing: str = "analytic", engine: str = "fast", max_commands: int = 2_000_000,
                 diagnostic=None, guest_error=None, timing_params=None):
        from .timing import TimingModel

        self.name = name
        self.arch = arch
        self.bus = bus
        self.sim = sim
        self.raise_irq = raise_irq
        self.irq = irq
        self.clock_hz = system_config.core_clock_hz if system_config is not None else 500_000_000
        self.engine = engine
        self.max_commands = max_commands
        self.diagnostic = diagnostic or (lambda msg: None)
        self.guest_error = guest_error or (lambda msg: None)
        self.memory = NpuMemoryPort(bus, (1 << arch.address_bits) - 1)
        self.timing_model = TimingModel(arch, system_config, memory_mode, enabled=(timing != "none"),
                                        params=timing_params)
        self.pmu = Pmu(arch, self)
        self.shram = np.zeros(arch.shram_bytes, dtype=np.uint8)
        self.streams: list[StreamRecord] = []
        self._completion_seq = 0
        self.reset()

    # ------------------------------------------------------------------ registers
    def reset(self) -> None:
        self.status = 0
        self.cmd = CMD_RESET_VALUE
        self.qbase = 0
        self.qread = 0
        self.qconfig = 0
        self.qsize = 0
        self.prot = 0
        self.lock = 0
        self.regioncfg = 0
        self.axi_limit = [0, 0, 0, 0]
        self.basep = [0] * 8
        self.running_until_ps = None
        self._completion_seq += 1  # cancels a pending completion
        self.pmu.reset()

    def npu_cycles_now(self) -> int:
        return (self.sim.now_ps * self.clock_hz) // 10 ** 12

    def read(self, offset: int, size: int) -> int:
        if offset == ID:
            return self.arch.id_word
        if offset == STATUS:
            return self.status
        if offset == CMD:
            return self.cmd
        if offset == RESET:
            return 0
        if offset == QBASE:
            return self.qbase & 0xFFFFFFFF
        if offset == QBASE_HI:
            return (self.qbase >> 32) if self.arch.address_bits > 32 else 0
        if offset == QREAD:
            return self.qread
        if offset == QCONFIG:
            return self.qconfig
        if offset == QSIZE:
            return self.qsize
        if offset == PROT:
            return self.prot
        if offset == CONFIG:
            return self.arch.config_word
        if offset == LOCK:
            return self.lock
        if offset == REGIONCFG:
            return self.regioncfg
        if AXI_LIMIT0 <= offset < AXI_LIMIT0 + 16:
            return self.axi_limit[(offset - AXI_LIMIT0) // 4]
        if BASEP0 <= offset < BASEP0 + 64:
            n, hi = divmod(offset - BASEP0, 8)
            v = self.basep[n]
            return (v >> 32) & 0xFF if hi else v & 0xFFFFFFFF
        if self.pmu.handles(offset):
            return self.pmu.read(offset)
        return 0

    def write(self, offset: int, value: int, size: int) -> None:
        value &= 0xFFFFFFFF
        if self.status & ST_STATE_RUNNING and offset in (QBASE, QBASE_HI, QSIZE, REGIONCFG) or (
                self.status & ST_STATE_RUNNING and BASEP0 <= offset < BASEP0 + 64):
            self.guest_error(f"{self.name}: register offset 0x{offset:03x} written while a command stream is running")
        if offset == CMD:
            self._write_cmd(value)
        elif offset == RESET:
            self._soft_reset(value)
        elif offset == QBASE:
            self.qbase = (self.qbase & ~0xFFFFFFFF) | value
        elif offset == QBASE_HI:
            if self.arch.address_bits > 32:
                self.qbase = (self.qbase & 0xFFFFFFFF) | ((value & 0xFF) << 32)
        elif offset == QCONFIG:
            self.qconfig = value
        elif offset == QSIZE:
            self.qsize = value
        elif offset == LOCK:
            self.lock = value
        elif offset == REGIONCFG:
            self.regioncfg = value & 0xFFFF
        elif AXI_LIMIT0 <= offset < AXI_LIMIT0 + 16:
            self.axi_limit[(offset - AXI_LIMIT0) // 4] = value
        elif BASEP0 <= offset < BASEP0 + 64:
            n, hi = divmod(offset - BASEP0, 8)
            if hi:
                if self.arch.address_bits > 32:
                    self.basep[n] = (self.basep[n] & 0xFFFFFFFF) | ((value & 0xFF) << 32)
            else:
                self.basep[n] = (self.basep[n] & ~0xFFFFFFFF) | value
        elif self.pmu.handles(offset):
            self.pmu.write(offset, value)
        elif offset in _READ_ONLY:
            self.guest_error(f"{self.name}: write of 0x{value:x} to read-only register {_READ_ONLY[offset]} (ignored)")
        else:
            self.guest_error(f"{self.name}: write of 0x{value:x} to unimplemented register offset 0x{offset:03x}")

    def _soft_reset(self, value: int) -> None:
        pending_cpl = value & 1
        pending_csl = (value >> 1) & 1
        self.pmu.sync()
        self.reset()
        self.prot = pending_cpl | (pending_csl << 1)

    def _write_cmd(self, value: int) -> None:
        if self.status & ST_STATE_RUNNING and value & CMD_TRANSITION_TO_RUNNING:
            self.guest_error(f"{self.name}: CMD.transition_to_running_state while a command stream is running")
        if value & CMD_CLEAR_IRQ:
            self.status &= ~ST_IRQ_RAISED
        self.cmd = value & (CMD_CLOCK_Q_ENABLE | CMD_POWER_Q_ENABLE)
        if value & CMD_STOP_REQUEST and self.status & ST_STATE_RUNNING:
            self.diagnostic("stop request while running: the stream is abandoned")
            self._completion_seq += 1
            self.status &= ~ST_STATE_RUNNING
        if value & CMD_TRANSITION_TO_RUNNING and not self.status & ST_STATE_RUNNING:
            self._start()

    def regioncfg_of(self, region: int) -> int:
        return (self.regioncfg >> (2 * region)) & 3

    # ------------------------------------------------------------------ running a stream
    def _start(self) -> None:
        from .execute import execute_stream

        self.pmu.sync()
        self.status &= ~(ST_CMD_END_REACHED | ST_CMD_PARSE_ERROR | ST_BUS_STATUS | ST_WD_FAULT)
        self.status |= ST_STATE_RUNNING
        start = self.sim.now_ps
        fault = None
        result = None
        words = None
        if self.qsize % 4 or self.qsize == 0:
            fault = NpuFault("cmd_parse_error", f"QSIZE {self.qsize} is not a positive multiple of 4", offset=0)
        else:
            try:
                words = self.memory.view(self.qbase, self.qsize).view(np.uint32).copy()
            except NpuFault as e:
                fault = NpuFault("bus_error", f"command stream fetch at QBASE 0x{self.qbase:x}: {e}", address=e.address)
        if words is not None:
            result = execute_stream(words, arch=self.arch, base_pointers=list(self.basep), memory=self.memory,
                                    shram=self.shram, engine=self.engine, weight_cache=shared_weight_cache(),
                                    max_commands=self.max_commands)
            fault = result.fault
        ops = list(result.operations) if result is not None else []
        timing = self._stream_timing(words, ops, fault)
        cycles = max(1, int(timing.total_cycles))
        end = start + (cycles * 10 ** 12) // self.clock_hz
        rec = StreamRecord(start_ps=start, end_ps=end, npu_cycles=cycles, operations=ops, timing=timing,
                           fault=fault, commands=result.commands if result is not None else 0)
        self.streams.append(rec)
        self.qread = min(self.qsize, 4 * rec.commands) if fault is not None else self.qsize
        if fault is not None:
            self.diagnostic(self._describe_fault(fault))
        self._completion_seq += 1
        seq = self._completion_seq
        self.pmu.stream_started(rec)
        self.sim.schedule(end, lambda: self._complete(seq, rec))

    def _stream_timing(self, words, ops: list, fault):
        """The timing model's result for this stream. A stream that ran to STOP is timed once per content and
        configuration and the result reused (timing is a pure function of the stream, REGIONCFG, QCONFIG and the
        board's timing parameters), like the decoded weights."""
        if fault is not None or words is None:
            return self.timing_model.stream(ops, self)
        key = (self.timing_model.signature, words.tobytes(), self.regioncfg, self.qconfig, self.qsize)
        timing = _TIMING_CACHE.get(key)
        if timing is None:
            timing = self.timing_model.stream(ops, self)
            if len(_TIMING_CACHE) >= 64:
                _TIMING_CACHE.pop(next(iter(_TIMING_CACHE)))
            _TIMING_CACHE[key] = timing
        return timing

    def _describe_fault(self, fault: NpuFault) -> str:
        where = f" at command stream offset 0x{fault.offset:x}" if fault.offset is not None and fault.offset >= 0 else ""
        if fault.kind == "bus_error":
            addr = f" address 0x{fault.address:x}" if fault.address is not None else ""
            region = f" region {fault.region}" if fault.region is not None else ""
            return f"NPU bus fault{where}:{region}{addr}: {fault}"
        if fault.kind == "watchdog":
            return f"NPU watchdog{where}: {fault}"
        if fault.kind == "unsupported":
            # real hardware would run it: this is a limit of the model, reported as a parse error to the driver
            return f"NPU feature not modelled by this simulator{where}: {fault} (reported as cmd_parse_error)"
        if fault.kind == "internal_error":
            return f"[critical] simulator error in the NPU model{where}: {fault} (please report it)"
        return f"NPU command stream parse error{where}: {fault}"

    def _complete(self, seq: int, rec: StreamRecord) -> None:
        if seq != self._completion_seq:
            return
        self.pmu.stream_finished(rec)
        self.status &= ~ST_STATE_RUNNING
        f = rec.fault
        if f is None:
            self.status |= ST_CMD_END_REACHED
        elif f.kind == "bus_error":
            self.status |= ST_BUS_STATUS
        elif f.kind == "watchdog":
            self.status |= ST_WD_FAULT
        else:
            self.status |= ST_CMD_PARSE_ERROR
        self.status |= ST_IRQ_RAISED | (1 << 16)
        self.raise_irq(self.irq)

