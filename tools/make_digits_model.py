#!/usr/bin/env python3
"""Build the digits classifier fixture: a small CNN trained on scikit-learn's digits, quantized and compiled for
the Ethos-U55-128 by ExecuTorch's Arm backend, with the test split and the quantized reference's answers.

Needs the optional toolchain (not the simulator, not the tests)::

    python -m venv venv --system-site-packages
    venv/bin/pip install torch==2.13.0 'executorch[ethos-u]==1.5.1' scikit-learn
    venv/bin/python tools/make_digits_model.py [--out tests/data/digits]

Steps (seeded, so a rebuild gives the same weights on the same versions):

1. the data set: ``sklearn.datasets.load_digits`` (1,797 8x8 images of handwritten digits, values 0..16, from
   the UCI set scikit-learn ships), scaled to [0, 1], split 80/20 with ``train_test_split(random_state=0,
   stratify=y)``;
2. a CNN of 11 k parameters (conv 3x3 8, conv 3x3 16 stride 2, conv 3x3 16, linear 10; ReLU), trained with Adam
   for 40 epochs;
3. exported and quantized as ``aot_arm_compiler --delegate --quantize`` does (ExecuTorch's functions:
   symmetric int8 per channel for the Ethos-U55-128, Ethos_U55_High_End_Embedded, Shared_Sram), calibrated on
   the training images; the quantized graph is the *quantized reference*: PyTorch runs it with fake
   quantization on the test split;
4. the same quantized graph lowered to the Ethos-U (Vela) and written as ``digits_u55-128.pte``.

Written to ``--out``: ``digits_u55-128.pte``; ``digits_test.npz`` with ``x`` (float32 [N, 1, 8, 8]), ``y`` (the
labels) and ``reference`` (the quantized reference's float32 [N, 10] scores); ``facts.json`` with the versions
and both accuracies (float and quantized reference).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def build(out: Path, epochs: int) -> dict:
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from torch import nn

    torch.manual_seed(0)
    digits = load_digits()
    x = (digits.images.astype(np.float32) / 16.0)[:, None]  # [N, 1, 8, 8] in [0, 1]
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)

    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(),
        nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
        nn.Flatten(), nn.Linear(16 * 4 * 4, 10))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    xt, yt = torch.from_numpy(x_tr), torch.from_numpy(y_tr)
    gen = torch.Generator().manual_seed(0)
    for _ in range(epochs):
        perm = torch.randperm(len(xt), generator=gen)
        for i in range(0, len(xt), 64):
            idx = perm[i:i + 64]
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
    model.eval().requires_grad_(False)
    float_acc = float((model(torch.from_numpy(x_te)).argmax(1).numpy() == y_te).mean())

    # what aot_arm_compiler --delegate --quantize does, with its own functions
    from executorch.backends.arm.scripts import aot_arm_compiler as aot
    from executorch.backends.arm.ethosu import EthosUCompileSpec
    from executorch.exir import ExecutorchBackendConfig

    example = (torch.from_numpy(x_tr[:1]),)
    spec = EthosUCompileSpec("ethos-u55-128", system_config="Ethos_U55_High_End_Embedded",
                             memory_mode="Shared_Sram", extra_flags=["--verbose-operators", "--verbose-cycle-estimate"])
    exported = torch.export.export(model, example, strict=True)
    calibration = [(torch.from_numpy(x_tr[i:i + 1]),) for i in range(len(x_tr))]
    quantized, edge = aot._to_edge_TOSA_delegate("ethos-u55-128", exported, spec, exported.module(),
                                                 aot.QuantMode.INT8, example, "digits", True, calibration, False)
    with torch.no_grad():
        reference = np.concatenate([quantized(torch.from_numpy(x_te[i:i + 1])).numpy() for i in range(len(x_te))])
    ref_acc = float((reference.argmax(1) == y_te).mean())
    program = edge.to_executorch(config=ExecutorchBackendConfig(extract_delegate_segments=False))

    out.mkdir(parents=True, exist_ok=True)
    (out / "digits_u55-128.pte").write_bytes(program.buffer)
    np.savez_compressed(out / "digits_test.npz", x=x_te, y=y_te, reference=reference.astype(np.float32))
    from importlib.metadata import version

    facts = {"float_accuracy": float_acc, "quantized_reference_accuracy": ref_acc, "test_samples": int(len(y_te)),
             "versions": {k: version(k) for k in ("torch", "executorch", "ethos-u-vela", "scikit-learn")}}
    return facts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "tests" / "data" / "digits")
    ap.add_argument("--epochs", type=int, default=40)
    a = ap.parse_args()
    facts = build(a.out, a.epochs)
    (a.out / "facts.json").write_text(json.dumps(facts, indent=1) + "\n")
    print(json.dumps(facts, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
