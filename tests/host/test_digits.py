"""A real data set on the simulated NPU: scikit-learn's digits through the compiled CNN (tests/data/digits)."""

import json

import numpy as np

import fvp
from fvp.host.cli import main as cli_main
from testutil import DATA

DIGITS = DATA / "digits"


def test_the_npu_computes_what_the_quantized_reference_computes():
    d = np.load(DIGITS / "digits_test.npz")
    x, y, ref = d["x"], d["y"], d["reference"]
    with fvp.Session(DIGITS / "digits_u55-128.pte") as s:
        results = s.run_many(x)
    scores = np.concatenate([r.outputs[0] for r in results])
    assert np.array_equal(scores, ref)  # every score of every image, bit for bit
    facts = json.loads((DIGITS / "facts.json").read_text())
    npu = float((scores.argmax(1) == y).mean())
    assert npu == facts["quantized_reference_accuracy"] and npu > 0.95
    assert len({r.npu_cycles for r in results}) == 1 and results[0].npu_cycles > 0


def test_fvp_run_inputs_prints_the_accuracy(tmp_path, capsys):
    d = np.load(DIGITS / "digits_test.npz")
    np.savez(tmp_path / "slice.npz", x=d["x"][:40], y=d["y"][:40])
    want = int((d["reference"][:40].argmax(1) == d["y"][:40]).sum())
    rc = cli_main(["run", str(DIGITS / "digits_u55-128.pte"), "--inputs", f"{tmp_path / 'slice.npz'}:x",
                   "--labels", f"{tmp_path / 'slice.npz'}:y", "--progress", "none", "-o", str(tmp_path / "o")])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "40 ok, 0 failed" in out and f"top-1 accuracy: {100 * want / 40:.2f} % ({want} of 40 labelled samples)" in out
    assert json.loads((tmp_path / "o" / "inferences.json").read_text())["accuracy"]["correct"] == want
