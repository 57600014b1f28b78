"""How every command-line entry point (``fvp``, the FVP drop-in, ``tools/run.sh``) turns errors into one line.

``guarded(prog, body, usage_errors)`` runs ``body()`` and maps what escapes: bad usage, board or file problems
-> ``<prog>: error: <line>`` per problem and exit status 2; Ctrl-C -> 130; a closed output pipe -> 1; anything
else is a simulator bug -> ``<prog>: internal error: ...`` and status 1 (the traceback only with FVP_DEBUG=1).
A Python traceback never reaches the user.
"""

from __future__ import annotations

import os
import sys

from .config import ConfigProblems
from .errors import ConfigError, FvpError

EXIT_FAILURE = 1
EXIT_USAGE = 2


def error_lines(exc: BaseException) -> list[str]:
    if isinstance(exc, ConfigProblems):
        return list(exc.problems)
    if isinstance(exc, OSError) and exc.strerror:
        return [f"{exc.filename + ': ' if exc.filename else ''}{exc.strerror}"]
    return str(exc).splitlines() or [type(exc).__name__]


def guarded(prog: str, body, usage_errors: tuple = ()) -> int:
    try:
        return body()
    except (ConfigError, FvpError, OSError, *usage_errors) as e:
        if isinstance(e, BrokenPipeError):
            return _broken_pipe()
        for line in error_lines(e):
            print(f"{prog}: error: {line}", file=sys.stderr)
        return getattr(e, "exit_status", EXIT_USAGE)  # an error after the run says its own (a lost output: 1)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a simulator bug: one line, never a traceback (unless FVP_DEBUG is set)
        if os.environ.get("FVP_DEBUG"):
            raise
        print(f"{prog}: internal error: {type(e).__name__}: {e} (set FVP_DEBUG=1 for a traceback)", file=sys.stderr)
        return EXIT_FAILURE


def _broken_pipe() -> int:
    """Output piped into ``head`` and the like: stop quietly."""
    try:
        sys.stdout = open(os.devnull, "w")
    except OSError:
        pass
    return EXIT_FAILURE
