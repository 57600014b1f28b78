"""CPU kernels: exact float32 formulas of the quantize/dequantize kernels; a missing kernel fails the load."""

import numpy as np

from firmware.executorch.kernels.quantized import dequantize_per_tensor, quantize_per_tensor
from firmware.executorch.method import RtTensor
from testutil import CORPUS, run_fvp


class _Bus:
    def __init__(self, size=4096):
        self.mem = np.zeros(size, np.uint8)
        self.work_done = []

    def view(self, addr, n):
        return self.mem[addr:addr + n]

    def work(self, kind, amount=1):
        self.work_done.append((kind, amount))


class _Ctx:
    def __init__(self, bus):
        self.bus = bus


def test_quantize_matches_the_cortex_m_formula():
    bus = _Bus()
    x = np.array([0.0, 1.0, -1.0, 0.5 / 255, 1.5 / 255, 2.5 / 255, 100.0, -100.0, 0.123456], np.float32)
    src = RtTensor(6, [x.size], None, 0)
    dst = RtTensor(1, [x.size], None, 256)
    src.array(bus)[:] = x
    scale, zp = 1 / 255, -128
    quantize_per_tensor(_Ctx(bus), [src, scale, zp, -128, 127, 1, dst, dst])
    inv = np.float32(1.0) / np.float32(scale)
    expect = np.clip(zp + np.rint(x * inv).astype(np.int64), -128, 127)  # half to even, float32 product
    assert dst.array(bus).tolist() == expect.tolist()
    assert ("kernel.quantize_per_tensor", x.size) in bus.work_done
    # exact halves round to even: with scale 0.5, x * (1/scale) = 0.5, 1.5, 2.5, -0.5, -1.5 -> 0, 2, 2, 0, -2
    halves = np.array([0.25, 0.75, 1.25, -0.25, -0.75], np.float32)
    src.array(bus)[:5] = halves
    src5, dst5 = RtTensor(6, [5], None, 0), RtTensor(1, [5], None, 256)
    quantize_per_tensor(_Ctx(bus), [src5, 0.5, 0, -128, 127, 1, dst5, dst5])
    assert dst5.array(bus).tolist() == [0, 2, 2, 0, -2]


def test_dequantize_matches_the_cortex_m_formula():
    bus = _Bus()
    q = np.array([-128, -1, 0, 1, 127], np.int8)
    src = RtTensor(1, [5], None, 0)
    dst = RtTensor(6, [5], None, 64)
    src.array(bus)[:] = q
    dequantize_per_tensor(_Ctx(bus), [src, 2 / 255, -128, -128, 127, 1, dst, dst])
    expect = (q.astype(np.int32) + 128).astype(np.float32) * np.float32(2 / 255)
    assert dst.array(bus).tobytes() == expect.tobytes()


def test_missing_kernel_fails_the_load_naming_the_operator(tmp_path):
    data = (CORPUS / "add_fp_cpu.pte").read_bytes()
    assert data.count(b"aten::add") == 1
    p = tmp_path / "renamed.pte"
    p.write_bytes(data.replace(b"aten::add", b"aten::adz"))
    rc, out, err = run_fvp("run", p)
    assert rc == 1
    assert [l for l in out.splitlines() if l.startswith("E ") and l.endswith("Missing operator: [0] aten::adz.out")]
    assert "Loading of method forward failed with status 0x14" in out
