"""A smoke run of the benchmark (one small program, one timed run) so it cannot rot; no timing assertions."""

import json

from testutil import CORPUS, run_fvp


def test_bench_smoke(tmp_path):
    out_json = tmp_path / "bench.json"
    rc, out, err = run_fvp("bench", CORPUS / "add_u55-128.bpte", "--repeat", "1", "--no-process", "--session", "2",
                           "--json", out_json)
    assert rc == 0, err
    assert "add_u55-128.bpte" in out and "MMAC/s" in out and "x ref" in out
    assert "per inference in a session (fvp.Session: the runner booted once, then 2 inferences after a warm-up" in out
    data = json.loads(out_json.read_text())
    (row,) = data["programs"]
    assert row["exit_code"] == 0 and row["min_s"] > 0 and row["peak_rss_bytes"] > 0
    assert row["npu_cycles"] > 0 and row["macs"] == 0
    assert row["median_cpu_s"] > 0 and row["gemm_macs_per_s"] > 0
    assert row["session_n"] == 2 and 0 < row["session_min_s"] <= row["session_median_s"] and row["session_boot_s"] > 0
    assert 0 < row["session_min_cpu_s"] <= row["session_median_cpu_s"]


def test_bench_missing_program():
    rc, out, err = run_fvp("bench", "nope.bpte", "--no-process")
    assert rc == 2 and "nope.bpte" in err and "Traceback" not in err


def test_bench_reports_a_failed_run_as_a_failure(tmp_path):
    out_json = tmp_path / "bench.json"
    rc, out, err = run_fvp("bench", CORPUS / "mobilenet_v1_025_u55-128.bpte", "--target", "ethos-u55-64",
                           "--repeat", "1", "--json", out_json)
    assert rc == 1 and "Traceback" not in err
    assert "FAILED: the run failed: exit status 1" in out
    (row,) = json.loads(out_json.read_text())["programs"]
    assert row["exit_code"] == 1 and "error" in row and "min_s" not in row


def test_bench_json_into_a_full_device_is_exit_1_and_stays_a_device(tmp_path):
    """--json goes through safe_write: a character device is written in place (never replaced by a file) and a
    full one is exit 1 with the errno's reason."""
    import os
    import stat

    import pytest

    full = tmp_path / "full"
    try:
        os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))  # /dev/full's numbers, made here
    except OSError:
        pytest.skip("cannot make a device node here (not root)")
    rc, out, err = run_fvp("bench", CORPUS / "add_u55-128.bpte", "--repeat", "1", "--no-process", "--json", full)
    assert rc == 1 and "No space left on device" in err and "Traceback" not in err, err
    assert stat.S_ISCHR(os.lstat(full).st_mode)
