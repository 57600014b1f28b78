"""A small, bounds-checked FlatBuffers table reader.

ExecuTorch programs (``.pte``) and bundled programs (``.bpte``) are FlatBuffers. The C++ runtime trusts the
buffer (it runs the FlatBuffers verifier only on request); this reader checks every offset it follows so that a
truncated or corrupt file gives ``RuntimeFailure(Error.InvalidProgram, "<what is wrong, and where>")`` and never an
``IndexError``, ``struct.error``, a huge allocation or a hang.

What is checked, for every access:

* a table: its ``soffset`` and vtable lie inside the buffer, the vtable size is even and >= 4, and every field
  it reads lies inside the buffer (as in the FlatBuffers verifier, the vtable's object size is not relied on);
* an offset field (table, vector, string): the target lies inside the buffer (FlatBuffers offsets are unsigned,
  so they only point forward; together with the fixed schemas walked here this bounds the nesting depth);
* a vector: its length word and all ``length * element_size`` bytes lie inside the buffer;
* a string: its bytes and the terminating NUL lie inside the buffer, and the bytes are UTF-8;
* the total work: a buffer whose sub-objects are referenced over and over (so that decoding it would take far
  more steps than it has bytes) is rejected once a budget of about two elements per byte is spent.

Only what the ExecuTorch schemas need is implemented: tables, scalars, strings, vectors of scalars, vectors
of tables, and unions. (No structs appear in ``program.fbs`` or ``bundled_program_schema.fbs``.)
Field ids are declaration order; a union field ``X`` uses two ids, ``X_type`` (ubyte) then ``X``.
"""

from __future__ import annotations

import struct

from firmware.executorch.error import Error, RuntimeFailure

_U8 = struct.Struct("<B")
_U16 = struct.Struct("<H")
_I32 = struct.Struct("<i")
_U32 = struct.Struct("<I")

# struct format code -> element size
_SCALAR_SIZES = {"b": 1, "B": 1, "?": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "Q": 8, "f": 4, "d": 8}


def fail(message: str, code: Error = Error.InvalidProgram) -> RuntimeFailure:
    """The exception a corrupt buffer raises (``raise fail(...)``); the message is kept to one line."""
    return RuntimeFailure(code, " ".join(str(message).split()))


def required(value, message: str):
    """``value`` (a field the reader needs), or ``fail(message)`` raised when it is absent (None)."""
    if value is None:
        raise fail(message)
    return value


def as_memoryview(data) -> memoryview:
    """A flat unsigned-byte view of ``data`` (bytes, bytearray, memoryview, numpy uint8 array); never a copy."""
    try:
        mv = memoryview(data)
    except TypeError as exc:
        raise TypeError(f"expected a bytes-like buffer, got {type(data).__name__}") from exc
    if not mv.c_contiguous:
        raise TypeError("buffer must be C-contiguous")
    if mv.ndim != 1 or mv.format != "B":
        mv = mv.cast("B")
    return mv


