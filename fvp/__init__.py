"""fvp: an open model of Arm's Corstone-300 and Corstone-320 FVPs (Cortex-M55 + Ethos-U55/U65, Cortex-M85 + Ethos-U85).

The hardware half of the simulator, in three rooms: ``fvp.machine`` (the simulated machine), ``fvp.boards``
(the board files and the code that loads them) and ``fvp.host`` (the command-line tools around the machine);
``errors`` and ``units`` are shared by all three. It never imports ``firmware``: the firmware named in the
board YAML is loaded by name and sees the machine only through the bus handle the platform gives it.
"""

import os
import sys

# The console scripts (pyproject.toml) import this package first: a Ctrl-C from here until their guard is in place
# (fvp.host.launch) ends as one during the run does, one line and status 130, not a KeyboardInterrupt traceback
# from the imports. Only in those scripts' processes; never for a library caller.
_CONSOLE_SCRIPTS = ("fvp", "FVP_Corstone_SSE-300_Ethos-U55", "FVP_Corstone_SSE-300_Ethos-U65", "FVP_Corstone_SSE-320")
if sys.argv and os.path.basename(sys.argv[0]).removesuffix(".exe") in _CONSOLE_SCRIPTS:
    import _signal  # the C module: `signal` itself takes a millisecond or two to import (enums)

    def _interrupted_while_starting(signum, frame):
        os.write(2, f"{os.path.basename(sys.argv[0]).removesuffix('.exe')}: interrupted\n".encode())
        os._exit(130)

    try:
        _signal.signal(_signal.SIGINT, _interrupted_while_starting)
    except ValueError:  # not the main thread
        pass

# The NPU engines run many small matrix products (one per convolution block); multi-threaded BLAS costs more
# in thread hand-off than it gains at these sizes (measured: MobileNetV2 0.41 s with one thread, 0.82 s with
# two, on a 2-core host). Set before numpy is imported; an explicit setting by the user wins.
_BLAS_VARS = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")
_user_set = any(v in os.environ for v in _BLAS_VARS)
for _var in _BLAS_VARS:
    os.environ.setdefault(_var, "1")

# A script that imported numpy before fvp has its BLAS threads already started from the old environment:
# limit them now (threadpoolctl, a dependency), so the thread count does not depend on import order. Not when
# the user chose a count.
if "numpy" in sys.modules and not _user_set:
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1, user_api="blas")
    except Exception:  # noqa: BLE001 - an unusual BLAS: run with its threads rather than fail to import
        pass

__version__ = "0.1.0"

# The public Python API, imported on first use so that ``import fvp`` stays cheap (the console scripts and the
# firmware image import nothing of it): ``fvp.Session`` (fvp/host/run/api.py) and what it returns and raises.
_API = {"Session": "fvp.host.run.api", "Result": "fvp.host.run.api", "InferenceError": "fvp.host.run.api",
        "SessionError": "fvp.host.run.api", "TensorSpec": "fvp.host.run.tensors", "InputError": "fvp.host.run.tensors",
        "ConfigError": "fvp.errors"}


def __getattr__(name):
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'fvp' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_API))
