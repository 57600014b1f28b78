"""The QEMU process: finding it, checking its version, starting it wired to this process, and ending it.

``qemu-system-arm -M mps3-an547`` runs with ``-S`` (stopped before the first instruction), ``-icount
shift=N,sleep=off`` (a deterministic instruction clock), no default devices, and four channels to this process,
all inherited file descriptors (nothing is created in the file system that could outlive the run):

- the GDB remote stub on one end of a socket pair (``-chardev socket,fd=`` + ``-gdb chardev:``);
- a qtest server on another (``-object qtest,chardev=``): bulk memory reads and writes through the machine's
  address space, and its interrupt inputs (``set_irq_in``);
- QMP on a third: the instruction count (``query-replay``), ``info cpus``, ``quit``;
- UART0 into an unlinked regular file (``-chardev file,path=/dev/fd/N``), read as it grows: a file never blocks
  the UART's writer, so the guest never waits on this process;
- the DDR: an anonymous shared-memory file (``memfd``; an unlinked temporary file where there is none) that QEMU
  maps as the machine's RAM (``memory-backend-file,share=on``) and this process maps too: no copying.

Lifetime: QEMU dies with this process. On Linux the child asks the kernel for SIGKILL when its parent dies
(``prctl(PR_SET_PDEATHSIG)``); elsewhere a small watchdog process holds a pipe from this one and kills QEMU when
the pipe closes. Core dumps are off (QEMU aborts on a guest lock-up). ``close()`` kills and reaps it.
"""

from __future__ import annotations

import mmap
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

from ...errors import ConfigError
from . import an547

QEMU_ENV = "FVP_QEMU"  # the path of qemu-system-arm, when it is not on PATH
BINARY = "qemu-system-arm"
ICOUNT_SHIFT = 5  # QEMU's clock: 2^5 = 32 ns per instruction, about one 32 MHz (31.25 ns) CPU cycle
INSTALL_HINT = ("install QEMU >= 7.2 (Debian/Ubuntu: apt-get install qemu-system-arm; macOS: brew install qemu), "
                f"or set {QEMU_ENV}=/path/to/qemu-system-arm")
STDERR_LIMIT = 64 << 10  # of QEMU's stderr, the tail kept for messages


class QemuUnavailable(ConfigError):
    """QEMU is missing, too old or unusable: one line saying which and how to install it."""


def find_qemu() -> str | None:
    """The qemu-system-arm to run: ``$FVP_QEMU`` if set, else the one on PATH; None if there is none."""
    path = os.environ.get(QEMU_ENV)
    if path:
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(BINARY)


_VERSIONS: dict = {}


def qemu_version(path: str) -> tuple[int, int, int]:
    """``(major, minor, micro)`` of the QEMU at ``path`` (``--version``, cached per file and mtime)."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise QemuUnavailable(f"{path}: {e.strerror}") from None
    key = (path, st.st_mtime_ns, st.st_size)
    if key not in _VERSIONS:
        try:
            out = subprocess.run([path, "--version"], capture_output=True, timeout=20, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise QemuUnavailable(f"{path} --version failed: {e}") from None
        m = re.search(rb"version (\d+)\.(\d+)(?:\.(\d+))?", out.stdout)
        if out.returncode != 0 or not m:
            raise QemuUnavailable(f"{path} --version did not say its version (status {out.returncode})")
        _VERSIONS[key] = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
    return _VERSIONS[key]


def check_qemu() -> tuple[str, tuple]:
    """The usable QEMU's path and version; ``QemuUnavailable`` with one line if there is none."""
    path = find_qemu()
    if path is None:
        where = f"{QEMU_ENV}={os.environ[QEMU_ENV]} is not an executable file" if os.environ.get(QEMU_ENV) else \
            f"{BINARY} is not on PATH"
        raise QemuUnavailable(f"QEMU is not installed ({where}): {INSTALL_HINT}")
    version = qemu_version(path)
    if version[:2] < an547.MIN_VERSION:
        raise QemuUnavailable(f"{path} is QEMU {'.'.join(map(str, version))}, too old: running the ELF's code needs "
                              f"{'.'.join(map(str, an547.MIN_VERSION))} or newer ({INSTALL_HINT})")
    return path, version


def _pdeathsig():
    """In the child before exec: SIGKILL when the parent dies (Linux), no core files."""
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ValueError, OSError):
        pass
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    parent = int(os.environ.get("_FVP_QEMU_PARENT", "0"))
    if parent and os.getppid() != parent:  # the parent died before the prctl took effect
        os._exit(1)


_WATCHDOG = ("import os,signal,sys\n"
             "pid=int(sys.argv[1])\n"
             "try:\n    os.read(0,1)\nexcept OSError:\n    pass\n"
             "try:\n    os.kill(pid,signal.SIGKILL)\nexcept OSError:\n    pass\n")


