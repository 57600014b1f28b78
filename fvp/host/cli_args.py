"""Command-line values checked where argparse reads them, one line each (exit status 2).

``--timelimit nan`` would mean no limit and ``--cyclelimit -1`` a limit reached at once; both are refused:

- ``seconds``: a finite number of seconds > 0 (``--timelimit``, ``--cpulimit``, ``--simlimit``), at most
  ``MAX_SECONDS``;
- ``cycles``: a whole number of cycles >= 1 (``--cyclelimit``; ``0x`` and ``_`` spellings accepted), below 2^63.

``OneLineParser`` is an ``ArgumentParser`` whose usage errors are one ``fvp: error: ...`` line, not the usage
block (its subparsers inherit it). ``add_board_options`` gives a command the board options every ``fvp`` command
spells the same way (``-c``, ``--target``, ``-C``), and ``load_for`` loads the board they name.
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


def add_board_options(p: argparse.ArgumentParser, multiple: bool = False) -> None:
    if multiple:
        p.add_argument("-c", "--config", dest="boards", action="append", metavar="BOARD", default=[],
                       help="a board to compare (repeat); names from `fvp boards` or YAML paths")
    else:
        p.add_argument("-c", "--config", dest="board", metavar="BOARD", default=None,
                       help="board: a name from `fvp boards` or a path to a YAML file (default: default)")
    p.add_argument("--target", metavar="NPU", default=[] if multiple else None,
                   action="append" if multiple else "store",
                   help="shortcut for the default board of an NPU: ethos-u55-32/64/128/256, ethos-u65-256/512 "
                        "(Corstone-300), ethos-u85-128/256/512/1024/2048 (Corstone-320)"
                        + ("; repeat to compare several" if multiple else ""))
    p.add_argument("-C", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                   help="override a board key (firmware.allocator=minimal, npu.variant=ethos-u55-256, "
                        "firmware.pools.method.size=1MiB) or pass an FVP parameter (ethosu.num_macs=256, "
                        "mps3_board.uart0.out_file=-, mps3_board.uart0.shutdown_on_eot=1; visualisation "
                        "and telnet parameters are accepted and ignored)")


def load_for(args):
    """The board ``-c``/``--target`` and ``-C`` name (``--target`` is the default board of that NPU)."""
    from ..boards import ConfigProblems, board_for_target, load_board

    board = getattr(args, "board", None)
    if getattr(args, "target", None):
        if board is not None:
            raise ConfigProblems(["use either -c/--config or --target, not both"])
        board = board_for_target(args.target)
    return load_board(board, args.overrides)
