"""The kernels of ``portable_more.py`` (the rest of ExecuTorch's portable operators) against numpy references
computed here: values, dtypes, the C++ argument checks (InvalidArgument) and output resize semantics.

Kernels are called like ``Method.execute`` calls them: the schema arguments, then the out tensors (listed twice:
as kwargs and as the returned values).
"""

import math

import numpy as np
import pytest

from firmware.executorch.error import Error, RuntimeFailure
from test_kernels_ext import Harness

RNG = np.random.default_rng(7)


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


# ================================================================================== float elementwise
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


def test_glu_halves_along_dim():
    h = Harness()
    x = f32(2, 6, 3)
    (got,) = run(h, "aten::glu.out", [h.tensor(x), 1], [h.tensor(shape=(2, 3, 3))])
    a, b = x[:, :3].astype(np.float64), x[:, 3:].astype(np.float64)
    np.testing.assert_allclose(got, a / (1 + np.exp(-b)), rtol=1e-6, atol=1e-7)
    y = f32(3, 2)
    (got,) = run(h, "aten::glu.out", [h.tensor(y), -1], [h.tensor(shape=(3, 1))])
    np.testing.assert_allclose(got[..., 0], y[..., 0] / (1 + np.exp(-y[..., 1].astype(np.float64))), rtol=1e-6)
    fails(h, "aten::glu.out", [h.tensor(x), 2], [h.tensor(shape=(2, 6, 1))])          # odd size
    fails(h, "aten::glu.out", [h.tensor(x), 1], [h.tensor(shape=(2, 6, 3))])          # static out, wrong shape


# ================================================================================== reductions
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


# ================================================================================== creation and copies
def test_creation_ops():
    h = Harness()
    (o,) = run(h, "aten::ones.out", [h.ints([2, 3])], [h.tensor(shape=(2, 3), dtype=np.int32)])
    np.testing.assert_array_equal(o, np.ones((2, 3), np.int32))
    z = h.tensor(np.full((3,), 5.0, np.float32))
    (o,) = run(h, "aten::zeros.out", [h.ints([3])], [z])
    np.testing.assert_array_equal(o, np.zeros(3, np.float32))
    e = h.tensor(shape=(4, 2))
    run(h, "aten::empty.out", [h.ints([4, 2]), None], [e])
    run(h, "dim_order_ops::_empty_dim_order.out", [h.ints([4, 2]), None], [e])
    fails(h, "aten::zeros.out", [h.ints([2, 3])], [h.tensor(shape=(3, 2))])   # static out: no resize
    fails(h, "aten::empty.out", [h.ints([8]), None], [h.tensor(shape=(4, 2))])
    x = f32(2, 2)
    (o,) = run(h, "aten::fill.Tensor_out", [h.tensor(x), h.tensor(np.array(7, np.int64))], [h.tensor(shape=(2, 2))])
    np.testing.assert_array_equal(o, np.full((2, 2), 7, np.float32))
    fails(h, "aten::fill.Tensor_out", [h.tensor(x), h.tensor(np.array([1, 2], np.int64))], [h.tensor(shape=(2, 2))])


