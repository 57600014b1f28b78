"""The drop-in against ExecuTorch's real ``arm_executor_runner`` ELFs (tests/data/runner_elf, built with
gcc-arm-none-eabi from ExecuTorch cff6f4dd; docs/runner-elf.md).

The command lines are those ExecuTorch's scripts build, flag by flag in their order (written here as facts, not
copied code): ``backends/arm/scripts/run_fvp.sh`` for the runners with the program baked in (or given with
``--data``), ``backends/arm/test/runner_utils.py`` ``run_corstone`` for the semihosting runner. The output is
checked with the patterns those scripts use.
"""

import base64
import gzip
import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

from testutil import CORPUS, DATA, run_fvp

pytestmark = pytest.mark.skipif(importlib.util.find_spec("elftools") is None,
                                reason="pyelftools is not installed (pip install '.[elf]')")

ELFS = DATA / "runner_elf"
U55_BUNDLED = ELFS / "u55-128_add_bundled.elf"
U65_SEMIHOSTING = ELFS / "u65-256_semihosting.elf"
U65_PTE_AT_ADDR = ELFS / "u65-256_sram_only_pte_at_0x38000000.elf"  # QSPI, as test_arm_backend.sh
U65_MOBILENET = ELFS / "u65-256_dedicated_sram_mobilenet_bundled.elf"
U55_ETDUMP = ELFS / "u55-128_add_bundled_etdump.elf"

# run_fvp.sh: the problems it greps for in the FVP's output (stdout and stderr together, 2>&1)
RUN_FVP_PROBLEMS = re.compile(r"^(F|E|\[critical\]|Hard fault.|Info: Simulation is stopping. Reason: CPU time has "
                              r"been exceeded.).*$", re.M)
# runner_utils.py run_corstone: the error pattern over the FVP's stdout
RUNNER_UTILS_ERRORS = re.compile(r"(^[EF][: ].*$)|(^.*Hard fault.*$)|(^.*Assertion.*$)", re.M)


def binary(target: str) -> list:
    """The FVP run_fvp.sh and runner_utils.py pick for ``target`` (this package's drop-in under that name)."""
    return ["--flavour=u65"] if target.startswith("ethos-u65") else []


def _engine(engine):
    """``-C cpu0.engine=ENGINE`` first (the tests of the Python runner), or nothing: the scripts' own line, which
    runs the ELF's code when QEMU is installed (tests/host/test_fullsystem.py)."""
    return ["-C", f"cpu0.engine={engine}"] if engine else []


def run_fvp_sh(target, elf, data=None, trace_file=None, timeout=600, engine="python"):
    """The command line run_fvp.sh builds for an Ethos-U55/U65 target: -C ethosu.num_macs, the visualisation,
    telnet and UART0 parameters, ethosu.extra_args (--pmu-trace FILE for --trace_file), -a ELF, --data FILE@ADDR
    (its --data=), --timelimit."""
    args = binary(target) + _engine(engine) + ["-C", f"ethosu.num_macs={target.rsplit('-', 1)[1]}",
                             "-C", "mps3_board.visualisation.disable-visualisation=1",
                             "-C", "mps3_board.telnetterminal0.start_telnet=0",
                             "-C", "mps3_board.uart0.out_file=-",
                             "-C", "mps3_board.uart0.shutdown_on_eot=1"]
    if trace_file is not None:
        args += ["-C", f"ethosu.extra_args=--pmu-trace {trace_file}"]
    args += ["-a", str(elf)]
    if data is not None:
        args += ["--data", data]
    args += ["--timelimit", str(timeout)]
    rc, out, err = run_fvp(*args, prog="fvp.host.dropin", timeout=900)
    return rc, out, err, [m.group(0) for m in RUN_FVP_PROBLEMS.finditer(out + err)]


def runner_utils(target_board, elf, cwd: Path, inputs: list, timeout=120, engine="python"):
    """run_corstone's command line: the program as program.pte and the inputs as i<N>.bin in ``cwd``, the FVP's
    -C parameters in its order (quotes included, as a Python list passes them), -a ELF, --timelimit."""
    cmd_line = "executor_runner -m program.pte -o out" + "".join(f" -i i{i}.bin" for i in range(len(inputs)))
    for i, x in enumerate(inputs):
        (cwd / f"i{i}.bin").write_bytes(np.asarray(x).tobytes())
    num_macs = 128 if target_board == "corstone-300" else 256
    args = (["--flavour=u65"] if target_board == "corstone-300-u65" else []) + _engine(engine) + [
        "-C", f"ethosu.num_macs={num_macs}",
        "-C", "mps3_board.visualisation.disable-visualisation=1",
        "-C", "mps3_board.telnetterminal0.start_telnet=0",
        "-C", "mps3_board.uart0.out_file='-'",
        "-C", "cpu0.semihosting-enable=1",
        "-C", "cpu0.semihosting-stack_base=0",
        "-C", "cpu0.semihosting-heap_limit=0",
        "-C", f"cpu0.semihosting-cwd={cwd}",
        "-C", "ethosu.extra_args='--fast'",
        "-C", f"cpu0.semihosting-cmd_line='{cmd_line}'",
        "-a", str(elf),
        "--timelimit", str(timeout)]
    rc, out, err = run_fvp(*args, prog="fvp.host.dropin", timeout=900)
    return rc, out, err, [m.group(0) for m in RUNNER_UTILS_ERRORS.finditer(out)]


