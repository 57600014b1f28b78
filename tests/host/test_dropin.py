"""The FVP drop-in (``FVP_Corstone_SSE-300_Ethos-U55/U65``) with the command lines ExecuTorch's scripts build.

The runner ELFs are made here by a tiny ELF32 writer (no cross compiler): a ``network_model_sec`` section
holding a corpus program, and the pool symbols the runner's build defines, at Corstone-300.ld addresses.
"""

import importlib.util
import struct
import sys

import pytest

from testutil import CORPUS, run_fvp

PROG = "fvp.host.dropin"
needs_elf = pytest.mark.skipif(importlib.util.find_spec("elftools") is None,
                               reason="pyelftools is not installed (pip install '.[elf]')")
EM_ARM = 40


def make_elf(path, program=None, symbols=(), model_addr=0x7000_0000, model_section="network_model_sec"):
    """Write a minimal little-endian ELF32 executable: one PROGBITS section with ``program`` (if any), one NOBITS
    section per symbol (``(name, address, size)``), a symbol table naming them."""
    sections = [("", 0, 0, 0, 0, b"", 0, 0, 0, 0)]  # name, type, flags, addr, size, data, link, info, align, entsize
    if program is not None:
        sections.append((model_section, 1, 0x2, model_addr, len(program), program, 0, 0, 16, 0))
    sym_sections = {}
    for name, addr, size in symbols:
        sym_sections[name] = len(sections)
        sections.append((f".bss.{name}", 8, 0x3, addr, size, b"", 0, 0, 16, 0))
    strtab = b"\0"
    syms = [b"\0" * 16]
    names = []
    if program is not None:
        names.append(("model_pte", model_addr, len(program), 1))
    names += [(n, a, s, sym_sections[n]) for n, a, s in symbols]
    for name, addr, size, shndx in names:
        off = len(strtab)
        strtab += name.encode() + b"\0"
        syms.append(struct.pack("<IIIBBH", off, addr, size, 0x11, 0, shndx))
    symtab_index = len(sections)
    sections.append((".symtab", 2, 0, 0, 16 * len(syms), b"".join(syms), symtab_index + 1, 1, 4, 16))
    sections.append((".strtab", 3, 0, 0, len(strtab), strtab, 0, 0, 1, 0))
    shstr = b"\0"
    name_offs = []
    for s in sections + [(".shstrtab",)]:
        if s[0]:
            name_offs.append(len(shstr))
            shstr += s[0].encode() + b"\0"
        else:
            name_offs.append(0)
    sections.append((".shstrtab", 3, 0, 0, len(shstr), shstr, 0, 0, 1, 0))
    body = b""
    offsets = []
    pos = 52
    for s in sections:
        data = s[5]
        pad = (-pos) % 16
        body += b"\0" * pad
        pos += pad
        offsets.append(pos if data else 0)
        body += data
        pos += len(data)
    pad = (-pos) % 4
    body += b"\0" * pad
    shoff = pos + pad
    header = b"\x7fELF" + bytes([1, 1, 1, 0]) + b"\0" * 8
    header += struct.pack("<HHIIIIIHHHHHH", 2, EM_ARM, 1, 0x1000_0000, 0, shoff, 0x05000200, 52, 32, 0, 40,
                          len(sections), len(sections) - 1)
    shdrs = b""
    for i, s in enumerate(sections):
        name, typ, flags, addr, size, data, link, info, align, entsize = s
        shdrs += struct.pack("<IIIIIIIIII", name_offs[i], typ, flags, addr, offsets[i], size, link, info, align,
                             entsize)
    path.write_bytes(header + body + shdrs)
    return path


FVP_ARGS = ["-C", "ethosu.num_macs=128", "-C", "mps3_board.visualisation.disable-visualisation=1",
            "-C", "mps3_board.telnetterminal0.start_telnet=0", "-C", "mps3_board.uart0.out_file=-",
            "-C", "mps3_board.uart0.shutdown_on_eot=1"]


def dropin(*args, cwd=None):
    return run_fvp(*args, cwd=cwd, prog=PROG, timeout=300)


@needs_elf
def test_elf_with_embedded_program_runs(tmp_path):
    elf = make_elf(tmp_path / "arm_executor_runner", (CORPUS / "add_u55-128.bpte").read_bytes())
    rc, out, err = dropin("-C", "ethosu.num_macs=128", "-C", "mps3_board.uart0.out_file=-", "-a", elf)
    assert rc == 0, err + out
    assert "this is not Arm's FVP" in out
    assert "PTE @ 0x70000000 [----BP08]" in out
    assert "Test_result: PASS" in out
    assert "Info: /OSCI/SystemC: Simulation stopped by user." in out
    assert "Traceback" not in err


