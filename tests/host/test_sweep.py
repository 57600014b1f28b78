"""``fvp sweep``: the sweep file's validation and expansion, the choice of compile per point (exact, what-if,
compiled by ExecuTorch, needs-compile), a small sweep on a local process pool and on a real local Dask cluster
(two loopback workers), both checked against single ``fvp run`` results, resume and failure isolation."""

import json
import os
import re
import stat
import sys
import textwrap

import pytest

from fvp.boards import ConfigProblems
from fvp.host.sweep.plan import Planner
from fvp.host.sweep.results import Journal, pareto
from fvp.host.sweep.spec import load_sweep, parse_sweep
from testutil import ROOT, run_fvp

ZOO = ROOT / "fvp" / "host" / "programs" / "zoo" / "programs"

GRID = """
name: tiny
programs:
  - zoo: add
axes:
  npu.variant: [ethos-u55-64, ethos-u55-128]
  axi1.clock_scale: [0.125, 0.25]
skip:
  - {npu.variant: ethos-u55-64, axi1.clock_scale: 0.25}
"""


def _write(tmp_path, text, name="grid.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


class _NoET:
    available = False
    misses = 0


def _problems(tmp_path, text):
    with pytest.raises(ConfigProblems) as e:
        load_sweep(_write(tmp_path, text))
    return e.value.problems


# ------------------------------------------------------------------------------------------------ the file
def test_bad_sweep_files_are_one_line_errors_naming_the_key(tmp_path):
    cases = {
        "programs: [{zoo: add}]\naxes: {npu.variant: []}\n": "axes.npu.variant: expected a non-empty list",
        "programs: [{zoo: add}]\naxes: {x: {start: 1, stop: 0, step: 1}}\n": "axes.x: step must be > 0",
        "programs: [{zoo: add}]\naxes: {ethosu.num_macs: [64]}\n": "ethosu.num_macs: use npu.variant",
        "programs: [{zoo: add}]\naxes: {axi1.speed: [1]}\n": "axi1.speed: unknown port field",
        "programs: [{zoo: add}]\nzip: [{a: [1, 2], b: [1]}]\n": "zip[0]: the lists differ in length",
        "programs: [{zoo: add}]\naxes: {a: [1]}\nskip: [{b: 1}]\n": "skip[0].b: not an axis",
        "programs: [{zoo: nosuch}]\n": "programs[0].zoo: 'nosuch' is not in the model zoo",
        "programs: [{files: [missing.pte]}]\n": "programs[0].files: missing.pte: no such program file",
        "programs: [{zoo: add}]\nmismatch: maybe\n": "mismatch: 'maybe'; allowed: compile, what-if",
        "programs: [{zoo: add}]\naxis: {}\n": "unknown key(s) axis",
    }
    for text, want in cases.items():
        problems = _problems(tmp_path, text)
        assert any(want in p for p in problems), (text, problems)
        assert all("\n" not in p and p.startswith(str(tmp_path)) for p in problems)


def test_bad_axis_value_is_reported_against_the_board(tmp_path):
    from fvp.host.sweep.plan import check_axes

    spec = load_sweep(_write(tmp_path, "programs: [{zoo: add}]\naxes: {npu.memory_mode: [Shared_Sram, Fast]}\n"))
    with pytest.raises(ConfigProblems) as e:
        check_axes(spec)
    assert len(e.value.problems) == 1 and "axes.npu.memory_mode: Fast:" in e.value.problems[0]


def test_axes_ranges_zip_and_skip_expand():
    spec = parse_sweep({"programs": [{"zoo": "add"}],
                        "axes": {"a": {"start": 1, "stop": 7, "step": 3}, "b": {"start": 0.0625, "stop": 0.25,
                                                                               "factor": 2}},
                        "zip": [{"c": ["x", "y"], "d": [1, 2]}],
                        "skip": [{"a": 4, "c": "y"}, {"b": ["0.25"]}]})
    assert spec.axes == {"a": [1, 4, 7], "b": [0.0625, 0.125, 0.25]}
    pts = spec.points()
    assert len(pts) == 18 - 3 - 6 + 1  # 3 x 3 x 2; (a=4, c=y): 3 points, b=0.25: 6 points, both: 1
    assert spec.n_skipped() == 8
    assert {"a": 1, "b": 0.0625, "c": "x", "d": 1} in pts
    assert all(not (p["a"] == 4 and p["c"] == "y") and p["b"] != 0.25 for p in pts)


def test_pareto_front():
    pts = [(1, 9), (2, 5), (3, 6), (4, 1), (2, 7)]
    assert pareto(pts) == [(1, 9), (2, 5), (4, 1)]


# ------------------------------------------------------------------------------------------------ choices
def test_each_point_gets_the_compile_for_its_npu_or_is_told_it_needs_one(tmp_path):
    spec = load_sweep(_write(tmp_path, """
        programs: [{zoo: add}]
        axes:
          npu.variant: [ethos-u55-128, ethos-u55-32]
          npu.memory_mode: [Shared_Sram, Sram_Only]
    """))
    plan = Planner(spec, compiler=_NoET()).plan()
    tasks = {(t["axes"]["npu.variant"], t["axes"]["npu.memory_mode"]): t for t in plan.tasks}
    rows = {(r["axes"]["npu.variant"], r["axes"]["npu.memory_mode"]): r for r in plan.rows}
    assert list(tasks) == [("ethos-u55-128", "Shared_Sram")]
    assert tasks[("ethos-u55-128", "Shared_Sram")]["program_file"] == "zoo:add_q_ethos-u55-128.bpte"
    assert tasks[("ethos-u55-128", "Shared_Sram")]["stream"] == "exact"
    # another memory mode needs a compile by default; a variant without a compile can never run its stream
    assert rows[("ethos-u55-128", "Sram_Only")]["status"] == "needs-compile"
    assert "mismatch: what-if" in rows[("ethos-u55-128", "Sram_Only")]["reason"]
    assert rows[("ethos-u55-32", "Shared_Sram")]["status"] == "needs-compile"
    assert "needs ExecuTorch" in rows[("ethos-u55-32", "Shared_Sram")]["reason"]
    # what-if: the variant's stream with the point's memory mode and its pools; still nothing for U55-32
    spec.mismatch = "what-if"
    plan = Planner(spec, compiler=_NoET()).plan()
    tasks = {(t["axes"]["npu.variant"], t["axes"]["npu.memory_mode"]): t for t in plan.tasks}
    assert tasks[("ethos-u55-128", "Sram_Only")]["stream"] == "what-if"
    assert "npu.memory_mode=Sram_Only" in tasks[("ethos-u55-128", "Sram_Only")]["overrides"]
    assert {r["axes"]["npu.variant"] for r in plan.rows} == {"ethos-u55-32"}


FAKE_AOT = r'''#!{python}
# stands in for ExecuTorch's python: "-m executorch.backends.arm.scripts.aot_arm_compiler ..." copies the zoo's
# compile for --target (a real compile of the same model); counts its calls. --output as ExecuTorch 1.5.1 takes
# it: a file name only when it ends in .pte/.bpte, otherwise a folder it creates (and writes <model>_....bpte in)
import os, shutil, sys
args = dict(a.split("=", 1) for a in sys.argv[3:] if a.startswith("--") and "=" in a)
with open({log!r}, "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\n")
out = args["--output"]
if not out.endswith((".pte", ".bpte")):
    os.makedirs(out, exist_ok=True)
    out = os.path.join(out, "add_arm_delegate_" + args["--target"] + ".bpte")
shutil.copy({zoo!r} + "/add_q_" + args["--target"] + ".bpte", out)
'''


def test_points_without_a_compile_are_compiled_with_executorch_and_cached(tmp_path, monkeypatch):
    log = tmp_path / "calls.log"
    fake = tmp_path / "fake_python"
    fake.write_text(FAKE_AOT.format(python=sys.executable, log=str(log), zoo=str(ZOO)))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("EXECUTORCH_PYTHON", str(fake))
    monkeypatch.setenv("FVP_CACHE_DIR", str(tmp_path / "cache"))
    prog = tmp_path / "add.bpte"
    prog.write_bytes((ZOO / "add_q_ethos-u55-128.bpte").read_bytes())
    path = _write(tmp_path, """
        programs: [{name: add, files: [add.bpte], model: add}]
        axes: {npu.variant: [ethos-u55-128, ethos-u55-256]}
    """)
    for _ in range(2):
        plan = Planner(load_sweep(path), log=lambda s: None).plan()
        by = {t["axes"]["npu.variant"]: t for t in plan.tasks}
        assert by["ethos-u55-128"]["stream"] == "exact" and by["ethos-u55-256"]["stream"] == "compiled"
        assert by["ethos-u55-256"]["compiled_for"]["target"] == "ethos-u55-256"
    calls = log.read_text().splitlines()
    assert len(calls) == 1 and "--target=ethos-u55-256" in calls[0] and "--memory_mode=Shared_Sram" in calls[0]
    # a compile someone else planted or changed in the shared cache (no seal of this user's key) is compiled again
    (cached,) = (tmp_path / "cache" / "sweep-compiles").glob("*/*.bpte")
    real = cached.read_bytes()
    cached.write_bytes((ZOO / "add_q_ethos-u55-128.bpte").read_bytes())
    Planner(load_sweep(path), log=lambda s: None).plan()
    assert len(log.read_text().splitlines()) == 2 and cached.read_bytes() == real


# ------------------------------------------------------------------------------------------------ running
def _single_run(task):
    """The same point as one ``fvp run``: its PMU block."""
    name = task["program_file"].split(":")[-1]
    args = ["run", str(ZOO / name), "-c", task["board"]]
    for o in task["overrides"]:
        args += ["-C", o]
    rc, out, err = run_fvp(*args)
    assert rc == 0, err
    pmu = {m.group(1): int(m.group(2)) for m in re.finditer(r"ethosu_pmu_(cycle_cntr|cntr\d+)\s*:\s*(\d+)", out)}
    return pmu


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory):
    from fvp.host.sweep.command import run_sweep

    d = tmp_path_factory.mktemp("sweep")
    path = d / "grid.yaml"
    path.write_text(GRID)
    res = run_sweep(str(path), str(d / "out"), jobs=2, plot=False, plain_progress=True)
    return path, d, res


