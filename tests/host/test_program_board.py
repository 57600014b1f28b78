"""A program runs on the configuration it was compiled for: its compile specs pick the NPU, the system config and
the memory mode (with the runner's pools for it) unless the user sets them, and a disagreement is said."""

import re

import pytest

from fvp.host.compare import run_board
from fvp.host.programs.et_build import board_overrides
from fvp.host.programs.program_board import program_config, resolve
from testutil import CORPUS, run_fvp

# every corpus program whose configuration is not the default board's (U55-128, High_End, Shared_Sram)
OWN_CONFIG = ["mobilenet_v1_025_u55-128_sramonly.bpte", "mobilenet_v1_025_u55-64.bpte",
              "mobilenet_v1_025_u55-256.bpte", "mobilenet_v1_025_u65-256.bpte", "resnet8_u65-512.bpte"]


def _image(name):
    return (CORPUS / name).read_bytes()


def test_program_config_reads_every_delegate():
    cfg = program_config(_image("ds_cnn_u55-128.bpte"))  # two Ethos-U delegates
    assert cfg.targets == ("ethos-u55-128", "ethos-u55-128")
    assert cfg.as_flags() == {"target": "ethos-u55-128", "system_config": "Ethos_U55_High_End_Embedded",
                              "memory_mode": "Shared_Sram"}
    assert cfg.disagreements() == []
    assert program_config(_image("mobilenet_v1_025_u65-256.bpte")).as_flags() == {
        "target": "ethos-u65-256", "system_config": "Ethos_U65_High_End", "memory_mode": "Dedicated_Sram"}
    assert not program_config(_image("add_fp_cpu.pte")).has_npu


def test_delegates_compiled_differently_are_reported():
    image = _image("ds_cnn_u55-128.bpte")
    # the second delegate's flags (flatbuffers store the later delegate's strings first); the same length
    i = image.index(b"--memory-mode=Shared_Sram") + len(b"--memory-mode=")
    image = image[:i] + b"Sram_Only  " + image[i + len(b"Shared_Sram"):]
    res = resolve(image, model_name="m.bpte")
    assert any("different memory modes (Shared_Sram, Sram_Only); using Shared_Sram" in n for n in res.notes)


@pytest.mark.parametrize("name", OWN_CONFIG)
def test_plain_run_uses_the_programs_configuration(name):
    image = _image(name)
    flags = program_config(image).as_flags()
    res = resolve(image, model_name=name)
    assert res.notes == [] and not res.cannot_run
    spec = res.load()
    assert (spec.npu.variant, spec.npu.system_config.name, spec.npu.memory_mode.name) == (
        flags["target"], flags["system_config"], flags["memory_mode"])
    # the same cycles as the configuration set by hand, the way run.sh builds the runner for it
    auto = run_board(image, name, "auto")
    board, keys = board_overrides(flags["target"], flags["system_config"], flags["memory_mode"])
    by_hand = run_board(image, name, ",".join([board] + keys))
    assert auto.result == "PASS" and by_hand.result == "PASS"
    assert auto.npu_cycles == by_hand.npu_cycles > 0
    assert auto.pmu == by_hand.pmu and auto.memory_stats == by_hand.memory_stats


def test_dedicated_sram_gets_the_runners_pools():
    res = resolve(_image("mobilenet_v1_025_u65-256.bpte"))
    spec = res.load()
    pools = spec.firmware.pools
    assert pools["fast_scratch"].size == 384 * 1024 and pools["temp"].region == "DDR"


def test_user_settings_win_and_the_difference_is_noted():
    name = "mobilenet_v1_025_u55-128_sramonly.bpte"
    res = resolve(_image(name), overrides=["npu.memory_mode=Shared_Sram"], model_name=name)
    assert res.load().npu.memory_mode.name == "Shared_Sram"
    assert res.notes == [f"{name} was compiled for ethos-u55-128, Ethos_U55_High_End_Embedded, Sram_Only; running "
                         f"with memory mode Shared_Sram (-C npu.memory_mode), not the program's Sram_Only"]
    # a board the user names keeps its NPU but takes the program's memory mode, and says so
    res = resolve(_image(name), board="corstone-300-ethos-u55-128", model_name=name)
    assert res.load().npu.memory_mode.name == "Sram_Only"
    assert len(res.notes) == 1 and "memory mode Sram_Only, the program's (the board has Shared_Sram" in res.notes[0]


def test_a_variant_that_cannot_run_the_stream_is_said_in_words():
    name = "mobilenet_v1_025_u55-128.bpte"
    for kw in ({"target": "ethos-u55-64"}, {"board": "corstone-300-ethos-u55-64"},
               {"overrides": ["ethosu.num_macs=64"]}, {"overrides": ["npu.variant=ethos-u55-64"]}):
        res = resolve(_image(name), model_name=name, **kw)
        assert res.cannot_run == "a stream for ethos-u55-128 cannot run on ethos-u55-64", kw
        assert len(res.notes) == 1 and "use --target ethos-u55-128" in res.notes[0]


def test_cpu_only_program_keeps_the_board():
    res = resolve(_image("add_fp_cpu.pte"), board="corstone-300-ethos-u55-256")
    assert res.board == "corstone-300-ethos-u55-256" and res.notes == [] and res.overrides == []


def test_fvp_run_takes_the_compile_specs_and_notes_a_mismatch():
    path = CORPUS / "mobilenet_v1_025_u55-128_sramonly.bpte"
    rc, out, err = run_fvp("run", path, "-C", "firmware.options.log_outputs=false")
    assert rc == 0 and "fvp: note" not in err
    own = int(re.search(r"ethosu_pmu_cycle_cntr : (\d+)", out).group(1))
    rc, out2, err2 = run_fvp("run", path, "-C", "firmware.options.log_outputs=false",
                             "-C", "npu.memory_mode=Shared_Sram")
    assert rc == 0
    other = int(re.search(r"ethosu_pmu_cycle_cntr : (\d+)", out2).group(1))
    assert other > own  # the weights come from the flash instead of the SRAM
    notes = [line for line in err2.splitlines() if line.startswith("fvp: note:")]
    assert len(notes) == 1 and "not the program's Sram_Only" in notes[0]
    rc, out3, err3 = run_fvp("run", CORPUS / "mobilenet_v1_025_u55-128.bpte", "--target", "ethos-u55-256")
    assert rc == 1
    assert "the stream cannot run on ethos-u55-256" in err3 and "use --target ethos-u55-128" in err3
