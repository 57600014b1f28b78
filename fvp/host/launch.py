"""The console scripts' entry points: import the command, then run it, with Ctrl-C handled from the start.

``fvp`` and the ``FVP_Corstone_SSE-300_*`` scripts point here, not at ``fvp.host.cli:main``: importing the command
(numpy, the board loader, ...) takes a good part of a second, and a Ctrl-C in that time would otherwise end in
a ``KeyboardInterrupt`` traceback. Here it ends like one during the run: ``<prog>: interrupted``, status 130.
This module imports nothing but ``sys`` and ``importlib`` before the guard is in place.
"""

from __future__ import annotations

import importlib
import sys

EXIT_INTERRUPTED = 130


def _launch(prog: str, module: str, func: str, *args) -> int:
    try:
        main = getattr(importlib.import_module(module), func)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    try:
        return main(*args)
    except KeyboardInterrupt:  # between the command's own guard and its return
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def fvp() -> int:
    return _launch("fvp", "fvp.host.cli", "main")


def fvp_u55() -> int:
    return _launch("FVP_Corstone_SSE-300_Ethos-U55", "fvp.host.dropin", "main_u55")


def fvp_u65() -> int:
    return _launch("FVP_Corstone_SSE-300_Ethos-U65", "fvp.host.dropin", "main_u65")


if __name__ == "__main__":
    sys.exit(fvp())