def test_local_sweep_rows_match_single_runs(local_sweep):
    path, d, res = local_sweep
    rows = res["rows"]
    assert res["ran"] == 3 and len(rows) == 3 and all(r["status"] == "ok" for r in rows)
    plan = Planner(load_sweep(str(path)), compiler=_NoET()).plan()
    for task in plan.tasks:
        row = next(r for r in rows if r["key"] == task["key"])
        assert row["pmu"] == _single_run(task)
        assert row["npu_cycles"] == row["pmu"]["cycle_cntr"]
        assert row["inference_ms"] == pytest.approx(row["npu_cycles"] / row["npu_clock_hz"] * 1e3)
        assert row["bundled_check"] == "pass"
        assert row["simulator"].startswith("fvp ") and row["board_sha"]
        assert row["axi1_memory"] == "OffChipFlash" and row["axi1_read_bytes"] > 0
    # a slower flash costs cycles
    by = {(r["axes"]["npu.variant"], r["axes"]["axi1.clock_scale"]): r["npu_cycles"] for r in rows}
    assert by[("ethos-u55-128", 0.125)] > by[("ethos-u55-128", 0.25)]
    csv_text = (d / "out" / "results.csv").read_text().splitlines()
    assert csv_text[0].startswith("npu.variant,axi1.clock_scale,program,status") and len(csv_text) == 4


