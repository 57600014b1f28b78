"""The Ethos-U85 feature programs of ``tests/data/u85`` (``make_programs.py``: ExecuTorch models with torch.cond,
torch.while_loop, and torch.gather / torch.index_select lowered to the 3-D indexed DMA) against their oracles:
each delegate's outputs against the TOSA reference model's (``NAME.tosa_ref.npz``) with both engines, and each
bundled test case (every branch; no, one and several loop iterations) through the whole program, exactly."""

from __future__ import annotations

import numpy as np
import pytest

from firmware.executorch.bundled import load_bundled
from machine.npu.helpers import extract_vela_blobs, run_blob
from testutil import DATA, run_fvp

NAMES = ("cond_sincos", "cond_two_inputs", "while_grow", "gather_columns", "index_select_rank3", "index_select_rank4")
PROGRAMS = [DATA / "u85" / f"{n}_u85-128.bpte" for n in NAMES]


def _reference(path):
    ref = np.load(path.with_suffix(".tosa_ref.npz"))
    cases = sorted({int(k[2:].split("_")[0]) for k in ref.files if k.startswith("in")})
    for k in cases:
        ins = [ref[f"in{k}_{i}"] for i in range(sum(f.startswith(f"in{k}_") for f in ref.files))]
        outs = [ref[f"out{k}_{j}"] for j in range(sum(f.startswith(f"out{k}_") for f in ref.files))]
        yield k, ins, outs


@pytest.mark.parametrize("engine", ["fast", "reference"])
@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_delegate_matches_the_tosa_reference_model(path, engine):
    (blob,) = extract_vela_blobs(path.read_bytes())
    n = 0
    for k, ins, outs in _reference(path):
        res, got = run_blob(blob, [a.tobytes() for a in ins], arch="ethos-u85-128", engine=engine)
        assert res.ok, res.fault
        for j, (g, e) in enumerate(zip(got, outs)):
            assert np.array_equal(np.frombuffer(g, e.dtype), e.reshape(-1)), (k, j)
        n += 1
    assert n == len(load_bundled(path.read_bytes()).test_suite("forward").test_cases)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_every_bundled_case_is_exact(path, tmp_path):
    """The runner's own check of test case 0 (``fvp run FILE.bpte``), then every case through the plain program
    with ``-i``: the outputs are the expected ones bit for bit."""
    rc, out, err = run_fvp("run", path, "-q")
    assert rc == 0 and "Test_result: PASS" in out and "max_absolute_error:  0.000000" in out, err
    bundle = load_bundled(path.read_bytes())
    pte = tmp_path / "p.pte"
    pte.write_bytes(bytes(bundle.program_data))
    for k, case in enumerate(bundle.test_suite("forward").test_cases):
        args = []
        for i, v in enumerate(case.inputs):
            np.save(tmp_path / f"in{k}_{i}.npy", v.array(bundle.buffer).reshape(v.sizes))
            args += ["-i", tmp_path / f"in{k}_{i}.npy"]
        rc, out, err = run_fvp("run", pte, *args, "-o", tmp_path / f"out{k}", "-q")
        assert rc == 0, err
        for j, v in enumerate(case.expected_outputs):
            exp = v.array(bundle.buffer).reshape(-1)
            got = np.fromfile(tmp_path / f"out{k}-{j}.bin", exp.dtype)
            assert np.array_equal(got, exp), (k, j, got, exp)


def test_disassembly_names_the_gather():
    """index_select on axis 2 of a 2x2x5x3 tensor: 4 planes (the 2x2 outer axes) of 3 indexed rows of 3 bytes."""
    rc, out, err = run_fvp("disasm", "--summary", DATA / "u85" / "index_select_rank4_u85-128.bpte")
    assert rc == 0
    (line,) = [ln for ln in out.splitlines() if " DMA " in ln]
    assert "len=3 size0=3 size1=4 src_stride=(3,15) dst_stride=(3,9) gather idx=r1@0x" in line and "max=4" in line


def test_a_session_takes_each_inference_s_branch(tmp_path):
    """One booted runner, inferences alternating between the two branches: each takes its own (a stream that
    branched is never replayed from the decoded-stream cache, nor timed from the timing cache)."""
    import fvp

    bundle = load_bundled((DATA / "u85" / "cond_sincos_u85-128.bpte").read_bytes())
    pte = tmp_path / "p.pte"
    pte.write_bytes(bytes(bundle.program_data))
    cases = bundle.test_suite("forward").test_cases
    cycles = {}
    with fvp.Session(str(pte)) as s:
        for k in (0, 1, 0, 1):
            x = cases[k].inputs[0]
            r = s.run([x.array(bundle.buffer).reshape(x.sizes)])
            exp = cases[k].expected_outputs[0].array(bundle.buffer).reshape(-1)
            assert np.array_equal(r.outputs[0].reshape(-1), exp), k
            cycles.setdefault(k, set()).add(r.npu_cycles)
    assert all(len(c) == 1 for c in cycles.values())  # the same branch, the same cycles
