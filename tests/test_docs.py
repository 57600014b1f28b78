"""README.md and docs/ say what the tools do (issue 30 item 9): every command line of their code blocks parses with
the real parser (``fvp`` and each subcommand, ``fvp sweep``/``fvp bench``, the FVP drop-ins, ``tools/run.sh``);
every ``tools/*.py`` a page shows as a command exists and runs as one (executable, with a shebang), or is shown with
``python``; ``fvp --help`` lists every subcommand the pages use; the examples under docs/ load."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex

import pytest

from testutil import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DROPINS = ("FVP_Corstone_SSE-300_Ethos-U55", "FVP_Corstone_SSE-300_Ethos-U65", "FVP_Corstone_SSE-320")


def _code_lines(page):
    """(line number, command line) of every fenced code block of ``page``, continuation lines joined."""
    text = page.read_text()
    out, inside, pending, start = [], False, "", 0
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            inside, pending = not inside, ""
            continue
        if not inside:
            continue
        line = line.strip()
        if line.startswith("$ "):
            line = line[2:]
        if pending:
            line, start = pending + " " + line, start
        else:
            start = n
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        pending = ""
        out.append((start, line))
    return out


def _words(line):
    """The words of a shell command line up to its first redirection, pipe or list operator."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return None
    for i, w in enumerate(words):
        if w in (">", ">>", "2>", "2>&1", "|", "&&", "||", ";", "<") or w.startswith((">", "2>")):
            return words[:i]
    return words


def _commands():
    """Every line that is a command of ours: (page:line, argv)."""
    cmds = []
    for page in PAGES:
        for n, line in _code_lines(page):
            w = _words(line)
            if not w:
                continue
            if w[0] in ("python", "python3") and len(w) > 2 and w[1] == "-m" and w[2] in ("fvp", "fvp.host.dropin"):
                w = (["fvp"] if w[2] == "fvp" else ["python -m fvp.host.dropin"]) + w[3:]
            first = w[0]
            if any(x.endswith(":") for x in w[:3]):  # a line of output ("fvp sweep mobilenet: 27/27 points ...")
                continue
            if first == "fvp" and (len(w) == 1 or re.fullmatch(r"-{0,2}[a-z][\w-]*", w[1])):
                cmds.append((f"{page.name}:{n}", w))
            elif first in DROPINS or first == "python -m fvp.host.dropin" or first == "tools/run.sh":
                cmds.append((f"{page.name}:{n}", w))
            elif re.fullmatch(r"(python3? )?tools/\w+\.py", " ".join(w[:2]) if first.startswith("python") else first):
                cmds.append((f"{page.name}:{n}", w))
    return cmds


COMMANDS = _commands()


def _parse(argv):
    """Parse ``argv`` with the command's own parser; the parser's error text, or ``None`` when it parses."""
    from fvp.host import bench, cli, tutorial
    from fvp.host.dropin.params import build_parser as dropin_parser
    from fvp.host.sweep.command import build_parser as sweep_parser

    first, args = argv[0], argv[1:]
    if first == "fvp":
        parser = (sweep_parser() if args[:1] == ["sweep"] else bench.build_parser() if args[:1] == ["bench"]
                  else cli.build_parser())
        if args[:1] in (["sweep"], ["bench"]):
            args = args[1:]
    elif first == "tools/run.sh":
        parser = tutorial.build_parser("tools/run.sh")
    else:
        flavour = [a for a in args if a.startswith("--flavour=")]
        binary = first if first in DROPINS else {"--flavour=u65": DROPINS[1], "--flavour=u85": DROPINS[2]}.get(
            flavour[0] if flavour else "", DROPINS[0])
        parser = dropin_parser(binary)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(args)
    except SystemExit as e:
        if e.code not in (0, None):
            return err.getvalue().strip() or f"exit {e.code}"
    return None


def test_the_pages_show_commands():
    places = {p.split(":")[0] for p, _ in COMMANDS}
    assert len(COMMANDS) >= 50 and {"README.md", "tutorial.md", "sweep.md", "tflm.md"} <= places


@pytest.mark.parametrize("where, argv", [c for c in COMMANDS if not c[1][0].startswith(("tools/", "python"))
                                         or c[1][0] == "python -m fvp.host.dropin" or c[1][0] == "tools/run.sh"],
                         ids=lambda v: v if isinstance(v, str) else None)
def test_every_command_line_parses(where, argv):
    assert _parse(argv) is None, f"{where}: {shlex.join(argv)}: {_parse(argv)}"


def test_every_tool_a_page_runs_is_there_and_runs_as_shown():
    shown = [(where, argv) for where, argv in COMMANDS if argv[0].startswith(("tools/", "python"))
             and argv[0] not in ("tools/run.sh", "python -m fvp.host.dropin")]
    assert shown
    for where, argv in shown:
        script = argv[1] if argv[0].startswith("python") else argv[0]
        path = ROOT / script
        assert path.is_file(), f"{where}: {script} does not exist"
        if not argv[0].startswith("python"):  # run as a command: it must be one
            assert os.access(path, os.X_OK), f"{where}: {script} is shown as a command but is not executable"
            assert path.read_text().startswith("#!"), f"{where}: {script} has no #! line"


def test_every_tool_named_as_a_command_in_the_text_runs_as_one():
    """`tools/fuzz.py --cases 10000` in a sentence is a command too: executable, with a shebang."""
    spans = [(page.name, m.group(1)) for page in PAGES
             for m in re.finditer(r"`(tools/\w+\.py)\b[^`]*`", page.read_text())]
    assert spans
    for where, script in spans:
        path = ROOT / script
        assert path.is_file(), f"{where}: {script} does not exist"
        assert os.access(path, os.X_OK) and path.read_text().startswith("#!"), f"{where}: {script} is not a command"


def test_fvp_help_lists_every_command_the_pages_use():
    from fvp.host import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.build_parser().parse_args(["--help"])
    used = {argv[1] for _, argv in COMMANDS if argv[0] == "fvp" and len(argv) > 1 and not argv[1].startswith("-")}
    listed = set(re.findall(r"^    (\w+)\s", out.getvalue(), re.M))
    assert used <= listed | {"sweep", "bench"}, used - listed
    assert {"sweep", "bench"} <= listed
    text = out.getvalue()
    assert "Corstone-300" in text and "Corstone-320" in text and "Ethos-U85" in text and "TFLite Micro" in text


def test_the_pyproject_description_names_what_the_package_runs():
    import tomllib

    desc = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["description"]
    for word in ("Corstone-300", "Corstone-320", "Ethos-U55/U65", "Ethos-U85", "ExecuTorch", "TFLite Micro"):
        assert word in desc, word


@pytest.mark.parametrize("path", sorted((ROOT / "docs").rglob("*.yaml")), ids=lambda p: p.name)
def test_the_examples_under_docs_load(path):
    """Every example file under docs/ is valid (the sweeps: tests/host/test_sweep.py runs their plans)."""
    from fvp.host.sweep.plan import check_axes
    from fvp.host.sweep.spec import load_sweep

    spec = load_sweep(str(path))
    check_axes(spec)
    assert spec.points()
