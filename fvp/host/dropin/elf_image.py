"""Reading an ``arm_executor_runner`` ELF (the FVP's ``-a app.elf``): the embedded program and the pool sizes.

The simulator does not execute the ELF's code (the Python runner stands in for it), but the ELF records what
the build chose: ``pte_to_header.py`` puts the program in section ``network_model_sec`` (symbol ``model_pte``)
and the runner's pools are sized arrays placed by the linker script. This module reads, with pyelftools (the
optional extra ``elf``):

- the program: section ``network_model_sec``, or the symbol ``model_pte`` (its size) inside a linked section
  (in a linked runner ``_ZL9model_pte``: the header's ``const`` array has internal linkage in C++);
- the pools: symbols ``method_allocation_pool``, ``temp_allocation_pool``, ``dedicated_sram`` (or the value of
  ``ethosu_fast_scratch_size``), ``planned_fast_memory_pool`` (``ET_ARM_BAREMETAL_PLANNED_FAST_MEMORY_SIZE``, the
  pool of planned ``mem_id`` 3) and the semihosting runner's ``input_file_allocation_pool``, or the input sections
  ``.bss.method_allocator_sec``, ``.bss.tensor_arena``, ``.bss.ethosu_scratch``, ``.fast_memory``,
  ``.bss.input_file_allocator_sec`` when they survive linking; each with its address (which tells the region).
  In a linked runner (``Corstone-300.ld``/``Corstone-320.ld`` since ExecuTorch #21641/#21741) the input sections
  are merged into the NOLOAD output sections ``.sram.bss`` and ``.ddr.bss`` (SHT_NOBITS, no file bytes): only the
  symbols say where each pool is. ``ElfImage.runner_layout`` says the ELF records the runner's own pools (method
  and temp): then the pools it lacks are not in that build;
- whether the runner was built with the ETDump event tracer (``ET_EVENT_TRACER_ENABLED``): its code prints the
  ``#[RUN THIS]`` block run_fvp.sh looks for, so that string is in the ELF's read-only data (``ElfImage.etdump``);
  with ``ET_DUMP_INTERMEDIATE_OUTPUTS`` (what run.sh ``--etdump`` adds) or ``ET_DUMP_OUTPUTS`` also the debug
  buffer's "ETDump: Allocated ..." line (``ElfImage.etdump_debug``; ``ET_DEBUG_BUFFER_SIZE`` is not read).

An ML Embedded Evaluation Kit (MLEK) application ELF holds a ``.tflite`` instead, for the TFLite Micro image
(MLEK ``scripts/py/templates/tflite.cc.template``, ``BufAttributes.hpp``, ``ethosu_mem_config.h``, the MPS3
SSE-300 linker script): ``static const uint8_t nn_model[]`` in section ``nn_model`` (linked into ``.ddr.at_ddr``;
``GetModelPointer``/``GetModelLen`` return it, code this reader cannot run), the tensor arena
``activationBuf[ACTIVATION_BUF_SZ]`` (``tensorArena`` in older use cases) in ``.bss.NoInit.activation_buf_sram``
(``activation_buf_dram`` / ``.bss.NoInit.activation_buf_dram`` in DDR for Dedicated_Sram) and the NPU cache
``cache_arena`` in ``.bss.NoInit.ethos_u_cache``. The model is found by the symbol (a C name or the C++ name
mangled in the use case's namespace, e.g. ``_ZN3arm3app16inference_runnerL8nn_modelE``; its size is the array's)
or by the section when it survives; it must start like a ``.tflite`` (``TFL3``). Its pools are ``arena`` and
``fast_scratch``, the TFLite Micro board's. A stripped ELF (no symbols, sections merged) gives no model.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ...bounded_read import open_regular
from ...errors import ConfigError
from ..programs.kind import is_tflite

ELF_EXTRA_HINT = "pip install 'fvp-corstone300[elf]' (pyelftools)"

_POOL_SYMBOLS = {
    "method_allocation_pool": "method",
    "temp_allocation_pool": "temp",
    "dedicated_sram": "fast_scratch",
    "planned_fast_memory_pool": "planned_fast",
    "input_file_allocation_pool": "input_file",
}
_POOL_SECTIONS = {
    ".bss.method_allocator_sec": "method",
    ".bss.tensor_arena": "temp",
    ".bss.ethosu_scratch": "fast_scratch",
    ".fast_memory": "planned_fast",
    ".bss.input_file_allocator_sec": "input_file",
}
RUNNER_POOLS = ("method", "temp")  # every arm_executor_runner build has these two
ETDUMP_MARK = b"#[RUN THIS]"  # printed by the runner's ETDump code (arm_executor_runner.cpp), so in its strings
# Log strings only ExecuTorch main's runner (at cff6f4dd) has, in its two builds run_fvp.sh's --data and the test
# harness use: the semihosting runner's argv echo and the ET_MODEL_PTE_ADDR runner's size note. Such an ELF runs
# the Python runner with that runtime profile (its log then matches the real runner's: tools/compare_engines.py)
MAIN_RUNTIME = "executorch-main-cff6f4dd"
MAIN_RUNTIME_MARKS = (b"Running executor with parameter:", b"(pte size unknown when not baked into elf)")
# ET_DUMP_INTERMEDIATE_OUTPUTS / ET_DUMP_OUTPUTS: the runner's log line when it sets the debug buffer
ETDUMP_DEBUG_MARKS = ((b"ETDump: Allocated intermediate output buffer size", "intermediate"),
                      (b"ETDump: Allocated output buffer size", "outputs"))
STRINGS_LIMIT = 64 << 20  # sections searched for it: the runner's own (a program's section is skipped)
MODEL_SECTION = "network_model_sec"
MODEL_SYMBOL = "model_pte"

# MLEK application ELFs (the module docstring): the .tflite and the TFLite Micro board's pools
MLEK_MODEL_SECTION = "nn_model"
MLEK_MODEL_SYMBOL = "nn_model"
MLEK_ARENA_SYMBOL = "activationBuf"
MLEK_ARENA_SECTIONS = {"SRAM": ".bss.NoInit.activation_buf_sram", "DDR": ".bss.NoInit.activation_buf_dram"}
MLEK_CACHE_SECTION, MLEK_CACHE_SYMBOL = ".bss.NoInit.ethos_u_cache", "cache_arena"
MLEK_POOL_SYMBOLS = {MLEK_ARENA_SYMBOL: "arena", "tensorArena": "arena", MLEK_CACHE_SYMBOL: "fast_scratch"}
MLEK_POOL_SECTIONS = {**{sec: "arena" for sec in MLEK_ARENA_SECTIONS.values()}, "activation_buf_dram": "arena",
                      MLEK_CACHE_SECTION: "fast_scratch"}


@dataclass
class ElfImage:
    path: str
    program: bytes | None = None
    program_address: int | None = None
    program_source: str = MODEL_SECTION  # where the program was found (a section or symbol name)
    pools: dict = field(default_factory=dict)  # name -> (address, size)
    pool_symbols: dict = field(default_factory=dict)  # name -> the symbol or section it was read from
    etdump: bool = False  # built with the ETDump event tracer
    etdump_debug: str = "none"  # and with ET_DUMP_INTERMEDIATE_OUTPUTS ("intermediate") or ET_DUMP_OUTPUTS
    runtime: str = ""  # the runtime profile its log strings say it is ("" when they do not tell)
    machine: str = ""

    @property
    def runner_layout(self) -> bool:
        """The ELF records the ExecuTorch runner's pools (its layout is the build's, not the board's)."""
        return self.program_source != MLEK_MODEL_SYMBOL and all(p in self.pools for p in RUNNER_POOLS)


