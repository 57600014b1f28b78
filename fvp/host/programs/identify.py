"""What a program file is, told before anything runs: an ExecuTorch program (``.pte``), a bundled program
(``.bpte``), a TFLite model (``.tflite``), or none of them; and whether it is whole.

``check_program_file(data, label)`` raises ``ConfigError`` (one line, exit status 2: a bad model file) for a
file that is not a program at all (its FlatBuffer file identifier, bytes 4-8, is none of ``ET12``, ``BP08``,
``TFL3``), or one cut short: a FlatBuffer whose root table, or a vector the root table points at, ends past the
end of the file, or a ``.pte`` whose extended header (``eh00``) declares more bytes than the file has. Anything
else about the file is the runner's to judge (its loader's own diagnosis, as the firmware prints it).

Facts from the schemas (ExecuTorch ``program.fbs``, ``extended_header.h``, ``bundled_program_schema.fbs``;
TFLite ``schema.fbs``): the root table's fields that point at vectors, and the element size of each.
"""

from __future__ import annotations

import struct

from ...errors import ConfigError

IDENTIFIERS = {b"ET12": "an ExecuTorch program", b"BP08": "a bundled program", b"TFL3": "a TFLite model"}
#: root-table fields (index) that point at a vector, with the vector's element size in bytes
_VECTORS = {
    b"ET12": {1: 4, 2: 4, 3: 4, 4: 4, 6: 4, 7: 4},  # execution_plan, constant_buffer, backend_delegate_data, ...
    b"BP08": {1: 4, 2: 1},  # method_test_suites, program (the .pte's bytes)
    b"TFL3": {1: 4, 2: 4, 4: 4, 6: 4, 7: 4},  # operator_codes, subgraphs, buffers, metadata, signature_defs
}
_EXTENDED_HEADER = b"eh00"  # at offset 8 of a .pte: length, program_size, segment_base_offset, segment_data_size


def _u32(data: bytes, pos: int) -> int:
    return struct.unpack_from("<I", data, pos)[0]


def _cut(data: bytes, ident: bytes) -> str | None:
    """Why ``data`` ends before what its own structure says it holds, or None."""
    n = len(data)
    if ident == b"ET12" and data[8:12] == _EXTENDED_HEADER and n >= 32:
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
    for field, elem in _VECTORS[ident].items():
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


def check_program_file(data: bytes, label: str) -> str:
    """``data``'s kind (``IDENTIFIERS``'s key), or ``ConfigError``: not a program, or truncated."""
    if len(data) < 8:
        what = "empty" if not data else f"{len(data)} bytes long"
        raise ConfigError(f"{label}: not a program: the file is {what} (a .pte, .bpte or .tflite is a FlatBuffer "
                          f"of at least 8 bytes)")
    ident = data[4:8]
    if ident not in IDENTIFIERS:
        if ident[:2] in (b"ET", b"BP"):  # another version of the format: the runner names the one it takes
            return ident.decode("ascii", "replace")
        raise ConfigError(f"{label}: not an ExecuTorch program (.pte, .bpte) or a TFLite model (.tflite): its "
                          f"FlatBuffer identifier (bytes 4-8) is {ident!r}; a program's is b'ET12', a bundled "
                          f"program's b'BP08', a .tflite's b'TFL3'")
    try:
        why = _cut(data, ident)
    except struct.error:
        why = None
    if why:
        raise ConfigError(f"{label}: {IDENTIFIERS[ident]}, truncated: {why}")
    return ident.decode()
