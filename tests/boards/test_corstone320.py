"""The Corstone-320 boards (Cortex-M85 + Ethos-U85): the MPS4 memory map, ExecuTorch's Corstone-320.ld placement,
Vela's Ethos-U85 system configs, the FVP_Corstone_SSE-320 parameter names, and --target picking them."""

import configparser
import importlib.util
from pathlib import Path

import pytest

from fvp.boards import ConfigProblems, available_boards, board_for_target, layout_firmware, load_board
from testutil import CORPUS, ROOT, run_fvp

U85_MACS = (128, 256, 512, 1024, 2048)
U85_BOARDS = [f"corstone-320-ethos-u85-{m}" for m in U85_MACS]
U85_SYSTEM_CONFIGS = ("Ethos_U85_SYS_Flash_Low", "Ethos_U85_SYS_Flash_High", "Ethos_U85_SYS_DRAM_Low",
                      "Ethos_U85_SYS_DRAM_Mid", "Ethos_U85_SYS_DRAM_High")
MiB = 1 << 20


def test_every_corstone320_board_loads_with_the_executorch_defaults():
    assert {"corstone-320", *U85_BOARDS} <= set(available_boards())
    for macs, name in zip(U85_MACS, U85_BOARDS):
        s = load_board(name)
        assert s.platform == "corstone-320" and s.cpu.type == "cortex-m85"
        assert s.npu.variant == f"ethos-u85-{macs}"
        assert s.npu.system_config.name == "Ethos_U85_SYS_DRAM_Mid" and s.npu.memory_mode.name == "Sram_Only"
        assert s.name == f"Corstone-320 FVP (MPS4) + Ethos-U85-{macs}"
    assert load_board("corstone-320").npu.variant == "ethos-u85-256"  # the FVP's default num_macs


def test_the_mps4_memory_map_and_devices():
    s = load_board("corstone-320")
    npu = s.devices["ethosu"]
    assert (npu.type, npu.base, npu.secure_base, npu.irq) == ("ethos-u", 0x4000_4000, 0x5000_4000, 16)
    assert npu.size >= 0x13A0  # the U85's PMU registers run to PMEVTYPER7 at 0x139C
    uart = s.devices["uart0"]
    assert (uart.base, uart.secure_base, uart.irq) == (0x4820_3000, 0x5820_3000, None)  # polled: no irq key
    assert s.devices["timing_adapter0"].secure_base == 0x5000_6000
    assert s.devices["timing_adapter1"].secure_base == 0x5000_6800
    sizes = {n: (m.base, m.secure_base, m.size) for n, m in s.memory.items()}
    assert sizes["ITCM"] == (0x0, 0x1000_0000, 32 << 10) and sizes["DTCM"] == (0x2000_0000, 0x3000_0000, 32 << 10)
    assert sizes["BRAM"] == (0x0200_0000, 0x1200_0000, 2 * MiB)
    assert sizes["ISRAM"] == (0x2100_0000, 0x3100_0000, 4 * MiB)
    assert s.memory["BROM"].kind == "rom" and s.memory["DDR"].base == 0x6000_0000
    for tcm in ("ITCM", "DTCM"):
        assert "npu" not in s.memory[tcm].masters
    assert "npu" in s.memory["ISRAM"].masters and "npu" in s.memory["DDR"].masters
    assert s.cpu.clock_hz == 25_000_000
    assert s.cpu.costs == load_board("default").cpu.costs  # the Cortex-M55's table, one file for both


def test_the_runner_placement_of_corstone320_ld():
    s = load_board("corstone-320")
    assert s.firmware.link_regions["SRAM"] == (0x3100_0000, 4 * MiB)
    assert s.firmware.link_regions["DDR"] == (0x7000_0000, 256 * MiB)
    lay = layout_firmware(s, 2128)
    assert lay["model"] == (0x7000_0000, 2128)
    assert lay["method"][1] == 60 * MiB and 0x7000_0000 < lay["method"][0] < 0x8000_0000
    assert lay["temp"] == (0x3100_0000, 2 * MiB)
    assert "fast_scratch" not in lay


