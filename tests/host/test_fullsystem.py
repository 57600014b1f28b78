"""Full-system mode: an application ELF's own code on QEMU with this project's Ethos-U (docs/full-system.md).

The real ExecuTorch runners (tests/data/runner_elf) through the command lines run_fvp.sh and runner_utils.py build,
unchanged (no -C cpu0.engine: an ELF with code runs on QEMU when it is installed); the project's own test firmware
(tests/data/fullsystem: a Vela job through its own Ethos-U register sequence, cycle counters, faults, a lock-up,
endless loops, exit codes); refusals; QEMU's lifetime. Without QEMU these tests are skipped and the session
summary says so in a line of its own; with FVP_REQUIRE_QEMU=1 (CI) they fail instead.
"""

import contextlib
import os
import re
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

from testutil import DATA, ROOT, run_fvp
from test_runner_elf import (ELFS, U55_BUNDLED, U55_ETDUMP, U65_MOBILENET, U65_PTE_AT_ADDR, U65_SEMIHOSTING,
                             run_fvp_sh, runner_utils)

OWN = DATA / "fullsystem" / "fullsystem_test.elf"
pytestmark = pytest.mark.qemu  # tests/conftest.py: skipped (and said so) without QEMU, failed with FVP_REQUIRE_QEMU=1
TRAILER = re.compile(r"^\[warning \]\[main@0\]\[(\d+) ns\] Simulation stopped by user$", re.M)


def dropin(*args, env=None, cwd=None):
    return run_fvp(*args, prog="fvp.host.dropin", env_extra=env, cwd=cwd)


def uart_lines(out: str) -> list:
    return [ln for ln in out.splitlines() if not ln.startswith("Info: fvp") and not ln.startswith("Info: FVP_")
            and not ln.startswith("Info: application")]


# ------------------------------------------------------------------------------------------ the project's firmware
@pytest.fixture(scope="module")
def own_npu(tmp_path_factory):
    """``fvp run fullsystem_test.elf -- npu -o out.bin`` and the drop-in with the same semihosting command line."""
    d, d2 = tmp_path_factory.mktemp("own"), tmp_path_factory.mktemp("own")
    run = run_fvp("run", OWN, "--", "npu", "-o", "out.bin", cwd=d)
    out_run = (d / "out.bin").read_bytes()
    # the same command line (argv[0] as fvp run gives it: the ELF's name), so the same instructions
    drop = dropin("-C", f"cpu0.semihosting-cwd={d2}", "-C", "cpu0.semihosting-cmd_line=fullsystem_test.elf npu -o out.bin",
                  "-a", OWN, cwd=d2)
    return run, drop, out_run, d2


def test_own_firmware_runs_its_vela_job_through_its_own_register_sequence(own_npu):
    (rc, out, err), _, out_bin, _ = own_npu
    assert rc == 0, err + out
    assert "fullsystem_test: output 2 4 6 8 10" in out  # addint_u55.pte's x + x on 1..5, by the board's Ethos-U
    assert np.frombuffer(out_bin, "<i4").tolist() == [2, 4, 6, 8, 10]  # written through semihosting
    assert "fullsystem_test: semihosting console" in out and "fullsystem_test: PASS" in out
    m = re.search(r"NPU cycles (\d+), CPU cycles DWT (\d+) PMU (\d+)", out)
    npu, dwt, pmu = map(int, m.groups())
    assert npu > 0 and dwt > 0 and pmu > 0 and abs(dwt - pmu) < 16  # both counters count CPU cycles
    assert "Info: /OSCI/SystemC: Simulation stopped by user." in out and TRAILER.search(out)


def test_the_same_firmware_the_same_log_and_time(own_npu):
    (rc1, out1, _), (rc2, out2, err2), out_bin, d = own_npu
    assert rc1 == rc2 == 0, err2
    assert "its own code on QEMU" in out2  # the drop-in says what runs
    assert uart_lines(out1) == uart_lines(out2)  # the same instructions, the same cycles, the same trailer
    assert (d / "out.bin").read_bytes() == out_bin


