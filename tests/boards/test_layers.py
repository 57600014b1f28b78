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


def test_keys_that_would_do_nothing_are_refused():
    # a polled UART and a stub raise no interrupt: an irq key there is an unknown key, not a silent no-op
    for dev in ("uart0", "timing_adapter0"):
        with pytest.raises(ConfigProblems) as e:
            load_board("default", [f"devices.{dev}.irq=33"])
        assert f"devices.{dev}.irq: unknown key" in e.value.problems[0]
    # a memory mode's ports must be those its REGIONCFG selects (the timing model follows REGIONCFG)
    with pytest.raises(ConfigProblems) as e:
        load_board("default", ["memory_modes.Shared_Sram.const=axi0"])
    assert "memory_modes.Shared_Sram.const: 'axi0', but its regioncfg sends region 0 to axi1" in e.value.problems[0]
    assert load_board("default", ["memory_modes.Shared_Sram.arena=axi0"]).npu.memory_mode.arena_port == "axi0"


def test_the_fast_scratch_of_a_memory_mode_is_its_arena_cache_size():
    from fvp.host.programs.et_build import pool_settings

    assert pool_settings("Dedicated_Sram", False)["firmware.pools.fast_scratch.size"] == "384KiB"
    assert pool_settings("Dedicated_Sram_512KB", False)["firmware.pools.fast_scratch.size"] == "512KiB"
    assert pool_settings("Dedicated_Sram_2MB", False)["firmware.pools.fast_scratch.size"] == "2MiB"
    assert "firmware.pools.fast_scratch.region" not in pool_settings("Shared_Sram", False)
