"""A client of the GDB remote serial protocol, as QEMU's gdbstub speaks it (GDB manual, "Remote Protocol").

Packets are ``$payload#checksum``; QEMU 7.2 acknowledges each packet it receives with ``+`` and does not wait
for the client's acknowledgement (its system-mode stub never retransmits unless asked with ``-``), so this
client sends none and skips QEMU's. Requests may be pipelined: several packets written at once, their replies
read in order. What this engine uses:

- ``g`` (r0-r15 and xPSR: QEMU's ``target.xml`` must have been read first, or it answers nothing), ``p``/``P``;
- ``m``/``M`` (hex; QEMU 7.2 has no binary ``X``; a packet is at most 4096 characters, so memory goes in pieces);
- ``Z0``/``z0`` breakpoints, ``Z4`` access watchpoints (any length);
- ``c``, ``s`` and the interrupt byte 0x03; stop replies ``T05...`` (``awatch:ADDR`` names the watchpoint hit).

Simplified: one thread (the AN547 has one CPU), no non-stop mode, no notifications.
"""

from __future__ import annotations

import select
import socket
import time

from ...errors import FvpError

PACKET_LIMIT = 4096  # QEMU 7.2 gdbstub MAX_PACKET_LENGTH: a longer packet is dropped and the session hangs
MEMORY_CHUNK = (PACKET_LIMIT - 32) // 2  # bytes per m/M packet (two hex digits each)


class ProtocolError(FvpError):
    """The stub closed the connection or answered something this client cannot read."""


class StubTimeout(ProtocolError):
    """The stub did not answer in the time it was given."""


class GdbRemote:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._buf = bytearray()

    # ---------------------------------------------------------------- packets
    @staticmethod
    def frame(payload: bytes) -> bytes:
        return b"$" + payload + b"#%02x" % (sum(payload) & 0xFF)

    def send(self, *payloads: bytes) -> None:
        self.send_raw(b"".join(self.frame(p) for p in payloads))

    def send_raw(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise ProtocolError(f"the GDB stub's connection failed: {e}") from None

    def _fill(self, timeout: float | None) -> bool:
        if timeout is not None:
            ready, _, _ = select.select([self.sock], [], [], timeout)
            if not ready:
                return False
        self._buf += receive_some(self.sock, "GDB stub")
        return True

    def receive(self, timeout: float | None = None) -> bytes | None:
        """The next packet's payload (acknowledgements skipped); None if ``timeout`` seconds pass first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            start = self._buf.find(b"$")
            if start >= 0:
                end = self._buf.find(b"#", start)
                if end >= 0 and len(self._buf) >= end + 3:
                    payload = bytes(self._buf[start + 1:end])
                    del self._buf[:end + 3]
                    return _run_length_decode(payload)
            elif self._buf:
                self._buf.clear()  # '+' acknowledgements
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self._fill(left) and left is not None:
                return None

    def pending(self) -> bool:
        """Whether a packet (or part of one) has arrived without being read."""
        return b"$" in self._buf

    def request(self, payload: bytes, timeout: float | None = None) -> bytes:
        """The reply to ``payload``; ``ProtocolError`` if none comes within ``timeout`` seconds (None: waits)."""
        self.send(payload)
        reply = self.receive(timeout)
        if reply is None:
            raise StubTimeout(f"the GDB stub did not answer within {timeout:.1f} s")
        return reply

    def requests(self, *payloads: bytes) -> list[bytes]:
        """Several requests written at once, their replies in order."""
        self.send(*payloads)
        return [self.receive() for _ in payloads]

    def expect_ok(self, *payloads: bytes) -> None:
        for p, r in zip(payloads, self.requests(*payloads)):
            if r != b"OK":
                raise ProtocolError(f"the GDB stub refused {p[:40]!r}: {r[:80]!r}")

    # ---------------------------------------------------------------- session
    def handshake(self, timeout: float | None = None) -> bytes:
        """``qSupported`` and the target description (QEMU answers register packets only after it); each answer
        within ``timeout`` seconds (a QEMU that hangs at its start is an error, not a wait without end)."""
        features = self.request(b"qSupported:multiprocess+;swbreak+;hwbreak+;xmlRegisters=arm", timeout)
        offset = 0
        while True:
            r = self.request(b"qXfer:features:read:target.xml:%x,%x" % (offset, 0x800), timeout)
            if not r or r[:1] not in b"lm":
                raise ProtocolError(f"the GDB stub gave no target description ({r[:60]!r})")
            offset += len(r) - 1
            if r[:1] == b"l":
                return features

    # ---------------------------------------------------------------- registers and memory
    @staticmethod
    def register_packet(n: int, value: int) -> bytes:
        return b"P%x=%s" % (n, (value & 0xFFFFFFFF).to_bytes(4, "little").hex().encode())

    @staticmethod
    def words(hexdata: bytes, count: int) -> list[int]:
        if len(hexdata) < 8 * count:
            raise ProtocolError(f"short register reply ({len(hexdata)} characters)")
        raw = bytes.fromhex(hexdata[:8 * count].decode())
        return [int.from_bytes(raw[4 * i:4 * i + 4], "little") for i in range(count)]

    def read_register(self, n: int) -> int:
        return self.words(self.request(b"p%x" % n), 1)[0]

    def read_memory(self, address: int, size: int) -> bytes:
        """Debug read (MMIO included); in pieces a packet holds."""
        out = bytearray()
        pieces = [(a, min(MEMORY_CHUNK, address + size - a)) for a in range(address, address + size, MEMORY_CHUNK)]
        for (a, n), r in zip(pieces, self.requests(*(b"m%x,%x" % p for p in pieces))):
            if r[:1] == b"E" or len(r) != 2 * n:
                raise ProtocolError(f"cannot read {n} bytes at 0x{a:08x}: {r[:20]!r}")
            out += bytes.fromhex(r.decode())
        return bytes(out)

    def write_memory(self, address: int, data: bytes) -> None:
        """Debug write: RAM and ROM (QEMU's ``address_space_write_rom``), never device registers."""
        pieces = [b"M%x,%x:%s" % (address + i, len(data[i:i + MEMORY_CHUNK]), data[i:i + MEMORY_CHUNK].hex().encode())
                  for i in range(0, len(data), MEMORY_CHUNK)]
        for i in range(0, len(pieces), 64):
            self.expect_ok(*pieces[i:i + 64])


def receive_some(sock: socket.socket, what: str, size: int = 1 << 16) -> bytes:
    """What the channel has (at least a byte); ``ProtocolError`` when it broke or QEMU closed it."""
    try:
        data = sock.recv(size)
    except OSError as e:
        raise ProtocolError(f"QEMU's {what} connection failed: {e}") from None
    if not data:
        raise ProtocolError(f"QEMU closed its {what} connection")
    return data


def _run_length_decode(payload: bytes) -> bytes:
    if b"*" not in payload:
        return payload
    out = bytearray()
    i = 0
    while i < len(payload):
        c = payload[i]
        if c == 0x2A and out and i + 1 < len(payload):  # '*' n: the previous character n - 29 more times
            out += bytes([out[-1]]) * (payload[i + 1] - 29)
            i += 2
            continue
        out.append(c)
        i += 1
    return bytes(out)
