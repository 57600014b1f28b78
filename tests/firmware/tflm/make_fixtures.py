#!/usr/bin/env python3
"""Regenerate fixtures.npz: for every model of models.py, the seeded inputs and the outputs of TFLite's
reference-kernel interpreter (LiteRT, ``OpResolverType.BUILTIN_REF``; ``pip install ai-edge-litert``).

Usage: python tests/firmware/tflm/make_fixtures.py            (writes tests/firmware/tflm/fixtures.npz)
       python tests/firmware/tflm/make_fixtures.py --verify   (our kernels against LiteRT itself on other seeds)

LiteRT is an optional extra (`pip install '.[tflite]'`), never needed by the tests: they compare with the
committed fixtures. ``--verify`` is the wider check beside them, run by hand when the kernels change.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[2])]

import numpy as np  # noqa: E402

from harness import run_cpu, run_litert  # noqa: E402
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


def verify(seeds=(1, 2)) -> int:
    """Every model on every seed: our kernels' outputs against LiteRT's reference kernels; 0 when all agree."""
    from test_tflm import _same

    bad = 0
    for name, fn in sorted(MODELS.items()):
        data = fn()
        for seed in seeds:
            ins = inputs_for(data, seed)
            try:
                for a, b in zip(run_cpu(data, ins), run_litert(data, ins)):
                    _same(a, b, name)
            except AssertionError as e:
                bad += 1
                print(f"{name} seed {seed}: {e}")
    print(f"{len(MODELS)} models x {len(seeds)} seeds: {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    if "--verify" in sys.argv[1:]:
        sys.exit(verify())
    main()
