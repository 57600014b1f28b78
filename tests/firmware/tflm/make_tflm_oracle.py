#!/usr/bin/env python3
"""Regenerate tflm_oracle.npz: for every model of models_stateful.py, seeded inputs for INVOCATIONS invocations and
the outputs of TFLite Micro's own interpreter (PyPI ``tflite-micro``: one interpreter per model, invoked in turn,
so variable tensors carry over as on the device).

Usage: python tests/firmware/tflm/make_tflm_oracle.py     (needs ``pip install tflite-micro``; the tests only read
the committed file)
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[2])]

import numpy as np  # noqa: E402

from models_stateful import INVOCATIONS, MODELS, inputs_for  # noqa: E402


def tflm_invocations(data: bytes, invocations: list) -> list:
    from tflite_micro.python.tflite_micro import runtime

    from firmware.tflm.model import load_model

    n_out = len(load_model(data).outputs)
    it = runtime.Interpreter.from_bytes(data)
    results = []
    for inputs in invocations:
        for k, x in enumerate(inputs):
            it.set_input(x, k)
        it.invoke()
        results.append([np.array(it.get_output(k)) for k in range(n_out)])
    return results


def main():
    import importlib.metadata

    arrays = {}
    for name, fn in MODELS.items():
        data = fn()
        invocations = [inputs_for(data, seed) for seed in range(INVOCATIONS)]
        for n, (ins, outs) in enumerate(zip(invocations, tflm_invocations(data, invocations))):
            for i, x in enumerate(ins):
                arrays[f"{name}/{n}/in{i}"] = x
            for i, y in enumerate(outs):
                arrays[f"{name}/{n}/out{i}"] = y
    arrays["_tflite_micro_version"] = np.array(importlib.metadata.version("tflite-micro"))
    np.savez_compressed(HERE / "tflm_oracle.npz", **arrays)
    print(f"wrote {HERE / 'tflm_oracle.npz'}: {len(MODELS)} models x {INVOCATIONS} invocations")


if __name__ == "__main__":
    main()
