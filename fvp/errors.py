"""One exception root for the hardware model.

Three kinds of problems are kept apart (as QEMU and Renode do):

* user/config errors (``ConfigError``): bad YAML, bad ``-C`` override, impossible layout; reported at load
  time as one line, exit status 2;
* guest errors: the firmware misusing the hardware (unaligned or unmapped access, writes to read-only
  registers); the platform logs them as warnings, and in strict mode stops the simulation with
  ``SimulationStop("guest_error", ...)``;
* hardware faults the device itself reports to software (NPU ``cmd_parse_error``, bus faults): these are
  *not* Python exceptions for the firmware, they set status bits and raise the IRQ. ``NpuFault`` is used
  inside the NPU model to unwind a command stream and is turned into status bits by the device.
"""


import enum


class _Named(str, enum.Enum):
    """A named code that is also its string (JSON, logs and comparisons with the spelling keep working), printed
    as its value on every Python (``str``/``format`` of a ``str`` enum differ between 3.10 and 3.11)."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class StopReason(_Named):
    """Why a simulation stopped (``SimulationStop.reason``, ``RunResult.reason``)."""
    USER = "user"                # the UART's EOT byte or shutdown tag: "Simulation stopped by user"
    EXIT = "exit"                # semihosting SYS_EXIT(_EXTENDED): the message is the status
    RETURNED = "returned"        # the firmware entry returned without stopping the simulation
    CYCLE_LIMIT = "cycle_limit"  # --cyclelimit
    TIME_LIMIT = "time_limit"    # --timelimit (host seconds)
    GUEST_ERROR = "guest_error"  # the firmware misused the hardware, in strict mode
    HARD_FAULT = "hard_fault"    # the CPU took a fault nothing handles
    ABORT = "abort"              # the firmware aborted (a fatal ET_CHECK, abort())
    DEADLOCK = "deadlock"        # WFI with no interrupt that can ever come
    LOCKUP = "lockup"            # the application's code on QEMU: a fault the CPU could not take
    RESET = "reset"              # the application's code on QEMU asked for a system reset (SYSRESETREQ)
    QEMU = "qemu"                # QEMU, running the application's code, exited on its own
    ERROR = "error"              # a simulator error the run could not go on from (a one-line FvpError)
    CRASH = "crash"              # a bug in the Python firmware model


class FaultKind(_Named):
    """What an ``NpuFault`` is, and so which STATUS bits the device sets."""
    CMD_PARSE_ERROR = "cmd_parse_error"
    BUS_ERROR = "bus_error"
    WATCHDOG = "watchdog"
    UNSUPPORTED = "unsupported"
    INTERNAL_ERROR = "internal_error"


class FvpError(Exception):
    """Root of every error the simulator raises on purpose."""


class ConfigError(FvpError):
    """A board description or an override is invalid. ``str()`` is one line naming file, key, value."""


class ConfigProblems(ConfigError):
    """One or more problems, one line each (``str()`` joins them with newlines)."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


class OutputLost(FvpError):
    """A file the command line asked for could not be written (a full disk, a failing device): one line, exit
    status 1 (the run's output is lost), never 2."""

    exit_status = 1


class BusFault(FvpError):
    """An access to an unmapped address or to memory the master cannot reach."""

    def __init__(self, message: str, address: int = 0, master: str = "cpu"):
        super().__init__(message)
        self.address = address
        self.master = master


class NpuFault(FvpError):
    """Raised inside the NPU model to stop a command stream; the device turns it into STATUS bits.

    ``kind`` is one of ``"cmd_parse_error"`` (the stream is malformed: STATUS.cmd_parse_error), ``"bus_error"``
    (an access the NPU's masters cannot make: STATUS.bus_status), ``"watchdog"`` (the stream runs past the
    board's ``npu.max_commands``: STATUS.wd_fault), ``"unsupported"`` (valid for the hardware but not modelled
    here; reported to the driver as a parse error) or ``"internal_error"`` (a bug in the NPU model; reported as a
    parse error and a ``[critical]`` line): a ``FaultKind``. ``offset`` is the byte offset of the command in the stream,
    ``address`` the faulting bus address (bus errors), ``region`` the region index involved.
    """

    def __init__(self, kind: str, message: str, offset: int = -1, address: int | None = None,
                 region: int | None = None):
        super().__init__(message)
        self.kind = FaultKind(kind)  # a spelling that is not a kind is a bug here, not a fault of the stream
        self.offset = offset
        self.address = address
        self.region = region


class SimulationStop(BaseException):
    """Unwinds the firmware when the simulation must stop (EOT on the UART, limits, faults).

    Derives from BaseException so that a firmware ``except Exception`` cannot swallow it, just as firmware
    cannot catch the simulator stopping.
    """

    def __init__(self, reason: str, message: str = ""):
        reason = StopReason(reason)
        super().__init__(reason, message)
        self.reason = reason
        self.message = message
