#!/usr/bin/env python3
"""Simulation-speed benchmark: see ``fvp/host/bench.py`` (same as ``fvp bench``)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fvp.host.bench import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