ELF_LIMIT = 4 << 30  # an ELF is read lazily, section by section; every read is bounded by a regular file's size


def read_elf(path: str) -> ElfImage:
    """Read the program and pools of a runner ELF; ``ConfigError`` (one line) for anything unusable."""
    try:
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile
        from elftools.elf.sections import SymbolTableSection
    except ImportError:
        raise ConfigError(f"-a {path}: reading ELF files needs pyelftools: {ELF_EXTRA_HINT}") from None
    f = open_regular(path, ELF_LIMIT, label=f"-a {path}", kind="application file", why="not a plausible runner ELF")
    with f:
        if f.read(4) != b"\x7fELF":
            raise ConfigError(f"-a {path}: not an ELF file")
        f.seek(0)
        try:
            elf = ELFFile(f)
            return _read(elf, path, SymbolTableSection)
        except (ELFError, struct.error, ValueError, OSError) as e:
            raise ConfigError(f"-a {path}: malformed ELF file: {e}") from None


def _read(elf, path: str, symtab_cls) -> ElfImage:
    img = ElfImage(path=path, machine=str(elf["e_machine"]))
    sections = list(elf.iter_sections())

    def data_at(addr: int, size: int) -> bytes | None:
        for s in sections:
            if s["sh_type"] == "SHT_NOBITS" or not s["sh_size"]:
                continue
            base = s["sh_addr"]
            if base <= addr and addr + size <= base + s["sh_size"] and (s["sh_flags"] & 0x2):  # SHF_ALLOC
                off = addr - base
                return s.data()[off:off + size]
        return None

    symbols = {}
    for s in sections:
        if isinstance(s, symtab_cls):
            for sym in s.iter_symbols():
                if sym.name and sym["st_shndx"] != "SHN_UNDEF":
                    symbols.setdefault(sym.name, (sym["st_value"], sym["st_size"]))
    for name in [n for n in symbols if n.startswith("_ZL")]:  # the runner's model_pte, by its C name
        symbols.setdefault(c_name(name), symbols[name])

    # the program
    sec = next((s for s in sections if s.name == MODEL_SECTION), None)
    if MODEL_SYMBOL in symbols and symbols[MODEL_SYMBOL][1]:
        addr, size = symbols[MODEL_SYMBOL]
        data = data_at(addr, size)
        if data is None and sec is not None and sec["sh_type"] != "SHT_NOBITS":
            off = addr - sec["sh_addr"]
            if 0 <= off and off + size <= sec["sh_size"]:
                data = sec.data()[off:off + size]
        if data is not None:
            img.program, img.program_address = bytes(data), addr
    if img.program is None and sec is not None and sec["sh_type"] != "SHT_NOBITS" and sec["sh_size"]:
        img.program, img.program_address = bytes(sec.data()), sec["sh_addr"]

    # the pools
    for s in sections:
        name = _POOL_SECTIONS.get(s.name)
        if name and s["sh_size"]:
            img.pools[name] = (s["sh_addr"], s["sh_size"])
            img.pool_symbols[name] = s.name
    for sym, name in _POOL_SYMBOLS.items():
        if sym in symbols and symbols[sym][1]:
            img.pools[name] = symbols[sym]
            img.pool_symbols[name] = sym
    if "fast_scratch" not in img.pools and "ethosu_fast_scratch_size" in symbols:
        addr, size = symbols["ethosu_fast_scratch_size"]
        raw = data_at(addr, 4)
        ptr = symbols.get("ethosu_fast_scratch")
        if raw is not None:
            value = struct.unpack("<I", raw)[0]
            if value:
                base = ptr[0] if ptr else 0
                base_raw = data_at(ptr[0], 4) if ptr else None
                if base_raw is not None:
                    base = struct.unpack("<I", base_raw)[0]
                img.pools["fast_scratch"] = (base, value)
                img.pool_symbols["fast_scratch"] = "ethosu_fast_scratch"
    if img.program is None:
        _read_mlek(img, sections, symbols, data_at)
    strings = [s.data() for s in sections
               if s["sh_type"] == "SHT_PROGBITS" and s["sh_flags"] & 0x2 and s["sh_size"] <= STRINGS_LIMIT
               and s.name != MODEL_SECTION and not (img.program_address is not None
                                                    and s["sh_addr"] <= img.program_address
                                                    < s["sh_addr"] + s["sh_size"])]
    img.etdump = any(ETDUMP_MARK in d for d in strings)
    if any(mark in d for d in strings for mark in MAIN_RUNTIME_MARKS):
        img.runtime = MAIN_RUNTIME
    if img.etdump:
        img.etdump_debug = next((level for mark, level in ETDUMP_DEBUG_MARKS if any(mark in d for d in strings)),
                                "none")
    return img


