"""Honest NPU cycle figures end to end: PMU counts of every corpus run, monotonicity across NPU variants and
memory modes, the --profile table, the --trace file, `fvp compare` and the cycle validation script."""

import csv
import json
import subprocess
import sys

import pytest

from fvp.host.compare import run_board
from testutil import CORPUS, ROOT, run_fvp

def run(name, board="auto"):
    """``name`` on ``board`` (default: the board of its compile specs, as ``fvp run`` picks it)."""
    path = CORPUS / name
    return run_board(path.read_bytes(), name, board, ["firmware.options.log_outputs=false"])


PROGRAMS = sorted(p.name for p in CORPUS.glob("*.bpte")) + ["add_q.pte", "addint_u55.pte"]


@pytest.mark.parametrize("name", PROGRAMS)
def test_pmu_block_has_cycles_and_beats(name):
    r = run(name)
    assert r.exit_code == 0 and r.result in ("PASS", "ok"), (r.result, r.error)
    assert r.npu_cycles > 0
    assert r.pmu["cycle_cntr"] > 0
    assert abs(r.pmu["cycle_cntr"] - r.npu_cycles) <= r.npu_streams  # the counter counts the active cycles
    assert r.pmu["cntr0"] > 0  # AXI0 read beats
    assert r.pmu["cntr2"] > 0  # AXI0 write beats
    assert r.pmu_events[:3] == ["AXI0_RD_DATA_BEAT_RECEIVED", "AXI1_RD_DATA_BEAT_RECEIVED",
                                "AXI0_WR_DATA_BEAT_WRITTEN"]
    assert sum(d["read"] for d in r.memory_bytes.values()) > 0


def test_bigger_npu_is_faster():
    c64 = run("mobilenet_v1_025_u55-64.bpte").npu_cycles
    c128 = run("mobilenet_v1_025_u55-128.bpte").npu_cycles
    c256 = run("mobilenet_v1_025_u55-256.bpte").npu_cycles
    assert c256 < c128 < c64


def test_sram_only_moves_weights_from_axi1_to_axi0():
    shared = run("mobilenet_v1_025_u55-128.bpte", "default")
    sram = run("mobilenet_v1_025_u55-128.bpte", "default,npu.memory_mode=Sram_Only")
    assert shared.pmu["cntr1"] > 0 and sram.pmu["cntr1"] == 0  # no AXI1 reads left
    moved = shared.pmu["cntr1"]
    assert sram.pmu["cntr0"] >= shared.pmu["cntr0"] + moved - 5  # the weights (and commands) now on AXI0
    assert sram.npu_cycles < shared.npu_cycles  # SRAM is 8x faster than the flash
    assert "OffChipFlash" not in sram.memory_bytes or sram.memory_bytes["OffChipFlash"]["read"] == 0
    compiled = run("mobilenet_v1_025_u55-128_sramonly.bpte")
    assert compiled.memory_mode == "Sram_Only" and compiled.pmu["cntr1"] == 0


