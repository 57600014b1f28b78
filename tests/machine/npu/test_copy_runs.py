"""Runs of copying operations executed as one copy (npu/copy_runs.py) against running them one by one."""

import dataclasses

import numpy as np
import pytest

from fvp.errors import NpuFault
from fvp.machine.npu import bounds, copy_runs, execute, featuremap as fmap
from fvp.machine.npu.descriptors import Activation, FeatureMap, Kernel, NpuOperation, Scale
from fvp.machine.npu.engines import fast


class Memory:
    """Flat memory for the NPU: ``view`` faults outside it, as the device's does."""

    def __init__(self, size):
        self.mem = np.zeros(size, np.uint8)

    def view(self, address, length, write=False):
        if address < 0 or address + length > self.mem.size:
            raise NpuFault("bus_error", f"0x{address:x}+{length} outside memory", address=address)
        return self.mem[address:address + length]


def _ctx(memory, bases=(0,) * 8):
    from fvp.machine.npu.arch import get_arch

    return execute._Ctx(get_arch("ethos-u55-128"), list(bases), memory, np.zeros(4096, np.uint8), fast, None)


def _fm(base, h, w, sy, sx, region=1, bits=8):
    return FeatureMap(name="fm", region=region, bases=(base, 0, 0, 0), height=h, width=w, depth=1, height0=h,
                      height1=h, width0=w, stride_x=sx, stride_y=sy, stride_c=1, bits=bits, signed=True,
                      format="NHWC", zero_point=0)


def _copy(ifm, ofm):
    """Vela's transposition pool: AVERAGE 1x1, OFM_SCALE (2**31 + 1, 31), DBL."""
    ofm = dataclasses.replace(ofm, name="ofm")
    lo = -(1 << (ifm.bits - 1))
    return NpuOperation(kind="POOL", offset=0, param=0, sub_op="AVERAGE", ifm=dataclasses.replace(ifm, name="ifm"),
                        ofm=ofm, kernel=Kernel(1, 1, 1, 1, 1, 1, 0, 0, 0, 0, "NONE", False, "D8X8"),
                        ofm_block=(2, 8, 8), ofm_scale_mode="GLOBAL", ofm_scale=Scale(0x80000001, 31),
                        ofm_round_mode=0, activation=Activation(0, 0, lo, -lo - 1))


def _one_by_one(ctx, ops):
    for op in ops:
        execute._run_kernel_op(ctx, op)


def _both(ops, size=4096, bases=(0,) * 8, seed=0):
    """Memory after the operations one by one, and after the run as one copy (or None if it declined)."""
    init = np.random.default_rng(seed).integers(0, 256, size).astype(np.uint8)
    a, b = Memory(size), Memory(size)
    a.mem[:], b.mem[:] = init, init
    ca, cb = _ctx(a, bases), _ctx(b, bases)
    _one_by_one(ca, ops)  # also what a replay needs: the operations' own checks passed once
    for op in ops:
        bounds.check_kernel_op(cb, op)
    assert all(fast.is_copy(op) for op in ops)
    found = copy_runs.runs(cb, ops)
    assert list(found) == [0] and found[0][0] == len(ops)
    records = copy_runs.run(cb, ops, found[0])
    return a.mem, (b.mem if records is not None else None), records


def test_a_transposition_whose_later_reads_see_earlier_writes():
    # 6 copies of a 4x8 slab in one region: op k reads 4 rows of 8 bytes from 8k (stride 16) and writes them as
    # columns from 40 + 4k (stride 24); the later ones read bytes the earlier ones wrote (as ds_cnn's do)
    ops = [_copy(_fm(8 * k, 4, 8, 16, 1), _fm(40 + 4 * k, 4, 8, 1, 24)) for k in range(6)]
    want, got, records = _both(ops)
    src = {int(b) for op in ops for b in fmap.element_offsets(op.ifm, 4, 8, 1).ravel()}
    dst = {int(b) for op in ops for b in fmap.element_offsets(op.ofm, 4, 8, 1).ravel()}
    assert src & dst  # the case in question
    assert got is not None and np.array_equal(got, want)
    assert [(r.bytes_read, r.bytes_written, r.region_read, r.region_written) for r in records] == [
        ({"ifm": 32}, {"ofm": 32}, {1: 32}, {1: 32})] * 6


def test_16_bit_copies_and_two_regions():
    ops = [_copy(_fm(64 * k, 4, 8, 16, 2, region=1, bits=16), _fm(8 * k, 4, 8, 2, 24, region=2, bits=16))
           for k in range(3)]
    bases = (0, 0, 2048, 0, 0, 0, 0, 0)
    want, got, _ = _both(ops, bases=bases)
    assert got is not None and np.array_equal(got, want)
    # the same run with region 2 placed over what region 1 reads: one by one, never as one copy
    want, got, _ = _both(ops, bases=(0, 0, 0, 0, 0, 0, 0, 0))
    assert got is None


def test_a_byte_written_twice_or_an_area_out_of_memory_runs_one_by_one():
    twice = [_copy(_fm(0, 2, 4, 8, 1), _fm(100, 2, 4, 8, 1)), _copy(_fm(40, 2, 4, 8, 1), _fm(101, 2, 4, 8, 1))]
    want, got, _ = _both(twice)
    assert got is None
    ops = [_copy(_fm(0, 2, 4, 8, 1), _fm(100 + 40 * k, 2, 4, 8, 1)) for k in range(2)]
    m = Memory(512)
    ctx = _ctx(m)
    _one_by_one(ctx, ops)
    entry = copy_runs.runs(ctx, ops)[0]
    assert copy_runs.run(ctx, ops, entry) is not None
    ctx.bases[1] = 400  # the OFMs now run past the memory: the run declines, the operations fault one by one
    assert copy_runs.run(ctx, ops, entry) is None
    with pytest.raises(NpuFault):
        _one_by_one(ctx, ops)


@pytest.mark.parametrize("program", ["ds_cnn_u55-128.bpte", "resnet8_u55-128.bpte"])
def test_corpus_streams_are_the_same_with_and_without_the_runs(program, monkeypatch):
    import fvp
    from testutil import CORPUS

    rng = np.random.default_rng(7)
    with fvp.Session(CORPUS / program) as s:
        xs = [rng.standard_normal(s.inputs[0].shape).astype(np.float32) for _ in range(3)]
        s.run(xs[0])  # the stream decoded
        batched = [s.run(x) for x in xs]
        monkeypatch.setattr(copy_runs, "runs", lambda ctx, ops: {})
        alone = [s.run(x) for x in xs]
    for a, b in zip(batched, alone):
        assert a.raw_outputs == b.raw_outputs and (a.npu_cycles, a.pmu) == (b.npu_cycles, b.pmu)
        ra = [(r.op, r.bytes_read, r.bytes_written, r.region_read, r.region_written) for st in a.npu_streams
              for r in st.operations]
        rb = [(r.op, r.bytes_read, r.bytes_written, r.region_read, r.region_written) for st in b.npu_streams
              for r in st.operations]
        assert ra == rb
