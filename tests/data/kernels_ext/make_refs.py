"""Reference outputs for the portable kernel tests (tests/firmware/test_kernels_*.py, read
through ``kernels_common.ref``/``want``), computed by PyTorch (the toolchain venv).

Run with the optional toolchain (never a test dependency):
    /work/et-venv/bin/python tests/data/kernels_ext/make_refs.py
Writes refs.npz next to this file: for each case ``<case>_in<i>`` inputs and ``<case>_out<j>`` outputs.
"""

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

torch.manual_seed(0)
out = {}


def r(*shape):
    return torch.randn(*shape, dtype=torch.float32)


def case(name, inputs, *results):
    for i, t in enumerate(inputs):
        out[f"{name}_in{i}"] = t.numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    for j, t in enumerate(results):
        out[f"{name}_out{j}"] = t.detach().numpy()


x = r(1, 3, 5, 7)
case("bilinear_x2", [x], F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False))
case("bilinear_size_ac", [x], F.interpolate(x, size=(9, 4), mode="bilinear", align_corners=True))
case("bilinear_size", [x], F.interpolate(x, size=(11, 13), mode="bilinear", align_corners=False))
case("nearest_x2", [x], F.interpolate(x, scale_factor=2, mode="nearest"))
case("nearest_size", [x], F.interpolate(x, size=(8, 10), mode="nearest"))
x = r(3, 10) * 3
case("gelu", [x], F.gelu(x))
case("gelu_tanh", [x], F.gelu(x, approximate="tanh"))
case("elu", [x], F.elu(x, 0.7))
case("hardsigmoid", [x], F.hardsigmoid(x))
case("silu", [x], F.silu(x))
case("pow2", [x], torch.pow(x, 2.0))
p = x.abs() + 0.1
case("reciprocal", [p], torch.reciprocal(p))
case("log", [p], torch.log(p))
x, w, b = r(2, 5, 12), r(12), r(12)
case("layer_norm", [x, w, b], F.layer_norm(x, (12,), w, b, 1e-5))
x, w, b = r(2, 6, 3, 4), r(6), r(6)
case("group_norm", [x, w, b], F.group_norm(x, 3, w, b, 1e-5))
x = r(2, 5, 4)
case("cumsum", [x], torch.cumsum(x, 1))
case("argmax", [x], torch.argmax(x, 2))
case("amax", [x], torch.amax(x, (0, 2), keepdim=True))
case("var", [x], torch.var(x, 1, keepdim=True))
case("topk", [x], *torch.topk(x, 3, dim=1))
case("sort", [x], *torch.sort(x, dim=2, descending=True))
x = r(1, 8, 3, 5)
case("pixel_shuffle", [x], F.pixel_shuffle(x, 2))
x = r(1, 2, 4, 6)
case("pixel_unshuffle", [x], F.pixel_unshuffle(x, 2))
case("reflection_pad2d", [x], F.pad(x, (1, 2, 2, 1), mode="reflect"))
case("replication_pad2d", [x], F.pad(x, (2, 1, 0, 3), mode="replicate"))
x, i = r(6, 4), torch.tensor([[0, 5, 2], [1, 1, 3]])
case("embedding", [x, i], F.embedding(i, x))
x, i = r(3, 5), torch.tensor([[0, 4, 1], [2, 2, 0]])
case("gather", [x, i], torch.gather(x, 1, i))
x, y = r(4, 5), r(4, 5)
c = x > y
case("where", [c, x, y], torch.where(c, x, y))
a, b = torch.tensor([7, -7, 7, -7, 5]), torch.tensor([2, 2, -2, -2, 5])
case("div_floor", [a, b], torch.div(a, b, rounding_mode="floor"))
case("div_trunc", [a, b], torch.div(a, b, rounding_mode="trunc"))
case("remainder", [a, b], torch.remainder(a, b))
x = r(5) * 3
case("remainder_f", [x], torch.remainder(x, 1.5))

np.savez_compressed(Path(__file__).with_name("refs.npz"), **out)
print(f"wrote {len(out)} arrays")
