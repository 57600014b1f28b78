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

Without a program it is a semihosting runner (``setup_testing.sh``'s ``--pte=semihosting`` build, the ELF
ExecuTorch's test harness runs): no ``network_model_sec``, the pools of the board's memory mode (``-C
npu.memory_mode`` places them as run.sh's build does) and the ``input_file_allocation_pool`` the program and its
inputs are read into from the host (``-C cpu0.semihosting-cmd_line='executor_runner -m program.pte ...'``).

Every ``-C`` is written into the ELF or refused (``check_recorded``), never dropped: the placements and pools are
the ELF's layout; ``firmware.options.etdump`` / ``etdump_debug`` become the strings a runner built with the event
tracer (and ``ET_DUMP_INTERMEDIATE_OUTPUTS`` / ``ET_DUMP_OUTPUTS``) has in its read-only data, which is how the
drop-in recognises such a build; the NPU (``npu.variant``, ``ethosu.num_macs``) is the drop-in's command line,
which the closing line prints. Anything else (the allocator, a runtime profile, a memory mode or system config
other than the program's) is a property of the run, not of the ELF: give it to the drop-in that runs it.
"""

from __future__ import annotations

import os
import struct

from ...boards import layout_firmware
from ...errors import ConfigError
from ...safe_write import write_file
from .elf_image import (_POOL_SECTIONS, _POOL_SYMBOLS, ETDUMP_DEBUG_MARKS, ETDUMP_MARK, MLEK_ARENA_SECTIONS,
                        MLEK_ARENA_SYMBOL, MLEK_CACHE_SECTION, MLEK_CACHE_SYMBOL, MLEK_MODEL_SECTION, MLEK_MODEL_SYMBOL,
                        MODEL_SECTION, MODEL_SYMBOL)

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


def runner_elf(program: bytes | None, model_address: int, pools: dict, *, model_section: str = MODEL_SECTION,
               model_symbol: str = MODEL_SYMBOL, pool_layout: dict | None = None, rodata: bytes = b"",
               rodata_address: int = 0) -> bytes:
    """The ELF's bytes: ``program`` at ``model_address`` in ``model_section`` (symbol ``model_symbol``; ``None``: a
    runner without a program); ``pools`` maps a pool name (``method``, ``temp``, ``fast_scratch``, ``input_file``)
    to ``(address, size)``, each written as the ``(section, symbol)`` of ``pool_layout`` (default: the ExecuTorch
    runner's, ``POOL_LAYOUT``); ``rodata``: strings of the runner's read-only data (``.rodata`` at
    ``rodata_address``)."""
    layout = POOL_LAYOUT if pool_layout is None else pool_layout
    # (name, type, flags, addr, data or None, size, align)
    sections = [("", 0, 0, 0, None, 0, 0)]
    symbols = []
    if program is not None:
        sections.append((model_section, _SHT_PROGBITS, _SHF_ALLOC, model_address, program, len(program), 16))
        symbols.append((model_symbol, model_address, len(program), 1))
    if rodata:
        sections.append((".rodata", _SHT_PROGBITS, _SHF_ALLOC, rodata_address, rodata, len(rodata), 4))
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
    n_loaded = sum(1 for s in sections if s[1] == _SHT_PROGBITS and s[2] & _SHF_ALLOC)
    pos = _EHDR + _PHDR * n_loaded  # a program header per loaded section, right after the ELF header
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
    loaded = [(offsets[i], s[3], s[5]) for i, s in enumerate(sections) if s[1] == _SHT_PROGBITS and s[2] & _SHF_ALLOC]
    header = ident + struct.pack("<HHIIIIIHHHHHH", 2, EM_ARM, 1, 0, _EHDR, shoff,
                                 _EF_ARM_EABI_VER5 | _EF_ARM_ABI_FLOAT_HARD, _EHDR, _PHDR, len(loaded), _SHDR,
                                 len(sections), len(sections) - 1)
    phdr = b"".join(struct.pack("<IIIIIIII", _PT_LOAD, off, addr, addr, size, size, _PF_R, 16)
                    for off, addr, size in loaded)
    shdrs = bytearray()
    for i, (name, typ, flags, addr, data, size, align) in enumerate(sections):
        link = symtab_index + 1 if typ == _SHT_SYMTAB else 0
        info = 1 if typ == _SHT_SYMTAB else 0  # index of the first non-local symbol
        entsize = _SYM if typ == _SHT_SYMTAB else 0
        shdrs += struct.pack("<IIIIIIIIII", name_offsets[i], typ, flags, addr, offsets[i], size, link, info,
                             align, entsize)
    return bytes(header + phdr + body + shdrs)


_LAYOUT_KEYS = ("firmware.pools.", "firmware.model.", "firmware.memory.")
_VARIANT_KEYS = ("npu.variant", "ethosu.num_macs", "mps4_board.subsystem.ethosu.num_macs")
_ETDUMP_KEYS = ("firmware.options.etdump", "firmware.options.etdump_debug")


def _key(override) -> str:
    return str(override).split("=", 1)[0].strip()


def check_recorded(program: bytes | None, spec, load_without, overrides, tflite: bool) -> None:
    """Refuse (``ConfigError``, one line) a ``-C`` the ELF cannot carry: one that changes the resolved board but is
    neither the layout, the NPU (the drop-in's command line) nor the ETDump build. ``load_without(key)`` loads the
    board as resolved without the user's ``-C`` of ``key``: a key that changes nothing is harmless."""
    for o in overrides:
        k = _key(o)
        if k.startswith(_LAYOUT_KEYS) or k in _VARIANT_KEYS:
            continue
        if k in _ETDUMP_KEYS and not tflite:
            continue
        if k == "npu.memory_mode" and (program is None or tflite):  # the pools of the mode are the ELF's layout
            continue
        other = load_without(k)
        if {a: b for a, b in other.raw.items() if not a.startswith("_")} == \
                {a: b for a, b in spec.raw.items() if not a.startswith("_")}:
            continue
        if k in _ETDUMP_KEYS:
            why = "an ML Embedded Evaluation Kit application has no ETDump"
        elif k in ("npu.memory_mode", "npu.system_config"):
            why = (f"the drop-in takes the {'memory mode' if k.endswith('mode') else 'system config'} from the "
                   f"program's compile specs, and a runner ELF does not record it")
        else:
            why = "a runner ELF does not record it (it is a property of the run, not of the runner's build)"
        raise ConfigError(f"-C {o}: {why}; give it to the drop-in that runs the ELF (-C {o}) or to fvp run")


def _rodata(options: dict) -> bytes:
    """The strings a runner built with the ETDump event tracer has (``elf_image.ETDUMP_MARK``), and with
    ``ET_DUMP_INTERMEDIATE_OUTPUTS`` / ``ET_DUMP_OUTPUTS`` the debug buffer's log line, NUL-terminated."""
    if options.get("etdump") is not True:
        return b""
    out = ETDUMP_MARK + b"\0"
    level = options.get("etdump_debug", "none")
    for mark, name in ETDUMP_DEBUG_MARKS:
        if name == level:
            out += mark + b"\0"
    return out


def write_runner_elf(program: bytes | None, model_name: str, out_path: str, *, board=None, target=None,
                     overrides=(), note=print) -> int:
    """Resolve the board for ``program`` (as ``fvp run`` does), lay it out and write the ELF to ``out_path``;
    ``program=None``: a semihosting runner for the board ``board``/``target``/``overrides`` name."""
    from ...boards import board_for_target, load_board
    from ..programs.et_build import INPUT_FILE_POOL, pool_overrides
    from ..programs.kind import ProgramKind, identifier, program_kind
    from ..programs.program_board import resolve

    overrides = list(overrides)
    kind = program_kind(program) if program is not None else None
    tflite = kind is ProgramKind.TFLITE
    if program is not None and kind is None:
        raise ConfigError(f"{model_name}: neither an ExecuTorch program nor a .tflite (identifier "
                          f"{identifier(program)!r}, expected ET12, BP08 or TFL3)")
    if program is None:
        name = board_for_target(target) if target else board
        base = load_board(name, [o for o in overrides if _key(o) != "npu.memory_mode"])
        extra = []
        mode = next((o.split("=", 1)[1].strip() for o in reversed(overrides) if _key(o) == "npu.memory_mode"), None)
        if mode is not None:  # the runner is built for the mode: its pools as run.sh's build places them
            extra = pool_overrides(mode, "fast_scratch" in base.firmware.pools)
        if "input_file" not in base.firmware.pools:
            extra += ["firmware.pools.input_file.region=DDR", f"firmware.pools.input_file.size={INPUT_FILE_POOL}",
                      "firmware.pools.input_file.align=16"]

        def load(user):
            return load_board(name, extra + [o for o in user if not _key(o).startswith(_LAYOUT_KEYS)]
                              + [o for o in user if _key(o).startswith(_LAYOUT_KEYS)])
        spec = load(overrides)
        size = 0
    else:
        res = resolve(program, board=board, target=target, overrides=overrides, model_name=model_name)
        for line in res.notes:
            note(f"fvp: note: {line}")
        spec = res.load()

        def load(user):
            return resolve(program, board=board, target=target, overrides=user, model_name=model_name).load()
        size = len(program)
    check_recorded(program, spec, lambda k: load([o for o in overrides if _key(o) != k]), overrides, tflite)
    placed = layout_firmware(spec, size)
    model_address, _ = placed[spec.firmware.model.name]
    layout = mlek_pool_layout(spec) if tflite else POOL_LAYOUT
    pools = {name: placed[name] for name in layout if name in placed}
    names = {"model_section": MLEK_MODEL_SECTION, "model_symbol": MLEK_MODEL_SYMBOL} if tflite else {}
    rodata = _rodata(dict(getattr(spec.firmware, "options", None) or {}))
    links = spec.firmware.link_regions
    code = links.get("ITCM") or next(iter(links.values()))  # where the runner's code and read-only data go
    result = write_file(out_path, runner_elf(program, model_address, pools, pool_layout=layout, rodata=rodata,
                                             rodata_address=code[0], **names))
    if not result.ok:
        raise result.error(f"-o {out_path}: cannot write")
    variant = spec.npu.variant if spec.npu is not None else "no NPU"
    from ..programs.et_build import fvp_binary

    binary = fvp_binary(variant)
    macs = variant.rsplit("-", 1)[-1] if spec.npu is not None else None
    macs_param = "mps4_board.subsystem.ethosu.num_macs" if spec.platform == "corstone-320" else "ethosu.num_macs"
    pool_text = ", ".join(f"{n} {s} bytes at 0x{a:08x}" for n, (a, s) in pools.items() if s)
    section = names.get("model_section", MODEL_SECTION)
    built = ("; built with ETDump" + (f" ({spec.firmware.options.get('etdump_debug')} debug events)"
                                      if spec.firmware.options.get("etdump_debug", "none") != "none" else "")
             if rodata else "")
    run = f"run it with: {binary}" + (f" -C {macs_param}={macs}" if macs else "")
    if program is None:
        mm = spec.npu.memory_mode.name if spec.npu is not None else "no NPU"
        cpu = "mps4_board.subsystem.cpu0" if spec.platform == "corstone-320" else "cpu0"
        note(f"{os.path.basename(out_path)}: a semihosting runner (no program) for {variant}, {mm}; pools: "
             f"{pool_text or 'none'}{built}")
        note(f"{run} -C {cpu}.semihosting-cwd=DIR -C \"{cpu}.semihosting-cmd_line=executor_runner -m program.pte "
             f"-i input0.bin -o out\" -a {out_path}")
        return 0
    note(f"{os.path.basename(out_path)}: {model_name} ({len(program)} bytes) in {section} at "
         f"0x{model_address:08x} for {variant}; pools: {pool_text or 'none'}{built}")
    note(f"{run} -a {out_path}")
    return 0
