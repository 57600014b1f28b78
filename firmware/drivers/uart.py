"""CMSDK APB UART driver (the retarget layer of the runner's platform): init and blocking transmit.

ARM DDI0479C: DATA 0x000, STATE 0x004 (bit0 TX full), CTRL 0x008 (bit0 TX enable), BAUDDIV 0x010.
On the FVP both stdout and stderr of the runner go to UART0.
"""

from __future__ import annotations

DATA, STATE, CTRL, BAUDDIV = 0x000, 0x004, 0x008, 0x010


class Uart:
    def __init__(self, bus, base: int, baud_div: int = 16):
        self.bus = bus
        self.base = base
        bus.write32(base + BAUDDIV, baud_div)
        bus.write32(base + CTRL, 0x1)  # TX enable

    def write(self, data: bytes) -> None:
        # STATE.TX_FULL never asserts in the model; a real putc loop polls it before each byte
        self.bus.write_repeated(self.base + DATA, data)
