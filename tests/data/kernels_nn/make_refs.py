"""Reference outputs for the portable kernel tests (tests/firmware/test_kernels_*.py, read
through ``kernels_common.nn_ref``), computed by PyTorch (the toolchain venv).

Run with the optional toolchain (never a test dependency):
    /work/et-venv/bin/python tests/data/kernels_nn/make_refs.py
Writes refs.npz next to this file: for each case ``<case>_in<i>`` inputs and ``<case>_out`` (``_idx``) outputs.
"""

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

torch.manual_seed(0)
out = {}


def r(*shape):
    return torch.randn(*shape, dtype=torch.float32)


def case(name, inputs, result):
    for i, t in enumerate(inputs):
        out[f"{name}_in{i}"] = t.numpy()
    if isinstance(result, tuple):
        out[f"{name}_out"] = result[0].numpy()
        out[f"{name}_idx"] = result[1].numpy()
    else:
        out[f"{name}_out"] = result.detach().numpy()


x, w, b = r(2, 6, 9, 8), r(4, 3, 3, 2), r(4)
case("conv2d_grouped", [x, w, b], F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(2, 1), groups=2))
x, w = r(1, 8, 7, 7), r(8, 1, 3, 3)
case("conv2d_depthwise", [x, w], F.conv2d(x, w, None, stride=2, padding=1, groups=8))
x, w, b = r(1, 3, 20), r(5, 3, 4), r(5)
case("conv1d", [x, w, b], F.conv1d(x, w, b, stride=2, padding=1, dilation=2))
x, w, b = r(1, 4, 5, 6), r(4, 3, 3, 3), r(3)
case("conv_transpose2d", [x, w, b], F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1))
x, w = r(2, 4, 3, 4), r(4, 2, 2, 3)
case("conv_transpose2d_grouped", [x, w], F.conv_transpose2d(x, w, None, stride=(1, 2), padding=(0, 1), groups=2,
                                                             dilation=(2, 1)))
x, wt, bs, mean, var = r(2, 5, 4, 3), r(5), r(5), r(5), torch.rand(5) + 0.5
case("batch_norm", [x, wt, bs, mean, var], F.batch_norm(x, mean, var, wt, bs, training=False, eps=1e-5))
x = r(1, 3, 9, 10)
case("max_pool2d", [x], F.max_pool2d(x, 3, 2, 1, return_indices=True))
case("max_pool2d_ceil", [x], F.max_pool2d(x, (2, 3), (2, 2), 0, ceil_mode=True, return_indices=True))
a, m = r(3, 4, 5), r(3, 5, 2)
case("bmm", [a, m], torch.bmm(a, m))
x, w, b = r(2, 3, 7), r(4, 7), r(4)
case("linear", [x, w, b], F.linear(x, w, b))
x = r(4, 6) * 4
case("hardswish", [x], F.hardswish(x))
case("leaky_relu", [x], F.leaky_relu(x, 0.2))

np.savez_compressed(Path(__file__).with_name("refs.npz"), **out)
print(f"wrote {len(out)} arrays")
