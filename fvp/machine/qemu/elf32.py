"""A minimal reader of 32-bit little-endian ELF executables: the headers, the segments, the sections, symbols.

What the CPU engine needs of an application ELF (System V ABI, "ELF-32 Object File Format", version 1.2: the
ELF header, program headers and section headers, ``Elf32_Sym``), read with ``struct`` and numpy from a bounded
file: fast on ELFs with tens of thousands of symbols, and without the optional pyelftools. Bad offsets and sizes
are ``ValueError`` with what is wrong.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

PT_LOAD = 1
SHT_SYMTAB, SHT_NOBITS = 2, 8
SHF_ALLOC, SHF_EXECINSTR = 0x2, 0x4


@dataclass(frozen=True)
class Segment:
    type: int
    offset: int
    vaddr: int
    paddr: int
    filesz: int
    memsz: int


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int


class Elf32:
    def __init__(self, data: bytes):
        self.data = data
        if len(data) < 52:
            raise ValueError("shorter than an ELF header")
        (self.type, self.machine, _, self.entry, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum,
         shstrndx) = struct.unpack_from("<HHIIIIIHHHHHH", data, 16)
        self.segments = [Segment(*struct.unpack_from("<6I", data, off))
                         for off in self._table(phoff, phentsize, phnum, 32, "program header")]
        raw = [struct.unpack_from("<IIIIIIIIII", data, off) for off in self._table(shoff, shentsize, shnum, 40,
                                                                                     "section header")]
        names = self._bytes(raw[shstrndx][4], raw[shstrndx][5]) if 0 < shstrndx < len(raw) else b""
        self.sections = [Section(_cstr(names, r[0]), r[1], r[2], r[3], r[4], r[5], r[6]) for r in raw]

    def _table(self, offset: int, entsize: int, count: int, want: int, what: str) -> range:
        if not count:
            return range(0)
        if entsize < want or offset + entsize * count > len(self.data):
            raise ValueError(f"{what} table at {offset} ({count} x {entsize} bytes) is outside the file")
        return range(offset, offset + entsize * count, entsize)

    def _bytes(self, offset: int, size: int) -> bytes:
        if offset + size > len(self.data):
            raise ValueError(f"{size} bytes at file offset {offset} are outside the file ({len(self.data)} bytes)")
        return self.data[offset:offset + size]

    def section_data(self, s: Section) -> bytes:
        return b"" if s.type == SHT_NOBITS else self._bytes(s.offset, s.size)

    def segment_data(self, p: Segment) -> bytes:
        return self._bytes(p.offset, p.filesz)

    def bytes_at(self, address: int, size: int) -> bytes | None:
        """The file bytes of ``[address, address + size)`` in an allocated section, or None."""
        for s in self.sections:
            if s.flags & SHF_ALLOC and s.type != SHT_NOBITS and s.addr <= address and address + size <= s.addr + s.size:
                return self._bytes(s.offset + address - s.addr, size)
        return None

    def in_segment(self, s: Section, p: Segment) -> bool:
        """Whether section ``s`` is part of segment ``p`` (by address; by file offset too when it has bytes)."""
        if not (p.vaddr <= s.addr and s.addr + s.size <= p.vaddr + p.memsz):
            return False
        return s.type == SHT_NOBITS or (p.offset <= s.offset and s.offset + s.size <= p.offset + p.filesz)

    def symbols(self, names, sizes: bool = False) -> dict:
        """The values (with ``sizes``: ``(value, size)``) of the named symbols the symbol table has."""
        want = {n.encode() for n in names}
        out = {}
        for tab in (s for s in self.sections if s.type == SHT_SYMTAB):
            if not 0 <= tab.link < len(self.sections):
                continue
            strtab = self.section_data(self.sections[tab.link])
            offsets = {}
            for name in want:
                i = strtab.find(b"\0" + name + b"\0")
                if i >= 0:
                    offsets[i + 1] = name.decode()
            if not offsets:
                continue
            raw = self.section_data(tab)
            syms = np.frombuffer(raw[:len(raw) // 16 * 16], dtype=np.dtype([("name", "<u4"), ("value", "<u4"),
                                                                             ("size", "<u4"), ("info", "u1"),
                                                                             ("other", "u1"), ("shndx", "<u2")]))
            for off, name in offsets.items():
                hit = np.flatnonzero(syms["name"] == off)
                if hit.size:
                    value = int(syms["value"][hit[0]])
                    out[name] = (value, int(syms["size"][hit[0]])) if sizes else value
        return out


def _cstr(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    return table[offset:end if end >= 0 else len(table)].decode("utf-8", "replace")
