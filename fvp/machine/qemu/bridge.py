"""The bridge loop: QEMU runs the CPU until it reaches something this project provides, then the board answers.

QEMU stops (a GDB stop reply) when the code

- accesses a device of the board QEMU does not model (an access watchpoint over the Ethos-U's window, the stubs,
  the DWT/PMU cycle-counter registers): the instruction is decoded (``thumb``), performed on the board's device
  through the bus, and its effects written back (registers, PC, IT state);
- reaches a site of the image (``image``: the replaced ``BKPT 0xAB``, WFI, WFE and ``B .``): a semihosting call is
  served (``semihosting``); before a sleep (WFI, WFE) or an endless loop simulated time jumps to the board's next
  event (the NPU's completion), whose interrupt is then delivered; with nothing to wait for, a WFI is executed for
  real (QEMU's own timers may wake it: if the CPU stays halted, nothing can, and the run ends as a deadlock), a WFE
  is passed and a ``B .`` loop left to spin until ``--timelimit``, as on the FVP;
- enters a fault handler (a breakpoint on each fault vector's handler): the fault is described (``faults``) and
  the handler runs on; the run ends as a hard fault when it stops (an endless loop, a WFI with nothing to wake it)
  or the firmware exits.

Time: where the board's answer depends on it (a device access, a sleep, a clock or the exit of semihosting), the
instruction count (QMP ``query-replay``) advances simulated time by the instructions executed since the last such
stop times the cycles per instruction (the FVP's CPI basis: ``cpu.cpi_mul / cpu.cpi_div``, 1 by default); due
events fire then, and their interrupts are raised on the SSE-300's expansion inputs (qtest ``set_irq_in``) before
QEMU resumes. UART0's bytes (QEMU's CMSDK UART writes them to a file) go to the board's UART at every stop, before
anything else is printed, so the log keeps its order; the EOT byte ends the run (``shutdown_on_eot``).

Simplified: an interrupt of the board's devices reaches the CPU at its next stop, not at the instruction the
event's time falls on (a firmware waiting in WFI/WFE, as drivers do, sees no difference); QEMU's own timers
(SysTick) count QEMU's instruction clock, which does not include the time the CPU sleeps waiting for the NPU.
"""

from __future__ import annotations

import re
import time

from ...errors import BusFault, SimulationStop, StopReason
from . import an547, faults, thumb
from .rsp import ProtocolError

POLL_S = 0.05  # how often, while QEMU runs without stopping, the UART, the limits and a halted CPU are looked at
END_GRACE_S = 1.0  # an EOT seen while the CPU runs: how long its next stop is awaited (the end's time, as when seen
# at a stop) before the CPU is stopped wherever it is (a firmware that spins without stops after its EOT)
HALT_CHECKS = 3  # a CPU found idle this many polls in a row after a WFI with nothing to wake it is deadlocked
TIMED_SEMIHOSTING = {0x10, 0x11, 0x18, 0x20, 0x30}  # SYS_CLOCK, SYS_TIME, SYS_EXIT(_EXTENDED), SYS_ELAPSED
SEMIHOSTING_BLOCK = 16  # bytes of a parameter block read ahead (SYS_OPEN/READ/WRITE take 3 words, SYS_RENAME 4)
_WATCH = re.compile(rb"watch:([0-9a-fA-F]+);")


