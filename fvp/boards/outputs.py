"""Where a board may make the simulator write: the UART's ``out_file``.

Who set the value decides what it may do (the loader records the origin of every key):

- on the command line (``-C devices.uart0.out_file=...``, the FVP's ``-C mps3_board.uart0.out_file=...``, a
  drop-in ``-f`` parameter file, or an override an API caller passes): written where it says, replacing an
  existing file, as the FVP does: the user asked for it;
- in a board file (including the files it ``extends:``): only a new file inside the directory the command
  runs in (a relative path, no ``..`` or symbolic link leading out of it), created exclusively. An existing
  file is never replaced by a board-file setting, and a board file cannot name ``/etc/...``, ``~/.bashrc`` or a
  device. Either is a one-line error (exit status 2) saying how to allow it: set it on the command line.

``-`` (or an empty value) is standard output, whoever set it.
"""

from __future__ import annotations

import os

from ..errors import ConfigError

STDOUT = ("-", "", None)


def from_command_line(origin) -> bool:
    return isinstance(origin, str) and origin.startswith("-C ")


def open_output(spec, key: str, target: str):
    """A binary file object for the output ``target`` that board key ``key`` names (``devices.uart0.out_file``),
    opened as its origin allows; ``ConfigError`` (one line) otherwise."""
    origin, k = None, key
    while k and origin is None:  # the leaf, or the mapping an override replaced whole
        origin = spec.provenance.get(k)
        k = k.rpartition(".")[0]
    if "\0" in target:
        raise ConfigError(f"{origin or (spec.files[0] if spec.files else '<board>')}: {key}: {target!r}: a file "
                          f"name cannot contain a NUL byte")
    if from_command_line(origin):
        try:
            return open(target, "wb")
        except OSError as e:
            raise ConfigError(f"{origin}: {key}: cannot open {target!r}: {e.strerror}") from None
    where = origin or (spec.files[0] if spec.files else "<board>")
    allow = f"set it on the command line instead (-C {key}={target})"
    if os.path.isabs(target) or target.startswith("~"):
        raise ConfigError(f"{where}: {key}: {target!r}: a board file may only name a new file inside the current "
                          f"directory, not an absolute path; {allow}")
    cwd = os.path.realpath(os.getcwd())
    full = os.path.realpath(os.path.join(cwd, target))
    if os.path.commonpath([cwd, full]) != cwd or full == cwd:
        raise ConfigError(f"{where}: {key}: {target!r} leads out of the current directory; a board file may only "
                          f"name a new file inside it; {allow}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(os.path.join(cwd, target), flags, 0o666)
    except FileExistsError:
        raise ConfigError(f"{where}: {key}: {target!r} exists; a board-file setting does not replace a file: remove "
                          f"it, or {allow}") from None
    except OSError as e:
        raise ConfigError(f"{where}: {key}: cannot create {target!r}: {e.strerror}") from None
    return os.fdopen(fd, "wb")
