"""Where a run's time and memory go (issue 30 item 7): ``--profile`` ends with one summary in one unit (simulated
microseconds: CPU busy, NPU busy, both at once, the CPU waiting for the NPU, per delegate), and every run ends
with its memory high-water marks per memory and pool (``fvp inspect`` gives them before a run)."""

import json
import re

import pytest

from testutil import CORPUS, run_fvp

MV1 = CORPUS / "mobilenet_v1_025_u55-128.bpte"


@pytest.fixture(scope="module")
def mv1_profile():
    rc, out, err = run_fvp("run", MV1, "--profile")
    assert rc == 0, err
    return out, err


def _us(text, label):
    m = re.search(rf"^{re.escape(label)}\s+([\d,.]+) us", text, re.M)
    assert m, (label, text[-2000:])
    return float(m.group(1).replace(",", ""))


def test_profile_ends_with_where_the_time_went(mv1_profile):
    out, _ = mv1_profile
    block = out[out.index("=== Where the time went: 1 inference, "):]
    total = float(re.search(r"1 inference, ([\d,.]+) us", block).group(1).replace(",", ""))
    cpu, npu = _us(block, "CPU busy"), _us(block, "NPU busy")
    both, waiting, neither = (_us(block, "  CPU and NPU at once"), _us(block, "  CPU waiting for the NPU"),
                              _us(block, "CPU asleep, NPU idle"))
    assert cpu + npu - both + neither == pytest.approx(total, abs=0.3)  # every microsecond counted once
    assert npu == pytest.approx(both + waiting, abs=0.2)
    # the NPU's time is its cycle count at its clock, the same figure the profile's NPU total gives
    ms = float(re.search(r"NPU total: [\d,]+ cycles in 1 command stream\(s\) = ([\d.]+) ms", out).group(1))
    assert npu == pytest.approx(ms * 1000, abs=1)
    # the runner's "Inference CPU ratio" is the CPU-busy share of the inference (the input quantize dominates)
    ratio = float(re.search(r"Inference CPU ratio: ([\d.]+) %", out).group(1))
    assert 100 * cpu / total == pytest.approx(ratio, abs=0.5)
    d = re.search(r"delegate EthosUBackend\S* \(1 call\): ([\d,.]+) us, of which NPU busy ([\d,.]+) us, "
                  r"CPU busy ([\d,.]+) us", block)
    call, in_npu, in_cpu = (float(g.replace(",", "")) for g in d.groups())
    assert in_npu == pytest.approx(npu, abs=0.1) and call == pytest.approx(in_npu + in_cpu, abs=0.2)


def test_every_run_ends_with_its_memory_high_water_marks(mv1_profile):
    out, err = mv1_profile
    line = [ln for ln in err.splitlines() if ln.startswith("fvp: memory high-water marks: ")]
    assert len(line) == 1, err
    used = int(re.search(r"method_allocator_used:\s+(\d+)", out).group(1))
    facts = json.loads(run_fvp("inspect", MV1, "--json")[1])
    scratch = facts["methods"][0]["pools_needed"]["temp"]
    assert f"SRAM {scratch / 1024:.1f} KiB (temp {scratch / 1024:.1f} KiB of 2.0 MiB)" in line[0]
    assert f"method {used / 1024:.1f} KiB of 60.0 MiB" in line[0]
    # before the run, fvp inspect says the same SRAM and a lower bound on the method pool (its planned buffers)
    mem = facts["memory"]
    assert mem["board"] == "corstone-300-ethos-u55-128" and mem["memory_mode"] == "Shared_Sram"
    assert mem["regions"]["SRAM"] == {"bytes": scratch, "complete": True}
    assert mem["placements"]["method"]["bytes"] == facts["methods"][0]["planned_bytes"] <= used
    text = run_fvp("inspect", MV1)[1]
    assert f"SRAM {scratch / 1024:.1f} KiB (temp {scratch / 1024:.1f} KiB: Ethos-U scratch)" in text


def test_a_pool_without_statistics_is_said_not_guessed():
    rc, out, err = run_fvp("run", CORPUS / "add_u55-128.bpte", "-C", "firmware.allocator=minimal")
    assert rc == 0
    assert "DDR >= " in err and "method ? of 60.0 MiB: its use is not reported" in err
