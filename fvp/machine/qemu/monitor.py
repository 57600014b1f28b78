"""QEMU's two other control channels: the qtest protocol (memory and interrupt lines) and QMP (the clock).

qtest (``softmmu/qtest.c``): text lines, answered ``OK ...`` or ``FAIL ...``. ``b64read ADDR SIZE`` /
``b64write ADDR SIZE DATA`` move memory through the CPU's address space with unspecified transaction attributes
(which the SSE-300's memory protection controllers treat as secure, so every RAM is reachable; a ROM ignores
writes), in one request whatever the size; ``set_irq_in PATH NAME N LEVEL`` drives a GPIO input, here an
expansion interrupt of the SSE-300. It runs beside the TCG accelerator when the qtest server is created as an
object (``-object qtest``) rather than with ``-qtest`` (which selects the qtest accelerator).

QMP (``qapi/replay.json``): ``query-replay`` answers the instruction counter (``icount``: instructions executed
since reset; with ``-icount`` it counts without record/replay), ``query-cpus-fast`` the CPU's host thread (idle
while the CPU sleeps in WFI), ``quit``. Asynchronous events (STOP and RESUME at every stop of the CPU) are read
and dropped.
"""

from __future__ import annotations

import base64
import json
import socket

from .rsp import ProtocolError, receive_some


class _Lines:
    def __init__(self, sock: socket.socket, what: str):
        self.sock = sock
        self.what = what
        self._buf = bytearray()

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise ProtocolError(f"QEMU's {self.what} connection failed: {e}") from None

    def line(self) -> bytes:
        while True:
            i = self._buf.find(b"\n")
            if i >= 0:
                out = bytes(self._buf[:i])
                del self._buf[:i + 1]
                return out
            self._buf += receive_some(self.sock, self.what, 1 << 20)


class QTest:
    def __init__(self, sock: socket.socket):
        self._io = _Lines(sock, "qtest")

    def _call(self, line: str) -> str:
        self._io.send(line.encode() + b"\n")
        while True:
            reply = self._io.line().decode("ascii", "replace")
            if reply.startswith("IRQ"):  # intercepted interrupt lines (never asked for here)
                continue
            if not reply.startswith("OK"):
                raise ProtocolError(f"qtest refused {line[:60]!r}: {reply[:80]}")
            return reply[3:]

    def read(self, address: int, size: int) -> bytes:
        if size <= 0:
            return b""
        return base64.b64decode(self._call(f"b64read 0x{address:x} 0x{size:x}"))

    def write(self, address: int, data) -> None:
        if len(data):
            self._call(f"b64write 0x{address:x} 0x{len(data):x} {base64.b64encode(bytes(data)).decode()}")

    def set_irq(self, path: str, name: str, n: int, level: int) -> None:
        self._call(f"set_irq_in {path} {name} {n} {level}")


class Qmp:
    """QMP, left in capabilities negotiation until its first command: a monitor there is sent no events, and QEMU
    formats a STOP and a RESUME event for every stop of the CPU once it is in command mode (about 10% of QEMU's
    CPU time per stop, measured with single steps; a semihosting runner reading its program stops thousands of
    times before it first needs the clock)."""

    def __init__(self, sock: socket.socket):
        self._io = _Lines(sock, "QMP")
        self._io.line()  # the greeting
        self._negotiated = False

    def send(self, command: str, **arguments) -> None:
        self._io.send(json.dumps({"execute": command, "arguments": arguments}).encode() + b"\n")

    def reply(self):
        while True:
            line = self._io.line()
            if line.startswith(b'{"timestamp"'):  # an event (STOP, RESUME at every stop of the CPU): not a reply
                continue
            msg = json.loads(line)
            if "event" in msg:
                continue
            if "error" in msg:
                raise ProtocolError(f"QMP: {msg['error'].get('desc', msg['error'])}")
            return msg.get("return")

    def call(self, command: str, **arguments):
        if not self._negotiated:
            self._negotiated = True
            self.send("qmp_capabilities")
            self.reply()
        self.send(command, **arguments)
        return self.reply()

    def icount(self) -> int:
        return int(self.call("query-replay")["icount"])

    def vcpu_thread(self) -> int | None:
        """The host thread that runs the CPU (``query-cpus-fast``), or None."""
        cpus = self.call("query-cpus-fast") or []
        return int(cpus[0]["thread-id"]) if cpus and "thread-id" in cpus[0] else None
