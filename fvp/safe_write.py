"""Writing the files a run produces without destroying what was there when the write fails.

``write_file(path, data)`` writes to a temporary file next to ``path`` and renames it into place only when
every byte is written (and closed without error); a failure (missing or read-only directory, full disk,
``path`` a directory or a read-only file) leaves ``path`` as it was and removes the temporary file. The
result says what happened with the real ``errno``: the semihosting ``SYS_OPEN``/``SYS_WRITE`` a firmware
makes and ``--trace`` both use it (shared by the rooms: the machine's semihosting, the host's reports).
``discard_temporary(tmp)`` is that clean-up, for a writer that makes its own temporary file (the NPU model's
disk cache).
"""

from __future__ import annotations

import errno as errno_mod
import os
import stat
from typing import NamedTuple


class WriteResult(NamedTuple):
    opened: bool  # the file could be created (``fopen`` succeeded)
    written: int  # bytes written before a failure (all of them on success)
    errno: int  # 0 on success
    strerror: str

    @property
    def ok(self) -> bool:
        return self.errno == 0


def _failed(opened: bool, written: int, e: OSError) -> WriteResult:
    code = e.errno or errno_mod.EIO
    return WriteResult(opened, written, code, e.strerror or os.strerror(code))


def _check_target(final: str) -> WriteResult:
    """What ``fopen(path, "wb")`` would refuse about the file itself: a directory, a read-only file."""
    if os.path.isdir(final):
        return _failed(False, 0, OSError(errno_mod.EISDIR, os.strerror(errno_mod.EISDIR)))
    if os.path.exists(final) and not os.access(final, os.W_OK):
        return _failed(False, 0, OSError(errno_mod.EACCES, os.strerror(errno_mod.EACCES)))
    return WriteResult(True, 0, 0, "")


def check_writable(path: str) -> WriteResult:
    """Whether ``write_file(path, ...)`` can create its file, without touching ``path``."""
    final = os.path.realpath(path)
    pre = _check_target(final)
    if not pre.ok:
        return pre
    directory = os.path.dirname(final) or "."
    try:
        if not stat.S_ISDIR(os.stat(directory).st_mode):
            raise OSError(errno_mod.ENOTDIR, os.strerror(errno_mod.ENOTDIR))
        if not os.access(directory, os.W_OK | os.X_OK):
            raise OSError(errno_mod.EACCES, os.strerror(errno_mod.EACCES))
    except OSError as e:
        return _failed(False, 0, e)
    return WriteResult(True, 0, 0, "")


def write_file(path: str, data) -> WriteResult:
    """Write ``data`` (bytes-like) to ``path`` atomically; never raises ``OSError``."""
    final = os.path.realpath(path)  # through a symbolic link, as fopen would
    pre = _check_target(final)
    if not pre.ok:
        return pre
    directory, name = os.path.split(final)
    view = memoryview(data).cast("B")
    tmp = None
    written = 0
    try:
        for n in range(100):
            tmp = os.path.join(directory, f".{name}.{os.getpid()}.{n}.tmp")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                break
            except FileExistsError:
                tmp = None
        else:
            raise OSError(errno_mod.EEXIST, os.strerror(errno_mod.EEXIST))
    except OSError as e:
        return _failed(False, 0, e)
    try:
        try:
            if os.path.exists(final):  # keep the mode of the file it replaces
                os.fchmod(fd, stat.S_IMODE(os.stat(final).st_mode))
            while written < len(view):
                n = os.write(fd, view[written:])
                if n <= 0:
                    raise OSError(errno_mod.ENOSPC, os.strerror(errno_mod.ENOSPC))
                written += n
        finally:
            os.close(fd)  # a delayed write error (NFS, quota) surfaces here
        os.replace(tmp, final)
        tmp = None
    except OSError as e:
        return _failed(True, written, e)
    finally:
        discard_temporary(tmp)
    return WriteResult(True, written, 0, "")


def discard_temporary(tmp: str | None) -> None:
    """Remove the temporary file a failed write left (``None``: there is none); an error removing it is ignored."""
    if tmp is not None:
        try:
            os.unlink(tmp)
        except OSError:
            pass
