"""``aten::convolution.out`` (``kernels/portable/conv.py``) against PyTorch's outputs."""

import numpy as np
import pytest

from kernels_common import Harness, close, nn_ref


@pytest.mark.parametrize("name,stride,padding,dilation,groups,bias", [
    ("conv2d_grouped", (2, 1), (1, 2), (2, 1), 2, True),
    ("conv2d_depthwise", (2, 2), (1, 1), (1, 1), 8, False),
    ("conv1d", (2,), (1,), (2,), 1, True),
])
def test_convolution(name, stride, padding, dilation, groups, bias):
    h = Harness()
    want = nn_ref(name, None)
    out = h.tensor(shape=want.shape)
    b = h.tensor(nn_ref(name, 2)) if bias else None
    h.call("aten::convolution.out", [h.tensor(nn_ref(name, 0)), h.tensor(nn_ref(name, 1)), b, h.ints(stride),
                                     h.ints(padding), h.ints(dilation), False, h.ints([0] * len(stride)), groups, out])
    close(out.array(h.bus), want)
    w = nn_ref(name, 1)
    assert h.bus.work_done["kernel.convolution"] == want.size * w[0].size  # one MAC per weight per output


@pytest.mark.parametrize("name,stride,padding,dilation,out_pad,groups,bias", [
    ("conv_transpose2d", (2, 2), (1, 1), (1, 1), (1, 1), 1, True),
    ("conv_transpose2d_grouped", (1, 2), (0, 1), (2, 1), (0, 0), 2, False),
])
def test_convolution_transposed(name, stride, padding, dilation, out_pad, groups, bias):
    h = Harness()
    want = nn_ref(name, None)
    out = h.tensor(shape=want.shape)
    b = h.tensor(nn_ref(name, 2)) if bias else None
    h.call("aten::convolution.out", [h.tensor(nn_ref(name, 0)), h.tensor(nn_ref(name, 1)), b, h.ints(stride),
                                     h.ints(padding), h.ints(dilation), True, h.ints(out_pad), groups, out])
    close(out.array(h.bus), want)


def test_bad_convolution_fails_cleanly():
    from firmware.executorch.error import RuntimeFailure

    h = Harness()
    x = h.tensor(np.zeros((1, 3, 4, 4), np.float32))
    w = h.tensor(np.zeros((2, 2, 3, 3), np.float32))  # 2 input channels per group, input has 3
    out = h.tensor(shape=(1, 2, 2, 2))
    with pytest.raises(RuntimeFailure):
        h.call("aten::convolution.out", [x, w, None, h.ints([1]), h.ints([0]), h.ints([1]), False, h.ints([0]), 1,
                                         out])
