"""The console scripts' entry points: import the command, then run it, with Ctrl-C handled from the start.

``fvp`` and the ``FVP_Corstone_SSE-300_*`` / ``FVP_Corstone_SSE-320`` scripts point here, not at
``fvp.host.cli:main``: importing the command (numpy, the board loader, ...) takes a good part of a second, and a
Ctrl-C in that time would otherwise end in a ``KeyboardInterrupt`` traceback. Here it ends like one during the
run: ``<prog>: interrupted``, status 130.
This module imports nothing but ``sys``, ``importlib`` and the exit statuses (``entry``) before the guard is
in place.

Start-up and exit (issue 17): once the command is imported its objects are frozen out of the garbage collector
(``gc.freeze``; numba's objects too, after the run that first loads the kernels) and the collector runs less
often (a run allocates many short-lived small objects, few cycles);
when the command returns, the process ends without tearing the interpreter down (``os._exit``, 10 % of a short
run) after the exit handlers have run and stdout/stderr are flushed. The command has closed its output files by
then (the session closes the platform's UART files, ``-o`` and ``--trace`` are written whole with
``safe_write``). Not when another thread is still running (it would be joined at a normal exit), and never
for the library API: only these console-script entry points do it.
"""

from __future__ import annotations

import importlib
import sys

from .entry import EXIT_INTERRUPTED  # errno, os, sys and the exception classes: nothing slow


GC_THRESHOLD = (20000, 50, 100)  # generation 0 every 20000 net allocations instead of 700


def settle_heap() -> None:
    """Freeze what is alive now out of the garbage collector and make it run less often: called once the
    command is imported (and by ``fvp bench``'s child, which measures runs as the command makes them)."""
    import gc

    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)


def settle_new_heap() -> None:
    """After the run that first used the numba kernels (the JIT is imported lazily, after the start-up heap was
    frozen): collect once and freeze numba's objects too, so that the collector's full passes do not walk
    them again (75 ms a pass on MobileNetV2's host). Only in a process that froze its start-up heap (the
    console scripts, the bench child), never for a library caller; once per process."""
    import gc

    global _numba_frozen
    if _numba_frozen or not gc.get_freeze_count() or "numba" not in sys.modules:
        return
    _numba_frozen = True
    gc.collect()
    gc.freeze()


_numba_frozen = False


def _launch(prog: str, module: str, func: str, *args) -> int:
    try:
        _default_sigint()  # from here a Ctrl-C is a KeyboardInterrupt this function and the command handle
        main = getattr(importlib.import_module(module), func)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    settle_heap()
    try:
        return main(*args)
    except KeyboardInterrupt:  # between the command's own guard and its return
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _default_sigint() -> None:
    """Python's own Ctrl-C handler again (``fvp/__init__.py`` exits at once on a Ctrl-C while the console
    script is still importing this module)."""
    import signal

    try:
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread
        pass


def _is_script(prog: str) -> bool:
    """Whether this process is the console script ``prog`` (or ``python -m fvp``), not a caller of this module's
    functions (a test, a library user): only the script's process may end here. ``FVP_FAST_EXIT=0``: never."""
    import os

    if os.environ.get("FVP_FAST_EXIT", "1") == "0" or not sys.argv:
        return False
    path = sys.argv[0]
    name = os.path.basename(path)
    if name == "__main__.py":
        return os.path.basename(os.path.dirname(path)) == "fvp" and prog == "fvp"
    return name == prog or name == prog + ".exe"


def _exit(prog: str, status) -> int:
    """End the script's process with ``status`` (an int, or None, as ``sys.exit`` takes it) without the
    interpreter's teardown when that is safe; otherwise return it for ``sys.exit``."""
    import atexit
    import os
    import threading

    if not _is_script(prog) or threading.active_count() > 1 or not (status is None or isinstance(status, int)):
        return status
    try:
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except Exception:  # noqa: BLE001 - a broken pipe or a failing handler: leave it to the normal exit
        return status
    os._exit(0 if status is None else status & 0xFF if status >= 0 else 1)


def fvp() -> int:
    return _exit("fvp", _launch("fvp", "fvp.host.cli", "main"))


def fvp_u55() -> int:
    return _exit("FVP_Corstone_SSE-300_Ethos-U55", _launch("FVP_Corstone_SSE-300_Ethos-U55", "fvp.host.dropin.command", "main_u55"))


def fvp_u65() -> int:
    return _exit("FVP_Corstone_SSE-300_Ethos-U65", _launch("FVP_Corstone_SSE-300_Ethos-U65", "fvp.host.dropin.command", "main_u65"))


def fvp_sse320() -> int:
    return _exit("FVP_Corstone_SSE-320", _launch("FVP_Corstone_SSE-320", "fvp.host.dropin.command", "main_u85"))


if __name__ == "__main__":
    sys.exit(fvp())
