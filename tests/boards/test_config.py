"""Board loading: every board in fvp/boards/, layering, overrides, and one clear line per bad value."""

import textwrap

import pytest

from fvp.boards import ConfigProblems, available_boards, board_for_target, layout_firmware, load_board
from testutil import CORPUS, run_fvp


def test_every_board_loads():
    boards = available_boards()
    assert {"default", "corstone-300", "corstone-300-ethos-u55-32", "corstone-300-ethos-u55-64",
            "corstone-300-ethos-u55-128", "corstone-300-ethos-u55-256", "corstone-300-ethos-u65-256",
            "corstone-300-ethos-u65-512"} <= set(boards)
    for b in boards:
        spec = load_board(b)
        assert spec.npu is not None and spec.firmware is not None


def test_default_board_matches_the_tutorial_setup():
    s = load_board("default")
    assert s.npu.variant == "ethos-u55-128"
    assert s.npu.system_config.name == "Ethos_U55_High_End_Embedded"
    assert s.npu.system_config.core_clock_hz == 500_000_000
    assert s.npu.memory_mode.name == "Shared_Sram"
    assert s.devices["ethosu"].base == 0x48102000 and s.devices["ethosu"].secure_base == 0x58102000
    assert s.devices["ethosu"].irq == 56
    assert s.devices["uart0"].base == 0x49303000
    lay = layout_firmware(s, 2160)
    assert lay["model"] == (0x70000000, 2160)
    assert lay["method"][1] == 60 * 1024 * 1024 and 0x70000000 <= lay["method"][0] < 0xD0000000
    assert lay["temp"] == (0x31000000, 2 * 1024 * 1024)
    assert "npu" not in s.memory["DTCM"].masters and "npu" not in s.memory["ITCM"].masters
    assert s.memory["ISRAM0"].size == s.memory["ISRAM1"].size == 1024 * 1024


def test_target_shortcut_and_fvp_params():
    assert board_for_target("ethos-u55-256") == "corstone-300-ethos-u55-256"
    with pytest.raises(ConfigProblems):
        board_for_target("ethos-u99-1")
    s = load_board("default", ["ethosu.num_macs=256", "mps3_board.uart0.out_file=-",
                               "mps3_board.uart0.shutdown_on_eot=1",
                               "mps3_board.visualisation.disable-visualisation=1",
                               "mps3_board.telnetterminal0.start_telnet=0", "firmware.allocator=minimal"])
    assert s.npu.variant == "ethos-u55-256"
    assert s.firmware.allocator == "minimal"
    assert s.devices["uart0"].props["shutdown_on_eot"] is True
    s65 = load_board("corstone-300-ethos-u65-256", ["ethosu.num_macs=512"])
    assert s65.npu.variant == "ethos-u65-512"
    s2 = load_board("default", ["cpu0.CFGITCMSZ=11"])
    assert s2.memory["ITCM"].size == 1024 * 1024


