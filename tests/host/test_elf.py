"""``fvp elf MODEL -o runner.elf``: a runner-shaped ELF (stdlib writer) that the FVP drop-in's ``-a`` runs."""

import importlib.util
import struct

import pytest

from testutil import CORPUS, run_fvp

needs_elf = pytest.mark.skipif(importlib.util.find_spec("elftools") is None,
                               reason="pyelftools is not installed (pip install '.[elf]')")
UART = ["-C", "mps3_board.uart0.out_file=-"]


def _sections(data: bytes) -> dict:
    """name -> (type, addr, offset, size), read with struct from the ELF32 section headers."""
    shoff, = struct.unpack_from("<I", data, 32)
    shnum, shstrndx = struct.unpack_from("<HH", data, 48)
    hdrs = [struct.unpack_from("<IIIIIIIIII", data, shoff + 40 * i) for i in range(shnum)]
    strtab_off = hdrs[shstrndx][4]
    out = {}
    for h in hdrs[1:]:
        name = data[strtab_off + h[0]:data.index(b"\0", strtab_off + h[0])].decode()
        out[name] = (h[1], h[3], h[4], h[5])
    return out


def test_elf_layout(tmp_path):
    program = (CORPUS / "add_u55-128.bpte").read_bytes()
    out = tmp_path / "runner.elf"
    rc, stdout, err = run_fvp("elf", CORPUS / "add_u55-128.bpte", "-o", out)
    assert rc == 0, err
    assert "run it with: FVP_Corstone_SSE-300_Ethos-U55 -C ethosu.num_macs=128 -a " in err
    data = out.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 1 and struct.unpack_from("<H", data, 18)[0] == 40  # ELF32, ARM
    secs = _sections(data)
    typ, addr, off, size = secs["network_model_sec"]
    assert (typ, addr, size) == (1, 0x7000_0000, len(program)) and data[off:off + size] == program
    assert secs[".bss.method_allocator_sec"][0] == 8 and secs[".bss.method_allocator_sec"][3] == 60 << 20
    assert secs[".bss.tensor_arena"][1:4:2] == (0x3100_0000, 2 << 20)  # the temp pool in SRAM, as Shared_Sram


@needs_elf
def test_reader_reads_what_the_writer_wrote(tmp_path):
    from fvp.host.dropin.elf_image import read_elf

    program = (CORPUS / "mobilenet_v1_025_u65-256.bpte").read_bytes()
    out = tmp_path / "u65.elf"
    rc, _, err = run_fvp("elf", CORPUS / "mobilenet_v1_025_u65-256.bpte", "-o", out)
    assert rc == 0, err
    img = read_elf(str(out))
    assert img.program == program and img.program_address == 0x7000_0000 and img.machine == "EM_ARM"
    assert set(img.pools) == {"method", "temp", "fast_scratch"}  # Dedicated_Sram: the fast scratch in SRAM
    assert img.pools["fast_scratch"] == (0x3100_0000, 384 << 10)


@needs_elf
@pytest.mark.parametrize("name, macs", [("add_u55-128.bpte", 128), ("mobilenet_v1_025_u65-256.bpte", 256)])
def test_round_trip_through_the_dropin(tmp_path, name, macs):
    out = tmp_path / "runner.elf"
    rc, _, err = run_fvp("elf", CORPUS / name, "-o", out)
    assert rc == 0, err
    flavour = ["--flavour=u65"] if "u65" in name else []  # python -m fvp.host.dropin as the U65 binary
    rc, log, err = run_fvp(*flavour, "-C", f"ethosu.num_macs={macs}", *UART, "-a", out, prog="fvp.host.dropin")
    assert rc == 0, err + log
    assert f"Info: application: runner.elf:network_model_sec ({(CORPUS / name).stat().st_size} bytes)" in log
    assert "pools from the ELF:" in log
    assert "TEST: BundleIO index[0] Test_result: PASS" in log
    assert "Info: /OSCI/SystemC: Simulation stopped by user." in log


def test_bad_inputs_are_one_line_exit_2(tmp_path):
    notes = tmp_path / "notes.pte"
    notes.write_text("not a program\n")
    for args in (["elf", notes, "-o", tmp_path / "x.elf"],
                 ["elf", CORPUS / "add_u55-128.bpte", "-o", tmp_path / "missing" / "x.elf"],
                 ["elf", tmp_path / "absent.pte", "-o", tmp_path / "x.elf"]):
        rc, out, err = run_fvp(*args)
        assert rc == 2 and out == "" and len(err.splitlines()) == 1 and err.startswith("fvp: error: "), err
    assert not (tmp_path / "x.elf").exists()


