"""Fuzz targets for what is inside the files a run reads (issue 27): ``.npy`` input headers, NPU register values
through both ISAs (Ethos-U55/U65 and U85 streams, in ``.pte``/``.bpte`` programs and Vela ``.tflite`` models),
TFLite builtin options tables, and long DMAs.

Every case runs in this process through the platform (``fuzz_core.run_image``, the board the program's own
compile specs or kind name) and must end cleanly: the runner's or the simulator's one-line diagnosis, or a run.
"""

from __future__ import annotations

import atexit
import io
import random
import shutil
import struct
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from fuzz_core import CORPUS, ROOT, Outcome, run_image

TFLM = ROOT / "tests" / "data" / "tflm"


# ------------------------------------------------------------------------------------------ .npy headers
def _npy(arr) -> bytes:
    b = io.BytesIO()
    np.save(b, arr)
    return b.getvalue()


_NPY_SHAPES = ["()", "(1,)", "(0,)", "(4398046511104, 1)", "(2**40,)", "(-1,)", "(1, -5)", "(10**30,)", "(1,) * 64",
               "(1.5,)", "('a',)", "None", "(1, 1, 1, 1)"]
_NPY_DESCR = ["'|i1'", "'<i8'", "'|O'", "'<f4'", "[('a', '<i4')]", "'<U10'", "'|V5'", "'|b1'", "'bogus'", "'>i2'"]


def npy_header(rng: random.Random) -> bytes:
    """A ``.npy`` file with a hostile header: cut, a lying shape, an object or record dtype, a broken dict, a
    bad magic or version, Python syntax that does not tokenize."""
    base = _npy(np.ones((1, 1), dtype=np.int8))
    kind = rng.choice(["cut", "shape", "descr", "dict", "magic", "version", "tokens", "length", "pickle"])
    if kind == "cut":
        return base[:rng.randrange(len(base))]
    if kind == "pickle":
        return _npy(np.array([1, None, {}], dtype=object))
    header_at = 10
    hlen = struct.unpack_from("<H", base, 8)[0]
    header = base[header_at:header_at + hlen].decode("latin1")
    if kind == "shape":
        header = header.replace("(1, 1)", rng.choice(_NPY_SHAPES))
    elif kind == "descr":
        header = header.replace("'|i1'", rng.choice(_NPY_DESCR))
    elif kind == "dict":
        header = rng.choice(["{", "}", "{'descr': '|i1'}", "[1, 2]", "{'descr': '|i1', 'fortran_order': 'x', "
                             "'shape': (1, 1)}", "{" * 200, "{'descr': '|i1', 'shape': (1,1), 'x': 1}"])
    elif kind == "tokens":
        header = header.replace("}", rng.choice(['"""}', "'}", "\\}", "#}", "}\x00"]))
    elif kind == "magic":
        return b"\x93NUMPX" + base[6:]
    elif kind == "version":
        return base[:6] + bytes([rng.choice([0, 3, 9, 255]), 0]) + base[8:]
    body = header.encode("latin1")
    if kind == "length":
        return base[:8] + struct.pack("<H", rng.choice([0, 1, 0xFFFF])) + body + base[header_at + hlen:]
    return base[:8] + struct.pack("<H", len(body)) + body + base[header_at + hlen:]


_SCRATCH = Path(tempfile.mkdtemp(prefix="fvp-fuzz-files-"))
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)


def run_npy_header(rng: random.Random) -> Outcome:
    f = _SCRATCH / "input.npy"
    f.write_bytes(npy_header(rng))
    image = (CORPUS / rng.choice(["add_q.pte", "add_fp_cpu.pte"])).read_bytes()
    return run_image(image, inputs=[str(f), str(f)])


