"""The quantize/dequantize kernels (``kernels/quantized.py``): their exact float32 (and double) formulas."""

import numpy as np

from firmware.executorch.kernels.quantized import dequantize_per_tensor, quantize_per_tensor
from firmware.executorch.method import RtTensor
from kernels_common import Harness


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


def _quantize(x, scale, zp, qmin, qmax, dtype, op=quantize_per_tensor):
    bus = _Bus(size=64 + x.size * 8)
    src = RtTensor(6, [x.size], None, 0)
    dst = RtTensor(dtype, [x.size], None, x.size * 4)
    src.array(bus)[:] = x
    op(_Ctx(bus), [src, scale, zp, qmin, qmax, dtype, dst])
    return dst.array(bus).tolist()


def test_quantize_helium_blocks_round_the_exact_product_and_wrap_to_int16():
    """Whole blocks of 16 int8 elements take the MVE path of op_quantize_per_tensor.cpp: vfmaq(1.5 * 2**23, x, inv)
    rounds the exact product once (the scalar path rounds the float32 product first), and the int32 result is
    narrowed to int16 without saturation before the clamp; the tail (numel % 16) is scalar."""
    # -2.52625 / 0.0235: the float32 product is -107.5 exactly (ties to even: -108), the exact one -107.49999677
    scale, zp = 0.0235, 5
    x = np.zeros(17, np.float32)
    x[[0, 16]] = -2.52625
    x[1], x[17 - 2] = 40000 * scale, 40000 * scale     # 40000 + 5 -> int16 -25531 -> -128 (tail: 127)
    x[2] = 1e30                                          # bits(inf-free huge float) - magic: garbage, clamped
    got = _quantize(x, scale, zp, -128, 127, 1)
    assert got[0] == -102 and got[16] == -103            # vector block / scalar tail
    assert got[1] == -128 and got[15] == -128            # both in the vector block
    x17 = np.full(17, 40000 * scale, np.float32)
    assert _quantize(x17, scale, zp, -128, 127, 1)[16] == 127   # scalar tail saturates
    # int16: blocks of 8, clamped at int32 width (no wrap); the same FMA rounding
    x9 = np.full(9, -2.52625, np.float32)
    x9[1] = 40000 * scale
    got16 = _quantize(x9, scale, zp, -32768, 32767, 2)
    assert got16[0] == -102 and got16[8] == -103 and got16[1] == 32767


def test_quantize_scalar_tail_wraps_the_int32_add_after_the_saturating_convert():
    # (int32)nearbyint(3e9) saturates to 2**31 - 1; + zp (3) wraps negative -> clamp to qmin
    assert _quantize(np.array([3e9, -3e9], np.float32), 1.0, 3, -128, 127, 1) == [-128, -128]


def test_portable_quantize_to_int32_clamps_in_int64():
    """quantized_decomposed::quantize_per_tensor.out (ExecuTorch's int32 inputs, scale 1): (int64)(zp + nearbyint)
    then the clamp: 2**31 (the float nearest 2147483600) -> 2**31 - 1, not the largest float below 2**31."""
    from firmware.executorch.kernels.quantized import quantize_per_tensor_portable
    x = np.array([2147483600.0, -3e9, 1234.5, -7.0], np.float32)
    assert _quantize(x, 1.0, 0, -2 ** 31, 2 ** 31 - 1, 3, quantize_per_tensor_portable) == [
        2 ** 31 - 1, -2 ** 31, 1234, -7]


def test_dequantize_matches_the_cortex_m_formula():
    bus = _Bus()
    q = np.array([-128, -1, 0, 1, 127], np.int8)
    src = RtTensor(1, [5], None, 0)
    dst = RtTensor(6, [5], None, 64)
    src.array(bus)[:] = q
    dequantize_per_tensor(_Ctx(bus), [src, 2 / 255, -128, -128, 127, 1, dst, dst])
    expect = (q.astype(np.int32) + 128).astype(np.float32) * np.float32(2 / 255)
    assert dst.array(bus).tobytes() == expect.tobytes()


def test_dequantize_per_channel_in_double():
    """``(q - zp[c]) * scale[c]`` along ``axis``, computed in double and narrowed to float (op_dequantize.cpp)."""
    h = Harness()
    q = np.array([[[-127, 5], [3, 127]], [[0, -1], [64, 2]]], np.int8)  # (2, 2, 2), axis 1
    scales = np.array([0.1, 0.003], np.float32)
    zps = np.array([0, -3], np.int64)
    out = h.tensor(shape=q.shape)
    h.call("quantized_decomposed::dequantize_per_channel.out",
           [h.tensor(q), h.tensor(scales), h.tensor(zps), 1, -127, 127, 1, None, out, out])
    exp = (q.astype(np.float64) - zps.reshape(1, 2, 1)) * scales.astype(np.float64).reshape(1, 2, 1)
    exp = exp.astype(np.float32)
    np.testing.assert_array_equal(out.array(h.bus), exp)
