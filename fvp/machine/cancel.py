"""The cancellation hook of a running simulation: long host work for one simulated event calls
:func:`interruption_point` between chunks of it, so that ``--timelimit`` stops the run within a chunk.

A device model whose work for one event is long (an NPU operation computed on the host: the engines' stripes and
kernel taps, a long DMA) calls ``interruption_point()``; ``Simulator.interruptible()`` (``sim.py``) installs the
check of its wall-clock limit for the duration of that work. Outside it the call does nothing. A module of its
own, so that the NPU's engines reach the hook without importing the simulator.
"""

from __future__ import annotations

import contextvars

# the running simulation's wall-clock check, or None (Simulator.interruptible sets it)
INTERRUPT: contextvars.ContextVar = contextvars.ContextVar("fvp_interrupt", default=None)


def interruption_point() -> None:
    """Raise ``SimulationStop("time_limit")`` if the running simulation's wall-clock limit has passed."""
    check = INTERRUPT.get()
    if check is not None:
        check()
