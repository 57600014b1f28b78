"""Board layers (fvp.boards.Layer): keys a run's inputs fix (a program's compile specs, an application ELF's
build), applied on the files and under ``-C``, each named by its origin when it sets a bad value."""

import pytest

from fvp.boards import ConfigProblems, Layer, load_board


def test_a_layer_sets_typed_values_between_the_files_and_the_overrides():
    layer = Layer("program m.pte", {"npu.memory_mode": "Sram_Only", "firmware.pools.temp.size": "1MiB"})
    spec = load_board("corstone-300-ethos-u55-128", layers=[layer])
    assert spec.npu.memory_mode.name == "Sram_Only" and spec.firmware.pools["temp"].size == 1 << 20
    # -C goes on top of every layer
    spec = load_board("corstone-300-ethos-u55-128", ["npu.memory_mode=Shared_Sram"], layers=[layer])
    assert spec.npu.memory_mode.name == "Shared_Sram" and spec.firmware.pools["temp"].size == 1 << 20
    # later layers go on earlier ones; an empty layer changes nothing
    later = Layer("-a app.elf", {"firmware.pools.temp.size": "512KiB"})
    spec = load_board("corstone-300-ethos-u55-128", layers=[layer, Layer("nothing"), later])
    assert spec.firmware.pools["temp"].size == 512 << 10


def test_a_bad_value_from_a_layer_names_the_layer():
    with pytest.raises(ConfigProblems) as e:
        load_board("corstone-300-ethos-u55-128", layers=[Layer("program m.pte", {"npu.memory_mode": "Nowhere"})])
    assert any(p.startswith("program m.pte: npu.memory_mode: unknown memory mode 'Nowhere'") for p in e.value.problems), e.value.problems
    with pytest.raises(ConfigProblems) as e:
        load_board("corstone-300-ethos-u55-128", layers=[Layer("-a app.elf", {"npu.variant.x": 1})])
    assert e.value.problems == ["-a app.elf: npu.variant is not a mapping, cannot set npu.variant.x"]
