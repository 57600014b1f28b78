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