@pytest.mark.parametrize("scenario,status,expect", [
    ("hardfault", 1, r"Hard fault: HardFault \(FORCED, PRECISERR\), CFSR 0x00008200, HFSR 0x40000000, "
                     r"BFAR 0x4f000000, at PC 0x[0-9a-f]{8}"),
    ("lockup", 1, r"Hard fault: Lockup: can't escalate 3 to HardFault .*\nInfo: Simulation is stopping. Reason: "
                  r"the CPU locked up at \d+ ns."),
    ("wfi", 1, r"Reason: the CPU waits for an interrupt \(WFI at 0x[0-9a-f]{8}\) but no device has an event pending"),
    ("exit 7", 1, r"Reason: the application exited with status 7."),
])
def test_faults_lockups_deadlocks_and_exit_codes(tmp_path, scenario, status, expect):
    # the end is found from the CPU's state, not a clock; --timelimit only guards the test against a hang
    rc, out, err = run_fvp("run", OWN, "--timelimit", "600", "--", *scenario.split(), cwd=tmp_path)
    assert rc == status and re.search(expect, out), err + out
    if scenario == "hardfault":
        assert "fullsystem_test: HardFault handler, CFSR 0x00008200" in out  # the firmware's own handler ran


def test_fvp_exit_status_convention_gives_the_applications_status(tmp_path):
    (tmp_path / ":semihosting-features").write_bytes(b"SHFB\x01")
    rc, out, err = dropin("-C", f"cpu0.semihosting-cwd={tmp_path}", "-C", "cpu0.semihosting-cmd_line=t exit 7",
                          "-a", OWN, env={"FVP_EXIT_STATUS": "fvp"}, cwd=tmp_path)
    assert rc == 7 and "exited with status 7" in err, err


def test_a_never_ending_firmware_stops_at_the_time_limit(tmp_path):
    rc, out, err = run_fvp("run", OWN, "--timelimit", "0.5", "--", "loop", cwd=tmp_path)
    assert rc == 3 and "Reason: CPU time has been exceeded." in out, err + out  # the limit, not the loop, ended it


# ------------------------------------------------------------------------------------------ ExecuTorch's runners
def test_run_fvp_sh_runs_the_real_u55_runners_code():
    rc, out, err, problems = run_fvp_sh("ethos-u55-128", U55_BUNDLED, engine=None)
    assert rc == 0 and not problems, (problems, err, out[-3000:])
    assert "u55-128_add_bundled.elf, its own code on QEMU" in out
    # the runner's own log: ET_LOG names its C++ sources; the NPU's cycles are the Python runner's
    assert "I [executorch:arm_executor_runner.cpp:" in out and "arm_perf_monitor.cpp" in out
    assert "TEST: BundleIO index[0] Test_result: PASS" in out
    assert "ethosu_pmu_cycle_cntr : 957 (957.00 per inference)" in out  # the Python runner's, as in the README's log
    assert int(TRAILER.search(out).group(1)) > 1_000_000  # 0.34 M instructions at the FVP's CPI of 1, 32 MHz


def test_run_fvp_sh_with_data_in_the_qspi_rom():
    # the program reaches the runner through QEMU's QSPI ROM; this runner's build registered no cortex_m kernels, so
    # the real runner refuses the program (the Python runner, which has every kernel, runs it: docs/full-system.md)
    rc, out, err, problems = run_fvp_sh("ethos-u65-256", U65_PTE_AT_ADDR, engine=None,
                                        data=f"{ELFS / 'add_u65-256_sram_only.pte'}@0x38000000")
    assert "PTE @ 0x38000000 [----ET12]" in out, err + out[-3000:]
    assert "kernel 'cortex_m::quantize_per_tensor.out' not found" in out
    assert rc == 1 and any(p.startswith("F [executorch:") for p in problems) and "Hard fault: " in out