def test_copies():
    h = Harness()
    x = f32(2, 3)
    for op in ("aten::detach_copy.out", "aten::lift_fresh_copy.out"):
        (o,) = run(h, op, [h.tensor(x)], [h.tensor(shape=x.shape)])
        np.testing.assert_array_equal(o, x)
        fails(h, op, [h.tensor(x)], [h.tensor(shape=x.shape, dtype=np.float64)])
    src = np.array([1, 2, 3], np.int32)
    (o,) = run(h, "aten::copy.out", [h.tensor(x), h.tensor(src), False], [h.tensor(shape=x.shape)])
    np.testing.assert_array_equal(o, np.broadcast_to(src.astype(np.float32), x.shape))
    fails(h, "aten::copy.out", [h.tensor(x), h.tensor(np.zeros(2, np.float32)), False], [h.tensor(shape=x.shape)])
    fails(h, "aten::copy.out", [h.tensor(x), h.tensor(src), True], [h.tensor(shape=x.shape)])
    dst = h.tensor(x)
    h.call("aten::copy_", [dst, h.tensor(np.float32([[9], [8]])), False, dst])
    np.testing.assert_array_equal(dst.array(h.bus), [[9, 9, 9], [8, 8, 8]])
    c = (RNG.normal(size=(2, 2)) + 1j * RNG.normal(size=(2, 2))).astype(np.complex64)
    (o,) = run(h, "aten::_conj_physical.out", [h.tensor(c)], [h.tensor(shape=c.shape, dtype=np.complex64)])
    np.testing.assert_array_equal(o, np.conj(c))
    (o,) = run(h, "aten::view_as_real_copy.out", [h.tensor(c)], [h.tensor(shape=(2, 2, 2))])
    np.testing.assert_array_equal(o, np.stack([c.real, c.imag], -1))
    fails(h, "aten::_conj_physical.out", [h.tensor(x)], [h.tensor(shape=x.shape)])


def test_narrow_diagonal_unfold_as_strided_tril():
    h = Harness()
    x = f32(3, 5, 4)
    (o,) = run(h, "aten::narrow_copy.out", [h.tensor(x), 1, 1, 3], [h.tensor(shape=(3, 3, 4))])
    np.testing.assert_array_equal(o, x[:, 1:4])
    (o,) = run(h, "aten::narrow_copy.out", [h.tensor(x), -1, 4, 0], [h.tensor(shape=(3, 5, 0))])
    # the C++ checks accept a negative start but compute_slice gets it unnormalised and fails
    fails(h, "aten::narrow_copy.out", [h.tensor(x), 1, -2, 2], [h.tensor(shape=(3, 2, 4))])
    fails(h, "aten::narrow_copy.out", [h.tensor(x), 1, 3, 3], [h.tensor(shape=(3, 3, 4))])
    for off, d1, d2 in ((0, 0, 1), (1, 1, 2), (-2, 2, 1)):
        exp = np.diagonal(x, off, d1, d2)
        (o,) = run(h, "aten::diagonal_copy.out", [h.tensor(x), off, d1, d2], [h.tensor(shape=exp.shape)])
        np.testing.assert_array_equal(o, exp)
    fails(h, "aten::diagonal_copy.out", [h.tensor(x), 0, 1, -2], [h.tensor(shape=(3, 4))])
    # unfold: windows of 2 every 2 along dim 1 -> (3, 2, 4, 2), converted to the out type
    exp = np.stack([x[:, 0:2], x[:, 2:4]], axis=1).transpose(0, 1, 3, 2)
    (o,) = run(h, "aten::unfold_copy.out", [h.tensor(x), 1, 2, 2], [h.tensor(shape=(3, 2, 4, 2))])
    np.testing.assert_array_equal(o, exp)
    xi = np.arange(10, dtype=np.int32)
    (o,) = run(h, "aten::unfold_copy.out", [h.tensor(xi), 0, 3, 3], [h.tensor(shape=(3, 3), dtype=np.int64)])
    np.testing.assert_array_equal(o, [[0, 1, 2], [3, 4, 5], [6, 7, 8]])
    fails(h, "aten::unfold_copy.out", [h.tensor(xi), 0, 3, 0], [h.tensor(shape=(3, 3), dtype=np.int64)])
    flat = x.reshape(-1)
    (o,) = run(h, "aten::as_strided_copy.out", [h.tensor(x), h.ints([2, 3]), h.ints([7, 2]), 5],
               [h.tensor(shape=(2, 3))])
    np.testing.assert_array_equal(o, [[flat[5 + 7 * i + 2 * j] for j in range(3)] for i in range(2)])
    fails(h, "aten::as_strided_copy.out", [h.tensor(x), h.ints([2, 3]), h.ints([51, 2]), 5], [h.tensor(shape=(2, 3))])
    for diag in (0, 1, -1):
        (o,) = run(h, "aten::tril.out", [h.tensor(x), diag], [h.tensor(shape=x.shape)])
        np.testing.assert_array_equal(o, np.tril(x, diag))
    fails(h, "aten::tril.out", [h.tensor(x[0, 0]), 0], [h.tensor(shape=(4,))])


