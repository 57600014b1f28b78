#!/usr/bin/env python3
"""Make the real-model fixtures of ``tests/data/tflm/real/``: TFLite Micro's own example models, compiled by Vela
for the configurations MLEK and vendors use, with TFLite Micro's interpreter as the oracle.

For each fixture: the source ``.tflite`` from a tflite-micro checkout (``--tflm DIR``; the paths below), Vela
(``fvp/host/programs/vela.py``: ``--accelerator-config``, ``--system-config``, ``--memory-mode`` and the flags of
the configuration; ``--config`` Vela's own ``vela.ini``) unless the fixture is the source itself, two seeded inputs
over each input type's whole range, and the outputs of TFLite Micro's interpreter (PyPI ``tflite-micro``, one fresh
interpreter per input: variable tensors start as AllocateTensors leaves them) on the SOURCE model.

Writes ``<out>/<fixture>.tflite``, ``<out>/expected.npz`` (``<fixture>/<k>/in<i>``, ``<fixture>/<k>/out<i>``) and
``<out>/fixtures.json`` (per fixture: source, origin, licence, the source's SHA-256, the Vela flags and version,
what the compiled file records, the oracle's version, and ``expect``: ``exact``, or ``xfail`` with the reason).

Needs ethos-u-vela and tflite-micro (tools extras, never needed by the tests)::

    python -m venv /tmp/v --system-site-packages && /tmp/v/bin/pip install tflite-micro
    /tmp/v/bin/python tools/make_real_tflm_fixtures.py --tflm /path/to/tflite-micro [--out tests/data/tflm/real]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from validate_real_models import CONFIGS, make_inputs, model_io, tflm_oracle  # noqa: E402

LICENCE = "Apache-2.0 (tensorflow/tflite-micro)"
SOURCES = {
    "hello_world_int8": "tensorflow/lite/micro/examples/hello_world/models/hello_world_int8.tflite",
    "micro_speech": "tensorflow/lite/micro/examples/micro_speech/models/micro_speech_quantized.tflite",
    "mnist_lstm_int8": "tensorflow/lite/micro/examples/mnist_lstm/trained_lstm_int8.tflite",
    "keyword_scrambled": "tensorflow/lite/micro/models/keyword_scrambled.tflite",
}
LEGACY_SOFTMAX = ("the NPU model adds OFM_ZERO_POINT to 32-bit OFMs; Vela's older core writes the softmax input's "
                  "zero point there and the hardware does not add it (issue 31 item 2; fvp/machine/npu)")
# fixture -> (source, configuration or None for the source itself, expect)
FIXTURES = {
    "hello_world_int8_u55-64": ("hello_world_int8", "u55-64", "exact"),
    "hello_world_int8_u55-256": ("hello_world_int8", "u55-256", "exact"),
    "hello_world_int8_u65-256": ("hello_world_int8", "u65-256", "exact"),
    "hello_world_int8_u65-512": ("hello_world_int8", "u65-512", "exact"),
    "hello_world_int8_u85-256": ("hello_world_int8", "u85-256", "exact"),
    "micro_speech_u65-512": ("micro_speech", "u65-512", "exact"),
    "micro_speech_u55-128-legacy": ("micro_speech", "u55-128-legacy", "xfail: " + LEGACY_SOFTMAX),
    "mnist_lstm_int8": ("mnist_lstm_int8", None, "exact"),
    "mnist_lstm_int8_u55-128": ("mnist_lstm_int8", "u55-128", "exact"),
    "keyword_scrambled_u55-128": ("keyword_scrambled", "u55-128", "exact"),
}
INPUT_SEEDS = (1, 2)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tflm", required=True, help="a tflite-micro checkout (the source models)")
    ap.add_argument("--out", default=str(ROOT / "tests" / "data" / "tflm" / "real"))
    args = ap.parse_args(argv)
    from fvp.host.programs.tflm_board import tflite_configurations
    from fvp.host.programs.vela import compile_tflite, version

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    arrays, meta = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (src_name, config, expect) in FIXTURES.items():
            src = Path(args.tflm) / SOURCES[src_name]
            source = src.read_bytes()
            entry = {"source": SOURCES[src_name], "origin": "TFLite Micro examples", "licence": LICENCE,
                     "source_sha256": hashlib.sha256(source).hexdigest(), "expect": expect}
            if config is None:
                data = source
            else:
                accel, sc, mm, extra = CONFIGS[config]
                compiled = compile_tflite(src, Path(tmp) / name, accel, sc, mm, list(extra), label=name).path
                data = compiled.read_bytes()
                ops = tflite_configurations(data)
                entry.update(vela=version(), vela_flags=[accel, sc, mm, *extra],
                             records={"targets": [o["target"] for o in ops],
                                      "memory_modes": [o["memory_mode"] for o in ops],
                                      "fast_scratch_bytes": max((o["fast_scratch"] for o in ops), default=0)})
            (out / f"{name}.tflite").write_bytes(data)
            specs_in, specs_out = model_io(source)
            for k, seed in enumerate(INPUT_SEEDS):
                ins = make_inputs(specs_in, seed)
                for i, x in enumerate(ins):
                    arrays[f"{name}/{k}/in{i}"] = x
                for i, y in enumerate(tflm_oracle(source, ins, len(specs_out))):
                    arrays[f"{name}/{k}/out{i}"] = y
            entry["bytes"] = len(data)
            meta[name] = entry
            print(f"{name}: {len(data)} bytes", file=sys.stderr)
    meta["_oracle"] = {"tflite-micro": importlib.metadata.version("tflite-micro"), "input_seeds": list(INPUT_SEEDS)}
    np.savez_compressed(out / "expected.npz", **arrays)
    (out / "fixtures.json").write_text(json.dumps(meta, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