def test_run_fvp_sh_on_the_dedicated_sram_runner():
    rc, out, err, problems = run_fvp_sh("ethos-u65-256", U65_MOBILENET, engine=None)
    assert rc == 0 and not problems, (problems, err, out[-3000:])
    assert "Test_result: PASS" in out and "max_absolute_error:  0.000000" in out
    assert "ethosu_pmu_cycle_cntr : 320867 (320867.00 per inference)" in out  # the Python runner's figure


def test_the_etdump_runner_prints_its_own_block():
    rc, out, err, problems = run_fvp_sh("ethos-u55-128", U55_ETDUMP, engine=None)
    assert rc == 0 and not problems, (problems, err, out[-3000:])
    block = re.search(r"^#\[RUN THIS\]$(.*?)^#\[END\]$", out, re.M | re.S)
    assert block and ">etdump.bin" in block.group(1)


def test_runner_utils_semihosting_runner_writes_its_outputs(tmp_path):
    (tmp_path / "program.pte").write_bytes((ELFS / "add_u65-256_dedicated_sram_384kb.pte").read_bytes())
    x, y = np.array([0.25], np.float32), np.array([0.5], np.float32)
    rc, out, err, errors = runner_utils("corstone-300-u65", U65_SEMIHOSTING, tmp_path, [x, y], engine=None)
    assert rc == 0 and not errors, (errors, err, out[-3000:])
    assert "Reading pte model from file program.pte" in out  # the runner's own semihosting reads
    got = np.fromfile(tmp_path / "out-0.bin", np.float32)
    assert got.tolist() == [np.float32(0.75294125)]  # bit-exact with the Python runner (0.752941)


def test_runner_utils_mobilenet_matches_the_python_runner_bit_for_bit(tmp_path):
    (tmp_path / "program.pte").write_bytes((ELFS / "mobilenet_v1_025_u65-256_dedicated_sram_384kb.pte").read_bytes())
    x = np.random.default_rng(0).uniform(-1, 1, (1, 3, 96, 96)).astype(np.float32)
    rc, out, err, errors = runner_utils("corstone-300-u65", U65_SEMIHOSTING, tmp_path, [x], engine=None)
    assert rc == 0 and not errors, (errors, err, out[-3000:])
    qemu = (tmp_path / "out-0.bin").read_bytes()
    rc, out, err, errors = runner_utils("corstone-300-u65", U65_SEMIHOSTING, tmp_path, [x], engine="python")
    assert rc == 0 and (tmp_path / "out-0.bin").read_bytes() == qemu


# ------------------------------------------------------------------------------------------ refusals
def test_bad_applications_are_one_line_exit_2(tmp_path):
    small = ["-C", "memory.DTCM.size=32KiB", "-C", "firmware.memory.DTCM.size=32KiB"]
    for args, message in (
            (["-a", sys.executable], "not a 32-bit little-endian Arm ELF"),
            (small + ["-a", U55_BUNDLED], "section .bss at 0x30008720..0x3000e6cb is in QEMU's mps3-an547 memory "
                                          "but not in the board's"),
            (["-C", "cpu0.engine=qemu", "-a", OWN], None)):
        rc, out, err = dropin(*args, env={"FVP_QEMU": "/nonexistent/qemu"} if message is None else None)
        lines = err.splitlines()  # one line per problem, each a whole sentence
        assert rc == 2 and lines and all(ln.startswith("FVP_Corstone_SSE-300_Ethos-U55: error: ") for ln in lines)
        assert (message or "QEMU is not installed") in err, err
        if message is None:
            assert len(lines) == 1 and "apt-get install qemu-system-arm" in lines[0] and "brew install qemu" in lines[0]