# ------------------------------------------------------------------------------------------ what the ELFs hold
def test_the_elfs_are_real_cross_compiled_runners():
    from elftools.elf.elffile import ELFFile

    for path in (U55_BUNDLED, U55_ETDUMP, U65_SEMIHOSTING, U65_PTE_AT_ADDR, U65_MOBILENET):
        assert path.stat().st_size < 1_500_000, path
        with open(path, "rb") as f:
            elf = ELFFile(f)
            assert elf["e_machine"] == "EM_ARM" and elf["e_type"] == "ET_EXEC"
            assert 0x1000_0000 <= elf["e_entry"] < 0x1008_0000  # Reset_Handler in the ITCM (Corstone-300.ld)
            symtab = elf.get_section_by_name(".symtab")
            names = {s.name for s in symtab.iter_symbols()}
            # the runner, ExecuTorch's runtime and delegate, the Ethos-U core driver, the CMSIS start-up
            for sym in ("main", "ethosu_invoke_v3", "ethosu_init", "Reset_Handler", "__Vectors",
                        "method_allocation_pool", "temp_allocation_pool"):
                assert sym in names, (path.name, sym)
            text = elf.get_section_by_name(".text")
            assert text["sh_type"] == "SHT_PROGBITS" and text["sh_size"] > 50_000
            # the pools live in the NOLOAD output sections (ExecuTorch #21641, #21741): no file bytes
            for sec in (".sram.bss", ".ddr.bss"):
                assert elf.get_section_by_name(sec)["sh_type"] == "SHT_NOBITS", (path.name, sec)


def _pools(path):
    from fvp.host.dropin.elf_image import read_elf

    return read_elf(str(path))


def test_reader_on_the_run_sh_u55_runner():
    img = _pools(U55_BUNDLED)
    assert img.program == (CORPUS / "add_u55-128.bpte").read_bytes()  # baked in by pte_to_header.py
    assert img.program_address == 0x7000_0000  # network_model_sec first in .ddr.rodata
    assert img.runner_layout
    assert set(img.pools) == {"method", "temp"}
    method, temp = img.pools["method"], img.pools["temp"]
    assert method[1] == 60 << 20 and 0x7000_0000 < method[0] < 0xD000_0000  # .ddr.bss
    assert temp == (0x3100_0000, 0x200000)  # Shared_Sram: .bss.tensor_arena first in .sram.bss


def test_reader_on_the_dedicated_sram_runner_with_planned_fast_memory():
    img = _pools(U65_MOBILENET)
    assert img.program == (CORPUS / "mobilenet_v1_025_u65-256.bpte").read_bytes()
    assert set(img.pools) == {"method", "temp", "fast_scratch", "planned_fast"}
    assert img.pools["temp"][1] == 0x4000000 and img.pools["temp"][0] >= 0x7000_0000  # Dedicated_Sram: DDR
    assert img.pools["fast_scratch"][1] == 0x60000 and 0x3100_0000 <= img.pools["fast_scratch"][0] < 0x3120_0000
    assert img.pool_symbols["fast_scratch"] == "dedicated_sram"
    fast = img.pools["planned_fast"]  # .fast_memory, in .sram.bss before .bss.ethosu_scratch
    assert fast[1] == 0x10000 and 0x3100_0000 <= fast[0] < img.pools["fast_scratch"][0]


def test_reader_on_the_semihosting_runner():
    img = _pools(U65_SEMIHOSTING)
    assert img.program is None  # the program comes from the host (-m)
    assert img.pools["method"][1] == 83886080  # setup_testing.sh's -DET_ARM_BAREMETAL_METHOD_ALLOCATOR_POOL_SIZE
    assert img.pools["input_file"][1] == 60 << 20 and img.pools["fast_scratch"][1] == 0x60000


