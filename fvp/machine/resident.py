"""A firmware that stays resident between the host's requests: a runner's server loop on one machine.

A firmware image may expose, next to ``main(bus, boot_info)``, a session entry ``session(bus, boot_info)``: a
generator that boots like ``main`` (driver, program, method, pools), yields a description of the program's
inputs and outputs, then for every request it is sent (the input tensors' bytes) runs one inference the way
the runner's loop runs the next one (same method, same pools, the perf monitor around it) and yields the
outputs and what it measured; sent ``None`` it ends as the runner does (memory statistics, EOT). The machine
keeps its state, simulated time and RAM between requests, as a real runner's does between inferences.

``Resident(platform, entry)`` steps that generator with the platform's own rules (``Platform.run``'s): a
``SimulationStop``, an ``FvpError`` or a firmware bug ends the firmware, and the request raises
``FirmwareStopped`` carrying the ``RunResult`` (why it stopped). The UART's output of each step is handed out
with the step (``Step.console``) when the platform writes it to a buffer (``Platform(console=BytesIO())``);
the NPU's stream records and the firmware's trace marks of each step are taken out of the machine with it,
so that a session of many inferences holds no more than one inference's records.

A request reaches the waiting firmware at the next instant that has the phase the first request had on the
grid where the CPU's and the NPU's clocks both tick (``period_ps``: 250 ns for a 32 MHz CPU and a 500 MHz
NPU), and the CPU's unfinished cycle is where it was then: the runner's wait for the host takes time the host
decides, and this choice makes every inference start in the same clock phase, so that an inference's
figures (the cycle counters read at clock edges) do not depend on which inferences ran before it (a data set
split over several machines gives the figures of one).

Simplified: there is no wall-clock limit per request (a ``time_limit`` counts from the platform's creation);
the host drives the firmware synchronously, as a debugger stepping a target that waits on a host call.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from ..errors import SimulationStop, StopReason
from .platform import Platform, RunResult


class FirmwareStopped(Exception):
    """The resident firmware ended (exit, abort, fault, limit, crash) while serving a request."""

    def __init__(self, result: RunResult, console: bytes = b""):
        super().__init__(f"{result.reason}: {result.message}" if result.message else result.reason)
        self.result = result
        self.console = console  # the UART output of the step in which it stopped


@dataclass
class Step:
    """What one step of the firmware produced: its reply, the UART bytes it wrote, the NPU's stream records and
    the firmware's trace marks of that step, and the host's wall and CPU seconds for it."""

    reply: object
    console: bytes = b""
    npu_streams: list = field(default_factory=list)
    trace_events: list = field(default_factory=list)
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0


class Resident:
    """The session entry ``entry(bus_port, boot_info)`` of a firmware image, running on ``platform``."""

    def __init__(self, platform: Platform, entry):
        self.platform = platform
        self._entry = entry
        self._gen = None
        self._phase = None  # (time modulo period_ps, the CPU's unfinished cycle) of the first request
        self.result: RunResult | None = None  # set once the firmware has ended
        self.wall_seconds = 0.0
        self.cpu_seconds = 0.0

    @property
    def running(self) -> bool:
        return self._gen is not None and self.result is None

    def start(self) -> Step:
        """Boot the firmware until it is ready for its first request; its reply describes the program."""
        if self._gen is not None:
            raise RuntimeError("the resident firmware was started already")
        self._gen = self._entry(self.platform.port, self.platform.boot_info)
        step = self._step(lambda: next(self._gen))
        self._phase = None  # taken at the first request
        return step

    def request(self, payload) -> Step:
        """One request (``payload`` must not be ``None``): the firmware's reply to it."""
        if payload is None:
            raise ValueError("a request carries a payload; finish() ends the firmware")
        if not self.running:
            raise RuntimeError("the resident firmware is not running")
        self._align()
        return self._step(lambda: self._gen.send(payload))

    def period_ps(self) -> int:
        """The grid on which the CPU's and the NPU's clocks both tick: 10**12 / gcd of their frequencies (ps)."""
        spec = self.platform.spec
        hz = [spec.cpu.clock_hz] + ([spec.npu.system_config.core_clock_hz] if spec.npu is not None else [])
        return max(1, round(10 ** 12 / math.gcd(*(int(h) for h in hz))))

    def _align(self) -> None:
        sim = self.platform.sim
        period = self.period_ps()
        if self._phase is None:
            self._phase = (sim.now_ps % period, sim.idle_fraction())
            return
        phase, frac = self._phase
        sim.idle_until(sim.now_ps + (phase - sim.now_ps) % period, frac)

    def finish(self) -> tuple[RunResult, bytes]:
        """Tell the firmware there are no more requests (it ends as its runner ends) and return why the
        simulation stopped, with the UART output of that last step."""
        if self.result is not None:
            return self.result, b""
        if self._gen is None:
            raise RuntimeError("the resident firmware was never started")
        try:
            step = self._step(lambda: self._gen.send(None))
        except FirmwareStopped as e:
            return e.result, e.console
        # the firmware answered instead of ending: it is not a session entry that honours the protocol
        self._gen.close()
        self.result = self._result(StopReason.ERROR, "the firmware's session entry did not end when the host finished it")
        return self.result, step.console

    def close(self) -> None:
        """Drop a firmware that is still running (its generator is closed; nothing more runs on the machine)."""
        if self._gen is not None and self.result is None:
            self._gen.close()
            self.result = self._result(StopReason.USER, "")

    # ------------------------------------------------------------------ stepping
    def _step(self, advance) -> Step:
        p = self.platform
        t0, c0 = time.monotonic(), time.process_time()
        mark = p.console_mark()
        try:
            reply = advance()
        except StopIteration as stop:  # the entry returned: its value is main()'s return code
            reason, message = StopReason.EXIT, str(int(stop.value or 0))
        except (SimulationStop, Exception) as e:  # noqa: BLE001 - classified as Platform.run classifies it
            reason, message = p.stop_reason(e)
        except BaseException:  # Ctrl-C, SystemExit: the firmware is gone; the host's interruption goes on
            self.result = self._result(StopReason.USER, "interrupted")
            raise
        else:
            return Step(reply, p.console_since(mark), p.take_npu_streams(), p.port.take_trace_events(),
                        *self._account(t0, c0))
        self._account(t0, c0)
        self.result = self._result(reason, message)
        raise FirmwareStopped(self.result, p.console_since(mark))

    def _account(self, t0: float, c0: float) -> tuple[float, float]:
        wall, cpu = time.monotonic() - t0, time.process_time() - c0
        self.wall_seconds += wall
        self.cpu_seconds += cpu
        return wall, cpu

    def _result(self, reason: str, message: str) -> RunResult:
        p = self.platform
        return RunResult(reason=reason, message=message, sim_time_ps=p.sim.now_ps, cpu_cycles=p.sim.cpu_cycles,
                         charged_cpu_cycles=p.sim.charged_cpu_cycles, wall_seconds=self.wall_seconds,
                         cpu_seconds=self.cpu_seconds, npu_streams=p.take_npu_streams(),
                         guest_errors=list(p.guest_errors), layout=dict(p.layout))
