"""Parser for the Ethos-U delegate blob (the ``vela_bin_stream`` the Arm backend stores as processed data).

Layout (``backends/arm/runtime/VelaBinStream.{h,cpp}``, emitter ``arm_vela.py``; little-endian): a sequence of
blocks, each a 32-byte header ``<16sIB11s>`` (NUL-padded name, unpadded payload size, ``external`` flag,
reserved) followed by the payload padded with zeros to a multiple of 16. Blocks written: ``vela_bin_stream``
(empty, first), ``cmd_data`` (``COP1``... driver payload), ``weight_data`` (region 0), ``scratch_size`` (uint32),
``inputs``, ``outputs`` (``int32 count`` + ``count`` VelaIO records), ``vela_end_stream`` (empty, must end exactly
at the blob end).

VelaIO records are 36 bytes since Vela 4.4 (``int shape[6]; int elem_size; int offset; int region``) and 28 bytes
before (``int shape[4]`` right-padded with 0); the size is told apart from the block size
(``count * 36 + 4`` vs ``count * 28 + 4``).

``parse_vela_bin`` first does what ``vela_bin_validate`` does (alignment, header, footer) and then walks the
blocks like ``vela_bin_read`` (names compared as prefixes with ``strncmp``; the last block of a name wins),
with bounds checks the C code lacks. Errors: ``RuntimeFailure(Error.InvalidProgram, msg)`` with the
runtime's log message where it has one; an external (NamedDataMap) block raises ``NotSupported``.
All offsets are relative to the start of the blob; nothing is copied.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import NamedTuple

from firmware.executorch.error import Error, RuntimeFailure
from firmware.executorch.flatbuf import as_memoryview, fail

BLOCK_HEADER = struct.Struct("<16sIB11s")  # 32 bytes
BLOCK_HEADER_SIZE = BLOCK_HEADER.size
EXTERNAL_BLOCK_REFERENCE = 1
IO_RECORD_SIZE = 36  # int shape[6], elem_size, offset, region
IO_RECORD_SIZE_OLD = 28  # int shape[4], elem_size, offset, region (before Vela 4.4)
_U32_MASK = 0xFFFFFFFF

# Names in the order the runtime tests them (prefix compare, strncmp(name, X, strlen(X))).
_KNOWN = ("vela_bin_stream", "cmd_data", "weight_data", "scratch_size", "inputs", "outputs", "vela_end_stream")


def next_mul_16(value: int) -> int:
    """``((v - 1) | 15) + 1`` in 32-bit arithmetic, like the runtime (0 stays 0)."""
    return ((((value - 1) & _U32_MASK) | 15) + 1) & _U32_MASK


class VelaIO(NamedTuple):
    shape: tuple  # 6 dims (old 4-dim records: zero padding dropped, then left-padded with 1s)
    elem_size: int
    offset: int  # byte offset inside the scratch (region 1) buffer
    region: int  # ignored by the runtime
    raw_shape: tuple = ()  # the dims exactly as stored (6 or 4)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.elem_size


class VelaBlock(NamedTuple):
    name: str  # the stored name, up to its first NUL
    offset: int  # of the 32-byte header
    size: int  # unpadded payload size
    external: int

    @property
    def payload_offset(self) -> int:
        return self.offset + BLOCK_HEADER_SIZE


@dataclass(frozen=True)
class VelaBin:
    size: int  # blob size
    cmd_data: tuple  # (offset, size) in the blob
    weight_data: tuple | None  # (offset, size); None when the blob has no weight_data block
    scratch_size: int
    inputs: list
    outputs: list
    io_record_size: int  # 36 or 28
    blocks: list = field(default_factory=list)  # every block walked, in order

    @property
    def block_order(self) -> list:
        return [b.name for b in self.blocks]


def _hexp(addr: int) -> str:
    return f"0x{addr:x}"


def validate_vela_bin(blob, *, blob_address: int | None = None) -> list[str]:
    """What ``vela_bin_validate`` logs for this blob (empty list: valid). Alignment is checked against
    ``blob_address`` when given, else only the footer's offset within the blob."""
    mv = as_memoryview(blob)
    size = len(mv)
    errors = []
    base = blob_address if blob_address is not None else 0
    if blob_address is not None and blob_address % 16:
        errors.append(f"Vela bin ptr not aligned to 16 bytes: {_hexp(blob_address)}")
    foot = size - BLOCK_HEADER_SIZE
    if (base + foot) % 16:
        errors.append(f"End of vela bin not aligned to 16 bytes: {_hexp((base + foot) & _U32_MASK)}")
    if bytes(mv[0:15]) != b"vela_bin_stream":
        errors.append("Incorrect header in vela_bin_stream")
    if foot < 0 or bytes(mv[foot:foot + 15]) != b"vela_end_stream":
        errors.append("Incorrect footer in vela_bin_stream")
    return errors


