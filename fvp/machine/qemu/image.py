"""An application ELF as the CPU gets it: what to write where before the first instruction, whether it fits both
memory maps, and the instructions the bridge must see executed.

- The bytes: each ``PT_LOAD`` segment's file bytes at its physical (load) address, as the FVP's and QEMU's loaders
  place them. A section the linker put in no segment (ExecuTorch's ``Corstone-300.ld`` at cff6f4dd gives
  ``.data``, ``.sram.data`` and ``.rodata`` none: "allocated section not in segment") would be left out by a
  segment loader, and the start-up code's copy table would copy zeros: such a section is written at the source
  address of its copy-table entry (the CMSIS start-up's ``__copy_table_start__``..``__copy_table_end__``, entries
  of source, destination, length), or at its own address when no entry names it.
- The check (``check``): every loaded range and every allocated section must lie in a memory of QEMU's
  ``mps3-an547`` (``an547``) and of the board; one line per range that does not, naming both maps.
- The sites: the halfword-aligned addresses in executable sections of the semihosting trap (``BKPT 0xAB``), of WFI
  and WFE (the CPU would sleep: simulated time must jump to the next event) and of a branch to itself (``B .``: an
  endless loop, the usual end of ``_exit`` and of a default fault handler). QEMU is to stop before each: on a
  breakpoint, except at a semihosting trap. QEMU's GDB stub empties its whole translation cache at every
  breakpoint stop (a watchpoint stop does not), and a runner makes hundreds of semihosting calls: so each
  ``BKPT 0xAB`` is replaced in the loaded bytes (at its load address, so a start-up copy carries the replacement)
  by a PC-relative load of the same size (``LDR r0, [PC, #0]``, T1 ``0x4800``), and a read watchpoint is put on
  the word it would load: QEMU stops before that load with the PC on the site, and the bridge serves the call. The
  original bytes are kept (``Site.original``; the bridge's memory reads return them). A data word that merely
  looks like a site gets a replacement nobody executes; the watched word may be a literal-pool word, whose loads
  then stop too (the bridge performs them) and code that checksums itself would see the replacement.
- ``has_code``: an executable section holds code (``fvp elf`` output holds none).
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field

import numpy as np

from hwdesc.semihosting import THUMB_BKPT

from ...bounded_read import open_regular
from ...errors import ConfigError
from . import an547
from .elf32 import PT_LOAD, SHF_ALLOC, SHF_EXECINSTR, SHT_NOBITS, Elf32

EM_ARM, ET_EXEC = 40, 2
ELF_LIMIT = 4 << 30  # the largest ELF file taken (it is mapped, not read: only what its headers point at is touched)

# 16-bit encodings (Armv8-M ARM, T1): WFI 0xBF30, WFE 0xBF20, B with imm11 = -2 (to itself) 0xE7FE;
# 32-bit (T2/T4): WFI.W 0xF3AF 0x8003, WFE.W 0xF3AF 0x8002, B.W to itself 0xF7FF 0xBFFE
_SITES16 = {THUMB_BKPT: "semihosting", 0xBF30: "wfi", 0xBF20: "wfe", 0xE7FE: "loop"}
_SITES32 = {(0xF3AF, 0x8003): "wfi", (0xF3AF, 0x8002): "wfe", (0xF7FF, 0xBFFE): "loop"}
_LITERAL16, _LITERAL32 = b"\x00\x48", b"\xdf\xf8\x00\x00"  # LDR r0, [PC, #0] (T1), LDR.W r0, [PC, #0] (T2)


@dataclass(frozen=True)
class Site:
    kind: str  # semihosting, wfi, wfe, loop
    size: int  # bytes of the instruction
    original: bytes
    word: int | None  # the word the replacing load reads (its watchpoint); None: not replaced (a breakpoint)


@dataclass
class LoadImage:
    path: str
    entry: int
    chunks: list = field(default_factory=list)  # (address, bytearray, what)
    sections: list = field(default_factory=list)  # (name, address, size) of every allocated section
    sites: dict = field(default_factory=dict)  # address -> Site
    has_code: bool = False
    label: str = ""  # how a problem names the file: "-a app.elf" (the drop-in), "app.elf" (fvp run)


def read_image(path: str, label: str | None = None) -> LoadImage:
    """The load image of the ELF at ``path``; ``ConfigError`` (one line, starting with ``label``: default ``-a
    PATH``) for a file that is not one for this CPU."""
    label = label or f"-a {path}"
    with open_regular(path, ELF_LIMIT, label=label, kind="application file",
                      why="not a plausible application") as f:
        try:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)  # read where the headers point, no more
        except (ValueError, OSError):  # an empty file
            data = b""
    try:
        return _parse(data, path, label)
    finally:
        if isinstance(data, mmap.mmap):
            data.close()


def _parse(data, path: str, label: str) -> LoadImage:
    if data[:4] != b"\x7fELF":
        raise ConfigError(f"{label}: not an ELF file")
    if len(data) < 20 or data[4] != 1 or data[5] != 1 or struct.unpack_from("<H", data, 18)[0] != EM_ARM:
        cls, order = (data[4], data[5]) if len(data) > 5 else (0, 0)
        machine = struct.unpack_from("<H" if order != 2 else ">H", data, 18)[0] if len(data) >= 20 else -1
        raise ConfigError(f"{label}: not a 32-bit little-endian Arm ELF (class {cls}, data encoding {order}, "
                          f"machine {machine}): the Cortex-M55 cannot run it")
    try:
        elf = Elf32(data)
        if elf.type != ET_EXEC:
            raise ValueError(f"ELF type {elf.type} is not an executable (ET_EXEC)")
        image = _image(elf, path)
    except (ValueError, struct.error) as e:
        raise ConfigError(f"{label}: malformed ELF file: {e}") from None
    image.label = label
    return image


def _image(elf: Elf32, path: str) -> LoadImage:
    img = LoadImage(path=path, entry=elf.entry)
    segments = [p for p in elf.segments if p.type == PT_LOAD]
    sections = [s for s in elf.sections if s.flags & SHF_ALLOC and s.size]
    lma = {}  # section -> its load address
    for i, seg in enumerate(segments):
        if seg.filesz:
            names = [s.name for s in sections if s.type != SHT_NOBITS and elf.in_segment(s, seg)]
            img.chunks.append((seg.paddr, bytearray(elf.segment_data(seg)),
                               f"segment {i} ({', '.join(names) or 'no section'})"))
        for s in sections:
            if s not in lma and elf.in_segment(s, seg):
                lma[s] = seg.paddr + (s.addr - seg.vaddr)
    copies = _copy_table(elf, sections)
    for s in sections:
        img.sections.append((s.name, s.addr, s.size))
        if s.type == SHT_NOBITS or s in lma:
            continue
        src = copies.get(s.addr)
        lma[s] = s.addr if src is None else src
        img.chunks.append((lma[s], bytearray(elf.section_data(s)), f"section {s.name} (in no segment"
                           + ("; at its copy-table source)" if src is not None else ")")))
    for s in sections:
        if s.flags & SHF_EXECINSTR and s.type != SHT_NOBITS:
            data = elf.section_data(s)
            img.has_code = img.has_code or any(data)
            for addr, kind, size in _scan(data, s.addr):
                _patch(img, addr, lma.get(s, s.addr) + (addr - s.addr), kind, size, data[addr - s.addr:][:size])
    return img


def _copy_table(elf: Elf32, sections) -> dict:
    """destination -> source of the CMSIS start-up's copy table, if the ELF has one."""
    syms = elf.symbols(("__copy_table_start__", "__copy_table_end__"))
    start, end = syms.get("__copy_table_start__"), syms.get("__copy_table_end__")
    if start is None or end is None or not 0 < end - start <= 12 * 4096:
        return {}
    for s in sections:
        if s.type != SHT_NOBITS and s.addr <= start and end <= s.addr + s.size:
            raw = elf.section_data(s)[start - s.addr:end - s.addr]
            return {dst: src for src, dst, _ in struct.iter_unpack("<III", raw[:len(raw) // 12 * 12])}
    return {}


def _scan(data: bytes, base: int):
    n = len(data) // 2
    if base & 1 or not n:
        return []
    hw = np.frombuffer(data[:2 * n], dtype="<u2")
    found = {}
    for code, kind in _SITES16.items():
        for i in np.flatnonzero(hw == code):
            found.setdefault(base + 2 * int(i), (kind, 2))
    for (a, b), kind in _SITES32.items():
        for i in np.flatnonzero((hw[:-1] == a) & (hw[1:] == b)):
            found[base + 2 * int(i)] = (kind, 4)
    return [(addr, kind, size) for addr, (kind, size) in sorted(found.items())]


def _patch(img: LoadImage, addr: int, load_addr: int, kind: str, size: int, original: bytes) -> None:
    if kind != "semihosting":
        img.sites[addr] = Site(kind, size, bytes(original), None)
        return
    for base, chunk, _ in img.chunks:
        off = load_addr - base
        if 0 <= off and off + size <= len(chunk):
            chunk[off:off + size] = _LITERAL16 if size == 2 else _LITERAL32
            img.sites[addr] = Site(kind, size, bytes(original), (addr + 4) & ~3)
            return


def check(image: LoadImage, board_memory) -> list[str]:
    """One line per loaded range or allocated section outside QEMU's mps3-an547 memory or the board's."""
    problems = []
    board = _contiguous(board_memory.values())
    ranges = [(what, addr, len(data)) for addr, data, what in image.chunks]
    ranges += [(f"section {name}", addr, size) for name, addr, size in image.sections]
    seen = set()
    for what, addr, size in ranges:
        if (addr, size) in seen:
            continue
        seen.add((addr, size))
        in_qemu = an547.memory_at(addr, size) is not None
        in_board = any(m.holds(addr, size) is not None for m in board)
        if in_qemu and in_board:
            continue
        span = f"0x{addr:08x}..0x{addr + size - 1:08x}"
        if not in_qemu and not in_board:
            where = f"neither in QEMU's {an547.MACHINE} memory ({an547.describe()}) nor in the board's"
        elif not in_qemu:
            where = f"in the board's memory but not in QEMU's {an547.MACHINE} ({an547.describe()})"
        else:
            where = (f"in QEMU's {an547.MACHINE} memory but not in the board's ("
                     + ", ".join(f"{m.name} 0x{m.base:08x}+{an547.size_text(m.size)}" for m in board) + ")")
        problems.append(f"{image.label or '-a ' + image.path}: {what} at {span} is {where}")
    return problems


def _contiguous(regions) -> list:
    """The board's memories, those that follow each other in both aliases joined (ISRAM0 + ISRAM1)."""
    out = []
    for m in sorted(regions, key=lambda r: r.base):
        if out:
            p = out[-1]
            secure_follows = (p.secure_base is None and m.secure_base is None) or (
                p.secure_base is not None and m.secure_base is not None and p.secure_base + p.size == m.secure_base)
            if p.base + p.size == m.base and secure_follows:
                out[-1] = an547.Memory(f"{p.name}+{m.name}", p.base, p.size + m.size, p.secure_base)
                continue
        out.append(an547.Memory(m.name, m.base, m.size, m.secure_base))
    return out
