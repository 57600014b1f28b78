"""What the kernel tests (``test_kernels_*.py``, one per module of ``firmware/executorch/kernels``) share.

Kernels are called the way ``Method.execute`` calls them: the instruction's argument values, the schema
arguments first, then the out tensors (``.out`` variants list them twice: as the kwargs and as the returned
values). References computed by PyTorch in the toolchain venv: ``tests/data/kernels_ext/refs.npz`` (``ref`` /
``want``) and ``tests/data/kernels_nn/refs.npz`` (``nn_ref``), each with its ``make_refs.py``; the other tests
compare with numpy on random inputs (``f32``).
"""

import numpy as np
import pytest

from firmware.executorch.error import Error, RuntimeFailure
from firmware.executorch.kernels import KERNELS
from testutil import DATA, KernelHarness

REFS = np.load(DATA / "kernels_ext" / "refs.npz")
NN_REFS = np.load(DATA / "kernels_nn" / "refs.npz")
RNG = np.random.default_rng(7)


class Harness(KernelHarness):
    def like(self, want):
        return self.tensor(shape=want.shape, dtype=want.dtype)

    def call(self, op, args):
        return KERNELS[op](self.ctx, args)


def ref(name, i):
    return REFS[f"{name}_in{i}"]


def want(name, j=0):
    return REFS[f"{name}_out{j}"]


def nn_ref(name, i=None):
    return NN_REFS[f"{name}_in{i}"] if i is not None else NN_REFS[f"{name}_out"]


def close(got, exp, tol=1e-5):
    np.testing.assert_allclose(got, exp, rtol=tol, atol=tol)


def check_elementwise_float(name, op, extra):
    """``op(input, *extra)`` against the PyTorch reference ``name``."""
    h = Harness()
    w = want(name)
    out = h.like(w)
    h.call(op, [h.tensor(ref(name, 0))] + extra + [out, out])
    close(out.array(h.bus), w)


def f32(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape).astype(np.float32)


def run(h, op, args, outs):
    h.call(op, list(args) + list(outs) + list(outs))
    return [o.array(h.bus).copy() for o in outs]


def fails(h, op, args, outs):
    with pytest.raises(RuntimeFailure) as e:
        h.call(op, list(args) + list(outs) + list(outs))
    assert e.value.code == Error.InvalidArgument


def tlist(h, tensors):
    return h.tlist(tensors, "OptionalTensorList")
