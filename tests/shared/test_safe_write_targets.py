"""Issue 27, items 2 and 6: an output that exists and is not a regular file is written in place, never replaced
(a device, a FIFO), a loop of links is ELOOP, a link to a file keeps the link; a write that fails is exit 1
with the errno's reason at every place a command line names an output file."""

import errno
import os
import socket
import stat
import threading

import pytest

from fvp import safe_write
from fvp.host.cli import main as cli_main
from fvp.host.dropin import command as dropin
from testutil import CORPUS

ADD_Q = CORPUS / "add_q.pte"
BPTE = CORPUS / "add_u55-128.bpte"


def _device(tmp_path, name, minor):
    """A character device node like /dev/null (1, 3) or /dev/full (1, 7) in ``tmp_path`` (never the machine's
    own: a regression would replace it), or the machine's when nodes cannot be made here (not root)."""
    path = tmp_path / name
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    except (PermissionError, OSError):
        if os.geteuid() == 0:
            pytest.skip("cannot make a device node here")
        return f"/dev/{name}"  # safe: a user cannot replace it
    return str(path)


class _Reader:
    """A FIFO at ``path`` with a thread that reads it whole."""

    def __init__(self, path):
        os.mkfifo(path)
        self.path, self.data = path, None
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        with open(self.path, "rb") as f:
            self.data = f.read()

    def join(self):
        self.thread.join(30)
        return self.data


def _is_char_device(path):
    return stat.S_ISCHR(os.lstat(path).st_mode)


# ------------------------------------------------------------------------------------- the helper
def test_devices_are_written_in_place(tmp_path):
    null, full = _device(tmp_path, "null", 3), _device(tmp_path, "full", 7)
    assert safe_write.check_writable(null).ok and safe_write.write_file(null, b"x" * 100).ok
    assert _is_char_device(null)
    res = safe_write.write_file(full, b"x" * 100)
    assert (res.ok, res.opened, res.errno) == (False, True, errno.ENOSPC) and _is_char_device(full)
    assert isinstance(res.error("-o x: cannot write"), safe_write.OutputLost)
    assert sorted(os.listdir(tmp_path)) == ["full", "null"] or not os.geteuid()  # no temporary file left


def test_a_fifo_is_written_to_its_reader(tmp_path):
    fifo = tmp_path / "fifo"
    reader = _Reader(fifo)
    assert safe_write.write_file(str(fifo), b"through the pipe").ok
    assert reader.join() == b"through the pipe" and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_loop_of_links_is_eloop_and_kept(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    os.symlink(b, a)
    os.symlink(a, b)
    for res in (safe_write.check_writable(str(a)), safe_write.write_file(str(a), b"x")):
        assert res.errno == errno.ELOOP and not res.opened
    assert os.path.islink(a) and os.path.islink(b)
    assert isinstance(res.error("x"), safe_write.ConfigError) and not isinstance(res.error("x"),
                                                                               safe_write.OutputLost)


def test_a_link_to_a_file_is_kept_and_its_file_replaced_whole(tmp_path):
    real, link = tmp_path / "real", tmp_path / "link"
    real.write_bytes(b"old")
    os.chmod(real, 0o640)
    os.symlink(real, link)
    assert safe_write.write_file(str(link), b"new").ok
    assert os.path.islink(link) and real.read_bytes() == b"new" and stat.S_IMODE(real.stat().st_mode) == 0o640
    dangling = tmp_path / "dangling"
    os.symlink(tmp_path / "made", dangling)  # as fopen: the file the link names is created
    assert safe_write.write_file(str(dangling), b"x").ok and (tmp_path / "made").read_bytes() == b"x"


def test_a_socket_and_a_nul_byte_are_refused(tmp_path):
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "sock"))
        res = safe_write.write_file(str(tmp_path / "sock"), b"x")
        assert res.errno == errno.EINVAL and "a socket" in res.strerror
        assert stat.S_ISSOCK(os.lstat(tmp_path / "sock").st_mode)
    finally:
        sock.close()
    res = safe_write.write_file(str(tmp_path / "a\0b"), b"x")
    assert res.errno == errno.EINVAL and "NUL byte" in res.strerror


# ------------------------------------------------------------------------------------- every output place
def _places(target, tmp_path):
    """(entry, argv) of each output a command line names; ``target`` is the file it writes (an ``-o`` basename's
    first output is ``target``, through a link)."""
    base = tmp_path / "out"
    if not str(target).endswith("-0.bin"):
        link = tmp_path / "out-0.bin"
        if not os.path.lexists(link):
            os.symlink(target, link)
    for i in (0, 1):  # the semihosting runner reads one file per input (add_q: two 4-byte floats)
        (tmp_path / f"in{i}.bin").write_bytes(bytes(4))
    return {
        "trace": (cli_main, ["run", BPTE, "--trace", target]),
        "etdump": (cli_main, ["run", ADD_Q, "--etdump", target]),
        "run -o": (cli_main, ["run", ADD_Q, "-o", base]),
        "elf -o": (cli_main, ["elf", ADD_Q, "-o", target]),
        "compare --json": (cli_main, ["compare", BPTE, "-c", "default", "--json", target]),
        "compare --csv": (cli_main, ["compare", BPTE, "-c", "default", "--csv", target]),
        "dropin --pmu-trace": (dropin.main, ["--data", f"{BPTE}@0x70000000", "-C",
                                             f"ethosu.extra_args=--pmu-trace {target}"]),
        "semihosting -o": (dropin.main, ["-C", f"cpu0.semihosting-cmd_line=executor_runner -m {ADD_Q} -i {tmp_path / 'in0.bin'} "
                                                  f"-i {tmp_path / 'in1.bin'} -o {base}"]),
    }


PLACES = ["trace", "etdump", "run -o", "elf -o", "compare --json", "compare --csv", "dropin --pmu-trace",
          "semihosting -o"]


@pytest.mark.parametrize("place", PLACES)
def test_a_full_device_is_exit_1_with_the_reason_and_stays_a_device(place, tmp_path, capsys):
    full = _device(tmp_path, "full", 7)
    entry, argv = _places(full, tmp_path)[place]
    rc = entry([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert rc == 1, out[-500:] + err
    assert "No space left on device" in out + err and "Traceback" not in out + err
    assert "internal error" not in err
    assert len([line for line in err.splitlines() if ": error: " in line]) <= 1
    assert _is_char_device(full)


def test_outputs_into_a_fifo_and_a_null_device(tmp_path, capsys):
    reader = _Reader(tmp_path / "fifo")
    assert cli_main(["run", str(BPTE), "--trace", str(tmp_path / "fifo")]) == 0
    assert reader.join().startswith(b"{") and stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)
    null = _device(tmp_path, "null", 3)
    assert cli_main(["elf", str(ADD_Q), "-o", null]) == 0 and _is_char_device(null)
    capsys.readouterr()


def test_an_output_through_a_loop_is_refused_before_the_run(tmp_path, capsys):
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    for argv in (["run", str(BPTE), "--trace", str(tmp_path / "a")],
                 ["compare", str(BPTE), "-c", "default", "--json", str(tmp_path / "a")]):
        assert cli_main(argv) == 2
        out, err = capsys.readouterr()
        assert "Too many levels of symbolic links" in err and "Program complete" not in out
    assert os.path.islink(tmp_path / "a")
