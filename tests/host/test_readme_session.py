"""The README's fvp.Session example runs and prints what the README shows (so neither can drift)."""

import os
import re
import subprocess
import sys

from testutil import ROOT

INTRO = "An accuracy on a real data set"


def test_readme_session_example_prints_what_the_readme_shows():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.compile(r"^```([^\n]*)\n(.*?)^```", re.S | re.M).finditer(text, text.index(INTRO))
    (lang, code), (_, shown) = next(blocks).groups(), next(blocks).groups()
    assert lang == "python" and "fvp.Session" in code
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == shown.splitlines()
