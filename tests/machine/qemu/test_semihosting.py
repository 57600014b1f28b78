"""The host side of semihosting for code run on QEMU, with a fake guest memory (no QEMU needed)."""

import os
import struct

import pytest

from fvp.errors import SimulationStop
from fvp.machine.qemu.semihosting import Semihosting
from hwdesc.semihosting import ADP_STOPPED_APPLICATION_EXIT, OPEN_MODES, OPERATIONS as OP


class Memory:
    def __init__(self):
        self.b = bytearray(1 << 16)

    def read(self, a, n):
        return bytes(self.b[a:a + n])

    def write(self, a, data):
        self.b[a:a + len(data)] = data

    def words(self, a, *values):
        self.write(a, struct.pack(f"<{len(values)}I", *values))

    def string(self, a, text):
        self.write(a, text.encode() + b"\0")
        return len(text)


@pytest.fixture
def sh(tmp_path):
    out = []
    mem = Memory()
    s = Semihosting(mem, cwd=str(tmp_path), cmdline="app -m x.pte", heapinfo=(1, 2, 3, 4), cpu_hz=32_000_000,
                    now_ps=lambda: 123_456_789_000, cpu_cycles=lambda: 3950617, console=lambda d, st: out.append((st, d)))
    s.out, s.memory = out, mem
    return s


def _open(sh, name, mode):
    n = sh.memory.string(0x100, name)
    sh.memory.words(0x80, 0x100, OPEN_MODES.index(mode), n)
    return sh.call(OP.SYS_OPEN, 0x80)


def test_console_writes_and_the_command_line(sh):
    sh.memory.string(0x200, "hello\n")
    sh.call(OP.SYS_WRITE0, 0x200)
    h = _open(sh, ":tt", "w")
    sh.memory.words(0x90, h, 0x200, 3)
    assert sh.call(OP.SYS_WRITE, 0x90) == 0
    assert sh.out == [("stdout", b"hello\n"), ("stdout", b"hel")]
    assert sh.call(OP.SYS_ISTTY, sh.memory.words(0x94, h) or 0x94) == 1
    sh.memory.words(0xA0, 0x300, 64)
    assert sh.call(OP.SYS_GET_CMDLINE, 0xA0) == 0
    assert sh.memory.read(0x300, 13) == b"app -m x.pte\0" and struct.unpack_from("<I", sh.memory.b, 0xA4)[0] == 12
    sh.memory.words(0xA0, 0x300, 5)  # too small a buffer
    assert sh.call(OP.SYS_GET_CMDLINE, 0xA0) == 0xFFFFFFFF


def test_files_read_and_written_in_the_cwd(sh, tmp_path):
    (tmp_path / "in.bin").write_bytes(b"0123456789")
    h = _open(sh, "in.bin", "rb")
    sh.memory.words(0xB0, h)
    assert sh.call(OP.SYS_FLEN, 0xB0) == 10
    sh.memory.words(0xB0, h, 0x400, 16)
    assert sh.call(OP.SYS_READ, 0xB0) == 6 and sh.memory.read(0x400, 10) == b"0123456789"  # 6 not read: EOF
    sh.memory.words(0xB0, h, 4)
    assert sh.call(OP.SYS_SEEK, 0xB0) == 0
    sh.memory.words(0xB0, h, 0x400, 2)
    assert sh.call(OP.SYS_READ, 0xB0) == 0 and sh.memory.read(0x400, 2) == b"45"
    (tmp_path / "out.bin").write_bytes(b"old contents")
    w = _open(sh, "out.bin", "wb")
    sh.memory.write(0x500, b"new")
    sh.memory.words(0xC0, w, 0x500, 3)
    assert sh.call(OP.SYS_WRITE, 0xC0) == 0
    assert (tmp_path / "out.bin").read_bytes() == b"old contents"  # written when closed, whole
    sh.memory.words(0xC0, w)
    assert sh.call(OP.SYS_CLOSE, 0xC0) == 0 and (tmp_path / "out.bin").read_bytes() == b"new"
    assert _open(sh, "missing.bin", "rb") == 0xFFFFFFFF and sh.call(OP.SYS_ERRNO, 0) == 2  # ENOENT
    left = _open(sh, "left_open.bin", "wb")
    sh.memory.words(0xC0, left, 0x500, 3)
    sh.call(OP.SYS_WRITE, 0xC0)
    assert sh.close() == [] and (tmp_path / "left_open.bin").read_bytes() == b"new"  # written at the end


def test_heapinfo_clocks_and_refusals(sh):
    sh.memory.words(0xD0, 0x600)
    assert sh.call(OP.SYS_HEAPINFO, 0xD0) == 0 and struct.unpack_from("<4I", sh.memory.b, 0x600) == (1, 2, 3, 4)
    assert sh.call(OP.SYS_CLOCK, 0) == 12  # centiseconds of simulated time (123.456 ms)
    assert sh.call(OP.SYS_TICKFREQ, 0) == 32_000_000
    assert sh.call(OP.SYS_ELAPSED, 0x700) == 0 and struct.unpack_from("<Q", sh.memory.b, 0x700)[0] == 3950617
    notes = []
    sh.note = notes.append
    assert sh.call(OP.SYS_SYSTEM, 0) == 0xFFFFFFFF and "refused" in notes[-1]
    assert sh.call(0x42, 0) == 0xFFFFFFFF and "not supported" in notes[-1]
    sh.memory.words(0xE0, 12345)
    assert sh.call(OP.SYS_CLOSE, 0xE0) == 0xFFFFFFFF and sh.call(OP.SYS_ERRNO, 0) == 9  # EBADF


def test_exits(sh):
    with pytest.raises(SimulationStop) as e:
        sh.call(OP.SYS_EXIT, ADP_STOPPED_APPLICATION_EXIT)
    assert (e.value.reason, e.value.message) == ("exit", "0")
    with pytest.raises(SimulationStop) as e:
        sh.call(OP.SYS_EXIT, 0x20023)  # a run-time error (abort)
    assert e.value.message == "1"
    sh.memory.words(0xF0, ADP_STOPPED_APPLICATION_EXIT, 0xFFFFFFFE)
    with pytest.raises(SimulationStop) as e:
        sh.call(OP.SYS_EXIT_EXTENDED, 0xF0)
    assert e.value.message == "-2"


def test_writing_where_it_cannot_is_an_error_not_a_crash(sh, tmp_path):
    os.mkdir(tmp_path / "adir")
    assert _open(sh, "adir", "wb") == 0xFFFFFFFF
    assert _open(sh, "no/such/dir/x.bin", "wb") == 0xFFFFFFFF
