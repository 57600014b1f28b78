"""What QEMU's ``mps3-an547`` machine provides: its memory map, the devices it models, its interrupt lines.

Facts of QEMU 7.2 (the version this engine is tested with), from its sources: ``hw/arm/mps2-tz.c`` (the AN547
FPGA image: ``an547_raminfo``, ``an547_ppcs``, ``mps3tz_an547_class_init``: SYSCLK 32 MHz, INITSVTOR 0, the
"U55 timing adapter" unimplemented devices at 0x4810_2000 and 0x4810_3000, CMSDK UART0 at 0x4930_3000 with
``serial_hd(0)``) and ``hw/arm/armsse.c`` (the SSE-300: ITCM 512 KiB at 0x0000_0000 and DTCM 512 KiB at
0x2000_0000, two internal SRAM banks of 2 MiB from 0x2100_0000, the aliases 0x1000_0000 -> 0x0000_0000 and
0x3000_0000 -> 0x2000_0000 that the secure addresses use, the expansion interrupts as the named GPIO inputs
``EXP_IRQ`` of the child ``/machine/iotkit``, numbered from interrupt 32). The DDR is the machine's RAM, which
``-machine memory-backend=`` can back with a file shared with this process.

Where Arm's Corstone-300 FVP (the board YAML, MPS3 AN552) and AN547 differ, the board wins for what this project
models and the check of an ELF's sections names both (``docs/full-system.md`` lists the differences): the code
SRAM at 0x0100_0000 is 1 MiB on the FVP and 2 MiB here; the internal SRAM at 0x2100_0000 2 MiB on the FVP and 4
MiB here; the Ethos-U's window 0x4810_2000 is an unimplemented device in QEMU (this project's Ethos-U answers it);
QSPI is a ROM in QEMU (the CPU cannot write it).
"""

from __future__ import annotations

from dataclasses import dataclass

MACHINE = "mps3-an547"
CPU = "cortex-m55"
MIN_VERSION = (7, 2)  # mps3-an547 came in QEMU 6.0; 7.2 is the version this engine is built and tested against
SYSCLK_HZ = 32_000_000  # mps3tz_an547_class_init: sysclk_frq (the CPU's clock, SysTick's processor clock)
INITSVTOR = 0x0000_0000  # mps3tz_an547_class_init: init_svtor (0x1000_0000 is the same memory: its secure alias)
IRQ_PATH, IRQ_INPUT, IRQ_FIRST = "/machine/iotkit", "EXP_IRQ", 32  # interrupt n is EXP_IRQ[n - 32]
UART0_BASE = 0x4930_3000  # an547_ppcs: "uart0" (serial_hd(0)); +0x1000_0000 is its secure alias
GDB_XPSR = 25  # the xPSR's register number in QEMU's arm-m-profile.xml (r0-r15 are 0-15)


@dataclass(frozen=True)
class Memory:
    name: str
    base: int
    size: int
    secure_base: int | None
    rom: bool = False  # the CPU cannot write it; a debugger can (the loader writes it through the GDB stub)

    def holds(self, address: int, size: int) -> int | None:
        """The offset of ``[address, address + size)`` in this memory (either alias), or None."""
        for base in (self.base, self.secure_base):
            if base is not None and base <= address and address + size <= base + self.size:
                return address - base
        return None


MEMORY = (
    Memory("ITCM", 0x0000_0000, 512 << 10, 0x1000_0000),  # armsse.c: "sse300-itcm"
    Memory("SRAM", 0x0100_0000, 2 << 20, 0x1100_0000),  # mps2-tz.c an547_raminfo "sram" (the FPGA's code SRAM)
    Memory("DTCM", 0x2000_0000, 512 << 10, 0x3000_0000),  # armsse.c: "sse300-dtcm"
    Memory("ISRAM", 0x2100_0000, 4 << 20, 0x3100_0000),  # armsse.c: SSE-300 sram_banks 2 x 2 MiB (sram_addr_width 21)
    Memory("QSPI", 0x2800_0000, 8 << 20, 0x3800_0000, rom=True),  # an547_raminfo "QSPI", IS_ROM
    Memory("DDR", 0x6000_0000, 2 << 30, None),  # an547_raminfo "DDR": the machine's RAM (MPS3_DDR_SIZE, 64-bit host)
)
DDR = MEMORY[-1]

# The board's device types QEMU models itself, at the board's address: the CMSDK UART (UART0 only).
# Everything else the board declares is this project's and is reached through trapped accesses.
QEMU_DEVICES = {"cmsdk_uart": (UART0_BASE,)}

# The registers of hwdesc.cortex_m55 that QEMU's Cortex-M55 implements itself (its NVIC and SCB): the others (the
# DWT's cycle counter, the Armv8.1-M PMU, DEMCR) read as zero there and are answered by the board's device.
QEMU_SYSTEM_REGISTERS = frozenset({"NVIC_ISER", "NVIC_ICER", "NVIC_ISPR", "NVIC_ICPR", "CPUID", "VTOR", "CFSR",
                                   "HFSR", "MMFAR", "BFAR"})


def memory_at(address: int, size: int = 1) -> tuple[Memory, int] | None:
    """The memory of the machine holding ``[address, address + size)`` and the offset in it, or None."""
    for m in MEMORY:
        off = m.holds(address, size)
        if off is not None:
            return m, off
    return None


def describe() -> str:
    """The memory map in one phrase, for messages."""
    return ", ".join(f"{m.name} 0x{m.base:08x}+{size_text(m.size)}" for m in MEMORY)


def size_text(n: int) -> str:
    return f"{n >> 30}GiB" if n >= 1 << 30 and not n % (1 << 30) else (
        f"{n >> 20}MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n >> 10}KiB")
