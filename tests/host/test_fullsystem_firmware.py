"""The project's full-system test firmware (tests/data/fullsystem): the committed ELF is what its sources build."""

import shutil
import subprocess

import pytest

from testutil import DATA

SRC = DATA / "fullsystem" / "src"


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="needs arm-none-eabi-gcc (Debian: "
                    "apt-get install gcc-arm-none-eabi)")
def test_the_committed_elf_is_what_its_sources_build(tmp_path):
    out = tmp_path / "fullsystem_test.elf"
    p = subprocess.run(["make", "-s", "-C", str(SRC), f"BUILD={tmp_path / 'build'}", f"OUT={out}"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert out.read_bytes() == (DATA / "fullsystem" / "fullsystem_test.elf").read_bytes(), \
        "rebuild it: make -C tests/data/fullsystem/src"
