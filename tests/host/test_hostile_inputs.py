"""Issue 16, items 2, 3, 6 and 7: bounded input files, board files that cannot run code or replace files,
values the schema must refuse, and the small ones (Ctrl-C while starting, a full disk, CLI limits).

Each case ends in one ``error:`` line with the documented exit status (docs/security.md)."""

import errno
import os
import sys

import pytest

from testutil import CORPUS, ROOT, remarks, run_fvp

import fvp.bounded_read as bounded_read
import fvp.host.inputs as inputs
from fvp.host import cli
from fvp.host.dropin import command as dropin
from fvp.boards import ConfigProblems, load_board

ADD_Q = CORPUS / "add_q.pte"
BPTE = CORPUS / "add_u55-128.bpte"


def fvp_main(*argv, capsys):
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _errors(err, prog="fvp"):
    return [l for l in err.splitlines() if l.startswith(f"{prog}: error:")]


# ------------------------------------------------------------------------------------------ 2. bounded input files
def test_read_input_bounds_an_endless_device():
    with pytest.raises(bounded_read.InputTooLarge) as e:
        bounded_read.read_input("/dev/zero", 3 << 20, label="x", kind="model file")
    assert e.value.problems == ["x: model file is larger than 3MiB (3145728 bytes)"]
    assert bounded_read.read_input("/dev/null", 10) == b""


def test_regular_file_over_the_bound_is_refused_from_its_size(tmp_path):
    big = tmp_path / "big.pte"
    with open(big, "wb") as f:
        f.truncate(64 << 30)  # sparse: refusing it must not read 64 GiB
    limit, why = inputs.program_limit(load_board(None))
    assert limit < 64 << 30 and "region DDR" in why
    with pytest.raises(bounded_read.InputTooLarge):
        inputs.read_program(big)


def test_program_limit_is_the_room_in_the_model_region():
    spec = load_board(None)
    limit, _ = inputs.program_limit(spec)
    assert limit == 0x6000_0000 - 60 * 1024 * 1024  # DDR link region less the method pool placed after it
    assert inputs.memory_limit(spec, 0x6000_0000) == 2 << 30  # DDR, from its base
    assert inputs.memory_limit(spec, 0x2110_0000) == 1 << 20  # the second SRAM bank: to the end of ISRAM0+1
    assert inputs.largest_memory(spec) == 2 << 30


@pytest.mark.parametrize("argv", [["run", "/dev/zero"], ["run", "--data", "/dev/zero@0x60000000"],
                                  ["run", "-i", "/dev/zero", ADD_Q]])
def test_fvp_run_dev_zero_is_one_line_exit_2(argv, capsys, monkeypatch):
    # small bounds keep the test fast; the call sites are what is tested
    monkeypatch.setattr(inputs, "program_limit", lambda spec=None: (1 << 20, "test bound"))
    monkeypatch.setattr(inputs, "memory_limit", lambda spec, address=None: 1 << 20)
    rc, out, err = fvp_main(*argv, capsys=capsys)
    assert rc == 2
    assert len(_errors(err)) == 1 and "/dev/zero" in err and "larger than 1MiB" in err, err
    assert "Traceback" not in err and "internal error" not in err


@pytest.mark.parametrize("argv", [["--data", "/dev/zero@0x70000000"], ["-f", "/dev/zero"],
                                  ["-C", "cpu0.semihosting-cmd_line=executor_runner -m /dev/zero"]])
def test_dropin_dev_zero_is_one_line_exit_2(argv, capsys, monkeypatch):
    monkeypatch.setattr(inputs, "largest_memory", lambda spec: 1 << 20)
    monkeypatch.setattr(bounded_read, "TEXT_LIMIT", 1 << 16)
    rc = dropin.main(argv)
    err = capsys.readouterr().err
    assert rc == 2
    lines = _errors(err, "FVP_Corstone_SSE-300_Ethos-U55")
    assert len(lines) == 1 and "/dev/zero" in lines[0] and "larger than" in lines[0], err


