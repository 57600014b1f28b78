"""``FVP_EXIT_STATUS=fvp``: the drop-in exits as Arm's FVP does, for scripts that expect its statuses.

The simulator's own statuses (0 ok, 1 the program failed, 2 bad usage, 3 a limit) are the default; with the
variable every run carried to its end exits 0, except an application leaving through semihosting
SYS_EXIT_EXTENDED (newlib's ``_exit`` with a ``:semihosting-features`` file in the semihosting cwd), whose own
status the FVP returns. Bad usage stays 2. The reason is still printed on stderr.
"""

import pytest

from testutil import CORPUS, run_fvp
from test_dropin import make_elf, needs_elf

FVP = {"FVP_EXIT_STATUS": "fvp"}


def dropin(*args, env=None, cwd=None):
    return run_fvp(*args, prog="fvp.host.dropin", env_extra=env, cwd=cwd)


def semihosting_without_output(tmp_path, env=None):
    """The main runner's semihosting build without -o: ``Missing required -o output_basename``, then exit(1)."""
    (tmp_path / "m.pte").write_bytes((CORPUS / "add_q.pte").read_bytes())
    for i in (0, 1):
        (tmp_path / f"i{i}.bin").write_bytes(bytes(4))
    return dropin("-C", "firmware.runtime=executorch-main-cff6f4dd", "-C", "mps3_board.uart0.out_file=-",
                  "-C", f"cpu0.semihosting-cwd={tmp_path}",
                  "-C", "cpu0.semihosting-cmd_line=executor_runner -m m.pte -i i0.bin -i i1.bin",
                  "-a", make_elf(tmp_path / "semi.elf"), env=env, cwd=tmp_path)


@needs_elf
def test_application_exit_status_is_lost_without_exit_extended(tmp_path):
    rc, out, err = semihosting_without_output(tmp_path)
    assert rc == 1 and "Missing required -o output_basename" in out
    rc, out, err = semihosting_without_output(tmp_path, FVP)
    assert rc == 0, err + out  # SYS_EXIT carries no status: the FVP exits 0
    assert "the application exited with status 1" in err and "exit status 0 as Arm's FVP" in err


@needs_elf
@pytest.mark.parametrize("features, status", [(b"SHFB\x01", 1), (b"SHFB\x00", 0), (b"SHFX\x01", 0)])
def test_exit_extended_gives_the_application_status(tmp_path, features, status):
    (tmp_path / ":semihosting-features").write_bytes(features)
    rc, out, err = semihosting_without_output(tmp_path, FVP)
    assert rc == status, err + out


def test_limit_and_abort_exit_zero_usage_stays_two(tmp_path):
    rc, out, err = dropin("--data", f"{CORPUS / 'add_q.pte'}@0x70000000", "--cyclelimit", "2000")
    assert rc == 3
    rc, out, err = dropin("--data", f"{CORPUS / 'add_q.pte'}@0x70000000", "--cyclelimit", "2000", env=FVP)
    assert rc == 0 and "Cycle limit has been exceeded" in out and "exit status 0 as Arm's FVP" in err
    # a temp pool too small for the scratch: the runner aborts (1), the FVP would show it in the log only (0)
    args = ("--data", f"{CORPUS / 'add_q.pte'}@0x70000000", "-C", "firmware.pools.temp.size=16")
    assert dropin(*args)[0] == 1
    rc, out, err = dropin(*args, env=FVP)
    assert rc == 0 and err.strip()
    rc, out, err = dropin("--data", "nosuch.pte@0x70000000", env=FVP)
    assert rc == 2 and err.count("\n") == 1
    rc, out, err = dropin("--version", env={"FVP_EXIT_STATUS": "arm"})
    assert rc == 2 and "FVP_EXIT_STATUS=arm" in err


def test_success_is_zero_either_way():
    for env in (None, FVP):
        rc, out, err = dropin("--data", f"{CORPUS / 'add_q.pte'}@0x70000000", env=env)
        assert rc == 0 and err == "", err
