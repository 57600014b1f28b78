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


def _avg_pool2d_loops(x, k, s, p, ceil, include_pad, divisor):
    """The C++ kernel's loops, window by window: a float32 sum of the window's in-bounds taps in row order from
    0, divided by the divisor, the padded window's size or the in-bounds count."""
    from firmware.executorch.kernels.portable.pooling import _pool_bounds

    n, c, h, w = x.shape
    oh, ow = _pool_bounds(h, k[0], s[0], p[0], ceil), _pool_bounds(w, k[1], s[1], p[1], ceil)
    out = np.zeros((n, c, oh, ow), np.float32)
    for b, ch, oy, ox in np.ndindex(n, c, oh, ow):
        y0, x0 = oy * s[0] - p[0], ox * s[1] - p[1]
        y1, x1 = min(y0 + k[0], h + p[0]), min(x0 + k[1], w + p[1])
        acc, count = np.float32(0), 0
        for iy in range(max(y0, 0), min(y1, h)):
            for ix in range(max(x0, 0), min(x1, w)):
                acc = np.float32(acc + x[b, ch, iy, ix])
                count += 1
        d = divisor if divisor else ((y1 - y0) * (x1 - x0) if include_pad else count)
        out[b, ch, oy, ox] = np.float32(acc / np.float32(d))
    return out


@pytest.mark.parametrize("k,s,p,ceil,include_pad,divisor", [
    ((3, 3), (2, 2), (1, 1), False, True, None), ((3, 2), (2, 3), (1, 0), True, False, None),
    ((2, 2), (1, 1), (0, 1), True, True, 3), ((5, 4), (5, 4), (0, 0), False, False, None),
    ((3, 3), (3, 3), (1, 1), True, False, None)])
def test_avg_pool2d_sums_every_window_as_the_loops_do(k, s, p, ceil, include_pad, divisor):
    rng = np.random.default_rng(sum(k) + sum(s))
    x = (rng.standard_normal((2, 3, 9, 8)) * 1e3).astype(np.float32)
    x[0, 1, 2, 3], x[1, 2, 0, 0] = np.nan, -np.inf
    want = _avg_pool2d_loops(x, k, s, p, ceil, include_pad, divisor)
    h = Harness()
    (got,) = run(h, "aten::avg_pool2d.out", [h.tensor(x), h.ints(list(k)), h.ints(list(s)), h.ints(list(p)), ceil,
                                             include_pad, divisor], [h.tensor(shape=want.shape)])
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
