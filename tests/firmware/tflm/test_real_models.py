"""Small int8 models made here (``tests/data/tflm/real``, made by ``tools/make_real_tflm_fixtures.py``: a CNN, an
int8 SOFTMAX, an LSTM, SVDFs between NPU parts) as users bring theirs: Vela-compiled for U55-64/128/256, U65-256/512
(Dedicated_Sram, MLEK's layout), U85-256 and by Vela's older core, or left to the CPU (the LSTM), and run with a
PLAIN ``fvp run MODEL -i ... -o ...``: the program must pick its board (the NPU of its command stream, its memory
mode and fast scratch; the Corstone-320 for the U85) and give TFLite Micro's interpreter's outputs byte for byte
(``expected.npz``). A fixture whose ``expect`` is ``xfail`` is an NPU behaviour not yet modelled (strict: the fix
flips it)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from testutil import ROOT

from fvp.host import cli
from fvp.host.programs.program_board import resolve

DATA = ROOT / "tests" / "data" / "tflm" / "real"
META = {k: v for k, v in json.loads((DATA / "fixtures.json").read_text()).items() if not k.startswith("_")}
EXPECTED = np.load(DATA / "expected.npz")


def _arrays(name, k, kind):
    keys = sorted((key for key in EXPECTED.files if key.startswith(f"{name}/{k}/{kind}")),
                  key=lambda key: int(key.rsplit(kind, 1)[1]))
    return [EXPECTED[key] for key in keys]


def _run(name, k, tmp_path, capsys, *extra):
    args = []
    for i, x in enumerate(_arrays(name, k, "in")):
        np.save(tmp_path / f"in{i}.npy", x)
        args += ["-i", tmp_path / f"in{i}.npy"]
    rc = cli.main([str(a) for a in ["run", DATA / f"{name}.tflite", *args, "-o", tmp_path / "out", *extra]])
    out, err = capsys.readouterr()
    return rc, out, err


#: fixtures whose ``xfail`` the NPU model has since fixed (the fixture files are made elsewhere: the expectation
#: is corrected here until they are remade)
def _params():
    for name, meta in sorted(META.items()):
        marks = [pytest.mark.slow]  # whole programs, two runs each (0.5 s and more)
        if meta["expect"].startswith("xfail"):
            marks.append(pytest.mark.xfail(strict=True, reason=meta["expect"].split(":", 1)[1].strip()))
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", list(_params()))
def test_plain_fvp_run_equals_tflite_micro(name, tmp_path, capsys):
    for k in range(2):
        rc, out, err = _run(name, k, tmp_path, capsys)
        assert rc == 0, (out + err)[-2000:]
        for i, want in enumerate(_arrays(name, k, "out")):
            got = np.frombuffer((tmp_path / f"out-{i}.bin").read_bytes(), want.dtype).reshape(want.shape)
            assert np.array_equal(got, want), f"input {k} output {i}: {np.count_nonzero(got != want)} differ"


@pytest.mark.parametrize("name", sorted(n for n, m in META.items() if "records" in m))
def test_the_program_picks_its_board(name):
    """What the compiled file records (fixtures.json, read when the fixture was made) becomes the board: the TFLM
    board of the family, the variant, the memory mode with MLEK's pools (Dedicated_Sram: arena in DDR, a 384 KiB
    fast scratch in SRAM), with no note (nothing differs from the program)."""
    meta = META[name]
    data = (DATA / f"{name}.tflite").read_bytes()
    res = resolve(data, model_name=name)
    spec = res.load()
    target, mode = meta["records"]["targets"][0], meta["records"]["memory_modes"][0]
    assert target == meta["vela_flags"][0] and mode == meta["vela_flags"][2]
    assert spec.npu.variant == target and spec.npu.memory_mode.name == mode
    assert spec.firmware.entry == "tflm_inference_runner"
    assert spec.platform == ("corstone-320" if target.startswith("ethos-u85") else "corstone-300")
    assert res.notes == [] and not res.cannot_run
    pools = spec.firmware.pools
    if mode == "Dedicated_Sram":
        assert pools["arena"].region == "DDR"
        assert pools["fast_scratch"].region == "SRAM" and pools["fast_scratch"].size == 384 << 10
        assert meta["records"]["fast_scratch_bytes"] <= 384 << 10
    else:
        assert pools["arena"].region == "SRAM" and not ("fast_scratch" in pools and pools["fast_scratch"].size)


def test_the_users_choice_wins_and_a_wrong_npu_is_said(capsys, tmp_path):
    """--target another MAC count: one note says the stream cannot run there, and the driver refuses it."""
    data = (DATA / "tiny_int8_u65-512.tflite").read_bytes()
    res = resolve(data, target="ethos-u65-256", model_name="m.tflite")
    assert res.cannot_run == "a stream for ethos-u65-512 cannot run on ethos-u65-256"
    assert any("the stream cannot run on ethos-u65-256" in n and "use --target ethos-u65-512" in n
               for n in res.notes)
    res = resolve(data, overrides=["npu.memory_mode=Shared_Sram"], model_name="m.tflite")
    assert res.load().npu.memory_mode.name == "Shared_Sram"
    assert any("memory mode Shared_Sram (-C npu.memory_mode), not the program's Dedicated_Sram" in n
               for n in res.notes)


def test_dedicated_sram_by_hand_gets_mlek_layout():
    """``--target ethos-u65-256 -C npu.memory_mode=Dedicated_Sram`` on a model without an ethos-u operator (or
    by hand on any board of the TFLM flow) is laid out as MLEK builds that mode, not refused."""
    res = resolve(b"\x18\0\0\0TFL3" + bytes(64), target="ethos-u65-256", overrides=["npu.memory_mode=Dedicated_Sram"])
    spec = res.load()
    assert spec.npu.memory_mode.name == "Dedicated_Sram"
    assert spec.firmware.pools["arena"].region == "DDR" and spec.firmware.pools["fast_scratch"].size == 384 << 10


@pytest.mark.slow
def test_corstone320_log_has_mleks_u85_pmu_block(tmp_path, capsys):
    rc, out, err = _run("tiny_int8_u85-256", 0, tmp_path, capsys)
    assert rc == 0, out + err
    block = out.split("INFO - Profile for Inference:\n")[1].split("INFO - CPU TOTAL")[0].splitlines()
    names = [line.split("INFO - ")[1].rsplit(":", 1)[0] for line in block]
    assert names == ["NPU ACTIVE cycles", "NPU ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED beats",
                     "NPU ETHOSU_PMU_SRAM_WR_DATA_BEAT_WRITTEN beats", "NPU ETHOSU_PMU_EXT_RD_DATA_BEAT_RECEIVED beats",
                     "NPU ETHOSU_PMU_EXT_WR_DATA_BEAT_WRITTEN beats", "NPU IDLE cycles", "NPU TOTAL cycles"]
    value = {n: int(line.rsplit(": ", 1)[1]) for n, line in zip(names, block)}
    assert value["NPU ACTIVE cycles"] + value["NPU IDLE cycles"] == value["NPU TOTAL cycles"] > 0
    assert value["NPU ETHOSU_PMU_EXT_RD_DATA_BEAT_RECEIVED beats"] > 0  # the weights come from DDR (Dedicated_Sram)


@pytest.mark.slow
def test_the_corstone320_dropin_runs_a_u85_tflite(tmp_path):
    """MLEK's dynamic-model flow on FVP_Corstone_SSE-320: ``--data model@address`` runs the TFLite Micro image on
    the Ethos-U85 (Dedicated_Sram from the model), as ``fvp run`` does."""
    from testutil import run_fvp

    rc, out, err = run_fvp("--flavour=u85", "-C", "mps4_board.uart0.out_file=-", "--data",
                           f"{DATA / 'tiny_int8_u85-256.tflite'}@0x70000000", prog="fvp.host.dropin")
    assert rc == 0, out + err
    assert "Creating Ethos-U85 with config H256 (Ethos_U85_SYS_DRAM_Mid, Dedicated_Sram)" in out
    assert "from its ethos-u operator: memory mode Dedicated_Sram" in out
    assert "NPU ETHOSU_PMU_EXT_RD_DATA_BEAT_RECEIVED beats:" in out and "Inference completed." in out