# ------------------------------------------------------------------------------------------ NPU register values
# seeds of both ISAs: U55/U65 programs and Vela .tflite models, U85 programs (the Corstone-320)
_REGISTER_SEEDS = {
    "conv1d_u55-128.bpte": "ethos-u55-128", "add_u55-128.bpte": "ethos-u55-128",
    "softmax_u55-128.bpte": "ethos-u55-128", "mobilenet_v1_025_u65-256.bpte": "ethos-u65-256",
    "../tflm/cpu_split_u55-128_vela.tflite": "ethos-u55-128", "../tflm/int16_act_u55-128_vela.tflite": "ethos-u55-128",
    "../oracle_u85/conv1d_u85-128/conv1d_u85-128.bpte": "ethos-u85-128",
    "../oracle_u85/softmax_u85-128/softmax_u85-128.bpte": "ethos-u85-128",
    "../u85/gatherish_u85-256.bpte": "ethos-u85-256",
    "../tflm/int16_sig_tanh_r6_u85-256_vela.tflite": "ethos-u85-256",
}
#: the values the issue found (NPU_SET_IFM_PRECISION 0x1b02, NPU_SET_ACTIVATION 0x1336) and field edges
KNOWN_REGISTER_VALUES = {"NPU_SET_IFM_PRECISION": [0x1B02], "NPU_SET_ACTIVATION": [0x1336],
                         "NPU_SET_OFM_PRECISION": [0xFFFF], "NPU_SET_IFM2_PRECISION": [0x1B02]}
_EDGES = [0, 1, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x1B02, 0x1336, 0x5555, 0xAAAA]


def _stream(data: bytes):
    from fuzz import _stream_location

    return _stream_location(data)


def register_values(rng: random.Random) -> tuple[bytes, str]:
    """A seed whose stream has one to three of its register commands given other values: a known crash value,
    a field edge or a random half-word (CMD1: its payload word too)."""
    from fvp.machine.npu.command_stream import decode_commands

    name = rng.choice(sorted(_REGISTER_SEEDS))
    arch = _REGISTER_SEEDS[name]
    data = (CORPUS / name).read_bytes()
    loc = _stream(data)
    if loc is None:
        return data, name
    start, n = loc
    try:
        cmds = decode_commands(np.frombuffer(data, "<u4", count=n, offset=start), arch)
    except Exception:  # noqa: BLE001 - a seed stream the decoder refuses: run it as it is
        return data, name
    regs = [i for i, c in enumerate(cmds) if c.name.startswith("NPU_SET_")]
    known = [i for i in regs if cmds[i].name in KNOWN_REGISTER_VALUES]
    out = list(cmds)
    changed = []
    for _ in range(rng.randint(1, 3)):
        if known and rng.random() < 0.3:
            i = rng.choice(known)
            value = rng.choice(KNOWN_REGISTER_VALUES[cmds[i].name])
        else:
            i = rng.choice(regs)
            value = rng.choice(_EDGES) if rng.random() < 0.6 else rng.getrandbits(16)
        c = out[i]
        payload = c.payload
        if payload is not None and rng.random() < 0.4:
            payload = rng.choice([0, 0xFFFFFFFF, 0x80000000, rng.getrandbits(32)])
        out[i] = replace(c, param=value & 0xFFFF, payload=payload)
        changed.append(f"{c.name}=0x{value & 0xFFFF:x}")
    words = [w for c in out for w in c.words]
    patched = bytearray(data)
    patched[start:start + 4 * len(words)] = np.asarray(words, "<u4").tobytes()
    register_values.changed = changed
    return bytes(patched), name


def run_npu_register(rng: random.Random) -> Outcome:
    register_values.changed = []
    image, name = register_values(rng)
    o = run_image(image, name=Path(name).name)
    o.artifact = image
    if o.kind not in ("ok", "clean_failure"):
        o.detail = f"{Path(name).name} {' '.join(register_values.changed)}: {o.detail}"
    return o


# ------------------------------------------------------------------------------------------ TFLite options
_OPTION_SEEDS = ["cpu_split_u55-128_vela.tflite"]


