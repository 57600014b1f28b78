"""The PMU trace of ``ethosu.extra_args=--pmu-trace FILE`` (run_fvp.sh ``--trace_file``; docs/pmu-trace.md)."""

from __future__ import annotations

import gzip
import json

import pytest

from fvp.boards.fvp_params import translate_fvp_param
from testutil import CORPUS, DATA, run_fvp


def _trace(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def _check_events(doc):
    ev = doc["traceEvents"]
    qread = [e for e in ev if e.get("tid") == "qread"]
    ops = [e for e in ev if e.get("tid") == "operations"]
    assert qread and ops and doc["otherData"]["time_unit"] == "NPU cycles"
    ts = [e["ts"] for e in qread]
    words = [e["args"]["qread"] for e in qread]
    assert ts == sorted(ts) and words == sorted(words)  # the command processor only moves forward
    assert all(e["ph"] == "X" and e["dur"] >= 0 and e["args"]["offset"] % 4 == 0 for e in ops)
    return qread, ops


@pytest.mark.parametrize("program, args", [
    (CORPUS / "mobilenet_v1_025_u55-128.bpte", ["-C", "ethosu.extra_args=--pmu-trace {f}"]),
    (DATA / "oracle_u85" / "resnet8_u85-128" / "resnet8_u85-128.bpte", ["-C", "npu.pmu_trace={f}"]),
])
def test_trace_written(tmp_path, program, args):
    f = tmp_path / "pmu_trace.gz"
    rc, out, err = run_fvp("run", program, *[a.format(f=f) for a in args])
    assert rc == 0, err
    qread, ops = _check_events(_trace(f))
    # every operation of the run has its event, and the last QREAD is past the last operation's NPU_OP_*
    assert qread[-1]["args"]["qread"] * 4 > max(e["args"]["offset"] for e in ops)
    assert len(ops) >= 10


def test_extra_args_translation():
    assert translate_fvp_param("ethosu.extra_args", "--pmu-trace /x/t.gz", {}) == [("npu.pmu_trace", "/x/t.gz")]
    assert translate_fvp_param("ethosu.extra_args", "--fast --pmu-trace=t.gz", {}) == [
        ("npu.timing", "none"), ("npu.pmu_trace", "t.gz")]
    with pytest.raises(ValueError, match="unknown Ethos-U option '--verbose'"):
        translate_fvp_param("ethosu.extra_args", "--verbose", {})
    with pytest.raises(ValueError, match="needs a file name"):
        translate_fvp_param("ethosu.extra_args", "--pmu-trace", {})


def test_unknown_option_and_unwritable_file_are_refused(tmp_path):
    prog = CORPUS / "add_u55-128.bpte"
    rc, out, err = run_fvp("run", prog, "-C", "ethosu.extra_args=--bogus")
    assert rc == 2 and "unknown Ethos-U option '--bogus'" in err and len(err.strip().splitlines()) == 1
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    try:
        rc, out, err = run_fvp("run", prog, "-C", f"npu.pmu_trace={d / 't.gz'}")
    finally:
        d.chmod(0o700)
    if rc == 0:  # running as root: the directory is writable anyway; the trace must then exist
        assert (d / "t.gz").is_file()
    else:
        assert rc == 2 and "cannot write the PMU trace" in err and "Traceback" not in err
