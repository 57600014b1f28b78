"""Command-stream decoder and register state (research notes ethosu.md section 1).

* :func:`iter_commands` / :func:`decode_commands` split a stream of 32-bit words into :class:`Command` records,
  raising ``NpuFault("cmd_parse_error", offset=...)`` on what the hardware would reject: an unknown opcode,
  reserved bits [13:10] set, a control field other than CMD0/CMD1, a CMD1 without its payload word, and
  commands that do not exist on the configured product (U65-only registers on a U55).
* :class:`RegisterState` is the TSU register file.  Vela/Regor drop register writes whose value did not
  change *anywhere* in the stream, so the state persists across operations and is never reset.
* The operations built from that state at each ``NPU_OP_*`` command: ``operations.py``.
* :func:`parse_driver_payload` strips the "COP1" driver-actions header Vela puts around a stream.

The word layout (opcode, reserved bits, control) is common to every Ethos-U; the command table is the
product family's (``arch.family.isa``: ``hwdesc.ethosu`` for the U55/U65, ``hwdesc.ethosu85`` for the U85, which
commands exist on a configuration: ``family.has_command``), and a :class:`Command` carries its own definition.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import NpuFault
from hwdesc import ethosu as R
from .arch import NpuArch, get_arch


def isa_of(arch):
    """The command-stream ISA module (``COMMANDS``, ``BY_NAME``, field codes) of an NPU variant."""
    return get_arch(arch).family.isa

# ======================================================================================== commands


@dataclass(frozen=True)
class Command:
    """One decoded command.

    ``offset`` is the byte offset of its first word in the stream, ``code`` the low half-word
    (``control << 14 | opcode``), ``param`` the high half-word, ``payload`` the second word of a CMD1
    (``None`` for CMD0) and ``length`` the size in words (1 or 2).
    """

    offset: int
    code: int
    name: str
    param: int
    payload: int | None
    length: int
    cdef: R.CommandDef | None = field(default=None, compare=False, repr=False)

    @property
    def opcode(self) -> int:
        return self.code & R.OPCODE_MASK

    @property
    def is_operation(self) -> bool:
        return self.definition.kind == "op"

    @property
    def definition(self) -> R.CommandDef:
        return self.cdef if self.cdef is not None else R.COMMANDS[self.code]

    @property
    def words(self) -> tuple:
        w0 = (self.param << 16) | self.code
        return (w0,) if self.payload is None else (w0, self.payload)

    def code_name(self, fname: str) -> str:
        """The name of the code in the operation's param field ``fname`` (``NPU_OP_POOL`` ``pooling_mode`` ...);
        a value the ISA table does not define is an invalid command stream (:func:`invalid_value`). A CMD1
        operation's (the U85's ``NPU_OP_BRANCH``) param fields are its ``param_fields``."""
        d = self.definition
        (f,) = [f for f in (d.param_fields if d.has_payload else d.fields) if f.name == fname]
        return _code_name(self.name, f, f.get(self.param), self.offset)


def as_words(words) -> np.ndarray:
    """A stream as little-endian uint32 words (from bytes, a list of ints or an array)."""
    if isinstance(words, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(words), dtype="<u4")
    a = np.asarray(words)
    if a.dtype != np.uint32:
        a = a.astype(np.int64).astype(np.uint32)
    return a


def decode_command(words: np.ndarray, index: int, arch: NpuArch) -> Command:
    """Decode the command starting at word ``index``; raise ``NpuFault`` if the hardware would reject it."""
    n = len(words)
    off = index * 4
    if index >= n:
        raise NpuFault("cmd_parse_error", f"command stream ended at byte 0x{off:x} without NPU_OP_STOP",
                       offset=off)
    w = int(words[index])
    low = w & 0xFFFF
    param = w >> 16
    if low & R.RESERVED_MASK:
        raise NpuFault("cmd_parse_error", f"reserved bits [13:10] set in command word 0x{w:08x} at 0x{off:x}",
                       offset=off)
    control = low >> R.CONTROL_SHIFT
    if control > R.CONTROL_CMD1:
        raise NpuFault("cmd_parse_error", f"invalid control field {control} in command word 0x{w:08x} at 0x{off:x}",
                       offset=off)
    cdef = isa_of(arch).COMMANDS.get(low)
    if cdef is None:
        kind = "CMD1" if control else "CMD0"
        raise NpuFault("cmd_parse_error", f"unknown {kind} opcode 0x{low & R.OPCODE_MASK:03x} "
                       f"(word 0x{w:08x}) at 0x{off:x}", offset=off)
    if not arch.family.has_command(cdef, arch):
        raise NpuFault("cmd_parse_error", f"{cdef.name} (word 0x{w:08x}) at 0x{off:x} is not valid on {arch.name}",
                       offset=off)
    payload = None
    if control == R.CONTROL_CMD1:
        if index + 1 >= n:
            raise NpuFault("cmd_parse_error", f"{cdef.name} at 0x{off:x} is missing its 32-bit payload",
                           offset=off)
        payload = int(words[index + 1])
    return Command(off, low, cdef.name, param, payload, 2 if payload is not None else 1, cdef)


def iter_commands(words, arch, start: int = 0):
    """Yield the commands of ``words`` in order (lazily, so a fault comes after the good commands)."""
    arch = get_arch(arch)
    w = as_words(words)
    i = start
    n = len(w)
    while i < n:
        c = decode_command(w, i, arch)
        yield c
        i += c.length


def decode_commands(words, arch) -> list[Command]:
    """All commands of a stream; raises ``NpuFault("cmd_parse_error")`` at the first invalid one."""
    return list(iter_commands(words, arch))


def _compact(values) -> str:
    """``0, 1, 2, 5`` as ``0-2, 5``."""
    out, run = [], []
    for v in sorted(values):
        if run and v == run[-1] + 1:
            run.append(v)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)))
        run = [v]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)))
    return ", ".join(out)


def invalid_value(command: str, field, value: int, offset: int) -> NpuFault:
    """The fault of an enumerated field whose value the product's ISA table does not define (a reserved code): the
    command stream is invalid. Names the command, the field and the value, and the values the field takes."""
    codes = field.enum
    takes = (", ".join(f"{v} {n}" for v, n in sorted(codes.items())) if len(codes) <= 6
             else _compact(codes))
    return NpuFault("cmd_parse_error", f"invalid command stream: {command} {field.name} = {value}, a value the "
                    f"field does not define (it takes {takes})", offset=offset)


def _code_name(command: str, field, value: int, offset: int) -> str:
    name = field.enum.get(value)
    if name is None:
        raise invalid_value(command, field, value, offset)
    return name


# ======================================================================================== COP1 payload

_DA = R.DRIVER_ACTION


@dataclass(frozen=True)
class DriverPayload:
    """A Vela "COP1" driver-actions payload: the CONFIG/ID words it expects and the command stream."""

    config_word: int | None
    id_word: int | None
    stream: np.ndarray  # uint32 words of the register command stream
    stream_offset: int  # byte offset of the stream inside the payload


def parse_driver_payload(data) -> DriverPayload:
    """Parse ``cmd_data`` (bytes or uint32 words) starting with "COP1"; return the embedded command stream.

    Raises ``ValueError`` for a malformed payload.
    """
    w = as_words(data)
    if len(w) == 0 or int(w[0]) != R.COP1_FOURCC:
        raise ValueError("not a COP1 driver payload (missing 'COP1' magic)")
    i = 1
    config = ident = None
    while i < len(w):
        tag = int(w[i])
        cmd = R.driver_action(tag)
        if cmd == _DA.OPTIMIZER_CONFIG:
            if i + 2 >= len(w):
                raise ValueError("truncated OPTIMIZER_CONFIG in COP1 payload")
            config, ident = int(w[i + 1]), int(w[i + 2])
            i += 3
        elif cmd == _DA.NOP:
            i += 1
        elif cmd == _DA.READ_APB_REG or cmd == _DA.DUMP_SHRAM:
            i += 1
        elif cmd == _DA.COMMAND_STREAM:
            length = R.driver_action_length(tag)
            start = i + 1
            if start + length > len(w):
                raise ValueError(f"COP1 command stream of {length} words overruns the payload")
            return DriverPayload(config, ident, w[start:start + length], start * 4)
        else:
            raise ValueError(f"unknown COP1 driver action 0x{tag:08x} at word {i}")
    raise ValueError("COP1 payload has no COMMAND_STREAM")


# ======================================================================================== register state


class RegisterState:
    """The TSU register file: raw values by command code, kept across operations.

    CMD0 registers hold their 16-bit param; CMD1 registers hold ``payload | param << 32``.  Registers never
    written read as 0 (the reset value).
    """

    __slots__ = ("values", "arch", "isa", "_fields")

    def __init__(self, arch):
        self.arch = get_arch(arch)
        self.isa = isa_of(self.arch)
        self._fields = _field_index(self.isa)
        self.values: dict[int, int] = {}

    def apply(self, cmd: Command) -> None:
        """Record a register write (operations are ignored)."""
        if cmd.definition.kind == "reg":
            if cmd.payload is None:
                self.values[cmd.code] = cmd.param
            else:
                self.values[cmd.code] = cmd.payload | (cmd.param << 32)

    def copy(self) -> "RegisterState":
        s = RegisterState(self.arch)
        s.values = dict(self.values)
        return s

    # raw access
    def raw(self, name: str) -> int:
        return self.values.get(self.isa.BY_NAME[name].code, 0)

    def __getitem__(self, name: str) -> int:
        return self.raw(name)

    def field(self, name: str, fname: str) -> int:
        """A field of a register as the ISA table declares it (payload fields of a CMD1, then its param's)."""
        code, f, shift, mask = self._fields[name, fname]
        return f.get((self.values.get(code, 0) >> shift) & mask)

    def code(self, name: str, fname: str, offset: int) -> str:
        """The name of an enumerated field's code, as the ISA table names it (``NPU_SET_IFM_PRECISION``
        ``format`` -> ``"NHCWB16"``): how a product translates a raw field into the descriptors' named codes. A
        value the table does not define is an invalid command stream: ``NpuFault("cmd_parse_error")`` naming the
        command, the field and the value, at the operation's ``offset``."""
        code, f, shift, mask = self._fields[name, fname]
        return _code_name(name, f, f.get((self.values.get(code, 0) >> shift) & mask), offset)

    # typed access
    def u16(self, name: str) -> int:
        return self.raw(name) & 0xFFFF

    def s16(self, name: str) -> int:
        v = self.raw(name) & 0xFFFF
        return v - 0x10000 if v & 0x8000 else v

    def m1(self, name: str) -> int:
        """A ``*_M1`` register plus one."""
        return (self.raw(name) & 0xFFFF) + 1

    def payload(self, name: str) -> int:
        return self.raw(name) & 0xFFFFFFFF

    def cmd1_param(self, name: str) -> int:
        return (self.raw(name) >> 32) & 0xFFFF

    def address(self, name: str) -> int:
        """An unsigned address/offset register (32-bit on U55, 40-bit on U65/U85)."""
        v = self.raw(name)
        if self.arch.address_bits == 40:
            return (v & 0xFFFFFFFF) | (((v >> 32) & 0xFF) << 32)
        return v & 0xFFFFFFFF

    def signed_address(self, name: str) -> int:
        """A signed stride/skip register (two's complement, 32-bit on U55, 40-bit on U65)."""
        bits = self.arch.address_bits
        v = self.address(name)
        return v - (1 << bits) if v >> (bits - 1) else v


_FIELD_INDEX: dict = {}


def _field_index(isa) -> dict:
    """(register name, field name) -> (code, Field, shift, mask) for one ISA module, built once."""
    out = _FIELD_INDEX.get(isa.__name__)
    if out is not None:
        return out
    out = _FIELD_INDEX[isa.__name__] = {}
    for cdef in isa.COMMANDS.values():
        for f in cdef.param_fields:
            out[cdef.name, f.name] = (cdef.code, f, 32, 0xFFFF)
        for f in cdef.fields:  # a payload field wins over a param field of the same name
            out[cdef.name, f.name] = (cdef.code, f, 0, 0xFFFFFFFF if cdef.has_payload else 0xFFFF)
    return out
