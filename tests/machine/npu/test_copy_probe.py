"""The fast engine's test of whether a 1x1 pool copies (engines/fast/copies.py) on operations smaller than the
value range of their IFM type: a 16-bit copy of a few elements (the int16 programs' transpositions and reshapes)
is tried with every value in one call, in more rows of the operation's own width and depth, and decides as the
operation's own path, value by value, would: a copy is a copy for every value, and one value the operation
changes (the edge of a clamp) makes it no copy."""

import numpy as np
import pytest

from fvp.machine.npu.descriptors import Activation, FeatureMap, Kernel, NpuOperation, Scale
from fvp.machine.npu.engines import fast, reference as ref
from fvp.machine.npu.engines.fast import copies, paths

LO, HI = -(1 << 15), (1 << 15) - 1


@pytest.fixture(autouse=True)
def _numpy_paths(monkeypatch):
    """The numpy paths, whatever ran before in this process (the kernels' paths have their own tests)."""
    monkeypatch.setattr(paths, "_numpy_large_elements", [0])


def _fm(name, h, w, c, zp=0):
    return FeatureMap(name=name, region=1, bases=(0, 0, 0, 0), height=h, width=w, depth=c, height0=h, height1=h,
                      width0=w, stride_x=0, stride_y=0, stride_c=0, bits=16, signed=True, format="NHWC",
                      zero_point=zp)


def _pool(shape, sub="AVERAGE", scale=Scale(1, 0), lo=LO, hi=HI, zp=(0, 0)):
    h, w, c = shape
    return NpuOperation(kind="POOL", offset=0, param=0, sub_op=sub, ifm=_fm("ifm", h, w, c, zp[0]),
                        ofm=_fm("ofm", h, w, c, zp[1]), kernel=Kernel(1, 1, 1, 1, 1, 1, 0, 0, 0, 0, "NONE", False,
                                                                      "D8X8"),
                        ofm_block=(1, 1, 8), ofm_scale=scale, activation=Activation(0, 0, lo, hi))


class _Counting:
    def __init__(self):
        self.calls = 0

    def __call__(self, op, x, *args):
        self.calls += 1
        return fast._pool(op, x, *args)


def _own_shape_values(op, extra):
    """The extremes of the type and ``extra`` random values, in the operation's own shape."""
    i = op.ifm
    n = i.height * i.width * i.depth
    vals = np.concatenate([np.array([LO, LO + 1, -1, 0, 1, HI - 1, HI]), extra]).astype(np.int32)
    vals = np.resize(vals, -(-vals.size // n) * n)
    return [vals[k:k + n].reshape(i.height, i.width, i.depth) for k in range(0, vals.size, n)]


@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 1, 3), (3, 7, 5), (2, 1, 40)])
def test_a_small_16_bit_copy_is_found_in_one_call(shape):
    rng = np.random.default_rng(sum(shape))
    for op in (_pool(shape), _pool(shape, sub="MAX"), _pool(shape, scale=Scale(0x80000001, 31))):
        run = _Counting()
        assert copies.copies(op, run) and run.calls == 1, op
        for x in _own_shape_values(op, rng.integers(LO, HI + 1, 200)):
            got = fast.run_kernel_op(op, x)
            assert got is x or np.array_equal(got, x)
            assert np.array_equal(ref.run_kernel_op(op, x), x)


@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 1, 3), (3, 7, 5)])
def test_one_value_changed_makes_a_small_16_bit_pool_no_copy(shape):
    cases = [
        (_pool(shape, hi=HI - 1), HI),  # the clamp cuts the largest value only
        (_pool(shape, lo=LO + 1), LO),  # ... the smallest only
        (_pool(shape, zp=(1, 0)), 0),  # the zero points differ: every value moves
        (_pool(shape, scale=Scale(0x40000000, 31)), 2),  # halves
    ]
    for op, changed in cases:
        assert not copies.copies(op, _Counting()), op
        x = np.full((op.ifm.height, op.ifm.width, op.ifm.depth), changed, np.int32)
        got = fast.run_kernel_op(op, x)
        assert not np.array_equal(got, x) and np.array_equal(got, ref.run_kernel_op(op, x)), op
