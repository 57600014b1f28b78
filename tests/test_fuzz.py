"""Smoke fuzzing in CI: a small fixed sample of every target ends cleanly (tools/fuzz.py runs the long campaigns,
10,000 cases and more: docs/security.md).

Each target runs a few cases from fixed seeds (the same cases every run); a finding names the target, the seed
and what went wrong.
"""

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import fuzz  # noqa: E402
import fuzz_core  # noqa: E402
from testutil import FakeSimClock  # noqa: E402

#: cases per target (the default: 6); long or whole-program cases fewer
SAMPLE = {"grown_shape": 2, "long_dma": 2, "cache_entry": 4, "cache_links": 4, "program": 10, "stream": 10}
CLEAN = ("ok", "clean_failure")


@pytest.fixture(autouse=True)
def _no_clock_findings(monkeypatch, request):
    """A unit test never asserts wall-clock time: the campaign's findings that depend on the host's speed are off
    here (tools/fuzz.py keeps them), a case's --timelimit is only a generous hang guard, and the grown shapes'
    2 s --timelimit runs on a fake clock (testutil.FakeSimClock: a second per interruption point inside an
    operation), so a grown operation stops three chunks in instead of after two seconds of work (the other
    targets keep the real clock behind their 600 s guard). What a pipe or
    device may send is cut at 4 MiB instead of 256 MiB (bounded_read.STREAM_LIMIT): the same refusal, cheaper."""
    from fvp import bounded_read

    monkeypatch.setattr(fuzz_core, "CLOCK_FINDINGS", False)
    monkeypatch.setattr(fuzz_core, "CASE_WALL_LIMIT_S", 600.0)
    monkeypatch.setattr(bounded_read, "STREAM_LIMIT", 4 << 20)
    if getattr(request.node, "callspec", None) is not None and request.node.callspec.params.get("target") == \
            "grown_shape":
        FakeSimClock(monkeypatch)


@pytest.mark.parametrize("target", sorted(set(fuzz.TARGETS) - {"host_file"}))
def test_smoke_fuzz(target):
    outcomes = {seed: fuzz.TARGETS[target](random.Random(seed)) for seed in range(SAMPLE.get(target, 6))}
    bad = {seed: f"{o.kind}: {o.detail}" for seed, o in outcomes.items() if o.kind not in CLEAN}
    assert not bad, bad
    kinds = [o.kind for o in outcomes.values()]
    if target == "stream":  # the mutations must reach both outcomes, or they are not testing anything
        assert kinds.count("clean_failure") >= 2 and kinds.count("ok") >= 1, kinds
    if target == "program":  # and different diagnoses
        assert len({o.detail for o in outcomes.values() if o.kind == "clean_failure"}) >= 3


def test_every_hostile_file_at_every_place():
    """host_file's whole space (7 kinds of file x 8 places a command line names one), each case once, where
    100 random draws ran some twice and could miss others."""
    outcomes = {(kind, where): fuzz.host_file_case(kind, where)
                for kind in fuzz.HOSTILE_FILES for where in fuzz.HOSTILE_FILE_PLACES}
    assert len(outcomes) == 56
    bad = {k: f"{o.kind}: {o.detail}" for k, o in outcomes.items() if o.kind not in ("ok", "clean_failure")}
    assert not bad
    assert sum(o.kind == "clean_failure" for o in outcomes.values()) > 40


def test_fuzz_classifier_flags_crashes():
    class R:
        reason, message, exit_code = "crash", "IndexError: boom", 1

    assert fuzz._classify_run(R, "", 0.1).kind == "crash"
    R.reason, R.exit_code = "abort", 1
    assert fuzz._classify_run(R, "no diagnosis here", 0.1).kind == "crash"
    assert fuzz._classify_run(R, "F [executorch:x.py:1 f()] In function f(), assert failed (c): m", 0.1).kind == "clean_failure"


def test_campaign_reports_cases_and_errors():
    rep = fuzz.campaign(8, seed=5, targets=["program", "nul_name"])
    assert rep["cases"] == 8 and rep["crashes"] == [] and rep["distinct_errors"] > 0
    assert sum(rep["by_target"]["program"].values()) == 4


def test_findings_are_told_apart():
    Outcome = fuzz.Outcome
    assert fuzz.finding(Outcome("crash", "internal error: abort: x | [critical] simulator error", 0)) == "internal_error"
    assert fuzz.finding(Outcome("crash", "TypeError: boom for ['run']", 0)) == "traceback"
    for kind in ("touched", "code_ran", "silent", "hang", "over_memory"):
        assert fuzz.finding(Outcome(kind, "", 0)) == kind
    assert fuzz.finding(Outcome("clean_failure", "", 0)) is None and fuzz.finding(Outcome("ok", "", 0)) is None
