"""The kernels added for programs beyond the corpus (``portable_ext.py``, the resize kernels of
``portable_nn.py``, ``quantized_decomposed::dequantize_per_channel``) against PyTorch's outputs.

References: ``tests/data/kernels_ext/refs.npz`` (``make_refs.py`` there, run in the toolchain venv). Kernels are
called the way ``Method.execute`` calls them: the instruction's argument values, ``out`` last (``.out``
variants list the out tensor twice: as the kwarg and as the returned value).
"""


import numpy as np
import pytest

from firmware.executorch.kernels import KERNELS
from testutil import DATA, KernelHarness

REFS = np.load(DATA / "kernels_ext" / "refs.npz")


class Harness(KernelHarness):
    def like(self, want):
        return self.tensor(shape=want.shape, dtype=want.dtype)

    def call(self, op, args):
        return KERNELS[op](self.ctx, args)


def ref(name, i):
    return REFS[f"{name}_in{i}"]


def want(name, j=0):
    return REFS[f"{name}_out{j}"]


def close(got, exp, tol=1e-5):
    np.testing.assert_allclose(got, exp, rtol=tol, atol=tol)


@pytest.mark.parametrize("name,size,align,factors", [
    ("bilinear_x2", None, False, [2.0, 2.0]),
    ("bilinear_size_ac", (9, 4), True, None),
    ("bilinear_size", (11, 13), False, None),
])
def test_upsample_bilinear2d(name, size, align, factors):
    h = Harness()
    w = want(name)
    out = h.like(w)
    h.call("aten::upsample_bilinear2d.vec_out",
           [h.tensor(ref(name, 0)), h.ints(size) if size else None, align, factors, out, out])
    close(out.array(h.bus), w)


@pytest.mark.parametrize("name,size,factors", [("nearest_x2", None, [2.0, 2.0]), ("nearest_size", (8, 10), None)])
def test_upsample_nearest2d(name, size, factors):
    h = Harness()
    w = want(name)
    out = h.like(w)
    h.call("aten::upsample_nearest2d.vec_out", [h.tensor(ref(name, 0)), h.ints(size) if size else None, factors,
                                                out, out])
    np.testing.assert_array_equal(out.array(h.bus), w)


@pytest.mark.parametrize("name,op,extra", [
    ("gelu", "aten::gelu.out", ["none"]), ("gelu_tanh", "aten::gelu.out", ["tanh"]),
    ("elu", "aten::elu.out", [0.7, 1, 1]), ("hardsigmoid", "aten::hardsigmoid.out", []),
    ("silu", "aten::silu.out", []), ("pow2", "aten::pow.Tensor_Scalar_out", [2.0]),
    ("reciprocal", "aten::reciprocal.out", []), ("log", "aten::log.out", []),
])
def test_elementwise_float(name, op, extra):
    h = Harness()
    w = want(name)
    out = h.like(w)
    h.call(op, [h.tensor(ref(name, 0))] + extra + [out, out])
    close(out.array(h.bus), w)


def test_layer_norm_and_group_norm():
    h = Harness()
    w = want("layer_norm")
    out, mean, rstd = h.like(w), h.tensor(shape=(2, 5, 1)), h.tensor(shape=(2, 5, 1))
    ins = [h.tensor(ref("layer_norm", i)) for i in range(3)]
    h.call("aten::native_layer_norm.out", [ins[0], h.ints([12]), ins[1], ins[2], 1e-5, out, mean, rstd,
                                           out, mean, rstd])
    close(out.array(h.bus), w, 1e-4)
    x = ref("layer_norm", 0)
    close(mean.array(h.bus)[..., 0], x.mean(-1), 1e-5)
    h = Harness()
    w = want("group_norm")
    out, mean, rstd = h.like(w), h.tensor(shape=(2, 3)), h.tensor(shape=(2, 3))
    ins = [h.tensor(ref("group_norm", i)) for i in range(3)]
    h.call("aten::native_group_norm.out", ins + [2, 6, 12, 3, 1e-5, out, mean, rstd, out, mean, rstd])
    close(out.array(h.bus), w, 1e-4)


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


def test_integer_division_modes_and_remainder():
    h = Harness()
    a, b = h.tensor(ref("div_floor", 0)), h.tensor(ref("div_floor", 1))
    for name, mode in (("div_floor", "floor"), ("div_trunc", "trunc")):
        out = h.like(want(name))
        h.call("aten::div.out_mode", [a, b, mode, out, out])
        np.testing.assert_array_equal(out.array(h.bus), want(name))
    out = h.like(want("remainder"))
    h.call("aten::remainder.Tensor_out", [a, b, out, out])
    np.testing.assert_array_equal(out.array(h.bus), want("remainder"))
    out = h.like(want("remainder_f"))
    h.call("aten::remainder.Scalar_out", [h.tensor(ref("remainder_f", 0)), 1.5, out, out])
    close(out.array(h.bus), want("remainder_f"))


