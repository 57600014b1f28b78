"""Shared helpers for the tests (importable as ``testutil``: pytest puts tests/ on sys.path)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
CORPUS = DATA / "corpus"
ORACLE = DATA / "oracle"


RUN_SH = ROOT / "tools" / "run.sh"
# The commands a test can run in its own process: ``python -m <prog>`` (or ``tools/run.sh``, which execs Python on
# fvp.host.tutorial.main) -> (module, function taking argv, the arguments that go first)
IN_PROCESS = {"fvp": ("fvp.host.cli", "main", ()), "fvp.host.dropin": ("fvp.host.dropin.command", "main", ()),
              "tools/run.sh": ("fvp.host.tutorial", "main", (f"--invoked-as={RUN_SH}",))}
# environment variables the commands read when they run (not when a module is imported or a cache is opened):
# a test may set these for a run in this process; any other needs a new process
ENV_READ_AT_RUN = frozenset({"FVP_EXIT_STATUS", "FVP_DEBUG", "EXECUTORCH_PYTHON"})


def run_fvp(*args, cwd=None, timeout=900, env_extra=None, prog="fvp", new_process=None):
    """Run ``python -m <prog> ARGS`` (``fvp``, ``fvp.host.dropin`` for the FVP drop-in, or ``tools/run.sh``): ``(exit
    status, stdout, stderr)``, in the current directory ``cwd`` (default: the checkout); ``env_extra`` sets
    variables for the command (``None`` unsets one).

    It runs in this process (the command's ``main(argv)`` with stdout and stderr captured; ``run_in_process``),
    which costs the run alone, not a new interpreter's 0.3-0.5 s of start-up: a new process only for
    ``new_process=True`` (what only a new process shows: start-up, imports, exit, signals, the console scripts),
    another ``prog``, or ``env_extra`` beyond ``ENV_READ_AT_RUN`` unless ``new_process=False`` (the caller
    knows that what it tests reads them at run time: ``FVP_CACHE``/``FVP_CACHE_DIR`` for Vela's cache);
    ``timeout`` applies to a new process."""
    argv = [str(a) for a in args]
    if new_process is None:
        new_process = not set(env_extra or {}) <= ENV_READ_AT_RUN
    if new_process or prog not in IN_PROCESS:
        return run_new_process(prog, argv, cwd=cwd, timeout=timeout, env_extra=env_extra)
    return run_in_process(prog, argv, cwd=cwd, env_extra=env_extra)


def fvp_process(*args, prog="fvp", cwd=None, env_extra=None, new_process=False) -> subprocess.CompletedProcess:
    """``run_fvp`` as a ``subprocess.CompletedProcess`` (``returncode``, ``stdout``, ``stderr`` as text): a test
    written against ``subprocess.run([sys.executable, "-m", prog, ...], capture_output=True, text=True)`` takes it
    unchanged, and runs in this process."""
    rc, out, err = run_fvp(*args, cwd=cwd, env_extra=env_extra, prog=prog, new_process=new_process)
    return subprocess.CompletedProcess([sys.executable, "-m", prog, *map(str, args)], rc, out, err)


def run_new_process(prog, argv, cwd=None, timeout=900, env_extra=None):
    """``python -m <prog> argv`` (``bash tools/run.sh argv`` with ``PYTHON`` this interpreter) in a new process:
    ``(exit status, stdout, stderr)``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    for k, v in (env_extra or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = str(v)
    if prog == "tools/run.sh":
        env.setdefault("PYTHON", sys.executable)
        cmd = ["bash", str(RUN_SH), *map(str, argv)]
    else:
        cmd = [sys.executable, "-m", prog, *map(str, argv)]
    p = subprocess.run(cmd, capture_output=True, cwd=cwd or ROOT, env=env, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def _captured():
    import io

    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", write_through=True)


def run_in_process(prog, argv, cwd=None, env_extra=None):
    """``python -m <prog> argv`` as its ``main(argv)`` in this process, as a new process would see it: stdout and
    stderr captured (text streams with a ``buffer``, not terminals), the working directory ``cwd`` (default: the
    checkout) and ``env_extra`` set for the call and restored after it, ``SystemExit`` (argparse) turned into the
    status. ``(exit status, stdout, stderr)``."""
    import importlib

    module, func, first = IN_PROCESS[prog]
    main = getattr(importlib.import_module(module), func)
    argv = [*first, *argv]
    out, err = _captured(), _captured()
    saved_streams, saved_cwd = (sys.stdout, sys.stderr), os.getcwd()
    saved_env = {k: os.environ.get(k) for k in env_extra or {}}
    os.chdir(cwd or ROOT)
    for k, v in (env_extra or {}).items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = str(v)
    sys.stdout, sys.stderr = out, err
    try:
        try:
            rc = main(list(argv))
        except SystemExit as e:  # argparse's --help and usage errors, sys.exit(...)
            if isinstance(e.code, str):
                err.write(e.code + "\n")
            rc = 0 if e.code is None else e.code if isinstance(e.code, int) else 1
        for stream in (out, err):
            stream.flush()
    finally:
        sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    text = [s.buffer.getvalue().decode("utf-8", "replace") for s in (out, err)]
    return (0 if rc is None else rc), text[0], text[1]


# what every `fvp run` prints on stderr (unless -q): its configuration before the run, its memory after it
RUN_LINES = ("fvp: running ", "fvp: memory high-water marks: ")


def remarks(err: str) -> list:
    """The lines of a command's stderr other than the two every ``fvp run`` prints (``RUN_LINES``): its notes,
    warnings and errors."""
    return [line for line in err.splitlines() if not line.startswith(RUN_LINES)]


class FakeBus:
    """Flat memory with the calls CPU kernels make (``view``, ``work``) and a bump ``alloc`` for tests."""

    def __init__(self, size=1 << 22):
        import numpy as np

        self.mem = np.zeros(size, np.uint8)
        self.top = 64
        self.work_done = {}

    def alloc(self, nbytes):
        addr = self.top
        self.top = (self.top + nbytes + 15) // 16 * 16
        return addr

    def view(self, addr, size):
        return self.mem[addr:addr + size]

    def work(self, kind, amount=1.0):
        self.work_done[kind] = self.work_done.get(kind, 0) + amount

    def cpu_cycles(self):
        return int(sum(self.work_done.values()))


class KernelHarness:
    """A fake bus, a value list and a ``KernelContext`` over them: enough to call a CPU kernel directly."""

    def __init__(self, bus_size=1 << 22):
        from types import SimpleNamespace

        from firmware.executorch.method import KernelContext

        self.bus = FakeBus(bus_size)
        self.values = []
        self.ctx = KernelContext(SimpleNamespace(bus=self.bus, values=self.values), None)

    def tensor(self, arr=None, shape=None, dtype=None, dim_order=None):
        """A tensor in the fake memory: ``arr``'s data, or an empty one of ``shape`` and ``dtype`` (float32)."""
        import numpy as np

        from firmware.executorch.method import RtTensor
        from firmware.executorch.program_types import SCALAR_TYPES

        arr = None if arr is None else np.ascontiguousarray(arr)
        shape = arr.shape if arr is not None else shape
        dt = np.dtype(arr.dtype if arr is not None else (dtype or np.float32))
        scalar_type = next(k for k, (_, _, d) in sorted(SCALAR_TYPES.items()) if d == dt)
        t = RtTensor(scalar_type, shape, dim_order, None)
        t.address = self.bus.alloc(max(t.nbytes, 1))
        if arr is not None:
            t.array(self.bus)[...] = arr
        return t

    def ints(self, values):
        """An ``IntList`` argument: the integers appended to the value list, by index."""
        idx = []
        for v in values:
            self.values.append(int(v))
            idx.append(len(self.values) - 1)
        return ("IntList", idx)

    def tlist(self, tensors, kind="TensorList"):
        """A ``TensorList`` (or ``OptionalTensorList``: None entries are index -1) argument."""
        idx = []
        for t in tensors:
            if t is None:
                idx.append(-1)
            else:
                self.values.append(t)
                idx.append(len(self.values) - 1)
        return (kind, idx)


def run_fvp_sh_source() -> bytes | None:
    """ExecuTorch's run_fvp.sh at the commit the main runtime profile follows, from ``EXECUTORCH_ROOT`` (a
    checkout) or ``EXECUTORCH_GIT_DIR`` (a git directory; default: this machine's mirror), or None."""
    root = os.environ.get("EXECUTORCH_ROOT")
    if root and (Path(root) / "backends/arm/scripts/run_fvp.sh").is_file():
        return (Path(root) / "backends/arm/scripts/run_fvp.sh").read_bytes()
    git_dir = os.environ.get("EXECUTORCH_GIT_DIR", "/work/.mirror/pytorch+executorch/repo")
    if Path(git_dir).exists():
        sys.path.insert(0, str(ROOT))
        from firmware.executorch.profiles import MAIN_COMMIT

        p = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{MAIN_COMMIT}:backends/arm/scripts/run_fvp.sh"],
                           capture_output=True)
        if p.returncode == 0:
            return p.stdout
    return None


def executorch_python() -> str | None:
    """An interpreter with ExecuTorch: ``EXECUTORCH_PYTHON``, or this one if it imports ``executorch``."""
    import importlib.util

    if os.environ.get("EXECUTORCH_PYTHON"):
        return os.environ["EXECUTORCH_PYTHON"]
    return sys.executable if importlib.util.find_spec("executorch") else None


def python_lines(fn, *args, **kwargs):
    """``(fn(*args, **kwargs), Python lines executed meanwhile)``: a deterministic measure of work for tests that
    check a bound on it ("the reader does not spin", "the loop is vectorised", "the kernel runs compiled"), which
    a unit test must never check with a clock. Lines of compiled code (numpy, numba kernels) are not counted; an
    exception from ``fn`` propagates with the count in ``exc.python_lines``."""
    count = 0

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return local

    def tracer(frame, event, arg):
        return local

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        result = fn(*args, **kwargs)
    except BaseException as e:
        sys.settrace(old)
        e.python_lines = count
        raise
    sys.settrace(old)
    return result, count


class FakeSimClock:
    """The simulator's wall clock for a test (``--timelimit``, the drop-in's ``--cpulimit``), installed with
    ``monkeypatch``: it stands still except at the NPU engines' interruption points (the chunks of one long
    operation), each of which advances it by one second before the real check runs. A run with ``--timelimit T``
    then stops at the first interruption point past T seconds: deterministic, and no test waits for a clock
    (``points`` counts the points passed)."""

    def __init__(self, monkeypatch):
        import importlib
        import pkgutil

        import fvp.machine.cancel as cancel
        import fvp.machine.npu.engines as engines
        import fvp.machine.sim as sim

        self.now = 1000.0
        self.points = 0
        clock = self

        class _Time:
            @staticmethod
            def monotonic():
                return clock.now

        def point():
            clock.points += 1
            clock.now += 1.0
            cancel.interruption_point()

        monkeypatch.setattr(sim, "_time", _Time)
        # every engine module that takes the hook (the chunks of one operation); not the DMAs or execute's
        # between-operation points, where the clock stands still
        names = [m.name for m in pkgutil.walk_packages(engines.__path__, engines.__name__ + ".")]
        for name in names:
            module = importlib.import_module(name)
            if getattr(module, "interruption_point", None) is cancel.interruption_point:
                monkeypatch.setattr(module, "interruption_point", point)
