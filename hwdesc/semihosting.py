"""The Arm semihosting interface (Arm, "Semihosting for AArch32 and AArch64", version 3.0:
https://github.com/ARM-software/abi-aa/blob/main/semihosting/semihosting.rst).

An M-profile core asks the debugger or model for a service with ``BKPT 0xAB`` (Thumb encoding ``0xBEAB``): the
operation number in r0, a pointer to its parameter block (or a single value) in r1, the result back in r0. The
operation numbers, the exit reasons of SYS_EXIT, the modes of SYS_OPEN (fopen's strings, in the order of the
specification's table) and the ``:semihosting-features`` magic are listed here once.
"""

from __future__ import annotations

from .regs import Codes

BKPT_IMMEDIATE = 0xAB  # BKPT #0xAB: the semihosting trap of the M profile (and of Thumb code on A/R cores)
THUMB_BKPT = 0xBE00 | BKPT_IMMEDIATE  # its 16-bit encoding

OPERATIONS = Codes({
    0x01: "SYS_OPEN", 0x02: "SYS_CLOSE", 0x03: "SYS_WRITEC", 0x04: "SYS_WRITE0", 0x05: "SYS_WRITE",
    0x06: "SYS_READ", 0x07: "SYS_READC", 0x08: "SYS_ISERROR", 0x09: "SYS_ISTTY", 0x0A: "SYS_SEEK",
    0x0C: "SYS_FLEN", 0x0D: "SYS_TMPNAM", 0x0E: "SYS_REMOVE", 0x0F: "SYS_RENAME", 0x10: "SYS_CLOCK",
    0x11: "SYS_TIME", 0x12: "SYS_SYSTEM", 0x13: "SYS_ERRNO", 0x15: "SYS_GET_CMDLINE", 0x16: "SYS_HEAPINFO",
    0x18: "SYS_EXIT", 0x20: "SYS_EXIT_EXTENDED", 0x30: "SYS_ELAPSED", 0x31: "SYS_TICKFREQ",
})

# SYS_EXIT's reason codes (the specification's ADP_Stopped_* values): the application's normal end, and the
# run-time error an abort() reports
ADP_STOPPED_APPLICATION_EXIT = 0x20026
ADP_STOPPED_RUNTIME_ERROR_UNKNOWN = 0x20023

# SYS_OPEN's mode numbers 0..11 are fopen's mode strings in this order
OPEN_MODES = ("r", "rb", "r+", "r+b", "w", "wb", "w+", "w+b", "a", "ab", "a+", "a+b")

CONSOLE = ":tt"  # the name SYS_OPEN takes for the console: read modes are stdin, write modes stdout, append stderr
FEATURES = ":semihosting-features"  # the extensions file newlib's _exit and others probe
FEATURES_MAGIC = b"SHFB"  # its first four bytes; byte 4 bit 0 is SH_EXT_EXIT_EXTENDED, bit 1 SH_EXT_STDOUT_STDERR
