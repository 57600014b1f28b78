"""``tools/validate_cycles.py --u85``: the Ethos-U85 programs beside Vela's estimate, and cycles that fall as the
MAC count grows (issue 20: "U85 cycles are monotone in MAC size on the same network")."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import validate_cycles  # noqa: E402


def _cycles(text: str, name: str) -> int:
    m = re.search(rf"^{re.escape(name)}\s+ethos-u85-\d+\s+\S+\s+([\d,]+)\s+([\d,]+)", text, re.M)
    assert m, (name, text[-2000:])
    return int(m.group(1).replace(",", ""))


def test_u85_cycles_fall_with_the_mac_count(capsys):
    rc = validate_cycles.u85_report([ROOT / "tests" / "data" / "oracle_u85"])
    out = capsys.readouterr().out
    assert rc == 0, out[-3000:]
    assert "NOT MONOTONE" not in out
    ds = [_cycles(out, f"ds_cnn_u85-{m}") for m in (128, 256, 512)]
    mv1 = [_cycles(out, f"mobilenet_v1_025_u85-{m}") for m in (128, 256, 512)]
    assert ds[0] > ds[1] > ds[2] and mv1[0] > mv1[1] > mv1[2]
    assert "ds_cnn Sram_Only: 128:" in out and "monotone" in out
    # the tutorial's "Corstone-320" MobileNetV2 figure is identified as a U55 run, not used as a U85 anchor
    assert "not a Corstone-320 anchor" in out
