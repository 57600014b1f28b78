"""Start-up and exit of a new process (issue 17): what a short `fvp run` does not pay for, and that the fast
exit keeps every output and exit status."""

import os
import subprocess
import sys

import pytest

from testutil import CORPUS, ROOT, run_fvp



def _python(code, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
        env.pop(k, None)
    env.update(env_extra or {})
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_blas_threads_do_not_depend_on_import_order():
    pytest.importorskip("threadpoolctl")
    probe = ("import threadpoolctl; print(max([i['num_threads'] for i in threadpoolctl.threadpool_info() "
             "if i['user_api'] == 'blas'] or [1]))")
    assert _python("import fvp, numpy; " + probe).strip() == "1"
    assert _python("import numpy, fvp; " + probe).strip() == "1"
    # the user's own choice wins
    if os.cpu_count() >= 2:
        assert _python("import numpy, fvp; " + probe, {"OPENBLAS_NUM_THREADS": "2"}).strip() in ("2", "1")


def test_a_short_run_never_imports_numba():
    """The embedded x + x and a small conv program run on numpy paths: numba is not even imported."""
    code = ("import sys, io, contextlib\n"
            "from fvp.host import cli\n"
            "out = io.StringIO()\n"
            "for argv in (['run'], ['run', sys.argv[1]]):\n"
            "    with contextlib.redirect_stdout(out):\n"
            "        assert cli.main(argv + ['-C', 'devices.uart0.out_file=/dev/null']) == 0\n"
            "print('numba' in sys.modules)\n")
    small = CORPUS / "conv1d_u55-128.bpte"
    if not small.is_file():
        small = sorted(CORPUS.glob("*.bpte"), key=lambda p: p.stat().st_size)[0]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", code, str(small)], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "False"


def test_fast_exit_keeps_outputs_and_statuses(tmp_path):
    """`python -m fvp` ends with os._exit: the log, the -o files and the exit statuses are as without it
    (paths of one length: the simulated time depends on it)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    fast = run_fvp("run", "-o", tmp_path / "a" / "out", "-C", "devices.uart0.out_file=-")
    slow = run_fvp("run", "-o", tmp_path / "b" / "out", "-C", "devices.uart0.out_file=-",
                   env_extra={"FVP_FAST_EXIT": "0"})
    assert fast[0] == slow[0] == 0
    assert fast[1] == slow[1].replace(str(tmp_path / "b"), str(tmp_path / "a")) and "Program complete" in fast[1]
    outs = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert outs and outs == sorted(p.name for p in (tmp_path / "b").iterdir())
    for name in outs:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert run_fvp("run", tmp_path / "missing.pte")[0] == 2
    assert run_fvp("run", tmp_path / "missing.pte", env_extra={"FVP_FAST_EXIT": "0"})[0] == 2


def test_the_launcher_never_exits_a_caller(monkeypatch):
    """Called as a function (a test, a library user), the launcher returns the status."""
    from fvp.host import launch

    monkeypatch.setattr(sys, "argv", ["pytest"])
    assert launch._exit("fvp", 3) == 3
    assert not launch._is_script("fvp")
    monkeypatch.setattr(sys, "argv", [str(ROOT / "fvp" / "__main__.py")])
    assert launch._is_script("fvp") and not launch._is_script("FVP_Corstone_SSE-300_Ethos-U55")
    monkeypatch.setattr(sys, "argv", ["/usr/bin/FVP_Corstone_SSE-300_Ethos-U55"])
    assert launch._is_script("FVP_Corstone_SSE-300_Ethos-U55")
    monkeypatch.setenv("FVP_FAST_EXIT", "0")
    assert not launch._is_script("FVP_Corstone_SSE-300_Ethos-U55")


def test_numba_heap_frozen_once_and_only_where_the_start_up_heap_was():
    """After the run that first loads numba, a process that froze its start-up heap (the console scripts, the
    bench child) freezes numba's objects too, once; a library caller's collector is never touched."""
    code = ("import gc, numba\n"
            "from fvp.host import launch\n"
            "launch.settle_new_heap()\n"
            "print(gc.get_freeze_count() == 0)\n"
            "launch.settle_heap()\n"
            "frozen = gc.get_freeze_count()\n"
            "keep = [[i] for i in range(1000)]\n"
            "launch.settle_new_heap()\n"
            "after = gc.get_freeze_count()\n"
            "keep += [[i] for i in range(1000)]\n"
            "launch.settle_new_heap()\n"
            "print(after >= frozen + 1000, gc.get_freeze_count() == after)\n")
    assert _python(code).split() == ["True", "True", "True"]
