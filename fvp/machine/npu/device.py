"""The Ethos-U as a memory-mapped device: its registers, starting a command stream, completion, faults.

Register map from the product's ISA module, :mod:`hwdesc.ethosu` or :mod:`hwdesc.ethosu85` (the U85 adds
registers this model keeps as plain storage, e.g. AXI_SRAM/AXI_EXT/MEM_ATTR; the STATUS/CMD bits used here have
the same positions on both, except that the U85 has no wd_fault bit: a watchdog stop sets bit 7 anyway)
(``MMIO_BASE``: ID, STATUS, CMD, RESET, QBASE, QREAD, QCONFIG, QSIZE,
PROT, CONFIG, LOCK, REGIONCFG, AXI_LIMIT0..3, BASEP0..7 with a high word for the U65; ``MMIO_PMU``: see
``pmu.py``), dispatched by a :class:`~fvp.machine.devices.regbank.RegisterBank` with hooks for CMD, RESET, the high
address words and the configuration-dependent ID and CONFIG.

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

import contextlib
from dataclasses import dataclass, field

import numpy as np

from hwdesc.ethosu import MMIO_BASE

from ...boards.schema import NPU_CLOCK_HZ
from ..bus import Bus, Device
from ..devices.regbank import RegisterBank, register_property
from ...errors import BusFault, NpuFault
from .arch import family_sources
from .command_stream import isa_of
from .memo import BoundedCache
from .pmu import Pmu

_STATUS, _CMD = MMIO_BASE.STATUS, MMIO_BASE.CMD

# STATUS bits
(ST_STATE_RUNNING, ST_IRQ_RAISED, ST_BUS_STATUS, ST_RESET_STATUS, ST_CMD_PARSE_ERROR, ST_CMD_END_REACHED,
 ST_PMU_IRQ_RAISED, ST_WD_FAULT, ST_ECC_FAULT, ST_FAULTING_INTERFACE) = (_STATUS.mask(n) for n in (
    "state", "irq_raised", "bus_status", "reset_status", "cmd_parse_error", "cmd_end_reached", "pmu_irq_raised",
    "wd_fault", "ecc_fault", "faulting_interface"))
ST_IRQ_HISTORY_0 = _STATUS.field("irq_history_mask").put(1)

# CMD bits
(CMD_TRANSITION_TO_RUNNING, CMD_CLEAR_IRQ, CMD_CLOCK_Q_ENABLE, CMD_POWER_Q_ENABLE, CMD_STOP_REQUEST) = (
    _CMD.mask(n) for n in ("transition_to_running_state", "clear_irq", "clock_q_enable", "power_q_enable",
                           "stop_request"))

#: registers that must not be written while a command stream runs
_STREAM_SETUP = frozenset(off for name in ("QBASE", "QBASE_HI", "QSIZE", "REGIONCFG", "BASEP", "BASEP_HI")
                          for off in MMIO_BASE[name].offsets)


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
    qread: int = 0  # QREAD when the stream ended: bytes of the command stream consumed


_WEIGHT_CACHE = None
_TIMING_CACHE = BoundedCache(max_entries=64)  # (configuration, stream, REGIONCFG, QCONFIG, QSIZE) -> timing


def shared_weight_cache():
    """One content-keyed cache of decoded weight streams per host process: a stream is decoded once and
    reused by every inference, command stream and platform instance that meets the same bytes; in front of the
    on-disk cache, which other processes share (``FVP_CACHE=0`` turns that off)."""
    global _WEIGHT_CACHE
    if _WEIGHT_CACHE is None:
        from .weight_cache import WeightCache, disk_cache

        _WEIGHT_CACHE = WeightCache(disk=disk_cache())
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
            return self.bus.view(address, length, "npu", write)
        except BusFault as e:
            raise NpuFault("bus_error", str(e), address=e.address) from None

    def memory_at(self, address: int):
        """``(start, size, name)`` of the memory the NPU reaches at ``address``, or None (the resource bounds
        of an operation are what that memory can hold)."""
        w = self.bus.map.find(address)
        if w is None or "npu" not in w.masters:
            return None
        return w.start, w.end - w.start, w.name


class EthosU(Device):
    def __init__(self, name: str, arch, bus: Bus, sim, raise_irq, irq: int, *, system_config=None,
                 memory_mode=None, timing: str = "analytic", engine: str = "fast", max_commands: int = 2_000_000,
                 diagnostic=None, guest_error=None, timing_params=None, check_stream: str = "off",
                 written=None):
        from .timing import TimingModel

        self.name = name
        self.arch = arch
        self.bus = bus
        self.sim = sim
        self.raise_irq = raise_irq
        self.irq = irq
        self.clock_hz = system_config.core_clock_hz if system_config is not None else NPU_CLOCK_HZ
        self.engine = engine
        self.max_commands = max_commands
        self.checker = None  # --check-stream: one checker for the device's whole run
        if check_stream and check_stream != "off":
            from .checker import StreamChecker

            self.checker = StreamChecker(arch, check_stream, report=lambda line: self.diagnostic(line),
                                         written=written)
        self.diagnostic = diagnostic or (lambda msg: None)
        self.guest_error = guest_error or (lambda msg: None)
        self.memory = NpuMemoryPort(bus, (1 << arch.address_bits) - 1)
        self.timing_model = TimingModel(arch, system_config, memory_mode, enabled=(timing != "none"),
                                        params=timing_params)
        self.pmu = Pmu(arch, self)
        self.regs = self._make_registers()
        self.shram = np.zeros(arch.shram_bytes, dtype=np.uint8)
        self.streams: list[StreamRecord] = []
        self._completion_seq = 0
        self.reset()

    # ------------------------------------------------------------------ registers
    status = register_property("STATUS")
    cmd = register_property("CMD")
    qread = register_property("QREAD")
    qconfig = register_property("QCONFIG")
    qsize = register_property("QSIZE")
    prot = register_property("PROT")
    regioncfg = register_property("REGIONCFG")

    def _make_registers(self) -> RegisterBank:
        wide = self.arch.address_bits > 32  # the U65's 40-bit addresses: high words of QBASE and BASEPn

        def high_word(name):
            def write(*args):
                if wide:
                    self.regs.values[name][args[0] if len(args) == 2 else 0] = args[-1] & 0xFF
            return write

        mmio = isa_of(self.arch).MMIO_BASE
        return RegisterBank(mmio, read={
            "ID": lambda: self.arch.id_word,
            "CONFIG": lambda: self.arch.config_word,
        }, write={
            "CMD": self._write_cmd,
            "RESET": self._soft_reset,
            "QBASE_HI": high_word("QBASE_HI"),
            "BASEP_HI": high_word("BASEP_HI"),
            "REGIONCFG": lambda value: setattr(self, "regioncfg", value & mmio.REGIONCFG.mask()),
        }, read_only=lambda reg, value: self.guest_error(
            f"{self.name}: write of 0x{value:x} to read-only register {reg.name} (ignored)"))

    @property
    def qbase(self) -> int:
        return self.regs["QBASE"] | self.regs["QBASE_HI"] << 32

    @property
    def basep(self) -> list:
        return [lo | hi << 32 for lo, hi in zip(self.regs.values["BASEP"], self.regs.values["BASEP_HI"])]

    def reset(self) -> None:
        self.regs.reset()
        self.running_until_ps = None
        self._completion_seq += 1  # cancels a pending completion
        self.pmu.reset()

    def npu_cycles_now(self) -> int:
        return (self.sim.now_ps * self.clock_hz) // 10 ** 12

    def read(self, offset: int, size: int) -> int:
        value = self.regs.read(offset)
        if value is None:
            return self.pmu.read(offset) if self.pmu.handles(offset) else 0
        return value

    def write(self, offset: int, value: int, size: int) -> None:
        value &= 0xFFFFFFFF
        if self.status & ST_STATE_RUNNING and offset in _STREAM_SETUP:
            self.guest_error(f"{self.name}: register offset 0x{offset:03x} written while a command stream is running")
        if self.regs.write(offset, value):
            return
        if self.pmu.handles(offset):
            self.pmu.write(offset, value)
        else:
            self.guest_error(f"{self.name}: write of 0x{value:x} to unimplemented register offset 0x{offset:03x}")

    def _soft_reset(self, value: int) -> None:
        reset = MMIO_BASE.RESET
        self.pmu.sync()
        self.reset()
        self.prot = MMIO_BASE.PROT.pack(active_CPL=reset.get(value, "pending_CPL"),
                                        active_CSL=reset.get(value, "pending_CSL"))

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

    def axi_bursts(self) -> tuple:
        """Per AXI port, (burst bytes, pending reads, pending writes) the NPU's AXI limit registers allow: the
        U55/U65's ``AXI_LIMITn`` of the first memory type REGIONCFG routes to the port (types 0/1 AXI0, 2/3 AXI1),
        the U85's ``AXI_SRAM``/``AXI_EXT``. The timing model's timing adapters read them."""
        from .timing.adapter import MAX_BEATS_BYTES

        mmio = isa_of(self.arch).MMIO_BASE
        out = []
        for port in (0, 1):
            if "AXI_LIMIT" in self.regs.values:
                reg = mmio.AXI_LIMIT
                types = sorted({self.regioncfg_of(r) for r in range(8)} & {2 * port, 2 * port + 1}) or [2 * port]
                value = self.regs.values["AXI_LIMIT"][types[0]]
            else:
                name = ("AXI_SRAM", "AXI_EXT")[port]
                if name not in self.regs.values:
                    out.append((64, 0, 0))
                    continue
                reg, value = getattr(mmio, name), self.regs.values[name][0]
            out.append((MAX_BEATS_BYTES[reg.get(value, "max_beats")], reg.get(value, "max_outstanding_read_m1") + 1,
                        reg.get(value, "max_outstanding_write_m1") + 1))
        return tuple(out)

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
            interruptible = getattr(self.sim, "interruptible", None)  # --timelimit stops a long stream
            with interruptible() if interruptible is not None else contextlib.nullcontext():
                result = execute_stream(words, arch=self.arch, base_pointers=list(self.basep), memory=self.memory,
                                        shram=self.shram, engine=self.engine, weight_cache=shared_weight_cache(),
                                        max_commands=self.max_commands, checker=self.checker,
                                        result_flag=self._cond_status())
            fault = result.fault
            self._cond_status(result.result_flag)
        ops = list(result.operations) if result is not None else []
        timing = self._stream_timing(words, ops, fault)
        cycles = max(1, int(timing.total_cycles))
        end = start + (cycles * 10 ** 12) // self.clock_hz
        rec = StreamRecord(start_ps=start, end_ps=end, npu_cycles=cycles, operations=ops, timing=timing,
                           fault=fault, commands=result.commands if result is not None else 0)
        self.streams.append(rec)
        self.qread = rec.qread = min(self.qsize, 4 * rec.commands) if fault is not None else self.qsize
        if fault is not None:
            self.diagnostic(self._describe_fault(fault))
        self._completion_seq += 1
        seq = self._completion_seq
        self.pmu.stream_started(rec)
        self.sim.schedule(end, lambda: self._complete(seq, rec))

    def _cond_status(self, flag: int | None = None) -> int:
        """COND_STATUS.result_flag (the Ethos-U85's register; other products have none): read, or set to
        ``flag``. The CPU reads and writes it like any register; a command stream's operations set it and its
        NPU_OP_BRANCH reads it (``execute.py``)."""
        if "COND_STATUS" not in self.regs.values:
            return 0
        if flag is not None:
            self.regs["COND_STATUS"] = int(flag) & 1
        return self.regs["COND_STATUS"] & 1

    def _stream_timing(self, words, ops: list, fault):
        """The timing model's result for this stream. A stream that ran to STOP is timed once per content and
        configuration and the result reused (timing is a pure function of the stream, REGIONCFG, QCONFIG, the AXI
        limits and the board's timing parameters), like the decoded weights; not a stream that branched (the
        operations it ran depend on the data)."""
        if fault is not None or words is None or any(r.op.kind == "BRANCH" for r in ops):
            return self.timing_model.stream(ops, self)
        key = (self.timing_model.signature, words.tobytes(), self.regioncfg, self.qconfig, self.qsize,
               self.axi_bursts())
        timing = _TIMING_CACHE.get(key)
        disk = disk_key = None
        if timing is None and getattr(shared_weight_cache(), "disk", None) is not None:
            from .diskcache import npu_sources, object_cache  # kept on disk too, like the decoded weights
            from .timing.records import StreamTiming

            disk = object_cache("timing", *npu_sources(), *family_sources(), types=(StreamTiming,))
            disk_key = repr(key[0]).encode() + key[1] + repr(key[2:]).encode()
            timing = disk.get_obj(disk_key)
        if timing is None:
            timing = self.timing_model.stream(ops, self)
            if disk is not None:
                disk.put_obj(disk_key, timing)
        if key not in _TIMING_CACHE:
            _TIMING_CACHE.put(key, timing)
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
        self.status |= ST_IRQ_RAISED | ST_IRQ_HISTORY_0
        self.raise_irq(self.irq)

