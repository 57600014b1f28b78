"""Arm CMSDK APB UART registers (ARM DDI0479C, "Cortex-M System Design Kit Technical Reference Manual", 4.2).

DATA 0x000, STATE 0x004 (TX/RX buffer full, TX/RX overrun, write 1 to clear an overrun), CTRL 0x008 (enables,
interrupt enables, high-speed test mode), INTSTATUS/INTCLEAR 0x00C (write 1 to clear), BAUDDIV 0x010 (at
least 16).
"""

from __future__ import annotations

from .regs import Field, Register, RegisterMap, bit

_INTS = (bit("tx", 0), bit("rx", 1), bit("tx_overrun", 2), bit("rx_overrun", 3))

REGISTERS = RegisterMap("cmsdk_uart", (
    Register("DATA", 0x000, "RW", 0, (Field("data", 0, 8),)),
    Register("STATE", 0x004, "RW", 0, (bit("tx_full", 0), bit("rx_full", 1), bit("tx_overrun", 2),
                                        bit("rx_overrun", 3))),
    Register("CTRL", 0x008, "RW", 0, (bit("tx_en", 0), bit("rx_en", 1), bit("tx_int_en", 2), bit("rx_int_en", 3),
                                       bit("tx_overrun_int_en", 4), bit("rx_overrun_int_en", 5), bit("hs_test", 6))),
    Register("INTSTATUS", 0x00C, "W1C", 0, _INTS, doc="INTCLEAR when written"),
    Register("BAUDDIV", 0x010, "RW", 0, (Field("bauddiv", 0, 20),)),
))

BAUDDIV_MIN = 16
EOT = 0x04  # the byte that ends a simulation with the FVP's shutdown_on_eot