@needs_elf
def test_linked_elf_program_found_by_symbol(tmp_path):
    # after linking, network_model_sec is merged into .ddr.rodata: the program is found through model_pte
    elf = make_elf(tmp_path / "linked.elf", (CORPUS / "add_u55-128.bpte").read_bytes(), model_section=".ddr.rodata",
                   model_addr=0x7000_0000)
    rc, out, err = dropin(*FVP_ARGS, "-a", elf)
    assert rc == 0, err + out
    assert "Test_result: PASS" in out


@needs_elf
def test_run_fvp_sh_command_line_and_elf_pools(tmp_path):
    # run_fvp.sh's full command line; the ELF records a 1 MiB method pool (DDR) and a 1 MiB temp pool (SRAM)
    elf = make_elf(tmp_path / "runner.elf", (CORPUS / "add_u55-128.bpte").read_bytes(),
                   symbols=[("method_allocation_pool", 0x7010_0000, 1 << 20),
                            ("temp_allocation_pool", 0x3100_0000, 1 << 20)])
    rc, out, err = dropin(*FVP_ARGS, "-a", f"cpu0={elf}", "--timelimit", "600")
    assert rc == 0, err + out
    assert "Setup Method allocator pool. Size: 1048576 bytes." in out
    assert "temp_allocator:            1048576" in out
    assert "method_allocation_pool" not in err


@needs_elf
def test_elf_without_program_takes_data_pte(tmp_path):
    elf = make_elf(tmp_path / "runner.elf", None)
    rc, out, err = dropin(*FVP_ARGS, "-a", elf, "--data", f"{CORPUS / 'add_u55-128.bpte'}@0x70000000")
    assert rc == 0, err + out
    assert "Test_result: PASS" in out
    rc, out, err = dropin(*FVP_ARGS, "-a", elf)
    assert rc == 2
    assert err.count("\n") == 1 and "network_model_sec" in err


@needs_elf
def test_semihosting_command_line(tmp_path):
    # the pytest harness: inputs and outputs through semihosting files, relative to semihosting-cwd
    (tmp_path / "in0.bin").write_bytes(struct.pack("<f", 1.5))  # add_fp_cpu.pte: x + y on float[1]
    (tmp_path / "in1.bin").write_bytes(struct.pack("<f", 2.25))
    model = tmp_path / "model.pte"
    model.write_bytes((CORPUS / "add_fp_cpu.pte").read_bytes())
    rc, out, err = dropin("-C", "mps3_board.uart0.out_file=-", "-C", "cpu0.semihosting-enable=1",
                          "-C", "cpu0.semihosting-stack_base=0", "-C", "cpu0.semihosting-heap_limit=0",
                          "-C", f"cpu0.semihosting-cwd={tmp_path}", "-C", "ethosu.extra_args=--fast",
                          "-C", "cpu0.semihosting-cmd_line='executor_runner -m model.pte -i in0.bin -i in1.bin -o out'",
                          "-a", make_elf(tmp_path / "semi.elf"), cwd="/")
    assert rc == 0, err + out
    assert struct.unpack("<f", (tmp_path / "out-0.bin").read_bytes()) == (3.75,)


def test_u65_flavour_infers_memory_mode(tmp_path):
    # compiled for Ethos_U65_High_End / Dedicated_Sram: the board follows the program's compile specs
    rc, out, err = dropin("--flavour=u65", "-C", "ethosu.num_macs=256", "-C", "mps3_board.uart0.out_file=-",
                          "--data", f"{CORPUS / 'mobilenet_v1_025_u65-256.bpte'}@0x70000000")
    assert rc == 0, err + out
    assert "Creating Ethos-U65 with config H256 (Ethos_U65_High_End, Dedicated_Sram)" in out
    assert "Test_result: PASS" in out


def test_config_file_limits_and_stat(tmp_path):
    cfg = tmp_path / "fvp.cfg"
    cfg.write_text("# run_fvp-style parameters\nethosu.num_macs=128\nmps3_board.uart0.out_file=-\n")
    rc, out, err = dropin("-f", cfg, "--data", f"{CORPUS / 'add_u55-128.bpte'}@0x70000000", "--stat", "-q")
    assert rc == 0, err + out
    assert "Simulated time" in out and "standing in for" not in out
    rc, out, err = dropin("-f", cfg, "--data", f"{CORPUS / 'add_u55-128.bpte'}@0x70000000", "--cyclelimit", "1000")
    assert rc == 3
    assert "Info: Simulation is stopping. Reason: Cycle limit has been exceeded." in out


def test_info_options():
    rc, out, err = dropin("--version")
    assert rc == 0 and "not Arm's" in out
    rc, out, err = dropin("-l")
    assert rc == 0 and "ethosu.num_macs" in out and "cpu0.semihosting-cmd_line" in out