def test_creation_and_comparison():
    h = Harness()
    out = h.tensor(shape=(2, 3))
    h.call("aten::full.out", [h.ints([2, 3]), 1.5, out, out])
    np.testing.assert_array_equal(out.array(h.bus), np.full((2, 3), 1.5, np.float32))
    out = h.tensor(shape=(4,), dtype=np.int64)
    h.call("aten::arange.start_out", [3, 11, 2, out, out])
    np.testing.assert_array_equal(out.array(h.bus), [3, 5, 7, 9])
    x = h.tensor(np.array([1.0, -2.0, 3.0], np.float32))
    out = h.tensor(shape=(3,), dtype=np.bool_)
    h.call("aten::gt.Scalar_out", [x, 0, out, out])
    np.testing.assert_array_equal(out.array(h.bus), [True, False, True])
    out = h.tensor(shape=(3,))
    h.call("aten::rsub.Scalar_out", [x, 1.0, 2, out, out])
    np.testing.assert_array_equal(out.array(h.bus), [-1.0, 5.0, -5.0])


def test_dequantize_per_channel_in_double():
    """``(q - zp[c]) * scale[c]`` along ``axis``, computed in double and narrowed to float (op_dequantize.cpp)."""
    h = Harness()
    q = np.array([[[-127, 5], [3, 127]], [[0, -1], [64, 2]]], np.int8)  # (2, 2, 2), axis 1
    scales = np.array([0.1, 0.003], np.float32)
    zps = np.array([0, -3], np.int64)
    out = h.tensor(shape=q.shape)
    h.call("quantized_decomposed::dequantize_per_channel.out",
           [h.tensor(q), h.tensor(scales), h.tensor(zps), 1, -127, 127, 1, None, out, out])
    exp = (q.astype(np.float64) - zps.reshape(1, 2, 1)) * scales.astype(np.float64).reshape(1, 2, 1)
    exp = exp.astype(np.float32)
    np.testing.assert_array_equal(out.array(h.bus), exp)


def test_batch_norm_legit_variants():
    """``_native_batch_norm_legit.out`` in inference mode is the no-training kernel; the portable library
    rejects training mode, and ``no_stats_out`` (instance norm) always fails with InvalidArgument."""
    from firmware.executorch.error import Error, RuntimeFailure

    h = Harness()
    x = np.arange(12, dtype=np.float32).reshape(1, 3, 2, 2)
    mean, var = np.array([1, 2, 3], np.float32), np.array([1, 4, 9], np.float32)
    args = [h.tensor(x), None, None, h.tensor(mean), h.tensor(var)]
    out, o1, o2 = h.tensor(shape=x.shape), h.tensor(shape=(0,)), h.tensor(shape=(0,))
    h.call("aten::_native_batch_norm_legit.out", args + [False, 0.1, 0.0, out, o1, o2, out, o1, o2])
    close(out.array(h.bus), (x - mean.reshape(1, 3, 1, 1)) / np.sqrt(var).reshape(1, 3, 1, 1))
    for op, extra in (("aten::_native_batch_norm_legit.out", [True, 0.1, 1e-5]),
                      ("aten::_native_batch_norm_legit.no_stats_out", [False, 0.1, 1e-5])):
        head = args if "no_stats" not in op else args[:3]
        with pytest.raises(RuntimeFailure) as e:
            h.call(op, head + extra + [out, o1, o2, out, o1, o2])
        assert e.value.code == Error.InvalidArgument


def test_bitwise_shifts_and_scalar_bitwise_ops():
    """``bitwise_{left,right}_shift`` (Tensor and Tensor_Scalar) and ``bitwise_{and,or,xor}.Scalar_out``, which
    ExecuTorch's portable library has and programs leave on the CPU (e.g. ``torch.bitwise_left_shift(x, 3)``
    next to delegated int32 ops): C shifts in the common type, int8 shifted as int and narrowed back."""
    h = Harness()
    a = np.array([[-5000, 7, -1, 2 ** 30, 123456]], np.int32)
    s = np.array([[3, 0, 31, 2, 9]], np.int32)
    x, sx = h.tensor(a), h.tensor(s)
    for op, other, exp in (
        ("aten::bitwise_left_shift.Tensor_out", sx, (a.astype(np.int64) << s) & 0xFFFFFFFF),
        ("aten::bitwise_right_shift.Tensor_out", sx, a >> s),
        ("aten::bitwise_left_shift.Tensor_Scalar_out", 3, (a.astype(np.int64) << 3) & 0xFFFFFFFF),
        ("aten::bitwise_right_shift.Tensor_Scalar_out", 3, a >> 3),
        ("aten::bitwise_and.Scalar_out", 0xFF, a & 0xFF),
        ("aten::bitwise_or.Scalar_out", 5, a | 5),
        ("aten::bitwise_xor.Scalar_out", -1, ~a),
    ):
        out = h.tensor(shape=a.shape, dtype=np.int32)
        h.call(op, [x, other, out, out])
        np.testing.assert_array_equal(out.array(h.bus), np.asarray(exp).astype(np.uint32).view(np.int32)
                                      if "left" in op else exp, err_msg=op)
    i8 = h.tensor(np.array([100, -100, 3], np.int8))
    out = h.tensor(shape=(3,), dtype=np.int8)
    h.call("aten::bitwise_left_shift.Tensor_Scalar_out", [i8, 2, out, out])
    np.testing.assert_array_equal(out.array(h.bus), np.array([400, -400, 12]).astype(np.int8))
