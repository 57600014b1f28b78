"""The pooling kernels (``kernels/portable/pooling.py``) against PyTorch's outputs and numpy."""

import numpy as np
import pytest

from kernels_common import Harness, NN_REFS, f32, fails, nn_ref, run


@pytest.mark.parametrize("name,k,s,p,ceil", [("max_pool2d", (3, 3), (2, 2), (1, 1), False),
                                             ("max_pool2d_ceil", (2, 3), (2, 2), (0, 0), True)])
def test_max_pool2d_with_indices(name, k, s, p, ceil):
    h = Harness()
    want, want_idx = nn_ref(name), NN_REFS[f"{name}_idx"]
    out, idx = h.tensor(shape=want.shape), h.tensor(shape=want.shape, dtype=np.int64)
    h.call("aten::max_pool2d_with_indices.out", [h.tensor(nn_ref(name, 0)), h.ints(k), h.ints(s), h.ints(p),
                                                 h.ints([1, 1]), ceil, out, idx])
    np.testing.assert_array_equal(out.array(h.bus), want)
    np.testing.assert_array_equal(idx.array(h.bus), want_idx)


def test_adaptive_avg_pool2d():
    h = Harness()
    x = f32(2, 3, 7, 5)
    (o,) = run(h, "aten::_adaptive_avg_pool2d.out", [h.tensor(x), h.ints([3, 2])], [h.tensor(shape=(2, 3, 3, 2))])
    exp = np.zeros((2, 3, 3, 2), np.float32)
    for oy in range(3):
        y0, y1 = (oy * 7) // 3, -((-(oy + 1) * 7) // 3)
        for ox in range(2):
            x0, x1 = (ox * 5) // 2, -((-(ox + 1) * 5) // 2)
            exp[:, :, oy, ox] = x[:, :, y0:y1, x0:x1].astype(np.float64).mean(axis=(2, 3))
    np.testing.assert_allclose(o, exp, rtol=1e-5, atol=1e-6)
    fails(h, "aten::_adaptive_avg_pool2d.out", [h.tensor(x), h.ints([0, 2])], [h.tensor(shape=(2, 3, 0, 2))])
    fails(h, "aten::_adaptive_avg_pool2d.out", [h.tensor(x.astype(np.int32)), h.ints([3, 2])],
          [h.tensor(shape=(2, 3, 3, 2), dtype=np.int32)])
