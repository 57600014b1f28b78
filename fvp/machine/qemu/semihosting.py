"""Semihosting as the FVP serves it, for code that runs on QEMU: the host side of ``BKPT 0xAB``.

The operations of :mod:`hwdesc.semihosting`, with the parameter blocks of the specification. What the FVP does
and this does too: the console (``:tt``, in any mode: newlib's stdout and stderr) is this process's stdout, in
order with UART0's output (ExecuTorch's test harness reads the runner's log there), files are
host files relative to ``cpu0.semihosting-cwd``, ``SYS_GET_CMDLINE`` answers ``cpu0.semihosting-cmd_line``,
``SYS_HEAPINFO`` answers the ``cpu0.semihosting-heap_base``/``-heap_limit``/``-stack_base``/``-stack_limit``
parameters (0 for each one not given: "no information", so newlib's start-up keeps the linker's stack and heap),
``SYS_EXIT``/``SYS_EXIT_EXTENDED`` end the simulation with the application's status. The clocks are simulated:
``SYS_CLOCK`` is centiseconds and ``SYS_ELAPSED`` CPU cycles of simulated time (``SYS_TICKFREQ`` is the CPU clock),
so they are the same every run; ``SYS_TIME`` is the host's wall clock, as on the FVP.

The terminal's input (``SYS_READ`` of ``:tt`` opened for reading) is a line of the host's stdin at a time, as the
FVP reads it (ExecuTorch's semihosting server mode takes its requests there), the console's output flushed first.

Simplified: ``SYS_READC`` answers -1;
``SYS_SYSTEM`` runs nothing (it answers -1: a firmware does not get a shell on the user's machine);
``SYS_TMPNAM`` names files in the semihosting cwd. A file opened for writing from its start (``w`` modes) is kept
in memory and written when closed (or at the end of the run), through ``fvp.safe_write``: a run that fails to
write it leaves the file that was there.
"""

from __future__ import annotations

import errno as errno_mod
import os
import sys
import time

from hwdesc.semihosting import (ADP_STOPPED_APPLICATION_EXIT, CONSOLE, OPEN_MODES, OPERATIONS as OP)

from ...errors import SimulationStop, StopReason
from ...safe_write import write_file

MAX_NAME = 4096  # a path the firmware names (SYS_OPEN, SYS_REMOVE, ...)
MAX_STRING = 1 << 20  # a SYS_WRITE0 string
MAX_WRITTEN = 1 << 30  # bytes of one file opened for writing (kept in memory until closed)
_FAIL = 0xFFFFFFFF  # -1


class _Console:
    def __init__(self, stream: str):
        self.stream = stream  # "stdin", "stdout", "stderr"


