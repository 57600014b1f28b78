"""The Cortex-M55 system registers the simulator models, as offsets from the system space base 0xE000_0000.

* DWT (Armv8-M ARM, ARM DDI0553): DWT_CTRL 0x1000 (bit 0 CYCCNTENA; reads NUMCOMP etc. in [31:28]),
  DWT_CYCCNT 0x1004.
* Armv8.1-M PMU at 0x3000: PMU_CCNTR 0x307C, PMU_CNTENSET 0x3C00 / PMU_CNTENCLR 0x3C20 (bit 31 = CCNTR),
  PMU_CTRL 0x3E04 (E enable, P event-counter reset, C cycle-counter reset). What CMSIS ``ARM_PMU_*`` use.
* NVIC ISER/ICER/ISPR/ICPR at 0xE100/0xE180/0xE200/0xE280 (16 words each, bit n of word k = IRQ 32k+n).
* SCB CPUID 0xED00 (0x410FD220: Cortex-M55 r0p0, as the FVP reports), VTOR 0xED08, the fault status and address
  registers CFSR 0xED28 (MMFSR, BFSR, UFSR in its three bytes), HFSR 0xED2C, MMFAR 0xED34, BFAR 0xED38 (Armv8-M
  ARM, B3.2 "System Control Space"); DCB DEMCR 0xEDFC (TRCENA bit 24 gates the DWT and PMU counters).
* The exception numbers of the faults (their vectors' indexes in the vector table): HardFault 3, MemManage 4,
  BusFault 5, UsageFault 6, SecureFault 7.
"""

from __future__ import annotations

from .regs import Field, Register, RegisterMap, bit

CPUID_M55_R0P0 = 0x410FD220
NVIC_WORDS = 16

REGISTERS = RegisterMap("cortex_m55", (
    Register("DWT_CTRL", 0x1000, "RW", 0x40000000, (bit("CYCCNTENA", 0), Field("NUMCOMP", 28, 4))),
    Register("DWT_CYCCNT", 0x1004, "RW", 0),
    Register("PMU_CCNTR", 0x307C, "RW", 0),
    Register("PMU_CNTENSET", 0x3C00, "W1S", 0, (bit("C", 31),)),
    Register("PMU_CNTENCLR", 0x3C20, "W1C", 0, (bit("C", 31),), alias="PMU_CNTENSET"),
    Register("PMU_CTRL", 0x3E04, "RW", 0, (bit("E", 0), bit("P", 1), bit("C", 2))),
    Register("NVIC_ISER", 0xE100, "W1S", 0, count=NVIC_WORDS),
    Register("NVIC_ICER", 0xE180, "W1C", 0, count=NVIC_WORDS, alias="NVIC_ISER"),
    Register("NVIC_ISPR", 0xE200, "W1S", 0, count=NVIC_WORDS),
    Register("NVIC_ICPR", 0xE280, "W1C", 0, count=NVIC_WORDS, alias="NVIC_ISPR"),
    Register("CPUID", 0xED00, "RO", CPUID_M55_R0P0, (
        Field("Revision", 0, 4), Field("PartNo", 4, 12), Field("Architecture", 16, 4), Field("Variant", 20, 4),
        Field("Implementer", 24, 8))),
    Register("VTOR", 0xED08, "RW", 0),
    Register("CFSR", 0xED28, "W1C", 0, (
        bit("IACCVIOL", 0), bit("DACCVIOL", 1), bit("MUNSTKERR", 3), bit("MSTKERR", 4), bit("MLSPERR", 5),
        bit("MMARVALID", 7), bit("IBUSERR", 8), bit("PRECISERR", 9), bit("IMPRECISERR", 10), bit("UNSTKERR", 11),
        bit("STKERR", 12), bit("LSPERR", 13), bit("BFARVALID", 15), bit("UNDEFINSTR", 16), bit("INVSTATE", 17),
        bit("INVPC", 18), bit("NOCP", 19), bit("STKOF", 20), bit("UNALIGNED", 24), bit("DIVBYZERO", 25))),
    Register("HFSR", 0xED2C, "W1C", 0, (bit("VECTTBL", 1), bit("FORCED", 30), bit("DEBUGEVT", 31))),
    Register("MMFAR", 0xED34, "RW", 0),
    Register("BFAR", 0xED38, "RW", 0),
    Register("DEMCR", 0xEDFC, "RW", 0, (bit("TRCENA", 24),)),
))

SCS_BASE = 0xE000_0000  # the offsets above are from here (the private peripheral bus)
FAULT_EXCEPTIONS = {3: "HardFault", 4: "MemManage", 5: "BusFault", 6: "UsageFault", 7: "SecureFault"}
EXC_RETURN_PREFIX = 0xFF  # LR's top byte on exception entry (EXC_RETURN); bit 2 (SPSEL) set: the frame is on PSP
BASIC_FRAME_PC = 24  # the stacked PC's offset in the exception frame (r0-r3, r12, lr, pc, xpsr)
