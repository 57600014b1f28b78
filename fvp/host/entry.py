"""How every command-line entry point (``fvp``, the FVP drop-in, ``tools/run.sh``) turns errors into one line.

``guarded(prog, body, usage_errors)`` runs ``body()`` and maps what escapes: bad usage, board or file problems
-> ``<prog>: error: <line>`` per problem and exit status 2; an output that cannot be written (a full disk under
stdout or the UART file) -> one line and status 1; Ctrl-C -> 130; a closed output pipe -> 1; anything
else is a simulator bug -> ``<prog>: internal error: ...`` and status 1 (the traceback only with FVP_DEBUG=1).
A Python traceback never reaches the user.
"""

from __future__ import annotations

import os
import sys

from ..errors import ConfigError, ConfigProblems, FvpError
from ..safe_write import WRITE_ERRNOS

# the exit statuses of every command-line entry point (README: "Exit status")
EXIT_OK = 0
EXIT_FAILURE = 1  # the program failed (a fatal F line, a fault, a failed verification, a lost output)
EXIT_USAGE = 2  # bad usage, board or model file
EXIT_LIMIT = 3  # a simulation limit (--cyclelimit, --timelimit) was reached
EXIT_INTERRUPTED = 130  # Ctrl-C


def error_lines(exc: BaseException) -> list[str]:
    if isinstance(exc, ConfigProblems):
        lines = list(exc.problems)
    elif isinstance(exc, OSError) and exc.strerror:
        lines = [f"{str(exc.filename) + ': ' if exc.filename else ''}{exc.strerror}"]
    else:
        lines = str(exc).splitlines() or [type(exc).__name__]
    return [printable(line) for line in lines]


def printable(line: str) -> str:
    """A line with its control characters (a NUL byte from a file name, an escape sequence) shown as ``\\xNN``."""
    if line.isprintable():
        return line
    return "".join(c if c >= " " or c == "\t" else f"\\x{ord(c):02x}" for c in line)


def guarded(prog: str, body, usage_errors: tuple = ()) -> int:
    try:
        rc = body()
        sys.stdout.flush()  # a full disk under stdout is found here, not in the interpreter's exit
        return rc
    except (ConfigError, FvpError, OSError, *usage_errors) as e:
        if isinstance(e, BrokenPipeError):
            return _broken_pipe()
        if isinstance(e, OSError) and e.errno in WRITE_ERRNOS:  # for want of room or a working device: exit 1, not 2
            where = f" to {e.filename}" if e.filename else ""
            print(f"{prog}: error: writing the output{where} failed: {e.strerror}", file=sys.stderr)
            _discard_stdout()
            return EXIT_FAILURE
        for line in error_lines(e):
            print(f"{prog}: error: {line}", file=sys.stderr)
        return getattr(e, "exit_status", EXIT_USAGE)  # an error after the run says its own (a lost output: 1)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:  # a simulator bug: one line, never a traceback (unless FVP_DEBUG is set)
        if os.environ.get("FVP_DEBUG"):
            raise
        print(f"{prog}: internal error: {type(e).__name__}: {e} (set FVP_DEBUG=1 for a traceback)", file=sys.stderr)
        return EXIT_FAILURE


def _discard_stdout() -> None:
    """Drop what stdout still buffers (it cannot be written) so the interpreter's exit does not retry it."""
    try:
        sys.stdout = open(os.devnull, "w")
    except OSError:
        pass


def _broken_pipe() -> int:
    """Output piped into ``head`` and the like: stop quietly."""
    try:
        sys.stdout = open(os.devnull, "w")
    except OSError:
        pass
    return EXIT_FAILURE