def test_missing_input_file_is_still_the_runners_failure(capsys, tmp_path):
    rc, out, err = fvp_main("run", ADD_Q, "-i", tmp_path / "nosuch.bin", capsys=capsys)
    assert rc == 1  # as on the FVP: the runner cannot open it (not refused up front)


def test_board_file_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(bounded_read, "TEXT_LIMIT", 1000)
    b = tmp_path / "b.yaml"
    b.write_text("board: {name: x}\n" + "# padding\n" * 200)
    with pytest.raises(ConfigProblems, match="board file is larger than"):
        load_board(b)


# ------------------------------------------------------------------------------------------ 3. board files run no code
@pytest.mark.parametrize("entry", ["os:system", "evil:main", "subprocess:run", "firmware.hal:main"])
def test_firmware_entry_is_a_registered_name(entry):
    with pytest.raises(ConfigProblems) as e:
        load_board(None, [f"firmware.entry={entry}"])
    assert e.value.problems[0].startswith(f"-C firmware.entry={entry}: firmware.entry:")
    assert "not a registered firmware image; allowed: arm_executor_runner" in e.value.problems[0]


def test_board_yaml_cannot_import_a_module_from_the_current_directory(tmp_path):
    (tmp_path / "evil.py").write_text("open('PWNED', 'w').write('x')\ndef main(bus, boot):\n    return 0\n")
    (tmp_path / "board.yaml").write_text("extends: default\nfirmware:\n  entry: evil:main\n")
    rc, out, err = run_fvp("run", ADD_Q, "-c", "board.yaml", cwd=tmp_path)
    assert rc == 2 and not (tmp_path / "PWNED").exists()
    assert "board.yaml: firmware.entry: 'evil:main'" in err and "not a registered firmware image" in err


def test_registered_names_and_plugins(monkeypatch):
    from fvp.boards import firmware_registry as reg

    assert load_board(None).firmware.entry == "arm_executor_runner"
    # the shipped board's historical spelling is that image's own target: the same image
    assert load_board(None, ["firmware.entry=firmware.arm_executor_runner:main"]).firmware.entry == "arm_executor_runner"
    monkeypatch.setattr(reg, "_plugins", {"my_runner": "firmware.arm_executor_runner:main"})
    assert load_board(None, ["firmware.entry=my_runner"]).firmware.entry == "my_runner"
    from fvp.host.programs.firmware_image import load

    assert load("my_runner").main.__name__ == "main"


def test_plugins_come_from_the_entry_point_group(monkeypatch):
    from importlib import metadata

    from fvp.boards import firmware_registry as reg

    seen = {}

    def fake_entry_points(group=None):
        seen["group"] = group
        return [metadata.EntryPoint("plug", "firmware.arm_executor_runner:main", group)]

    monkeypatch.setattr(metadata, "entry_points", fake_entry_points)
    monkeypatch.setattr(reg, "_plugins", None)
    assert reg.registered()["plug"] == "firmware.arm_executor_runner:main" and seen["group"] == "fvp.firmware"
    monkeypatch.setattr(reg, "_plugins", None)


def _uart_board(tmp_path, out_file):
    b = tmp_path / "board.yaml"
    b.write_text(f"extends: default\ndevices:\n  uart0:\n    out_file: {out_file!r}\n")
    return b


@pytest.mark.parametrize("target", ["/tmp/elsewhere.log", "../up.log", "~/x.log", "sub/../../x.log"])
def test_board_file_out_file_stays_in_the_current_directory(tmp_path, monkeypatch, capsys, target):
    monkeypatch.chdir(tmp_path)
    rc, out, err = fvp_main("run", "-c", _uart_board(tmp_path, target), capsys=capsys)
    assert rc == 2 and len(_errors(err)) == 1 and "board.yaml: devices.uart0.out_file" in err, err
    assert f"-C devices.uart0.out_file={target}" in err  # how to allow it


