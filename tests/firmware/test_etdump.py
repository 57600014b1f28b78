"""The runner's ETDump (issue 21): ``fvp run --etdump FILE``, and the base64 ``#[RUN THIS]`` block that
``run_fvp.sh`` extracts when the runner is built with the event tracer (``firmware.options.etdump``).

The file is read back with the generated ETDump schema classes (``firmware/executorch/etdump_schema``); the
ExecuTorch-marked test opens it in ExecuTorch's own deserializer and Inspector (optional extra)."""

from __future__ import annotations

import base64
import importlib.util
import os
import re
import subprocess
import sys

import pytest

from firmware.executorch.etdump import read_etdump
from testutil import CORPUS, DATA, run_fvp

PROGRAMS = [CORPUS / "mobilenet_v1_025_u55-128.bpte", DATA / "oracle_u85" / "resnet8_u85-128" / "resnet8_u85-128.bpte"]


def _events(path):
    et = read_etdump(path.read_bytes())
    blocks = []
    for i in range(et.RunDataLength()):
        rd = et.RunData(i)
        evs = []
        for j in range(rd.EventsLength()):
            pe = rd.Events(j).ProfileEvent()
            evs.append((pe.Name().decode(), pe.InstructionId(), pe.ChainIndex(), pe.StartTime(), pe.EndTime()))
        blocks.append((rd.Name().decode(), evs))
    return et.Version(), blocks


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_etdump_file_has_the_runtimes_events(tmp_path, program):
    f = tmp_path / "etdump.bin"
    rc, out, err = run_fvp("run", program, "--etdump", f)
    assert rc == 0, err
    assert "Setting up ETDump" in out and f"Writing etdump to file: {f}" in out
    version, blocks = _events(f)
    assert version == 0 and [b[0] for b in blocks] == ["Default", "Execute"]
    default = [e[0] for e in blocks[0][1]]
    assert default == ["Method::init", "Program::load_method"]  # written as they end: the nested one first
    ex = blocks[1][1]
    names = [e[0] for e in ex]
    assert names[-1] == "Method::execute" and "DELEGATE_CALL" in names and "EthosUBackend::execute()" in names
    assert all(s <= e for _, _, _, s, e in ex)
    top = ex[-1]
    for name, inst, chain, s, e in ex[:-1]:
        assert top[3] <= s <= e <= top[4] and chain == 0
        if name in ("OPERATOR_CALL", "DELEGATE_CALL"):
            assert inst >= 0
    # the backend's event sits inside its DELEGATE_CALL and carries that call's instruction
    i = names.index("EthosUBackend::execute()")
    backend, call = ex[i], ex[i + 1]
    assert call[0] == "DELEGATE_CALL" and backend[1] == call[1] and call[3] <= backend[3] <= backend[4] <= call[4]


def test_base64_block_is_what_run_fvp_sh_extracts(tmp_path):
    program = PROGRAMS[0]
    f = tmp_path / "direct.bin"
    run_fvp("run", program, "--etdump", f)
    rc, out, err = run_fvp("run", program, "-C", "firmware.options.etdump=true")
    assert rc == 0, err
    block = re.search(r"^#\[RUN THIS\]\n(.*?)^#\[END\]$", out, re.M | re.S)
    assert block, out[-2000:]
    line = [x for x in block.group(1).splitlines() if ">etdump.bin" in x][0]
    # run_fvp.sh: grep ">etdump.bin" | cut -d\" -f2- | cut -d\" -f1 | base64 -d
    data = base64.b64decode(line.split('"', 1)[1].split('"', 1)[0])
    assert data == f.read_bytes()
    assert re.search(r"\[base64\] buffer size: \d+", out)


def test_etdump_bad_path_and_option_value(tmp_path):
    rc, out, err = run_fvp("run", PROGRAMS[0], "--etdump", tmp_path / "missing" / "e.bin")
    assert rc == 2 and "--etdump" in err and "Traceback" not in err
    rc, out, err = run_fvp("run", PROGRAMS[0], "-C", "firmware.options.etdump=maybe")
    assert rc == 2 and "firmware.options.etdump" in err


def _executorch_python():
    if os.environ.get("EXECUTORCH_PYTHON"):
        return os.environ["EXECUTORCH_PYTHON"]
    return sys.executable if importlib.util.find_spec("executorch") else None


@pytest.mark.executorch
@pytest.mark.skipif(_executorch_python() is None, reason="ExecuTorch is not installed (pip install '.[executorch]' "
                                                         "or set EXECUTORCH_PYTHON)")
def test_executorch_inspector_reads_it(tmp_path):
    f = tmp_path / "etdump.bin"
    run_fvp("run", PROGRAMS[0], "--etdump", f)
    code = ("import sys\n"
            "from executorch.devtools import Inspector\n"
            "ins = Inspector(etdump_path=sys.argv[1])\n"
            "names = [e.name for b in ins.event_blocks for e in b.events]\n"
            "assert 'Method::execute' in names and 'DELEGATE_CALL' in names, names\n"
            "print('OK', len(names))\n")
    p = subprocess.run([_executorch_python(), "-c", code, str(f)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0 and "OK" in p.stdout, p.stdout + p.stderr
