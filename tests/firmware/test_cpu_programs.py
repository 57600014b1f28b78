"""Real float programs whose operators run on the CPU's portable kernels (tests/data/cpu_programs): each must load
(no ``Missing operator``), run, and match PyTorch's bundled outputs within the runner's default tolerance."""

from __future__ import annotations

import pytest

from testutil import DATA, run_fvp

PROGRAMS = sorted(p.name for p in (DATA / "cpu_programs").glob("*.bpte"))


def test_cpu_programs_present():
    assert len(PROGRAMS) >= 5


@pytest.mark.parametrize("name", PROGRAMS)
def test_cpu_program_passes_its_bundled_check(name):
    rc, out, err = run_fvp("run", DATA / "cpu_programs" / name, "-C", "firmware.options.log_outputs=false")
    assert "TEST: BundleIO index[0] Test_result: PASS" in out, out[-3000:] + err
    assert rc == 0 and "Missing operator" not in out
