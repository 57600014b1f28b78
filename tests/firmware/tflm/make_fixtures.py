#!/usr/bin/env python3
"""Regenerate fixtures.npz: for every model of models.py, the seeded inputs and the outputs of TFLite's
reference-kernel interpreter (LiteRT, ``OpResolverType.BUILTIN_REF``; ``pip install ai-edge-litert``).

Usage: python tests/firmware/tflm/make_fixtures.py   (writes tests/firmware/tflm/fixtures.npz)
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[2])]

import numpy as np  # noqa: E402

from harness import run_litert  # noqa: E402
from models import MODELS, inputs_for  # noqa: E402


def main():
    import ai_edge_litert

    arrays = {}
    for name, fn in MODELS.items():
        data = fn()
        ins = inputs_for(data)
        outs = run_litert(data, ins)
        for i, x in enumerate(ins):
            arrays[f"{name}/in{i}"] = x
        for i, y in enumerate(outs):
            arrays[f"{name}/out{i}"] = y
    arrays["_litert_version"] = np.array(getattr(ai_edge_litert, "__version__", "?"))
    np.savez_compressed(HERE / "fixtures.npz", **arrays)
    print(f"wrote {HERE / 'fixtures.npz'}: {len(MODELS)} models")


if __name__ == "__main__":
    main()
