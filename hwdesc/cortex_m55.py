"""The Cortex-M55 system registers the simulator models, as offsets from the system space base 0xE000_0000.

* DWT (Armv8-M ARM, ARM DDI0553): DWT_CTRL 0x1000 (bit 0 CYCCNTENA; reads NUMCOMP etc. in [31:28]),
  DWT_CYCCNT 0x1004.
* Armv8.1-M PMU at 0x3000: PMU_CCNTR 0x307C, PMU_CNTENSET 0x3C00 / PMU_CNTENCLR 0x3C20 (bit 31 = CCNTR),
  PMU_CTRL 0x3E04 (E enable, P event-counter reset, C cycle-counter reset). What CMSIS ``ARM_PMU_*`` use.
* NVIC ISER/ICER/ISPR/ICPR at 0xE100/0xE180/0xE200/0xE280 (16 words each, bit n of word k = IRQ 32k+n).
* SCB CPUID 0xED00 (0x410FD220: Cortex-M55 r0p0, as the FVP reports); DCB DEMCR 0xEDFC (TRCENA bit 24
  gates the DWT and PMU counters).
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
    Register("DEMCR", 0xEDFC, "RW", 0, (bit("TRCENA", 24),)),
))
