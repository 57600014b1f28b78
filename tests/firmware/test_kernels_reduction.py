"""The reduction and sorting kernels (``kernels/portable/reduction.py``) against PyTorch's outputs and numpy."""

import numpy as np

from kernels_common import Harness, close, f32, fails, ref, run, want


def test_reductions_and_sorting():
    h = Harness()
    x = h.tensor(ref("cumsum", 0))
    out = h.like(want("cumsum"))
    h.call("aten::cumsum.out", [x, 1, None, out, out])
    close(out.array(h.bus), want("cumsum"))
    out = h.like(want("argmax"))
    h.call("aten::argmax.out", [x, 2, False, out, out])
    np.testing.assert_array_equal(out.array(h.bus), want("argmax"))
    out = h.like(want("amax"))
    h.call("aten::amax.out", [x, h.ints([0, 2]), True, out, out])
    np.testing.assert_array_equal(out.array(h.bus), want("amax"))
    out = h.like(want("var"))
    h.call("aten::var.correction_out", [x, h.ints([1]), 1, True, out, out])
    close(out.array(h.bus), want("var"))
    v, i = h.like(want("topk", 0)), h.like(want("topk", 1))
    h.call("aten::topk.values", [x, 3, 1, True, True, v, i, v, i])
    np.testing.assert_array_equal(v.array(h.bus), want("topk", 0))
    np.testing.assert_array_equal(i.array(h.bus), want("topk", 1))
    v, i = h.like(want("sort", 0)), h.like(want("sort", 1))
    h.call("aten::sort.values", [x, 2, True, v, i, v, i])
    np.testing.assert_array_equal(v.array(h.bus), want("sort", 0))
    np.testing.assert_array_equal(i.array(h.bus), want("sort", 1))


def seq_var(x, axis, ddof):
    """Two-pass variance with sequential float32 sums (the C++ loops)."""
    xm = np.moveaxis(x, axis, -1).astype(np.float32)
    s = np.zeros(xm.shape[:-1], np.float32)
    for k in range(xm.shape[-1]):
        s = (s + xm[..., k]).astype(np.float32)
    mean = (s / np.float32(xm.shape[-1])).astype(np.float32)
    s2 = np.zeros_like(s)
    for k in range(xm.shape[-1]):
        d = (xm[..., k] - mean).astype(np.float32)
        s2 = (s2 + d * d).astype(np.float32)
    return (s2.astype(np.float64) / (xm.shape[-1] - ddof)).astype(np.float32), mean


def test_var_and_var_mean():
    h = Harness()
    x = f32(3, 7, 4)
    exp_v, exp_m = seq_var(x, 1, 1)
    (got,) = run(h, "aten::var.out", [h.tensor(x), h.ints([1]), True, False], [h.tensor(shape=(3, 4))])
    np.testing.assert_array_equal(got, exp_v)
    np.testing.assert_allclose(got, x.astype(np.float64).var(axis=1, ddof=1), rtol=1e-5)
    (got,) = run(h, "aten::var.out", [h.tensor(x), None, False, True], [h.tensor(shape=(1, 1, 1))])
    np.testing.assert_allclose(got.reshape(()), x.astype(np.float64).var(), rtol=1e-5)
    v, m = run(h, "aten::var_mean.correction_out", [h.tensor(x), h.ints([-2]), 0, True],
               [h.tensor(shape=(3, 1, 4)), h.tensor(shape=(3, 1, 4))])
    exp_v0, _ = seq_var(x, 1, 0)
    np.testing.assert_array_equal(v[:, 0], exp_v0)
    np.testing.assert_array_equal(m[:, 0], exp_m)
    # N - correction <= 0: NaN in both outputs
    v, m = run(h, "aten::var_mean.correction_out", [h.tensor(x), h.ints([1]), 7, False],
               [h.tensor(shape=(3, 4)), h.tensor(shape=(3, 4))])
    assert np.isnan(v).all() and np.isnan(m).all()
    fails(h, "aten::var.out", [h.tensor(x.astype(np.int32)), h.ints([1]), True, False], [h.tensor(shape=(3, 4))])
    fails(h, "aten::var.out", [h.tensor(x), h.ints([1, 1]), True, False], [h.tensor(shape=(3, 4))])


def test_max_min_unary_and_mean_dtype():
    h = Harness()
    x = f32(4, 5)
    (mx,) = run(h, "aten::max.unary_out", [h.tensor(x)], [h.tensor(shape=())])
    (mn,) = run(h, "aten::min.unary_out", [h.tensor(x)], [h.tensor(shape=())])
    assert mx == x.max() and mn == x.min()
    xn = x.copy()
    xn[2, 3] = np.nan
    (mx,) = run(h, "aten::max.unary_out", [h.tensor(xn)], [h.tensor(shape=())])
    assert np.isnan(mx)
    xi = np.array([[3, -9], [7, 1]], np.int8)
    (mx,) = run(h, "aten::max.unary_out", [h.tensor(xi)], [h.tensor(shape=(), dtype=np.int64)])
    assert mx == 7 and mx.dtype == np.int64
    (mn,) = run(h, "aten::min.unary_out", [h.tensor(np.zeros((0,), np.float32))], [h.tensor(shape=())])
    assert mn == np.inf
    fails(h, "aten::max.unary_out", [h.tensor(x)], [h.tensor(shape=(), dtype=np.int32)])   # float -> int
    fails(h, "aten::max.unary_out", [h.tensor(x)], [h.tensor(shape=(1,))])                 # not 0-d
    (m,) = run(h, "aten::mean.dtype_out", [h.tensor(x), None], [h.tensor(shape=())])
    s = np.float32(0)
    for v in x.reshape(-1):
        s = np.float32(s + v)
    assert m == np.float32(s / np.float32(x.size))
    (m,) = run(h, "aten::mean.dtype_out", [h.tensor(xi), 6], [h.tensor(shape=())])
    assert m == np.float32(2 / 4)
    fails(h, "aten::mean.dtype_out", [h.tensor(xi), None], [h.tensor(shape=())])           # int input, no dtype
