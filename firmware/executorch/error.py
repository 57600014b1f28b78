"""ExecuTorch runtime error codes (``runtime/core/error.h``) and the exception the Python runtime uses.

The C++ runtime returns ``Error`` values; here a failing call raises ``RuntimeFailure`` carrying the same code,
so the runner can print the runtime's own messages (``... failed with status 0x%x``).
"""

from enum import IntEnum


class Error(IntEnum):
    Ok = 0x00
    Internal = 0x01
    InvalidState = 0x02
    EndOfMethod = 0x03
    NotSupported = 0x10
    NotImplemented = 0x11
    InvalidArgument = 0x12
    InvalidType = 0x13
    OperatorMissing = 0x14
    RegistrationExceedingMaxKernels = 0x15
    RegistrationAlreadyRegistered = 0x16
    NotFound = 0x20
    MemoryAllocationFailed = 0x21
    AccessFailed = 0x22
    InvalidProgram = 0x23
    InvalidExternalData = 0x24
    OutOfResources = 0x25
    DelegateInvalidCompatibility = 0x30
    DelegateMemoryAllocationFailed = 0x31
    DelegateInvalidHandle = 0x32


class RuntimeFailure(Exception):
    """A runtime call failed with ``code``; ``message`` is the one-line reason (already logged or to log)."""

    def __init__(self, code: Error, message: str = ""):
        super().__init__(message or code.name)
        self.code = Error(code)
        self.message = message or code.name
