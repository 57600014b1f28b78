#!/usr/bin/env python3
"""Write the board key table of docs/boards.md from the declarations in fvp/boards/schema.py.

``python3 tools/board_keys.py`` rewrites the table between the ``<!-- keys -->`` markers;
``--check`` exits 1 when the page's table differs from the declarations (tests/boards/test_key_table.py runs
the same comparison).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fvp.boards.schema import key_table  # noqa: E402

DOC = ROOT / "docs" / "boards.md"
BEGIN, END = "<!-- keys: written by tools/board_keys.py from fvp/boards/schema.py -->", "<!-- /keys -->"


def with_table(text: str) -> str:
    """``text`` (the page) with the table between the markers replaced by the declarations' table."""
    head, sep, rest = text.partition(BEGIN)
    if not sep or END not in rest:
        raise SystemExit(f"{DOC}: the markers {BEGIN!r} .. {END!r} are missing")
    return f"{head}{BEGIN}\n{key_table()}\n{END}{rest.partition(END)[2]}"


def main(argv: list[str]) -> int:
    text = DOC.read_text()
    new = with_table(text)
    if "--check" in argv:
        if new != text:
            print(f"{DOC.relative_to(ROOT)}: the key table differs from fvp/boards/schema.py; "
                  f"run python3 tools/board_keys.py", file=sys.stderr)
            return 1
        return 0
    if new != text:
        DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
