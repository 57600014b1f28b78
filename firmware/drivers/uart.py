"""CMSDK APB UART driver (the retarget layer of the runner's platform): init and blocking transmit.

The registers (DATA, STATE, CTRL, BAUDDIV; ARM DDI0479C) are ``hwdesc/cmsdk_uart.py``'s.
On the FVP both stdout and stderr of the runner go to UART0.
"""

from __future__ import annotations

from hwdesc.cmsdk_uart import REGISTERS as R

DATA, STATE, CTRL, BAUDDIV = (R[n].offset for n in ("DATA", "STATE", "CTRL", "BAUDDIV"))
TX_ENABLE = R.CTRL.mask("tx_en")


class Uart:
    def __init__(self, bus, base: int, baud_div: int = 16):
        self.bus = bus
        self.base = base
        bus.write32(base + BAUDDIV, baud_div)
        bus.write32(base + CTRL, TX_ENABLE)

    def write(self, data: bytes) -> None:
        # STATE.TX_FULL never asserts in the model; a real putc loop polls it before each byte
        self.bus.write_repeated(self.base + DATA, data)
