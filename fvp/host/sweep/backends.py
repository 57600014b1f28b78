"""Where the points run: in this process, on a local process pool, or on a Dask distributed cluster.

Every backend takes the planned tasks and the program bytes (``{sha256: bytes}``), ships the programs to each
worker once (the pool's initializer; Dask's ``scatter(broadcast=True)``), and yields rows as points finish, in
completion order; the caller writes each row at once, so an interrupted sweep keeps every finished point.

Connecting, checking the workers and the progress line are shared with ``fvp run --inputs``
(``fvp.host.cluster``, which also says why Dask and not Ray).
"""

from __future__ import annotations

import os

from ..cluster import THREAD_VARS as _THREAD_VARS, Progress, check_workers, connect  # noqa: F401 (re-exported)

_BLOBS: dict = {}


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


def run_dask(tasks: list, blobs: dict, client):
    """Ship every program to every worker once, then one task per point; rows in completion order."""
    from distributed import as_completed

    check_workers(client)
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
