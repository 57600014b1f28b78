"""The runtime profile ``executorch-main-cff6f4dd``: its log, line by line, against the format strings of
ExecuTorch main's C++ sources at that commit, for real programs through the FVP drop-in.

``tests/data/executorch_main/log_formats.json`` holds every ``ET_LOG``/``ET_CHECK_MSG``/``printf`` format of
the runner, its perf monitor, the Ethos-U delegate and ``method.cpp`` at commit cff6f4dd32e6, written by
``tools/et_log_formats.py`` from the sources; when an ExecuTorch git directory is at hand
(``EXECUTORCH_GIT_DIR``) a test rebuilds the file from it and compares. Every line the runner prints must match
one of those formats (an ``ET_LOG`` line one of its level, a printf'd line one of the printf formats, an
``F`` check line one of the checks); every message of the profile must be one of them too.
"""

import json
import os
import re
import string
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from testutil import CORPUS, DATA, ROOT, run_fvp
from test_dropin import make_elf, needs_elf

PROFILE = "executorch-main-cff6f4dd"
FORMATS = DATA / "executorch_main" / "log_formats.json"
GIT_DIR = os.environ.get("EXECUTORCH_GIT_DIR", "/work/.mirror/pytorch+executorch/repo")
DROPIN = "fvp.host.dropin"
_SPEC = re.compile(r"%([-+ #0]*)(\d+|\*)?(?:\.(\d+))?(hh|h|ll|l|z|j|t|L)?([diouxXfFeEgGcsp%])")
_PREFIX = re.compile(r"^([DIEF]) \[executorch:[\w.]+:\d+ \w+\(\)\] (.*)$", re.S)
_CHECK = re.compile(r"^In function \w+\(\), assert failed \(.*?\): (.*)$", re.S)


def to_regex(fmt: str) -> re.Pattern:
    """A printf format as a regular expression of what newlib prints for it."""
    out, pos = [], 0
    for m in _SPEC.finditer(fmt):
        out.append(re.escape(fmt[pos:m.start()]))
        conv = m.group(5)
        out.append({"%": "%", "d": r"-?\d+", "i": r"-?\d+", "u": r"\d+", "o": "[0-7]+", "x": "[0-9a-f]+",
                    "X": "[0-9A-F]+", "c": ".", "s": ".*", "p": "0x[0-9a-f]+"}.get(
            conv, r"-?(?:\d+(?:\.\d*)?(?:e[-+]\d+)?|inf|nan)"))
        pos = m.end()
    out.append(re.escape(fmt[pos:]))
    return re.compile("".join(out) + r"\Z", re.S)


def load_formats() -> dict:
    data = json.loads(FORMATS.read_text())
    by_kind: dict = {}
    for r in data["formats"]:
        by_kind.setdefault(r["kind"], []).append((to_regex(r["format"]), r))
    return by_kind


KINDS = load_formats()


def source_of(kind: str, message: str):
    """The source record whose format ``message`` matches, or None."""
    for rx, rec in KINDS.get(kind, []):
        if rx.match(message):
            return rec
    return None


# drop-in and FVP lines around the runner's UART output (not the runner's)
_HOST = ("Info: ", "[warning ]", "Warning: ")


def unmatched(out: str) -> list[str]:
    """The runner's lines in ``out`` that match no format of main's sources."""
    bad = []
    for line in out.split("\n"):
        if not line or line.startswith(_HOST):
            continue
        m = _PREFIX.match(line)
        if m:
            level, msg = m.groups()
            check = _CHECK.match(msg) if level == "F" else None
            if source_of(level, msg) is None and not (check and source_of("check", check.group(1))):
                bad.append(line)
        elif source_of("printf", line + "\n") is None:
            bad.append(line)
    return bad


def messages(out: str) -> list[str]:
    """The messages of the runner's ``ET_LOG`` lines, in order."""
    return [m.group(2) for m in map(_PREFIX.match, out.split("\n")) if m]


def dropin(*args, cwd=None):
    return run_fvp("-C", f"firmware.runtime={PROFILE}", *args, prog=DROPIN, cwd=cwd)


SEMI = ["-C", "ethosu.num_macs=128", "-C", "mps3_board.visualisation.disable-visualisation=1",
        "-C", "mps3_board.telnetterminal0.start_telnet=0", "-C", "mps3_board.uart0.out_file=-",
        "-C", "cpu0.semihosting-enable=1", "-C", "cpu0.semihosting-stack_base=0",
        "-C", "cpu0.semihosting-heap_limit=0", "-C", "ethosu.extra_args=--fast"]


def harness_run(tmp_path, cmd_line, *extra):
    """The pytest harness's command line (runner_utils.run_corstone), the flags in its order."""
    return dropin(*SEMI, "-C", f"cpu0.semihosting-cwd={tmp_path}", "-C", f"cpu0.semihosting-cmd_line='{cmd_line}'",
                  "-a", make_elf(tmp_path / "semi.elf"), "--timelimit", "600", *extra, cwd=tmp_path)