def c_name(symbol: str) -> str:
    """A symbol's C name: itself, or the last name of an Itanium-mangled nested variable name
    (``_ZN3arm3appL13activationBufE`` -> ``activationBuf``), or the name of a file-static C++ variable
    (``_ZL9model_pte`` -> ``model_pte``: ``pte_to_header.py``'s ``const`` array has internal linkage in C++)."""
    if symbol.startswith("_ZL") and symbol[3:4].isdigit():
        j = 3
        while symbol[j].isdigit():
            j += 1
        return symbol[j:] if len(symbol) - j == int(symbol[3:j]) else symbol
    if not (symbol.startswith("_ZN") and symbol.endswith("E")):
        return symbol
    i, last = 3, symbol
    while i < len(symbol) - 1:
        if symbol[i] == "L":  # internal linkage (a static variable)
            i += 1
        j = i
        while j < len(symbol) and symbol[j].isdigit():
            j += 1
        if j == i:
            return symbol
        n = int(symbol[i:j])
        last, i = symbol[j:j + n], j + n
    return last if i == len(symbol) - 1 else symbol


def _read_mlek(img: ElfImage, sections, symbols: dict, data_at) -> None:
    """The ``.tflite`` and the pools of an MLEK application ELF (the module docstring), into ``img``."""
    models = []
    for name, (addr, size) in symbols.items():
        if c_name(name) == MLEK_MODEL_SYMBOL and size:
            data = data_at(addr, size)
            if data is not None and is_tflite(data):
                models.append((addr, name, bytes(data)))
    if not models:
        sec = next((s for s in sections if s.name == MLEK_MODEL_SECTION and s["sh_type"] != "SHT_NOBITS"), None)
        if sec is not None and is_tflite(sec.data()):
            models.append((sec["sh_addr"], MLEK_MODEL_SECTION, bytes(sec.data())))
    if len({m[0] for m in models}) > 1:
        raise ConfigError(f"-a {img.path}: {len(models)} models ({', '.join(m[1] for m in models)}); the TFLite "
                          f"Micro image runs one: give it with --data MODEL.tflite@ADDRESS")
    if not models:
        return
    img.program_address, _, img.program = models[0]
    img.program_source = MLEK_MODEL_SYMBOL
    for s in sections:
        pool = MLEK_POOL_SECTIONS.get(s.name)
        if pool and s["sh_size"]:
            img.pools[pool] = (s["sh_addr"], s["sh_size"])
    for name, (addr, size) in symbols.items():
        pool = MLEK_POOL_SYMBOLS.get(c_name(name))
        if pool and size:
            img.pools[pool] = (addr, size)


def region_of(link_regions: dict, address: int) -> str | None:
    """The linker region (``SRAM``, ``DDR``, ...) holding ``address``, also through the non-secure alias."""
    for addr in (address, address + 0x1000_0000):
        for name, (base, size) in link_regions.items():
            if base <= addr < base + size:
                return name
    return None
