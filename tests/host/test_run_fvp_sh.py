"""ExecuTorch's ``backends/arm/scripts/run_fvp.sh``, unchanged, against the drop-in, in the minimal tree that
docs/tutorial.md section 5 describes: the script and an ``examples/arm/arm-scratch/setup_path.sh``.

The script is read from an ExecuTorch git directory (``EXECUTORCH_GIT_DIR``, at the commit of the
``executorch-main-*`` profile) or a checkout (``EXECUTORCH_ROOT``); the project keeps no copy of it, so without
one the tests are skipped. ``setup_path.sh`` puts a directory of wrappers for the drop-in binaries on ``PATH``
(what it does for Arm's FVPs; an installed package needs no line at all).
"""

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from testutil import CORPUS, ROOT, run_fvp
from test_dropin import make_elf, needs_elf

sys.path.insert(0, str(ROOT))
from firmware.executorch.profiles import MAIN_COMMIT  # noqa: E402

GIT_DIR = os.environ.get("EXECUTORCH_GIT_DIR", "/work/.mirror/pytorch+executorch/repo")
ET_ROOT = os.environ.get("EXECUTORCH_ROOT")
ZOO = ROOT / "fvp" / "host" / "programs" / "zoo" / "programs"
BINARIES = {"FVP_Corstone_SSE-300_Ethos-U55": "main_u55", "FVP_Corstone_SSE-300_Ethos-U65": "main_u65",
            "FVP_Corstone_SSE-320": "main_u85"}


from testutil import run_fvp_sh_source  # noqa: E402

SCRIPT = run_fvp_sh_source()
# without the script these tests are deselected, not skipped (tests/conftest.py; `-m run_fvp_sh` asks for them)
pytestmark = pytest.mark.run_fvp_sh


@pytest.fixture
def et_tree(tmp_path):
    """<root>/backends/arm/scripts/run_fvp.sh and <root>/examples/arm/arm-scratch/setup_path.sh."""
    root = tmp_path / "executorch"
    (root / "backends/arm/scripts").mkdir(parents=True)
    (root / "backends/arm/scripts/run_fvp.sh").write_bytes(SCRIPT)
    (root / "examples/arm/arm-scratch").mkdir(parents=True)
    bindir = tmp_path / "fvp-bin"
    bindir.mkdir()
    for name, func in BINARIES.items():
        w = bindir / name
        w.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import sys; from fvp.host.dropin.command import {func}; "
                     f"sys.exit({func}())' \"$@\"\n")
        w.chmod(0o755)
    (root / "examples/arm/arm-scratch/setup_path.sh").write_text(f'export PATH="{bindir}:$PATH"\n')
    return root


def run_fvp_sh(root: Path, *args, cwd: Path):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run(["bash", str(root / "backends/arm/scripts/run_fvp.sh"), *args], capture_output=True,
                       cwd=cwd, env=env, timeout=900)
    return p.returncode, p.stdout.decode("utf-8", "replace") + p.stderr.decode("utf-8", "replace")


def fvp_elf(program: Path, out: Path, *args) -> Path:
    rc, o, e = run_fvp("elf", program, "-o", out, *args)
    assert rc == 0, o + e
    return out


def test_script_is_the_named_commit_s():
    assert b"Checking for problems in log:" in SCRIPT and b"setup_path.sh" in SCRIPT


def test_baked_program_on_u55(et_tree, tmp_path):
    elf = fvp_elf(CORPUS / "add_q.pte", tmp_path / "runner.elf")
    rc, out = run_fvp_sh(et_tree, f"--elf={elf}", "--target=ethos-u55-128", cwd=tmp_path)
    assert rc == 0, out
    assert "FVP:FVP_Corstone_SSE-300_Ethos-U55 num_macs:128" in out
    assert "Program complete, exiting." in out and out.rstrip().endswith("No problems found!")


@needs_elf
def test_data_with_a_runner_without_program_and_trace_file(et_tree, tmp_path):
    elf = make_elf(tmp_path / "runner.elf", None)
    trace = tmp_path / "pmu.json.gz"
    rc, out = run_fvp_sh(et_tree, f"--elf={elf}", f"--data={CORPUS / 'add_q.pte'}@0x70000000",
                         "--target=ethos-u55-128", f"--trace_file={trace}", cwd=tmp_path)
    assert rc == 0, out
    assert "No problems found!" in out
    assert json.loads(gzip.decompress(trace.read_bytes()))


@needs_elf
@pytest.mark.parametrize("program, target, binary, data", [
    ("add_q_ethos-u65-256.bpte", "ethos-u65-256", "FVP_Corstone_SSE-300_Ethos-U65", False),
    ("add_q_ethos-u85-128.bpte", "ethos-u85-128", "FVP_Corstone_SSE-320", True),
])
def test_u65_and_u85_binaries(et_tree, tmp_path, program, target, binary, data):
    if data:  # the runner without a program, the program with --data
        elf, extra = make_elf(tmp_path / "runner.elf", None), [f"--data={ZOO / program}@0x70000000"]
    else:
        elf, extra = fvp_elf(ZOO / program, tmp_path / "runner.elf", "--target", target), []
    rc, out = run_fvp_sh(et_tree, f"--elf={elf}", f"--target={target}", *extra, cwd=tmp_path)
    assert rc == 0, out
    assert f"FVP:{binary} num_macs:{target.rsplit('-', 1)[1]}" in out
    assert "Test_result: PASS" in out and "No problems found!" in out


def test_cortex_m_bundle_flow(et_tree, tmp_path):
    bundle = tmp_path / "add_q_cortex-m55.bpte"
    bundle.write_bytes((ZOO / "add_q_cortex-m55.bpte").read_bytes())
    elf = fvp_elf(CORPUS / "add_q.pte", tmp_path / "runner.elf")  # its program is not used: -m names the bundle
    rc, out = run_fvp_sh(et_tree, f"--elf={elf}", f"--bundle={bundle}", "--target=cortex-m55", cwd=tmp_path)
    assert rc == 0, out
    assert "Bundled I/O check PASSED for add_q_cortex-m55.bpte" in out
    assert (tmp_path / "fvp_dummy_input.bin").stat().st_size == 4


def test_setup_path_sh_is_required(et_tree, tmp_path):
    (et_tree / "examples/arm/arm-scratch/setup_path.sh").unlink()
    elf = fvp_elf(CORPUS / "add_q.pte", tmp_path / "runner.elf")
    rc, out = run_fvp_sh(et_tree, f"--elf={elf}", cwd=tmp_path)
    assert rc == 1 and "arm-scratch/setup_path.sh" in out and "Missing" in out


def test_a_failed_run_is_found(et_tree, tmp_path):
    """A program for another NPU size: the driver refuses it, the log check finds the E line."""
    elf = fvp_elf(CORPUS / "add_q.pte", tmp_path / "runner.elf")
    rc, out = run_fvp_sh(et_tree, f"--elf={elf}", "--target=ethos-u55-256", cwd=tmp_path)
    assert rc == 1, out
    assert "Found ERROR" in out
