"""Running the machine for a command: the files the command line names, the firmware image, the FVP's trailer.

The machine (``fvp.machine.platform.Platform``) builds a board and runs a firmware entry; it returns why the
simulation stopped and knows nothing of command lines, exit statuses or the FVP's own report. This module is
the host's side of a run, for ``fvp run``, the drop-in, ``fvp compare`` and ``fvp bench``:

- ``build(spec, ...)``: the ``-i`` input files are read first, bounded by the board's largest memory
  (``fvp.host.inputs``; one that cannot fit is refused before anything is opened or written), then the
  platform is built;
- ``run(platform, main, stat=...)``: runs the firmware image's ``main`` (the board's image by default), then prints the FVP's lines,
  ``Info: /OSCI/SystemC: Simulation stopped by user.`` and the ``[warning ][main@0][<t> ns]`` line, or the
  ``Info: Simulation is stopping. Reason: ...`` line of a limit or a failure, and ``--stat``'s statistics
  block; the outcome carries the exit status of ``fvp run``. The platform is closed then (its UART files, its
  memories given back), so a host running program after program reuses the pages at once.
"""

from __future__ import annotations

import resource
import sys
from dataclasses import dataclass, fields

from hwdesc.boot import RunArgs

from ...errors import ConfigError, ConfigProblems, StopReason
from ...machine.platform import Platform, RunResult
from ..programs.firmware_image import FirmwareImage, firmware_image
from ..entry import EXIT_FAILURE, EXIT_LIMIT, EXIT_OK
from .. import inputs as host_inputs
from ..launch import settle_new_heap

_STOP_MESSAGES = {
    StopReason.CYCLE_LIMIT: "Cycle limit has been exceeded.",
    StopReason.TIME_LIMIT: "CPU time has been exceeded.",
}


@dataclass
class RunOutcome(RunResult):
    """The machine's ``RunResult`` with the exit status the host gave it."""

    exit_code: int = EXIT_OK


def build(spec, *, model: bytes | None = None, args: RunArgs | None = None, host_cwd: str | None = None,
          **kw) -> Platform:
    """The platform for a command line, its input files read (bounded) before anything is built."""
    args = args or RunArgs()
    if args.argv is None:  # fvp run -i; the semihosting runner's own command line keeps the runner's
        host_inputs.refuse_inputs_for_bundled(model, args.inputs)  # rule (run_fvp.sh --bundle passes a dummy -i)
    limit = host_inputs.memory_limit(spec)
    host_files = host_inputs.preload_inputs(list(args.inputs), host_cwd, limit)
    return Platform(spec, model=model, args=args, host_cwd=host_cwd, read_limit=limit, host_files=host_files, **kw)


def checked_image(platform: Platform) -> FirmwareImage:
    """The firmware image the board names, after it accepted its configuration (``ConfigProblems`` if not)."""
    image = firmware_image(platform.spec)
    problems = image.check_config(platform.boot_info)
    if problems:
        raise ConfigProblems(problems)
    return image


def run(platform: Platform, main=None, *, stat: bool = False) -> RunOutcome:
    """Run the firmware entry ``main`` (default: the board's image, its configuration checked first), then print
    the FVP's trailer (and ``--stat``)."""
    if main is None:
        main = checked_image(platform).main
    trace = platform.spec.npu.pmu_trace if platform.spec.npu is not None else ""
    if trace:  # refused before the run, like an unwritable UART file
        from . import pmu_trace

        problem = pmu_trace.check(trace)
        if problem:
            raise ConfigError(problem)
    result = platform.run(main)
    lost = None
    if trace:
        lost = pmu_trace.write(trace, result.npu_streams, platform.spec.npu.system_config.core_clock_hz)
    outcome = RunOutcome(**{f.name: getattr(result, f.name) for f in fields(RunResult)},
                         exit_code=print_trailer(platform, result))
    if stat:
        print_stat(platform, outcome)
    platform.close()
    settle_new_heap()
    if lost is not None:  # the run's PMU trace is lost: one line, exit status 1 (fvp run and the drop-ins)
        raise lost
    return outcome


def exit_status(reason: StopReason, message: str) -> int:
    """The exit status of ``fvp run`` for why the simulation stopped."""
    if reason == StopReason.USER or (reason == StopReason.EXIT and message == "0"):
        return EXIT_OK
    if reason in _STOP_MESSAGES:
        return EXIT_LIMIT
    return EXIT_FAILURE


