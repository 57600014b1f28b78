"""Parts of the full-system engine that need no QEMU: page coherence, fault descriptions, QEMU's last words, the
GDB packet framing, the AN547 map."""

import numpy as np
import pytest

from fvp.errors import SimulationStop, StopReason
from fvp.machine.qemu import an547, faults
from fvp.machine.qemu.bridge import Bridge
from fvp.machine.qemu.memory import PAGE, PageSync
from fvp.machine.qemu.rsp import GdbRemote, _run_length_decode


class Io:
    def __init__(self, size):
        self.mem = bytearray(range(256)) * (size // 256)
        self.reads, self.writes = [], []

    def read(self, a, n):
        self.reads.append((a, n))
        return bytes(self.mem[a - 0x1000:a - 0x1000 + n])

    def write(self, a, data):
        self.writes.append((a, len(data)))
        self.mem[a - 0x1000:a - 0x1000 + len(data)] = data


def test_pages_move_only_when_the_npu_touches_them():
    io = Io(16 * PAGE)
    data = np.zeros(16 * PAGE, np.uint8)
    sync = PageSync(data, 0x1000, io)
    sync.access(0, 100, False)  # inactive: the board's copy is the reference before the run
    assert io.reads == []
    sync.active = True
    sync.access(PAGE + 10, 2 * PAGE, False)  # pages 1..3, one read
    assert io.reads == [(0x1000 + PAGE, 3 * PAGE)] and data[PAGE + 10] == (PAGE + 10) % 256
    sync.access(2 * PAGE, 10, True)  # already there: no read; page 2 dirty
    assert len(io.reads) == 1
    data[2 * PAGE:2 * PAGE + 4] = 7
    sync.flush()
    assert io.writes == [(0x1000 + 2 * PAGE, PAGE)] and io.mem[2 * PAGE] == 7
    sync.access(PAGE, 1, False)  # after the CPU ran every page is stale again
    assert io.reads[-1] == (0x1000 + PAGE, PAGE) and sync.pages_read == 4 and sync.pages_written == 1


def test_fault_lines_say_the_fault_the_cfsr_and_the_pc():
    fsr = {"CFSR": 0x8200, "HFSR": 0x4000_0000, "MMFAR": 0, "BFAR": 0x4F00_0000}
    text = faults.describe(3, fsr, 0x1000_05B4)
    assert text == ("HardFault (FORCED, PRECISERR), CFSR 0x00008200, HFSR 0x40000000, BFAR 0x4f000000, "
                    "at PC 0x100005b4")
    assert "process stack" in faults.describe(6, {"CFSR": 1 << 17, "HFSR": 0, "MMFAR": 0, "BFAR": 0}, None)
    regs = [0] * 17
    regs[13], regs[14] = 0x3000_0100, 0xFFFF_FFF9  # EXC_RETURN: main stack
    assert faults.stacked_pc(regs, lambda a: a) == 0x3000_0118
    regs[14] = 0xFFFF_FFFD  # process stack: not readable through QEMU 7.2's stub
    assert faults.stacked_pc(regs, lambda a: a) is None


def test_qemus_own_end():
    dump = "qemu: fatal: Lockup: can't escalate 3 to HardFault (current priority -1)\nR00=00000000 R15=100002fc\n"
    assert faults.qemu_exit(dump, -6) == ("lockup", "Lockup: can't escalate 3 to HardFault (current priority -1) "
                                                    "(PC 0x100002fc)")
    assert faults.qemu_exit("", 0)[0] == "reset"
    reason, message = faults.qemu_exit("qemu-system-arm: something broke\n", 1)
    assert reason == "qemu" and "something broke" in message and "status 1" in message


def test_gdb_packets():
    assert GdbRemote.frame(b"g") == b"$g#67"
    assert GdbRemote.register_packet(15, 0x1000_0934) == b"Pf=34090010"
    assert _run_length_decode(b"0* ") == b"0000"  # '*' then ' ' (32): 3 more repeats
    assert GdbRemote.words(b"01000000ffffffff", 2) == [1, 0xFFFF_FFFF]


def test_the_an547_map():
    assert an547.memory_at(0x3100_0000, 16)[0].name == "ISRAM" and an547.memory_at(0x2100_0000)[1] == 0
    assert an547.memory_at(0x7000_0000)[0] is an547.DDR and an547.memory_at(0x4810_2000) is None
    assert an547.QEMU_SYSTEM_REGISTERS < {r.name for r in __import__("hwdesc.cortex_m55").cortex_m55.REGISTERS}


class _Uart:
    def transmit(self, data):
        if b"\x04" in data:
            raise SimulationStop(StopReason.USER, "EOT")


class _Gdb:
    def __init__(self, replies):
        self.replies = list(replies)

    def receive(self, timeout=None):
        return self.replies.pop(0) if self.replies else None


def _ending_bridge(replies):
    b = Bridge.__new__(Bridge)
    b.uart, b._uart_done, b._pending_ok, b.gdb = _Uart(), False, 1, _Gdb(replies)
    b.proc = type("Proc", (), {"uart_output": lambda self: b"done\n\x04"})()
    b.ended = []
    b._clock = lambda: b.ended.append("clock at the stop")
    b._interrupt = lambda: b.ended.append("interrupted")
    return b


def test_an_eot_seen_while_the_cpu_runs_ends_at_its_next_stop():
    # a poll found the EOT before the CPU's next stop: that stop's time is the end's, as when the stop sees it
    # (the OK still owed to a register write is skipped); only a CPU that does not stop is interrupted
    for replies, ended in (([b"OK", b"T05thread:01;"], ["clock at the stop"]), ([b"OK"], ["interrupted"])):
        b = _ending_bridge(replies)
        with pytest.raises(SimulationStop):
            b._emit_uart(running=True)
        assert b.ended == ended and b._uart_done


def test_a_broken_channel_of_a_dead_qemu_is_qemus_end():
    # whichever channel notices first (GDB, qtest or QMP), a QEMU that died is said as such; one that runs is not
    from fvp.machine.qemu.rsp import ProtocolError

    def broken():
        raise ProtocolError("QEMU's QMP connection failed: [Errno 104] Connection reset by peer")

    for status, expect in ((-9, StopReason.QEMU), (None, ProtocolError)):
        b = Bridge.__new__(Bridge)
        b._run, b.uart = broken, None
        b.proc = type("Proc", (), {"wait": lambda self, t: status, "stderr_text": lambda self: "",
                                   "close": lambda self: None, "exited": lambda self: status})()
        with pytest.raises((SimulationStop, ProtocolError)) as e:
            b.run()
        if expect is StopReason.QEMU:
            assert e.value.reason == StopReason.QEMU and "QEMU exited unexpectedly (status -9)" in e.value.message
        else:
            assert type(e.value) is ProtocolError