class _HostFile:
    """A host file opened with a real descriptor (read, update and append modes)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.pos = 0

    def read(self, n: int) -> bytes:
        data = os.pread(self.fd, n, self.pos)
        self.pos += len(data)
        return data

    def write(self, data: bytes) -> int:
        n = os.pwrite(self.fd, data, self.pos)
        self.pos += n
        return n

    def length(self) -> int:
        return os.fstat(self.fd).st_size

    def close(self) -> int:
        os.close(self.fd)
        return 0


class _NewFile:
    """A file opened for writing from its start: bytes kept in memory, written at close (atomically)."""

    def __init__(self, path: str):
        self.path = path
        self.data = bytearray()
        self.pos = 0

    def read(self, n: int) -> bytes:
        out = bytes(self.data[self.pos:self.pos + n])
        self.pos += len(out)
        return out

    def write(self, data: bytes) -> int:
        end = self.pos + len(data)
        if end > MAX_WRITTEN:
            raise OSError(errno_mod.EFBIG, os.strerror(errno_mod.EFBIG))
        if end > len(self.data):
            self.data.extend(bytes(end - len(self.data)))
        self.data[self.pos:end] = data
        self.pos = end
        return len(data)

    def length(self) -> int:
        return len(self.data)

    def close(self) -> int:
        result = write_file(self.path, self.data)
        if not result.ok:
            raise OSError(result.errno, result.strerror, self.path)
        return 0


class Semihosting:
    """The host's side. ``memory`` reads and writes guest memory (``read(addr, n)``, ``write(addr, data)``);
    ``console(data, stream)`` prints; ``read_line(n)`` is a line of the terminal's input, at most ``n`` bytes (None
    at its end; no ``read_line``: the terminal has no input); ``now_ps()`` and ``cpu_cycles()`` are the simulated
    clocks."""

    def __init__(self, memory, *, cwd: str, cmdline: str, heapinfo=(0, 0, 0, 0), cpu_hz: int, now_ps, cpu_cycles,
                 console, note=None, read_line=None):
        self.mem = memory
        self.cwd = cwd
        self.cmdline = cmdline
        self.heapinfo = tuple(int(v) & 0xFFFFFFFF for v in heapinfo)
        self.cpu_hz = cpu_hz
        self.now_ps = now_ps
        self.cpu_cycles = cpu_cycles
        self.console = console
        self.note = note or (lambda message: None)
        self.read_line = read_line
        self.files: dict = {}
        self.prefetched: tuple | None = None  # (address, bytes) of memory the bridge read ahead, for this call only
        self.errno = 0
        self.calls = 0
        self._next = 1  # handle 0 is never given out

    # ---------------------------------------------------------------- helpers
    def _words(self, address: int, n: int) -> list[int]:
        pre = self.prefetched
        if pre is not None and pre[0] == address and 4 * n <= len(pre[1]):
            raw = pre[1]  # the bridge read the parameter block with the registers
        else:
            raw = self.mem.read(address, 4 * n)
        return [int.from_bytes(raw[4 * i:4 * i + 4], "little") for i in range(n)]

    def _string(self, address: int, length: int) -> str:
        if length > MAX_NAME:
            raise OSError(errno_mod.ENAMETOOLONG, os.strerror(errno_mod.ENAMETOOLONG))
        return self.mem.read(address, length).decode("utf-8", "surrogateescape")

    def _path(self, name: str) -> str:
        return name if os.path.isabs(name) else os.path.join(self.cwd, name)

    def _handle(self, obj) -> int:
        h = self._next
        self._next += 1
        self.files[h] = obj
        return h

    def _fail(self, e: OSError) -> int:
        self.errno = e.errno or errno_mod.EIO
        return _FAIL

    # ---------------------------------------------------------------- the call
    def call(self, op: int, param: int) -> int:
        """Serve operation ``op`` with parameter register ``param``; the value for r0."""
        self.calls += 1
        try:
            return self._call(op, param)
        finally:
            self.prefetched = None

    def _call(self, op: int, param: int) -> int:
        name = OP.get(op)
        handler = getattr(self, f"_{name.lower()}", None) if name else None
        if handler is None:
            self.note(f"semihosting operation 0x{op:x} is not supported (answered -1)")
            self.errno = errno_mod.ENOSYS
            return _FAIL
        try:
            return handler(param) & 0xFFFFFFFF
        except OSError as e:
            return self._fail(e)

    def _sys_open(self, param: int) -> int:
        name_ptr, mode, length = self._words(param, 3)
        name = self._string(name_ptr, length)
        if mode >= len(OPEN_MODES):
            raise OSError(errno_mod.EINVAL, os.strerror(errno_mod.EINVAL))
        m = OPEN_MODES[mode]
        if name == CONSOLE:
            return self._handle(_Console("stdin" if m[0] == "r" else "stdout" if m[0] == "w" else "stderr"))
        path = self._path(name)
        if m[0] == "w" and "+" not in m:
            if os.path.isdir(path):
                raise OSError(errno_mod.EISDIR, os.strerror(errno_mod.EISDIR), path)
            if not os.path.isdir(os.path.dirname(os.path.realpath(path)) or "."):
                raise OSError(errno_mod.ENOENT, os.strerror(errno_mod.ENOENT), path)
            return self._handle(_NewFile(path))
        flags = {"r": os.O_RDONLY, "r+": os.O_RDWR, "w+": os.O_RDWR | os.O_CREAT | os.O_TRUNC,
                 "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND, "a+": os.O_RDWR | os.O_CREAT | os.O_APPEND}[m.rstrip("b")]
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o666)
        f = _HostFile(fd)
        if m[0] == "a":
            f.pos = f.length()
        return self._handle(f)

    def _file(self, handle: int):
        f = self.files.get(handle)
        if f is None:
            raise OSError(errno_mod.EBADF, os.strerror(errno_mod.EBADF))
        return f

    def _sys_close(self, param: int) -> int:
        (handle,) = self._words(param, 1)
        f = self._file(handle)
        del self.files[handle]
        return 0 if isinstance(f, _Console) else f.close()

    def _sys_writec(self, param: int) -> int:
        self.console(self.mem.read(param, 1), "stdout")
        return 0

    def _sys_write0(self, param: int) -> int:
        out = bytearray()
        while len(out) < MAX_STRING:
            chunk = self.mem.read(param + len(out), 256)
            nul = chunk.find(b"\0")
            if nul >= 0:
                out += chunk[:nul]
                break
            out += chunk
        self.console(bytes(out), "stdout")
        return 0

    def _sys_write(self, param: int) -> int:
        handle, buf, length = self._words(param, 3)
        f = self._file(handle)
        data = self.mem.read(buf, length) if length else b""
        if isinstance(f, _Console):
            self.console(data, "stdout")
            return 0
        return length - f.write(data)

    def _sys_read(self, param: int) -> int:
        handle, buf, length = self._words(param, 3)
        f = self._file(handle)
        if isinstance(f, _Console):  # the terminal's input: a line of the host's stdin (none: end of file)
            data = self.read_line(length) if f.stream == "stdin" and self.read_line is not None else None
            if data:
                self.mem.write(buf, data[:length])
            return length - len(data[:length]) if data else length
        data = f.read(min(length, max(0, f.length() - f.pos)))
        if data:
            self.mem.write(buf, data)
        return length - len(data)

    def _sys_readc(self, param: int) -> int:
        return _FAIL

    def _sys_iserror(self, param: int) -> int:
        (status,) = self._words(param, 1)
        return 1 if status & 0x80000000 else 0

    def _sys_istty(self, param: int) -> int:
        (handle,) = self._words(param, 1)
        return 1 if isinstance(self._file(handle), _Console) else 0

    def _sys_seek(self, param: int) -> int:
        handle, pos = self._words(param, 2)
        f = self._file(handle)
        if isinstance(f, _Console):
            raise OSError(errno_mod.ESPIPE, os.strerror(errno_mod.ESPIPE))
        f.pos = pos
        return 0

    def _sys_flen(self, param: int) -> int:
        (handle,) = self._words(param, 1)
        f = self._file(handle)
        if isinstance(f, _Console):
            raise OSError(errno_mod.ESPIPE, os.strerror(errno_mod.ESPIPE))
        return f.length()

    def _sys_tmpnam(self, param: int) -> int:
        buf, ident, length = self._words(param, 3)
        name = os.path.join(self.cwd, f"fvp-tmp-{ident & 0xFF:03d}").encode() + b"\0"
        if len(name) > length:
            raise OSError(errno_mod.ENAMETOOLONG, os.strerror(errno_mod.ENAMETOOLONG))
        self.mem.write(buf, name)
        return 0

    def _sys_remove(self, param: int) -> int:
        name_ptr, length = self._words(param, 2)
        os.unlink(self._path(self._string(name_ptr, length)))
        return 0

    def _sys_rename(self, param: int) -> int:
        old, old_len, new, new_len = self._words(param, 4)
        os.rename(self._path(self._string(old, old_len)), self._path(self._string(new, new_len)))
        return 0

    def _sys_clock(self, param: int) -> int:
        return self.now_ps() // 10 ** 10

    def _sys_time(self, param: int) -> int:
        return int(time.time())

    def _sys_system(self, param: int) -> int:
        self.note("semihosting SYS_SYSTEM asked to run a host command: refused (answered -1)")
        return _FAIL

    def _sys_errno(self, param: int) -> int:
        return self.errno

    def _sys_get_cmdline(self, param: int) -> int:
        buf, length = self._words(param, 2)
        text = self.cmdline.encode()
        if len(text) + 1 > length:
            return _FAIL
        self.mem.write(buf, text + b"\0")
        self.mem.write(param + 4, len(text).to_bytes(4, "little"))
        return 0

    def _sys_heapinfo(self, param: int) -> int:
        (block,) = self._words(param, 1)
        self.mem.write(block, b"".join(v.to_bytes(4, "little") for v in self.heapinfo))
        return 0

    def _sys_exit(self, param: int) -> int:
        raise SimulationStop(StopReason.EXIT, "0" if param == ADP_STOPPED_APPLICATION_EXIT else "1")

    def _sys_exit_extended(self, param: int) -> int:
        reason, subcode = self._words(param, 2)
        if reason == ADP_STOPPED_APPLICATION_EXIT:
            code = subcode - (1 << 32) if subcode & 0x80000000 else subcode
            raise SimulationStop(StopReason.EXIT, str(code))
        raise SimulationStop(StopReason.EXIT, "1")

    def _sys_elapsed(self, param: int) -> int:
        self.mem.write(param, int(self.cpu_cycles()).to_bytes(8, "little"))
        return 0

    def _sys_tickfreq(self, param: int) -> int:
        return self.cpu_hz

    # ---------------------------------------------------------------- the end of the run
    def close(self) -> list[str]:
        """Write the files still open for writing (as the FVP would have them on disk); problems, one line each."""
        problems = []
        for handle, f in sorted(self.files.items()):
            if not isinstance(f, _Console):
                try:
                    f.close()
                except OSError as e:
                    problems.append(f"semihosting file {getattr(f, 'path', handle)}: {e.strerror}")
        self.files.clear()
        return problems


def console_writer(flush, stdout=None):
    """The console of the FVP: bytes to this process's stdout, after the UART's pending output."""
    def write(data: bytes, stream: str) -> None:
        flush()
        target = stdout or sys.stdout
        buf = getattr(target, "buffer", None)
        if buf is not None:
            target.flush()
            buf.write(data)
            buf.flush()
        else:
            target.write(data.decode("latin-1"))
            target.flush()
    return write
