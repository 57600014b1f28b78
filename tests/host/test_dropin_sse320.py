"""``FVP_Corstone_SSE-320``: the drop-in for Arm's Corstone-320 FVP (Cortex-M85 + Ethos-U85), with the command
lines ExecuTorch's run_fvp.sh and backends/arm/test/runner_utils.py build for it, and tools/run.sh's U85 flow."""

import os
import re
import struct
import subprocess
import sys
import tomllib

import pytest

from test_dropin import make_elf, needs_elf
from testutil import CORPUS, ROOT, remarks, run_fvp

BINARY = "FVP_Corstone_SSE-320"
MODELS = ROOT / "firmware" / "models"
# backends/arm/scripts/run_fvp.sh, the ethos-u85 branch (num_macs is the target's third field)
RUN_FVP_SH = ["-C", "mps4_board.subsystem.ethosu.num_macs={macs}", "-C", "mps4_board.visualisation.disable-visualisation=1",
              "-C", "vis_hdlcd.disable_visualisation=1", "-C", "mps4_board.telnetterminal0.start_telnet=0",
              "-C", "mps4_board.uart0.out_file='-'", "-C", "mps4_board.uart0.unbuffered_output=1",
              "-C", "mps4_board.uart0.shutdown_on_eot=1"]


def sse320(*args, cwd=None):
    return run_fvp("--flavour=u85", *args, cwd=cwd, prog="fvp.host.dropin", timeout=300)


def run_fvp_sh(macs):
    return [a.format(macs=macs) for a in RUN_FVP_SH]