# ------------------------------------------------------------------------------------------ run_fvp.sh
def test_run_fvp_sh_on_the_u55_runner(tmp_path):
    rc, out, err, problems = run_fvp_sh("ethos-u55-128", U55_BUNDLED)
    assert rc == 0 and not problems, (problems, err, out[-3000:])
    assert "TEST: BundleIO index[0] Test_result: PASS" in out
    assert "pools from the ELF: method 62914560 bytes, temp 2097152 bytes" in out
    assert "#[RUN THIS]" not in out  # built without ETDump: run_fvp.sh's inspector step does not run
    assert "Info: /OSCI/SystemC: Simulation stopped by user." in out


def test_run_fvp_sh_trace_file_on_the_u55_runner(tmp_path):
    trace = tmp_path / "pmu_trace.gz"
    rc, out, err, problems = run_fvp_sh("ethos-u55-128", U55_BUNDLED, trace_file=trace)
    assert rc == 0 and not problems, (problems, err)
    doc = json.loads(gzip.decompress(trace.read_bytes()))
    assert doc  # the PMU trace the FVP writes for --pmu-trace (fvp/host/run/pmu_trace.py)


def test_run_fvp_sh_data_on_the_pte_at_address_runner():
    rc, out, err, problems = run_fvp_sh("ethos-u65-256", U65_PTE_AT_ADDR,
                                        data=f"{ELFS / 'add_u65-256_sram_only.pte'}@0x38000000")
    assert rc == 0 and not problems, (problems, err, out[-3000:])
    assert "pools from the ELF: method 62914560 bytes, temp 2097152 bytes" in out
    assert "PTE @ 0x38000000 [----ET12]" in out
    assert "Output[0][0]: (float) 2.000000" in out  # all-ones inputs, x + y


def test_data_over_the_elfs_own_pools_is_refused_in_the_elfs_terms():
    # the ELF's .ddr.bss starts right after its DDR data, so a 350 KiB program at 0x70000000 lands on the method
    # pool: on the FVP the runner would allocate over its own program
    rc, out, err, _ = run_fvp_sh("ethos-u65-256", U65_PTE_AT_ADDR,
                                 data=f"{CORPUS / 'mobilenet_v1_025_u65-256.bpte'}@0x70000000")
    assert rc == 2 and err.count("\n") == 1, err
    assert "the ELF's method_allocation_pool" in err and "overlaps --data mobilenet_v1_025_u65-256.bpte@0x70000000" in err
    assert "corstone-300" not in err and "firmware" not in err


def test_a_dedicated_sram_program_in_a_runner_built_without_fast_scratch():
    # The pools are the ELF's (temp 2 MiB fills the SRAM): the program's compile specs place nothing. The
    # runner's driver gets no fast scratch, so region 2 is address 0: the NPU faults there, as on the FVP, and
    # no board or key the user did not give is named.
    rc, out, err, problems = run_fvp_sh("ethos-u65-256", U65_PTE_AT_ADDR,
                                        data=f"{CORPUS / 'mobilenet_v1_025_u65-256.bpte'}@0x38000000")
    assert rc == 1, err + out[-2000:]
    assert "memory mode Sram_Only, not the program's Dedicated_Sram" in out
    assert "region 2" in out and "NPU fault" in out
    assert problems and any("Ethos-U invocation failed" in p for p in problems)
    for text in ("overflowed", "corstone-300-ethos-u65", "firmware.pools"):
        assert text not in out + err


def test_run_fvp_sh_on_the_dedicated_sram_runner_with_planned_fast_memory():
    rc, out, err, problems = run_fvp_sh("ethos-u65-256", U65_MOBILENET)
    assert rc == 0 and not problems, (problems, err, out[-3000:])
    assert "Test_result: PASS" in out
    assert "Setup planned FAST_MEMORY_REGION pool. Size: 65536 bytes." in out
    assert "fast_scratch 393216 bytes" in out and "planned_fast 65536 bytes" in out


def test_run_fvp_sh_on_the_etdump_runner():
    # run.sh --etdump's runner prints the #[RUN THIS] block; the runner without it does not (tests above)
    assert _pools(U55_ETDUMP).etdump and not _pools(U55_BUNDLED).etdump
    rc, out, err, problems = run_fvp_sh("ethos-u55-128", U55_ETDUMP)
    assert rc == 0 and not problems, (problems, err, out[-3000:])
    assert "Test_result: PASS" in out
    # run_fvp.sh: the lines from "#[RUN THIS]" to "#[END]"; of the line with ">etdump.bin", the text between its
    # first two double quotes, base64-decoded
    block = re.search(r"^#\[RUN THIS\]$(.*?)^#\[END\]$", out, re.M | re.S)
    assert block, out[-3000:]
    line = next(ln for ln in block.group(1).splitlines() if ">etdump.bin" in ln)
    from firmware.executorch.etdump import read_etdump

    et = read_etdump(base64.b64decode(line.split('"')[1]))
    names = {et.RunData(i).Events(j).ProfileEvent().Name().decode()
             for i in range(et.RunDataLength()) for j in range(et.RunData(i).EventsLength())
             if et.RunData(i).Events(j).ProfileEvent() is not None}
    assert {"Method::execute", "DELEGATE_CALL"} <= names


