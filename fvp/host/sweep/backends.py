"""Where the points run: in this process, on a local process pool, or on a Dask distributed cluster.

Every backend takes the planned tasks and the program bytes (``{sha256: bytes}``), ships the programs to each
worker once (the pool's initializer; Dask's ``scatter(broadcast=True)``), and yields rows as points finish, in
completion order; the caller writes each row at once, so an interrupted sweep keeps every finished point.

Why Dask distributed and not Ray: a point is a plain Python function on a few hundred KiB of bytes, which is
exactly Dask's ``client.submit``; ``distributed`` is pure Python (a 10 s ``pip install``, no daemon, no
shared-memory object store, no dashboard processes), its ``LocalCluster`` starts two loopback workers in a
couple of seconds on two cores, and a multi-node cluster is ``dask scheduler`` plus ``dask worker ADDRESS`` on
each node. Ray brings a C++ raylet, a GCS and an object store per node (hundreds of MB), which this workload
does not need.
"""

from __future__ import annotations

import os
import sys
import time

_BLOBS: dict = {}
# one BLAS / OpenMP thread per worker process: the pool already uses every core
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


def _init_worker(blobs: dict) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops the pool (run_pool)
    _BLOBS.update(blobs)


def _run_local(task: dict) -> dict:
    from .point import run_task

    return run_task(task, _BLOBS[task["program_sha256"]])


def _error_row(task: dict, why: str) -> dict:
    return {"sweep": task.get("sweep", ""), "program": task["program"], "axes": dict(task["axes"]),
            "key": task["key"], "status": "error", "reason": why, "program_file": task["program_file"],
            "program_sha256": task["program_sha256"], "stream": task["stream"], "board_file": task["board"],
            "overrides": list(task["overrides"])}


def run_inline(tasks: list, blobs: dict):
    from .point import run_task

    for t in tasks:
        yield run_task(t, blobs[t["program_sha256"]])


def run_pool(tasks: list, blobs: dict, jobs: int):
    """A process pool of ``jobs`` workers (spawned: no BLAS threads inherited mid-state)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    saved = {v: os.environ.get(v) for v in _THREAD_VARS}
    for v in _THREAD_VARS:
        os.environ.setdefault(v, "1")
    ex = ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn"), initializer=_init_worker,
                             initargs=(blobs,))
    finished = False
    try:
        futs = {ex.submit(_run_local, t): t for t in tasks}
        for f in as_completed(futs):
            try:
                yield f.result()
            except BrokenProcessPool as e:
                yield _error_row(futs[f], f"worker process died: {e}")
            except Exception as e:  # noqa: BLE001
                yield _error_row(futs[f], f"{type(e).__name__}: {e}")
        finished = True
    finally:
        if not finished:  # interrupted: the running points are dropped (a rerun runs them), the workers stopped
            for proc in list((getattr(ex, "_processes", None) or {}).values()):
                proc.terminate()
        ex.shutdown(wait=True, cancel_futures=True)
        for v, old in saved.items():
            if old is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = old


# ------------------------------------------------------------------------------------------------ Dask
def _dask_point(task: dict, model: bytes) -> dict:
    from fvp.host.sweep.point import run_task

    return run_task(task, model)


def _dask_worker_info() -> dict:
    import fvp
    from fvp.host.sweep.plan import config_dir_hash

    for v in _THREAD_VARS:
        os.environ.setdefault(v, "1")
    import fvp.machine.platform  # noqa: F401  (warm: the simulator's imports and numba's disk cache, once per worker)

    return {"version": fvp.__version__, "config": config_dir_hash()}


def connect(address):
    """A ``distributed.Client`` for ``tcp://host:port`` (a scheduler) or an existing client/cluster."""
    try:
        from distributed import Client
    except ImportError:
        from ...boards import ConfigProblems

        raise ConfigProblems(["--cluster needs Dask distributed: pip install 'fvp-corstone300[cluster]'"]) from None
    if isinstance(address, str) and address.startswith("ray://"):
        from ...boards import ConfigProblems

        raise ConfigProblems([f"--cluster {address}: this simulator runs sweeps on Dask distributed, not Ray "
                              f"(docs/sweep.md says why); give a Dask scheduler address tcp://host:port"])
    if hasattr(address, "submit"):
        return address, False
    return Client(address, timeout="30s"), True


def run_dask(tasks: list, blobs: dict, client):
    """Ship every program to every worker once, then one task per point; rows in completion order."""
    from distributed import as_completed

    from ... import __version__
    from .plan import config_dir_hash

    info = client.run(_dask_worker_info)
    bad = {w: i for w, i in info.items() if i != {"version": __version__, "config": config_dir_hash()}}
    if bad:
        from ...boards import ConfigProblems

        w, i = next(iter(bad.items()))
        raise ConfigProblems([f"--cluster: worker {w} runs fvp {i['version']} with board tables {i['config']}, "
                              f"this is fvp {__version__} with {config_dir_hash()}: install the same fvp on every "
                              f"worker (results must not depend on where a point ran)"])
    shipped = client.scatter(blobs, broadcast=True, hash=True) if blobs else {}
    futs = {}
    for t in tasks:
        f = client.submit(_dask_point, t, shipped[t["program_sha256"]], pure=False, retries=1)
        futs[f] = t
    try:
        for f in as_completed(list(futs)):
            try:
                yield f.result()
            except Exception as e:  # noqa: BLE001 - a lost worker, a killed task: a row, not the end
                yield _error_row(futs[f], f"{type(e).__name__}: {e}")
    finally:
        pending = [f for f in futs if not f.done()]
        if pending:
            client.cancel(pending)


# ------------------------------------------------------------------------------------------------ progress
class Progress:
    """tqdm's bar on a terminal when tqdm is installed; otherwise a plain line every few seconds."""

    def __init__(self, total: int, desc: str, out=None, plain: bool | None = None, not_runnable: int = 0):
        """``total`` points to run; ``not_runnable``: the sweep's points that planning could not run (needs-compile,
        cannot-run, error rows), counted among the points not ok from the first line on."""
        self.total, self.n, self.failed = total, 0, 0
        self.not_runnable = not_runnable
        self.out = out or sys.stderr
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.bar = None
        if not plain and total:
            try:
                from tqdm import tqdm

                if getattr(self.out, "isatty", lambda: False)():
                    self.bar = tqdm(total=total, desc=desc, unit="pt", file=self.out, dynamic_ncols=True)
            except ImportError:
                pass
        self.desc = desc

    def update(self, row: dict) -> None:
        self.n += 1
        if row.get("status") not in ("ok",):
            self.failed += 1
        if self.bar is not None:
            self.bar.set_postfix(not_ok=self.failed + self.not_runnable, refresh=False)
            self.bar.update(1)
            return
        now = time.perf_counter()
        if now - self.last >= 2.0 or self.n == self.total:
            self.last = now
            rate = self.n / max(now - self.t0, 1e-9) * 60
            not_ok = (f"{self.failed + self.not_runnable} not ok: {self.failed} of those run, {self.not_runnable} "
                      f"not runnable" if self.not_runnable else f"{self.failed} not ok")
            self.out.write(f"{self.desc}: {self.n}/{self.total} points run ({not_ok}), {rate:.1f} points/min\n")
            self.out.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.t0
