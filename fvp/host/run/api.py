"""``fvp.Session``: many inferences of one program on one simulated machine, from Python.

::

    import fvp
    with fvp.Session("model.pte") as s:            # .pte, .bpte or a Vela-compiled .tflite
        print(s.inputs, s.outputs)                  # dtype, shape, dim order, quantization of each
        r = s.run([x])                              # arrays in the logical shape (or raw bytes in memory order)
        r.outputs, r.npu_cycles, r.cpu_cycles, r.pmu, r.log

The board is resolved from the program as ``fvp run`` resolves it (``board=``, ``target=``, ``overrides=`` with
the keys of ``-C``, ``check_stream=``). The firmware image the board names is booted once, through its session
entry (``fvp.machine.resident``): the runner loads the program, sets up its pools and method and then waits;
every ``run`` is one more inference of that runner, as its server loop runs them (the same method, pools and
NPU, the perf monitor around each inference), so outputs and NPU figures are those of a separate ``fvp run -i``
of the same input. ``run()`` without inputs runs on what the runner prepared (ones, or a bundled program's
test inputs). A bad input is an ``InputError`` and the session goes on; a failure of the firmware (a fault, an
abort) stops its machine: ``InferenceError``, and ``restart()`` boots a new one. ``run_many`` runs a data set,
here or spread over a Dask cluster (``fvp.host.run.scale``). Not thread-safe: one session per thread.
"""

from __future__ import annotations

import io
import os

from hwdesc.boot import RunArgs

from ...errors import ConfigError, ConfigProblems
from .results import InferenceError, Result, SessionError, pack
from .tensors import InputError, TensorSpec, from_bytes, to_bytes

__all__ = ["Session", "Result", "TensorSpec", "InputError", "InferenceError", "SessionError"]


def _overrides(overrides) -> list:
    """``{"npu.memory_mode": "Sram_Only"}`` or ``["key=value", ...]`` -> the ``-C`` list."""
    if overrides is None:
        return []
    if isinstance(overrides, dict):
        out = []
        for k, v in overrides.items():
            if isinstance(v, bool):
                v = "true" if v else "false"
            out.append(f"{k}={v}")
        return out
    if isinstance(overrides, str):
        return [overrides]
    return [str(o) for o in overrides]


