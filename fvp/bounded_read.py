"""Reading a file never more than it can hold: one bounded reader for every file read on the user's behalf.

``read_input(path, limit, ...)`` returns the bytes of ``path`` if there are at most ``limit`` of them. A regular
file larger than its bound is refused from its size, without reading it; anything else (a pipe, a character
device such as ``/dev/zero``) is read in chunks until the bound, and never more than ``STREAM_LIMIT``, is
passed (a stream has no size to check first, so what it sends must be held: 256 MiB is more than any program
or tensor a board holds in practice and keeps a refusal fast and small). The refusal is one line
(``ConfigProblems``, exit status 2). Host memory for one file is at most its bound plus one chunk.
``read_text`` is the bound for text (board YAML, ``-f`` parameter files): ``TEXT_LIMIT``. ``open_regular`` opens
a file that is read in parts (an ELF, whose headers say where to seek): a regular file within its bound, else one
line.

Shared by the rooms: the boards read their YAML with it, the machine's semihosting its host files, the host
the files a command line names (the bounds that depend on a board: ``fvp.host.inputs``).
"""

from __future__ import annotations

import os
import stat

from .errors import ConfigProblems
from .units import format_size

TEXT_LIMIT = 4 * 1024 * 1024  # a board YAML or an -f parameter file (the largest shipped board file is ~10 KiB)
STREAM_LIMIT = 256 * 1024 * 1024  # what a pipe or device may send, whatever the bound
_CHUNK = 1 << 20


class InputTooLarge(ConfigProblems):
    """A file is larger than what it can be (one line, exit status 2)."""


def _open(path, label: str, kind: str):
    """``path`` open for reading in binary; ``ConfigProblems`` with one line when it cannot be."""
    if "\0" in str(path):
        raise ConfigProblems([f"{label}: the file name contains a NUL byte"])
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise ConfigProblems([f"{label}: {kind} not found"]) from None
    except IsADirectoryError:
        raise ConfigProblems([f"{label}: is a directory, not a {kind}"]) from None
    except OSError as e:
        raise ConfigProblems([f"{label}: cannot read {kind}: {e.strerror or e}"]) from None


def read_input(path, limit: int, *, label: str | None = None, kind: str = "file", why: str = "") -> bytes:
    """The bytes of ``path`` if there are at most ``limit`` of them; else ``InputTooLarge``.

    Problems are one line starting with ``label`` (default: the path): ``<label>: <kind> not found``,
    ``<label>: cannot read <kind>: <reason>``, ``<label>: <kind> is larger than <limit> (<why>)``.
    """
    label = label or str(path)
    limit = max(0, int(limit))
    f = _open(path, label, kind)
    bound = f"{kind} is larger than {format_size(limit)} ({limit} bytes){': ' + why if why else ''}"
    with f:
        try:
            st = os.fstat(f.fileno())
            if stat.S_ISDIR(st.st_mode):
                raise ConfigProblems([f"{label}: is a directory, not a {kind}"])
            if stat.S_ISREG(st.st_mode):
                if st.st_size > limit:
                    raise InputTooLarge([f"{label}: {bound}"])
                data = f.read(limit + 1)
            else:  # a pipe or a device: no size to trust, read until EOF or past the bound
                cap = min(limit, STREAM_LIMIT)
                chunks, n = [], 0
                while n <= cap:
                    chunk = f.read(min(_CHUNK, cap + 1 - n))
                    if not chunk:
                        break
                    chunks.append(chunk)
                    n += len(chunk)
                if n > cap:
                    chunks.clear()
                    if cap < limit:
                        bound = (f"{kind} is a pipe or device that sent more than {format_size(cap)}, what this "
                                 f"simulator reads from a stream: give a regular file")
                    raise InputTooLarge([f"{label}: {bound}"])
                data = b"".join(chunks)
        except OSError as e:
            raise ConfigProblems([f"{label}: cannot read {kind}: {e.strerror or e}"]) from None
    if len(data) > limit:  # a regular file that grew while it was read
        raise InputTooLarge([f"{label}: {bound}"])
    return data


def read_text(path, *, label: str | None = None, kind: str = "file") -> bytes:
    """A board YAML or parameter file, bounded by ``TEXT_LIMIT``."""
    return read_input(path, TEXT_LIMIT, label=label, kind=kind, why="not a plausible board or parameter file")


def open_regular(path, limit: int, *, label: str | None = None, kind: str = "file", why: str = ""):
    """``path`` open for reading in binary, if it is a regular file of at most ``limit`` bytes (a pipe or device
    has no size, and what its headers claim cannot be sought in); else ``ConfigProblems``, one line."""
    label = label or str(path)
    f = _open(path, label, kind)
    st = os.fstat(f.fileno())
    if stat.S_ISREG(st.st_mode) and st.st_size <= limit:
        return f
    f.close()
    if stat.S_ISREG(st.st_mode):
        raise InputTooLarge([f"{label}: {kind} is larger than {format_size(limit)} ({st.st_size} bytes)"
                             f"{': ' + why if why else ''}"])
    if stat.S_ISDIR(st.st_mode):
        raise ConfigProblems([f"{label}: is a directory, not a {kind}"])
    raise ConfigProblems([f"{label}: not a regular file (a {kind} must be a file the simulator can seek in)"])
