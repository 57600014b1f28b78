"""tools/validate_cycles.py --same-file: a published model is recognised by its file's SHA-256 whatever its name, run
with Vela's memory timing and with the FVP's timing adapters, and printed beside its published figure. The model is
the tiny convolution of test_tflite_npu.py (its weights come from flash through TA1), registered as "published"
for the test."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import re
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

pytest.importorskip("ethosu.vela")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))


def _validate():
    spec = importlib.util.spec_from_file_location("validate_cycles", ROOT / "tools" / "validate_cycles.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_same_file_before_and_after_the_timing_adapters(tmp_path, monkeypatch):
    from test_tflite_npu import build_conv_tflite

    import tflite_npu

    data = build_conv_tflite(h=16, w=16, cin=32, cout=64)
    src = tmp_path / "renamed_by_the_user.tflite"
    src.write_bytes(data)
    published = {"tiny_conv": {"what": "a tiny convolution", "fvp": {"active": 5_000},
                               "sha256": (hashlib.sha256(data).hexdigest(),)}}
    monkeypatch.setattr(tflite_npu, "PUBLISHED", published)
    assert tflite_npu.identify(src) == "tiny_conv"  # by content, not by name
    out = io.StringIO()
    with redirect_stdout(out):
        rc = _validate().same_file_report([src], work_dir=str(tmp_path / "vela"))
    text = out.getvalue()
    assert rc == 0, text
    row = next(line for line in text.splitlines() if line.strip().startswith("renamed_by_the_user"))
    before, after, pub = (int(v.replace(",", "")) for v in re.findall(r"\s([\d,]{3,})\s", row)[:3])
    assert pub == 5_000
    # the weights stream from flash: TA1's 1.12 bytes per cycle against Vela's 1.0 makes the run shorter
    assert 0 < after < before, row
    assert f"{after / pub:.3f}" in row and f"{before / pub:.3f}" in row


def test_same_file_names_what_it_cannot_run(tmp_path, monkeypatch):
    import tflite_npu

    monkeypatch.setattr(tflite_npu, "PUBLISHED", {"some_model": {"what": "a published model",
                                                                 "fvp": {"active": 1_234}}})
    other = tmp_path / "unrelated.tflite"
    other.write_bytes(b"not even a model")
    out = io.StringIO()
    with redirect_stdout(out):
        rc = _validate().same_file_report([other])
    text = out.getvalue()
    assert rc == 0
    assert "unrelated.tflite: not one of MLEK's published models" in text
    assert "some_model" in text and "no file given" in text