def add_q_inputs(tmp_path):
    (tmp_path / "program.pte").write_bytes((CORPUS / "add_q.pte").read_bytes())
    np.array([0.25], np.float32).tofile(tmp_path / "i0.bin")
    np.array([0.5], np.float32).tofile(tmp_path / "i1.bin")


def test_formats_file_names_the_profiles_commit():
    sys.path.insert(0, str(ROOT))
    from firmware.executorch.profiles import PROFILES

    assert json.loads(FORMATS.read_text())["commit"] == PROFILES[PROFILE]["commit"]


@pytest.mark.run_fvp_sh  # needs ExecuTorch's sources at the profile's commit; deselected without (tests/conftest.py)
def test_formats_file_is_read_from_main_sources():
    """The committed formats are what tools/et_log_formats.py reads from the sources at the profile's commit."""
    sys.path.insert(0, str(ROOT))
    from firmware.executorch.profiles import PROFILES

    commit = PROFILES[PROFILE]["commit"]
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "et_log_formats.py"), "--git-dir", GIT_DIR,
                        "--commit", commit], capture_output=True, text=True, check=True)
    assert json.loads(p.stdout) == json.loads(FORMATS.read_text())


# messages of the profile with no counterpart in the files read: the "minimal" allocator this simulator offers,
# and the kernel lookup's message (ExecuTorch's operator registry, not one of those files)
OWN = {"stats_unavailable", "op_not_found"}


def test_every_message_of_the_profile_is_a_format_of_main():
    sys.path.insert(0, str(ROOT))
    from firmware.executorch.profiles import PROFILES

    profile = PROFILES[PROFILE]
    strings = {"path", "name", "a", "b", "pool", "kind", "op", "data", "flag", "magic"}
    samples = [{"label": label, "text": text, "events": ", ".join(f"ETHOSU_PMU_{n}" for n in events)}
               for label, text in (("Input", "true"), ("Output", "true ")) for events in profile["pmu_events"].values()]
    missing = []
    for key, value in profile["messages"].items():
        if value is None or key in OWN:
            continue
        for fmt in (value if isinstance(value, tuple) else (value,)):
            fields = {f: s for _, f, s, _ in string.Formatter().parse(fmt) if f}
            for given in samples:
                sample = {f: (given[f] if f in given else "x.bin" if f in strings else 2.5 if s and s[-1] == "f"
                              else 7) for f, s in fields.items()}
                text = fmt.format(**sample)
                if text.endswith("\n"):
                    ok = source_of("printf", text)
                else:
                    ok = any(source_of(k, text) for k in ("I", "E", "F", "D", "check"))
                if not ok:
                    missing.append((key, text))
    assert not missing, f"profile messages that are not in main's sources: {missing}"


@needs_elf
def test_semihosting_run_of_the_test_harness(tmp_path):
    add_q_inputs(tmp_path)
    rc, out, err = harness_run(tmp_path, "executor_runner -m program.pte -o out -i i0.bin -i i1.bin",
                               "-C", "firmware.options.etdump=true")
    assert rc == 0, err + out
    assert unmatched(out) == []
    msgs = messages(out)
    assert msgs[:6] == ["Running executor with parameter:", "   executor_runner", "   -m program.pte", "   -o out",
                        "   -i i0.bin", "   -i i1.bin"]
    # the files are read in main(), in argv order, inputs counted from 1, before the program is looked at
    assert msgs[6:9] == ["Reading pte model from file program.pte", "Reading input tensor 1 from file i0.bin",
                         "Reading input tensor 2 from file i1.bin"]
    assert msgs[9].startswith("PTE @ 0x")
    loaded = msgs.index("model_pte_loaded_size:      3712 bytes.")
    # 3712 + 4 + 4 bytes, each file 4-byte aligned in the 60 MiB pool
    assert msgs[loaded + 1] == "input_file_allocator_used: 3720 / 62914560 free: 62910840 ( used: 0 % ) "
    assert msgs[loaded + 2].startswith("method_allocator_used:")
    assert "Writing output to file: out-0.bin" in msgs and "Writing etdump to file: etdump.bin" in msgs
    assert "Output[" not in out and "\x04" not in out  # no element lines, _exit(0) instead of the EOT byte
    assert msgs[-1] == "Program complete, exiting."
    (y,) = struct.unpack("<f", (tmp_path / "out-0.bin").read_bytes())
    assert abs(y - 0.75) < 2 / 255
    assert (tmp_path / "etdump.bin").stat().st_size > 0


@needs_elf
def test_semihosting_bundle_run_of_run_fvp_sh(tmp_path):
    """run_fvp.sh --bundle: the dummy input is read (input 1) and ignored; the bundle's own inputs are checked."""
    (tmp_path / "m.bpte").write_bytes((CORPUS / "add_u55-128.bpte").read_bytes())
    (tmp_path / "fvp_dummy_input.bin").write_bytes(bytes(4))
    rc, out, err = harness_run(tmp_path, "executor_runner -m m.bpte -i fvp_dummy_input.bin -o out")
    assert rc == 0, err + out
    assert unmatched(out) == []
    msgs = messages(out)
    assert "Reading input tensor 1 from file fvp_dummy_input.bin" in msgs
    assert "TEST: BundleIO index[0] Test_result: PASS" in msgs