def test_the_binary_name_is_a_console_script():
    """pip install puts FVP_Corstone_SSE-320 on PATH (run_fvp.sh finds it with `hash`): the script is the launcher's
    fvp_sse320, which runs the drop-in as that binary."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts[BINARY] == "fvp.host.launch:fvp_sse320"
    code = ("import sys; sys.argv[0] = '/usr/local/bin/FVP_Corstone_SSE-320'; "
            "from fvp.host.launch import fvp_sse320; sys.exit(fvp_sse320())")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-c", code, "--version"], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert "open Corstone-320 simulator with the FVP_Corstone_SSE-320 command line" in p.stdout
    from fvp.host import launch

    old = sys.argv
    try:
        sys.argv = ["/usr/local/bin/FVP_Corstone_SSE-320"]
        assert launch._is_script(BINARY) and not launch._is_script("FVP_Corstone_SSE-300_Ethos-U55")
    finally:
        sys.argv = old


def test_list_params_and_instances_use_the_mps4_names():
    rc, out, err = sse320("-l")
    assert rc == 0, err
    names = [line.split()[0] for line in out.splitlines()]
    assert "mps4_board.subsystem.ethosu.num_macs" in names and "mps4_board.uart0.shutdown_on_eot" in names
    assert "mps4_board.subsystem.cpu0.semihosting-cmd_line" in names
    assert "default = 256" in out.splitlines()[0] and "128, 256, 512, 1024, 2048" in out.splitlines()[0]
    assert not any(n.startswith(("ethosu.", "cpu0.", "mps3_board.")) for n in names)
    rc, out, err = sse320("--list-instances")
    assert out.split() == ["mps4_board.subsystem.cpu0", "mps4_board.subsystem.ethosu", "mps4_board.uart0",
                           "mps4_board.visualisation", "mps4_board.telnetterminal0"]


@pytest.mark.parametrize("macs", [128, 256, 2048])
def test_run_fvp_sh_command_line_runs_a_u85_program(macs):
    pte = MODELS / f"addint_ethos-u85-{macs}.pte"
    rc, out, err = sse320(*run_fvp_sh(macs), "--data", f"{pte}@0x70000000", "--timelimit", "600")
    assert rc == 0, err + out[-3000:]
    assert not err  # no parameter of run_fvp.sh is unknown
    assert f"Info: FVP_Corstone_SSE-320: Creating Ethos-U85 with config H{macs} (Ethos_U85_SYS_DRAM_Mid, Sram_Only)" \
        in out
    assert "standing in for FVP_Corstone_SSE-320" in out and "Program complete, exiting." in out
    counters = re.findall(r"ethosu_pmu_cntr(\d) : ", out)
    assert counters == [str(i) for i in range(7)]  # ETHOSU85: seven event counters
    assert ("Ethos-U PMU Events:[ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED, ETHOSU_PMU_SRAM_WR_DATA_BEAT_WRITTEN, "
            "ETHOSU_PMU_EXT_RD_DATA_BEAT_RECEIVED, ETHOSU_PMU_EXT_WR_DATA_BEAT_WRITTEN, ETHOSU_PMU_NPU_IDLE, "
            "ETHOSU_PMU_MAC_ACTIVE, ETHOSU_PMU_WD_ACTIVE]") in out
    assert all(f"Output[0][{i}]: (int) 2" in out for i in range(5))


@needs_elf
def test_runner_utils_semihosting_command_line(tmp_path):
    """backends/arm/test/runner_utils.py's corstone-320 command: inputs and outputs through semihosting files
    (mps4_board.subsystem.cpu0.semihosting-*), --fast NPU; a CPU-only program and a delegated one."""
    (tmp_path / "i0.bin").write_bytes(struct.pack("<f", 1.5))  # add_fp_cpu.pte: x + y on float[1]
    (tmp_path / "i1.bin").write_bytes(struct.pack("<f", 2.25))
    (tmp_path / "program.pte").write_bytes((CORPUS / "add_fp_cpu.pte").read_bytes())
    elf = make_elf(tmp_path / "arm_executor_runner")
    args = ["-C", "mps4_board.subsystem.ethosu.num_macs=128", "-C", "mps4_board.visualisation.disable-visualisation=1",
            "-C", "vis_hdlcd.disable_visualisation=1", "-C", "mps4_board.telnetterminal0.start_telnet=0",
            "-C", "mps4_board.uart0.out_file='-'", "-C", "mps4_board.uart0.unbuffered_output=1",
            "-C", "mps4_board.uart0.shutdown_on_eot=1", "-C", "mps4_board.subsystem.cpu0.semihosting-enable=1",
            "-C", "mps4_board.subsystem.cpu0.semihosting-stack_base=0",
            "-C", "mps4_board.subsystem.cpu0.semihosting-heap_limit=0",
            "-C", f"mps4_board.subsystem.cpu0.semihosting-cwd={tmp_path}",
            "-C", "mps4_board.subsystem.ethosu.extra_args='--fast'"]
    cmd = ["-C", "mps4_board.subsystem.cpu0.semihosting-cmd_line='executor_runner -m program.pte -o out -i i0.bin "
                 "-i i1.bin'", "-a", str(elf), "--timelimit", "600"]
    rc, out, err = sse320(*args, *cmd, cwd="/")
    assert rc == 0 and not err, err + out
    assert struct.unpack("<f", (tmp_path / "out-0.bin").read_bytes()) == (3.75,)
    (tmp_path / "program.pte").write_bytes((MODELS / "addint_ethos-u85-128.pte").read_bytes())
    (tmp_path / "i0.bin").write_bytes(struct.pack("<5i", 1, 2, 3, -4, 5))
    rc, out, err = sse320(*args, "-C", "mps4_board.subsystem.cpu0.semihosting-cmd_line='executor_runner -m "
                                       "program.pte -o out -i i0.bin'", "-a", str(elf), cwd="/")
    assert rc == 0 and not err, err + out
    assert struct.unpack("<5i", (tmp_path / "out-0.bin").read_bytes()) == (2, 4, 6, -8, 10)


def test_corstone300_names_warn_and_are_ignored():
    """As the real FVP_Corstone_SSE-320 does with a name it does not have: a warning, and the run goes on."""
    pte = MODELS / "addint_ethos-u85-256.pte"
    rc, out, err = sse320("-q", "--data", f"{pte}@0x70000000", "-C", "ethosu.num_macs=128",
                          "-C", "mps3_board.uart0.out_file=-", "-C", "mps4_board.subsystem.ethosu.bogus=1")
    assert rc == 0, err + out
    warnings = err.strip().splitlines()
    assert len(warnings) == 3 and all(w.startswith("Warning: FVP_Corstone_SSE-320: unknown parameter ")
                                      for w in warnings), err
    assert "'ethosu.num_macs'" in warnings[0] and "'mps4_board.subsystem.ethosu.bogus'" in warnings[2]
    assert "Creating Ethos-U85 with config" not in out and "Program complete, exiting." in out  # -q, still H256
    # and the other way round: the Corstone-320's names on the Corstone-300 binaries
    rc, out, err = run_fvp("-q", "--data", f"{CORPUS / 'add_u55-128.bpte'}@0x70000000",
                           "-C", "mps4_board.subsystem.ethosu.num_macs=256", prog="fvp.host.dropin")
    assert rc == 0 and "Test_result: PASS" in out, err + out
    assert err.startswith("Warning: FVP_Corstone_SSE-300_Ethos-U55: unknown parameter "
                          "'mps4_board.subsystem.ethosu.num_macs'")


def test_a_program_for_the_other_fvp_says_which_binary_runs_it():
    rc, out, err = sse320(*run_fvp_sh(256), "--data", f"{CORPUS / 'addint_u55.pte'}@0x70000000")
    assert rc == 1, err + out
    assert ("compiled for ethos-u55-128; a stream for ethos-u55-128 cannot run on ethos-u85-256 "
            "(mps4_board.subsystem.ethosu.num_macs), the Ethos-U driver refuses it: give -C ethosu.num_macs=128 to "
            "FVP_Corstone_SSE-300_Ethos-U55") in err
    assert "E: NPU config mismatch. npu.product=2, optimizer.product=0" in out
    rc, out, err = run_fvp("-C", "ethosu.num_macs=128", "--data", f"{MODELS / 'addint_ethos-u85-256.pte'}@0x70000000",
                           prog="fvp.host.dropin")
    assert rc == 1, err + out
    assert "give -C mps4_board.subsystem.ethosu.num_macs=256 to FVP_Corstone_SSE-320" in err


def test_fvp_run_target_and_program_pick_the_corstone320():
    rc, out, err = run_fvp("run", MODELS / "addint_ethos-u85-512.pte", "--stat", "-C", "firmware.options.log_outputs=false")
    assert rc == 0, err + out
    assert "--- FVP_Corstone_SSE-320 statistics: " in out and "ethosu_pmu_cntr6 : " in out and not remarks(err)
    rc, out, err = run_fvp("run", MODELS / "addint_ethos-u85-512.pte", "--target", "ethos-u85-128")
    assert rc == 1 and "use --target ethos-u85-512" in err, err
    rc, out, err = run_fvp("run", "--target", "ethos-u85-2048", "-C", "firmware.options.log_outputs=false")
    assert rc == 0 and "Program complete, exiting." in out, err + out


def test_run_sh_target_u85_selects_the_sse320():
    from fvp.host import tutorial
    from fvp.host.programs import et_build

    assert et_build.fvp_binary("ethos-u85-128") == BINARY and et_build.flavour("ethos-u85-128") == "u85"
    assert et_build.default_system_config("ethos-u85-512") == "Ethos_U85_SYS_DRAM_Mid"
    assert et_build.default_memory_mode("ethos-u85-512") == "Dedicated_Sram_384KB"  # run.sh's default
    run = tutorial.Run(tutorial.build_parser("run.sh").parse_args(
        ["--pte", str(MODELS / "addint_ethos-u85-128.pte"), "--target=ethos-u85-128"]), "run.sh")
    run.resolve()
    assert run.get_program() == 0
    shown, cmd = run.fvp_command()
    assert shown[0] == BINARY and cmd[:4] == [sys.executable, "-m", "fvp.host.dropin", "--flavour=u85"]
    params = [shown[i + 1] for i, a in enumerate(shown) if a == "-C"]
    assert params[:7] == [a.format(macs=128).strip("'") if "out_file" not in a else "mps4_board.uart0.out_file=-"
                          for a in RUN_FVP_SH[1::2]]
    assert "npu.memory_mode=Sram_Only" in params  # what the program was compiled for


def test_run_sh_flow_on_the_sse320(tmp_path):
    pte = tmp_path / "addint.pte"
    pte.write_bytes((MODELS / "addint_ethos-u85-256.pte").read_bytes())
    p = subprocess.run(["bash", str(ROOT / "tools" / "run.sh"), "--pte", str(pte), "--target=ethos-u85-256"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=600,
                       env=dict(os.environ, PYTHON=sys.executable))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr
    assert f"for ethos-u85-256 run with FVP:{BINARY} num_macs:256 timeout:600" in p.stdout
    assert f"CALL {BINARY} -C mps4_board.subsystem.ethosu.num_macs=256" in p.stdout
    assert p.stdout.rstrip().endswith("No problems found!")