def _write(tmp_path, text, name="bad.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def _problems(path, overrides=()):
    with pytest.raises(ConfigProblems) as e:
        load_board(str(path), overrides)
    return e.value.problems


# a board on top of corstone-300.yaml with one mistake -> what its one problem line says
_ONE_PROBLEM = {
    "misspelt_key": ("""
        npu:
          varient: ethos-u55-64
    """, ("bad.yaml", "npu.varient", "unknown key", "variant")),
    "bad_unit": ("""
        memory:
          ISRAM0:
            size: 2XB
    """, ("memory.ISRAM0.size", "'2XB'", "MiB")),
    "npu_scratch_in_dtcm": ("""
        firmware:
          pools:
            temp: {region: DTCM, size: 64KiB, npu: true}
    """, ("firmware.pools.temp", "DTCM", "NPU cannot reach")),
    "pool_larger_than_region": ("""
        firmware:
          pools:
            temp: {region: SRAM, size: 3MiB, npu: true}
    """, ("firmware.pools.temp", "overflowed")),
}

# ... -> what one of its problem lines says
_OVERLAP = {
    "regions": ("""
        memory:
          EXTRA:
            base: 0x2108_0000
            size: 1MiB
            masters: [cpu, npu]
    """, ("overlaps", "EXTRA", "ISRAM")),
    "pools": ("""
        firmware:
          pools:
            extra: {region: SRAM, size: 64KiB, address: 0x3100_1000}
    """, ("overlaps", "extra", "temp")),
}


def _on_corstone300(tmp_path, body):
    return _write(tmp_path, "extends: corstone-300.yaml\n" + textwrap.dedent(body))


@pytest.mark.parametrize("case", _ONE_PROBLEM)
def test_one_line_names_the_bad_key(tmp_path, case):
    body, says = _ONE_PROBLEM[case]
    (line,) = _problems(_on_corstone300(tmp_path, body))
    assert all(s in line for s in says), line


@pytest.mark.parametrize("case", _OVERLAP)
def test_overlap_is_reported(tmp_path, case):
    body, says = _OVERLAP[case]
    lines = _problems(_on_corstone300(tmp_path, body))
    assert any(all(s in l for s in says) for l in lines), lines


@pytest.mark.parametrize("override,key", [
    ("npu.variant=ethos-u55-100", "npu.variant"),
    ("npu.system_config=Ethos_U99", "npu.system_config"),
    ("npu.memory_mode=Weird", "npu.memory_mode"),
    ("npu.timing=sometimes", "npu.timing"),
    ("nosuch.key=1", "nosuch"),
    ("mps4_board.uart0.out_file=-", "mps4_board"),
])
def test_bad_overrides(override, key):
    lines = _problems("default", [override])
    assert len(lines) == 1 and key in lines[0] and "\n" not in lines[0]


def test_dedicated_sram_needs_fast_scratch():
    lines = _problems("default", ["npu.memory_mode=Dedicated_Sram"])
    assert any("fast_scratch" in l for l in lines)


def test_cli_config_errors_exit_2_without_traceback(tmp_path):
    p = _write(tmp_path, """
        extends: corstone-300.yaml
        npu:
          varient: ethos-u55-64
    """)
    rc, out, err = run_fvp("run", "-c", p)
    assert rc == 2 and "Traceback" not in err + out
    assert err.count("\n") == 1 and "npu.varient" in err
    rc, out, err = run_fvp("run", "-C", "firmware.allocator=nosuch")
    assert rc == 2 and "firmware.allocator" in err and "arm" in err and "Traceback" not in err
    rc, out, err = run_fvp("run", "-C", "firmware.runtime=executorch-0.1")
    assert rc == 2 and "firmware.runtime" in err and "executorch-1.5" in err
    rc, out, err = run_fvp("run", "missing.pte")
    assert rc == 2 and "missing.pte" in err and "Traceback" not in err
    bad_yaml = tmp_path / "broken.yaml"
    bad_yaml.write_text("npu: [unclosed\n")
    rc, out, err = run_fvp("run", "-c", bad_yaml)
    assert rc == 2 and "invalid YAML" in err and "broken.yaml:" in err


def test_every_board_runs_the_embedded_program():
    """With no MODEL every board runs the tutorial's program compiled for its own NPU (as run.sh builds the
    runner for its --target); the Ethos-U55-128 build on any other NPU fails the driver's configuration check
    (as the real driver does), with a failing exit status."""
    u55_128 = CORPUS / "addint_u55.pte"
    for b in available_boards():
        spec = load_board(b)
        variant = spec.npu.variant
        if spec.platform == "corstone-320":  # the Ethos-U85 boards: tests/boards/test_corstone320.py
            continue
        rc, out, err = run_fvp("run", "-c", b, "-C", "firmware.options.log_outputs=false")
        if spec.firmware.entry != "arm_executor_runner":  # another image (TFLM): no program baked in, it says so
            assert rc == 2 and "has no built-in program; give a MODEL" in err, (b, err)
            continue
        assert rc == 0 and "Program complete, exiting." in out, (b, out[-2000:], err)
        assert "Model executed successfully." in out and "ethosu_pmu_cycle_cntr : " in out, b
        if variant == "ethos-u55-128":
            continue
        rc, out, err = run_fvp("run", u55_128, "-c", b, "-C", "firmware.options.log_outputs=false")
        assert rc == 1, b
        assert "E: NPU config mismatch: npu.macs_per_cc=" in out and "optimizer.macs_per_cc=7" in out, b
        assert "Ethos-U invocation failed error (-1)" in out, b


def test_embedded_program_follows_the_npu_override():
    """`-C npu.variant=` changes the NPU and with it the program baked into the image."""
    for variant in ("ethos-u55-64", "ethos-u55-256"):
        rc, out, err = run_fvp("run", "-C", f"npu.variant={variant}")
        assert rc == 0 and "Program complete, exiting." in out, (variant, out[-2000:], err)
        assert "NPU config mismatch" not in out, variant


def test_binary_file_as_board():
    rc, out, err = run_fvp("run", "-c", "tests/data/corpus/add_q.pte")
    assert rc == 2 and "not a YAML board file" in err and "Traceback" not in err and "internal error" not in err


def test_config_prints_a_board_that_loads_again(tmp_path):
    rc, out, err = run_fvp("config", "--target", "ethos-u65-256", "-C", "firmware.allocator=minimal")
    assert rc == 0, err
    assert "base: '0x48102000'" in out and "size: 384KiB" in out
    assert "\n  clock: 32MHz\n" in out and "\n    core_clock: 1GHz\n" in out  # as the board files write them
    assert "Ethos_U65_High_End:" in out and "Ethos_U55_Deep_Embedded" not in out  # only the selected tables
    p = tmp_path / "resolved.yaml"
    p.write_text(out)
    again = load_board(str(p))
    assert again.npu.variant == "ethos-u65-256" and again.firmware.allocator == "minimal"
    assert again.firmware.pools["fast_scratch"].size == 384 * 1024
    assert again.cpu.clock_hz == 32_000_000 and again.npu.system_config.core_clock_hz == 10 ** 9
