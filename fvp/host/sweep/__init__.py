"""``fvp sweep``: design-space exploration of one or more programs over board keys, locally or on Dask.

A sweep file (YAML, ``spec.py``) names programs, a base board and axes over any board key; ``plan.py`` expands
the axes into points, picks for each point the compile of the program that was made for that point's NPU
configuration (or compiles it with ExecuTorch, or says it needs a compile), ``point.py`` runs one point
(``fvp.host.compare.run_board``: the full platform, firmware and NPU timing model) and turns it into a flat row,
``backends.py`` runs the points on a local process pool or a Dask cluster with resume and progress,
``results.py`` writes CSV / JSON lines / Parquet, the terminal summary and the plots, ``command.py`` is the
command line. See docs/sweep.md.
"""

from .spec import SweepSpec, load_sweep  # noqa: F401