# ------------------------------------------------------------------------------------------ runner_utils.py
def test_runner_utils_command_line_on_the_semihosting_runner(tmp_path):
    (tmp_path / "program.pte").write_bytes((ELFS / "add_u65-256_dedicated_sram_384kb.pte").read_bytes())
    x, y = np.array([0.25], np.float32), np.array([0.5], np.float32)
    rc, out, err, errors = runner_utils("corstone-300-u65", U65_SEMIHOSTING, tmp_path, [x, y])
    assert rc == 0 and not errors, (errors, err, out[-3000:])
    got = np.fromfile(tmp_path / "out-0.bin", np.float32)  # get_output_from_file: <base>-<i>.bin
    assert got.shape == (1,) and abs(got[0] - 0.75) <= 2 / 255, got


def test_runner_utils_with_a_network_read_from_the_host(tmp_path):
    # a 241 KiB program: the runner reads it into its input_file pool; it must not land on the ELF's pools
    (tmp_path / "program.pte").write_bytes((ELFS / "mobilenet_v1_025_u65-256_dedicated_sram_384kb.pte").read_bytes())
    x = np.random.default_rng(0).uniform(-1, 1, (1, 3, 96, 96)).astype(np.float32)
    rc, out, err, errors = runner_utils("corstone-300-u65", U65_SEMIHOSTING, tmp_path, [x])
    assert rc == 0 and not errors, (errors, err, out[-3000:])
    got = np.fromfile(tmp_path / "out-0.bin", np.float32)
    assert got.shape == (2,)
    q = got / np.float32(0.000240071735) + 127  # the output's dequantization (fvp inspect): on its int8 grid
    assert np.allclose(q, np.round(q), atol=1e-3) and (-128 <= q).all() and (q <= 127).all(), got


# ------------------------------------------------------------------------------------------ run_fvp.sh itself
# The unchanged script of ExecuTorch's MAIN_COMMIT (tests/host/test_run_fvp_sh.py: its tree and wrappers; deselected
# without an ExecuTorch git directory or checkout) with the real ELFs.
from test_run_fvp_sh import SCRIPT, et_tree, run_fvp_sh as run_script  # noqa: E402,F401

needs_script = pytest.mark.run_fvp_sh  # deselected without the script (tests/conftest.py)


@needs_script
def test_unchanged_run_fvp_sh_with_the_real_u55_runner(et_tree, tmp_path):
    trace = tmp_path / "trace.gz"
    rc, out = run_script(et_tree, f"--elf={U55_BUNDLED}", "--target=ethos-u55-128", f"--trace_file={trace}",
                         cwd=tmp_path)
    assert rc == 0, out
    assert "TEST: BundleIO index[0] Test_result: PASS" in out and out.rstrip().endswith("No problems found!")
    assert json.loads(gzip.decompress(trace.read_bytes()))


@needs_script
def test_unchanged_run_fvp_sh_with_the_real_u65_runner_and_data(et_tree, tmp_path):
    rc, out = run_script(et_tree, f"--elf={U65_PTE_AT_ADDR}", "--target=ethos-u65-256",
                         f"--data={ELFS / 'add_u65-256_sram_only.pte'}@0x38000000", cwd=tmp_path)
    assert "FVP:FVP_Corstone_SSE-300_Ethos-U65 num_macs:256" in out
    if "its own code on QEMU" in out:  # the runner's own code: its build registered no cortex_m kernels
        assert rc == 1 and "kernel 'cortex_m::quantize_per_tensor.out' not found" in out, out
    else:  # the Python runner stands in for it, with every kernel
        assert rc == 0 and "No problems found!" in out, out
    rc, out = run_script(et_tree, f"--elf={U65_PTE_AT_ADDR}", "--target=ethos-u65-256",
                         f"--data={CORPUS / 'mobilenet_v1_025_u65-256.bpte'}@0x38000000", cwd=tmp_path)
    assert rc == 1 and "Found ERROR" in out, out  # the Dedicated_Sram program faults in this Sram_Only runner
