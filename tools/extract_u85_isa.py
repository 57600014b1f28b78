#!/usr/bin/env python3
"""Extract the Ethos-U85 interface facts that tests/shared/test_hwdesc_ethosu85.py checks hwdesc/ethosu85.py
against, from Vela's generated header, into tests/data/ethosu85_isa.json.

    python3 tools/extract_u85_isa.py VELA_SRC/ethosu/regor/architecture/ethosu85 tests/data/ethosu85_isa.json

It reads ``ethos_u85_interface.hpp`` (register offsets, register and command bit-fields, enums, reset values,
access types) and ``ethos_u85.cpp`` (the per-MAC configurations behind the CONFIG word). Bit positions are
those of the header's structs: a register's over its 32 or 64 bits, a command's over its whole 32- or 64-bit
command (param at bit 16, payload at bit 32); reserved fields are left out.
"""

import json
import re
import sys
from pathlib import Path


def bitfields(body):
    out, lo = [], 0
    for name, width in re.findall(r"uint32_t (\w+) ?: ?(\d+);", body):
        if not name.startswith("reserved"):
            out.append([name, lo, int(width)])
        lo += int(width)
    return out, lo


def main(folder, dest):
    src = (Path(folder) / "ethos_u85_interface.hpp").read_text()
    defines = {m[1]: int(m[2], 16) for m in re.finditer(r"#define NPU_REG_(\w+) (0x[0-9A-Fa-f]+)", src)}
    arrays = {k[:-5]: [v, defines[k[:-5] + "_ARRLEN"]] for k, v in defines.items() if k[:-5] + "_ARRLEN" in defines}
    enums = {m[1]: dict(re.findall(r"(\w+) = (\d+),", m[2]))
             for m in re.finditer(r"enum class (\w+) : \w+\n\{\n(.*?)\n\};", src, re.S)}
    enums = {k: {n: int(v) for n, v in e.items()} for k, e in enums.items()}
    structs = {m[1]: bitfields(m[2]) for m in
               re.finditer(r"\nstruct (\w+_r)\n\{\n#ifndef __cplusplus\n(.*?)#else", src, re.S)}
    layout = re.search(r"struct NPU_REG\n\{\n(.*?)\n#ifdef __cplusplus", src, re.S)[1]
    reset = re.search(r"void reset\(\)\n    \{\n(.*?)\n    \}", src, re.S)[1]
    resets = {k: int(v) for k, v in re.findall(r"(\w+)(?:\[i\])? = (\d+);", reset)}
    access = dict(re.findall(r"case (\d+): return access_type_t::(\w+);", src))
    registers = {}
    for struct, name in re.findall(r"STRUCT (\w+) (\w+)", layout):
        name = name.split("[")[0]
        offset = arrays[name][0] if name in arrays else defines[name]
        if 0x800 <= offset < 0xC00:
            continue  # TSU registers: written by commands, their fields are the commands'
        fields, bits = structs[struct]
        registers[name] = {"offset": offset, "count": arrays[name][1] if name in arrays else 1, "words": bits // 32,
                           "access": access[str(offset)], "reset": resets[name], "fields": fields}
    commands, command_registers = {}, {}
    for m in re.finditer(r"\nstruct npu_(\w+)_t\n\{\n#ifdef __cplusplus\nprivate:\n#endif\n(.*?)\n\};", src, re.S):
        name = re.search(r"cmd[01]_opcode::(\w+)\)", m[2])[1]
        fields, _ = bitfields(m[2].split("#ifdef __cplusplus")[0])
        types = dict((f, t) for t, f in re.findall(r"CONSTEXPR NPU_NAMESPACE::(\w+) get_(\w+)\(\) const", m[2]))
        commands[name] = [f + [types.get(f[0])] for f in fields if f[0] not in ("opcode", "control")]
        reg = m[1].upper().removeprefix("SET_")
        if reg in defines and not name.startswith("NPU_OP_"):
            command_registers[name] = defines[reg]
    cpp = (Path(folder) / "ethos_u85.cpp").read_text()
    configs = {int(m[1]): {"cores": int(m[2]), "num_axi_sram_log2": int(m[3]), "num_axi_ext_log2": int(m[4])}
               for m in re.finditer(r"// Accelerator\.Ethos_U85_\d+\n    \{(\d+), (\d+), .*?\}, Shape\([^)]*\),"
                                    r" \d+, \d+, \d+, \d+, \d+, (\d+), (\d+),", cpp, re.S)}
    out = {"cmd0_opcode": enums.pop("cmd0_opcode"), "cmd1_opcode": enums.pop("cmd1_opcode"),
           "commands": commands, "command_registers": command_registers,
           "register_defines": {k: v for k, v in defines.items() if not k.endswith(("_BASE", "_ARRLEN"))},
           "registers": registers, "enums": enums, "accelerator_configs": configs}
    Path(dest).write_text(json.dumps(out, separators=(",", ":"), sort_keys=True) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
