"""Issue 16 item 5: a failed output or trace write is exit status 1 with the real reason, and never destroys
what the user had (files are written to a temporary file and renamed into place when complete)."""

import errno
import io
import os
import shutil

import pytest

from fvp import safe_write
from fvp.host.cli import main as cli_main
from testutil import CORPUS, run_fvp

MODEL = CORPUS / "add_q.pte"


def _no_temp_files(directory):
    return [p for p in os.listdir(directory) if p.endswith(".tmp")] == []


def _full_disk(monkeypatch, after=0):
    """os.write fails with ENOSPC once ``after`` bytes are written (for safe_write only)."""
    real = os.write
    state = {"n": 0}

    def write(fd, data):
        room = after - state["n"]
        if room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = real(fd, bytes(data)[:room])
        state["n"] += n
        return n

    monkeypatch.setattr(safe_write.os, "write", write)


# ------------------------------------------------------------------------------------- the helper
def test_write_file_replaces_only_when_complete(tmp_path, monkeypatch):
    target = tmp_path / "out.bin"
    target.write_bytes(b"what the user had")
    os.chmod(target, 0o640)
    assert safe_write.write_file(str(target), b"new").ok
    assert target.read_bytes() == b"new" and (os.stat(target).st_mode & 0o777) == 0o640
    _full_disk(monkeypatch, after=3)
    res = safe_write.write_file(str(target), b"0123456789")
    assert (res.ok, res.opened, res.written, res.errno) == (False, True, 3, errno.ENOSPC)
    assert target.read_bytes() == b"new" and _no_temp_files(tmp_path)


def test_write_file_reports_the_real_errno(tmp_path):
    (tmp_path / "file").write_text("x")
    assert safe_write.write_file(str(tmp_path / "nosuch" / "out.bin"), b"x").errno == errno.ENOENT
    assert safe_write.write_file(str(tmp_path / "file" / "out.bin"), b"x").errno == errno.ENOTDIR
    assert safe_write.write_file(str(tmp_path), b"x").errno == errno.EISDIR


# ------------------------------------------------------------------------------------- fvp run -o
@pytest.mark.parametrize("sub, code, reason", [("nosuch/out", errno.ENOENT, "No such file or directory"),
                                                ("afile/out", errno.ENOTDIR, "Not a directory")])
def test_output_write_failure_is_exit_1_with_the_real_errno(tmp_path, sub, code, reason):
    (tmp_path / "afile").write_text("x")
    rc, out, err = run_fvp("run", MODEL, "-o", tmp_path / sub)
    assert rc == 1, out + err
    assert f"Could not open output file {tmp_path / sub}-0.bin (errno: {code})" in out
    assert f"Reason: the application aborted: output file {tmp_path / sub}-0.bin was not written: {reason} " \
           f"(errno {code})." in out
    assert "Traceback" not in out + err


def test_full_disk_keeps_the_old_output_and_fails(tmp_path, monkeypatch, capsys):
    base = tmp_path / "out"
    old = tmp_path / "out-0.bin"
    old.write_bytes(b"previous run")
    _full_disk(monkeypatch)
    rc = cli_main(["run", str(MODEL), "-o", str(base)])
    out = capsys.readouterr().out
    assert rc == 1
    assert f"Failed to write whole output file {old}, wrote 0 of 4 bytes" in out
    assert "No space left on device (errno 28)" in out
    assert old.read_bytes() == b"previous run" and _no_temp_files(tmp_path)


def test_output_written_whole_on_success(tmp_path):
    rc, out, _ = run_fvp("run", MODEL, "-o", tmp_path / "out")
    assert rc == 0 and (tmp_path / "out-0.bin").stat().st_size > 0 and _no_temp_files(tmp_path)


# ------------------------------------------------------------------------------------- --trace
def test_failed_run_leaves_an_existing_trace(tmp_path):
    trace = tmp_path / "trace.json"
    trace.write_text("the user's trace")
    rc, out, err = run_fvp("run", MODEL, "--trace", trace, "--data", f"{tmp_path / 'nosuch.bin'}@0x60000000")
    assert rc == 2, out + err
    assert trace.read_text() == "the user's trace"


def test_trace_write_failure_is_exit_1_and_keeps_the_old_trace(tmp_path, monkeypatch, capsys):
    trace = tmp_path / "trace.json"
    trace.write_text("the user's trace")
    _full_disk(monkeypatch)
    rc = cli_main(["run", str(MODEL), "--trace", str(trace)])
    err = capsys.readouterr().err
    assert rc == 1
    assert f"fvp: error: --trace {trace}: cannot write the trace: No space left on device" in err
    assert trace.read_text() == "the user's trace" and _no_temp_files(tmp_path)


def test_trace_into_a_missing_directory_is_refused_before_the_run(tmp_path):
    rc, out, err = run_fvp("run", MODEL, "--trace", tmp_path / "nosuch" / "t.json")
    assert rc == 2 and "cannot write the trace: No such file or directory" in err
    assert "Program complete" not in out
