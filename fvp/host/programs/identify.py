"""Whether a program file is one, and whole, told before anything runs (the kind: ``kind.program_kind``).

``check_program_file(data, label)`` raises ``ConfigError`` (one line, exit status 2: a bad model file) for a
file that is not a program at all (no kind), or one cut short: a FlatBuffer whose root table, or a vector the
root table points at, ends past the end of the file, or a ``.pte`` whose extended header (``eh00``) declares
more bytes than the file has. Anything else about the file is the runner's loader's to judge (``fvp run`` asks
it too: ``firmware_image.check_program``).

Facts from the schemas (ExecuTorch ``program.fbs``, ``extended_header.h``, ``bundled_program_schema.fbs``;
TFLite ``schema.fbs``): the root table's fields that point at vectors, and the element size of each.
"""

from __future__ import annotations

import struct

from ...errors import ConfigError
from ..inputs import read_program
from .kind import ProgramKind, identifier, program_kind

#: root-table fields (index) that point at a vector, with the vector's element size in bytes
_VECTORS = {
    ProgramKind.PTE: {1: 4, 2: 4, 3: 4, 4: 4, 6: 4, 7: 4},  # execution_plan, constant_buffer, delegate data, ...
    ProgramKind.BPTE: {1: 4, 2: 1},  # method_test_suites, program (the .pte's bytes)
    ProgramKind.TFLITE: {1: 4, 2: 4, 4: 4, 6: 4, 7: 4},  # operator_codes, subgraphs, buffers, metadata, signatures
}
_EXTENDED_HEADER = b"eh00"  # at offset 8 of a .pte: length, program_size, segment_base_offset, segment_data_size


def _u32(data: bytes, pos: int) -> int:
    return struct.unpack_from("<I", data, pos)[0]


def _cut(data: bytes, kind: ProgramKind) -> str | None:
    """Why ``data`` ends before what its own structure says it holds, or None."""
    n = len(data)
    if kind is ProgramKind.PTE and data[8:12] == _EXTENDED_HEADER and n >= 32:
        length, program_size, base = _u32(data, 12), *struct.unpack_from("<QQ", data, 16)
        size = struct.unpack_from("<Q", data, 32)[0] if length >= 32 and n >= 40 else 0
        if program_size > n or base + size > n:
            return f"its extended header says {max(program_size, base + size)} bytes, the file has {n}"
    root = _u32(data, 0)
    if root + 4 > n:
        return f"its root table is at offset {root}, past the end of the {n}-byte file"
    vtable = root - struct.unpack_from("<i", data, root)[0]
    if not 0 <= vtable <= n - 4:
        return None  # damaged, not cut: the runner says how
    vt_len = struct.unpack_from("<H", data, vtable)[0]
    for field, elem in _VECTORS[kind].items():
        slot = vtable + 4 + 2 * field
        if slot + 2 > min(n, vtable + vt_len):
            continue
        off = struct.unpack_from("<H", data, slot)[0]
        if not off:
            continue
        at = root + off
        if at + 4 > n:
            return f"its root table's field {field} is at offset {at}, past the end of the {n}-byte file"
        vec = at + _u32(data, at)
        if vec + 4 > n:
            return f"a vector of its root table starts at offset {vec}, past the end of the {n}-byte file"
        end = vec + 4 + _u32(data, vec) * elem
        if end > n:
            return f"a vector of its root table ends at offset {end}, past the end of the {n}-byte file"
    return None


def check_program_file(data: bytes, label: str) -> ProgramKind:
    """``data``'s kind, or ``ConfigError``: not a program, or truncated."""
    if len(data) < 8:
        what = "empty" if not data else f"{len(data)} bytes long"
        raise ConfigError(f"{label}: not a program: the file is {what} (a .pte, .bpte or .tflite is a FlatBuffer "
                          f"of at least 8 bytes)")
    kind = program_kind(data)
    if kind is None:
        raise ConfigError(f"{label}: not an ExecuTorch program (.pte, .bpte) or a TFLite model (.tflite): its "
                          f"FlatBuffer identifier (bytes 4-8) is {identifier(data)!r}; a program's is b'ET12', a "
                          f"bundled program's b'BP08', a .tflite's b'TFL3'")
    try:
        why = _cut(data, kind)
    except struct.error:
        why = None
    if why:
        raise ConfigError(f"{label}: a {kind.value}, truncated: {why}")
    return kind


def read_checked_program(path, spec=None) -> bytes:
    """A program file (bounded: ``inputs.read_program``), refused in one line (exit 2) when it is no program or
    is cut short."""
    data = read_program(path, spec)
    check_program_file(data, str(path))
    return data