@needs_elf
def test_etdump_options_are_written_into_the_elf_and_the_dropin_runs_that_build(tmp_path):
    """-C firmware.options.etdump=true (and etdump_debug) becomes the runner's ETDump strings, which the drop-in
    reads back as the build it stands for: the #[RUN THIS] block with the debug buffer, with no -C given to it."""
    from fvp.host.dropin.elf_image import read_elf

    out = tmp_path / "etdump.elf"
    rc, _, err = run_fvp("elf", CORPUS / "add_u55-128.bpte", "-o", out, "-C", "firmware.options.etdump=true",
                         "-C", "firmware.options.etdump_debug=intermediate")
    assert rc == 0, err
    assert "built with ETDump (intermediate debug events)" in err
    img = read_elf(str(out))
    assert img.etdump and img.etdump_debug == "intermediate" and img.program is not None
    rc, log, err = run_fvp("-C", "ethosu.num_macs=128", *UART, "-a", out, prog="fvp.host.dropin")
    assert rc == 0, err + log
    assert "#[RUN THIS]" in log and ">debug_buffer.bin" in log
    plain = tmp_path / "plain.elf"
    assert run_fvp("elf", CORPUS / "add_u55-128.bpte", "-o", plain, "-C", "firmware.options.etdump=false")[0] == 0
    assert not read_elf(str(plain)).etdump


def test_options_an_elf_cannot_carry_are_refused_not_dropped(tmp_path):
    out = tmp_path / "x.elf"
    for args, want in ((["-C", "firmware.allocator=minimal"], "a runner ELF does not record it"),
                       (["-C", "npu.memory_mode=Sram_Only"], "the drop-in takes the memory mode from the program's"),
                       (["-C", "firmware.options.etdump_debug_buffer_size=4096"], "a runner ELF does not record it")):
        rc, _, err = run_fvp("elf", CORPUS / "add_u55-128.bpte", "-o", out, *args)
        assert rc == 2 and want in err and err.splitlines()[-1].startswith("fvp: error: -C "), err
        assert not out.exists()
    # what the ELF records, or what changes nothing, is accepted
    for args in (["-C", "npu.memory_mode=Shared_Sram"], ["-C", "firmware.pools.method.size=1MiB"],
                 ["-C", "mps3_board.visualisation.disable-visualisation=1"], ["--target", "ethos-u55-128"]):
        rc, _, err = run_fvp("elf", CORPUS / "add_u55-128.bpte", "-o", out, *args)
        assert rc == 0, (args, err)


@needs_elf
@pytest.mark.parametrize("target, flavour, mode", [("ethos-u55-128", [], "Shared_Sram"),
                                                   ("ethos-u65-256", ["--flavour=u65"], "Dedicated_Sram_384KB"),
                                                   ("ethos-u85-128", ["--flavour=u85"], "Dedicated_Sram_384KB")])
def test_semihosting_runner_without_a_program(tmp_path, target, flavour, mode):
    """fvp elf with no MODEL: the semihosting runner of ExecuTorch's test harness (setup_testing.sh's build for
    that target and memory mode); the drop-in runs the program the semihosting command line names, with
    ethosu.extra_args=--fast as the harness passes it (and says what --fast turns off)."""
    from fvp.host.dropin.elf_image import read_elf

    elf = tmp_path / "arm_executor_runner"
    rc, _, err = run_fvp("elf", "-o", elf, "--target", target, "-C", f"npu.memory_mode={mode}",
                         "-C", "firmware.pools.method.size=80MiB")
    assert rc == 0, err
    assert f"a semihosting runner (no program) for {target}, {mode}" in err
    img = read_elf(str(elf))
    assert img.program is None and img.pools["method"][1] == 80 << 20 and img.pools["input_file"][1] == 60 << 20
    assert ("fast_scratch" in img.pools) == mode.startswith("Dedicated_Sram")
    program = {"ethos-u55-128": CORPUS / "add_u55-128.bpte", "ethos-u65-256": CORPUS / "mobilenet_v1_025_u65-256.bpte",
               "ethos-u85-128": CORPUS.parent / "oracle_u85" / "conv1d_u85-128" / "conv1d_u85-128.bpte"}[target]
    (tmp_path / "program.bpte").write_bytes(program.read_bytes())
    (tmp_path / "fvp_dummy_input.bin").write_bytes(bytes(4))  # run.sh's: the runner wants -i; a bundle has its own
    cpu = "mps4_board.subsystem.cpu0" if target.startswith("ethos-u85") else "cpu0"
    npu = "mps4_board.subsystem.ethosu" if target.startswith("ethos-u85") else "ethosu"
    rc, log, err = run_fvp(*flavour, "-C", f"{npu}.num_macs={target.rsplit('-', 1)[1]}",
                           "-C", f"{cpu}.semihosting-cwd={tmp_path}", "-C", f"{npu}.extra_args='--fast'",
                           "-C", f"{cpu}.semihosting-cmd_line=executor_runner -m program.bpte -i fvp_dummy_input.bin -o out",
                           "-a", elf, prog="fvp.host.dropin")
    assert rc == 0, err + log
    assert "Test_result: PASS" in log and (tmp_path / "out-0.bin").is_file()
    assert f"Info: {npu}.extra_args=--fast: the NPU's timing model is off" in log
