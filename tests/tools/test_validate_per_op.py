"""The per-operation comparison with Vela (tools/vela_per_op.py, ``tools/validate_cycles.py --per-op``): the
table is printed, every NPU operation of ours is mapped to exactly one operation Vela scheduled, the cached
Vela 5.1 figures agree with the corpus compile logs, and the cache's parser reads what the installed Vela writes.
"""

import json
import shutil
import subprocess
import sys

import pytest

from testutil import CORPUS, DATA, ROOT

sys.path.insert(0, str(ROOT / "tools"))
import vela_per_op  # noqa: E402

WAITS = ("STOP", "IRQ", "PMU_MASK", "DMA_WAIT", "KERNEL_WAIT")


def test_per_op_maps_every_npu_operation():
    """ds_cnn: two delegates, convolutions, depthwise, a transpose split into 69 POOLs, weight DMAs."""
    spec, streams = vela_per_op.run_ours(CORPUS / "ds_cnn_u55-128.bpte")
    res = vela_per_op.compare_program(CORPUS / "ds_cnn_u55-128.bpte", streams=streams)
    assert res["problems"] == []
    assert len(res["streams"]) == 2 and all(s["exact"] for s in res["streams"])
    for si, s in enumerate(streams):
        ours = [t.index for t in s.timing.per_op if t.kind not in WAITS]
        mapped = [i for r in res["rows"] if r["stream"] == si for i in r["ours_index"]]
        assert sorted(mapped) == ours  # every kernel operation and DMA exactly once
        rows = [r for r in res["rows"] if r["stream"] == si]
        assert sum(r["ours"] for r in rows) <= s.npu_cycles
    rows = res["rows"]
    assert [r["operator"] for r in rows[:3]] == ["Conv2D", "DepthwiseConv2D", "Conv2D"]
    assert sum(len(r["ours_index"]) for r in rows if r["operator"] == "Transpose") == 69
    assert all(r["vela_macs"] == r["ours_macs"] for r in rows if r["operator"] in ("Conv2D", "DepthwiseConv2D"))
    assert all(r["flag"] == (r["ratio"] > 1.5 or r["ratio"] < 1 / 1.5) for r in rows)
    assert res["vela_sum"] == res["vela_log_total"] == 108_161  # the compile log's "Total cycles"


def test_validate_cycles_per_op_prints_the_table():
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "validate_cycles.py"), "--per-op",
                        "conv1d_u55-128.bpte"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "=== conv1d_u55-128.bpte" in out
    assert "Vela bound" in out and "our bound" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("conv1d_u55-128.bpte"))
    assert "exact (same stream)" in line and "527" in line  # Vela's log total for conv1d


def test_cache_agrees_with_the_compile_logs():
    doc = json.loads(vela_per_op.CACHE.read_text())
    checked = 0
    for name, entry in doc["programs"].items():
        if "error" in entry:
            continue
        assert all(d.get("vela") == "5.1.0" for d in entry["delegates"]), name
        total = sum(o["op_cycles"] for d in entry["delegates"] for o in d["ops"])
        log = vela_per_op.vela_log_total(CORPUS / entry["log"])
        if all(d["stream_in_program"] for d in entry["delegates"]):
            assert total == log, name  # the same compile: the same figures
            checked += 1
        else:  # a proxy compile of the same network's U55-128 TOSA: within 0.1 % of the program's own log
            assert abs(total - log) <= 0.001 * log, name
    assert checked >= 10


@pytest.mark.skipif(shutil.which("vela") is None, reason="Vela is not installed")
def test_refresh_parses_the_installed_vela():
    """The debug-database parser on whatever Vela is installed (5.2 in the test extra): one operation per
    row of Vela's performance table, each with its command-stream offset and the kernel commands it emitted."""
    d = vela_per_op.run_vela("vela", DATA / "vela_per_op_conv1d.tosa", "ethos-u55-128",
                             "Ethos_U55_High_End_Embedded", "Shared_Sram")
    ops = d["ops"]
    assert ops and all(o["offset"] is not None for o in ops)
    assert sum(len(vela_per_op._sig(o)) for o in ops) >= 1
    assert any(o["operator"] == "Conv2D" and o["macs"] == 1440 for o in ops)
    assert all(o["op_cycles"] >= o["npu_cycles"] for o in ops)