class FlatBuffer:
    """A flatbuffer image: ``data[0:size]`` of ``mv``; ``label`` names it in error messages."""

    __slots__ = ("mv", "size", "label", "budget")

    def __init__(self, data, label: str = "flatbuffer"):
        self.mv = as_memoryview(data)
        self.size = len(self.mv)
        self.label = label
        # Work budget: every element decoded costs one unit. Without shared sub-objects a buffer cannot hold
        # more elements than bytes, so a file that makes a reader decode more than this is built to make it
        # spin (many references to the same big vector): stop it instead of hanging.
        self.budget = 2 * self.size + 4096

    def charge(self, n: int, what: str) -> None:
        self.budget -= n + 1
        if self.budget < 0:
            raise fail(f"{self.label}: {what}: too many references to shared data (decoding more elements "
                       f"than the {self.size}-byte buffer can hold)")

    # --- raw reads ---------------------------------------------------------------------------------------
    def check_range(self, pos: int, nbytes: int, what: str) -> None:
        if pos < 0 or nbytes < 0 or pos + nbytes > self.size:
            raise fail(f"{self.label}: {what} at offset {pos} ({nbytes} bytes) is outside the buffer of "
                       f"{self.size} bytes")

    def u8(self, pos: int, what: str) -> int:
        self.check_range(pos, 1, what)
        return self.mv[pos]

    def u16(self, pos: int, what: str) -> int:
        self.check_range(pos, 2, what)
        return _U16.unpack_from(self.mv, pos)[0]

    def i32(self, pos: int, what: str) -> int:
        self.check_range(pos, 4, what)
        return _I32.unpack_from(self.mv, pos)[0]

    def u32(self, pos: int, what: str) -> int:
        self.check_range(pos, 4, what)
        return _U32.unpack_from(self.mv, pos)[0]

    def identifier(self) -> bytes:
        """The 4-byte file identifier at offset 4 (``b""`` if the buffer is shorter than 8 bytes)."""
        return bytes(self.mv[4:8]) if self.size >= 8 else b""

    def root(self, name: str) -> "Table":
        """The root table (uoffset at byte 0)."""
        if self.size < 8:
            raise fail(f"{self.label}: buffer of {self.size} bytes is too small for a flatbuffer header")
        off = self.u32(0, "root offset")
        if off < 8 or off >= self.size:
            raise fail(f"{self.label}: root offset {off} out of range for a buffer of {self.size} bytes")
        return Table(self, off, name)

    def follow(self, pos: int, what: str) -> int:
        """The target of the uoffset stored at ``pos``."""
        off = self.u32(pos, what)
        if off == 0:
            raise fail(f"{self.label}: {what} at offset {pos} is a zero offset")
        target = pos + off
        if target >= self.size:
            raise fail(f"{self.label}: {what} at offset {pos} points to {target}, past the buffer end {self.size}")
        return target

    def vector_at(self, pos: int, elem_size: int, what: str) -> tuple[int, int]:
        """(start of the elements, element count) of the vector whose length word is at ``pos``."""
        n = self.u32(pos, f"{what} length")
        start = pos + 4
        if n * elem_size > self.size - start:
            raise fail(f"{self.label}: {what} at offset {pos} claims {n} elements of {elem_size} bytes, "
                       f"past the buffer end {self.size}")
        return start, n

    def string_at(self, pos: int, what: str) -> str:
        start, n = self.vector_at(pos, 1, what)
        if start + n >= self.size:
            raise fail(f"{self.label}: {what} at offset {pos} has no terminating NUL inside the buffer")
        if self.mv[start + n] != 0:
            raise fail(f"{self.label}: {what} at offset {pos} is not NUL-terminated")
        self.charge(n, what)
        raw = bytes(self.mv[start:start + n])
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise fail(f"{self.label}: {what} at offset {pos} is not valid UTF-8: {raw[:32]!r}") from None


