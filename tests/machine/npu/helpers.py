"""Test helpers for the NPU: a fake bus memory, a Vela-blob extractor and a delegate runner.

The blob extractor is deliberately independent of ``firmware.executorch`` (it scans the file for the
``vela_bin_stream`` block), so the NPU tests need only the fixture files.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from fvp.errors import NpuFault
from fvp.machine.npu.arch import get_arch
from fvp.machine.npu.command_stream import parse_driver_payload
from fvp.machine.npu.execute import execute_stream


class FakeMemory:
    """Sparse memory made of numpy regions; ``view`` faults with ``bus_error`` outside them."""

    def __init__(self):
        self.regions: list[tuple[int, np.ndarray]] = []

    def add(self, address: int, data) -> np.ndarray:
        arr = np.array(np.frombuffer(bytes(data), np.uint8) if not isinstance(data, np.ndarray) else data,
                       dtype=np.uint8, copy=True)
        self.regions.append((int(address), arr))
        return arr

    def add_zeros(self, address: int, size: int) -> np.ndarray:
        return self.add(address, np.zeros(size, np.uint8))

    def view(self, address: int, length: int, write: bool) -> np.ndarray:
        for base, arr in self.regions:
            if base <= address and address + length <= base + arr.shape[0]:
                return arr[address - base: address - base + length]
        raise NpuFault("bus_error", f"no memory at 0x{address:x}+{length}", address=address)


@dataclass
class VelaIO:
    shape: tuple
    elem_size: int
    offset: int
    region: int


@dataclass
class VelaBlob:
    cmd_data: bytes
    weight_data: bytes
    scratch_size: int
    inputs: list
    outputs: list

    @property
    def stream(self) -> np.ndarray:
        return parse_driver_payload(self.cmd_data).stream

    @property
    def config_word(self) -> int:
        return parse_driver_payload(self.cmd_data).config_word


def _parse_blob(data: bytes, pos: int) -> VelaBlob:
    blocks = {}
    while True:
        name = data[pos:pos + 16].rstrip(b"\0").decode()
        (length,) = struct.unpack_from("<I", data, pos + 16)
        body = data[pos + 32:pos + 32 + length]
        blocks[name] = body
        pos += 32 + ((length + 15) // 16) * 16
        if name == "vela_end_stream":
            break

    def ios(b):
        (n,) = struct.unpack_from("<i", b, 0)
        out = []
        for k in range(n):
            v = struct.unpack_from("<9i", b, 4 + 36 * k)
            out.append(VelaIO(tuple(v[:6]), v[6], v[7], v[8]))
        return out

    return VelaBlob(blocks["cmd_data"], blocks["weight_data"], struct.unpack("<I", blocks["scratch_size"][:4])[0],
                    ios(blocks["inputs"]), ios(blocks["outputs"]))


def extract_vela_blobs(data: bytes) -> list[VelaBlob]:
    """Every Vela blob in a .pte/.bpte file, in file order."""
    out = []
    start = 0
    marker = b"vela_bin_stream\0"
    while True:
        p = data.find(marker, start)
        if p < 0:
            return out
        out.append(_parse_blob(data, p))
        start = p + 16


WEIGHT_BASE = 0x1000_0000
SCRATCH_BASE = 0x2000_0000
FAST_SCRATCH_BASE = 0x3000_0000
FAST_SCRATCH_SIZE = 2 << 20  # region 2 (Dedicated_Sram arena cache); zeroed


def run_blob(blob: VelaBlob, inputs: list[bytes], arch="ethos-u55-128", engine="fast", weight_cache=None,
             scratch_fill: int = 0, **kw):
    """Run a delegate: inputs copied into a zeroed scratch (region 1), weights in region 0, a zeroed 2 MiB
    fast scratch in region 2 (Dedicated_Sram programs use it as the arena cache); ``kw`` goes to ``execute_stream``
    (``stream``: other words than the blob's).

    Returns (StreamResult, [output bytes]).
    """
    arch = get_arch(arch)
    mem = FakeMemory()
    mem.add(WEIGHT_BASE, blob.weight_data if blob.weight_data else b"\0" * 16)
    scratch = mem.add(SCRATCH_BASE, np.full(max(blob.scratch_size, 16), scratch_fill, np.uint8))
    for io, data in zip(blob.inputs, inputs):
        assert io.region == 1
        scratch[io.offset:io.offset + len(data)] = np.frombuffer(data, np.uint8)
    mem.add_zeros(FAST_SCRATCH_BASE, FAST_SCRATCH_SIZE)
    shram = np.zeros(arch.shram_bytes, np.uint8)
    bases = [WEIGHT_BASE, SCRATCH_BASE, FAST_SCRATCH_BASE] + [0] * 5
    res = execute_stream(kw.pop("stream", blob.stream), arch=arch, base_pointers=bases, memory=mem, shram=shram,
                         engine=engine, weight_cache=weight_cache, **kw)
    outs = []
    for io in blob.outputs:
        n = int(np.prod(io.shape)) * io.elem_size
        outs.append(scratch[io.offset:io.offset + n].tobytes())
    return res, outs
