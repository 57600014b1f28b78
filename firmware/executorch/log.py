"""ExecuTorch's ``ET_LOG`` and the runner's ``printf``, as they reach the UART on the FVP.

``ET_LOG(level, fmt, ...)`` produces ``"%c [executorch:%s:%lu %s()] %s\\n"``: the level letter (D/I/E/F), the
basename of the source file, the line of the call and the undecorated function name (``__FILE_NAME__``,
``__builtin_LINE()``, ``__builtin_FUNCTION()``), then the message formatted into a 256-byte buffer (longer
messages are cut to 255 bytes, at a UTF-8 boundary). Here the file, line and function are those of the
Python firmware's own call site. Debug lines are compiled out by default (``ET_MIN_LOG_LEVEL`` Info).
``printf`` output (the ``Output[i][j]`` element lines) has no prefix. Both go to the UART in program order.
"""

from __future__ import annotations

import os
import sys

_LEVELS = {"D": 0, "I": 1, "E": 2, "F": 3}


class EtLog:
    def __init__(self, console, bus=None, min_level: str = "I"):
        self.console = console  # object with write(bytes)
        self.bus = bus
        self.min_level = _LEVELS[min_level]
        self.error_lines: list[str] = []

    def _emit(self, text: str) -> None:
        data = text.encode("utf-8", "replace")
        if self.bus is not None:
            self.bus.work("log_char", len(data))
        self.console.write(data)

    def log(self, level: str, message: str, depth: int = 1) -> None:
        if _LEVELS[level] < self.min_level:
            return
        frame = sys._getframe(depth + 1)
        code = frame.f_code
        raw = message.encode("utf-8")
        if len(raw) > 255:
            message = raw[:255].decode("utf-8", "ignore")
        line = f"{level} [executorch:{os.path.basename(code.co_filename)}:{frame.f_lineno} {code.co_name}()] {message}\n"
        if level in ("E", "F"):
            self.error_lines.append(line.rstrip("\n"))
        self._emit(line)

    def printf(self, text: str) -> None:
        self._emit(text)


_current: EtLog | None = None


def install(logger: EtLog | None) -> None:
    global _current
    _current = logger


def current() -> EtLog | None:
    return _current


def _at(level: str, name: str):
    """The function ``name(message)``: ``ET_LOG(level, ...)`` through the installed logger (nothing without one);
    the line's prefix names that function's caller."""
    def log_at(message: str) -> None:
        if _current is not None:
            _current.log(level, message, depth=1)

    log_at.__name__ = log_at.__qualname__ = name
    return log_at


debug, info, error, fatal = (_at(level, name) for level, name in (("D", "debug"), ("I", "info"), ("E", "error"),
                                                                    ("F", "fatal")))


def printf(text: str) -> None:
    if _current is not None:
        _current.printf(text)