def _parse_ios(mv: memoryview, off: int, size: int, what: str) -> tuple[list, int | None]:
    """(records, record size or None when count is 0) of an ``inputs``/``outputs`` payload."""
    if size < 4:
        raise fail(f"Vela {what} block of {size} bytes has no count")
    count = struct.unpack_from("<i", mv, off)[0]
    if count < 0:
        raise fail(f"Vela {what} block has a negative count {count}")
    if size == 4 + count * IO_RECORD_SIZE:
        rec, ndims = IO_RECORD_SIZE, 6
    elif size == 4 + count * IO_RECORD_SIZE_OLD:
        rec, ndims = IO_RECORD_SIZE_OLD, 4
    else:
        raise fail(f"Vela {what} block of {size} bytes does not hold {count} VelaIO records "
                   f"({4 + count * IO_RECORD_SIZE} or {4 + count * IO_RECORD_SIZE_OLD} bytes expected)")
    fmt = struct.Struct(f"<{ndims + 3}i")
    ios = []
    for i in range(count):
        vals = fmt.unpack_from(mv, off + 4 + i * rec)
        raw = tuple(vals[:ndims])
        if any(d < 0 for d in raw):
            raise fail(f"Vela {what}[{i}] has a negative dimension {list(raw)}")
        elem_size, offset, region = vals[ndims:]
        if elem_size < 0 or offset < 0:
            raise fail(f"Vela {what}[{i}] has a negative elem_size {elem_size} or offset {offset}")
        if ndims == 6:
            shape = raw
        else:
            dims = list(raw)
            while dims and dims[-1] == 0:
                dims.pop()
            shape = (1,) * (6 - len(dims)) + tuple(dims)
        ios.append(VelaIO(shape, elem_size, offset, region, raw))
    return ios, (rec if count else None)


def parse_vela_bin(blob, *, blob_address: int | None = None) -> VelaBin:
    """Validate and parse a Vela blob (bytes, memoryview or numpy uint8 array; offsets relative to it)."""
    mv = as_memoryview(blob)
    size = len(mv)
    errors = validate_vela_bin(mv, blob_address=blob_address)
    if errors:
        raise fail(errors[0])

    cmd = weight = inputs = outputs = None
    scratch = 0
    rec_sizes = set()
    blocks = []
    pos = 0
    while pos < size:
        if pos + BLOCK_HEADER_SIZE > size:
            raise fail(f"Vela block header at offset {pos} runs past the blob end ({size} bytes)")
        raw_name, bsize, external, _ = BLOCK_HEADER.unpack_from(mv, pos)
        name = raw_name.split(b"\0", 1)[0].decode("latin-1")
        shown = name.encode("unicode_escape").decode("ascii")
        payload = pos + BLOCK_HEADER_SIZE
        nxt = payload + next_mul_16(bsize)
        blocks.append(VelaBlock(name, pos, bsize, external))
        kind = next((k for k in _KNOWN if raw_name.startswith(k.encode())), None)
        if external == EXTERNAL_BLOCK_REFERENCE:
            raise RuntimeFailure(Error.NotSupported,
                                 f"Vela block '{shown}' at offset {pos} is an external (NamedDataMap) reference; "
                                 f"external blocks are not supported")
        if kind == "vela_end_stream":
            if nxt != size:
                raise fail("Expected vela binary to end with vela_end_stream")
            break
        if kind is None:
            raise fail("Invalid block name or malformed binary")
        if payload + bsize > size:
            raise fail(f"Vela block '{shown}' at offset {pos}: payload of {bsize} bytes runs past the blob end "
                       f"({size} bytes)")
        if kind == "vela_bin_stream":
            if pos != 0:
                raise fail(f"vela_bin_stream block at offset {pos} is not the first block")
        elif kind == "cmd_data":
            magic = bytes(mv[payload:payload + 4]) if bsize >= 4 else b""
            if magic not in (b"COP1", b"COP2"):
                raise fail(f"cmd_data block at offset {pos} does not start with COP1 or COP2")
            cmd = (payload, bsize)
        elif kind == "weight_data":
            weight = (payload, bsize)
        elif kind == "scratch_size":
            if bsize < 4:
                raise fail(f"scratch_size block at offset {pos} has {bsize} bytes, needs 4")
            scratch = struct.unpack_from("<I", mv, payload)[0]
        elif kind in ("inputs", "outputs"):
            ios, rec = _parse_ios(mv, payload, bsize, kind)
            if rec is not None:
                rec_sizes.add(rec)
            if kind == "inputs":
                inputs = ios
            else:
                outputs = ios
        pos = nxt
    else:
        raise fail("vela_bin_stream ends without a vela_end_stream block")

    for what, val in (("cmd_data", cmd), ("inputs", inputs), ("outputs", outputs)):
        if val is None:
            raise fail(f"vela_bin_stream has no {what} block")
    if len(rec_sizes) > 1:
        raise fail("Vela inputs and outputs blocks use different VelaIO record sizes (36 and 28)")
    io_record_size = rec_sizes.pop() if rec_sizes else IO_RECORD_SIZE
    return VelaBin(size=size, cmd_data=cmd, weight_data=weight, scratch_size=scratch, inputs=inputs,
                   outputs=outputs, io_record_size=io_record_size, blocks=blocks)
