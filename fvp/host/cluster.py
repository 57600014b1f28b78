"""What every command that spreads work over processes or a Dask cluster shares: connecting, checking the
workers, one thread per worker, progress.

``fvp sweep`` (design points) and ``fvp run --inputs`` (a data set) both ship a program once per worker and
run many pieces of work on it. Why Dask distributed and not Ray: a piece of work is a plain Python function on
a few hundred KiB of bytes, which is exactly Dask's ``client.submit``; ``distributed`` is pure Python (a 10 s
``pip install``, no daemon, no shared-memory object store), its ``LocalCluster`` starts two loopback workers
in a couple of seconds on two cores, and a multi-node cluster is ``dask scheduler`` plus ``dask worker
ADDRESS`` on each node. Ray brings a C++ raylet, a GCS and an object store per node (hundreds of MB), which
this workload does not need.

- ``connect(address)``: a ``distributed.Client`` for ``tcp://host:port``, or the client/cluster given;
- ``check_workers(client)``: every worker runs this fvp with the same board tables (results must not depend
  on where a piece ran), each limited to one BLAS thread (the cluster already uses every core);
- ``Progress``: tqdm's bar on a terminal when tqdm is installed (the ``progress`` extra), otherwise a plain
  line every few seconds.
"""

from __future__ import annotations

import os
import sys
import time

from ..errors import ConfigProblems

# one BLAS / OpenMP thread per worker process: the pool already uses every core
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


_CONFIG_HASH: str | None = None


def config_dir_hash() -> str:
    """A hash of every shipped board file: part of a result's identity (a changed board table changes results)."""
    global _CONFIG_HASH
    if _CONFIG_HASH is None:
        import hashlib
        from pathlib import Path

        from ..boards import CONFIG_DIR

        h = hashlib.sha256()
        for p in sorted(Path(CONFIG_DIR).glob("*.yaml")):
            h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
        _CONFIG_HASH = h.hexdigest()[:16]
    return _CONFIG_HASH


def worker_info() -> dict:
    """Run on each worker: its fvp version and board tables, after its thread limits and imports are set."""
    import fvp

    for v in THREAD_VARS:
        os.environ.setdefault(v, "1")
    import fvp.machine.platform  # noqa: F401  (warm: the simulator's imports, once per worker)

    return {"version": fvp.__version__, "config": config_dir_hash()}


def connect(address):
    """``(client, own)``: a ``distributed.Client`` for ``tcp://host:port`` (a scheduler) or an existing
    client/cluster (``own``: this call made the client, so the caller closes it)."""
    try:
        from distributed import Client
    except ImportError:
        raise ConfigProblems(["--cluster needs Dask distributed: pip install 'fvp-corstone300[cluster]'"]) from None
    if isinstance(address, str) and address.startswith("ray://"):
        raise ConfigProblems([f"--cluster {address}: this simulator runs on Dask distributed, not Ray "
                              f"(docs/sweep.md says why); give a Dask scheduler address tcp://host:port"])
    if hasattr(address, "submit"):  # a Client
        return address, False
    if hasattr(address, "scheduler_address"):  # a LocalCluster or another cluster object
        return Client(address), True
    return Client(address, timeout="30s"), True


def check_workers(client) -> int:
    """Refuse a cluster whose workers run another fvp or other board tables; returns the number of workers."""
    from .. import __version__

    info = client.run(worker_info)
    want = {"version": __version__, "config": config_dir_hash()}
    bad = {w: i for w, i in info.items() if i != want}
    if bad:
        w, i = next(iter(bad.items()))
        raise ConfigProblems([f"--cluster: worker {w} runs fvp {i['version']} with board tables {i['config']}, "
                              f"this is fvp {__version__} with {want['config']}: install the same fvp on every "
                              f"worker (results must not depend on where a piece of work ran)"])
    return len(info)


class Progress:
    """tqdm's bar on a terminal when tqdm is installed; otherwise a plain line every few seconds (the first one
    ``first_after`` seconds after the start). ``unit`` names what is counted in the plain line."""

    def __init__(self, total: int, desc: str, out=None, plain: bool | None = None, unit: str = "points",
                 first_after: float = 0.0, not_runnable: int = 0):
        """``total`` to run; ``not_runnable``: what planning could not run (a sweep's needs-compile, cannot-run and
        error rows), counted among those not ok from the first line on."""
        self.total, self.n, self.failed = total, 0, 0
        self.not_runnable = not_runnable
        self.out = out or sys.stderr
        self.t0 = time.perf_counter()
        self.last = self.t0 - 2.0 + first_after
        self.bar = None
        self.unit = unit
        if not plain and total:
            try:
                from tqdm import tqdm

                if getattr(self.out, "isatty", lambda: False)():
                    self.bar = tqdm(total=total, desc=desc, unit=unit[:3], file=self.out, dynamic_ncols=True)
            except ImportError:
                pass
        self.desc = desc

    def update(self, row: dict | None = None, n: int = 1, failed: int | None = None) -> None:
        """``n`` more finished (a row's ``status`` other than ``ok`` counts as failed, or ``failed`` of them)."""
        self.n += n
        if failed is None:
            failed = int(row is not None and row.get("status") not in ("ok",))
        self.failed += failed
        if self.bar is not None:
            self.bar.set_postfix(not_ok=self.failed + self.not_runnable, refresh=False)
            self.bar.update(n)
            return
        now = time.perf_counter()
        if now - self.last >= 2.0 or (self.n == self.total and self.last > self.t0):
            self.last = now
            rate = self.n / max(now - self.t0, 1e-9) * 60
            not_ok = (f"{self.failed + self.not_runnable} not ok: {self.failed} of those run, {self.not_runnable} "
                      f"not runnable" if self.not_runnable else f"{self.failed} not ok")
            self.out.write(f"{self.desc}: {self.n}/{self.total} {self.unit} run ({not_ok}), "
                           f"{rate:.1f} {self.unit}/min\n")
            self.out.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.t0
