"""One exception root for the hardware model.

Three kinds of problems are kept apart (as QEMU and Renode do):

* user/config errors (``ConfigError``): bad YAML, bad ``-C`` override, impossible layout; reported at load
  time as one line, exit status 2;
* guest errors (``GuestError``): the firmware misusing the hardware (unaligned or unmapped access, writes to
  read-only registers); logged as warnings, raised in strict mode;
* hardware faults the device itself reports to software (NPU ``cmd_parse_error``, bus faults): these are
  *not* Python exceptions for the firmware, they set status bits and raise the IRQ. ``NpuFault`` is used
  inside the NPU model to unwind a command stream and is turned into status bits by the device.
"""


class FvpError(Exception):
    """Root of every error the simulator raises on purpose."""


class ConfigError(FvpError):
    """A board description or an override is invalid. ``str()`` is one line naming file, key, value."""


class ConfigProblems(ConfigError):
    """One or more problems, one line each (``str()`` joins them with newlines)."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


class ModelError(FvpError):
    """The model file given on the command line cannot be used (missing, unreadable)."""


class GuestError(FvpError):
    """The firmware misused the hardware (raised only in strict mode; logged otherwise)."""


class BusFault(FvpError):
    """An access to an unmapped address or to memory the master cannot reach."""

    def __init__(self, message: str, address: int = 0, master: str = "cpu"):
        super().__init__(message)
        self.address = address
        self.master = master


class NpuFault(FvpError):
    """Raised inside the NPU model to stop a command stream; the device turns it into STATUS bits.

    ``kind`` is ``"cmd_parse_error"`` or ``"bus_error"``; ``offset`` is the byte offset of the command in the
    stream, ``address`` the faulting bus address (bus errors), ``region`` the region index involved.
    """

    def __init__(self, kind: str, message: str, offset: int = -1, address: int | None = None,
                 region: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.offset = offset
        self.address = address
        self.region = region


class SimulationStop(BaseException):
    """Unwinds the firmware when the simulation must stop (EOT on the UART, limits, faults).

    Derives from BaseException so that a firmware ``except Exception`` cannot swallow it, just as firmware
    cannot catch the simulator stopping.
    """

    def __init__(self, reason: str, message: str = ""):
        super().__init__(reason, message)
        self.reason = reason
        self.message = message