class Table:
    """One table: ``pos`` is where its ``soffset`` to the vtable is; ``name`` is its schema type (for messages)."""

    __slots__ = ("fb", "pos", "vt", "vt_size", "obj_size", "name")

    def __init__(self, fb: FlatBuffer, pos: int, name: str):
        self.fb = fb
        self.pos = pos
        self.name = name
        fb.charge(0, f"{name} table")
        soff = fb.i32(pos, f"{name} table")
        vt = pos - soff
        if vt < 0 or vt + 4 > fb.size:
            raise fail(f"{fb.label}: {name} table at offset {pos} has its vtable at {vt}, outside the buffer")
        vt_size = _U16.unpack_from(fb.mv, vt)[0]
        obj_size = _U16.unpack_from(fb.mv, vt + 2)[0]
        if vt_size < 4 or vt_size & 1 or vt + vt_size > fb.size:
            raise fail(f"{fb.label}: {name} table at offset {pos}: bad vtable size {vt_size} at {vt}")
        self.vt = vt
        self.vt_size = vt_size
        self.obj_size = obj_size

    def __repr__(self) -> str:
        return f"<{self.name} table @{self.pos}>"

    def _field(self, fid: int, size: int, fname: str) -> int:
        """Absolute position of field ``fid`` (``size`` bytes), or 0 when absent."""
        slot = 4 + 2 * fid
        if slot + 2 > self.vt_size:
            return 0
        voff = _U16.unpack_from(self.fb.mv, self.vt + slot)[0]
        if voff == 0:
            return 0
        # (The object size in the vtable is not checked against: writers do not always count alignment
        # padding in it, and the FlatBuffers verifier does not use it either.)
        p = self.pos + voff
        if voff < 4 or p + size > self.fb.size:
            raise fail(f"{self.fb.label}: {self.name}.{fname} (table at offset {self.pos}, field offset {voff}) "
                       f"lies outside the buffer of {self.fb.size} bytes")
        return p

    def has(self, fid: int) -> bool:
        slot = 4 + 2 * fid
        return slot + 2 <= self.vt_size and _U16.unpack_from(self.fb.mv, self.vt + slot)[0] != 0

    # --- scalars -----------------------------------------------------------------------------------------
    def scalar(self, fid: int, fmt: str, default=0, fname: str = "?"):
        """Scalar field with struct code ``fmt`` (``b B ? h H i I q Q f d``); ``default`` when absent."""
        p = self._field(fid, _SCALAR_SIZES[fmt], fname)
        if not p:
            return default
        return struct.unpack_from("<" + fmt, self.fb.mv, p)[0]

    def boolean(self, fid: int, default: bool = False, fname: str = "?") -> bool:
        p = self._field(fid, 1, fname)
        return default if not p else self.fb.mv[p] != 0

    # --- offset fields -----------------------------------------------------------------------------------
    def _target(self, fid: int, fname: str) -> int:
        p = self._field(fid, 4, fname)
        if not p:
            return 0
        return self.fb.follow(p, f"{self.name}.{fname}")

    def table(self, fid: int, name: str, fname: str = "?") -> "Table | None":
        t = self._target(fid, fname)
        return Table(self.fb, t, name) if t else None

    def string(self, fid: int, fname: str = "?") -> str | None:
        t = self._target(fid, fname)
        return self.fb.string_at(t, f"{self.name}.{fname}") if t else None

    def vector(self, fid: int, elem_size: int, fname: str = "?") -> tuple[int, int] | None:
        """(start, count) of a vector field, or None when absent."""
        t = self._target(fid, fname)
        return self.fb.vector_at(t, elem_size, f"{self.name}.{fname}") if t else None

    def vector_len(self, fid: int, elem_size: int, fname: str = "?") -> int | None:
        v = self.vector(fid, elem_size, fname)
        return None if v is None else v[1]

    def scalars(self, fid: int, fmt: str, fname: str = "?") -> tuple | None:
        """A vector of scalars as a tuple (None when absent)."""
        v = self.vector(fid, _SCALAR_SIZES[fmt], fname)
        if v is None:
            return None
        start, n = v
        self.fb.charge(n, f"{self.name}.{fname}")
        if fmt == "?":
            return tuple(b != 0 for b in self.fb.mv[start:start + n])
        return struct.unpack_from(f"<{n}{fmt}", self.fb.mv, start)

    def bytes_range(self, fid: int, fname: str = "?") -> tuple[int, int] | None:
        """(offset, size) of a ``[ubyte]`` vector's bytes inside the buffer (None when absent)."""
        return self.vector(fid, 1, fname)

    def tables(self, fid: int, name: str, fname: str = "?") -> list["Table"] | None:
        """A vector of tables (None when absent). Null elements are an error."""
        v = self.vector(fid, 4, fname)
        if v is None:
            return None
        start, n = v
        what = f"{self.name}.{fname}"
        self.fb.charge(n, what)
        return [Table(self.fb, self.fb.follow(start + 4 * i, f"{what}[{i}]"), name) for i in range(n)]

    def union(self, type_fid: int, fname: str = "?") -> tuple[int, int]:
        """(type tag, position of the value table or 0) of the union whose ``_type`` field is ``type_fid``."""
        tag = self.scalar(type_fid, "B", 0, fname + "_type")
        return tag, self._target(type_fid + 1, fname)
