"""The matrix product and distance kernels (``kernels/portable/linalg.py``) against PyTorch's outputs and numpy."""

import math

import numpy as np
import pytest

from kernels_common import Harness, close, f32, fails, nn_ref, run


def test_bmm_and_linear():
    h = Harness()
    out = h.tensor(shape=nn_ref("bmm").shape)
    h.call("aten::bmm.out", [h.tensor(nn_ref("bmm", 0)), h.tensor(nn_ref("bmm", 1)), out])
    close(out.array(h.bus), nn_ref("bmm"))
    out = h.tensor(shape=nn_ref("linear").shape)
    h.call("aten::linear.out", [h.tensor(nn_ref("linear", 0)), h.tensor(nn_ref("linear", 1)),
                                h.tensor(nn_ref("linear", 2)), out])
    close(out.array(h.bus), nn_ref("linear"))


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, math.inf])
def test_cdist_and_pdist(p):
    h = Harness()
    a, b = f32(2, 4, 3), f32(1, 5, 3)
    a[0, 0, 0] = b[0, 0, 0]   # an exact zero component for p = 0

    def norm(d):
        d = np.abs(d).astype(np.float64)
        if p == 0:
            return (d != 0).sum(-1)
        if p == math.inf:
            return d.max(-1)
        return (d ** p).sum(-1) ** (1 / p)

    (o,) = run(h, "aten::_cdist_forward.out", [h.tensor(a), h.tensor(b), p, None], [h.tensor(shape=(2, 4, 5))])
    np.testing.assert_allclose(o, norm(a[:, :, None, :] - b[:, None, :, :]), rtol=1e-5, atol=1e-6)
    x = a[0]
    i, j = np.triu_indices(4, 1)
    (o,) = run(h, "aten::_pdist_forward.out", [h.tensor(x), p], [h.tensor(shape=(6,))])
    np.testing.assert_allclose(o, norm(x[i] - x[j]), rtol=1e-5, atol=1e-6)
    if p == 2.0:
        fails(h, "aten::_cdist_forward.out", [h.tensor(a), h.tensor(b), -1.0, None], [h.tensor(shape=(2, 4, 5))])
        fails(h, "aten::_cdist_forward.out", [h.tensor(a), h.tensor(b), 2.0, 3], [h.tensor(shape=(2, 4, 5))])
        fails(h, "aten::_pdist_forward.out", [h.tensor(a), 2.0], [h.tensor(shape=(6,))])
