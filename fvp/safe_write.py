"""Writing the files a run produces without destroying what was there when the write fails.

``write_file(path, data)`` writes to a temporary file next to ``path`` and renames it into place only when
every byte is written (and closed without error); a failure (missing or read-only directory, full disk,
``path`` a directory or a read-only file) leaves ``path`` as it was and removes the temporary file. A symbolic
link is followed (the link is kept, its target replaced), as ``fopen`` would; a loop of links is ``ELOOP``. A
``path`` that exists and is not a regular file is never replaced: a character device (``/dev/null``,
``/dev/full``, a terminal) or a FIFO is written in place, as ``fopen(path, "wb")`` would (a FIFO waits for its
reader); anything else (a socket, a block device) is refused. A file name with a NUL byte is ``EINVAL``. The
result says what happened with the real ``errno``: the semihosting ``SYS_OPEN``/``SYS_WRITE`` a firmware
makes, ``--trace``, ``--etdump``, ``fvp elf -o``, the drop-in's ``--pmu-trace`` and ``fvp compare``'s reports
all use it (shared by the rooms: the machine's semihosting, the host's reports). ``discard_temporary(tmp)`` is
that clean-up, for a writer that makes its own temporary file.
"""

from __future__ import annotations

import errno as errno_mod
import os
import stat
from typing import NamedTuple

from .errors import ConfigError, OutputLost

#: a write that failed for want of room or a working device: the command failed (exit 1), not bad usage (exit 2)
WRITE_ERRNOS = frozenset({errno_mod.ENOSPC, errno_mod.EDQUOT, errno_mod.EFBIG, errno_mod.EIO})


class WriteResult(NamedTuple):
    opened: bool  # the file could be created (``fopen`` succeeded)
    written: int  # bytes written before a failure (all of them on success)
    errno: int  # 0 on success
    strerror: str

    @property
    def ok(self) -> bool:
        return self.errno == 0

    def error(self, what: str):
        """The exception for this failed write, ``what`` its one-line description (``--json FILE: cannot
        write``): ``OutputLost`` (exit 1) when the file was opened or the failure is for want of room or a
        working device, else ``ConfigError`` (exit 2: a path that cannot be written)."""
        cls = OutputLost if self.opened or self.errno in WRITE_ERRNOS else ConfigError
        return cls(f"{what}: {self.strerror}")


def _failed(opened: bool, written: int, e: OSError) -> WriteResult:
    code = e.errno or errno_mod.EIO
    return WriteResult(opened, written, code, e.strerror or os.strerror(code))


_NUL = OSError(errno_mod.EINVAL, "the file name contains a NUL byte")


def _target(path: str):
    """``(final path, its stat or None)``: ``path`` with its symbolic links followed; ``OSError`` for a loop of
    links (``ELOOP``), a NUL byte in the name (``EINVAL``) or a directory that cannot be searched."""
    if "\0" in str(path):
        raise _NUL
    final = os.path.realpath(path)
    try:
        st = os.stat(path)  # follows the links: ELOOP for a loop, which realpath does not report
    except FileNotFoundError:
        return final, None  # a new file (also through a link to a file that does not exist yet)
    return final, st


def _check_target(path: str):
    """What ``fopen(path, "wb")`` would refuse about the file itself: a directory, a read-only file, a loop of
    links; and what is never replaced: anything but a regular file, a character device or a FIFO. Returns
    ``(final path, stat or None, WriteResult)``."""
    try:
        final, st = _target(path)
    except OSError as e:
        return path, None, _failed(False, 0, e)
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            return final, st, _failed(False, 0, OSError(errno_mod.EISDIR, os.strerror(errno_mod.EISDIR)))
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            kind = "a block device" if stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) \
                else "not a regular file"
            return final, st, _failed(False, 0, OSError(errno_mod.EINVAL, f"it is {kind}; not written"))
        if not os.access(final, os.W_OK):
            return final, st, _failed(False, 0, OSError(errno_mod.EACCES, os.strerror(errno_mod.EACCES)))
    return final, st, WriteResult(True, 0, 0, "")


def check_writable(path: str) -> WriteResult:
    """Whether ``write_file(path, ...)`` can create its file, without touching ``path``."""
    final, st, pre = _check_target(path)
    if not pre.ok or (st is not None and not stat.S_ISREG(st.st_mode)):
        return pre  # a device or FIFO is written in place: no directory entry is made
    directory = os.path.dirname(final) or "."
    try:
        if not stat.S_ISDIR(os.stat(directory).st_mode):
            raise OSError(errno_mod.ENOTDIR, os.strerror(errno_mod.ENOTDIR))
        if not os.access(directory, os.W_OK | os.X_OK):
            raise OSError(errno_mod.EACCES, os.strerror(errno_mod.EACCES))
    except OSError as e:
        return _failed(False, 0, e)
    return WriteResult(True, 0, 0, "")


def _write_all(fd: int, view, done: list) -> None:
    """Write all of ``view``; ``done[0]`` counts the bytes written (also when a write fails)."""
    while done[0] < len(view):
        n = os.write(fd, view[done[0]:])
        if n <= 0:
            raise OSError(errno_mod.ENOSPC, os.strerror(errno_mod.ENOSPC))
        done[0] += n


def _write_in_place(final: str, view) -> WriteResult:
    """A character device or a FIFO: opened and written as it is (never replaced, never truncated)."""
    try:
        fd = os.open(final, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        return _failed(False, 0, e)
    done = [0]
    try:
        try:
            _write_all(fd, view, done)
        finally:
            os.close(fd)
    except OSError as e:
        return _failed(True, done[0], e)
    return WriteResult(True, done[0], 0, "")


def write_file(path: str, data) -> WriteResult:
    """Write ``data`` (bytes-like) to ``path`` atomically (a regular file) or in place (a character device or a
    FIFO); never raises ``OSError``."""
    final, st, pre = _check_target(path)  # through a symbolic link, as fopen would
    if not pre.ok:
        return pre
    view = memoryview(data).cast("B")
    if st is not None and not stat.S_ISREG(st.st_mode):
        return _write_in_place(final, view)
    directory, name = os.path.split(final)
    tmp = None
    done = [0]
    try:
        for n in range(100):
            tmp = os.path.join(directory, f".{name}.{os.getpid()}.{n}.tmp")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
                break
            except FileExistsError:
                tmp = None
        else:
            raise OSError(errno_mod.EEXIST, os.strerror(errno_mod.EEXIST))
    except OSError as e:
        return _failed(False, 0, e)
    try:
        try:
            if st is not None:  # keep the mode of the file it replaces
                os.fchmod(fd, stat.S_IMODE(st.st_mode))
            _write_all(fd, view, done)
        finally:
            os.close(fd)  # a delayed write error (NFS, quota) surfaces here
        os.replace(tmp, final)
        tmp = None
    except OSError as e:
        return _failed(True, done[0], e)
    finally:
        discard_temporary(tmp)
    return WriteResult(True, done[0], 0, "")


def discard_temporary(tmp: str | None) -> None:
    """Remove the temporary file a failed write left (``None``: there is none); an error removing it is ignored."""
    if tmp is not None:
        try:
            os.unlink(tmp)
        except OSError:
            pass
