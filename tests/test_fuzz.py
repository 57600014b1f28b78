"""Smoke fuzzing in CI: a few hundred hostile cases end cleanly (tools/fuzz.py runs long campaigns)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import fuzz  # noqa: E402


@pytest.mark.parametrize("target", sorted(fuzz.TARGETS))
def test_smoke_fuzz(target):
    rep = fuzz.campaign(120, seed=20261129, targets=[target])
    assert rep["crashes"] == [], rep["crashes"][:5]
    counts = rep["by_target"][target]
    assert sum(counts.values()) == 120
    # the campaign must exercise both outcomes, or it is not testing anything
    if target in ("program", "stream"):
        assert counts.get("clean_failure", 0) > 10 and counts.get("ok", 0) > 0


def test_fuzz_classifier_flags_crashes():
    class R:
        reason, message, exit_code = "crash", "IndexError: boom", 1

    assert fuzz._classify_run(R, "", 0.1).kind == "crash"
    R.reason, R.exit_code = "abort", 1
    assert fuzz._classify_run(R, "no diagnosis here", 0.1).kind == "crash"
    assert fuzz._classify_run(R, "F [executorch:x.py:1 f()] In function f(), assert failed (c): m", 0.1).kind == "clean_failure"