def read_model(model, name: str | None = None) -> tuple[bytes, str]:
    """The program's bytes and name from a path (bounded, as ``fvp run`` reads it) or from bytes."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model), name or "model"
    if isinstance(model, (str, os.PathLike)):
        from ..inputs import read_program

        path = os.fspath(model)
        return read_program(path), name or os.path.basename(path)
    raise TypeError(f"model: expected a path or the program's bytes, got {type(model).__name__}")


class Session:
    """One program on one simulated machine that stays up between inferences (see the module docstring)."""

    def __init__(self, model, *, board: str | None = None, target: str | None = None, overrides=None,
                 check_stream: str | None = None, strict: bool | None = None, vela: bool = False, vela_args=(),
                 name: str | None = None):
        from ..programs.program_board import resolve

        if board is not None and target is not None:
            raise ConfigProblems(["use either board= or target=, not both"])
        if check_stream not in (None, "off", "warn", "strict"):
            raise ConfigProblems([f"check_stream={check_stream!r}: expected 'off', 'warn' or 'strict'"])
        image, model_name = read_model(model, name)
        res = resolve(image, board=board, target=target, overrides=_overrides(overrides), model_name=model_name)
        spec = res.load()
        self.notes = list(res.notes)  # what differs between the program and the board, as `fvp run` notes it
        if vela or vela_args:
            from ..programs.vela import prepare

            image, model_name = prepare(image, model_name, spec, vela_args, note=self.notes.append)
        self.name = model_name
        # what boots the same machine elsewhere (a worker of run_many): the program is self.image, as compiled
        self.config = {"board": board, "target": target, "overrides": _overrides(overrides),
                       "check_stream": check_stream, "strict": strict, "name": model_name}
        self.spec = spec
        self.image = image
        self._options = {"check_stream": check_stream, "strict": strict}
        self._fw = None
        self._platform = None
        self._out = None
        self.count = 0  # inferences run on the current machine
        self.final_log = ""  # what the runner printed at its end (after close())
        self.boot_log = ""  # what it printed while it booted
        self.end = None  # the machine's RunResult, after close() or a failure
        self._boot()

    # ------------------------------------------------------------------ lifecycle
    def _boot(self) -> None:
        from ...machine.resident import FirmwareStopped, Resident
        from . import session

        self._out = io.StringIO()
        platform = session.build(self.spec, model=self.image, model_name=self.name, args=RunArgs(), console=io.BytesIO(),
                                 out=self._out, check_stream=self._options["check_stream"],
                                 strict=self._options["strict"])
        image = session.checked_image(platform)
        entry = image.session
        if entry is None:
            platform.close()
            raise ConfigError(f"firmware.entry: firmware image {image.name!r} has no session entry; a Session needs "
                              f"one (arm_executor_runner and tflm_inference_runner have it)")
        self._platform, self._fw, self.count, self.end = platform, Resident(platform, entry), 0, None
        try:
            step = self._fw.start()
        except FirmwareStopped as e:
            self._stopped(e)
            self.boot_log = self._text(e.console)
            raise SessionError(f"{self.name}: the firmware stopped before its first inference: "
                               f"{_why(e, self.boot_log)}") from None
        self.boot_log = self._text(step.console)
        ready = step.reply
        self.image_name = ready.get("image")
        self.method = ready.get("method")
        self.inputs = [TensorSpec.from_info(i, k) for k, i in enumerate(ready.get("inputs") or [])]
        self.outputs = [TensorSpec.from_info(o, k) for k, o in enumerate(ready.get("outputs") or [])]

    def restart(self) -> None:
        """Boot a new machine for the same program and board (after a failure, or to start from reset)."""
        self._shutdown()
        self._boot()

    @property
    def alive(self) -> bool:
        return self._fw is not None and self._fw.running

    def close(self) -> None:
        """End the runner as it ends (memory statistics, ``Program complete``, EOT: ``final_log``) and give the
        machine's memory back. Idempotent."""
        if self._fw is not None and self._fw.running:
            result, console = self._fw.finish()
            self.final_log = self._text(console)
            self.end = result
        self._shutdown()

    def _shutdown(self) -> None:
        if self._fw is not None:
            self._fw.close()
        if self._platform is not None:
            self._platform.close()
        self._fw = self._platform = None

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self._shutdown()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __repr__(self) -> str:
        state = "running" if self.alive else "stopped"
        return (f"<fvp.Session {self.name} on {self.spec.name} ({state}, {self.count} inferences): "
                f"{len(self.inputs)} inputs, {len(self.outputs)} outputs>")

    # ------------------------------------------------------------------ inferences
    def request(self, inputs, where: str = "") -> list:
        """The bytes each input's ``set_input`` copies, for ``inputs`` (see ``run``); ``InputError`` if one does
        not fit (``where`` prefixes the message: a sample's name)."""
        if inputs is None:
            return [None] * len(self.inputs)
        if isinstance(inputs, dict):
            inputs = self._by_name(inputs, where)
        elif not isinstance(inputs, (list, tuple)):
            inputs = [inputs]  # one array (or bytes) for a program of one input
        prefix = f"{where} " if where else ""
        if len(inputs) != len(self.inputs):
            raise InputError(f"{prefix}{len(inputs)} inputs given; {self.name} has {len(self.inputs)}: "
                             + ", ".join(s.describe() for s in self.inputs))
        return [to_bytes(s, v, f"{prefix}input {s.index}") for s, v in zip(self.inputs, inputs)]

    def _by_name(self, mapping: dict, where: str) -> list:
        names = {s.name: s.index for s in self.inputs if s.name}
        values = [None] * len(self.inputs)
        for key, v in mapping.items():
            i = key if isinstance(key, int) else names.get(key)
            if i is None or not 0 <= i < len(self.inputs):
                raise InputError(f"{where + ' ' if where else ''}input {key!r}: no such input; the inputs are "
                                 + ", ".join(repr(s.name or s.index) for s in self.inputs))
            values[i] = v
        return values

    def run(self, inputs=None, *, where: str = "") -> Result:
        """One inference. ``inputs``: a list with one value per input (numpy arrays in the logical shape, array-like
        values, or raw bytes in memory order; None leaves an input as the runner has it), a dict by input name
        or index, or a single value for a program of one input; None runs on what the runner prepared."""
        request = self.request(inputs, where)
        return self.run_request(request, where)

    def run_request(self, request: list, where: str = "") -> Result:
        """One inference of bytes already checked by ``request``."""
        from ...machine.resident import FirmwareStopped

        if not self.alive:
            raise SessionError(f"{self.name}: the session's machine is not running"
                               + (f" (it stopped: {self.end.reason} {self.end.message})".rstrip() if self.end else "")
                               + "; restart() boots a new one")
        try:
            step = self._fw.request(request)
        except FirmwareStopped as e:
            self._stopped(e)
            log = self._text(e.console)
            raise InferenceError(f"{where + ': ' if where else ''}{self.name}: inference {self.count} failed: "
                                 f"{_why(e, log)}", e.result.reason, log) from None
        rep = step.reply
        index = self.count
        self.count += 1
        outs = list(rep.get("outputs") or [])
        return Result(index=index, outputs=[from_bytes(s, d) for s, d in zip(self.outputs, outs)],
                      npu_cycles=int(rep.get("pmu_cycles", 0)), cpu_cycles=int(rep.get("cpu_cycles", 0)),
                      pmu=dict(rep.get("pmu_events") or {}), log=self._text(step.console), raw_outputs=outs,
                      npu_streams=step.npu_streams, figures={k: v for k, v in rep.items() if k != "outputs"},
                      wall_seconds=step.wall_seconds, cpu_seconds=step.cpu_seconds)

    def run_many(self, samples, *, cluster=None, jobs: int = 1, progress=None, on_error: str = "raise"):
        """Run every sample of ``samples`` (each what ``run`` takes) and return the list of ``Result``s in order.
        ``cluster``: a Dask ``Client``, ``LocalCluster`` or scheduler address to spread them over (the program is
        shipped once per worker); ``jobs``: local processes (1: this session). ``on_error="keep"`` puts the
        exception in the list in place of a failed sample's result (the rest still run); ``"raise"`` raises the
        first. ``progress``: a callable called with each finished index, or True for a bar on stderr."""
        from .scale import run_samples

        return run_samples(self, samples, run_chunk, cluster=cluster, jobs=jobs, progress=progress,
                           on_error=on_error)

    def iter_results(self, samples, *, cluster=None, jobs: int = 1):
        """``(index, Result or exception)`` for every sample as they finish (``fvp.host.run.scale``)."""
        from .scale import iter_results

        return iter_results(self, samples, run_chunk, cluster=cluster, jobs=jobs)

    # ------------------------------------------------------------------ helpers
    def _stopped(self, e) -> None:
        self.end = e.result
        self._shutdown()

    def _text(self, console: bytes) -> str:
        text = console.decode("utf-8", "replace")
        if self._out is not None and self._out.tell():
            text += self._out.getvalue()
            self._out.seek(0)
            self._out.truncate()
        return text


