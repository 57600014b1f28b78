"""The activation, softmax and dropout kernels (``kernels/portable/activation.py``) against PyTorch's outputs and
numpy."""

import numpy as np
import pytest

from kernels_common import Harness, check_elementwise_float, close, f32, fails, nn_ref, run


@pytest.mark.parametrize("name,op,extra", [
    ("gelu", "aten::gelu.out", ["none"]), ("gelu_tanh", "aten::gelu.out", ["tanh"]),
    ("elu", "aten::elu.out", [0.7, 1, 1]), ("hardsigmoid", "aten::hardsigmoid.out", []),
    ("silu", "aten::silu.out", []),
])
def test_elementwise_float(name, op, extra):
    check_elementwise_float(name, op, extra)


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


def test_hardswish_and_leaky_relu():
    h = Harness()
    out = h.tensor(shape=nn_ref("hardswish").shape)
    h.call("aten::hardswish.out", [h.tensor(nn_ref("hardswish", 0)), out])
    close(out.array(h.bus), nn_ref("hardswish"))
    out = h.tensor(shape=nn_ref("leaky_relu").shape)
    h.call("aten::leaky_relu.out", [h.tensor(nn_ref("leaky_relu", 0)), 0.2, out])
    close(out.array(h.bus), nn_ref("leaky_relu"))


def test_native_dropout():
    h = Harness()
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
