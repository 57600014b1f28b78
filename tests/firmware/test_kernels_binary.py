"""The binary arithmetic, comparison, logical and bitwise kernels (``kernels/portable/binary.py``) against
PyTorch's outputs and numpy."""

import numpy as np
import pytest

from kernels_common import Harness, check_elementwise_float, close, ref, want


@pytest.mark.parametrize("name,op,extra", [("pow2", "aten::pow.Tensor_Scalar_out", [2.0])])
def test_elementwise_float(name, op, extra):
    check_elementwise_float(name, op, extra)


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


def test_scalar_comparison_and_rsub():
    h = Harness()
    x = h.tensor(np.array([1.0, -2.0, 3.0], np.float32))
    out = h.tensor(shape=(3,), dtype=np.bool_)
    h.call("aten::gt.Scalar_out", [x, 0, out, out])
    np.testing.assert_array_equal(out.array(h.bus), [True, False, True])
    out = h.tensor(shape=(3,))
    h.call("aten::rsub.Scalar_out", [x, 1.0, 2, out, out])
    np.testing.assert_array_equal(out.array(h.bus), [-1.0, 5.0, -5.0])


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