# ================================================================================== scatter, masks, indices
def test_scatter_family():
    h = Harness()
    x = f32(3, 4)
    idx = np.array([[2, 0, 1, 2], [0, 0, 2, 1]], np.int64)
    src = f32(2, 5)
    exp = x.copy()
    for i in range(2):
        for j in range(4):
            exp[idx[i, j], j] = src[i, j]
    (o,) = run(h, "aten::scatter.src_out", [h.tensor(x), 0, h.tensor(idx), h.tensor(src)], [h.tensor(shape=x.shape)])
    np.testing.assert_array_equal(o, exp)
    exp = x.copy()
    for i in range(2):
        for j in range(4):
            exp[idx[i, j], j] = -1.5
    (o,) = run(h, "aten::scatter.value_out", [h.tensor(x), 0, h.tensor(idx), -1.5], [h.tensor(shape=x.shape)])
    np.testing.assert_array_equal(o, exp)
    exp = x.copy()
    for i in range(2):
        for j in range(4):
            exp[idx[i, j], j] = np.float32(exp[idx[i, j], j] + src[i, j])
    (o,) = run(h, "aten::scatter_add.out", [h.tensor(x), 0, h.tensor(idx), h.tensor(src)], [h.tensor(shape=x.shape)])
    np.testing.assert_array_equal(o, exp)
    # duplicates along dim 1: scatter keeps the last write, scatter_add sums in order
    i1 = np.array([[1, 1, 3]], np.int64)
    s1 = np.float32([[10, 20, 30]])
    (o,) = run(h, "aten::scatter.src_out", [h.tensor(x), 1, h.tensor(i1), h.tensor(s1)], [h.tensor(shape=x.shape)])
    assert o[0, 1] == 20 and o[0, 3] == 30 and o[0, 0] == x[0, 0]
    (o,) = run(h, "aten::scatter_add.out", [h.tensor(x), 1, h.tensor(i1), h.tensor(s1)], [h.tensor(shape=x.shape)])
    assert o[0, 1] == np.float32(np.float32(x[0, 1] + 10) + 20)
    bad = np.array([[4, 0, 0, 0]], np.int64)
    fails(h, "aten::scatter.src_out", [h.tensor(x), 0, h.tensor(bad), h.tensor(src)], [h.tensor(shape=x.shape)])
    fails(h, "aten::scatter_add.out", [h.tensor(x), 0, h.tensor(idx.astype(np.int32)), h.tensor(src)],
          [h.tensor(shape=x.shape)])
    xi = np.zeros((2, 2), np.int8)
    fails(h, "aten::scatter.value_out", [h.tensor(xi), 0, h.tensor(np.zeros((1, 1), np.int64)), 300],
          [h.tensor(shape=(2, 2), dtype=np.int8)])


