"""The one-way rules (static imports): firmware/ never imports fvp/, fvp/ never imports firmware/, and the
neutral interface tables in hwdesc/ import neither (both halves may import hwdesc)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imports(folder: Path):
    for path in folder.rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    yield path, a.name
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                yield path, node.module


def _offenders(folder: Path, forbidden: str):
    return [(str(p), m) for p, m in _imports(folder) if m == forbidden or m.startswith(forbidden + ".")]


def test_firmware_never_imports_fvp():
    assert _offenders(ROOT / "firmware", "fvp") == []


def test_fvp_never_imports_firmware():
    assert _offenders(ROOT / "fvp", "firmware") == []


def test_hwdesc_imports_neither_half():
    assert _offenders(ROOT / "hwdesc", "fvp") == []
    assert _offenders(ROOT / "hwdesc", "firmware") == []


def test_both_halves_read_the_interface_tables():
    # the neutral package is what keeps the rule: the machine and the firmware take the same facts from it
    assert any(m.startswith("hwdesc") for _, m in _imports(ROOT / "fvp"))
    assert any(m.startswith("hwdesc") for _, m in _imports(ROOT / "firmware"))


def test_scanner_catches_both_import_forms(tmp_path):
    (tmp_path / "a.py").write_text("import fvp.bus\n")
    (tmp_path / "b.py").write_text("from fvp.npu import device\nimport numpy\n")
    (tmp_path / "c.py").write_text("import fvpx\nfrom . import fvp\n")
    found = sorted(m for _, m in _offenders(tmp_path, "fvp"))
    assert found == ["fvp.bus", "fvp.npu"]