@needs_elf
@pytest.mark.parametrize("cmd_line, lines", [
    ("executor_runner -m program.pte -o out",
     ["F Not right number of parameters!", "F app -m model.pte -i input.bin [-i input2.bin] -o output_basename",
      "F Exiting!"]),
    ("executor_runner -m program.pte -i i0.bin -i nosuch.bin -o out",
     ["F Could not open file nosuch.bin (errno: 2) for reading, exiting!",
      "E Reading input tensor 2 from file nosuch.bin failed."]),
    ("executor_runner -m program.pte -i i0.bin -i i1.bin", ["F Missing required -o output_basename"]),
    ("executor_runner -m program.pte -i i0.bin -o out",
     ["E Wrong number of inputs allocated compared to method", "F Failed to prepare inputs 0x12"]),
])
def test_semihosting_failures(tmp_path, cmd_line, lines):
    add_q_inputs(tmp_path)
    rc, out, err = harness_run(tmp_path, cmd_line)
    assert rc == 1, err + out
    assert unmatched(out) == []
    got = []
    for m in filter(None, map(_PREFIX.match, out.split("\n"))):
        level, msg = m.groups()
        check = _CHECK.match(msg) if level == "F" else None
        got.append(f"{level} {check.group(1) if check else msg}")
    for want in lines:
        assert want in got, (want, got)


@needs_elf
def test_data_mode_of_an_elf_built_with_ET_MODEL_PTE_ADDR(tmp_path):
    """run_fvp.sh --elf=<runner without a program> --data=<pte>@0x70000000: the runner knows no program size."""
    elf = make_elf(tmp_path / "runner.elf", None)
    rc, out, err = dropin("-C", "ethosu.num_macs=128", "-C", "mps3_board.uart0.out_file=-", "-a", elf,
                          "--data", f"{CORPUS / 'add_q.pte'}@0x70000000")
    assert rc == 0, err + out
    assert unmatched(out) == []
    msgs = messages(out)
    assert "PTE Model data loaded. Size: 268435456 bytes." in msgs
    suffix = " bytes. (pte size unknown when not baked into elf)"
    assert f"model_pte_program_size:     268435456{suffix}" in msgs
    assert f"model_pte_loaded_size:      268435456{suffix}" in msgs
    assert msgs[-1] == "\x04" and "Output[0][0]: (float) 2.000000" in out


def test_baked_program_log_is_main_log():
    rc, out, err = run_fvp("run", CORPUS / "add_q.pte",
                           "-C", f"firmware.runtime={PROFILE}")
    assert rc == 0, err + out
    assert unmatched(out) == []
    msgs = messages(out)
    assert "NPU delegations: 1 (1.00 per inference)" in msgs
    assert not any(m.startswith(("Running executor", "input_file_allocator")) for m in msgs)


class _Bus:
    """CCNTR values in order (the Cortex-M55 PMU cycle counter is 32 bits)."""

    def __init__(self, values):
        self.values = list(values)

    def read32(self, addr):
        return self.values.pop(0)


class _Console:
    def __init__(self):
        self.text = ""

    def write(self, data):
        self.text += data.decode()


def _measured(profile, ccntr, inferences) -> str:
    """What the runner's PerfMonitor logs for one measurement whose CCNTR reads are ``ccntr`` (start, stop)."""
    sys.path.insert(0, str(ROOT))
    from firmware.executorch import log
    from firmware.executorch.perf_monitor import PerfMonitor
    from firmware.executorch.profiles import get_profile

    console = _Console()
    log.install(log.EtLog(console))
    try:
        perf = PerfMonitor(_Bus(list(ccntr)), None, 0, get_profile(profile))
        perf.start()
        perf.stop(inferences)
    finally:
        log.install(None)
    return console.text


@pytest.mark.parametrize("profile, runtime", [("executorch-1.5", 0x200), (PROFILE, (1 << 64) - 0xFFFFFE00)])
def test_cycle_arithmetic_of_21911(profile, runtime):
    """A CCNTR that wraps during the run: a 32-bit difference before #21911, a uint64_t difference on main."""
    text = _measured(profile, (0xFFFF_FF00, 0x100), 1)
    assert f"Inference runtime: {runtime} CPU cycles total ({runtime:.2f} per inference)" in text


def test_no_inference_ran_divides_by_zero_as_c_does():
    """StopMeasurements(0) on main (the first inference failed): the per-inference figures are nan."""
    text = _measured(PROFILE, (5, 5), 0)
    assert "NPU Inferences : 0" in text and "NPU delegations: 0 (nan per inference)" in text
    assert unmatched(text) == []
