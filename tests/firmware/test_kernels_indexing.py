"""The indexing, gather/scatter and mask kernels (``kernels/portable/indexing.py``) against PyTorch's outputs and
numpy: values, dtypes, the C++ argument checks and output resize semantics."""

import numpy as np
import pytest

from firmware.executorch.error import Error, RuntimeFailure
from kernels_common import Harness, f32, fails, ref, run, tlist, want


def test_indexing_and_select():
    h = Harness()
    w = want("embedding")
    out = h.like(w)
    h.call("aten::embedding.out", [h.tensor(ref("embedding", 0)), h.tensor(ref("embedding", 1)), -1, False, False,
                                   out, out])
    np.testing.assert_array_equal(out.array(h.bus), w)
    w = want("gather")
    out = h.like(w)
    h.call("aten::gather.out", [h.tensor(ref("gather", 0)), 1, h.tensor(ref("gather", 1)), False, out, out])
    np.testing.assert_array_equal(out.array(h.bus), w)
    w = want("where")
    out = h.like(w)
    h.call("aten::where.self_out", [h.tensor(ref("where", 0)), h.tensor(ref("where", 1)), h.tensor(ref("where", 2)),
                                    out, out])
    np.testing.assert_array_equal(out.array(h.bus), w)
    x = h.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    idx = h.tensor(np.array([2, 0], np.int64))
    h.values.append(idx)
    out = h.tensor(shape=(2, 4))
    h.call("aten::index.Tensor_out", [x, ("OptionalTensorList", [len(h.values) - 1]), out, out])
    np.testing.assert_array_equal(out.array(h.bus), np.arange(12).reshape(3, 4)[[2, 0]])


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


def test_repeat_interleave():
    h = Harness()
    reps = np.array([2, 0, 3], np.int64)
    (o,) = run(h, "aten::repeat_interleave.Tensor_out", [h.tensor(reps), None], [h.tensor(shape=(5,), dtype=np.int64)])
    np.testing.assert_array_equal(o, [0, 0, 2, 2, 2])
    fails(h, "aten::repeat_interleave.Tensor_out", [h.tensor(reps), 4], [h.tensor(shape=(5,), dtype=np.int64)])
    fails(h, "aten::repeat_interleave.Tensor_out", [h.tensor(np.array([1, -1], np.int64)), None],
          [h.tensor(shape=(0,), dtype=np.int64)])