def _options_positions(data: bytes) -> list:
    """(type byte position, options offset position, table position) of each operator with builtin options."""
    from tflite.Model import Model

    sg = Model.GetRootAs(data, 0).Subgraphs(0)
    out = []
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        t = op._tab
        if t.Offset(10) and t.Offset(12):
            table = op.BuiltinOptions()
            out.append((t.Pos + t.Offset(10), t.Pos + t.Offset(12), table.Pos if table is not None else None))
    return out


def tflite_options(rng: random.Random) -> bytes:
    """A Vela ``.tflite`` whose operators' options tables are tampered with: the options offset, the options
    type (another member, NONE, a code past the union), the table's vtable offset, or bytes of the table."""
    data = bytearray((TFLM / rng.choice(_OPTION_SEEDS)).read_bytes())
    ops = _options_positions(bytes(data))
    for _ in range(rng.randint(1, 2)):
        type_at, offset_at, table_at = rng.choice(ops)
        kind = rng.choice(["offset", "type", "vtable", "bytes"])
        if kind == "offset":
            struct.pack_into("<I", data, offset_at, rng.choice([0, 1, 0x7FFFFFF0, 0x2BDC0000, len(data),
                                                                 rng.getrandbits(32)]))
        elif kind == "type":
            data[type_at] = rng.choice([0, 1, 2, 5, 15, 40, 126, 127, 200, 255])
        elif kind == "vtable" and table_at is not None:
            struct.pack_into("<i", data, table_at, rng.choice([0, 4, -4, 0x7FFFFFFF, -0x80000000, 1000]))
        elif table_at is not None:
            for _ in range(rng.randint(1, 4)):
                at = table_at + rng.randrange(-8, 24)
                if 0 <= at < len(data):
                    data[at] = rng.randrange(256)
    return bytes(data)


def run_tflite_options(rng: random.Random) -> Outcome:
    image = tflite_options(rng)
    o = run_image(image, name="fuzz.tflite")
    o.artifact = image
    return o


# ------------------------------------------------------------------------------------------ long DMAs
def long_dma(rng: random.Random) -> bytes:
    """MobileNetV2's first DMA made long (up to 1 GiB, inside the DDR the program is in: source and destination
    overlapping or not) or pointed elsewhere: it must be refused before it starts, or stopped by the case's time
    limit within ``INTERRUPT_LATENCY_S``, within the memory bound."""
    data = bytearray((CORPUS / "mv2_full_u55-128.bpte").read_bytes())
    start, n = _stream(bytes(data))
    words = list(np.frombuffer(bytes(data), "<u4", count=n, offset=start))
    i = words.index(0x10131)  # NPU_SET_DMA0_DST_REGION 1, then DMA0_DST and DMA0_LEN (CMD1s)
    region = rng.choice([0, 0, 1, 2, 7])
    struct.pack_into("<I", data, start + 4 * i, (region << 16) | 0x131)
    struct.pack_into("<I", data, start + 4 * (i + 2), rng.choice([0, 0x100000, 0x2000_0000, 0x6000_0000,
                                                                  rng.getrandbits(32)]))
    struct.pack_into("<I", data, start + 4 * (i + 4), rng.choice([1 << 30, 1 << 29, 0x3FFF_FFFF, 1 << 26,
                                                                  0xFFFF_FFFF, rng.getrandbits(32)]))
    return bytes(data)


def run_long_dma(rng: random.Random) -> Outcome:
    from fuzz_core import GROWN_TIME_LIMIT_S

    image = long_dma(rng)
    o = run_image(image, name="mv2.bpte", time_limit=GROWN_TIME_LIMIT_S)
    o.artifact = image
    return o


TARGETS = {
    "npy_header": run_npy_header,
    "npu_register": run_npu_register,
    "tflite_options": run_tflite_options,
    "long_dma": run_long_dma,
}
