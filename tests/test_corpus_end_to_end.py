"""Every bundled program of the corpus, on the board it was compiled for, prints Test_result: PASS."""

import pytest

from testutil import CORPUS, run_fvp

BOARDS = {
    "u55-64": ["--target", "ethos-u55-64"],
    "u55-256": ["--target", "ethos-u55-256"],
    "u65-256": ["--target", "ethos-u65-256"],
    "u65-512": ["--target", "ethos-u65-512"],
    "sramonly": ["-C", "npu.memory_mode=Sram_Only"],
}


def _board_args(name: str) -> list:
    for key, args in BOARDS.items():
        if key in name:
            return args
    return []


PROGRAMS = sorted(CORPUS.glob("*.bpte"))
CHECK = ["--check-stream", "warn"]  # the stream checker in the same run (tests/machine/npu/test_checker.py)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_bundled_program_passes(path):
    """... and its command streams do what they declare: no finding of the stream checker in the same run."""
    rc, out, err = run_fvp("run", path, *_board_args(path.stem), "-C", "firmware.options.log_outputs=false", *CHECK)
    assert "TEST: BundleIO index[0] Test_result: PASS" in out, out[-3000:] + err
    assert rc == 0
    assert "Info: /OSCI/SystemC: Simulation stopped by user." in out
    assert not [l for l in out.splitlines() if l.startswith(("E ", "F ", "E:"))]
    assert [line for line in (out + err).splitlines() if "stream check" in line] == []
