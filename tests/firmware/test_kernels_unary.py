"""The elementwise unary math kernels (``kernels/portable/unary.py``) against PyTorch's outputs and numpy."""

import numpy as np
import pytest

from kernels_common import Harness, check_elementwise_float, f32, fails, run


@pytest.mark.parametrize("name,op,extra", [("reciprocal", "aten::reciprocal.out", []), ("log", "aten::log.out", [])])
def test_elementwise_float(name, op, extra):
    check_elementwise_float(name, op, extra)


@pytest.mark.parametrize("op,fn,lo,hi", [
    ("aten::acosh.out", np.arccosh, 1.0, 4.0), ("aten::asinh.out", np.arcsinh, -3.0, 3.0),
    ("aten::atanh.out", np.arctanh, -0.99, 0.99),
])
def test_inverse_hyperbolic(op, fn, lo, hi):
    h = Harness()
    x = f32(3, 5, lo=lo, hi=hi)
    (got,) = run(h, op, [h.tensor(x)], [h.tensor(shape=x.shape)])
    np.testing.assert_allclose(got, fn(x.astype(np.float64)), rtol=2e-6, atol=2e-6)
    # integer input, float out
    xi = np.array([1, 2, 3], np.int32)
    if op != "aten::atanh.out":
        (got,) = run(h, op, [h.tensor(xi)], [h.tensor(shape=(3,))])
        np.testing.assert_allclose(got, fn(xi.astype(np.float64)), rtol=1e-6)
    fails(h, op, [h.tensor(x)], [h.tensor(shape=x.shape, dtype=np.int32)])


def test_logit_with_and_without_eps():
    h = Harness()
    x = np.array([0.0, 0.001, 0.25, 0.5, 0.9, 1.0, np.nan], np.float32)
    (got,) = run(h, "aten::logit.out", [h.tensor(x), None], [h.tensor(shape=x.shape)])
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(got, np.log(x / (1 - x)), rtol=1e-6)
    eps = 0.01
    (got,) = run(h, "aten::logit.out", [h.tensor(x), eps], [h.tensor(shape=x.shape)])
    xc = np.where(x < eps, np.float32(eps), np.where(x > 1 - eps, np.float32(1 - eps), x)).astype(np.float32)
    exp = np.log(xc / (1 - xc))
    np.testing.assert_allclose(got, exp, rtol=1e-6)
    assert np.isnan(got[-1])
    fails(h, "aten::logit.out", [h.tensor(x), None], [h.tensor(shape=x.shape, dtype=np.int64)])