class Bridge:
    def __init__(self, platform, proc, gdb, qtest, qmp, memory, *, sites: dict, handlers: dict, windows: list,
                 uart, syncs: list, semihosting, cpi: tuple[int, int]):
        self.platform = platform
        self.sim = platform.sim
        self.proc = proc
        self.gdb = gdb
        self.qtest = qtest
        self.qmp = qmp
        self.memory = memory  # guestmem.GuestMemory
        self.sites = dict(sites)  # address -> image.Site
        self.handlers = handlers  # address -> exception number of a fault handler
        self.windows = windows  # (start, end) of every trapped device window
        self.uart = uart  # the board's UART that QEMU's UART0 transmits for (or None)
        self.syncs = syncs  # memory.PageSync of the memories the NPU shares with the CPU
        self.semihosting = semihosting
        self.cpi_mul, self.cpi_div = cpi
        self.irqs: list[int] = []
        platform.nvic.listeners.append(self.irqs.append)
        self.icount = 0  # QEMU's count at the last time the clock was taken
        self.instructions = 0  # executed by the guest up to then (site instructions the bridge executed included)
        self.cycles_charged = 0
        self.fault: str | None = None
        self.code: dict = {}  # pc -> (hw1, hw2): the instruction cache of trapped accesses
        self.stops = {"access": 0, "semihosting": 0, "sleep": 0, "other": 0}
        self._pending_ok = 0
        self._stepping: int | None = None  # a WFI being executed for real (its breakpoint removed)
        self._uart_done = False
        self._vcpu: int | None = None
        self._regs: list | None = None  # r0-r15 and xPSR as read at the current stop
        self._semihosting_block: dict = {}  # watched word of a semihosting site -> r1 of its last call
        self._idle_mark = None

    # ---------------------------------------------------------------- running
    def run(self) -> int:
        try:
            return self._run()
        except ProtocolError:  # a channel broke: QEMU's own end (killed, crashed) is said as such
            if self.proc.wait(2.0) is None:
                raise
            self._qemu_died()

    def _run(self) -> int:
        words = sorted({s.word for s in self.sites.values() if s.word is not None})
        packets = [b"Z3,%x,4" % w for w in words]
        packets += [b"Z4,%x,%x" % (a, b - a) for a, b in self.windows]
        packets += [b"Z0,%x,2" % a for a in sorted(set(self.handlers) | {a for a, s in self.sites.items()
                                                                        if s.word is None})]
        for i in range(0, len(packets), 64):
            self.gdb.expect_ok(*packets[i:i + 64])
        self.gdb.send(b"c")
        while True:
            stop = self._wait()
            regs = self._regs = self._registers(stop)
            self._emit_uart()
            self._dispatch(stop, regs)

    def _registers(self, stop: bytes) -> list[int]:
        """r0-r15 and xPSR at a stop. At a semihosting trap the parameter block is most often where it was the last
        time (the same call site, the same stack): it is read in the same round trip, and kept if r1 agrees."""
        m = _WATCH.search(stop)
        guess = self._semihosting_block.get(int(m.group(1), 16)) if m else None
        if guess is None:
            return self.gdb.words(self.gdb.request(b"g"), 17)
        regs_hex, block = self.gdb.requests(b"g", b"m%x,%x" % (guess, SEMIHOSTING_BLOCK))
        regs = self.gdb.words(regs_hex, 17)
        if regs[1] == guess and len(block) == 2 * SEMIHOSTING_BLOCK:
            self.semihosting.prefetched = (guess, bytes.fromhex(block.decode()))
        return regs

    def _register_packets(self, writes: dict) -> list[bytes]:
        """Register writes as GDB packets: one ``G`` with all 17 (r0-r15, xPSR as read at this stop, the writes
        applied) for two or more, else ``P`` each."""
        if len(writes) < 2 or self._regs is None or not all(n < 16 or n == an547.GDB_XPSR for n in writes):
            return [self.gdb.register_packet(n, v) for n, v in writes.items()]
        regs = list(self._regs)
        for n, v in writes.items():
            regs[16 if n == an547.GDB_XPSR else n] = v & 0xFFFFFFFF
        return [b"G" + b"".join(v.to_bytes(4, "little").hex().encode() for v in regs)]

    def _resume(self, writes: dict, step: bool = False) -> None:
        """Write back registers, hand the NPU's writes to QEMU, raise pending interrupts, continue (or step).
        The stub's OK replies are read with the next stop."""
        for s in self.syncs:
            s.flush()
        while self.irqs:
            n = self.irqs.pop(0) - an547.IRQ_FIRST
            if n >= 0:
                self.qtest.set_irq(an547.IRQ_PATH, an547.IRQ_INPUT, n, 1)
                self.qtest.set_irq(an547.IRQ_PATH, an547.IRQ_INPUT, n, 0)  # a pulse: the NVIC latches it pending
        packets = self.memory.take_queued() + self._register_packets(writes)
        self.gdb.send(*packets, b"s" if step else b"c")
        self._pending_ok += len(packets)

    def _wait(self) -> bytes:
        """The next stop reply; meanwhile UART0's output, the limits and a halted CPU are watched."""
        halted = 0
        while True:
            limit = self.sim.time_limit_s
            timeout = POLL_S if limit is None else max(0.0, min(POLL_S, limit - self.sim.wall_seconds))
            try:
                stop = self.gdb.receive(timeout)
            except ProtocolError:
                self._qemu_died()
            if stop is not None:
                if self._pending_ok:
                    if stop != b"OK":
                        raise ProtocolError(f"the GDB stub refused a register write: {stop[:60]!r}")
                    self._pending_ok -= 1
                    continue
                if stop[:1] in (b"W", b"X"):  # QEMU ended (a guest reset request, with -no-reboot)
                    self._qemu_died()
                return stop
            self._emit_uart(running=True)
            if limit is not None and self.sim.wall_seconds > limit:
                self._interrupt()
                raise SimulationStop(StopReason.TIME_LIMIT)
            if self.sim.cycle_limit is not None and self._cycles(self.qmp.icount()) > self.sim.cycle_limit:
                self._interrupt()
                raise SimulationStop(StopReason.CYCLE_LIMIT)
            if self._stepping is not None and not self.sim.has_events:
                halted = halted + 1 if self._idle() else 0
                if halted >= HALT_CHECKS:
                    pc = self._stepping
                    self._interrupt()
                    self._stop_for_fault_or(SimulationStop(
                        StopReason.DEADLOCK, f"the CPU waits for an interrupt (WFI at 0x{pc:08x}) but no device has an "
                                    f"event pending"))

    def _idle(self) -> bool:
        """Whether QEMU's CPU has done nothing since the last look: its host thread used no CPU time (Linux) and
        its instruction count stayed (a CPU asleep in WFI that nothing wakes; a running one uses CPU time)."""
        if self._vcpu is None:
            self._vcpu = self.qmp.vcpu_thread() or 0
        ticks = self.proc.thread_cpu_ticks(self._vcpu) if self._vcpu else None
        mark = (ticks, self.qmp.icount())
        idle, self._idle_mark = mark == self._idle_mark, mark
        return idle

    def _interrupt(self) -> None:
        """Stop QEMU's CPU (0x03) and take the clock where it stopped."""
        self.gdb.send_raw(b"\x03")
        try:
            while True:
                stop = self.gdb.receive(10.0)
                if stop == b"OK" and self._pending_ok:
                    self._pending_ok -= 1
                    continue
                break
        except ProtocolError:
            self._qemu_died()
        if stop is not None:
            self._clock()

    def _qemu_died(self):
        status = self.proc.wait(5.0)
        if status is None:  # the channel broke but QEMU runs: end it
            self.proc.close()
            status = self.proc.exited()
        reason, message = faults.qemu_exit(self.proc.stderr_text(), status)
        self._emit_uart(running=False)
        raise SimulationStop(reason, message)

    # ---------------------------------------------------------------- time
    def _cycles(self, icount: int) -> int:
        return (icount + self.instructions - self.icount) * self.cpi_mul // self.cpi_div

    def _clock(self) -> None:
        """Bring simulated time to QEMU's instruction count (QEMU is stopped); due events fire."""
        icount = self.qmp.icount()
        self.instructions += icount - self.icount
        self.icount = icount
        cycles = self.instructions * self.cpi_mul // self.cpi_div
        if cycles > self.cycles_charged:
            delta, self.cycles_charged = cycles - self.cycles_charged, cycles
            self.sim.charge_cpu(delta)

    def _executed(self, n: int = 1) -> None:
        """``n`` instructions the bridge executed in QEMU's place (a replaced site, a trapped access)."""
        self.instructions += n

    def _emit_uart(self, running: bool = False) -> None:
        """UART0's new bytes to the board's UART; its EOT (``shutdown_on_eot``) ends the run. While the CPU runs
        (no stop since the bytes were sent) it is stopped first, and the clock taken where it stopped."""
        if self.uart is None or self._uart_done:
            return
        data = self.proc.uart_output()
        if not data:
            return
        try:
            self.uart.transmit(data)
        except SimulationStop:
            self._uart_done = True  # what the UART sent after the EOT is not shown (the FVP stops there)
            try:
                stop = self._stop_within(END_GRACE_S) if running else b"T05"
                if stop is None:
                    self._interrupt()
                elif stop[:1] not in (b"W", b"X"):
                    self._clock()  # the first stop after the EOT: the same time whether a poll or a stop saw it
            except SimulationStop:
                pass
            raise

    def _stop_within(self, timeout: float) -> bytes | None:
        """The CPU's next stop reply if it comes within ``timeout`` seconds (the OKs still owed skipped), else
        None; ``b"X"`` when QEMU's channel broke."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                stop = self.gdb.receive(left) if left > 0 else None
            except ProtocolError:
                return b"X"
            if stop == b"OK" and self._pending_ok:
                self._pending_ok -= 1
                continue
            return stop

    # ---------------------------------------------------------------- stops
    def _dispatch(self, stop: bytes, regs: list[int]) -> None:
        pc = regs[thumb.PC]
        if self._stepping is not None:  # the WFI executed for real and the CPU woke: its breakpoint goes back
            self.gdb.expect_ok(b"Z0,%x,2" % self._stepping)
            self._stepping = None
        watch = b"watch:" in stop
        if pc in self.handlers and not watch:
            exception = self.handlers[pc]
            self._clock()
            self._record_fault(exception, regs)
            self.gdb.expect_ok(*(b"z0,%x,2" % a for a in sorted(self.handlers) if a not in self.sites))
            self.handlers = {}  # the first fault is the one described
            if pc in self.sites:  # the handler starts with a site (B .): that is what happens next
                return self._dispatch(b"T05", regs)
            return self._resume({})
        site = self.sites.get(pc)
        if site is not None and watch == (site.word is not None):
            if site.kind == "semihosting":
                self.stops["semihosting"] += 1
                if regs[0] in TIMED_SEMIHOSTING:
                    self._clock()
                self._semihosting_block[site.word] = regs[1]
                result = self.semihosting.call(regs[0], regs[1])
                return self._resume(self._skip(regs, site.size, {0: result}))
            self.stops["sleep"] += 1
            self._clock()
            return self._sleep(site, regs)
        if watch:
            self.stops["access"] += 1
            self._clock()
            return self._resume(self._access(regs))
        self.stops["other"] += 1
        self._resume({})

    def _skip(self, regs, size: int, writes: dict) -> dict:
        """The register writes that step over the instruction at PC (executed here, not by QEMU)."""
        writes[thumb.PC] = regs[thumb.PC] + size
        xpsr = thumb.it_advance(regs[16])
        if xpsr != regs[16]:
            writes[an547.GDB_XPSR] = xpsr
        self._executed()
        return writes

    def _sleep(self, site, regs: list[int]) -> None:
        pc = regs[thumb.PC]
        if site.kind == "loop" and self.fault is not None:  # a fault handler's endless loop: the end
            self._stop_for_fault_or(None)
        if self.sim.has_events:  # the CPU sleeps (or spins) until the board's next event: time jumps there
            self.sim.run_next_event()
            # WFI/WFE end with the event; a B . loop stays where it is (the event's interrupt takes the CPU out)
            return self._resume(self._skip(regs, site.size, {}) if site.kind != "loop" else {})
        if self.fault is not None:
            self._stop_for_fault_or(None)
        if site.kind == "wfe":  # nothing to wait for: QEMU's WFE does not sleep either
            return self._resume(self._skip(regs, site.size, {}))
        if site.kind == "wfi":  # QEMU's own interrupts may still wake it: execute it for real (its breakpoint
            self._stepping = pc  # out of the way until the next stop: QEMU's single step passes over a WFI)
            self.gdb.expect_ok(b"z0,%x,2" % pc)
            return self._resume({})
        # B . with nothing to wait for: an endless loop; it spins until --timelimit, as on the FVP
        self.gdb.expect_ok(b"z0,%x,2" % pc)
        del self.sites[pc]
        self._resume({})

    def _record_fault(self, exception: int, regs: list[int]) -> None:
        def word(address: int) -> int:
            return int.from_bytes(self.gdb.read_memory(address, 4), "little")

        try:
            fsr = faults.fault_registers(word)
            pc = faults.stacked_pc(regs, word)
        except ProtocolError:
            fsr, pc = {"CFSR": 0, "HFSR": 0, "MMFAR": 0, "BFAR": 0}, None
        self.fault = faults.describe(exception, fsr, pc)
        self.platform.say(f"[warning ][cpu0@0][{self.sim.now_ps // 1000} ns] {self.fault}")

    def _stop_for_fault_or(self, stop: SimulationStop | None) -> None:
        if self.fault is not None:
            raise SimulationStop(StopReason.HARD_FAULT, self.fault)
        if stop is not None:
            raise stop

    # ---------------------------------------------------------------- device accesses
    def _in_window(self, address: int) -> bool:
        return any(a <= address < b for a, b in self.windows)

    def _access(self, regs: list[int]) -> dict:
        """Execute the load or store at PC: device transfers on the board, the others on QEMU's memory."""
        pc = regs[thumb.PC]
        code = self.code.get(pc)
        if code is None:
            raw = self.memory.read(pc, 4)
            code = self.code[pc] = (int.from_bytes(raw[:2], "little"), int.from_bytes(raw[2:], "little"))
        try:
            acc = thumb.decode(code[0], code[1], regs, pc)
        except thumb.Undecodable as e:
            raise SimulationStop(StopReason.HARD_FAULT, f"the instruction at 0x{pc:08x} accesses a device of the "
                                                        f"board in a way this bridge cannot execute: {e}") from None
        writes: dict = {}
        bus = self.platform.bus
        for t in acc.transfers:
            device = self._in_window(t.address)
            try:
                if acc.load:
                    if device:
                        value = bus.read_word(t.address, t.width, "cpu")
                    else:
                        value = int.from_bytes(self.memory.read(t.address, t.width), "little")
                    writes[t.register] = thumb.extend(value, t.width, t.signed)
                else:
                    value = (pc + 4 if t.register == thumb.PC else regs[t.register]) & ((1 << 8 * t.width) - 1)
                    if device:
                        bus.write_word(t.address, value, t.width, "cpu")
                    else:
                        self.memory.write(t.address, value.to_bytes(t.width, "little"))
            except BusFault as e:
                raise SimulationStop(StopReason.HARD_FAULT, f"bus error on a {8 * t.width}-bit "
                                                            f"{'read' if acc.load else 'write'} at PC 0x{pc:08x}: "
                                                            f"{e}") from None
        if acc.writeback is not None and acc.writeback[0] not in writes:
            writes[acc.writeback[0]] = acc.writeback[1]
        if acc.status is not None:
            writes[acc.status] = 0
        loaded_pc = writes.pop(thumb.PC, None)
        out = self._skip(regs, acc.size, writes)
        if loaded_pc is not None:  # a load into the PC branches (interworking: bit 0 is the Thumb state)
            out[thumb.PC] = loaded_pc & ~1
        return out