def test_rerun_skips_finished_points(local_sweep):
    from fvp.host.sweep.command import run_sweep

    path, d, first = local_sweep
    res = run_sweep(str(path), str(d / "out"), jobs=2, plot=False, plain_progress=True)
    assert res["ran"] == 0 and res["reused"] == 3
    assert [r["npu_cycles"] for r in res["rows"]] == [r["npu_cycles"] for r in first["rows"]]


def test_journal_keeps_complete_rows_of_an_interrupted_sweep(tmp_path):
    j = Journal(str(tmp_path))
    j.add({"key": "a", "program": "p", "status": "ok", "npu_cycles": 5, "inference_ms": 0.1, "sram_bytes": 8})
    j.add({"key": "b", "program": "p", "status": "error"})
    j.close(compact=False)
    with open(tmp_path / "results.jsonl", "a") as f:
        f.write('{"key": "c", "sta')  # a line cut by a kill
    j = Journal(str(tmp_path))
    assert set(j.rows) == {"a", "b"} and j.done("a") and not j.done("b")  # errors run again


def test_a_failing_point_does_not_stop_the_sweep(tmp_path):
    from fvp.host.sweep.command import run_sweep

    path = _write(tmp_path, """
        programs: [{zoo: add}]
        axes:
          npu.variant: [ethos-u55-128]
          firmware.pools.method.size: [60MiB, 64]
    """)
    res = run_sweep(path, str(tmp_path / "out"), jobs=1, plot=False, plain_progress=True)
    st = {r["axes"]["firmware.pools.method.size"]: r for r in res["rows"]}
    assert st["60MiB"]["status"] == "ok"
    assert st[64]["status"] in ("fail", "error") and st[64]["reason"]


