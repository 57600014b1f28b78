"""Arm CMSDK APB UART (ARM DDI0479C, "Cortex-M System Design Kit Technical Reference Manual", 4.2).

Registers from :mod:`hwdesc.cmsdk_uart` (DATA, STATE, CTRL, INTSTATUS/INTCLEAR, BAUDDIV), dispatched by a
:class:`~fvp.machine.devices.regbank.RegisterBank`. The model transmits instantly (TX never full), has no receiver (DATA
and STATE read 0; the STATE overrun flags are not modelled, a write to STATE is reported), and implements the
FVP's ``shutdown_on_eot`` (0x04 stops the simulation) and ``shutdown_tag`` options.
"""

from __future__ import annotations

from hwdesc.cmsdk_uart import BAUDDIV_MIN, EOT, REGISTERS

from ..bus import Device
from ...errors import SimulationStop, StopReason
from .regbank import RegisterBank, register_property

CTRL_TX_EN = REGISTERS.CTRL.mask("tx_en")


class CmsdkUart(Device):
    ctrl = register_property("CTRL")

    def __init__(self, name: str, sink, shutdown_on_eot: bool = True, shutdown_tag: str | None = None,
                 unbuffered: bool = False, guest_error=None):
        self.name = name
        self.sink = sink  # object with write(bytes) and flush()
        self.shutdown_on_eot = shutdown_on_eot
        self.shutdown_tag = shutdown_tag.encode() if shutdown_tag else None
        self.unbuffered = unbuffered
        self.guest_error = guest_error or (lambda msg: None)
        self.transmitted = 0
        self.regs = RegisterBank(REGISTERS, read={
            "DATA": lambda: 0,  # no receiver modelled
            "STATE": lambda: 0,  # TX never full
        }, write={
            "DATA": self._write_data,
            "STATE": lambda value: self._unimplemented_write(REGISTERS.STATE.offset),
            "CTRL": lambda value: self.regs.__setitem__("CTRL", value & REGISTERS.CTRL.mask()),
            "BAUDDIV": self._write_bauddiv,
        })
        self.reset()

    def reset(self) -> None:
        self.regs.reset()
        self._line = bytearray()
        self._tail = b""

    def read(self, offset: int, size: int) -> int:
        value = self.regs.read(offset)
        if value is None:
            self.guest_error(f"{self.name}: read of unimplemented register offset 0x{offset:03x}")
            return 0
        return value

    def write(self, offset: int, value: int, size: int) -> None:
        if not self.regs.write(offset, value):
            self._unimplemented_write(offset)

    def _unimplemented_write(self, offset: int) -> None:
        self.guest_error(f"{self.name}: write to unimplemented register offset 0x{offset:03x}")

    def _write_data(self, value: int) -> None:
        if not self.ctrl & CTRL_TX_EN:
            self.guest_error(f"{self.name}: write to DATA while the transmitter is disabled (CTRL.TX_EN=0); byte dropped")
            return
        self._transmit(value & 0xFF)

    def _write_bauddiv(self, value: int) -> None:
        if value < BAUDDIV_MIN:
            self.guest_error(f"{self.name}: BAUDDIV {value} is below the minimum of {BAUDDIV_MIN}")
        self.regs["BAUDDIV"] = value & REGISTERS.BAUDDIV.mask()

    def write_bytes(self, data: bytes) -> None:
        """Transmit several bytes (what a firmware putc loop does), with the same EOT/tag handling."""
        if not self.ctrl & CTRL_TX_EN:
            self.guest_error(f"{self.name}: write to DATA while the transmitter is disabled (CTRL.TX_EN=0); {len(data)} bytes dropped")
            return
        self.transmit(data)

    def transmit(self, data: bytes) -> None:
        """Bytes the transmitter sent (a CPU engine whose own UART model holds the registers hands them here):
        to the output, with the FVP's EOT and shutdown-tag handling."""
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
            raise SimulationStop(StopReason.USER, "EOT (0x04) on UART0 with shutdown_on_eot")
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
                raise SimulationStop(StopReason.USER, "shutdown tag seen on UART0")
            self._tail = window[-len(self.shutdown_tag):]

    def flush(self) -> None:
        self._emit()
        self.sink.flush()
