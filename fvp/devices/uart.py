"""Arm CMSDK APB UART (ARM DDI0479C, "Cortex-M System Design Kit Technical Reference Manual", 4.2).

Registers: DATA 0x000, STATE 0x004 (bit0 TX buffer full, bit1 RX buffer full, bit2 TX overrun, bit3 RX
overrun), CTRL 0x008 (bit0 TX enable, bit1 RX enable, bits 2-5 interrupt enables, bit6 high-speed test),
INTSTATUS/INTCLEAR 0x00C, BAUDDIV 0x010. The model transmits instantly (TX never full), has no receiver, and
implements the FVP's ``shutdown_on_eot`` (0x04 stops the simulation) and ``shutdown_tag`` options.
"""

from __future__ import annotations

from ..bus import Device
from ..errors import SimulationStop

DATA, STATE, CTRL, INTSTATUS, BAUDDIV = 0x000, 0x004, 0x008, 0x00C, 0x010
CTRL_TX_EN = 1 << 0
EOT = 0x04


class CmsdkUart(Device):
    def __init__(self, name: str, sink, shutdown_on_eot: bool = True, shutdown_tag: str | None = None,
                 unbuffered: bool = False, guest_error=None):
        self.name = name
        self.sink = sink  # object with write(bytes) and flush()
        self.shutdown_on_eot = shutdown_on_eot
        self.shutdown_tag = shutdown_tag.encode() if shutdown_tag else None
        self.unbuffered = unbuffered
        self.guest_error = guest_error or (lambda msg: None)
        self.transmitted = 0
        self.reset()

    def reset(self) -> None:
        self.ctrl = 0
        self.bauddiv = 0
        self.intstatus = 0
        self._line = bytearray()
        self._tail = b""

    def read(self, offset: int, size: int) -> int:
        if offset == DATA:
            return 0  # no receiver modelled
        if offset == STATE:
            return 0  # TX never full
        if offset == CTRL:
            return self.ctrl
        if offset == INTSTATUS:
            return self.intstatus
        if offset == BAUDDIV:
            return self.bauddiv
        self.guest_error(f"{self.name}: read of unimplemented register offset 0x{offset:03x}")
        return 0

    def write(self, offset: int, value: int, size: int) -> None:
        if offset == DATA:
            if not self.ctrl & CTRL_TX_EN:
                self.guest_error(f"{self.name}: write to DATA while the transmitter is disabled (CTRL.TX_EN=0); byte dropped")
                return
            self._transmit(value & 0xFF)
        elif offset == CTRL:
            self.ctrl = value & 0x7F
        elif offset == INTSTATUS:
            self.intstatus &= ~value
        elif offset == BAUDDIV:
            if value < 16:
                self.guest_error(f"{self.name}: BAUDDIV {value} is below the minimum of 16")
            self.bauddiv = value & 0xFFFFF
        else:
            self.guest_error(f"{self.name}: write to unimplemented register offset 0x{offset:03x}")

    def write_bytes(self, data: bytes) -> None:
        """Transmit several bytes (what a firmware putc loop does), with the same EOT/tag handling."""
        if not self.ctrl & CTRL_TX_EN:
            self.guest_error(f"{self.name}: write to DATA while the transmitter is disabled (CTRL.TX_EN=0); {len(data)} bytes dropped")
            return
        if self.unbuffered or (self.shutdown_on_eot and EOT in data):
            for b in data:  # byte by byte: the simulation may stop in the middle
                self._transmit(b)
            return
        # a burst without EOT: the same result as byte-by-byte transmission, buffered up to the last newline
        self.transmitted += len(data)
        self._line += data
        if 0x0A in data or len(self._line) >= 4096:
            cut = self._line.rfind(b"\n") + 1 or len(self._line)
            rest = bytes(self._line[cut:])
            del self._line[cut:]
            self._emit()
            self._line += rest

    def _transmit(self, byte: int) -> None:
        self.transmitted += 1
        self._line.append(byte)
        if byte == EOT and self.shutdown_on_eot:
            self.flush()
            raise SimulationStop("user", "EOT (0x04) on UART0 with shutdown_on_eot")
        if byte == 0x0A or self.unbuffered or len(self._line) >= 4096:
            self._emit()

    def _emit(self) -> None:
        if not self._line:
            return
        data = bytes(self._line)
        self._line.clear()
        self.sink.write(data)
        if self.unbuffered:
            self.sink.flush()
        if self.shutdown_tag:
            window = self._tail + data
            if self.shutdown_tag in window:
                self.flush()
                raise SimulationStop("user", "shutdown tag seen on UART0")
            self._tail = window[-len(self.shutdown_tag):]

    def flush(self) -> None:
        self._emit()
        self.sink.flush()