def test_cli_reports_a_bad_file_in_one_line(tmp_path):
    path = _write(tmp_path, "programs: [{zoo: add}]\naxes: {npu.variant: {start: 1}}\n")
    rc, out, err = run_fvp("sweep", path)
    assert rc == 2
    assert err.strip().count("\n") == 0 and "axes.npu.variant: a range needs start, stop" in err
    rc, out, err = run_fvp("sweep", path, "--cluster", "ray://127.0.0.1:10001")
    assert rc == 2


def test_sweep_on_a_local_dask_cluster_matches_the_local_rows(local_sweep):
    distributed = pytest.importorskip("distributed", reason="the cluster test needs Dask distributed "
                                                            "(pip install '.[cluster]')")
    from fvp.host.sweep.command import run_sweep

    path, d, local = local_sweep
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None, silence_logs=40) as cluster:
        res = run_sweep(str(path), str(d / "dask"), cluster=cluster.scheduler_address, plot=False,
                        plain_progress=True)
    assert res["ran"] == 3
    want = {r["key"]: r for r in local["rows"]}
    for r in res["rows"]:
        w = want[r["key"]]
        for k in ("status", "npu_cycles", "pmu", "memory_bytes", "memory_stats", "board_sha", "sram_bytes",
                  "cpu_cycles", "simulator"):
            assert r[k] == w[k], k
    assert len({r["pid"] for r in res["rows"]}) >= 1
    meta = json.loads((d / "dask" / "meta.json").read_text())
    assert meta["where"] == "a Dask cluster" and meta["ran"] == 3


def test_plots(local_sweep, tmp_path, monkeypatch):
    """The plots read at a glance: every legend outside its axes (off the data), no colour used twice for two
    series of a panel, the axis values in the sweep file's order, the titles whole in the saved figure."""
    pytest.importorskip("matplotlib")
    from fvp.host import plotting
    from fvp.host.sweep.results import write_plots

    figures = []
    real_save = plotting.save

    def keep(fig, path):
        fig.canvas.draw()
        figures.append((os.path.basename(str(path)), fig, fig.canvas.get_renderer()))
        real_save(fig, path)

    monkeypatch.setattr(plotting, "save", keep)
    path, d, res = local_sweep
    files = write_plots(res["rows"], ["npu.variant", "axi1.clock_scale"], tmp_path, "tiny",
                        {"npu.variant": ["ethos-u55-64", "ethos-u55-128"], "axi1.clock_scale": ["0.125", "0.25"]})
    assert [os.path.basename(f) for f in files] == ["cycles.png", "pareto.png"]
    assert all(os.path.getsize(f) > 1000 for f in files)
    for name, fig, renderer in figures:
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is not None:
                assert not legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer)), name
            lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 1]
            assert len({(ln.get_color(), ln.get_linestyle(), ln.get_marker()) for ln in lines}) == len(lines), name
        if name == "cycles.png":
            assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["ethos-u55-64", "ethos-u55-128"]
    assert len(set(plotting.colours(20))) == 20 and len(set(plotting.colours(30))) == 30
    assert plotting.short_labels(["m_ethos-u55-64.bpte", "m_ethos-u55-128.bpte"]) == \
        (["64", "128"], "m_ethos-u55-{64,128}.bpte")


