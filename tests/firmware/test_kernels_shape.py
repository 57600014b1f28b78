"""The shape, view and copy kernels (``kernels/portable/shape.py``) against PyTorch's outputs and numpy (the
``sum.IntList`` check of ``test_copies_and_views`` is a reduction's)."""

import numpy as np
import pytest

from kernels_common import RNG, Harness, f32, fails, ref, run, want


@pytest.mark.parametrize("name,op,extra", [
    ("pixel_shuffle", "aten::pixel_shuffle.out", [2]), ("pixel_unshuffle", "aten::pixel_unshuffle.out", [2]),
    ("reflection_pad2d", "aten::reflection_pad2d.out", "pad:1,2,2,1"),
    ("replication_pad2d", "aten::replication_pad2d.out", "pad:2,1,0,3"),
])
def test_data_movement(name, op, extra):
    h = Harness()
    w = want(name)
    out = h.like(w)
    if isinstance(extra, str):
        extra = [h.ints([int(v) for v in extra[4:].split(",")])]
    h.call(op, [h.tensor(ref(name, 0))] + extra + [out, out])
    np.testing.assert_array_equal(out.array(h.bus), w)


def test_copies_and_views():
    h = Harness()
    x = np.arange(2 * 5 * 3, dtype=np.float32).reshape(2, 5, 3)
    tx = h.tensor(x)
    out = h.tensor(shape=(2, 3))
    h.call("aten::select_copy.int_out", [tx, 1, -2, out])
    np.testing.assert_array_equal(out.array(h.bus), x[:, -2])
    out = h.tensor(shape=(2, 2, 3))
    h.call("aten::slice_copy.Tensor_out", [tx, 1, 1, None, 2, out])
    np.testing.assert_array_equal(out.array(h.bus), x[:, 1::2])
    parts = [h.tensor(shape=(2, n, 3)) for n in (1, 3, 1)]
    h.call("aten::split_with_sizes_copy.out", [tx, h.ints([1, 3, 1]), 1, h.tlist(parts)])
    for got, want in zip(parts, np.split(x, [1, 4], axis=1)):
        np.testing.assert_array_equal(got.array(h.bus), want)
    parts = [h.tensor(shape=(2, n, 3)) for n in (2, 2, 1)]
    h.call("aten::split_copy.Tensor_out", [tx, 2, 1, h.tlist(parts)])
    for got, want in zip(parts, np.split(x, [2, 4], axis=1)):
        np.testing.assert_array_equal(got.array(h.bus), want)
    parts = [h.tensor(shape=(2, 5)) for _ in range(3)]
    h.call("aten::unbind_copy.int_out", [tx, 2, h.tlist(parts)])
    for i, got in enumerate(parts):
        np.testing.assert_array_equal(got.array(h.bus), x[:, :, i])
    out = h.tensor(shape=(2, 3, 5))
    h.call("aten::stack.out", [h.tlist(parts), 1, out])
    np.testing.assert_array_equal(out.array(h.bus), np.stack([x[:, :, i] for i in range(3)], axis=1))
    out = h.tensor(shape=(2, 5, 6))
    h.call("aten::constant_pad_nd.out", [tx, h.ints([1, 2]), 7.0, out])
    np.testing.assert_array_equal(out.array(h.bus), np.pad(x, ((0, 0), (0, 0), (1, 2)), constant_values=7))
    out = h.tensor(shape=(2, 1, 3))
    h.call("aten::sum.IntList_out", [tx, h.ints([1]), True, None, out])
    np.testing.assert_array_equal(out.array(h.bus), x.sum(axis=1, keepdims=True))
    # clone into channels-last memory: logical values equal, bytes permuted
    x4 = np.arange(2 * 3 * 2 * 2, dtype=np.float32).reshape(2, 3, 2, 2)
    out = h.tensor(shape=x4.shape, dim_order=(0, 2, 3, 1))
    h.call("dim_order_ops::_clone_dim_order.out", [h.tensor(x4), False, h.ints([0, 2, 3, 1]), out])
    np.testing.assert_array_equal(out.array(h.bus), x4)
    np.testing.assert_array_equal(out.raw(h.bus).view(np.float32), x4.transpose(0, 2, 3, 1).reshape(-1))


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


def test_bad_select_copy_fails_cleanly():
    from firmware.executorch.error import RuntimeFailure

    h = Harness()
    x = h.tensor(np.zeros((1, 3, 4, 4), np.float32))
    with pytest.raises(RuntimeFailure):
        h.call("aten::select_copy.int_out", [x, 5, 0, h.tensor(shape=(1,))])
