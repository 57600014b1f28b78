"""A data set through one program: in this session, on local processes, or spread over a Dask cluster.

``iter_results(session, samples, ...)`` checks every sample against the program's inputs here (an input that
does not fit is an ``InputError`` for that sample; the set goes on) and runs the rest, yielding ``(index,
Result or exception)`` as they finish. In this process the session runs them one after the other (a sample
whose inference fails gets an ``InferenceError`` and the session boots a new machine for the next). With
``jobs`` > 1 or a ``cluster`` the samples go in chunks to workers, each of which keeps a session of the same
program and board per process (booted at its first chunk; the program is shipped once per worker: the pool's
initializer, Dask's ``scatter(broadcast=True)``), with a bounded number of chunks in flight, so a large set is
never all in memory. Every inference starts in the same clock phase on every machine
(``fvp.machine.resident``), so a sample's outputs and figures are the same wherever it ran; results from
workers carry no NPU stream records.
"""

from __future__ import annotations

import hashlib
import math
import os

from .dataset import Sample
from .results import InferenceError, unpack
from .tensors import InputError

_SHIPPED: dict = {}  # in a pool worker: the worker function, the program and configuration (the initializer)


def _pool_init(worker, key: str, image: bytes, config: dict) -> None:
    import signal

    from ..cluster import THREAD_VARS

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's
    for v in THREAD_VARS:
        os.environ.setdefault(v, "1")
    _SHIPPED.update(worker=worker, key=key, image=image, config=config)


def _pool_chunk(chunk: list) -> list:
    return _SHIPPED["worker"](_SHIPPED["key"], _SHIPPED["image"], _SHIPPED["config"], chunk)


# ------------------------------------------------------------------------------------------------ the parent
def _requests(session, samples):
    """``(index, where, request or exception)`` per sample: checked here, before anything is shipped."""
    import numpy as np

    if isinstance(samples, np.ndarray) and len(session.inputs) == 1:
        stacked = samples
        samples = (stacked[i] for i in range(stacked.shape[0]))  # one input, stacked along a batch dimension
    for i, sample in enumerate(samples):
        name = getattr(sample, "name", None)
        where = f"sample {name}" if name is not None else f"sample {i}"
        if getattr(sample, "error", None):
            yield i, where, InputError(sample.error)
            continue
        values = sample.values if isinstance(sample, Sample) else sample
        try:
            yield i, where, session.request(values, where)
        except InputError as e:
            yield i, where, e


def iter_results(session, samples, worker, *, cluster=None, jobs: int = 1, chunk: int | None = None,
                 in_flight: int | None = None):
    """``(index, Result or exception)`` for every sample, in completion order (see the module docstring).
    ``worker(key, image, config, chunk)`` runs a chunk in a worker process (``fvp.host.run.api.run_chunk``)."""
    if cluster is None and jobs <= 1:
        yield from _local(session, samples)
        return
    key = hashlib.sha256(session.image).hexdigest() + repr(sorted(session.config.items()))
    total = len(samples) if hasattr(samples, "__len__") else None
    workers = jobs
    if cluster is not None:
        from ..cluster import check_workers, connect

        client, own = connect(cluster)
        try:
            workers = check_workers(client)
            yield from _spread(session, samples, total, workers, chunk, in_flight,
                               _DaskBackend(client, worker, key, session.image, session.config))
        finally:
            if own:
                client.close()
        return
    backend = _PoolBackend(jobs, worker, key, session.image, session.config)
    try:
        yield from _spread(session, samples, total, workers, chunk, in_flight, backend)
    finally:
        backend.close()


def _local(session, samples):
    for i, where, req in _requests(session, samples):
        if isinstance(req, Exception):
            yield i, req
            continue
        if not session.alive:
            session.restart()
        try:
            r = session.run_request(req, where)
        except InferenceError as e:
            yield i, e
            continue
        r.index = i
        yield i, r


def _spread(session, samples, total, workers: int, chunk, in_flight, backend):
    size = chunk or (max(1, min(64, math.ceil(total / (4 * max(workers, 1))))) if total else 16)
    limit = in_flight or 2 * max(workers, 1)
    pending, batch = set(), []

    def drain(block: bool):
        for done in backend.wait(pending, block):
            pending.discard(done)
            for d in backend.result(done):
                yield d["index"], unpack(session.outputs, d)

    for i, where, req in _requests(session, samples):
        if isinstance(req, Exception):
            yield i, req
            continue
        batch.append((i, where, req))
        if len(batch) >= size:
            pending.add(backend.submit(batch))
            batch = []
            while len(pending) >= limit:
                yield from drain(True)
    if batch:
        pending.add(backend.submit(batch))
    while pending:
        yield from drain(True)


class _PoolBackend:
    """Spawned local processes (no BLAS threads inherited mid-state), the program given to each once."""

    def __init__(self, jobs: int, worker, key: str, image: bytes, config: dict):
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        self.ex = ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn"), initializer=_pool_init,
                                      initargs=(worker, key, image, config))
        self.chunks = {}

    def submit(self, batch):
        f = self.ex.submit(_pool_chunk, batch)
        self.chunks[f] = batch
        return f

    def wait(self, pending, block: bool):
        from concurrent.futures import FIRST_COMPLETED, wait

        done, _ = wait(pending, return_when=FIRST_COMPLETED, timeout=None if block else 0)
        return done

    def result(self, f):
        batch = self.chunks.pop(f)
        try:
            return f.result()
        except Exception as e:  # noqa: BLE001 - a worker that died: each of its samples failed, the rest go on
            return [{"index": i, "error": f"{where}: the worker process failed: {type(e).__name__}: {e}",
                     "reason": "crash"} for i, where, _ in batch]

    def close(self):
        self.ex.shutdown(wait=True, cancel_futures=True)


class _DaskBackend:
    def __init__(self, client, worker, key: str, image: bytes, config: dict):
        self.client, self.worker, self.key, self.config = client, worker, key, config
        self.image = client.scatter(image, broadcast=True, hash=True)  # once per worker
        self.chunks = {}

    def submit(self, batch):
        f = self.client.submit(self.worker, self.key, self.image, self.config, batch, pure=False, retries=1)
        self.chunks[f] = batch
        return f

    def wait(self, pending, block: bool):
        from distributed import wait

        return wait(list(pending), return_when="FIRST_COMPLETED").done

    def result(self, f):
        batch = self.chunks.pop(f)
        try:
            return f.result()
        except Exception as e:  # noqa: BLE001 - a lost worker, a killed task: its samples failed
            return [{"index": i, "error": f"{where}: the Dask task failed: {type(e).__name__}: {e}",
                     "reason": "crash"} for i, where, _ in batch]


def run_samples(session, samples, worker, *, cluster=None, jobs: int = 1, progress=None,
                on_error: str = "raise") -> list:
    """``Session.run_many``: the results in sample order."""
    if on_error not in ("raise", "keep"):
        raise ValueError(f"on_error={on_error!r}: expected 'raise' or 'keep'")
    items = list(samples) if not hasattr(samples, "__len__") else samples
    out = [None] * len(items)
    bar = None
    if progress is True:
        from ..cluster import Progress

        bar = Progress(len(items), session.name, unit="inferences", first_after=2.0)
    gen = iter_results(session, items, worker, cluster=cluster, jobs=jobs)
    try:
        for i, r in gen:
            if isinstance(r, Exception) and on_error == "raise":
                raise r
            out[i] = r
            if bar is not None:
                bar.update(n=1, failed=int(isinstance(r, Exception)))
            elif callable(progress):
                progress(i)
    finally:
        gen.close()
        if bar is not None:
            bar.close()
    return out