def test_board_file_does_not_replace_an_existing_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "victim").write_text("keep")
    rc, out, err = fvp_main("run", "-c", _uart_board(tmp_path, "victim"), capsys=capsys)
    assert rc == 2 and "exists; a board-file setting does not replace a file" in err
    assert (tmp_path / "victim").read_text() == "keep"
    os.symlink("/etc/passwd", tmp_path / "link")
    rc, out, err = fvp_main("run", "-c", _uart_board(tmp_path, "link"), capsys=capsys)
    assert rc == 2 and "leads out of the current directory" in err


def test_board_file_may_create_a_new_file_and_the_command_line_may_replace(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    board = _uart_board(tmp_path, "uart.log")
    rc, out, err = fvp_main("run", "-c", board, capsys=capsys)
    assert rc == 0 and "Program complete" in (tmp_path / "uart.log").read_text()
    (tmp_path / "uart.log").write_text("old")
    for override in ("devices.uart0.out_file=uart.log", "mps3_board.uart0.out_file=uart.log"):
        rc, out, err = fvp_main("run", "-c", board, "-C", override, capsys=capsys)
        assert rc == 0 and "Program complete" in (tmp_path / "uart.log").read_text()


# ------------------------------------------------------------------------------------------ 6. schema
@pytest.mark.parametrize("override, says", [
    ("firmware.options=abc", "expected a mapping"),
    ("firmware.options={a: [1]}", "expected a string, a number or true/false"),
    ("devices.ethosu.irq=abc", "expected an integer"),
    ("devices.ethosu.irq=100000", "an interrupt number must be >= 0 and <= 479"),
    ("devices.uart0.type=ethos-u", "devices.uart0"),
    ("devices.uart0.type=nosuch", "'nosuch' is not allowed"),
    ("devices.uart0.type=[]", "[] is not allowed"),  # found by tools/fuzz.py's board_value target
    ("devices.uart0.type={a: 1}", "is not allowed"),
    ("cpu.costs.call=1e308", "must be >= 0 and <= 1000000"),
    ("cpu.costs.call=nan", "finite"),
    ("cpu.costs.call=inf", "finite"),
    ("cpu.costs.call=.inf", "finite"),
    ("cpu.costs.call=-1", "must be >= 0"),
    ("cpu.clock=1e300", "a clock must be"),
    ("cpu.clock=.nan", "finite"),
    ("cpu.mips_per_mhz=0", "must be > 0"),
    ("system_configs.Ethos_U55_High_End_Embedded.core_clock=1e300", "a clock must be"),
    ("system_configs.Ethos_U55_High_End_Embedded.memories.Sram.burst_length=0", "a burst length"),
    ("system_configs.Ethos_U55_High_End_Embedded.memories.Sram.read_latency=-5", "a cycle count"),
    ("system_configs.Ethos_U55_High_End_Embedded.memories.Sram.clock_scale=0", "a clock scale"),
    ("npu.timing_params.op_setup_cycles=-1", "a cycle count must be >= 0"),
    ("npu.timing_params.cmd_word_cycles=1e300", "a cycle count"),
    ("npu.max_commands=1e300", "expected an integer"),
    ("simulation.time_limit=nan", "finite"),
    ("simulation.time_limit=0", "must be > 0"),
    ("simulation.cycle_limit=0", "a cycle limit must be >= 1"),
    ("memory.DDR.size=1e300", "a size"),
    ("memory.DDR.base=0x100_0000_0000", "an address"),
    ("firmware.pools.temp.align=0x1_0000_0000_0", "an alignment"),
    ("memory_modes.Shared_Sram.regioncfg=[9, 0, 0, 0, 0, 0, 0, 0]", "a region config"),
    ("firmware.options=" + "[" * 5000 + "]" * 5000, "nesting deeper than 64 levels"),
    ("board.name={a: 1, a: 2}", "duplicate key 'a'"),
])
def test_schema_refuses_with_one_line_naming_the_override(override, says):
    with pytest.raises(ConfigProblems) as e:
        load_board(None, [override])
    assert all("\n" not in p for p in e.value.problems)
    assert all(p.startswith("-C ") for p in e.value.problems), e.value.problems
    assert "corstone-300.yaml" not in "\n".join(e.value.problems)
    assert any(says in p for p in e.value.problems), e.value.problems


def test_cross_check_errors_name_the_override_that_caused_them():
    with pytest.raises(ConfigProblems) as e:
        load_board(None, ["firmware.allocator=minimal", "memory.ISRAM0.size=64KiB"])
    assert e.value.problems[0].startswith("-C memory.ISRAM0.size=64KiB: firmware.memory.SRAM:"), e.value.problems


@pytest.mark.parametrize("override", ["cpu.costs.call=1e308", "devices.uart0.type=ethos-u", "firmware.options=abc",
                                      "devices.ethosu.irq=abc"])
def test_schema_values_never_reach_the_run(override, capsys):
    rc, out, err = fvp_main("run", "-C", override, capsys=capsys)
    assert rc == 2 and "internal error" not in err and "simulator error" not in out
    assert _errors(err) and all(l.startswith(f"fvp: error: -C {override}: ") for l in _errors(err))


def _yaml_board(tmp_path, text):
    b = tmp_path / "b.yaml"
    b.write_text(text)
    return b


def test_deeply_nested_yaml_board(tmp_path):
    b = _yaml_board(tmp_path, "extends: default\nfirmware:\n  options:\n    x: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigProblems, match=r"b.yaml:\d+: invalid YAML: nesting deeper than 64 levels"):
        load_board(b)
    b = _yaml_board(tmp_path, "extends: default\nboard:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(300)))
    with pytest.raises(ConfigProblems, match="nesting deeper than 64 levels"):
        load_board(b)


def test_duplicate_yaml_keys_are_an_error(tmp_path):
    b = _yaml_board(tmp_path, "extends: default\nfirmware:\n  allocator: arm\n  allocator: minimal\n")
    with pytest.raises(ConfigProblems, match=r"b.yaml:4: invalid YAML: duplicate key 'allocator' \(first at line 3\)"):
        load_board(b)


def test_yaml_merge_keys_may_be_overridden():
    from fvp.boards import yaml_safe

    assert yaml_safe.load("a: &o {x: 1, y: 2}\nb:\n  <<: *o\n  x: 3\n") == {"a": {"x": 1, "y": 2}, "b": {"x": 3, "y": 2}}


def test_alias_bombs_are_refused(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    b = _yaml_board(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(ConfigProblems, match="expands to more than 100000 values"):
        load_board(b)
    b = _yaml_board(tmp_path, "extends: default\nfirmware:\n  options: &a {x: *a}\n")
    with pytest.raises(ConfigProblems, match="an alias refers to a node that contains it"):
        load_board(b)


@pytest.mark.parametrize("argv, says", [
    (["--timelimit", "nan"], "--timelimit: 'nan'"), (["--timelimit", "inf"], "--timelimit"),
    (["--timelimit", "-1"], "--timelimit"), (["--timelimit", "0"], "--timelimit"),
    (["--cyclelimit", "-1"], "--cyclelimit: '-1'"), (["--cyclelimit", "0"], "--cyclelimit"),
    (["--cyclelimit", "1e3"], "--cyclelimit"),
])
def test_cli_limits_are_checked(argv, says, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["run", *argv])
    err = capsys.readouterr().err
    assert e.value.code == 2 and len(err.strip().splitlines()) == 1 and says in err and err.startswith("fvp: error:")


@pytest.mark.parametrize("argv", [["--timelimit", "nan"], ["--cpulimit", "inf"], ["--simlimit", "-1"],
                                  ["--cyclelimit", "-1"]])
def test_dropin_limits_are_checked(argv, capsys):
    rc = dropin.main([*argv, "--data", f"{ADD_Q}@0x70000000"])
    err = capsys.readouterr().err
    assert rc == 2 and argv[0] in err and len(err.strip().splitlines()) == 1


def test_cyclelimit_accepts_hex():
    assert cli.build_parser().parse_args(["run", "--cyclelimit", "0x10"]).cyclelimit == 16


def test_inputs_for_a_bundled_program_are_an_error(capsys, tmp_path):
    rc, out, err = fvp_main("run", BPTE, "-i", tmp_path / "in.bin", capsys=capsys)
    assert rc == 2 and "bundled program (.bpte)" in err and len(_errors(err)) == 1
    assert out == ""  # refused before the run starts


# ------------------------------------------------------------------------------------------ 7. the small ones
def test_ctrl_c_while_importing_the_command(monkeypatch, capsys):
    import importlib

    from fvp.host import launch

    def interrupted(name):
        raise KeyboardInterrupt

    monkeypatch.setattr(importlib, "import_module", interrupted)
    assert launch.fvp() == 130
    assert capsys.readouterr().err == "fvp: interrupted\n"


def test_console_scripts_use_the_launcher():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'fvp = "fvp.host.launch:fvp"' in text and '"fvp.host.launch:fvp_u55"' in text and '"fvp.host.launch:fvp_u65"' in text


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO, errno.EDQUOT])
def test_a_failed_write_is_exit_1_with_the_reason(code, capsys):
    from fvp.host.entry import guarded

    def body():
        raise OSError(code, os.strerror(code))

    stdout = sys.stdout
    try:
        assert guarded("fvp", body) == 1
    finally:
        sys.stdout = stdout
    assert capsys.readouterr().err == f"fvp: error: writing the output failed: {os.strerror(code)}\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_disk_under_stdout_and_the_uart_file_is_exit_1(tmp_path):
    import subprocess

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with open("/dev/full", "wb") as full:
        p = subprocess.run([sys.executable, "-m", "fvp", "run"], stdout=full, stderr=subprocess.PIPE, env=env,
                           cwd=tmp_path, timeout=300)
    assert p.returncode == 1
    assert remarks(p.stderr.decode()) == ["fvp: error: writing the output failed: No space left on device"]
    rc, out, err = run_fvp("run", "-C", "devices.uart0.out_file=/dev/full", cwd=tmp_path)
    assert rc == 1 and "No space left on device" in err and "Traceback" not in err


def test_a_stream_is_read_at_most_stream_limit(monkeypatch):
    # a pipe or device has no size: what it sends is held, so it is cut at STREAM_LIMIT whatever the bound
    # (the fuzzer's host_file cases grew the process by ~2 GiB before this, reading /dev/zero up to DDR's size)
    monkeypatch.setattr(bounded_read, "STREAM_LIMIT", 1 << 20)
    with pytest.raises(bounded_read.InputTooLarge) as e:
        bounded_read.read_input("/dev/zero", 1 << 30, label="-i /dev/zero", kind="input file")
    assert e.value.problems == ["-i /dev/zero: input file is a pipe or device that sent more than 1MiB, what this "
                                "simulator reads from a stream: give a regular file"]
    r, w = os.pipe()
    os.write(w, b"x" * 1000)
    os.close(w)
    assert bounded_read.read_input(f"/dev/fd/{r}", 1 << 30) == b"x" * 1000  # a small stream is read whole
    os.close(r)


def test_dropin_elf_must_be_a_bounded_regular_file(tmp_path, capsys):
    big = tmp_path / "big.elf"
    with open(big, "wb") as f:  # sparse: no disk used
        f.truncate(5 << 30)
    for path, why in (("/dev/zero", "not a regular file"), (str(big), "larger than 4GiB")):
        rc = dropin.main(["-a", path])
        err = capsys.readouterr().err
        assert rc == 2 and why in err and len(err.strip().splitlines()) == 1, err


def test_a_text_parsed_again_is_a_fresh_copy_and_a_refusal_is_refused_again():
    from fvp.boards import yaml_safe

    text = "a: &x [1, {b: 2}]\nc: *x\n"
    first = yaml_safe.load(text)
    first["a"][1]["b"] = 99  # the caller's copy is its own
    second = yaml_safe.load(text)
    assert second == {"a": [1, {"b": 2}], "c": [1, {"b": 2}]} and second["a"] is second["c"]  # the alias shared
    assert second is not first and second["a"] is not first["a"]
    bad = "a: 1\na: 2\n"
    for _ in range(2):
        with pytest.raises(yaml_safe.StructureError, match="duplicate key"):
            yaml_safe.load(bad)
