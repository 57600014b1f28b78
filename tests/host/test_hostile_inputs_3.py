"""Issue 27, items 4, 6 and 7: what was an internal error or a silent surprise is one diagnosed line with the
documented exit status (docs/security.md): .npy headers, TFLite options tables, NUL bytes in file names, bad
program files, a missing kernel, a small method pool, extra -i files, --cyclelimit, fvp compare's --target."""

import io
import struct

import numpy as np
import pytest

from firmware.npy import load_npy
from firmware.tflm.model import ModelError, load_model
from fvp.host import cli
from fvp.host.dropin import command as dropin
from testutil import CORPUS, ROOT

ADD_Q = CORPUS / "add_q.pte"
BPTE = CORPUS / "add_u55-128.bpte"
TFLITE = ROOT / "tests" / "data" / "tflm" / "cpu_split_u55-128_vela.tflite"


def _run(capsys, *argv, entry=cli.main):
    rc = entry([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _errors(err):
    return [line for line in err.splitlines() if ": error: " in line]


def _clean(out, err):
    text = out + err
    return "Traceback" not in text and "internal error" not in text and "simulator error" not in text


# ------------------------------------------------------------------------------------------ .npy inputs
def _npy(arr) -> bytes:
    b = io.BytesIO()
    np.save(b, arr)
    return b.getvalue()


GOOD_NPY = _npy(np.arange(12, dtype=np.int8).reshape(3, 4))


@pytest.mark.parametrize("data, says", [
    (b"", "EOF"),
    (GOOD_NPY[:20], "not a .npy header"),
    (GOOD_NPY.replace(b"'shape': (3, 4)", b"'shape': (4398046511104, 1)"), "4398046511104 bytes"),  # 4 TiB
    (GOOD_NPY.replace(b"{'descr'", b"{'descr\""), "not a .npy header"),
    (GOOD_NPY.replace(b"'shape': (3, 4), }", b"'shape': (3, 4), \"\"\"}"), "not a .npy header"),  # TokenError
    (_npy(np.array([1, None], dtype=object)), "not a tensor's dtype"),
    (GOOD_NPY[:-1], "11 bytes follow it"),
])
def test_a_bad_npy_is_a_value_error_and_allocates_nothing(data, says):
    with pytest.raises(ValueError, match=None) as e:
        load_npy(data)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_a_good_npy_is_a_view_in_either_order():
    assert (load_npy(GOOD_NPY) == np.arange(12).reshape(3, 4)).all()
    fortran = _npy(np.asfortranarray(np.arange(12, dtype=np.int16).reshape(3, 4)))
    assert (load_npy(fortran) == np.arange(12).reshape(3, 4)).all()


def test_a_bad_npy_input_fails_the_run_in_one_line(tmp_path, capsys):
    bad = tmp_path / "x.npy"
    bad.write_bytes(GOOD_NPY.replace(b"'shape': (3, 4)", b"'shape': (4398046511104, 1)"))
    rc, out, err = _run(capsys, "run", ADD_Q, "-i", bad, "-i", bad)
    assert rc == 1 and _clean(out, err)
    assert "x.npy: not a valid .npy file: the header says shape (4398046511104, 1)" in out


# ------------------------------------------------------------------------------------------ TFLite options
def _operator_fields(data: bytes) -> dict:
    """Operator index -> (position of its builtin_options_type byte, position of its builtin_options offset)."""
    from tflite.Model import Model

    sg = Model.GetRootAs(data, 0).Subgraphs(0)
    out = {}
    for i in range(sg.OperatorsLength()):
        t = sg.Operators(i)._tab
        if t.Offset(10) and t.Offset(12):
            out[i] = (t.Pos + t.Offset(10), t.Pos + t.Offset(12))
    return out


def _tampered(change: str) -> bytes:
    data = bytearray(TFLITE.read_bytes())
    fields = _operator_fields(bytes(data))
    pool_type, pool_options = fields[4]  # AVERAGE_POOL_2D
    resize_type, resize_options = fields[2]  # RESIZE_BILINEAR
    if change == "pool options offset":
        struct.pack_into("<I", data, pool_options, 0x7FFF_FFF0)
    elif change == "resize options offset":
        struct.pack_into("<I", data, resize_options, 0x2BDC_0000)
    elif change == "pool options type":
        data[pool_type] = 1  # Conv2DOptions where the parser reads Pool2DOptions
    elif change == "resize options none":
        data[resize_type] = 0
    return bytes(data)


@pytest.mark.parametrize("change, says", [
    ("pool options offset", "operator 4 (AVERAGE_POOL_2D): its builtin options lie outside the file"),
    ("resize options offset", "operator 2 (RESIZE_BILINEAR): its builtin options lie outside the file"),
    ("pool options type", "operator 4 (AVERAGE_POOL_2D): Pool2DOptions.StrideW is 0; it must be at least 1"),
])
def test_tflite_options_are_read_whole_when_loaded(change, says):
    with pytest.raises(ModelError) as e:
        load_model(_tampered(change))
    assert says in str(e.value)


def test_options_of_another_type_are_that_types_defaults():
    m = load_model(_tampered("resize options none"))  # TFLite Micro: builtin_options_as_X() is null: defaults
    o = m.operators[2].options
    assert o.type_name == "ResizeBilinearOptions" and o.AlignCorners() is False and o.HalfPixelCenters() is False
    good = load_model(TFLITE.read_bytes()).operators[4].options
    assert good.type_name == "Pool2DOptions" and good.StrideW() >= 1
    with pytest.raises(AttributeError, match="Pool2DOptions has no field Nosuch"):
        good.Nosuch()


def test_a_damaged_options_table_is_a_bad_model_file(tmp_path, capsys):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(_tampered("resize options offset"))
    rc, out, err = _run(capsys, "run", bad)
    assert rc == 2 and out == "" and len(_errors(err)) == 1 and "truncated (or damaged)" in err and _clean(out, err)


# ------------------------------------------------------------------------------------------ NUL bytes
def test_a_nul_byte_in_an_output_file_name_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "board.yaml").write_text('extends: default\ndevices:\n  uart0:\n    out_file: "a\\0b"\n')
    rc, out, err = _run(capsys, "run", ADD_Q, "-c", "board.yaml")
    assert rc == 2 and "board.yaml: devices.uart0.out_file: 'a\\x00b': a file name cannot contain a NUL byte" in err
    rc, out, err = _run(capsys, "run", ADD_Q, "-C", 'devices.uart0.out_file="a\\0b"')
    assert rc == 2 and "cannot contain a NUL byte" in err and "\0" not in err
    (tmp_path / "params.txt").write_bytes(b"mps3_board.uart0.out_file=a\0b\n")
    rc, out, err = _run(capsys, "--data", f"{ADD_Q}@0x70000000", "-f", "params.txt", entry=dropin.main)
    assert rc == 2 and "params.txt:1: mps3_board.uart0.out_file: the value holds a NUL byte" in err and "\0" not in err
    (tmp_path / "semi.txt").write_bytes(f"cpu0.semihosting-cmd_line=executor_runner -m {ADD_Q} -o a\0b\n".encode())
    rc, out, err = _run(capsys, "-f", "semi.txt", entry=dropin.main)  # the FVP's C string would end at the NUL
    assert rc == 2 and "semi.txt:1: cpu0.semihosting-cmd_line: the value holds a NUL byte" in err and out == ""
    # an API caller's semihosting argv with a NUL: the runner cannot write the file, one line, no NUL printed
    from fvp.safe_write import write_file

    assert write_file(str(tmp_path / "a\0b"), b"x").strerror == "the file name contains a NUL byte"
    assert not list(tmp_path.glob("a*"))


# ------------------------------------------------------------------------------------------ item 7
def test_a_truncated_program_is_exit_2_and_says_truncated(tmp_path, capsys):
    for name, cut in (("add_u55-128.bpte", 3000), ("add_q.pte", 1000), ("mv2_full_u55-128_sramonly.pte", -100)):
        data = (CORPUS / name).read_bytes()
        bad = tmp_path / name
        bad.write_bytes(data[:cut])
        rc, out, err = _run(capsys, "run", bad)
        assert rc == 2 and out == "" and len(_errors(err)) == 1 and "truncated" in err, err


def test_inspect_says_a_text_file_is_not_a_program(capsys):
    rc, out, err = _run(capsys, "inspect", ROOT / "README.md")
    assert rc == 2 and "README.md: not an ExecuTorch program (.pte, .bpte) or a TFLite model (.tflite)" in err


def test_the_dropin_names_the_missing_kernel(tmp_path, capsys):
    bad = tmp_path / "noop.pte"
    bad.write_bytes((CORPUS / "add_fp_cpu.pte").read_bytes().replace(b"aten::add", b"aten::zzz"))
    rc, out, err = _run(capsys, "--data", f"{bad}@0x70000000", entry=dropin.main)
    (line,) = _errors(err)
    assert rc == 1 and "status 0x14 (missing operator aten::zzz.out: this runner has no kernel for it" in line


def test_a_small_method_pool_gets_a_hint(capsys):
    rc, out, err = _run(capsys, "run", BPTE, "-C", "firmware.pools.method.size=256")
    assert rc == 1 and "fvp: note: the method pool (256 bytes) is too small for this program" in err
    note = next(line for line in err.splitlines() if "too small for this program" in line)  # not the run's line
    suggested = note.split("firmware.pools.method.size=")[1].split()[0]
    rc, out, err = _run(capsys, "run", BPTE, "-C", f"firmware.pools.method.size={suggested}")
    assert rc == 0 and "Test_result: PASS" in out  # the suggestion is enough


def test_extra_input_files_are_refused(tmp_path, capsys):
    f = tmp_path / "in.bin"
    f.write_bytes(b"\1")
    rc, out, err = _run(capsys, "run", ADD_Q, "-i", f, "-i", f, "-i", f)
    assert rc == 2 and out == "" and "3 input files (-i) for method 'forward', which takes 2 inputs" in err


@pytest.mark.parametrize("limit", [1, 100, 1000, 10000])
def test_cyclelimit_stops_one_cycle_past_the_limit(limit, capsys):
    rc, out, err = _run(capsys, "run", BPTE, "--cyclelimit", limit, "--stat")
    assert rc == 3 and "Cycle limit has been exceeded" in out
    ns = int(out.split("[main@0][")[1].split(" ns]")[0])
    cycles = round(ns * 32e6 / 1e9)  # the default board's CPU: 32 MHz
    inst = int(out.split(" Inst)")[0].rsplit("(", 1)[1])
    assert cycles == limit + 1 and inst <= limit + 1  # the work in progress stops at the limit too


def test_compare_takes_every_target(capsys):
    rc, out, err = _run(capsys, "compare", BPTE, "--target", "ethos-u55-128", "--target", "ethos-u55-256")
    assert "on 2 board(s)" in out and "target:ethos-u55-128" in out and "target:ethos-u55-256" in out


@pytest.mark.parametrize("argv0, status, says", [("/usr/local/bin/fvp", 130, "fvp: interrupted\n"),
                                                 ("/usr/bin/FVP_Corstone_SSE-320", 130, "FVP_Corstone_SSE-320: interrupted\n"),
                                                 ("my_script.py", None, "KeyboardInterrupt")])
def test_ctrl_c_while_the_console_script_imports(argv0, status, says):
    """A Ctrl-C after the console script started importing the package and before its guard is in place: one
    line and 130, as during the run (a library caller's process is left alone)."""
    import os
    import subprocess
    import sys

    code = (f"import sys; sys.argv[0] = {argv0!r}; import fvp, os, signal; os.kill(os.getpid(), signal.SIGINT); "
            f"import time; time.sleep(10)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    if status is not None:
        assert (p.returncode, p.stderr) == (status, says)
    else:
        assert "Traceback" in p.stderr and says in p.stderr