def test_dedicated_sram_pools_on_corstone320():
    """run.sh's default memory mode for an Ethos-U85 (Dedicated_Sram_384KB): temp pool 64 MiB in DDR, fast scratch
    in SRAM, as corstone_utils.cmake builds the runner."""
    from fvp.host.programs.et_build import board_overrides

    board, keys = board_overrides("ethos-u85-512")
    assert board == "corstone-320-ethos-u85-512"
    assert "npu.memory_mode=Dedicated_Sram_384KB" in keys and "npu.system_config=Ethos_U85_SYS_DRAM_Mid" in keys
    s = load_board(board, keys)
    lay = layout_firmware(s, 4096)
    assert lay["temp"][1] == 64 * MiB and 0x7000_0000 < lay["temp"][0] < 0x8000_0000
    assert lay["fast_scratch"] == (0x3100_0000, 384 << 10)
    assert s.npu.memory_mode.regioncfg[:3] == (3, 3, 0) and s.npu.memory_mode.qconfig == 3
    with pytest.raises(ConfigProblems) as e:  # the fast scratch must be given
        load_board("corstone-320", ["npu.memory_mode=Dedicated_Sram"])
    assert any("fast_scratch" in p for p in e.value.problems)


def _vela_ini() -> Path:
    spec = importlib.util.find_spec("ethosu")
    if spec is None:
        pytest.skip("ethos-u-vela is not installed (pip install '.[test]')")
    for base in spec.submodule_search_locations:
        ini = Path(base) / "config_files" / "Arm" / "vela.ini"
        if ini.is_file():
            return ini
    pytest.skip("ethos-u-vela has no config_files/Arm/vela.ini")


@pytest.mark.parametrize("name", U85_SYSTEM_CONFIGS)
def test_u85_system_configs_are_vela_ini(name):
    ini = configparser.ConfigParser()
    ini.read(_vela_ini())
    sec = ini[f"System_Config.{name}"]
    sc = load_board("corstone-320", [f"npu.system_config={name}"]).npu.system_config
    assert sc.core_clock_hz == float(sec["core_clock"])
    assert (sc.axi0_port, sc.axi1_port) == (sec["axi0_port"], sec["axi1_port"])
    for mem in {sc.axi0_port, sc.axi1_port}:
        t = sc.memories[mem]
        assert t.clock_scale == float(sec[f"{mem}_clock_scale"])
        assert t.ports_used == int(sec[f"{mem}_ports_used"])
        assert t.burst_length == int(sec[f"{mem}_burst_length"])
        assert (t.read_latency, t.write_latency) == (float(sec[f"{mem}_read_latency"]),
                                                     float(sec[f"{mem}_write_latency"]))
        assert (t.max_reads, t.max_writes) == (int(sec[f"{mem}_max_reads"]), int(sec[f"{mem}_max_writes"]))


def test_ports_used_defaults_to_one_and_is_checked():
    assert all(t.ports_used == 1 for t in load_board("default").npu.system_config.memories.values())
    with pytest.raises(ConfigProblems) as e:
        load_board("corstone-320", ["system_configs.Ethos_U85_SYS_DRAM_Mid.memories.Sram.ports_used=0"])
    assert "ports_used" in e.value.problems[0] and ">= 1" in e.value.problems[0]


def test_target_picks_the_corstone320_boards():
    for macs, name in zip(U85_MACS, U85_BOARDS):
        assert board_for_target(f"ethos-u85-{macs}") == name
    assert board_for_target("ethos-u55-128") == "corstone-300-ethos-u55-128"
    with pytest.raises(ConfigProblems) as e:
        board_for_target("ethos-u85-64")
    assert "ethos-u85-2048" in e.value.problems[0] and "ethos-u55-32" in e.value.problems[0]


def test_fvp_boards_and_config_list_them():
    rc, out, err = run_fvp("boards")
    assert rc == 0, err
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()}
    for macs, name in zip(U85_MACS, U85_BOARDS):
        assert rows[name] == [f"ethos-u85-{macs}", "Ethos_U85_SYS_DRAM_Mid", "Sram_Only"], out
    rc, out, err = run_fvp("config", "--target", "ethos-u85-1024")
    assert rc == 0, err
    assert "# board: Corstone-320 FVP (MPS4) + Ethos-U85-1024" in out and "variant: ethos-u85-1024" in out
    assert "base: '0x40004000'" in out and "Ethos_U85_SYS_DRAM_Mid:" in out and "type: cortex-m85" in out


