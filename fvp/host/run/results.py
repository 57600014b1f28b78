"""What ``fvp.Session`` returns and raises, and a result's form between processes.

``Result`` is one inference (outputs in each output's logical shape, the NPU's and the runner's figures, the
UART output); ``SessionError``/``InferenceError`` say why a session cannot serve a request. ``pack``/``unpack``
carry a result from a worker process (``fvp.host.run.scale``) as plain data: the outputs' bytes and figures,
without the NPU stream records.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .tensors import from_bytes


class SessionError(RuntimeError):
    """The session cannot serve the request: its machine stopped (``restart()`` boots a new one) or it is closed."""


class InferenceError(SessionError):
    """The firmware failed during an inference (a fault, an abort, a limit): its machine has stopped.
    ``reason`` is why the simulation stopped, ``log`` the UART output of that inference."""

    def __init__(self, message: str, reason: str = "", log: str = ""):
        super().__init__(message)
        self.reason = reason
        self.log = log


@dataclass
class Result:
    """One inference: ``outputs`` (arrays in each output's logical shape; None for a non-tensor output),
    ``npu_cycles`` (the Ethos-U PMU cycle counter over the inference), ``cpu_cycles`` (the CPU cycles of the
    inference as the runner's perf monitor measures them), ``pmu`` (the PMU event counters by event name),
    ``log`` (the UART output of the inference), ``raw_outputs`` (each output's bytes in memory order, what
    ``fvp run -o`` writes), the NPU's stream records, and the host's wall and CPU seconds."""

    index: int
    outputs: list
    npu_cycles: int
    cpu_cycles: int
    pmu: dict
    log: str
    raw_outputs: list = field(default_factory=list, repr=False)
    npu_streams: list = field(default_factory=list, repr=False)
    figures: dict = field(default_factory=dict, repr=False)  # everything the firmware reported
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0


def pack(index: int, r: Result) -> dict:
    return {"index": index, "raw": r.raw_outputs, "npu_cycles": r.npu_cycles, "cpu_cycles": r.cpu_cycles,
            "pmu": r.pmu, "figures": r.figures, "log": r.log, "wall": r.wall_seconds, "cpu": r.cpu_seconds}


def unpack(output_specs: list, d: dict):
    """A packed result as a ``Result`` (outputs in ``output_specs``' shapes), or its ``InferenceError``."""
    if "error" in d:
        return InferenceError(d["error"], d.get("reason", ""), d.get("log", ""))
    return Result(index=d["index"], outputs=[from_bytes(s, x) for s, x in zip(output_specs, d["raw"])],
                  npu_cycles=d["npu_cycles"], cpu_cycles=d["cpu_cycles"], pmu=d["pmu"], log=d["log"],
                  raw_outputs=d["raw"], figures=d["figures"], wall_seconds=d["wall"], cpu_seconds=d["cpu"])
