"""The full-system CPU engine: an application ELF's own Cortex-M55 code on QEMU, on this project's board.

``QemuEngine(elf, ...)`` is run by ``Platform.run`` like the Python firmware's entry is: it drives the same
machine (the platform's bus, memories, devices, Ethos-U and clock, built from the board YAML). ``run(platform)``:

1. checks QEMU (``process.check_qemu``) and the ELF (``image``: a 32-bit Arm executable whose sections fit both
   QEMU's ``mps3-an547`` and the board's memory map);
2. starts QEMU stopped before its first instruction and connects its GDB stub, qtest server and QMP;
3. joins the memories (``memory``): the board's DDR becomes a view of QEMU's (one shared mapping), the other
   memories the NPU reaches are kept coherent around its work; what the board's loader placed (``--data``) is
   copied into QEMU's memories;
4. writes the ELF's load image, sets SP and PC from the vector table at INITSVTOR (as the reset does);
5. puts breakpoints on the image's semihosting, WFI/WFE and endless-loop instructions and on the fault handlers
   of its vector table, access watchpoints on the board's devices QEMU does not model (``an547``), and runs the
   bridge (``bridge.Bridge``) until the simulation stops;
6. ends QEMU, whatever happened (``finally``), and writes the semihosting files left open.

Two facts fix what the firmware sees of time: the board's CPU clock and the cycles per instruction, ``cpu.cpi_mul
/ cpu.cpi_div`` (the Fast Models' ``cpi_mul``/``cpi_div``; 1, the FVP's default, unless the board says otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hwdesc.cortex_m55 import FAULT_EXCEPTIONS, REGISTERS

from ...errors import ConfigProblems, SimulationStop, StopReason
from . import an547, faults, image as elf_image
from .bridge import Bridge
from .guestmem import GuestMemory
from .memory import PageSync, shared_view
from .monitor import Qmp, QTest
from .process import QemuProcess, check_qemu
from .rsp import GdbRemote, ProtocolError, StubTimeout
from .semihosting import Semihosting, console_writer


XPSR_T = 1 << 24  # the Thumb state bit of the xPSR (the reset takes it from bit 0 of the reset vector)
START_TIMEOUT_S = 60.0  # QEMU's GDB stub answers within this of its start (0.1-0.2 s here; a loaded host is slower)


@dataclass
class EngineOptions:
    elf: str
    cmdline: str = ""  # cpu0.semihosting-cmd_line
    cwd: str = "."  # cpu0.semihosting-cwd
    heapinfo: tuple = (0, 0, 0, 0)  # cpu0.semihosting-heap_base, -heap_limit, -stack_base, -stack_limit
    notes: list = field(default_factory=list)


class QemuEngine:
    def __init__(self, options: EngineOptions, image=None):
        self.options = options
        self.image = image  # an image.LoadImage already read (the host checks it before building the board)
        self.bridge: Bridge | None = None
        self.version = None

    def prepare(self, spec) -> None:
        """The checks that need no QEMU process: QEMU's presence and version, the ELF, its fit on both maps."""
        _, self.version = check_qemu()
        if self.image is None:
            self.image = elf_image.read_image(self.options.elf)
        problems = elf_image.check(self.image, spec.memory)
        if problems:
            raise ConfigProblems(problems)

    def run(self, platform) -> int:
        spec = platform.spec
        self.prepare(spec)
        path, _ = check_qemu()
        proc = QemuProcess(path)
        semihosting = None
        try:
            gdb = GdbRemote(proc.sockets["gdb"])
            qtest = QTest(proc.sockets["qtest"])
            try:
                limit = platform.sim.time_limit_s  # --timelimit bounds the wait too
                gdb.handshake(timeout=START_TIMEOUT_S if limit is None else
                              max(0.5, min(START_TIMEOUT_S, limit - platform.sim.wall_seconds)))
                qmp = Qmp(proc.sockets["qmp"])
            except ProtocolError as e:
                status = proc.exited() if isinstance(e, StubTimeout) else proc.wait(5.0)
                if status is None:  # it runs and does not answer
                    raise ProtocolError(f"QEMU did not start: {e} ({proc.path})") from None
                raise SimulationStop(StopReason.QEMU, f"QEMU did not start (status {status}): "  # a stop, not a
                                     f"{proc.stderr_text().strip()[-300:] or e}") from None     # simulator error
            memory = GuestMemory(gdb, qtest, proc.ddr_map)
            try:
                syncs = self._join_memories(platform, proc, qtest, memory)
                for address, data, _ in self.image.chunks:
                    self._check_write(address, len(data))
                    memory.write(address, data)
                self._reset(gdb, memory)
            except ProtocolError:  # QEMU went away while the image was loaded: the stop says so, as during a run
                status = proc.wait(5.0)
                if status is None:
                    raise
                raise SimulationStop(*faults.qemu_exit(proc.stderr_text(), status)) from None
            memory.set_sites(self.image.sites)
            sim = platform.sim
            semihosting = Semihosting(memory, cwd=self.options.cwd, cmdline=self.options.cmdline,
                                      heapinfo=self.options.heapinfo, cpu_hz=spec.cpu.clock_hz,
                                      now_ps=lambda: sim.now_ps, cpu_cycles=lambda: sim.cpu_cycles,
                                      console=console_writer(platform._flush_uarts),
                                      note=lambda m: platform.port.host_note(m),
                                      read_line=lambda n: platform.port.host_read_line(n + 1, charged=False))
            uart, windows = self._devices(platform)
            self.bridge = Bridge(platform, proc, gdb, qtest, qmp, memory, sites=self.image.sites,
                                 handlers=self._fault_handlers(memory), windows=windows, uart=uart, syncs=syncs,
                                 semihosting=semihosting, cpi=(spec.cpu.cpi_mul, spec.cpu.cpi_div))
            return self.bridge.run()
        finally:
            problems = semihosting.close() if semihosting is not None else []
            proc.close()
            for line in problems:
                platform.port.host_note(line)

    # ---------------------------------------------------------------- memory
    def _join_memories(self, platform, proc, qtest, memory) -> list:
        """Share the DDR, make the other NPU-reachable memories coherent, copy in what the loader placed."""
        syncs = []
        bases = {}
        for w in platform.amap.windows:
            if hasattr(w.target, "data") and not w.secure:
                bases.setdefault(id(w.target), (w.target, w.start))
        for ram, base in bases.values():
            loaded = [(a, n, a - w.start) for w in platform.amap.windows if w.target is ram
                      for a, n in platform.loaded if w.start <= a < w.end]  # either alias
            view = shared_view(proc.ddr_map, base, ram.size)
            if view is not None:
                for _, n, off in loaded:
                    view[off:off + n] = ram.data[off:off + n]
                ram.data = view
                continue
            for a, n, off in loaded:
                self._check_write(a, n)
                memory.write(a, ram.data[off:off + n].tobytes())
            if "npu" in ram.masters and an547.memory_at(base, ram.size) is not None:
                sync = PageSync(ram.data, base, qtest)
                sync.active = True
                ram.coherence = sync
                syncs.append(sync)
        return syncs

    @staticmethod
    def _check_write(address: int, size: int) -> None:
        if an547.memory_at(address, size) is None:
            raise ConfigProblems([f"0x{address:08x}+{size}: not in QEMU's {an547.MACHINE} memory "
                                  f"({an547.describe()})"])

    # ---------------------------------------------------------------- the reset
    def _vector(self, memory, index: int) -> int:
        return int.from_bytes(memory.read(an547.INITSVTOR + 4 * index, 4), "little")

    def _reset(self, gdb, memory) -> None:
        """SP and PC from the vector table at INITSVTOR, as the CPU's reset takes them (QEMU's reset ran before
        the image was written)."""
        sp, pc = self._vector(memory, 0), self._vector(memory, 1)
        if not pc:
            pc, sp = self.image.entry, sp
        gdb.expect_ok(gdb.register_packet(13, sp), gdb.register_packet(15, pc & ~1),
                      gdb.register_packet(an547.GDB_XPSR, XPSR_T))

    def _fault_handlers(self, memory) -> dict:
        """The first instruction of each fault's handler in the initial vector table -> its exception number."""
        out = {}
        for n in sorted(FAULT_EXCEPTIONS):
            addr = self._vector(memory, n) & ~1
            if addr and any(a <= addr < a + size for _, a, size in self.image.sections):
                out.setdefault(addr, n)
        return out

    # ---------------------------------------------------------------- devices
    def _devices(self, platform):
        """The board's UART that QEMU's UART0 transmits for, and the address windows QEMU stops on: the board's
        devices QEMU does not model, and of the Cortex-M55's system registers those QEMU leaves at zero."""
        uart, windows = None, []
        for d in platform.spec.devices.values():
            bases = [b for b in (d.base, d.secure_base) if b is not None]
            if d.type in an547.QEMU_DEVICES and any(b in (a, a + 0x1000_0000) for a in an547.QEMU_DEVICES[d.type]
                                                     for b in bases):
                uart = platform.devices[d.name]
                continue
            if d.type == "cortex-m55-system":
                for reg in REGISTERS:
                    if reg.name not in an547.QEMU_SYSTEM_REGISTERS:
                        windows += [(b + reg.offset, b + reg.offset + reg.count * reg.stride) for b in bases]
                continue
            windows += [(b, b + d.size) for b in bases]
        return uart, _merge(windows)


def _merge(windows: list) -> list:
    out = []
    for a, b in sorted(windows):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
