"""Issue 27, items 3 and 4: a sweep file runs no code of its own unless the user says so (--allow-model-code),
a damaged results.jsonl row is ignored (its point runs again), and a compile in the shared cache that this
user's key did not seal is compiled again, never run."""

import json

import pytest

from fvp.host.sweep import command
from fvp.host.sweep.results import Journal, row_problem
from fvp.host.sweep.spec import code_it_runs, load_sweep


def _sweep(tmp_path, text):
    (tmp_path / "model.py").write_text("raise SystemExit('imported')\n")
    (tmp_path / "inputs.pt").write_bytes(b"\x80\x04.")
    path = tmp_path / "grid.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("program, says", [
    ("{model: model.py}", "model.py is code: ExecuTorch's compiler runs it"),
    ("{model: add, model_input: inputs.pt}", "model_input"),
    ("{model: add, flags: --delegate --so_library=/tmp/evil.so}", "'--so_library=/tmp/evil.so'"),
    ("{model: add, flags: --delegate -m model.py}", "'-m'"),
    ("{model: add, flags: --so /tmp/evil.so}", "'--so'"),  # an argparse abbreviation
    ("{model: add, flags: -ds /tmp/evil.so}", "'-ds'"),  # combined short options
    ("{model: add, flags: --calibration_data=x.pt}", "--calibration_data"),
])
def test_a_sweep_that_names_code_is_refused_without_the_flag(tmp_path, capsys, program, says):
    path = _sweep(tmp_path, f"programs: [{program}]\naxes: {{npu.variant: [ethos-u55-128]}}\n")
    rc = command.main([path, "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("fvp sweep: error:")]
    assert rc == 2 and len(lines) == 1 and says in lines[0] and "--allow-model-code" in lines[0], err
    assert not (tmp_path / "out").exists()


def test_safe_flags_and_built_in_models_need_no_flag(tmp_path):
    path = _sweep(tmp_path, "programs: [{model: add, flags: --delegate --quantize --bundleio --target=ethos-u55-64 "
                            "--config Arm/vela.ini}, {name: z, zoo: add}]\naxes: {npu.variant: [ethos-u55-128]}\n")
    assert code_it_runs(load_sweep(path)) == []
    path = _sweep(tmp_path, "programs: [{model: model.py}]\naxes: {npu.variant: [ethos-u55-128]}\n")
    assert len(code_it_runs(load_sweep(path))) == 1


GOOD = {"key": "k1", "program": "p", "status": "ok", "npu_cycles": 5, "inference_ms": 0.1, "sram_bytes": 8,
        "axes": {"npu.variant": "ethos-u55-128"}, "pmu": {"cycle_cntr": 5}, "memory_bytes": {"Sram": {"read": 1}},
        "notes": []}


@pytest.mark.parametrize("damage", [
    {"program": None}, {"key": ["unhashable"]}, {"status": "done"}, {"npu_cycles": "5"}, {"axes": [1]},
    {"memory_bytes": {"Sram": 5}}, {"pmu": {"x": [1]}}, {"notes": "n"}, {"extra": {"a": 1}},
])
def test_a_damaged_journal_row_is_ignored(tmp_path, damage):
    assert row_problem(GOOD) is None
    bad = {**GOOD, **damage, "key": damage.get("key", "k2")}
    del_program = {k: v for k, v in GOOD.items() if k != "program"} | {"key": "k3"}
    with open(tmp_path / "results.jsonl", "w") as f:
        for row in (GOOD, bad, del_program):
            f.write(json.dumps(row) + "\n")
        f.write("[1, 2]\n" + "{" * 100000 + "\n")
    j = Journal(str(tmp_path))
    j.close(compact=False)
    assert set(j.rows) == {"k1"} and j.damaged == 4 and row_problem(bad)
