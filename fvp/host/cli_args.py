"""Command-line values checked where argparse reads them, one line each (exit status 2).

``--timelimit nan`` would mean no limit and ``--cyclelimit -1`` a limit reached at once; both are refused:

- ``seconds``: a finite number of seconds > 0 (``--timelimit``, ``--cpulimit``, ``--simlimit``), at most
  ``MAX_SECONDS``;
- ``cycles``: a whole number of cycles >= 1 (``--cyclelimit``; ``0x`` and ``_`` spellings accepted), below 2^63.

``OneLineParser`` is an ``ArgumentParser`` whose usage errors are one ``fvp: error: ...`` line, not the usage
block (its subparsers inherit it).
"""

from __future__ import annotations

import argparse
import math
import sys

MAX_SECONDS = 10 ** 9  # about 32 years
MAX_CYCLES = (1 << 63) - 1


def seconds(text: str) -> float:
    try:
        x = float(str(text).replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(x) or x <= 0 or x > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a finite number of seconds > 0 and <= {MAX_SECONDS}")
    return x


def cycles(text: str) -> int:
    t = str(text).strip().replace("_", "")
    try:
        n = int(t, 0) if t[:2].lower() in ("0x", "0o", "0b") else int(t, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of cycles") from None
    if not 1 <= n <= MAX_CYCLES:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number of cycles >= 1 and < 2^63")
    return n


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        prog = self.prog.split()[0] if self.prog else "fvp"
        print(f"{prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)
