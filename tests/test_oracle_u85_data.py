"""Integrity of the Ethos-U85 oracle fixtures (tests/data/oracle_u85): the data only, no NPU model.

Each fixture listed in ``manifest.json`` as ``in_repo`` has its bundled program, ``meta.json`` and
``oracle.npz``; the program's delegates are the Vela blobs ``meta.json`` describes (command stream size,
scratch size, I/O byte counts) and the oracle holds, for both input sets, every delegate call's inputs and
outputs with those byte counts. Running the fixtures on the simulator is another test's job.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from machine.npu.helpers import extract_vela_blobs
from testutil import DATA

U85 = DATA / "oracle_u85"
MANIFEST = json.load(open(U85 / "manifest.json")) if (U85 / "manifest.json").exists() else {"fixtures": {}}
IN_REPO = sorted(n for n, e in MANIFEST["fixtures"].items() if e.get("in_repo"))


def test_manifest_matches_folders():
    dirs = sorted(p.name for p in U85.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert dirs == IN_REPO and len(IN_REPO) >= 30
    total = sum(f.stat().st_size for f in U85.rglob("*") if f.is_file())
    assert total < 6_000_000


@pytest.mark.parametrize("name", IN_REPO)
def test_fixture_consistent(name):
    from firmware.executorch.bundled import load_bundled

    e = MANIFEST["fixtures"][name]
    d = U85 / name
    assert {f: (d / f).stat().st_size for f in e["files"]} == e["files"]
    meta = json.load(open(d / "meta.json"))
    assert meta["target"] == e["target"] and meta["target"].startswith("ethos-u85-")
    assert meta["system_config"].startswith("Ethos_U85_") and meta["memory_mode"] == e["memory_mode"]
    buf = (d / f"{name}.bpte").read_bytes()
    b = load_bundled(buf)
    program = b.load_program()
    pbuf = buf[b.program_offset:b.program_offset + b.program_size]
    delegates = program.execution_plans[0].delegates
    assert len(delegates) == meta["n_delegates"] == len(e["delegates"])
    blobs = []
    for dl, dm, de in zip(delegates, meta["delegates"], e["delegates"]):
        off, size = program.backend_delegate_data[dl.index]
        (blob,) = extract_vela_blobs(pbuf[off:off + size])
        assert len(blob.cmd_data) == dm["cmd_data_size"] == de["cmd_data_size"]
        assert blob.scratch_size == dm["scratch_size"]
        assert de["summary"]["accelerator_configuration"] == "Ethos_U85_" + meta["target"].split("-")[-1]
        blobs.append(blob)
    npz = np.load(d / "oracle.npz")
    for k in (0, 1):
        for key in meta["delegate_call_keys"]:
            role = "q" if key["key"].startswith("q") else "npu"
            arr = npz[f"call{key['call']}_{role}{k}_{key['pos']}"]
            io = (blobs[key["delegate"]].inputs if role == "q" else blobs[key["delegate"]].outputs)[key["pos"]]
            assert list(arr.shape) == key["shape"]
            assert arr.nbytes == int(np.prod(io.shape)) * io.elem_size, (name, key)
        j = 0
        while f"out{k}_{j}" in npz.files:
            j += 1
        assert j == len(meta["outputs"]) >= 1