def test_index_put():
    h = Harness()
    x = f32(4, 3)
    rows = np.array([3, -4, 3], np.int64)
    vals = np.float32([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    (o,) = run(h, "aten::index_put.out", [h.tensor(x), tlist(h, [h.tensor(rows)]), h.tensor(vals), False],
               [h.tensor(shape=x.shape)])
    exp = x.copy()
    exp[0], exp[3] = vals[1], vals[2]   # -4 -> 0; the later write to row 3 wins
    np.testing.assert_array_equal(o, exp)
    (o,) = run(h, "aten::index_put.out", [h.tensor(x), tlist(h, [h.tensor(rows)]), h.tensor(vals), True],
               [h.tensor(shape=x.shape)])
    exp = x.copy()
    exp[0] += vals[1]
    exp[3] = (exp[3] + vals[0]).astype(np.float32) + vals[2]
    np.testing.assert_array_equal(o, exp)
    mask = x > 0
    (o,) = run(h, "aten::index_put.out", [h.tensor(x), tlist(h, [h.tensor(mask)]), h.tensor(np.float32(0)), False],
               [h.tensor(shape=x.shape)])
    np.testing.assert_array_equal(o, np.where(mask, 0, x))
    cols = np.array([2, 0], np.int32)
    (o,) = run(h, "aten::index_put.out", [h.tensor(x), tlist(h, [None, h.tensor(cols)]), h.tensor(np.float32([5, 6])),
                                          False], [h.tensor(shape=x.shape)])
    exp = x.copy()
    exp[:, [2, 0]] = [5, 6]
    np.testing.assert_array_equal(o, exp)
    fails(h, "aten::index_put.out", [h.tensor(x), tlist(h, [h.tensor(np.array([4], np.int64))]),
                                     h.tensor(np.float32(1)), False], [h.tensor(shape=x.shape)])
    fails(h, "aten::index_put.out", [h.tensor(x), tlist(h, [h.tensor(rows)]), h.tensor(vals.astype(np.float64)),
                                     False], [h.tensor(shape=x.shape)])
    t = h.tensor(x)
    h.call("aten::index_put_", [t, tlist(h, [None, h.tensor(np.array([1], np.int64))]),
                                h.tensor(np.float32([[1], [2], [3], [4]])), False, t])
    exp = x.copy()
    exp[:, 1] = [1, 2, 3, 4]
    np.testing.assert_array_equal(t.array(h.bus), exp)
    with pytest.raises(RuntimeFailure) as e:
        h.call("aten::index_put_", [t, tlist(h, [h.tensor(np.array([1], np.int64))]),
                                    h.tensor(np.float32([[1, 1, 1]])), True, t])
    assert e.value.code == Error.InvalidArgument


def test_masked_scatter_select_nonzero():
    h = Harness()
    x = f32(3, 4)
    mask = np.array([True, False, True, True])
    src = f32(20)
    (o,) = run(h, "aten::masked_scatter.out", [h.tensor(x), h.tensor(mask), h.tensor(src)], [h.tensor(shape=x.shape)])
    exp = x.copy()
    exp[np.broadcast_to(mask, x.shape)] = src[:9]
    np.testing.assert_array_equal(o, exp)
    fails(h, "aten::masked_scatter.out", [h.tensor(x), h.tensor(mask), h.tensor(src[:5])], [h.tensor(shape=x.shape)])
    (o,) = run(h, "aten::masked_select.out", [h.tensor(x), h.tensor(mask)], [h.tensor(shape=(9,))])
    np.testing.assert_array_equal(o, x[:, mask].reshape(-1))
    fails(h, "aten::masked_select.out", [h.tensor(x), h.tensor(mask)], [h.tensor(shape=(8,))])  # static out
    fails(h, "aten::masked_select.out", [h.tensor(x), h.tensor(mask.astype(np.uint8))], [h.tensor(shape=(9,))])
    xz = np.array([[0, 1.5, 0], [np.nan, 0, -2]], np.float32)
    (o,) = run(h, "aten::nonzero.out", [h.tensor(xz)], [h.tensor(shape=(3, 2), dtype=np.int64)])
    np.testing.assert_array_equal(o, [[0, 1], [1, 0], [1, 2]])
    fails(h, "aten::nonzero.out", [h.tensor(xz)], [h.tensor(shape=(3, 2), dtype=np.int32)])


def test_dynamic_bound_out_is_resized():
    """A DYNAMIC_BOUND out takes a smaller result's shape (rank kept, within the planned capacity)."""
    from types import SimpleNamespace

    h = Harness()
    x = np.array([0, 3, 0, 4, 5], np.float32)
    xt, out = h.tensor(x), h.tensor(shape=(5, 1), dtype=np.int64)
    h.values.extend([xt, out])
    plan_values = [SimpleNamespace(value=None)] * (len(h.values) - 1) + [
        SimpleNamespace(value=SimpleNamespace(shape_dynamism=1, sizes=(5, 1)))]
    h.ctx.method.plan = SimpleNamespace(values=plan_values)
    h.call("aten::nonzero.out", [xt, out, out])
    assert out.sizes == (3, 1)
    np.testing.assert_array_equal(out.array(h.bus), [[1], [3], [4]])


def test_repeat_interleave_and_dropout():
    h = Harness()
    reps = np.array([2, 0, 3], np.int64)
    (o,) = run(h, "aten::repeat_interleave.Tensor_out", [h.tensor(reps), None], [h.tensor(shape=(5,), dtype=np.int64)])
    np.testing.assert_array_equal(o, [0, 0, 2, 2, 2])
    fails(h, "aten::repeat_interleave.Tensor_out", [h.tensor(reps), 4], [h.tensor(shape=(5,), dtype=np.int64)])
    fails(h, "aten::repeat_interleave.Tensor_out", [h.tensor(np.array([1, -1], np.int64)), None],
          [h.tensor(shape=(0,), dtype=np.int64)])
    x = f32(3, 3)
    o, m = run(h, "aten::native_dropout.out", [h.tensor(x), 0.5, False],
               [h.tensor(shape=x.shape), h.tensor(shape=x.shape, dtype=np.bool_)])
    np.testing.assert_array_equal(o, x)
    assert m.all()
    o, m = run(h, "aten::native_dropout.out", [h.tensor(x), 0.5, True],
               [h.tensor(shape=x.shape), h.tensor(shape=x.shape, dtype=np.bool_)])
    np.testing.assert_array_equal(o, np.where(m, x, 0))   # kept values are not rescaled
    # reproducible: the mask depends only on the simulated machine's state (its CPU cycle count)
    masks = []
    for _ in range(2):
        h2 = Harness()
        masks.append(run(h2, "aten::native_dropout.out", [h2.tensor(f32(8, 8)), 0.5, True],
                         [h2.tensor(shape=(8, 8)), h2.tensor(shape=(8, 8), dtype=np.bool_)])[1])
    np.testing.assert_array_equal(masks[0], masks[1])
    fails(h, "aten::native_dropout.out", [h.tensor(x), 1.5, False],
          [h.tensor(shape=x.shape), h.tensor(shape=x.shape, dtype=np.bool_)])


# ================================================================================== distances
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


# ================================================================================== pooling and resampling
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


def ref_grid_sample(x, g, mode, pad, align):
    """A per-pixel float64 reference of PyTorch's grid_sample (bilinear/nearest/bicubic)."""
    n, c, hh, ww = x.shape
    _, ho, wo, _ = g.shape
    out = np.zeros((n, c, ho, wo))

    def unnorm(v, size):
        return (v + 1) / 2 * (size - 1) if align else ((v + 1) * size - 1) / 2

    def reflect(v, lo2, hi2):
        if lo2 == hi2:
            return 0.0
        lo, span = lo2 / 2, (hi2 - lo2) / 2
        v = abs(v - lo)
        extra = math.fmod(v, span)
        return extra + lo if int(math.floor(v / span)) % 2 == 0 else span - extra + lo

    def src(v, size):
        v = unnorm(v, size)
        if pad == 1:
            v = min(size - 1, max(v, 0))
        elif pad == 2:
            v = reflect(v, 0, 2 * (size - 1)) if align else reflect(v, -1, 2 * size - 1)
            v = min(size - 1, max(v, 0))
        return v

    def get(b, yy, xx):
        if pad == 0:
            return x[b, :, yy, xx] if 0 <= yy < hh and 0 <= xx < ww else np.zeros(c)
        if pad == 2 and mode == 2:
            fy = reflect(yy, 0, 2 * (hh - 1)) if align else reflect(yy, -1, 2 * hh - 1)
            fx = reflect(xx, 0, 2 * (ww - 1)) if align else reflect(xx, -1, 2 * ww - 1)
            return x[b, :, int(min(hh - 1, max(fy, 0))), int(min(ww - 1, max(fx, 0)))]
        return x[b, :, min(hh - 1, max(yy, 0)), min(ww - 1, max(xx, 0))]

    def cubic(p, t):
        a = -0.75

        def c1(v):
            return ((a + 2) * v - (a + 3)) * v * v + 1

        def c2(v):
            return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a
        return p[0] * c2(t + 1) + p[1] * c1(t) + p[2] * c1(1 - t) + p[3] * c2(2 - t)

    for b in range(n):
        for i in range(ho):
            for j in range(wo):
                gx, gy = float(g[b, i, j, 0]), float(g[b, i, j, 1])
                if mode == 2:
                    ix, iy = unnorm(gx, ww), unnorm(gy, hh)
                    x0, y0 = math.floor(ix), math.floor(iy)
                    rows = [cubic([get(b, y0 + dy, x0 + dx) for dx in (-1, 0, 1, 2)], ix - x0) for dy in (-1, 0, 1, 2)]
                    out[b, :, i, j] = cubic(rows, iy - y0)
                    continue
                ix, iy = src(gx, ww), src(gy, hh)
                if mode == 1:
                    out[b, :, i, j] = get(b, int(np.rint(iy)), int(np.rint(ix)))
                    continue
                x0, y0 = math.floor(ix), math.floor(iy)
                tx, ty = ix - x0, iy - y0
                out[b, :, i, j] = (get(b, y0, x0) * (1 - tx) * (1 - ty) + get(b, y0, x0 + 1) * tx * (1 - ty)
                                   + get(b, y0 + 1, x0) * (1 - tx) * ty + get(b, y0 + 1, x0 + 1) * tx * ty)
    return out


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("pad", [0, 1, 2])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sampler_2d(mode, pad, align):
    h = Harness()
    x = f32(2, 3, 5, 6)
    g = f32(2, 4, 3, 2, lo=-1.3, hi=1.3)
    (o,) = run(h, "aten::grid_sampler_2d.out", [h.tensor(x), h.tensor(g), mode, pad, align],
               [h.tensor(shape=(2, 3, 4, 3))])
    np.testing.assert_allclose(o, ref_grid_sample(x.astype(np.float64), g, mode, pad, align), rtol=1e-4, atol=1e-5)
    if mode == 0 and pad == 0 and not align:
        fails(h, "aten::grid_sampler_2d.out", [h.tensor(x), h.tensor(g), 3, pad, align], [h.tensor(shape=(2, 3, 4, 3))])
        fails(h, "aten::grid_sampler_2d.out", [h.tensor(x), h.tensor(g[:1]), 0, 0, False],
              [h.tensor(shape=(2, 3, 4, 3))])


def ref_aa(x, oh, ow, align):
    """PyTorch's separable anti-aliased bilinear weights (interp_size 2), in float64."""
    def weights(n_in, n_out):
        scale = (n_in - 1) / (n_out - 1) if align and n_out > 1 else (0.0 if align else n_in / n_out)
        support = scale if scale >= 1 else 1.0
        inv = 1 / scale if scale >= 1 else 1.0
        w = np.zeros((n_out, n_in))
        for o in range(n_out):
            center = scale * (o + 0.5)
            lo, hi = max(int(center - support + 0.5), 0), min(int(center + support + 0.5), n_in)
            ks = [max(0.0, 1 - abs((i - center + 0.5) * inv)) for i in range(lo, hi)]
            w[o, lo:hi] = np.array(ks) / sum(ks)
        return w
    wh, ww = weights(x.shape[2], oh), weights(x.shape[3], ow)
    return np.einsum("oh,nchw,pw->ncop", wh, x.astype(np.float64), ww)


@pytest.mark.parametrize("oh,ow,align", [(3, 4, False), (9, 2, False), (4, 3, True)])
def test_upsample_bilinear2d_aa(oh, ow, align):
    h = Harness()
    x = f32(1, 2, 8, 7)
    (o,) = run(h, "aten::_upsample_bilinear2d_aa.out", [h.tensor(x), h.ints([oh, ow]), align, None, None],
               [h.tensor(shape=(1, 2, oh, ow))])
    np.testing.assert_allclose(o, ref_aa(x, oh, ow, align), rtol=1e-5, atol=1e-5)
    fails(h, "aten::_upsample_bilinear2d_aa.out", [h.tensor(x), h.ints([oh, ow]), align, None, None],
          [h.tensor(shape=(1, 2, oh + 1, ow))])