def _anonymous_file(size: int, name: str) -> int:
    """A file descriptor of ``size`` zero bytes that has no name in the file system."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create(name, getattr(os, "MFD_CLOEXEC", 1))
    else:  # macOS and others: a temporary file, unlinked at once (the descriptor keeps it)
        fd, path = tempfile.mkstemp(prefix=f"fvp-{name}-")
        os.unlink(path)
    os.ftruncate(fd, size)
    return fd


class QemuProcess:
    """A running ``qemu-system-arm -M mps3-an547``, stopped before its first instruction."""

    def __init__(self, path: str, *, extra_args: tuple = ()):
        self.path = path
        self._closed = False
        self.proc = None
        self._watchdog = None
        self.ddr_fd = _anonymous_file(an547.DDR.size, "ddr")
        self.uart_fd = _anonymous_file(0, "uart0")
        self.stderr_fd = _anonymous_file(0, "stderr")
        pairs = {name: socket.socketpair() for name in ("gdb", "qtest", "qmp")}
        self.sockets = {name: ours for name, (ours, _) in pairs.items()}
        theirs = {name: t for name, (_, t) in pairs.items()}
        for fd in (self.ddr_fd, self.uart_fd):
            os.set_inheritable(fd, True)
        cmd = [path, "-M", an547.MACHINE, "-cpu", an547.CPU, "-nodefaults", "-display", "none", "-nic", "none",
               "-S", "-no-reboot", "-accel", "tcg", "-icount", f"shift={ICOUNT_SHIFT},sleep=off,align=off",
               "-object", f"memory-backend-file,id=fvp-ddr,size={an547.DDR.size},"
                          f"mem-path=/dev/fd/{self.ddr_fd},share=on",
               "-machine", "memory-backend=fvp-ddr",
               "-chardev", f"socket,id=fvp-gdb,fd={theirs['gdb'].fileno()}", "-gdb", "chardev:fvp-gdb",
               "-chardev", f"socket,id=fvp-qtest,fd={theirs['qtest'].fileno()}",
               "-object", "qtest,id=fvp-qtest-server,chardev=fvp-qtest,log=/dev/null",
               "-chardev", f"socket,id=fvp-qmp,fd={theirs['qmp'].fileno()}", "-qmp", "chardev:fvp-qmp",
               "-chardev", f"file,id=fvp-uart0,path=/dev/fd/{self.uart_fd}", "-serial", "chardev:fvp-uart0",
               *extra_args]
        env = dict(os.environ, _FVP_QEMU_PARENT=str(os.getpid()))
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=self.stderr_fd, env=env, preexec_fn=_pdeathsig,
                                         pass_fds=[self.ddr_fd, self.uart_fd, *(t.fileno() for t in theirs.values())])
        except OSError as e:
            self.close()
            raise QemuUnavailable(f"cannot start {path}: {e.strerror}") from None
        finally:
            for t in theirs.values():
                t.close()
        if not sys.platform.startswith("linux"):
            self._start_watchdog()
        self.ddr_map = mmap.mmap(self.ddr_fd, an547.DDR.size)
        self._uart_read = 0

    def _start_watchdog(self) -> None:
        r, w = os.pipe()
        self._watchdog = subprocess.Popen([sys.executable, "-S", "-c", _WATCHDOG, str(self.proc.pid)], stdin=r,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True)
        os.close(r)
        self._watchdog_pipe = w  # inherited by nobody else: its closing (this process's end) frees the watchdog

    # ---------------------------------------------------------------- what QEMU wrote
    def uart_output(self) -> bytes:
        """The bytes UART0 transmitted since the last call."""
        size = os.fstat(self.uart_fd).st_size
        if size <= self._uart_read:
            return b""
        data = os.pread(self.uart_fd, size - self._uart_read, self._uart_read)
        self._uart_read += len(data)
        return data

    def stderr_text(self) -> str:
        """The tail of what QEMU printed on stderr."""
        size = os.fstat(self.stderr_fd).st_size
        start = max(0, size - STDERR_LIMIT)
        return os.pread(self.stderr_fd, size - start, start).decode("utf-8", "replace")

    def thread_cpu_ticks(self, tid: int) -> int | None:
        """CPU time (clock ticks) QEMU's thread ``tid`` has used so far (Linux ``/proc``), or None."""
        try:
            with open(f"/proc/{self.proc.pid}/task/{tid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            return int(fields[11]) + int(fields[12])  # utime, stime (the 14th and 15th fields)
        except (OSError, IndexError, ValueError):
            return None

    def exited(self) -> int | None:
        return self.proc.poll() if self.proc is not None else 0

    def wait(self, timeout: float) -> int | None:
        """QEMU's exit status once it has exited (None if it still runs after ``timeout`` seconds)."""
        if self.proc is None:
            return 0
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    # ---------------------------------------------------------------- the end
    def close(self) -> None:
        """Kill QEMU (if it runs), reap it and its watchdog, and close every descriptor."""
        if self._closed:
            return
        self._closed = True
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - a process that ignores SIGKILL
                pass
        if self._watchdog is not None:
            os.close(self._watchdog_pipe)
            try:
                self._watchdog.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover
                self._watchdog.kill()
        for s in getattr(self, "sockets", {}).values():
            s.close()
        for fd in (getattr(self, "uart_fd", None), getattr(self, "stderr_fd", None)):
            if fd is not None:
                os.close(fd)
        if getattr(self, "ddr_fd", None) is not None:
            os.close(self.ddr_fd)  # the mapping stays valid until its last view is gone
