#!/usr/bin/env python3
"""One fvp.Session against separate `fvp run -i` processes: CPU seconds, wall seconds, and equal outputs.

    tools/session_vs_processes.py [PROGRAM] [--samples 100] [--processes 10]

Runs ``--samples`` random inputs (seeded normal values, or integers for an integer input) through one
``fvp.Session`` in a new Python process (its imports and boot included), then ``--processes`` of the same
samples through separate ``fvp run PROGRAM -i x.npy -o out`` processes (a ``.bpte``'s plain program, as ``-i``
wants), and prints the CPU and wall seconds of each side and how many of the separate runs' outputs equal the
session's byte for byte. Exit status 1 when one differs. Default program: the corpus's ds_cnn_u55-128.bpte.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_SESSION = """
import sys, numpy as np, fvp
program, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with fvp.Session(program) as s:
    spec = s.inputs[0]
    rng = np.random.default_rng(29)
    if spec.dtype.kind == "f":
        xs = rng.standard_normal((n,) + spec.shape).astype(spec.dtype)
    else:
        info = np.iinfo(spec.dtype)
        xs = rng.integers(info.min, info.max + 1, (n,) + spec.shape).astype(spec.dtype)
    np.save(out + "/xs.npy", xs)
    results = s.run_many(xs)
open(out + "/session.bin", "wb").write(b"".join(r.raw_outputs[0] for r in results))
"""


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("program", nargs="?", default=str(ROOT / "tests" / "data" / "corpus" / "ds_cnn_u55-128.bpte"))
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--processes", type=int, default=10)
    a = ap.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory(prefix="fvp-session-") as work:
        c0, t0 = _children_cpu(), time.perf_counter()
        subprocess.run([sys.executable, "-c", _SESSION, a.program, str(a.samples), work], check=True, env=env)
        s_cpu, s_wall = _children_cpu() - c0, time.perf_counter() - t0
        import numpy as np

        xs = np.load(Path(work) / "xs.npy")
        session = (Path(work) / "session.bin").read_bytes()
        per = len(session) // a.samples
        program = Path(a.program)
        data = program.read_bytes()
        if data[4:6] == b"BP":  # -i takes the plain program
            sys.path.insert(0, str(ROOT))
            from fvp.host.programs.zoo import bundled_program_range

            off, size = bundled_program_range(data)
            program = Path(work) / (program.stem + ".pte")
            program.write_bytes(data[off:off + size])
        same = 0
        picks = [round(k * (a.samples - 1) / max(a.processes - 1, 1)) for k in range(a.processes)]
        c0, t0 = _children_cpu(), time.perf_counter()
        for i in picks:
            np.save(Path(work) / f"x{i}.npy", xs[i])
            subprocess.run([sys.executable, "-m", "fvp", "run", str(program), "-i", f"{work}/x{i}.npy", "-o",
                            f"{work}/o{i}", "-C", "devices.uart0.out_file=/dev/null"], check=True, env=env,
                           capture_output=True)
            same += (Path(work) / f"o{i}-0.bin").read_bytes() == session[i * per:(i + 1) * per]
        p_cpu, p_wall = _children_cpu() - c0, time.perf_counter() - t0
    print(f"{Path(a.program).name}: {a.samples} inferences in one fvp.Session process: {s_cpu:.2f} s CPU, "
          f"{s_wall:.2f} s wall (imports and boot included)")
    print(f"{a.processes} separate `fvp run -i` processes: {p_cpu:.2f} s CPU, {p_wall:.2f} s wall; "
          f"{same} of {a.processes} outputs equal to the session's")
    return 0 if same == a.processes else 1


if __name__ == "__main__":
    sys.exit(main())
