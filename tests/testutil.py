"""Shared helpers for the tests (importable as ``testutil``: pytest puts tests/ on sys.path)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
CORPUS = DATA / "corpus"
ORACLE = DATA / "oracle"


def run_fvp(*args, cwd=None, timeout=900, env_extra=None, prog="fvp"):
    """Run ``python -m fvp ...`` in a subprocess; returns (exit code, stdout, stderr)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(env_extra or {})
    p = subprocess.run([sys.executable, "-m", prog, *map(str, args)], capture_output=True, cwd=cwd or ROOT,
                       env=env, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


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