def test_profile_and_trace(tmp_path):
    trace = tmp_path / "t.json"
    rc, out, err = run_fvp("run", CORPUS / "mobilenet_v1_025_u55-128.bpte", "-C", "firmware.options.log_outputs=false",
                           "--profile", "--trace", trace)
    assert rc == 0, err
    assert "=== NPU profile" in out and "=== CPU profile" in out
    assert "cycles by what bounds them:" in out
    # the ports as the timing model has them: the FVP's timing adapters on this board (docs/timing.md 1.2)
    assert ("ports (read/write): AXI0 Sram 8.00/8.00 B/cycle, latency 32/32 (the FVP's timing adapter TA0); "
            "AXI1 OffChipFlash 1.12/1.12 B/cycle, latency 64/0 (the FVP's timing adapter TA1)") in out
    assert "EthosUBackend" in out and "quantize_per_tensor" in out
    doc = json.loads(trace.read_text())
    ev = doc["traceEvents"]
    npu_ops = [e for e in ev if e.get("ph") == "X" and e.get("pid") == 2 and e.get("tid") in (2, 3)]
    # one event per NPU kernel operation and DMA of the stream (the disassembler counts them)
    rc, dis, _ = run_fvp("disasm", "--summary", CORPUS / "mobilenet_v1_025_u55-128.bpte")
    kinds = [line.split()[2] for line in dis.splitlines() if line.startswith("#   0x")]
    assert len(npu_ops) == sum(1 for k in kinds if k in ("CONV", "DEPTHWISE", "POOL", "ELEMENTWISE", "DMA"))
    assert all(e["dur"] >= 0 and e["ts"] > 0 for e in npu_ops)
    names = {e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
    assert {"kernel operations", "DMA", "CPU kernels"} <= names
    cpu = [e for e in ev if e.get("ph") == "X" and e.get("pid") == 1 and e.get("tid") == 3]
    assert cpu and all("cpu_cycles" in e["args"] for e in cpu)


def test_trace_to_a_bad_path_is_a_usage_error(tmp_path):
    rc, out, err = run_fvp("run", CORPUS / "add_u55-128.bpte", "--trace", tmp_path / "no" / "such" / "dir.json")
    assert rc == 2
    assert err.strip().count("\n") == 0 and "fvp: error: --trace" in err
    assert "Traceback" not in err


def test_compare_boards(tmp_path):
    c, j, p = tmp_path / "c.csv", tmp_path / "c.json", tmp_path / "c.png"
    rc, out, err = run_fvp("compare", CORPUS / "mobilenet_v1_025_u55-128.bpte", "-c", "default",
                           "-c", "default,npu.memory_mode=Sram_Only", "--csv", c, "--json", j, "--plot", p)
    assert rc == 0, out + err
    for label in ("NPU cycles", "inference time (ms @ NPU clock)", "PMU cycle_cntr",
                  "PMU cntr1 (AXI1_RD_DATA_BEAT_RECEIVED)", "Sram bytes read", "OffChipFlash bytes read",
                  "CPU cycles (inference)", "method_allocator_used", "result"):
        assert label in out
    rows = list(csv.DictReader(c.open()))
    assert [r["memory_mode"] for r in rows] == ["Shared_Sram", "Sram_Only"]
    assert int(rows[0]["npu_cycles"]) > int(rows[1]["npu_cycles"]) > 0
    doc = json.loads(j.read_text())
    assert [b["result"] for b in doc["boards"]] == ["PASS", "PASS"]
    assert p.exists() or "needs matplotlib" in out


def test_compare_reports_a_board_that_cannot_run_the_program():
    rc, out, err = run_fvp("compare", CORPUS / "add_u55-128.bpte", "-c", "corstone-300-ethos-u55-256",
                           "-c", "corstone-300-ethos-u55-128")
    assert rc == 1
    rows = {line.split("  ")[0].strip(): line for line in out.splitlines()}
    assert "cannot run: a stream for ethos-u55-128 cannot run on ethos-u55-256" in rows["result"]
    assert rows["result"].rstrip().endswith("PASS")
    cycles = rows["NPU cycles"].split()
    assert cycles[2] == "-" and int(cycles[3].replace(",", "")) > 0  # no zeros for the board that cannot run it
    assert "fvp: note: [corstone-300-ethos-u55-256]" in err and "use --target ethos-u55-128" in err


def test_validate_cycles_fast():
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "validate_cycles.py"), "--fast"], capture_output=True,
                       text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    assert "ours/Vela" in out and "mobilenet_v1_025_u55-128.bpte" in out
    assert "not reproducible here" in out


def test_compare_several_programs_each_on_its_board(tmp_path):
    from testutil import CORPUS, run_fvp

    progs = [CORPUS / f"mobilenet_v1_025_u55-{m}.bpte" for m in (64, 128, 256)]
    out_json = tmp_path / "cmp.json"
    rc, out, err = run_fvp("compare", *progs, "--json", out_json)
    assert rc == 0, out + err
    assert "each on the board it was compiled for" in out
    import json

    runs = json.loads(out_json.read_text())["boards"]
    variants = [r["variant"] for r in runs]
    cycles = [r["npu_cycles"] for r in runs]
    assert variants == ["ethos-u55-64", "ethos-u55-128", "ethos-u55-256"]
    assert all(r["result"] == "PASS" for r in runs)
    assert cycles[0] > cycles[1] > cycles[2] > 0
    rc, out, err = run_fvp("compare", *progs, "-c", "default")
    assert rc == 2 and "give one board per model" in err


def test_compare_plot_reads_at_a_glance(tmp_path, monkeypatch):
    """fvp compare --plot of one network per NPU: the file names' shared part is the title (whole in the saved
    figure), each bar says what tells it apart with its NPU and memory mode, the legend is off the bars."""
    pytest.importorskip("matplotlib")
    from fvp.host import plotting

    seen = []
    real_save = plotting.save

    def keep(fig, path):
        fig.canvas.draw()
        seen.append((fig, fig.canvas.get_renderer()))
        real_save(fig, path)

    monkeypatch.setattr(plotting, "save", keep)
    zoo = ROOT / "fvp" / "host" / "programs" / "zoo" / "programs"
    p = tmp_path / "cmp.png"
    rc, out, err = run_fvp("compare", *(zoo / f"add_q_ethos-u55-{n}.bpte" for n in (64, 128)), "--plot", p)
    assert rc == 0, err
    (fig, renderer), = seen
    assert fig._suptitle.get_text() == "fvp compare: add_q_ethos-u55-{64,128}.bpte"
    a1, a2 = fig.axes
    assert [t.get_text() for t in a1.get_xticklabels()] == ["64\nethos-u55-64\nShared_Sram",
                                                            "128\nethos-u55-128\nShared_Sram"]
    assert not a2.get_legend().get_window_extent(renderer).overlaps(a2.get_window_extent(renderer))
    assert p.stat().st_size > 1000
