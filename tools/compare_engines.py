#!/usr/bin/env python3
"""Run real runner ELFs both ways, their own code on QEMU and the Python runner in their place, and compare.

For each case the drop-in runs the same command line twice, with ``-C cpu0.engine=qemu`` and
``-C cpu0.engine=python``; the logs are compared line by line with the ``ET_LOG`` prefix (``I [executorch:file:line
function()]``, which names C++ sources on one side and Python ones on the other) removed, and the output files the
semihosting runner writes are compared byte for byte. Prints, per case, the status of each run, whether the outputs
are identical, and the lines that differ (docs/full-system.md explains the differences found).

Usage: ``python3 tools/compare_engines.py [--programs P.pte ...]`` (extra programs for the semihosting runner, each
compiled for its NPU: ethos-u65-256, Dedicated_Sram_384KB).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ELFS = ROOT / "tests" / "data" / "runner_elf"
PREFIX = re.compile(r"^([IEWFD]) \[executorch:[^]]*\] ?", re.M)
RUN_FVP = ["-C", "mps3_board.visualisation.disable-visualisation=1", "-C", "mps3_board.telnetterminal0.start_telnet=0",
           "-C", "mps3_board.uart0.out_file=-", "-C", "mps3_board.uart0.shutdown_on_eot=1"]


def cases(programs: list) -> list:
    """(name, drop-in arguments, files to put in the semihosting cwd, output files to compare)."""
    out = [("u55-128 add bundled", ["-C", "ethosu.num_macs=128", *RUN_FVP, "-a", ELFS / "u55-128_add_bundled.elf"],
            {}, []),
           ("u55-128 add bundled, ETDump", ["-C", "ethosu.num_macs=128", *RUN_FVP, "-a",
                                            ELFS / "u55-128_add_bundled_etdump.elf"], {}, []),
           ("u65-256 mobilenet bundled", ["--flavour=u65", "-C", "ethosu.num_macs=256", *RUN_FVP, "-a",
                                          ELFS / "u65-256_dedicated_sram_mobilenet_bundled.elf"], {}, []),
           ("u65-256 program at 0x38000000", ["--flavour=u65", "-C", "ethosu.num_macs=256", *RUN_FVP, "-a",
                                              ELFS / "u65-256_sram_only_pte_at_0x38000000.elf", "--data",
                                              f"{ELFS / 'add_u65-256_sram_only.pte'}@0x38000000"], {}, [])]
    for prog in [ELFS / "add_u65-256_dedicated_sram_384kb.pte",
                 ELFS / "mobilenet_v1_025_u65-256_dedicated_sram_384kb.pte", *map(Path, programs)]:
        out.append((f"u65-256 semihosting {prog.name}", None, {"program.pte": prog}, ["out-0.bin"]))
    return out


def _inputs(cwd: Path, program: Path) -> list:
    """Input files for the semihosting runner: ones of each input's size (the runner's own default), from fvp
    inspect's description of the program."""
    import json

    p = subprocess.run([sys.executable, "-m", "fvp", "inspect", "--json", str(program)], capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    info = json.loads(p.stdout)
    names = []
    for i, spec in enumerate(info["methods"][0]["inputs"]):
        import numpy as np

        dtype = {"Float": np.float32, "Char": np.int8, "Byte": np.uint8, "Int": np.int32, "Long": np.int64}[spec["dtype"]]
        np.ones(spec["shape"], dtype).tofile(cwd / f"i{i}.bin")
        names += ["-i", f"i{i}.bin"]
    return names


def run(args: list, engine: str, cwd: Path) -> tuple:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "fvp.host.dropin", "-q", "-C", f"cpu0.engine={engine}",
                        *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env, timeout=1800)
    return p.returncode, p.stdout, p.stderr


def normalise(log: str) -> list:
    return [ln for ln in PREFIX.sub(r"\1 ", log).splitlines() if not ln.startswith("Info: fvp")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", nargs="*", default=[], help="more programs for the semihosting runner")
    a = ap.parse_args(argv)
    for name, args, files, outputs in cases(a.programs):
        results = {}
        for engine in ("qemu", "python"):
            with tempfile.TemporaryDirectory(prefix="fvp-compare-") as tmp:
                cwd = Path(tmp)
                for dst, src in files.items():
                    (cwd / dst).write_bytes(Path(src).read_bytes())
                line = args
                if args is None:
                    cmd = " ".join(["executor_runner", "-m", "program.pte", "-o", "out", *_inputs(cwd, cwd / "program.pte")])
                    line = ["--flavour=u65", "-C", "ethosu.num_macs=256", "-C", "mps3_board.uart0.out_file=-",
                            "-C", "cpu0.semihosting-stack_base=0", "-C", "cpu0.semihosting-heap_limit=0",
                            "-C", f"cpu0.semihosting-cwd={cwd}", "-C", f"cpu0.semihosting-cmd_line={cmd}",
                            "-a", ELFS / "u65-256_semihosting.elf"]
                rc, out, err = run(line, engine, cwd)
                results[engine] = (rc, normalise(out), {o: (cwd / o).read_bytes() if (cwd / o).exists() else None
                                                        for o in outputs}, err)
        (rq, lq, oq, eq), (rp, lp, op, ep) = results["qemu"], results["python"]
        same_out = oq == op
        diff = [d for d in difflib.unified_diff(lq, lp, "qemu", "python", n=0, lineterm="")
                if not d.startswith(("---", "+++", "@@"))]
        print(f"== {name}: exit status qemu {rq}, python {rp}; outputs "
              f"{'identical' if same_out else 'DIFFER'}{' (none written)' if not outputs else ''}; "
              f"{len(lq)} log lines, {len(diff)} differing")
        for d in diff:
            print(f"   {d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
