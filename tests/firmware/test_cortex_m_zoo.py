"""The model zoo's cortex-m55 programs end to end: every output bit-exact with ExecuTorch's own evaluation.

Each program (``aot_arm_compiler --target=cortex-m55 --quantize --bundleio``: its quantized layers are
``cortex_m::*`` CMSIS-NN kernels on the CPU) runs on the simulator as ``run_fvp.sh --bundle`` runs it (the
semihosting runner, ``ET_ATOL=5.0 ET_RTOL=1.0``, no temp pool) and must pass its bundled check; its raw outputs
must equal those of the Cortex-M edge program evaluated by ExecuTorch's reference implementations
(``tests/data/cortex_m/zoo_refs.npz``, ``make_zoo_refs.py`` there: the bundled inputs as the runner sees them,
the average pool rounded as CMSIS-NN rounds it).
"""

import json

import numpy as np
import pytest

from fvp.host.programs.et_build import board_overrides
from testutil import DATA, ROOT, run_fvp

INDEX = json.loads((ROOT / "fvp" / "host" / "programs" / "zoo" / "index.json").read_text())
ENTRIES = [e for e in INDEX["entries"] if e["target"] == "cortex-m55"]
REFS = np.load(DATA / "cortex_m" / "zoo_refs.npz")


def test_zoo_has_the_cortex_m55_programs():
    assert {e["model"] for e in ENTRIES} == {"add", "mul", "add_mul", "softmax", "linear", "conv1d", "ds_cnn",
                                             "resnet8", "mobilenet_v1_025", "lstm"}
    assert all(e["quantize"] and not e["delegate"] for e in ENTRIES)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["model"] for e in ENTRIES])
def test_cortex_m55_program(entry, tmp_path):
    board, keys = board_overrides(entry["target"])
    args = ["run", ROOT / "fvp" / "host" / "programs" / "zoo" / "programs" / entry["file"], "-c", board, "-o", tmp_path / "out"]
    args += [x for k in keys for x in ("-C", k)]
    rc, out, err = run_fvp(*args)
    assert rc == 0, out + err
    assert "Test_result: PASS" in out
    assert "Missing operator" not in out
    n = sum(1 for k in REFS.files if k.startswith(f"{entry['model']}__out"))
    assert n >= 1
    for i in range(n):
        want = REFS[f"{entry['model']}__out{i}"]
        got = np.fromfile(tmp_path / f"out-{i}.bin", dtype=want.dtype)
        np.testing.assert_array_equal(got, want.reshape(-1), err_msg=f"{entry['model']} output {i}")
