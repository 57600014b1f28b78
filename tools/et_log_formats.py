#!/usr/bin/env python3
"""The log format strings of ExecuTorch's Arm runner, read from its C++ sources, as JSON for the tests.

The runtime profile ``executorch-main-cff6f4dd`` (``firmware/executorch/profiles.py``) holds the runner's log
lines as data; its tests check every line a real run prints against the formats of the C++ sources it follows.
This script reads those sources (a git directory and commit, or a source tree) and writes one record per
``ET_LOG``, ``ET_CHECK_MSG``, ``ET_CHECK_OR_RETURN_ERROR`` and ``printf`` call: file, line of the call,
kind (the log level letter ``I``/``E``/``F``/``D``, ``check`` or ``printf``) and the format string, with
adjacent literals joined and the ``<inttypes.h>`` macros replaced by their arm-none-eabi expansions
(``uint32_t`` is ``unsigned long`` there: ``PRIu32`` is ``lu``)::

    python tools/et_log_formats.py --git-dir /path/to/executorch/.git --commit cff6f4dd32 \\
        -o tests/data/executorch_main/log_formats.json

Only the standard library is used. The scanner knows C string literals, comments and balanced parentheses,
which is all these files need; it is not a C preprocessor (``#if`` branches are all kept).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

# the files whose messages reach a runner's log for a delegated program (the runner, its perf monitor, the
# Ethos-U delegate and the method's own errors)
FILES = [
    "examples/arm/executor_runner/arm_executor_runner.cpp",
    "examples/arm/executor_runner/arm_perf_monitor.cpp",
    "backends/arm/runtime/EthosUBackend.cpp",
    "backends/arm/runtime/EthosUBackend_Cortex_M.cpp",
    "runtime/executor/method.cpp",
]

# <inttypes.h> on arm-none-eabi (newlib: uint32_t is unsigned long) and ExecuTorch's own size_t macros
MACROS = {"PRIu32": "lu", "PRIx32": "lx", "PRId32": "ld", "PRIi32": "li", "PRIu64": "llu", "PRId64": "lld",
          "PRIx64": "llx", "ET_PRIsize_t": "zu", "ET_PRIssize_t": "zd"}
# call -> index of the format argument and the record's kind (None: the first argument is the level)
CALLS = {"ET_LOG": (1, None), "ET_CHECK_MSG": (1, "check"), "ET_CHECK_OR_RETURN_ERROR": (2, "E"),
         "printf": (0, "printf")}
_CALL = re.compile(r"\b(" + "|".join(CALLS) + r")\s*\(")
_LEVELS = {"Debug": "D", "Info": "I", "Error": "E", "Fatal": "F"}


def _strip_comments(text: str) -> str:
    """Comments replaced by spaces (newlines kept, so line numbers stay), string literals untouched."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _arguments(text: str, start: int) -> list[str] | None:
    """The top-level comma-separated arguments of the call whose ``(`` is at ``start``."""
    depth, i, args, cur = 0, start, [], []
    while i < len(text):
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < len(text) and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if c in "([{":
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return args
        elif c == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    return None


def _unescape(body: str) -> str:
    return body.encode("latin-1", "backslashreplace").decode("unicode_escape")


def _format_of(arg: str) -> str | None:
    """The string an argument made of adjacent literals and PRI macros stands for, or None."""
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"|([A-Za-z_]\w*)|(\S)', arg)
    out = []
    for lit, ident, other in parts:
        if other:
            return None
        if ident:
            if ident not in MACROS:
                return None
            out.append(MACROS[ident])
        else:
            out.append(_unescape(lit))
    return "".join(out) if out else None


def scan(path: str, text: str) -> list[dict]:
    """Every log call of one file."""
    clean = _strip_comments(text)
    records = []
    for m in _CALL.finditer(clean):
        name = m.group(1)
        if clean[max(0, m.start() - 1)].isalnum() or clean[m.start() - 2:m.start()] in ("f ", "::"):
            continue
        args = _arguments(clean, m.end() - 1)
        index, kind = CALLS[name]
        if args is None or len(args) <= index:
            continue
        fmt = _format_of(args[index])
        if fmt is None:
            continue
        if kind is None:
            kind = _LEVELS.get(args[0])
            if kind is None:
                continue
        records.append({"file": path, "line": clean.count("\n", 0, m.start()) + 1, "kind": kind, "format": fmt})
    return records


def read_sources(git_dir: str | None, commit: str, root: str | None) -> dict[str, str]:
    out = {}
    for path in FILES:
        if root:
            out[path] = (Path(root) / path).read_text(encoding="utf-8")
        else:
            out[path] = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"], check=True,
                                       capture_output=True).stdout.decode("utf-8")
    return out


def build(git_dir: str | None, commit: str, root: str | None) -> dict:
    full = commit
    if git_dir:
        full = subprocess.run(["git", f"--git-dir={git_dir}", "rev-parse", commit], check=True,
                              capture_output=True, text=True).stdout.strip()
    records = [r for path, text in read_sources(git_dir, full, root).items() for r in scan(path, text)]
    return {"about": "log formats of ExecuTorch's Arm runner, from its C++ sources (tools/et_log_formats.py)",
            "repository": "https://github.com/pytorch/executorch", "commit": full, "formats": records}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--git-dir", help="an ExecuTorch git directory (a bare mirror is fine)")
    p.add_argument("--commit", default="main", help="the commit to read (default main)")
    p.add_argument("--root", help="a source tree instead of --git-dir")
    p.add_argument("-o", "--output", help="the JSON file to write (default stdout)")
    a = p.parse_args(argv)
    if not a.git_dir and not a.root:
        p.error("give --git-dir or --root")
    data = json.dumps(build(a.git_dir, a.commit, a.root), indent=1) + "\n"
    if a.output:
        Path(a.output).write_text(data)
    else:
        sys.stdout.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
