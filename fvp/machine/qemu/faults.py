"""What the CPU's faults look like from the outside: the fault status registers, and QEMU's own last words.

- A fault handler's first instruction (a breakpoint at each fault vector's handler): the CFSR, HFSR, MMFAR and
  BFAR (read through the debugger, which reaches the System Control Space) and the stacked PC (the exception
  frame's seventh word, on the main stack when EXC_RETURN's SPSEL bit is clear) say which fault, why and where.
  The line names the exception, the CFSR bits set, the fault address when one is valid, and the PC.
- A lock-up (a fault the CPU cannot take, such as one in the HardFault handler): QEMU 7.2 does not model the
  lock-up state; it stops with ``qemu: fatal: Lockup: ...`` and a register dump (``cpu_abort``), and exits.
"""

from __future__ import annotations

import re

from hwdesc.cortex_m55 import (BASIC_FRAME_PC, EXC_RETURN_PREFIX, FAULT_EXCEPTIONS, REGISTERS, SCS_BASE)

from ...errors import StopReason

_CFSR, _HFSR = REGISTERS.CFSR, REGISTERS.HFSR


def fault_registers(read_word) -> dict:
    """CFSR, HFSR, MMFAR, BFAR through ``read_word(address)``."""
    return {name: read_word(SCS_BASE + REGISTERS[name].offset) for name in ("CFSR", "HFSR", "MMFAR", "BFAR")}


def stacked_pc(regs: list[int], read_word) -> int | None:
    """The PC the fault interrupted, from the exception frame (None when the frame is on the process stack,
    which QEMU 7.2's debugger interface cannot name)."""
    lr = regs[14]
    if lr >> 24 != EXC_RETURN_PREFIX or lr & 0x4:
        return None
    return read_word(regs[13] + BASIC_FRAME_PC)


def describe(exception: int, fsr: dict, pc: int | None) -> str:
    """``HardFault (FORCED; UsageFault INVSTATE), CFSR 0x00020000, HFSR 0x40000000, at PC 0x00000000``."""
    cfsr, hfsr = fsr["CFSR"], fsr["HFSR"]
    bits = [f.name for f in _CFSR.fields if f.width == 1 and cfsr >> f.lo & 1 and not f.name.endswith("VALID")]
    why = [f.name for f in _HFSR.fields if hfsr >> f.lo & 1] if exception == 3 else []
    where = []
    if cfsr & _CFSR.mask("MMARVALID"):
        where.append(f"MMFAR 0x{fsr['MMFAR']:08x}")
    if cfsr & _CFSR.mask("BFARVALID"):
        where.append(f"BFAR 0x{fsr['BFAR']:08x}")
    detail = ", ".join(why + bits)
    text = f"{FAULT_EXCEPTIONS.get(exception, f'exception {exception}')}"
    text += f" ({detail})" if detail else ""
    text += f", CFSR 0x{cfsr:08x}"
    if exception == 3:
        text += f", HFSR 0x{hfsr:08x}"
    if where:
        text += ", " + ", ".join(where)
    text += f", at PC 0x{pc:08x}" if pc is not None else ", PC not known (the frame is on the process stack)"
    return text


_LOCKUP = re.compile(r"qemu: fatal: (Lockup[^\n]*)")
_PC = re.compile(r"R15=([0-9a-fA-F]{8})")


def qemu_exit(stderr: str, status: int | None) -> tuple[StopReason, str]:
    """``(reason, message)`` for a QEMU that exited on its own: a lock-up, or a failure of QEMU."""
    m = _LOCKUP.search(stderr)
    if m:
        pc = _PC.search(stderr[m.end():])
        return StopReason.LOCKUP, m.group(1).rstrip(".") + (f" (PC 0x{int(pc.group(1), 16):08x})" if pc else "")
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and "warning:" not in ln]
    if status == 0 and not lines:  # -no-reboot: the guest asked for a reset (AIRCR.SYSRESETREQ)
        return StopReason.RESET, "the application requested a system reset (SYSRESETREQ); the run ends there"
    last = lines[-1] if lines else "no message"
    return StopReason.QEMU, f"QEMU exited unexpectedly (status {status}): {last[:300]}"
