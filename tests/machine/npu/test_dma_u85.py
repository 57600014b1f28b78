"""Ethos-U85 DMA: 2-D/3-D copies with per-side strides and the 2-D gather (an int32 row number per row).

The gather runs in a real program: ``tests/data/u85/gatherish_u85-256.bpte`` (``gatherish.py`` beside it: an
embedding lookup and a linear layer, ExecuTorch 1.5.1 + Vela 5.1 for ethos-u85-256; the oracle builder cannot
evaluate its CPU dtype conversion, so the check is the program's bundled PyTorch outputs)."""

from __future__ import annotations

import numpy as np
import pytest

from fvp.errors import NpuFault
from fvp.machine.npu.descriptors import Dma, NpuOperation
from fvp.machine.npu.execute import _Ctx
from fvp.machine.npu.arch import get_arch
from fvp.machine.npu.operations import iter_operations
from machine.npu.helpers import FakeMemory, extract_vela_blobs
from testutil import DATA, run_fvp

PROGRAM = DATA / "u85" / "gatherish_u85-256.bpte"


def _ctx(mem_size=4096):
    arch = get_arch("ethos-u85-256")
    mem = FakeMemory()
    buf = mem.add(0x1000_0000, np.arange(mem_size, dtype=np.int64).astype(np.uint8))
    out = mem.add_zeros(0x2000_0000, mem_size)
    idx = mem.add(0x3000_0000, np.zeros(64, np.uint8))
    ctx = _Ctx(arch, [0x1000_0000, 0x2000_0000, 0x3000_0000], mem, np.zeros(2048, np.uint8), None, None)
    return ctx, buf, out, idx


def _dma(**kw):
    base = dict(src_region=0, src_internal=False, src_address=0, dst_region=1, dst_internal=False, dst_address=0,
                length=4, src_stride_mode=1, dst_stride_mode=1, size0=3, size1=1, skip0=0, skip1=0)
    base.update(kw)
    return NpuOperation(kind="DMA", offset=0, param=0, dma=Dma(**base))


def _run_dma(ctx, op):
    return ctx.family.run_dma(ctx, op)  # the U85's DMA


def test_2d_copy_with_strides():
    ctx, buf, out, _ = _ctx()
    _run_dma(ctx, _dma(src_stride0=10, dst_stride0=4))
    assert out[:12].tolist() == [0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23]


def test_3d_copy_with_plane_strides():
    ctx, buf, out, _ = _ctx()
    _run_dma(ctx, _dma(src_stride_mode=2, dst_stride_mode=2, size0=2, size1=2, length=2, src_stride0=4,
                       src_stride1=100, dst_stride0=2, dst_stride1=4))
    assert out[:8].tolist() == [0, 1, 4, 5, 100, 101, 104, 105]


def test_gather_and_scatter_and_index_limit():
    ctx, buf, out, idx = _ctx()
    idx[:12] = np.array([7, 0, 2], "<i4").view(np.uint8)
    _run_dma(ctx, _dma(src_stride0=16, dst_stride0=4, indexed="src", idx_region=2, idx_max=9))
    assert out[:12].tolist() == [112, 113, 114, 115, 0, 1, 2, 3, 32, 33, 34, 35]
    out[:] = 0
    _run_dma(ctx, _dma(src_stride0=4, dst_stride0=8, indexed="dst", idx_region=2, idx_max=9))
    assert out[56:60].tolist() == [0, 1, 2, 3] and out[16:20].tolist() == [8, 9, 10, 11]
    with pytest.raises(NpuFault, match="outside 0..5"):
        _run_dma(ctx, _dma(src_stride0=16, dst_stride0=4, indexed="src", idx_region=2, idx_max=5))


def test_3d_gather_reads_int64_low_words_and_scatter_with_plane_strides():
    """Vela's gather of int64 indices (Regor's lowering): 3-D, one row per plane, IDX_SKIP1 = 4 skips each
    index's high word; the source plane stride 0 (the index picks the row), the destination's plane stride the
    row stride. (The 3-D gathers of real programs, IDX_SKIP1 = 0: ``test_u85_programs.py``.)"""
    ctx, buf, out, idx = _ctx()
    idx[:32] = np.array([7, 0, 2, 9], "<i8").view(np.uint8)
    _run_dma(ctx, _dma(src_stride_mode=2, dst_stride_mode=2, size0=1, size1=4, length=4, src_stride0=16,
                       src_stride1=0, dst_stride0=0, dst_stride1=4, indexed="src", idx_region=2, idx_max=9,
                       idx_skip1=4))
    assert out[:16].tolist() == [112, 113, 114, 115, 0, 1, 2, 3, 32, 33, 34, 35, 144, 145, 146, 147]
    # SIZE0 rows per plane, the index table one int32 after another (IDX_SKIP1 = 0): index_select's 3-D gather
    out[:] = 0
    idx[:24] = np.array([5, 0, 5, 1, 1, 4], "<i4").view(np.uint8)
    _run_dma(ctx, _dma(src_stride_mode=2, dst_stride_mode=2, size0=3, size1=2, length=2, src_stride0=2,
                       src_stride1=100, dst_stride0=2, dst_stride1=6, indexed="src", idx_region=2, idx_max=5))
    assert out[:12].tolist() == [10, 11, 0, 1, 10, 11, 102, 103, 102, 103, 108, 109]
    # the scatter: the index names the destination row of each (plane, row)
    out[:] = 0
    idx[:16] = np.array([3, 1], "<i8").view(np.uint8)
    _run_dma(ctx, _dma(src_stride_mode=2, dst_stride_mode=2, size0=1, size1=2, length=2, src_stride0=0,
                       src_stride1=10, dst_stride0=4, dst_stride1=0, indexed="dst", idx_region=2, idx_max=3,
                       idx_skip1=4))
    assert out[12:14].tolist() == [0, 1] and out[4:6].tolist() == [10, 11] and out[:4].tolist() == [0] * 4
    with pytest.raises(NpuFault, match="outside 0..8"):  # the limit holds for every plane's index
        idx[:32] = np.array([7, 0, 2, 9], "<i8").view(np.uint8)
        _run_dma(ctx, _dma(src_stride_mode=2, dst_stride_mode=2, size0=1, size1=4, length=4, src_stride0=16,
                           dst_stride1=4, indexed="src", idx_region=2, idx_max=8, idx_skip1=4))


def test_gather_program_passes_its_bundled_check():
    blob = extract_vela_blobs(PROGRAM.read_bytes())[0]
    dmas = [op.dma for _, op in iter_operations(blob.stream, "ethos-u85-256") if op.kind == "DMA"]
    assert any(d.indexed == "src" for d in dmas)
    rc, out, err = run_fvp("run", PROGRAM)
    assert rc == 0 and "Test_result: PASS" in out, out[-2000:] + err
    assert "max_absolute_error:  0.000000" in out
