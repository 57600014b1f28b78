"""The portable float kernels of ``firmware/executorch/kernels/portable_nn.py`` against PyTorch's outputs.

The references (``tests/data/kernels_nn/refs.npz``) were computed by PyTorch in the toolchain venv
(``make_refs.py`` there); the copies and views are checked against numpy directly. Kernels run on tensors in a
fake flat memory, called the way ``Method.execute`` calls them (argument values, the out tensor last).
"""


import numpy as np
import pytest

from firmware.executorch.kernels import KERNELS
from testutil import DATA, KernelHarness

REFS = np.load(DATA / "kernels_nn" / "refs.npz")


class Harness(KernelHarness):
    def call(self, op, args):
        return KERNELS[op](self.ctx, args)


def ref(name, i=None):
    return REFS[f"{name}_in{i}"] if i is not None else REFS[f"{name}_out"]


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,stride,padding,dilation,groups,bias", [
    ("conv2d_grouped", (2, 1), (1, 2), (2, 1), 2, True),
    ("conv2d_depthwise", (2, 2), (1, 1), (1, 1), 8, False),
    ("conv1d", (2,), (1,), (2,), 1, True),
])
def test_convolution(name, stride, padding, dilation, groups, bias):
    h = Harness()
    want = ref(name, None)
    out = h.tensor(shape=want.shape)
    b = h.tensor(ref(name, 2)) if bias else None
    h.call("aten::convolution.out", [h.tensor(ref(name, 0)), h.tensor(ref(name, 1)), b, h.ints(stride),
                                     h.ints(padding), h.ints(dilation), False, h.ints([0] * len(stride)), groups, out])
    close(out.array(h.bus), want)
    w = ref(name, 1)
    assert h.bus.work_done["kernel.convolution"] == want.size * w[0].size  # one MAC per weight per output


@pytest.mark.parametrize("name,stride,padding,dilation,out_pad,groups,bias", [
    ("conv_transpose2d", (2, 2), (1, 1), (1, 1), (1, 1), 1, True),
    ("conv_transpose2d_grouped", (1, 2), (0, 1), (2, 1), (0, 0), 2, False),
])
def test_convolution_transposed(name, stride, padding, dilation, out_pad, groups, bias):
    h = Harness()
    want = ref(name, None)
    out = h.tensor(shape=want.shape)
    b = h.tensor(ref(name, 2)) if bias else None
    h.call("aten::convolution.out", [h.tensor(ref(name, 0)), h.tensor(ref(name, 1)), b, h.ints(stride),
                                     h.ints(padding), h.ints(dilation), True, h.ints(out_pad), groups, out])
    close(out.array(h.bus), want)


def test_batch_norm():
    h = Harness()
    want = ref("batch_norm")
    out, o1, o2 = h.tensor(shape=want.shape), h.tensor(shape=(0,)), h.tensor(shape=(0,))
    ins = [h.tensor(ref("batch_norm", i)) for i in range(5)]
    h.call("aten::_native_batch_norm_legit_no_training.out", ins + [0.1, 1e-5, out, o1, o2])
    close(out.array(h.bus), want)


@pytest.mark.parametrize("name,k,s,p,ceil", [("max_pool2d", (3, 3), (2, 2), (1, 1), False),
                                             ("max_pool2d_ceil", (2, 3), (2, 2), (0, 0), True)])
def test_max_pool2d_with_indices(name, k, s, p, ceil):
    h = Harness()
    want, want_idx = ref(name), REFS[f"{name}_idx"]
    out, idx = h.tensor(shape=want.shape), h.tensor(shape=want.shape, dtype=np.int64)
    h.call("aten::max_pool2d_with_indices.out", [h.tensor(ref(name, 0)), h.ints(k), h.ints(s), h.ints(p),
                                                 h.ints([1, 1]), ceil, out, idx])
    np.testing.assert_array_equal(out.array(h.bus), want)
    np.testing.assert_array_equal(idx.array(h.bus), want_idx)


def test_bmm_linear_activations():
    h = Harness()
    out = h.tensor(shape=ref("bmm").shape)
    h.call("aten::bmm.out", [h.tensor(ref("bmm", 0)), h.tensor(ref("bmm", 1)), out])
    close(out.array(h.bus), ref("bmm"))
    out = h.tensor(shape=ref("linear").shape)
    h.call("aten::linear.out", [h.tensor(ref("linear", 0)), h.tensor(ref("linear", 1)), h.tensor(ref("linear", 2)),
                                out])
    close(out.array(h.bus), ref("linear"))
    out = h.tensor(shape=ref("hardswish").shape)
    h.call("aten::hardswish.out", [h.tensor(ref("hardswish", 0)), out])
    close(out.array(h.bus), ref("hardswish"))
    out = h.tensor(shape=ref("leaky_relu").shape)
    h.call("aten::leaky_relu.out", [h.tensor(ref("leaky_relu", 0)), 0.2, out])
    close(out.array(h.bus), ref("leaky_relu"))


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


def test_bad_arguments_fail_cleanly():
    from firmware.executorch.error import RuntimeFailure

    h = Harness()
    x = h.tensor(np.zeros((1, 3, 4, 4), np.float32))
    w = h.tensor(np.zeros((2, 2, 3, 3), np.float32))  # 2 input channels per group, input has 3
    out = h.tensor(shape=(1, 2, 2, 2))
    with pytest.raises(RuntimeFailure):
        h.call("aten::convolution.out", [x, w, None, h.ints([1]), h.ints([0]), h.ints([1]), False, h.ints([0]), 1,
                                         out])
    with pytest.raises(RuntimeFailure):
        h.call("aten::select_copy.int_out", [x, 5, 0, h.tensor(shape=(1,))])