def test_run_fvp_sh_parameters_map_to_the_board():
    """The -C names ExecuTorch's run_fvp.sh and runner_utils.py pass to FVP_Corstone_SSE-320."""
    s = load_board("corstone-320", [
        "mps4_board.subsystem.ethosu.num_macs=1024", "mps4_board.visualisation.disable-visualisation=1",
        "vis_hdlcd.disable_visualisation=1", "mps4_board.telnetterminal0.start_telnet=0",
        "mps4_board.uart0.out_file='-'", "mps4_board.uart0.unbuffered_output=1", "mps4_board.uart0.shutdown_on_eot=0",
        "mps4_board.subsystem.cpu0.semihosting-enable=1", "mps4_board.subsystem.cpu0.semihosting-stack_base=0",
        "mps4_board.subsystem.cpu0.semihosting-heap_limit=0", "mps4_board.subsystem.ethosu.extra_args='--fast'",
        "mps4_board.subsystem.cpu0.CFGITCMSZ=7"])
    assert s.npu.variant == "ethos-u85-1024" and s.npu.timing == "none"
    assert s.devices["uart0"].props["out_file"] == "-"
    assert s.devices["uart0"].props["unbuffered_output"] is True
    assert s.devices["uart0"].props["shutdown_on_eot"] is False
    assert s.memory["ITCM"].size == 64 << 10


@pytest.mark.parametrize("board,override,says", [
    ("corstone-320", "ethosu.num_macs=128", "mps4_board.subsystem.ethosu.num_macs"),
    ("corstone-320", "mps3_board.uart0.out_file=-", "mps4_board.uart0.out_file"),
    ("corstone-320", "cpu0.semihosting-enable=1", "mps4_board.subsystem.cpu0.semihosting-enable"),
    ("corstone-320", "mps4_board.subsystem.ethosu.bogus=1", "mps4_board.subsystem.ethosu.num_macs"),
    ("corstone-320", "mps4_board.uart0.bogus=1", "unknown UART parameter"),
    ("corstone-320", "mps4_board.subsystem.ethosu.num_macs=lots", "a MAC count such as 256"),
    ("corstone-320", "mps4_board.subsystem.ethosu.num_macs=64", "'ethos-u85-64' is not a known NPU"),
    ("default", "mps4_board.subsystem.ethosu.num_macs=256", "Corstone-320"),
])
def test_parameters_of_the_other_fvp_are_refused_by_fvp_run(board, override, says):
    with pytest.raises(ConfigProblems) as e:
        load_board(board, [override])
    (line,) = e.value.problems
    assert line.startswith(f"-C {override}: ") and says in line, line


def test_the_u85_programs_resolve_to_their_board():
    """With neither -c nor --target a program compiled for an Ethos-U85 runs on its Corstone-320 board."""
    from fvp.host.programs.program_board import resolve

    for macs in U85_MACS:
        image = (ROOT / "firmware" / "models" / f"addint_ethos-u85-{macs}.pte").read_bytes()
        res = resolve(image)
        assert res.board == f"corstone-320-ethos-u85-{macs}" and not res.cannot_run and not res.notes
        assert res.used == {"target": (f"ethos-u85-{macs}", "program"),
                            "system_config": ("Ethos_U85_SYS_DRAM_Mid", "program"),
                            "memory_mode": ("Sram_Only", "program")}
    # a U55 program on a U85 board is said to be unable to run; a U85 program keeps its own board with --target
    res = resolve((CORPUS / "addint_u55.pte").read_bytes(), target="ethos-u85-256")
    assert res.board == "corstone-320-ethos-u85-256" and "cannot run on ethos-u85-256" in res.cannot_run
    res = resolve((ROOT / "firmware" / "models" / "addint_ethos-u85-128.pte").read_bytes(), target="ethos-u85-512")
    assert res.cannot_run and "--target ethos-u85-128" in res.notes[0]


def test_a_tflite_model_for_an_ethos_u85_runs_on_the_corstone320_tflm_board():
    from fvp.host.programs.program_board import resolve

    res = resolve(b"\x18\0\0\0TFL3" + bytes(64), target="ethos-u85-512")
    assert res.board == "corstone-320-tflm"
    spec = res.load()
    assert spec.npu.variant == "ethos-u85-512" and spec.firmware.entry == "tflm_inference_runner"


@pytest.mark.parametrize("board", ["corstone-320", *U85_BOARDS])
def test_every_corstone320_board_runs_its_embedded_program(board):
    """The tutorial's x + x compiled for the board's own Ethos-U85 (firmware/models/addint_ethos-u85-*.pte)."""
    rc, out, err = run_fvp("run", "-c", board, "-C", "firmware.options.log_outputs=false")
    assert rc == 0 and "Program complete, exiting." in out, (out[-3000:], err)
    assert "Ethos-U PMU Events:[ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED" in out


def test_a_u55_program_on_a_corstone320_board_is_refused_by_the_driver():
    rc, out, err = run_fvp("run", CORPUS / "addint_u55.pte", "-c", "corstone-320",
                           "-C", "firmware.options.log_outputs=false")
    assert rc == 1, out + err
    assert "E: NPU config mismatch. npu.product=2, optimizer.product=0" in out
    assert "Ethos-U invocation failed error (-1)" in out