def trailer_lines(reason: StopReason, message: str, t_ns: int) -> list[str]:
    """The FVP's last lines for why the simulation stopped (``reason``/``message`` of a ``RunResult``)."""
    stopped = f"[warning ][main@0][{t_ns} ns] Simulation stopped by user"
    stopping = "Info: Simulation is stopping. Reason: "
    if reason == StopReason.USER or (reason == StopReason.EXIT and message == "0"):
        return ["", "Info: /OSCI/SystemC: Simulation stopped by user.", stopped]
    if reason in _STOP_MESSAGES:
        return ["", stopping + _STOP_MESSAGES[reason], stopped]
    if reason == StopReason.EXIT:
        return ["", f"{stopping}the application exited with status {message}."]
    if reason == StopReason.RETURNED:
        return ["", f"{stopping}the firmware returned without signalling the end (no EOT)."]
    if reason == StopReason.HARD_FAULT:
        return [f"Hard fault: {message}", f"{stopping}the CPU took a hard fault at {t_ns} ns."]
    if reason == StopReason.LOCKUP:  # the application's code on QEMU: a fault the CPU could not take
        return [f"Hard fault: {message}", f"{stopping}the CPU locked up at {t_ns} ns."]
    if reason == StopReason.RESET:
        return ["", f"{stopping}{message}."]
    if reason == StopReason.QEMU:
        return [f"[critical] {message}"]
    if reason == StopReason.ABORT:
        return ["", f"{stopping}the application aborted{': ' + message if message else ''}."]
    if reason == StopReason.DEADLOCK:
        return [f"{stopping}{message}."]
    if reason == StopReason.GUEST_ERROR:
        return [f"[critical] guest error (strict mode): {message}"]
    return [f"[critical] simulator error: {message} (set FVP_DEBUG=1 for a traceback)"]


def failure_line(result) -> str:
    """Why a run ended with a non-zero status, in one line for stderr (the log on stdout says it too, but stdout
    may go to a file, a pipe or a harness that shows only stderr): ``<why> (exit status N)``."""
    reason, message = result.reason, result.message
    if reason in (StopReason.HARD_FAULT, StopReason.LOCKUP):
        why = f"the CPU {'took a hard fault' if reason == StopReason.HARD_FAULT else 'locked up'}: {message}"
    else:
        lines = [ln for ln in trailer_lines(reason, message, result.sim_time_ps // 1000)
                 if ln.strip() and not ln.startswith("[warning ]")]
        why = lines[-1] if lines else reason
        for prefix in ("Info: Simulation is stopping. Reason: ", "[critical] "):
            why = why.removeprefix(prefix)
    return f"{why.rstrip('.')} (exit status {result.exit_code})"


def print_trailer(platform: Platform, result: RunResult) -> int:
    """Print the FVP's last lines after the UART's output; returns the exit status."""
    for line in trailer_lines(result.reason, result.message, result.sim_time_ps // 1000):
        platform.say(line)
    return exit_status(result.reason, result.message)


def print_stat(platform: Platform, r: RunResult) -> None:
    """``--stat``: the FVP's statistics block."""
    spec = platform.spec
    rss = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # QEMU, when the application's code ran on it
    sim_s = r.sim_time_ps / 1e12
    perf = sim_s / r.wall_seconds if r.wall_seconds > 0 else 0.0
    inst = int(r.charged_cpu_cycles * spec.cpu.mips_per_mhz)
    mips = inst / r.wall_seconds / 1e6 if r.wall_seconds > 0 else 0.0
    npu_cycles = sum(s.npu_cycles for s in r.npu_streams)
    hw = rss.ru_maxrss * 1024 if sys.platform != "darwin" else rss.ru_maxrss
    lines = [
        "",
        f"--- {spec.fvp_name} statistics: " + "-" * max(0, 79 - 19 - len(spec.fvp_name)),
        f"Simulated time                          : {sim_s:.6f}s",
        f"User time                               : {rss.ru_utime + kids.ru_utime:.6f}s",
        f"System time                             : {rss.ru_stime + kids.ru_stime:.6f}s",
        f"Wall time                               : {r.wall_seconds:.6f}s",
        f"Performance index                       : {perf:.2f}",
        f"cpu0                                    : {mips:8.2f} MIPS ({inst:12d} Inst)",
        f"{(spec.npu.device if spec.npu else 'ethosu'):<40}: {npu_cycles} NPU cycles in "
        f"{len(r.npu_streams)} command streams",
        f"Memory highwater mark                   : 0x{hw:x} bytes ( {hw / 1e9:.3f} GB )",
        "-" * 79,
    ]
    for line in lines:
        platform.say(line)
