"""ExecuTorch main's semihosting server mode through the drop-in, with the real semihosting runner ELF.

The runner (``arm_executor_runner.cpp`` at ExecuTorch cff6f4dd, ``--server_mode true``) reads a line from the
semihosting terminal (``fgets`` into 16 bytes) for every inference: it reads its ``-i`` files again, runs one
inference between StartMeasurements and StopMeasurements(1) (the PMU block), writes ``<-o>-<i>.bin`` and logs
``SERVER_INFERENCE_DONE <n>``; at the end of the input it ends as after its normal run. ExecuTorch's session
tooling (``examples/arm/smollm2_example_ethos_u/generate_sampled.py``, ``FvpRunnerSession``) starts the FVP with
the input files in a work folder, writes ``go`` and a newline to its stdin, reads its stdout line by line
(``select`` with a timeout, then ``readline``) until ``SERVER_INFERENCE_DONE`` and reads ``out-0.bin``: the
interactive test below follows those steps (written here as facts, not copied code).
"""

import importlib.util
import os
import select
import subprocess
import sys
import time

import numpy as np
import pytest

from testutil import DATA, ROOT

pytestmark = pytest.mark.skipif(importlib.util.find_spec("elftools") is None,
                                reason="pyelftools is not installed (pip install '.[elf]')")

ELF = DATA / "runner_elf" / "u65-256_semihosting.elf"
PROGRAM = DATA / "runner_elf" / "add_u65-256_dedicated_sram_384kb.pte"  # x + y on float[1]


def command(cwd, cmd_line, *extra, engine="python"):
    """The tooling's FVP parameters, as the Corstone-300 U65 binary spells them; ``engine``: the Python runner in
    the ELF's place, or the ELF's own code on QEMU (docs/full-system.md)."""
    return [sys.executable, "-m", "fvp.host.dropin", "--flavour=u65", "-C", f"cpu0.engine={engine}",
            "-C", "ethosu.num_macs=256", "-C", "mps3_board.visualisation.disable-visualisation=1",
            "-C", "mps3_board.telnetterminal0.start_telnet=0", "-C", "mps3_board.uart0.out_file='-'",
            "-C", "mps3_board.uart0.unbuffered_output=1", "-C", "mps3_board.uart0.shutdown_on_eot=1",
            "-C", "cpu0.semihosting-enable=1", "-C", "cpu0.semihosting-stack_base=0",
            "-C", "cpu0.semihosting-heap_limit=0", "-C", f"cpu0.semihosting-cwd={cwd}",
            "-C", "ethosu.extra_args='--fast'", "-C", f"cpu0.semihosting-cmd_line='{cmd_line}'",
            "-a", str(ELF), "--timelimit", "120", *extra]


def env():
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


SERVER = "executor_runner -m program.pte -o out -i i0.bin -i i1.bin --server_mode true"


@pytest.fixture
def work(tmp_path):
    (tmp_path / "program.pte").write_bytes(PROGRAM.read_bytes())
    np.float32([0.25]).tofile(tmp_path / "i0.bin")
    np.float32([0.5]).tofile(tmp_path / "i1.bin")
    return tmp_path


def messages(out: str) -> list:
    return [ln.split("] ", 1)[1] for ln in out.splitlines() if ln.startswith(("I [", "E [", "F ["))]


@pytest.mark.parametrize("engine", ["python", pytest.param("qemu", marks=pytest.mark.qemu)])
def test_one_inference_per_line_read_then_the_normal_end(work, engine):
    # fgets into 16 bytes: a line of 20 characters is read in two parts, each one more inference (on QEMU the
    # runner's own fgets reads the terminal through semihosting)
    p = subprocess.run(command(work, SERVER, engine=engine), input=b"go\n" + b"x" * 20 + b"\n", capture_output=True, env=env(),
                       cwd=ROOT, timeout=300)
    out = p.stdout.decode()
    assert p.returncode == 0, p.stderr.decode() + out
    msgs = messages(out)
    assert "Running in semihosting server mode." in msgs
    assert [m for m in msgs if m.startswith("SERVER_INFERENCE_DONE")] == [f"SERVER_INFERENCE_DONE {n}" for n in range(3)]
    assert msgs.count("NPU Inferences : 1") == 3 and msgs.count("Writing output to file: out-0.bin") == 3
    tail = msgs[msgs.index("SERVER_INFERENCE_DONE 2") + 1:]
    assert tail[:2] == ["Model run: 1", "Model run: 1"] and tail[-1] == "Program complete, exiting."
    assert "Starting running" not in out and "inferences finished" not in out and "\x04" not in out
    assert abs(float(np.fromfile(work / "out-0.bin", np.float32)[0]) - 0.75) < 2 / 255


@pytest.mark.parametrize("engine", ["python", pytest.param("qemu", marks=pytest.mark.qemu)])
def test_the_session_tooling_protocol_rewrites_inputs_between_requests(work, engine):
    p = subprocess.Popen(command(work, SERVER, engine=engine), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, bufsize=1, env=env(), cwd=ROOT)
    try:
        got = []
        for x in (0.125, 0.25, 0.375):
            np.float32([x]).tofile(work / "i0.bin")
            (work / "out-0.bin").unlink(missing_ok=True)
            p.stdin.write("go\n")
            p.stdin.flush()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                ready, _, _ = select.select([p.stdout], [], [], 1.0)
                if not ready:
                    assert p.poll() is None, "the drop-in ended"
                    continue
                line = p.stdout.readline()
                assert line, "stdout closed"
                if "SERVER_INFERENCE_DONE" in line:
                    break
            else:
                pytest.fail("no SERVER_INFERENCE_DONE")
            got.append(float(np.fromfile(work / "out-0.bin", np.float32)[0]))
        p.stdin.close()
        rest = p.stdout.read()
        assert p.wait(timeout=60) == 0 and "Program complete, exiting." in rest
    finally:
        if p.poll() is None:
            p.kill()
    assert np.allclose(got, [0.625, 0.75, 0.875], atol=2 / 255), got


def test_bad_values_and_a_lost_input_file(work):
    p = subprocess.run(command(work, SERVER.replace("true", "maybe")), input=b"", capture_output=True, env=env(),
                       cwd=ROOT, timeout=300)
    assert p.returncode == 1 and "F [" in p.stdout.decode() and "Invalid --server_mode value: maybe" in p.stdout.decode()
    # the second request finds input 2 gone: the runner's check fails and the run aborts
    proc = subprocess.Popen(command(work, SERVER), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env(), cwd=ROOT)
    proc.stdin.write(b"go\n")
    proc.stdin.flush()
    while b"SERVER_INFERENCE_DONE 0" not in proc.stdout.readline():
        pass
    os.unlink(work / "i1.bin")
    out, err = proc.communicate(b"go\n", timeout=300)
    text = out.decode()
    assert proc.returncode == 1, text
    assert "Reading input tensor 2 from file i1.bin failed." in text and "Could not reload inputs: 0x" in text
    assert "SERVER_INFERENCE_DONE 1" not in text
