"""Decoding the Thumb-2 load or store a trapped device access was made with, and what executing it changes.

When the CPU touches a device this project models, QEMU stops on the access watchpoint before the access, with
the PC on the instruction. The bridge decodes that instruction here, performs its accesses on the board's
device and writes back what the instruction would have changed: the loaded registers, a written-back base
register, the IT state, the PC past it. Encodings (Armv8-M Architecture Reference Manual, ARM DDI0553, C2.4 "T32
instruction set encoding", the load/store tables):

- 16-bit: LDR/STR(B,H) with a 5-bit immediate, with a register offset (incl. LDRSB/LDRSH), SP-relative LDR/STR,
  LDR (literal), LDM/STM (IA, writeback);
- 32-bit: the single loads and stores (``0xF8xx``/``0xF9xx``: 12-bit immediate, 8-bit immediate with P/U/W
  pre/post-indexing and writeback, register offset shifted by 0-3, literal, the unprivileged ``LDRT``/``STRT``),
  LDRD/STRD
  (immediate, P/U/W), LDM/STM (IA, DB), the exclusives LDREX/STREX(B,H) (a STREX always succeeds: no other master
  competes for a device register), the acquire/release loads and stores LDA/STL(B,H) and their exclusives.

Literal loads read the code's literal pools: they reach this decoder when a pool word is also the word a replaced
semihosting site watches (``image``). Anything else that reaches a device (an FP or MVE load, a POP) is refused
with its encoding. In
an IT block the instruction's condition held (an access happened), and the IT state advances as ``ITAdvance()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PC, SP = 15, 13


class Undecodable(Exception):
    """The instruction is not a load or store this decoder executes."""


@dataclass
class Transfer:
    address: int
    width: int  # bytes: 1, 2, 4
    register: int  # the loaded or stored register
    signed: bool = False


@dataclass
class Access:
    """What one load or store instruction does: its transfers in order, the register updates besides them."""

    size: int  # bytes of the instruction: 2 or 4
    load: bool
    transfers: list[Transfer] = field(default_factory=list)
    writeback: tuple[int, int] | None = None  # (base register, its new value)
    status: int | None = None  # STREX's status register (written 0: the store succeeded)


def is_32bit(hw1: int) -> bool:
    return (hw1 >> 11) in (0b11101, 0b11110, 0b11111)


def decode(hw1: int, hw2: int, regs: list[int], pc: int) -> Access:
    """The access of the instruction at ``pc`` (its halfwords ``hw1``, ``hw2``) with registers ``regs`` (r0-r15)."""
    if is_32bit(hw1):
        return _decode32(hw1, hw2, regs, pc)
    return _decode16(hw1, regs, pc)


def _reg(regs, n):
    return regs[n] & 0xFFFFFFFF


def _decode16(hw: int, regs, pc: int) -> Access:
    top5, top4 = hw >> 11, hw >> 12
    rt, rn = hw & 7, (hw >> 3) & 7
    imm5 = (hw >> 6) & 31
    if top4 in (0b0110, 0b0111, 0b1000):  # LDR/STR, LDRB/STRB, LDRH/STRH (immediate)
        width = {0b0110: 4, 0b0111: 1, 0b1000: 2}[top4]
        load = bool(hw >> 11 & 1)
        return Access(2, load, [Transfer((_reg(regs, rn) + imm5 * width) & 0xFFFFFFFF, width, rt)])
    if top5 == 0b01001:  # LDR (literal): a read of the code's literal pool
        rt = (hw >> 8) & 7
        return Access(2, True, [Transfer((((pc + 4) & ~3) + (hw & 0xFF) * 4) & 0xFFFFFFFF, 4, rt)])
    if top4 == 0b1001:  # LDR/STR (SP-relative)
        load = bool(hw >> 11 & 1)
        rt = (hw >> 8) & 7
        return Access(2, load, [Transfer((_reg(regs, SP) + (hw & 0xFF) * 4) & 0xFFFFFFFF, 4, rt)])
    if top4 == 0b0101:  # register offset
        op = (hw >> 9) & 7
        rm = (hw >> 6) & 7
        width, load, signed = ((4, False, False), (2, False, False), (1, False, False), (1, True, True),
                               (4, True, False), (2, True, False), (1, True, False), (2, True, True))[op]
        return Access(2, load, [Transfer((_reg(regs, rn) + _reg(regs, rm)) & 0xFFFFFFFF, width, rt, signed)])
    if top4 == 0b1100:  # STMIA Rn!, LDMIA Rn{!}
        load = bool(hw >> 11 & 1)
        rn = (hw >> 8) & 7
        lst = [r for r in range(8) if hw >> r & 1]
        if not lst:
            raise Undecodable(f"LDM/STM with an empty register list (0x{hw:04x})")
        base = _reg(regs, rn)
        acc = Access(2, load, [Transfer((base + 4 * i) & 0xFFFFFFFF, 4, r) for i, r in enumerate(lst)])
        if not (load and rn in lst):
            acc.writeback = (rn, (base + 4 * len(lst)) & 0xFFFFFFFF)
        return acc
    raise Undecodable(f"16-bit instruction 0x{hw:04x} is not a load or store this bridge executes")


def _decode32(hw1: int, hw2: int, regs, pc: int) -> Access:
    rn = hw1 & 0xF
    if hw1 >> 9 == 0b1111100:  # single load/store
        return _single(hw1, hw2, regs, pc)
    if hw1 >> 9 == 0b1110100:
        if hw1 >> 6 & 1:  # LDRD/STRD, or the exclusives and load-acquires in the P=0 W=0 space
            p, u, w, load = hw1 >> 8 & 1, hw1 >> 7 & 1, hw1 >> 5 & 1, bool(hw1 >> 4 & 1)
            if not p and not w:
                return _exclusive(hw1, hw2, regs, u)
            rt, rt2 = hw2 >> 12, hw2 >> 8 & 0xF
            base = _reg(regs, rn) if rn != PC else (pc + 4) & ~3
            off = base + (1 if u else -1) * (hw2 & 0xFF) * 4
            addr = (off if p else base) & 0xFFFFFFFF
            acc = Access(4, load, [Transfer(addr, 4, rt), Transfer((addr + 4) & 0xFFFFFFFF, 4, rt2)])
            if w:
                acc.writeback = (rn, off & 0xFFFFFFFF)
            return acc
        op, w, load = hw1 >> 7 & 3, hw1 >> 5 & 1, bool(hw1 >> 4 & 1)  # LDM/STM
        lst = [r for r in range(16) if hw2 >> r & 1]
        if op not in (1, 2) or not lst:
            raise Undecodable(f"32-bit instruction 0x{hw1:04x}{hw2:04x} is not a load or store this bridge executes")
        base = _reg(regs, rn)
        start = base if op == 1 else base - 4 * len(lst)
        acc = Access(4, load, [Transfer((start + 4 * i) & 0xFFFFFFFF, 4, r) for i, r in enumerate(lst)])
        if w:
            acc.writeback = (rn, (base + 4 * len(lst) if op == 1 else start) & 0xFFFFFFFF)
        return acc
    raise Undecodable(f"32-bit instruction 0x{hw1:04x}{hw2:04x} is not a load or store this bridge executes")


def _single(hw1: int, hw2: int, regs, pc: int) -> Access:
    signed, size, load, rn = bool(hw1 >> 8 & 1), hw1 >> 5 & 3, bool(hw1 >> 4 & 1), hw1 & 0xF
    rt = hw2 >> 12
    if size == 3 or (signed and not load):
        raise Undecodable(f"32-bit instruction 0x{hw1:04x}{hw2:04x} is not a load or store this bridge executes")
    width = (1, 2, 4)[size]
    if rn == PC:  # literal: a read of the code's literal pool, the offset's sign in bit 7 of the first halfword
        if not load:
            raise Undecodable(f"32-bit instruction 0x{hw1:04x}{hw2:04x} is not a load or store this bridge executes")
        off = (hw2 & 0xFFF) * (1 if hw1 >> 7 & 1 else -1)
        return Access(4, True, [Transfer((((pc + 4) & ~3) + off) & 0xFFFFFFFF, width, rt, signed)])
    base = _reg(regs, rn)
    if hw1 >> 7 & 1:  # 12-bit immediate
        return Access(4, load, [Transfer((base + (hw2 & 0xFFF)) & 0xFFFFFFFF, width, rt, signed)])
    if hw2 >> 11 & 1:  # 8-bit immediate, P U W
        p, u, w = hw2 >> 10 & 1, hw2 >> 9 & 1, hw2 >> 8 & 1
        off = (base + (1 if u else -1) * (hw2 & 0xFF)) & 0xFFFFFFFF
        acc = Access(4, load, [Transfer(off if p else base, width, rt, signed)])
        if w:
            acc.writeback = (rn, off)
        return acc
    if hw2 >> 6 & 0x3F == 0:  # register offset, LSL #imm2
        rm, shift = hw2 & 0xF, hw2 >> 4 & 3
        return Access(4, load, [Transfer((base + (_reg(regs, rm) << shift)) & 0xFFFFFFFF, width, rt, signed)])
    raise Undecodable(f"32-bit instruction 0x{hw1:04x}{hw2:04x} is not a load or store this bridge executes")


def _exclusive(hw1: int, hw2: int, regs, u: int) -> Access:
    rn, load = hw1 & 0xF, bool(hw1 >> 4 & 1)
    base = _reg(regs, rn)
    rt = hw2 >> 12
    if not u:  # LDREX/STREX (word, imm8 x 4)
        acc = Access(4, load, [Transfer((base + (hw2 & 0xFF) * 4) & 0xFFFFFFFF, 4, rt)])
        if not load:
            acc.status = hw2 >> 8 & 0xF
        return acc
    op = hw2 >> 4 & 0xF
    if op in (0b0100, 0b0101):  # LDREXB/H, STREXB/H: Rd in [3:0]
        acc = Access(4, load, [Transfer(base, 1 if op == 0b0100 else 2, rt)])
        if not load:
            acc.status = hw2 & 0xF
        return acc
    if op >> 2 in (0b10, 0b11):  # LDA/STL(B,H) and their exclusives (Armv8-M): size in [5:4]
        width = (1, 2, 4, 0)[op & 3]
        if width:
            acc = Access(4, load, [Transfer(base, width, rt)])
            if op >> 2 == 0b11 and not load:
                acc.status = hw2 & 0xF
            return acc
    raise Undecodable(f"32-bit instruction 0x{hw1:04x}{hw2:04x} is not a load or store this bridge executes")


# ---------------------------------------------------------------------------------------- IT blocks
def it_state(xpsr: int) -> int:
    """ITSTATE[7:0] from the xPSR: bits [15:10] are IT[7:2], bits [26:25] IT[1:0]."""
    return (xpsr >> 10 & 0x3F) << 2 | (xpsr >> 25 & 3)


def with_it_state(xpsr: int, it: int) -> int:
    return (xpsr & ~(0x3F << 10 | 3 << 25)) | (it >> 2 & 0x3F) << 10 | (it & 3) << 25


def it_advance(xpsr: int) -> int:
    """The xPSR after one instruction of an IT block (unchanged outside one)."""
    it = it_state(xpsr)
    if not it & 0xF:
        return xpsr
    it = 0 if not it & 7 else (it & 0xE0) | ((it << 1) & 0x1F)
    return with_it_state(xpsr, it)


def extend(value: int, width: int, signed: bool) -> int:
    value &= (1 << 8 * width) - 1
    if signed and value >> (8 * width - 1):
        value -= 1 << 8 * width
    return value & 0xFFFFFFFF
