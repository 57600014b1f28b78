"""The handle the firmware gets: the Cortex-M55's view of the machine.

Firmware reaches memory and devices only through this object, as real firmware does through loads and
stores: word accesses to device registers and RAM, zero-copy ``view``s of RAM for bulk work (the counterpart
of pointers), ``wait_for_interrupt`` (WFI), ``work`` (the CPU cost model: every piece of firmware work is
charged in CPU cycles), and a semihosting interface for host files and exit. The firmware package defines the
matching ``Protocol`` on its side; neither package imports the other.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from ..bounded_read import read_input
from ..errors import BusFault, ConfigProblems, SimulationStop, StopReason
from ..safe_write import write_file
from .bus import Bus
from .cpu import CpuCostModel
from .devices.system import InterruptController
from .sim import Simulator


class BusPort:
    def __init__(self, bus: Bus, sim: Simulator, cpu: CpuCostModel, nvic: InterruptController, *,
                 guest_log=None, cmdline: list[str] | None = None, host_cwd: str | None = None,
                 read_limit: int | None = None, host_files: dict | None = None, written=None, stdin=None,
                 before_input=None):
        self._bus = bus
        self._written = written  # fvp.machine.written.WrittenMap under --check-stream, else None
        self._sim = sim
        self._cpu = cpu
        self._nvic = nvic
        self._guest_log = guest_log or (lambda msg: None)
        self._notes: set[str] = set()
        self.cmdline = list(cmdline or [])
        self._host_cwd = host_cwd or os.getcwd()
        # semihosting reads are bounded (fvp.bounded_read): a file larger than the board's largest memory cannot be
        # copied into it; files named on the command line were read once, before the run (host path -> bytes)
        self._read_limit = read_limit if read_limit is not None else 1 << 32
        self._host_files = dict(host_files or {})
        # the semihosting terminal's input (SYS_READ on ":tt"): a binary stream, the host's stdin by default;
        # ``before_input`` pushes the console's pending output first (what the host reads before it answers)
        self._stdin = stdin
        self._before_input = before_input or (lambda: None)
        self._mmio = cpu.cost_of("mmio")
        self.trace_events: list = []  # (time_ps, phase "B"/"E", category, name) from the firmware's trace hook
        self.sleeps: list = []  # (start_ps, end_ps) of every WFI that slept: where the CPU did no work

    # ---------------------------------------------------------------- registers and memory
    def read32(self, addr: int) -> int:
        return self._read(addr, 4)

    def read16(self, addr: int) -> int:
        return self._read(addr, 2)

    def read8(self, addr: int) -> int:
        return self._read(addr, 1)

    def write32(self, addr: int, value: int) -> None:
        self._write(addr, value, 4)

    def write16(self, addr: int, value: int) -> None:
        self._write(addr, value, 2)

    def write8(self, addr: int, value: int) -> None:
        self._write(addr, value, 1)

    def _read(self, addr: int, size: int) -> int:
        if addr % size:
            self.guest_error(f"unaligned {size * 8}-bit read at 0x{addr:08x}")
        self._sim.charge_cpu(self._mmio)
        try:
            return self._bus.read_word(addr, size, "cpu")
        except BusFault as e:
            raise SimulationStop(StopReason.HARD_FAULT, f"bus error on a {size * 8}-bit read: {e}") from None

    def _write(self, addr: int, value: int, size: int) -> None:
        if addr % size:
            self.guest_error(f"unaligned {size * 8}-bit write at 0x{addr:08x}")
        self._sim.charge_cpu(self._mmio)
        try:
            self._bus.write_word(addr, value, size, "cpu")
        except BusFault as e:
            raise SimulationStop(StopReason.HARD_FAULT, f"bus error on a {size * 8}-bit write: {e}") from None
        if self._written is not None:
            self._written.mark(addr, size)

    def write_repeated(self, addr: int, data: bytes) -> None:
        """Byte writes of ``data`` to one register (a putc loop to a UART DATA register)."""
        w = self._bus.map.find(addr)
        if w is not None and addr == w.start and "cpu" in w.masters and hasattr(w.target, "write_bytes"):
            # a data register at offset 0 that accepts a burst (the UART): one call instead of one per byte
            self._sim.charge_cpu(self._mmio * len(data))
            w.target.write_bytes(data)
            return
        for b in data:
            self._write(addr, b, 1)

    def view(self, addr: int, size: int) -> np.ndarray:
        """Zero-copy uint8 view of RAM (no time is charged: report the work done with ``work``)."""
        try:
            v = self._bus.view(addr, size, "cpu")
        except BusFault as e:
            raise SimulationStop(StopReason.HARD_FAULT, f"bus error: {e}") from None
        if self._written is not None:  # a view is a pointer: what the firmware writes through it is not seen
            self._written.mark(addr, size)
        return v

    def read(self, addr: int, size: int) -> bytes:
        return self.view(addr, size).tobytes()

    def write(self, addr: int, data) -> None:
        buf = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) else data.view(np.uint8).reshape(-1)
        self.view(addr, buf.size)[:] = buf

    def memcpy(self, dst: int, src: int, size: int) -> None:
        if size <= 0:
            return
        self.view(dst, size)[:] = self.view(src, size)
        self._cpu.charge("memcpy_byte", size)

    def memset(self, dst: int, value: int, size: int) -> None:
        if size <= 0:
            return
        self.view(dst, size)[:] = value & 0xFF
        self._cpu.charge("memset_byte", size)

    # ---------------------------------------------------------------- CPU
    def work(self, kind: str, amount: float = 1.0) -> None:
        """Report work to the CPU cost model (advances simulated time)."""
        self._cpu.charge(kind, amount)

    def wait_for_interrupt(self) -> int:
        """WFI: sleep until an interrupt is pending; returns its number (and clears it, like taking it)."""
        start = self._sim.now_ps
        try:
            while True:
                n = self._nvic.take()
                if n is not None:
                    return n
                if not self._sim.run_next_event():
                    raise SimulationStop(StopReason.DEADLOCK,
                                         "the CPU waits for an interrupt but no device has an event pending")
        finally:
            if self._sim.now_ps > start:
                self.sleeps.append((start, self._sim.now_ps))

    def cpu_cycles(self) -> int:
        return self._sim.cpu_cycles

    def now_ps(self) -> int:
        return self._sim.now_ps

    # ---------------------------------------------------------------- semihosting
    def host_path(self, path: str) -> str:
        return path if os.path.isabs(path) else os.path.join(self._host_cwd, path)

    def host_read_file(self, path: str) -> bytes | None:
        """SYS_OPEN + SYS_READ of a host file; None if it cannot be opened (or is larger than any memory)."""
        hp = self.host_path(path)
        data = self._host_files.pop(hp, None)  # read once, before the run; a later read sees the file as it is
        if data is None:
            try:
                data = read_input(hp, self._read_limit)
            except ConfigProblems:
                return None
        self._cpu.charge("memcpy_byte", len(data))
        return data

    def host_write_file(self, path: str, data: bytes):
        """SYS_OPEN + SYS_WRITE + SYS_CLOSE of a host file, written atomically (``fvp.safe_write``: a temporary
        file renamed into place when complete, so a failed write leaves what was there). Returns the
        ``WriteResult`` (``opened``, ``written``, ``errno``, ``strerror``; ``ok``)."""
        return write_file(self.host_path(path), data)

    def host_read_line(self, size: int, *, charged: bool = True) -> bytes | None:
        """``fgets(line, size, stdin)`` on the semihosting terminal: at most ``size - 1`` bytes, up to and
        including a newline; None at the end of the input. The console's pending output is flushed first (a
        host waiting for a line of it before it writes the next request sees it). Blocks until the host
        writes, as the FVP does. ``charged``: the copy costs CPU cycles (not for a CPU engine that counts its own
        instructions)."""
        self._before_input()
        stream = self._stdin if self._stdin is not None else getattr(sys.stdin, "buffer", None)
        if stream is None or size < 2:
            return None
        try:
            line = stream.readline(size - 1)
        except (OSError, ValueError):  # a closed or unreadable stdin is the end of the input
            return None
        if isinstance(line, str):
            line = line.encode("utf-8", "replace")
        if charged:
            self._cpu.charge("memcpy_byte", len(line))
        return line or None

    def take_trace_events(self) -> list:
        """The trace marks so far, taken out (a resident firmware's step hands out its own)."""
        events, self.trace_events = self.trace_events, []
        return events

    def exit(self, code: int = 0) -> None:
        """SYS_EXIT: end the simulation with an application exit code."""
        raise SimulationStop(StopReason.EXIT, str(int(code)))

    def abort(self, reason: str = "") -> None:
        """The firmware aborted (``et_pal_abort``); the simulation stops with a failure."""
        raise SimulationStop(StopReason.ABORT, reason)

    # ---------------------------------------------------------------- diagnostics
    def trace(self, phase: str, category: str, name: str) -> None:
        """Software trace (the ITM stimulus port's job): mark the begin ("B") or end ("E") of a piece of
        firmware work, e.g. a CPU kernel, for ``--profile`` and ``--trace``. Costs no simulated time."""
        self.trace_events.append((self._sim.now_ps, phase, category, name))

    def guest_error(self, message: str) -> None:
        """The firmware misused the hardware: a warning by default, a failure in strict mode (the platform's
        policy, see ``Platform._guest_error``)."""
        self._guest_log(message)

    def host_note(self, message: str) -> None:
        """A remark of the simulator to its user about what the firmware was given (on stderr, once per
        message; never part of the guest's UART output, which stays what the real image prints)."""
        if message not in self._notes:
            self._notes.add(message)
            print(f"fvp: note: {message}", file=sys.stderr)
