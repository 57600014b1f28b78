"""Smoke fuzzing in CI: a few hundred hostile cases end cleanly (tools/fuzz.py runs long campaigns).

Hypothesis drives the mutators (its ``randoms()`` strategy feeds them), so failures shrink and are replayed
from its example database; the seeds are corpus programs.
"""

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import fuzz  # noqa: E402
from testutil import FakeSimClock  # noqa: E402

# 50 cases per target (derandomized: the same 50 every run), program and stream reaching both outcomes; the long
# campaign is tools/fuzz.py --cases 10000 (README)
SMOKE = settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@pytest.fixture(autouse=True)
def _no_clock_findings(monkeypatch, request):
    """A unit test never asserts wall-clock time: the campaign's findings that depend on the host's speed are off
    here (tools/fuzz.py keeps them), a case's --timelimit is only a generous hang guard, and the grown shapes'
    2 s --timelimit runs on a fake clock (testutil.FakeSimClock: a second per interruption point inside an
    operation), so a grown operation stops three chunks in instead of after two seconds of work (the other
    targets keep the real clock behind their 600 s guard). What a pipe or
    device may send is cut at 4 MiB instead of 256 MiB (bounded_read.STREAM_LIMIT): the same refusal, cheaper."""
    from fvp import bounded_read

    monkeypatch.setattr(fuzz, "CLOCK_FINDINGS", False)
    monkeypatch.setattr(fuzz, "CASE_WALL_LIMIT_S", 600.0)
    monkeypatch.setattr(bounded_read, "STREAM_LIMIT", 4 << 20)
    if getattr(request.node, "callspec", None) is not None and request.node.callspec.params.get("target") == \
            "grown_shape":
        FakeSimClock(monkeypatch)


@pytest.mark.parametrize("target", sorted(set(fuzz.TARGETS) - {"host_file"}))
def test_smoke_fuzz(target):
    kinds = []

    @SMOKE
    @given(st.randoms(use_true_random=False))
    def case(rng):
        o = fuzz.TARGETS[target](rng)
        kinds.append(o.kind)
        assert o.kind in ("ok", "clean_failure"), f"{o.kind}: {o.detail}"

    case()
    assert len(kinds) >= 40
    if target in ("program", "stream"):
        # the mutations must reach both outcomes, or they are not testing anything
        assert kinds.count("clean_failure") > 5 and kinds.count("ok") > 0


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
    rep = fuzz.campaign(40, seed=5, targets=["program", "stream"])
    assert rep["cases"] == 40 and rep["crashes"] == [] and rep["distinct_errors"] > 0
