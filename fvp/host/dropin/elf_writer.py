"""``fvp elf MODEL -o runner.elf``: an ELF laid out like ExecuTorch's ``arm_executor_runner``, for the drop-in.

People without Arm's cross toolchain have no runner ELF to give ``FVP_Corstone_SSE-300_Ethos-U55 -a``. This
writes one with the standard library (``struct``): a little-endian ELF32 executable for EM_ARM with

- the program in section ``network_model_sec`` (PROGBITS, one PT_LOAD segment) with the symbol ``model_pte``,
  as ``pte_to_header.py`` and ``Corstone-300.ld`` (``Corstone-320.ld`` for an Ethos-U85 board) place it;
- the runner's pools as NOBITS sections (``.bss.method_allocator_sec``, ``.bss.tensor_arena``,
  ``.bss.ethosu_scratch``) with the symbols ``method_allocation_pool``, ``temp_allocation_pool`` and
  ``dedicated_sram``, at the addresses and sizes the board's linker layout gives them (``layout_firmware``).

A ``.tflite`` gets the layout of an ML Embedded Evaluation Kit application instead (the TFLite Micro board's
placement): the model in section ``nn_model`` (symbol ``nn_model``), the tensor arena ``activationBuf`` in
``.bss.NoInit.activation_buf_sram`` (``_dram`` for an arena in DDR) and the NPU cache ``cache_arena`` in
``.bss.NoInit.ethos_u_cache`` when the board has one.

The names are those ``elf_image`` reads. The board is resolved as ``fvp run`` resolves it (the program's
compile specs unless ``-c``/``--target``/``-C`` say otherwise), so the pools are the ones the runner's build
uses for the program's memory mode. The ELF holds no Cortex-M55 code: Arm's FVP cannot run it; this
simulator's drop-in can (the Python runner stands in for the code).
"""

from __future__ import annotations

import os
import struct

from ...boards import layout_firmware
from ...errors import ConfigError
from ...safe_write import write_file
from .elf_image import (_POOL_SECTIONS, _POOL_SYMBOLS, MLEK_ARENA_SECTIONS, MLEK_ARENA_SYMBOL, MLEK_CACHE_SECTION,
                        MLEK_CACHE_SYMBOL, MLEK_MODEL_SECTION, MLEK_MODEL_SYMBOL, MODEL_SECTION, MODEL_SYMBOL)

EM_ARM = 40
_EF_ARM_EABI_VER5 = 0x0500_0000
_EF_ARM_ABI_FLOAT_HARD = 0x400
_SHT_PROGBITS, _SHT_SYMTAB, _SHT_STRTAB, _SHT_NOBITS = 1, 2, 3, 8
_SHF_WRITE, _SHF_ALLOC = 0x1, 0x2
_PT_LOAD, _PF_R = 1, 0x4
_STB_GLOBAL_OBJECT = (1 << 4) | 1
_EHDR, _PHDR, _SHDR, _SYM = 52, 32, 40, 16

# pool name (board) -> (section, symbol), from the reader's tables
POOL_LAYOUT = {pool: (sec, next(sym for sym, p in _POOL_SYMBOLS.items() if p == pool))
               for sec, pool in _POOL_SECTIONS.items()}


def mlek_pool_layout(spec) -> dict:
    """The pools of an MLEK application ELF for the TFLite Micro board ``spec``: the arena in
    ``.bss.NoInit.activation_buf_sram`` (``..._dram`` when the board puts it in DDR), symbol ``activationBuf``;
    the NPU cache ``cache_arena`` in ``.bss.NoInit.ethos_u_cache``."""
    arena = spec.firmware.pools.get("arena")
    where = "DDR" if arena is not None and arena.region == "DDR" else "SRAM"
    return {"arena": (MLEK_ARENA_SECTIONS[where], MLEK_ARENA_SYMBOL),
            "fast_scratch": (MLEK_CACHE_SECTION, MLEK_CACHE_SYMBOL)}