@pytest.mark.executorch
def test_a_point_that_needs_a_compile_is_compiled_by_the_real_aot_arm_compiler(tmp_path, monkeypatch):
    """ExecuTorch's own aot_arm_compiler (1.5.1) compiles the point no program exists for (add for ethos-u55-32,
    which the zoo does not have); the row runs it and passes its bundled check; a second plan reuses it."""
    from testutil import executorch_python

    from fvp.host.sweep.command import run_sweep

    monkeypatch.setenv("EXECUTORCH_PYTHON", executorch_python())
    monkeypatch.setenv("FVP_CACHE_DIR", str(tmp_path / "cache"))
    path = _write(tmp_path, """
        programs: [{zoo: add, model: add}]
        axes: {npu.variant: [ethos-u55-32]}
    """)
    res = run_sweep(path, str(tmp_path / "out"), jobs=1, plot=False, plain_progress=True)
    (row,) = res["rows"]
    assert row["status"] == "ok", row["reason"]
    assert row["stream"] == "compiled" and row["compiled_for"]["target"] == "ethos-u55-32"
    assert row["variant"] == "ethos-u55-32" and row["bundled_check"] == "pass" and row["npu_cycles"] > 0
    compiled = list((tmp_path / "cache" / "sweep-compiles").glob("*/add_ethos-u55-32_Shared_Sram.bpte"))
    assert len(compiled) == 1 and not list(compiled[0].parent.glob("compile-*"))  # no work folder left behind
    log = []
    plan = Planner(load_sweep(path), log=log.append).plan()
    assert plan.compiles == 0 and not log and plan.tasks[0]["program_sha256"] == row["program_sha256"]


def test_a_what_if_stream_that_needs_the_fast_scratch_cannot_run_and_says_why(tmp_path):
    """A stream compiled for Dedicated_Sram addresses the NPU's fast scratch (region 2): on a runner built for
    Sram_Only (no dedicated_sram) the Ethos-U faults at address 0 + offset. The plan says so per point
    (cannot-run, with the reason) instead of running it into 'Ethos-U invocation failed error (-1)'."""
    from fvp.host.sweep.plan import FAST_SCRATCH_REGION, stream_regions

    from testutil import CORPUS

    dedicated = (CORPUS / "mobilenet_v1_025_u65-256.bpte").read_bytes()
    assert FAST_SCRATCH_REGION in stream_regions(dedicated)
    assert FAST_SCRATCH_REGION not in stream_regions((ZOO / "mobilenet_v1_025_q_ethos-u65-256.bpte").read_bytes())
    path = _write(tmp_path, f"""
        programs: [{{files: [{CORPUS / 'mobilenet_v1_025_u65-256.bpte'}]}}]
        mismatch: what-if
        axes:
          npu.variant: [ethos-u65-256]
          npu.memory_mode: [Sram_Only, Dedicated_Sram]
    """)
    plan = Planner(load_sweep(path), compiler=_NoET()).plan()
    (row,) = plan.rows
    assert row["axes"]["npu.memory_mode"] == "Sram_Only" and row["status"] == "cannot-run"
    assert "addresses the NPU's fast scratch (region 2)" in row["reason"] and "Sram_Only" in row["reason"]
    (task,) = plan.tasks
    assert task["axes"]["npu.memory_mode"] == "Dedicated_Sram" and task["stream"] == "exact"


def test_progress_lines_count_the_points_planning_could_not_run(tmp_path, monkeypatch):
    import io

    import fvp.host.tutorial as tutorial
    from fvp.host.sweep.command import run_sweep

    monkeypatch.setattr(tutorial, "executorch_python", lambda: None)  # no compiles: u55-32 needs one
    path = _write(tmp_path, """
        programs: [{zoo: add}]
        axes: {npu.variant: [ethos-u55-128, ethos-u55-32]}
    """)
    err = io.StringIO()
    res = run_sweep(path, str(tmp_path / "out"), jobs=1, plot=False, plain_progress=True, out=io.StringIO(), err=err)
    assert [r["status"] for r in res["rows"]] == ["ok", "needs-compile"]
    assert "1/1 points run (1 not ok: 0 of those run, 1 not runnable)" in err.getvalue(), err.getvalue()
    assert f"results in {tmp_path / 'out'}" in err.getvalue()


@pytest.mark.parametrize("name", ["mobilenet.yaml", "mobilenet-whatif.yaml"])
def test_the_docs_showcases_run_every_point_without_executorch(name):
    """docs/sweeps/*.yaml: every point has a program to run (the model zoo's, in the package), so the README's
    commands end with exit status 0 on its install; the plan alone says so (nothing needs a compile)."""
    spec = load_sweep(str(ROOT / "docs" / "sweeps" / name))
    plan = Planner(spec, compiler=_NoET()).plan()
    assert plan.rows == [] and len(plan.tasks) == len(spec.points())
    assert all(t["program_file"].startswith(("zoo:", "mobilenet_v1_025_q_")) for t in plan.tasks)
    if name == "mobilenet.yaml":
        assert {t["stream"] for t in plan.tasks} == {"exact"}
    else:
        assert {t["stream"] for t in plan.tasks} == {"exact", "what-if"}
