"""The OFM zero point of 32-bit outputs (issue 31 item 2): the Ethos-U55/U65 do not add OFM_ZERO_POINT to a 32-bit
OFM without an activation function, and do add it where a table lookup forms its 8-bit index from the value.

Streams made with Vela's public API in the shapes Vela's older core lowers int8 SOFTMAX to (``softmax.py``
``get_graph_8bit``: the exp pass SUB int8 -> int32 with TABLE_0 and OFM zero point 127, then 32-bit REDUCE_SUM,
SUB and SHL passes whose OFM quantization carries the softmax input's zero point), run through both engines and
compared with the values the passes mean (TFLite Micro's softmax arithmetic, which the real model's test checks
end to end: ``tests/firmware/tflm/test_real_models.py``, ``micro_speech_u55-128-legacy``)."""

import copy

import numpy as np
import pytest
from ethosu.vela.api import (NpuActivation, NpuActivationOp, NpuAddressRange, NpuDmaOperation, NpuElementWiseOp,
                             NpuElementWiseOperation, NpuKernel, NpuPadding, NpuPoolingOp, NpuPoolingOperation,
                             NpuQuantization, NpuRoundingMode)

from fvp.machine.npu.disasm import summarize_operations
from fvp.machine.npu.operations import iter_operations

from .vela_ops import ACCELERATORS, Alloc, Case, build_stream, pick_block, put, run_case, tensor

ARCH = "ethos-u55-128"
ENGINES = ["fast", "reference"]


def _operations(words):
    return [op for _, op in iter_operations(words, ARCH) if op.is_kernel_op]


def _elementwise(kind, ifm, ifm2, ofm, rng):
    op = NpuElementWiseOperation(kind)
    op.ifm, op.ifm2, op.ofm = ifm.fm, ifm2.fm, ofm.fm
    op.rounding_mode = NpuRoundingMode.TFL
    op.block_config = pick_block(op, ACCELERATORS[ARCH], rng)
    return op


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("zp", [14, -128])
def test_32bit_elementwise_and_reduce_sum_do_not_add_the_ofm_zero_point(engine, zp):
    rng = np.random.default_rng(3)
    al = Alloc()
    a = tensor(al, "int32", (1, 4, 8), zp=0)
    b = tensor(al, "int32", (1, 4, 8), zp=0)
    diff = tensor(al, "int32", (1, 4, 8), zp=zp)  # as the older core's no_scale_quant: the input's zero point
    total = tensor(al, "int32", (1, 4, 1), zp=zp)
    case = Case(ops=[])
    x = rng.integers(-(1 << 20), 1 << 20, (1, 4, 8))
    y = rng.integers(-(1 << 20), 1 << 20, (1, 4, 8))
    put(case, a, x)
    put(case, b, y)
    sub = _elementwise(NpuElementWiseOp.SUB, a, b, diff, rng)
    pool = NpuPoolingOperation(NpuPoolingOp.REDUCE_SUM)
    pool.ifm, pool.ofm = copy.copy(diff.fm), total.fm
    pool.ifm.quantization = NpuQuantization(scale_f32=None, zero_point=0)  # Vela writes 0 for every int32 IFM
    pool.kernel = NpuKernel(1, 1)
    pool.padding = NpuPadding(0, 0, 0, 0)
    pool.rounding_mode = NpuRoundingMode.NATURAL
    pool.block_config = pick_block(pool, ACCELERATORS[ARCH], rng)
    case.ops = [sub, pool]
    case.out = total
    words = build_stream(case, ARCH)
    ops = _operations(words)
    assert [op.ofm.zero_point for op in ops] == [zp, zp]  # the registers hold it ...
    assert [op.output_zero_point for op in ops] == [0, 0]  # ... the output stage leaves it out
    assert all("(zp not added)" in line for line in summarize_operations(words, ARCH) if " ofm " in line)
    res, out, _ = run_case(case, ARCH, engine=engine)
    assert res.ok
    assert np.array_equal(out, (x - y).sum(axis=2, keepdims=True))


@pytest.mark.parametrize("engine", ENGINES)
def test_32bit_table_lookup_adds_the_zero_point_to_form_the_index(engine):
    """The exp pass: SUB int8 - int8 -> int32 with TABLE_0 (FORCE_INT8, MIN/MAX [-128, 127]) and OFM zero point
    127: entry ``x - max + 127 + 128`` of the 256 int32 entries is stored as it is."""
    rng = np.random.default_rng(4)
    al = Alloc()
    case = Case(ops=[])
    ifm = tensor(al, "int8", (2, 3, 5), zp=14)
    mx = tensor(al, "int8", (2, 3, 1), zp=14)
    ofm = tensor(al, "int32", (2, 3, 5), zp=127)
    x = rng.integers(-128, 128, (2, 3, 5))
    m = x.max(axis=2, keepdims=True)
    put(case, ifm, x)
    put(case, mx, m)
    table = rng.integers(-(1 << 31), 1 << 31, 256, dtype=np.int64).astype("<i4")
    case.region0[0x40:0x40 + 1024] = table.tobytes()
    from ethosu.vela.architecture_features import Accelerator, create_default_arch

    va = create_default_arch(Accelerator.from_npu_accelerator(ACCELERATORS[ARCH]))
    lut_dma = NpuDmaOperation(NpuAddressRange(0, 0x40, 1024), NpuAddressRange((1 << 8) | 3, va.shram_lut_address,
                                                                              1024))
    sub = _elementwise(NpuElementWiseOp.SUB, ifm, mx, ofm, rng)
    sub.activation = NpuActivation(NpuActivationOp.TABLE_LOOKUP)
    sub.activation.lookup_table_index = 0
    case.ops = [lut_dma, sub]
    case.out = ofm
    words = build_stream(case, ARCH)
    (op,) = _operations(words)
    assert op.ofm.zero_point == op.output_zero_point == 127
    assert (op.ofm_scale.multiplier, op.ofm_scale.shift, op.opa_scale.multiplier, op.opb_scale) == (1, 0, 1, 1)
    res, out, _ = run_case(case, ARCH, engine=engine)
    assert res.ok
    idx = np.clip(x - m + 127, -128, 127) + 128
    assert np.array_equal(out, table.astype(np.int64)[idx])
