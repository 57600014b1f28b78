"""The model zoo: ExecuTorch's example models, compiled ahead of time for each Ethos-U target and cortex-m55.

``tools/run.sh --model_name=<name>`` uses it when ExecuTorch is not installed. Every program was made by
ExecuTorch 1.5.1's ``aot_arm_compiler --delegate [--quantize] --bundleio`` for the target's default system
config and memory mode (mobilenet_v1_025 also for the other memory modes: ``find`` matches the memory mode), or ``--quantize --bundleio`` for ``--target=cortex-m55`` (no delegate: the quantized
layers are ``cortex_m::*`` CMSIS-NN kernels) (``tools/build_zoo.py``; ``index.json`` records the versions and the
entries). Only the
``.bpte`` is stored: the plain ``.pte`` is the program inside it, which is byte for byte what the compiler
writes without ``--bundleio`` (the build is seeded, so both compiles see the same weights). Identical programs
(float models left on the CPU are the same for every target) are stored once. ``mv2`` (ethos-u55-128 only) is the
test corpus's MobileNetV2 program, copied byte for byte (``tools/build_zoo.py`` says why).
"""

from __future__ import annotations

import json
import struct
from functools import lru_cache
from pathlib import Path

ZOO_DIR = Path(__file__).resolve().parent
PROGRAMS = ZOO_DIR / "programs"


@lru_cache(maxsize=1)
def load_index() -> dict:
    path = ZOO_DIR / "index.json"
    if not path.is_file():
        return {"entries": [], "versions": {}}
    return json.loads(path.read_text())


def models() -> list[str]:
    """The model names the zoo has, in index order."""
    seen: list[str] = []
    for e in load_index()["entries"]:
        if e["model"] not in seen:
            seen.append(e["model"])
    return seen


def find(model: str, target: str, quantize: bool, delegate: bool, system_config: str,
         memory_mode: str) -> dict | None:
    """The zoo entry compiled with exactly these settings, or ``None``."""
    for e in load_index()["entries"]:
        if (e["model"] == model and e["target"] == target and bool(e["quantize"]) == bool(quantize)
                and bool(e["delegate"]) == bool(delegate) and e["system_config"] == system_config
                and e["memory_mode"] == memory_mode):
            return e
    return None


def bundled_program_range(bpte: bytes) -> tuple[int, int]:
    """Offset and size of the ``.pte`` inside a ``.bpte`` (root table ``BundledProgram``, field 2 ``program``)."""
    if len(bpte) < 8 or bpte[4:8] != b"BP08":
        raise ValueError("not a bundled program (no BP08 identifier)")
    table = struct.unpack_from("<I", bpte, 0)[0]
    vtable = table - struct.unpack_from("<i", bpte, table)[0]
    vt_size = struct.unpack_from("<H", bpte, vtable)[0]
    field = 2
    if 4 + 2 * field + 2 > vt_size:
        raise ValueError("bundled program has no embedded program")
    rel = struct.unpack_from("<H", bpte, vtable + 4 + 2 * field)[0]
    if rel == 0:
        raise ValueError("bundled program has no embedded program")
    pos = table + rel
    vec = pos + struct.unpack_from("<I", bpte, pos)[0]
    size = struct.unpack_from("<I", bpte, vec)[0]
    if vec + 4 + size > len(bpte):
        raise ValueError("bundled program: embedded program runs past the end of the file")
    return vec + 4, size


def program_bytes(entry: dict, bundleio: bool) -> bytes:
    """The ``.bpte`` of an entry (``bundleio``), or the plain ``.pte`` inside it."""
    data = (PROGRAMS / entry["file"]).read_bytes()
    if bundleio:
        return data
    off, size = bundled_program_range(data)
    return data[off:off + size]