@pytest.mark.parametrize("args,needle", [
    ([], "nothing to run"),
    (["-a", "/nonexistent/app.elf"], "not found"),
    (["--bogus"], "unrecognized arguments"),
    (["-I"], "not supported"),
    (["-C", "ethosu.num_macs=128", "--data", "x@0x70000000"], "not found"),
    (["--data", f"{CORPUS / 'add_u55-128.bpte'}@0x70000000", "-C", "npu.memory_mod=Sram_Only"], "unknown key"),
    (["--data", f"{CORPUS / 'add_u55-128.bpte'}@0x70000000", "-C", "firmware.alocator=minimal"], "unknown key"),
    (["--data", f"{CORPUS / 'add_u55-128.bpte'}@0x70000000", "-C", "ethosu.num_macs=many"], "MAC count"),
    (["--data", f"{CORPUS / 'add_u55-128.bpte'}@zz"], "not an address"),
    (["-C", "cpu0.semihosting-cmd_line=executor_runner -x 1"], "unknown runner argument"),
])
def test_bad_command_lines_give_one_line(args, needle):
    rc, out, err = dropin(*args)
    assert rc == 2, out + err
    assert needle in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_unknown_fvp_parameter_warns_and_runs_on():
    # the FVP warns about a parameter it does not know and runs; scripts pass parameters of other FVP versions
    rc, out, err = dropin("-q", "--data", f"{CORPUS / 'add_u55-128.bpte'}@0x70000000", "-C", "ethosu.bogus=1",
                          "-C", "mps3_board.uart0.no_such_key=1", "-C", "notanfvp.thing=2")
    assert rc == 0, err + out
    assert "Test_result: PASS" in out and "Info: /OSCI/SystemC: Simulation stopped by user." in out
    warnings = err.strip().splitlines()
    assert len(warnings) == 3 and all(w.startswith("Warning: ") and "unknown parameter" in w for w in warnings)
    assert "'ethosu.bogus'" in warnings[0] and "'notanfvp.thing'" in warnings[2]
    assert "Warning:" not in out  # stderr, not the UART log


def test_fvp_run_keeps_unknown_parameters_strict():
    # only the drop-in follows the FVP's convention: fvp run -C refuses what it does not know
    rc, out, err = run_fvp("run", "-C", "ethosu.bogus=1")
    assert rc == 2 and "unknown parameter" in err and len(err.strip().splitlines()) == 1


def test_fvp_run_takes_q_as_the_dropin_does():
    # -q on the drop-in: no start-up lines; fvp run prints none, and takes -q so command lines move between them
    rc, out, err = run_fvp("run", "-q")
    assert rc == 0, err + out
    assert out.startswith("I [executorch:") and "Program complete, exiting." in out and not err


@pytest.mark.parametrize("args,reason,status", [
    (["--cyclelimit", "1000"], "Cycle limit has been exceeded (exit status 3)", 3),
    (["-C", "ethosu.num_macs=256"], "the application aborted: Execution of method forward failed", 1),
])
def test_non_zero_exit_says_why_on_stderr(args, reason, status):
    # a harness that reports only stderr ("Failed running command ...") must not show an empty reason
    rc, out, err = dropin("-q", "--data", f"{CORPUS / 'add_u55-128.bpte'}@0x70000000", *args)
    assert rc == status, err + out
    last = err.strip().splitlines()[-1]
    assert last.startswith("FVP_Corstone_SSE-300_Ethos-U55: error: ") and reason in last, err


def test_not_an_elf_and_missing_pyelftools(tmp_path, monkeypatch):
    bad = tmp_path / "bad.elf"
    bad.write_bytes(b"not an elf at all")
    rc, out, err = dropin("-a", bad)
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert ("not an ELF file" if importlib.util.find_spec("elftools") else "pyelftools") in err
    from fvp.host.dropin.elf_image import read_elf
    from fvp.errors import ConfigError

    monkeypatch.setitem(sys.modules, "elftools", None)
    monkeypatch.setitem(sys.modules, "elftools.elf.elffile", None)
    with pytest.raises(ConfigError, match=r"pyelftools"):
        read_elf(str(bad))


@needs_elf
def test_elf_reader_pools_and_regions(tmp_path):
    from fvp.host.dropin.elf_image import read_elf, region_of

    prog = (CORPUS / "add_u55-128.bpte").read_bytes()
    img = read_elf(str(make_elf(tmp_path / "a.elf", prog, symbols=[("dedicated_sram", 0x3100_0000, 0x60000)],
                                model_addr=0x7000_0000)))
    assert img.program == prog and img.program_address == 0x7000_0000
    assert img.pools == {"fast_scratch": (0x3100_0000, 0x60000)}
    links = {"SRAM": (0x3100_0000, 2 << 20), "DDR": (0x7000_0000, 0x6000_0000)}
    assert region_of(links, 0x2100_0100) == "SRAM"  # non-secure alias
    assert region_of(links, 0x7000_0000) == "DDR"
    assert region_of(links, 0x1000_0000) is None
