"""The README's sample ``fvp run`` log is what ``fvp run`` prints, so it cannot drift from the code.

The block is the first fenced block after the sentence introducing ``fvp run`` with no arguments. Every line of
it except ``...`` (elided output) must be an output line, verbatim and in the same order, and lines not
separated by ``...`` must be consecutive in the output. Trailing blanks are ignored on
both sides: the runner ends some log lines with a space, which Markdown does not show. The line numbers in the
``[executorch:file:line function()]`` prefixes are compared as digits, not values: they name the Python firmware's
own source lines and move with every edit of it (the file and the function must match).
"""

import re

from testutil import ROOT, run_fvp

INTRO = "`fvp run` with no arguments prints"


def readme_run_block() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(INTRO)
    m = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M).search(text, start)
    assert m, "no fenced block after the fvp run sentence"
    return m.group(1).splitlines()


def runs(lines: list[str]) -> list[list[str]]:
    """The block's lines split at ``...``: each run is consecutive output."""
    out, cur = [], []
    for line in lines:
        if line == "...":
            out, cur = out + [cur] if cur else out, []
        else:
            cur.append(line)
    return out + [cur] if cur else out


def find_run(got: list[str], run: list[str], start: int) -> int:
    for i in range(start, len(got) - len(run) + 1):
        if got[i:i + len(run)] == run:
            return i
    return -1


_LINE_NO = re.compile(r"^(\w \[executorch:[^:\]]+:)\d+ ")


def _normal(line: str) -> str:
    return _LINE_NO.sub(r"\1N ", line.rstrip())


def test_readme_sample_log_is_what_fvp_run_prints():
    block = runs([_normal(ln) for ln in readme_run_block()])
    assert sum(map(len, block)) >= 10, "the README's sample block is nearly empty"
    rc, out, err = run_fvp("run")
    assert rc == 0, err + out
    got = [_normal(ln) for ln in out.splitlines()]
    pos = 0
    for run in block:
        at = find_run(got, run, pos)
        if at < 0:  # name the first line that is not where the README puts it
            missing = next((ln for ln in run if ln not in got[pos:]), None)
            assert False, (f"README block drifted from `fvp run`'s output: "
                           + (f"{missing!r} is not printed" if missing else
                              f"these lines are not consecutive (add '...' between them): {run!r}")
                           + f"\noutput:\n{out}")
        pos = at + len(run)