def runner_elf(program: bytes, model_address: int, pools: dict, *, model_section: str = MODEL_SECTION,
               model_symbol: str = MODEL_SYMBOL, pool_layout: dict | None = None) -> bytes:
    """The ELF's bytes: ``program`` at ``model_address`` in ``model_section`` (symbol ``model_symbol``); ``pools``
    maps a pool name (``method``, ``temp``, ``fast_scratch``) to ``(address, size)``, each written as the
    ``(section, symbol)`` of ``pool_layout`` (default: the ExecuTorch runner's, ``POOL_LAYOUT``)."""
    layout = POOL_LAYOUT if pool_layout is None else pool_layout
    # (name, type, flags, addr, data or None, size, align)
    sections = [("", 0, 0, 0, None, 0, 0), (model_section, _SHT_PROGBITS, _SHF_ALLOC, model_address, program,
                                             len(program), 16)]
    symbols = [(model_symbol, model_address, len(program), 1)]
    for pool, (addr, size) in pools.items():
        if pool not in layout or not size:
            continue
        sec, sym = layout[pool]
        symbols.append((sym, addr, size, len(sections)))
        sections.append((sec, _SHT_NOBITS, _SHF_ALLOC | _SHF_WRITE, addr, None, size, 16))
    strtab = bytearray(b"\0")
    symtab = bytearray(_SYM)  # the null symbol
    for name, addr, size, shndx in symbols:
        symtab += struct.pack("<IIIBBH", len(strtab), addr, size, _STB_GLOBAL_OBJECT, 0, shndx)
        strtab += name.encode() + b"\0"
    symtab_index = len(sections)
    sections.append((".symtab", _SHT_SYMTAB, 0, 0, bytes(symtab), len(symtab), 4))
    sections.append((".strtab", _SHT_STRTAB, 0, 0, bytes(strtab), len(strtab), 1))
    shstrtab = bytearray(b"\0")
    name_offsets = []
    for s in sections:
        name_offsets.append(len(shstrtab) if s[0] else 0)
        if s[0]:
            shstrtab += s[0].encode() + b"\0"
    name_offsets.append(len(shstrtab))
    shstrtab += b".shstrtab\0"
    sections.append((".shstrtab", _SHT_STRTAB, 0, 0, bytes(shstrtab), len(shstrtab), 1))

    body = bytearray()
    pos = _EHDR + _PHDR  # one program header, right after the ELF header
    offsets = []
    for _, _, _, _, data, _, align in sections:
        if data is None:
            offsets.append(0)
            continue
        pad = (-pos) % max(align, 1)
        body += b"\0" * pad
        pos += pad
        offsets.append(pos)
        body += data
        pos += len(data)
    pad = (-pos) % 4
    body += b"\0" * pad
    shoff = pos + pad

    ident = b"\x7fELF" + bytes([1, 1, 1, 0]) + b"\0" * 8  # ELFCLASS32, little-endian, version 1, SYSV ABI
    header = ident + struct.pack("<HHIIIIIHHHHHH", 2, EM_ARM, 1, 0, _EHDR, shoff,
                                 _EF_ARM_EABI_VER5 | _EF_ARM_ABI_FLOAT_HARD, _EHDR, _PHDR, 1, _SHDR,
                                 len(sections), len(sections) - 1)
    phdr = struct.pack("<IIIIIIII", _PT_LOAD, offsets[1], model_address, model_address, len(program),
                       len(program), _PF_R, 16)
    shdrs = bytearray()
    for i, (name, typ, flags, addr, data, size, align) in enumerate(sections):
        link = symtab_index + 1 if typ == _SHT_SYMTAB else 0
        info = 1 if typ == _SHT_SYMTAB else 0  # index of the first non-local symbol
        entsize = _SYM if typ == _SHT_SYMTAB else 0
        shdrs += struct.pack("<IIIIIIIIII", name_offsets[i], typ, flags, addr, offsets[i], size, link, info,
                             align, entsize)
    return bytes(header + phdr + body + shdrs)


def write_runner_elf(program: bytes, model_name: str, out_path: str, *, board=None, target=None,
                     overrides=(), note=print) -> int:
    """Resolve the board for ``program`` (as ``fvp run`` does), lay it out and write the ELF to ``out_path``."""
    from ..programs.kind import ProgramKind, identifier, program_kind
    from ..programs.program_board import resolve

    kind = program_kind(program)
    tflite = kind is ProgramKind.TFLITE
    if kind is None:
        raise ConfigError(f"{model_name}: neither an ExecuTorch program nor a .tflite (identifier "
                          f"{identifier(program)!r}, expected ET12, BP08 or TFL3)")
    res = resolve(program, board=board, target=target, overrides=overrides, model_name=model_name)
    for line in res.notes:
        note(f"fvp: note: {line}")
    spec = res.load()
    placed = layout_firmware(spec, len(program))
    model_address, _ = placed[spec.firmware.model.name]
    layout = mlek_pool_layout(spec) if tflite else POOL_LAYOUT
    pools = {name: placed[name] for name in layout if name in placed}
    names = {"model_section": MLEK_MODEL_SECTION, "model_symbol": MLEK_MODEL_SYMBOL} if tflite else {}
    result = write_file(out_path, runner_elf(program, model_address, pools, pool_layout=layout, **names))
    if not result.ok:
        raise result.error(f"-o {out_path}: cannot write")
    variant = spec.npu.variant if spec.npu is not None else "no NPU"
    from ..programs.et_build import fvp_binary

    binary = fvp_binary(variant)
    macs = variant.rsplit("-", 1)[-1] if spec.npu is not None else None
    macs_param = "mps4_board.subsystem.ethosu.num_macs" if spec.platform == "corstone-320" else "ethosu.num_macs"
    pool_text = ", ".join(f"{n} {s} bytes at 0x{a:08x}" for n, (a, s) in pools.items() if s)
    section = names.get("model_section", MODEL_SECTION)
    note(f"{os.path.basename(out_path)}: {model_name} ({len(program)} bytes) in {section} at "
         f"0x{model_address:08x} for {variant}; pools: {pool_text or 'none'}")
    note(f"run it with: {binary}" + (f" -C {macs_param}={macs}" if macs else "") + f" -a {out_path}")
    return 0