def _why(e, log: str) -> str:
    """One line: why the machine stopped, with the firmware's last fatal or error line when it printed one."""
    r = e.result
    why = {"user": "the runner ended (EOT)", "exit": f"the application exited with status {r.message}"}.get(
        r.reason, f"{r.reason}: {r.message}" if r.message else r.reason)
    last = [ln for ln in log.splitlines() if ln.startswith(("F ", "E ", "ERROR - "))]
    return why + (f" ({last[-1].strip()})" if last and last[-1].strip() not in why else "")


# ------------------------------------------------------------------------------------------------ in a worker
_SESSIONS: dict = {}  # in a worker process: (program sha256, configuration) -> Session


def run_chunk(key: str, image: bytes, config: dict, chunk: list) -> list:
    """In a worker process (``Session.run_many`` with ``jobs`` or a cluster): run ``chunk`` (``[(index, where,
    request)]``) on this process's session of the program, booted at its first chunk (and again after a
    failure); one packed result (or ``{"index", "error", "reason", "log"}``) per sample."""
    out = []
    for index, where, request in chunk:
        s = _SESSIONS.get(key)
        if s is None:
            s = _SESSIONS[key] = Session(image, **config)
        elif not s.alive:
            s.restart()
        try:
            out.append(pack(index, s.run_request(request, where)))
        except InferenceError as e:
            out.append({"index": index, "error": str(e), "reason": e.reason, "log": e.log})
    return out