def _fake_qemu(tmp_path, body: str):
    path = tmp_path / "qemu-system-arm"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_without_qemu_an_elf_with_code_runs_the_python_runner_with_a_note(tmp_path):
    rc, out, err = dropin("-C", "ethosu.num_macs=128", "-a", U55_BUNDLED,
                          env={"FVP_QEMU": str(tmp_path / "none")})
    assert rc == 0 and "Test_result: PASS" in out and "perf_monitor.py" in out  # the Python runner's log
    notes = [ln for ln in err.splitlines() if ln.startswith("fvp: note:")]
    assert len(notes) == 1 and "holds Cortex-M55 code that was not executed" in notes[0]
    assert "apt-get install qemu-system-arm" in notes[0]


def test_a_qemu_too_old_or_failing_is_one_line(tmp_path):
    old = _fake_qemu(tmp_path, 'echo "QEMU emulator version 6.2.0"\n')
    rc, out, err = run_fvp("run", OWN, env_extra={"FVP_QEMU": old})
    assert rc == 2 and "QEMU 6.2.0, too old" in err and err.count("\n") == 1, err
    (tmp_path / "b").mkdir()
    broken = _fake_qemu(tmp_path / "b", 'case "$1" in --version) echo "QEMU emulator version 7.2.0";; '
                                        '*) echo "qemu-system-arm: cannot do that" >&2; exit 1;; esac\n')
    rc, out, err = run_fvp("run", OWN, "--timelimit", "600", env_extra={"FVP_QEMU": broken})  # a hang guard only
    assert rc == 1 and "QEMU did not start" in out + err and "cannot do that" in out + err, out + err
    (tmp_path / "h").mkdir()  # a QEMU that starts and never answers: the wait ends (here at --timelimit)
    hangs = _fake_qemu(tmp_path / "h", 'case "$1" in --version) echo "QEMU emulator version 7.2.0";; '
                                       '*) exec sleep 600;; esac\n')
    rc, out, err = run_fvp("run", OWN, "--timelimit", "2", env_extra={"FVP_QEMU": hangs})
    assert rc == 1 and "QEMU did not start: the GDB stub did not answer within" in out + err, out + err


# ------------------------------------------------------------------------------------------ lifetime
def _children(pid: int) -> list:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            return f.read()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    """A process that runs (a zombie the container's init never reaps has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (0 once it is gone), from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def _looping_fvp(tmp_path):
    """``fvp run fullsystem_test.elf -- loop`` (it never ends) and its QEMU's pid once QEMU runs; a failed test
    leaves no never-ending firmware behind."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, "-m", "fvp", "run", str(OWN), "--", "loop"], cwd=tmp_path, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120  # a loaded machine starts Python and QEMU slowly
        qemu = []
        while not qemu and time.monotonic() < deadline:
            time.sleep(0.05)
            qemu = [c for c in _children(p.pid) if "mps3-an547" in _cmdline(c)]  # not its `--version` check
        assert qemu, "QEMU did not start"
        while _cpu_seconds(qemu[0]) < 1.0 and time.monotonic() < deadline:  # past start-up and loading: the
            time.sleep(0.05)                                                 # firmware's loop burns the CPU
        yield p, qemu[0]
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", ["SIGINT", "SIGKILL"])
def test_no_qemu_outlives_fvp(tmp_path, how):
    with _looping_fvp(tmp_path) as (p, qemu):
        p.send_signal(getattr(signal, how))
        _, err = p.communicate(timeout=60)
    if how == "SIGINT":
        assert p.returncode == 130 and b"interrupted" in err
    deadline = time.monotonic() + 10
    while _alive(qemu) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(qemu)
    assert not [f for f in os.listdir("/dev/shm") if f.startswith("fvp")] if os.path.isdir("/dev/shm") else True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_qemu_dying_during_the_run_is_one_line_exit_1(tmp_path):
    with _looping_fvp(tmp_path) as (p, qemu):
        os.kill(qemu, signal.SIGKILL)
        out, err = p.communicate(timeout=60)
    assert p.returncode == 1, err
    assert b"[critical] QEMU exited unexpectedly (status -9)" in out
    assert err.decode().strip().splitlines()[-1].startswith("fvp: error: QEMU exited unexpectedly (status -9)")
