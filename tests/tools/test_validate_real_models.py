"""``tools/validate_real_models.py``: the parts that need neither Vela nor TFLite Micro's interpreter (the run's
diagnosis, the figures read from the log, the flags a user gives by hand, the table, the refusals)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from testutil import ROOT

sys.path.insert(0, str(ROOT / "tools"))

import validate_real_models as v  # noqa: E402


def test_the_first_problem_of_a_run():
    log = ("INFO - Allocating tensors\nE: NPU config mismatch: npu.macs_per_cc=7 optimizer.macs_per_cc=8 (ethosu.py:190)"
           "\nERROR - Node ethos-u (number 0) failed to invoke with status 1\n")
    assert v.first_problem(log) == "NPU config mismatch: npu.macs_per_cc=7 optimizer.macs_per_cc=8"
    assert v.first_problem("fvp: error: -C x: unknown key\n") == "-C x: unknown key"
    assert v.npu_total("INFO - NPU TOTAL cycles: 4394\n") == 4394
    assert v.npu_total("INFO - NPU TOTAL: 12 cycles\n") == 12  # mlek-25
    assert v.npu_total("no profile") is None


def test_flags_by_hand_are_mleks_layout_for_dedicated_sram():
    assert v.by_hand_args("ethos-u55-64", "Shared_Sram") == ["--target", "ethos-u55-64"]
    args = v.by_hand_args("ethos-u65-256", "Dedicated_Sram")
    assert "npu.memory_mode=Dedicated_Sram" in args and "firmware.pools.arena.region=DDR" in args
    assert f"firmware.pools.fast_scratch.size={384 << 10}" in args


def test_inputs_are_seeded_and_cover_the_type():
    a = v.make_inputs([(np.int8, (4, 64)), (np.int16, (3,)), (np.float32, (2, 2))], 1)
    b = v.make_inputs([(np.int8, (4, 64)), (np.int16, (3,)), (np.float32, (2, 2))], 1)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert a[0].dtype == np.int8 and a[0].min() < -100 and a[0].max() > 100
    assert a[2].dtype == np.float32


def test_table_and_refusals(capsys):
    rows = [v.Row("m", "TFLM", "u55-64", 2, 2, 2222, 451), v.Row("n", "MLPerf", "u65-256", 0, 2, None, None, "x")]
    v.print_table(rows)
    out = capsys.readouterr().out
    assert "| m | TFLM | u55-64 | 2/2 | 2,222 | 451 |  |" in out and "2 programs, 4 runs: 2 bit-exact" in out
    with pytest.raises(SystemExit):
        v.main(["--configs", "u99-1", "x.tflite"])
    with pytest.raises(SystemExit):
        v.main([])
