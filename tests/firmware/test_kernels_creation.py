"""The creation kernels (``kernels/portable/creation.py``): values, the C++ argument checks and resize semantics."""

import numpy as np

from kernels_common import Harness, f32, fails, run


def test_full_and_arange():
    h = Harness()
    out = h.tensor(shape=(2, 3))
    h.call("aten::full.out", [h.ints([2, 3]), 1.5, out, out])
    np.testing.assert_array_equal(out.array(h.bus), np.full((2, 3), 1.5, np.float32))
    out = h.tensor(shape=(4,), dtype=np.int64)
    h.call("aten::arange.start_out", [3, 11, 2, out, out])
    np.testing.assert_array_equal(out.array(h.bus), [3, 5, 7, 9])


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
