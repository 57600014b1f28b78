"""The sweep file: programs, a base board, axes over board keys, zipped groups and constraints.

```yaml
name: mobilenet-dse                 # optional (default: the file's stem)
programs:                           # one or more
  - name: mobilenet_v1_025          # optional (default: from the file or zoo name)
    files: [../tests/data/corpus/mobilenet_v1_025_u55-*.bpte]   # compiles you have (globs, relative to this file)
    zoo: ds_cnn                     # and/or the model zoo's compiles of a model (quantized, delegated, bundled)
    model: my_model.py              # and/or a model for aot_arm_compiler: compiled per point when ExecuTorch is
    model_input: inputs.pt          #   available (EXECUTORCH_PYTHON or an importable executorch), cached by content
    flags: --delegate --quantize --bundleio
board: auto                         # auto (each point's NPU's default board), a board name or a YAML path
overrides: [firmware.allocator=arm] # -C applied to every point (before the axes)
axes:                               # the cross product of these
  npu.variant: [ethos-u55-64, ethos-u55-128, ethos-u55-256]
  npu.memory_mode: [Shared_Sram, Sram_Only]
  axi1.clock_scale: {start: 0.0625, stop: 0.25, factor: 2}      # ranges: step (linear) or factor (geometric)
zip:                                # groups whose keys move together (one list each, same length)
  - {firmware.pools.temp.size: [1MiB, 2MiB], firmware.pools.method.size: [1MiB, 4MiB]}
skip:                               # constraints: a point matching every key of one entry is not run
  - {npu.variant: "ethos-u55-*", npu.memory_mode: "Dedicated_Sram*"}
mismatch: compile                   # compile (default) or what-if: see docs/sweep.md
timelimit: 600                      # host seconds per point
```

Axis keys are board keys (``-C`` spellings) plus port aliases resolved per point against the point's system
config: ``axi0.<field>`` / ``axi1.<field>`` (``clock_scale``, ``burst_length``, ``read_latency``,
``write_latency``, ``max_reads``, ``max_writes``) name the memory behind that AXI port, ``npu.core_clock`` the
system config's clock. Every mistake is one line naming the file and the key (``ConfigProblems``).
"""

from __future__ import annotations

import fnmatch
import glob
import itertools
import math
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from ...boards import ConfigProblems
from ...boards import yaml_safe

PORT_FIELDS = ("clock_scale", "burst_length", "read_latency", "write_latency", "max_reads", "max_writes")
TOP_KEYS = ("name", "programs", "board", "overrides", "axes", "zip", "skip", "mismatch", "timelimit")
PROGRAM_KEYS = ("name", "files", "zoo", "model", "model_input", "flags")
MISMATCH = ("compile", "what-if")
DEFAULT_FLAGS = "--delegate --quantize --bundleio"
MAX_POINTS = 1_000_000
# keys that pick the compile of the program (a point that changes one needs the program compiled for it)
COMPILE_KEYS = {"npu.variant": "target", "npu.system_config": "system_config", "npu.memory_mode": "memory_mode"}


@dataclass
class ProgramSpec:
    name: str
    files: list = field(default_factory=list)  # absolute paths
    zoo: str | None = None
    model: str | None = None  # a .py path (absolute) or a built-in model name for aot_arm_compiler
    model_input: str | None = None
    flags: list = field(default_factory=list)


@dataclass
class SweepSpec:
    path: str
    name: str
    programs: list
    board: str  # "auto" or a board name / path
    overrides: list
    axes: dict  # key -> list of values (the cross product); zipped groups are in ``zips``
    zips: list  # [{key: [values]}]
    skip: list  # [{key: pattern or [patterns]}]
    mismatch: str = "compile"
    timelimit: float | None = None

    @property
    def axis_keys(self) -> list:
        keys = list(self.axes)
        for group in self.zips:
            keys += list(group)
        return keys

    def axis_values(self) -> dict:
        """Each axis key's values in the sweep file's order, as ``format_value`` spells them (the plots' order)."""
        out = {k: [format_value(v) for v in vals] for k, vals in self.axes.items()}
        for group in self.zips:
            out.update({k: [format_value(v) for v in vals] for k, vals in group.items()})
        return out

    def points(self) -> list:
        """Every point (``{axis key: value}``) of the cross product that no ``skip`` entry matches, in order."""
        dims = [[{k: v} for v in vals] for k, vals in self.axes.items()]
        for group in self.zips:
            keys = list(group)
            n = len(group[keys[0]])
            dims.append([{k: group[k][i] for k in keys} for i in range(n)])
        out = []
        for combo in itertools.product(*dims) if dims else [()]:
            point: dict = {}
            for part in combo:
                point.update(part)
            if not any(_matches(point, entry) for entry in self.skip):
                out.append(point)
        return out

    def n_skipped(self) -> int:
        total = math.prod(len(v) for v in self.axes.values()) * math.prod(
            len(next(iter(g.values()))) for g in self.zips)
        return total - len(self.points())


def _matches(point: dict, entry: dict) -> bool:
    for key, pattern in entry.items():
        if key not in point:
            return False
        pats = pattern if isinstance(pattern, list) else [pattern]
        value = point[key]
        if not any(_match_one(value, p) for p in pats):
            return False
    return True


def _match_one(value, pattern) -> bool:
    if isinstance(pattern, str) and isinstance(value, str):
        return fnmatch.fnmatchcase(value, pattern)
    if isinstance(pattern, str):
        return fnmatch.fnmatchcase(format_value(value), pattern)
    return value == pattern


def format_value(v) -> str:
    """An axis value as the text of a ``-C key=value``."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _is_scalar(v) -> bool:
    return isinstance(v, (str, int, float, bool))


def _range(where: str, spec: dict, problems: list) -> list:
    allowed = {"start", "stop", "step", "factor"}
    extra = set(spec) - allowed
    if extra:
        problems.append(f"{where}: unknown range key(s) {', '.join(sorted(map(str, extra)))}; allowed: start, stop, "
                        f"step or factor")
        return []
    if "start" not in spec or "stop" not in spec or ("step" in spec) == ("factor" in spec):
        problems.append(f"{where}: a range needs start, stop and one of step (linear) or factor (geometric)")
        return []
    vals = [spec["start"], spec["stop"], spec.get("step", spec.get("factor"))]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        problems.append(f"{where}: start, stop, step/factor must be numbers, got {vals}")
        return []
    start, stop, by = vals
    ints = all(isinstance(v, int) for v in vals)
    out = []
    if "step" in spec:
        if by <= 0 or stop < start:
            problems.append(f"{where}: step must be > 0 and stop >= start (got start={start}, stop={stop}, step={by})")
            return []
        n = int(math.floor((stop - start) / by + 1e-9)) + 1
        out = [start + i * by for i in range(n)]
    else:
        if by <= 1 or start <= 0 or stop < start:
            problems.append(f"{where}: factor must be > 1, start > 0 and stop >= start (got start={start}, "
                            f"stop={stop}, factor={by})")
            return []
        v = start
        while v <= stop * (1 + 1e-9):
            out.append(v)
            v = v * by
    if len(out) > MAX_POINTS:
        problems.append(f"{where}: the range has {len(out)} values (at most {MAX_POINTS})")
        return []
    return [int(v) if ints else round(float(v), 12) for v in out]


def _check_key(where: str, key, problems: list) -> bool:
    if not isinstance(key, str) or not key or any(c.isspace() or c == "=" for c in key):
        problems.append(f"{where}: {key!r} is not a board key (dotted, like npu.memory_mode)")
        return False
    if key == "ethosu.num_macs":
        problems.append(f"{where}: ethosu.num_macs: use npu.variant (ethos-u55-64, ...) in a sweep: the sweep "
                        f"picks the program compiled for each variant")
        return False
    if key.startswith(("axi0.", "axi1.")) and key.split(".", 1)[1] not in PORT_FIELDS:
        problems.append(f"{where}: {key}: unknown port field; allowed: " + ", ".join(
            f"{key.split('.')[0]}.{f}" for f in PORT_FIELDS))
        return False
    return True


def _values(where: str, raw, problems: list) -> list:
    if isinstance(raw, dict):
        return _range(where, raw, problems)
    if _is_scalar(raw):
        return [raw]
    if isinstance(raw, list) and raw and all(_is_scalar(v) for v in raw):
        if len(set(map(format_value, raw))) != len(raw):
            problems.append(f"{where}: values repeat: {raw}")
            return []
        return list(raw)
    problems.append(f"{where}: expected a non-empty list of values or a range {{start, stop, step|factor}}, "
                    f"got {raw!r}")
    return []


def _programs(where: str, raw, base: Path, problems: list) -> list:
    if not isinstance(raw, list) or not raw:
        problems.append(f"{where}: programs: expected a non-empty list of programs "
                        f"(each with files:, zoo: and/or model:)")
        return []
    out = []
    for i, p in enumerate(raw):
        w = f"{where}: programs[{i}]"
        if isinstance(p, str):
            p = {"files": [p]}
        if not isinstance(p, dict):
            problems.append(f"{w}: expected a mapping (files:, zoo:, model:) or a file name, got {p!r}")
            continue
        extra = set(p) - set(PROGRAM_KEYS)
        if extra:
            problems.append(f"{w}: unknown key(s) {', '.join(sorted(map(str, extra)))}; allowed: "
                            f"{', '.join(PROGRAM_KEYS)}")
            continue
        files_raw = p.get("files", [])
        if isinstance(files_raw, str):
            files_raw = [files_raw]
        if not isinstance(files_raw, list) or not all(isinstance(f, str) for f in files_raw):
            problems.append(f"{w}.files: expected a list of .pte/.bpte paths or globs")
            continue
        files = []
        for f in files_raw:
            pat = str(base / os.path.expanduser(f)) if not os.path.isabs(os.path.expanduser(f)) else \
                os.path.expanduser(f)
            hits = sorted(glob.glob(pat)) if glob.has_magic(pat) else ([pat] if os.path.isfile(pat) else [])
            if not hits:
                problems.append(f"{w}.files: {f}: no such program file")
            for h in hits:
                if not h.endswith((".pte", ".bpte")):
                    problems.append(f"{w}.files: {h}: not a .pte/.bpte file")
                else:
                    files.append(os.path.abspath(h))
        zoo_name = p.get("zoo")
        if zoo_name is not None:
            from ..programs import zoo

            if zoo_name not in zoo.models():
                problems.append(f"{w}.zoo: {zoo_name!r} is not in the model zoo; allowed: {', '.join(zoo.models())}")
                continue
        model = p.get("model")
        if model is not None:
            if not isinstance(model, str) or not model:
                problems.append(f"{w}.model: expected a .py file or a built-in model name")
                continue
            mpath = base / model
            if model.endswith((".py", ".pt", ".pth")):
                if not mpath.is_file():
                    problems.append(f"{w}.model: {model}: no such file")
                    continue
                model = str(mpath.resolve())
        model_input = p.get("model_input")
        if model_input is not None:
            if not isinstance(model_input, str) or not (base / model_input).is_file():
                problems.append(f"{w}.model_input: {model_input!r}: no such file")
                continue
            model_input = str((base / model_input).resolve())
        flags = p.get("flags", DEFAULT_FLAGS)
        try:
            flags = shlex.split(flags) if isinstance(flags, str) else list(flags)
        except (ValueError, TypeError):
            problems.append(f"{w}.flags: expected aot_arm_compiler flags as one string, got {flags!r}")
            continue
        if not files and zoo_name is None and model is None:
            problems.append(f"{w}: give files:, zoo: or model: (the program to sweep)")
            continue
        name = p.get("name") or zoo_name or (Path(model).stem if model else Path(files[0]).stem)
        if not isinstance(name, str):
            problems.append(f"{w}.name: expected a string")
            continue
        out.append(ProgramSpec(name=name, files=files, zoo=zoo_name, model=model, model_input=model_input,
                               flags=flags))
    names = [p.name for p in out]
    for n in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"{where}: programs: the name {n!r} is used twice (give each program its own name:)")
    return out


#: aot_arm_compiler flags (exact spellings) that make it run its own code only: a sweep file's ``flags:`` with
#: anything else (``--so_library`` loads a shared library, ``--calibration_data`` and ``--model_input`` unpickle
#: files, ``-m`` names another model, and argparse abbreviations or combined short options could spell any of
#: them) needs ``fvp sweep --allow-model-code``
SAFE_FLAGS = frozenset({"--delegate", "-d", "--quantize", "-q", "--bundleio", "--etrecord", "--debug",
                        "--non_strict_export", "--direct_drive", "--enable_qdq_fusion_pass"})
SAFE_VALUE_FLAGS = frozenset({"--target", "-t", "--system_config", "--memory_mode", "--config",
                              "--enable_debug_mode"})


def _unsafe_flag(flags: list) -> str | None:
    it = iter(flags)
    for f in it:
        name = f.split("=", 1)[0]
        if f in SAFE_FLAGS or (name in SAFE_VALUE_FLAGS and "=" in f):
            continue
        if f in SAFE_VALUE_FLAGS and next(it, None) is not None:
            continue
        return f
    return None


def code_it_runs(spec: SweepSpec) -> list[str]:
    """One line per program whose compile would run code the sweep file names: a model file (ExecuTorch's
    compiler imports a ``.py``, unpickles a ``.pt``/``.pth`` with ``torch.load``), a ``model_input`` (unpickled)
    or a flag outside ``SAFE_FLAGS``. A built-in model name or a zoo model runs only ExecuTorch's own code."""
    out = []
    for i, p in enumerate(spec.programs):
        w = f"{spec.path}: programs[{i}] ({p.name})"
        if p.model and (os.path.isabs(p.model) or p.model.endswith((".py", ".pt", ".pth"))):
            out.append(f"{w}: model {p.model} is code: ExecuTorch's compiler runs it (imports a .py, unpickles a "
                       f".pt/.pth)")
        if p.model_input:
            out.append(f"{w}: model_input {p.model_input} is unpickled by ExecuTorch's compiler (torch.load), "
                       f"which can run code")
        bad = _unsafe_flag(p.flags)
        if bad is not None:
            out.append(f"{w}: flags: {bad!r} is not one of the compiler flags that run no code of the sweep "
                       f"file's ({', '.join(sorted(SAFE_FLAGS | {f + '=...' for f in SAFE_VALUE_FLAGS}))})")
    return out


def parse_sweep(data, path: str = "<sweep>") -> SweepSpec:
    """Validate a sweep document (already parsed YAML); ``path`` names it in errors and anchors relative files."""
    where = path
    base = Path(path).resolve().parent if path != "<sweep>" else Path.cwd()
    problems: list = []
    if not isinstance(data, dict):
        raise ConfigProblems([f"{where}: expected a mapping with programs: and axes:"])
    extra = [k for k in data if k not in TOP_KEYS]
    if extra:
        problems.append(f"{where}: unknown key(s) {', '.join(map(str, extra))}; allowed: {', '.join(TOP_KEYS)}")
    name = data.get("name", Path(path).stem)
    if not isinstance(name, str) or not name:
        problems.append(f"{where}: name: expected a string")
    programs = _programs(where, data.get("programs"), base, problems)
    board = data.get("board", "auto")
    if not isinstance(board, str):
        problems.append(f"{where}: board: expected auto, a board name or a YAML path")
    elif board != "auto":
        cand = base / board
        if board.endswith((".yaml", ".yml")) and cand.is_file():
            board = str(cand.resolve())
        else:
            from ...boards import find_board

            try:
                find_board(board)
            except ConfigProblems as e:
                problems.append(f"{where}: board: {e.problems[0]}")
    overrides = data.get("overrides", [])
    if isinstance(overrides, str):
        overrides = [overrides]
    if not isinstance(overrides, list) or not all(isinstance(o, str) and "=" in o for o in overrides):
        problems.append(f"{where}: overrides: expected a list of key=value")
        overrides = []
    axes: dict = {}
    raw_axes = data.get("axes", {}) or {}
    if not isinstance(raw_axes, dict):
        problems.append(f"{where}: axes: expected a mapping of board key -> values")
        raw_axes = {}
    for key, raw in raw_axes.items():
        if _check_key(f"{where}: axes", key, problems):
            vals = _values(f"{where}: axes.{key}", raw, problems)
            if vals:
                axes[key] = vals
    zips = []
    raw_zip = data.get("zip", []) or []
    if not isinstance(raw_zip, list):
        problems.append(f"{where}: zip: expected a list of groups ({{key: [values], key2: [values]}})")
        raw_zip = []
    for i, group in enumerate(raw_zip):
        w = f"{where}: zip[{i}]"
        if not isinstance(group, dict) or not group:
            problems.append(f"{w}: expected a mapping of board key -> list of values")
            continue
        g = {}
        for key, raw in group.items():
            if not _check_key(w, key, problems):
                continue
            if not isinstance(raw, list):
                problems.append(f"{w}.{key}: expected a list (the keys of a zipped group move together)")
                continue
            vals = _values(f"{w}.{key}", raw, problems) if len(set(map(format_value, raw))) == len(raw) else \
                list(raw)
            if vals:
                g[key] = vals
        lens = {k: len(v) for k, v in g.items()}
        if len(set(lens.values())) > 1:
            problems.append(f"{w}: the lists differ in length ({', '.join(f'{k}: {n}' for k, n in lens.items())})")
            continue
        if g:
            zips.append(g)
    seen: list = list(axes)
    for g in zips:
        for k in g:
            if k in seen:
                problems.append(f"{where}: {k}: given twice (in axes and/or zip groups)")
            seen.append(k)
    skip = data.get("skip", []) or []
    if not isinstance(skip, list) or not all(isinstance(e, dict) and e for e in skip):
        problems.append(f"{where}: skip: expected a list of mappings {{key: pattern or [patterns]}}")
        skip = []
    for i, entry in enumerate(skip):
        for k, pat in entry.items():
            if k not in seen:
                problems.append(f"{where}: skip[{i}].{k}: not an axis of this sweep; axes: {', '.join(seen) or 'none'}")
            elif not (_is_scalar(pat) or (isinstance(pat, list) and pat and all(_is_scalar(p) for p in pat))):
                problems.append(f"{where}: skip[{i}].{k}: expected a value, a glob pattern or a list of them")
    mismatch = data.get("mismatch", "compile")
    if mismatch not in MISMATCH:
        problems.append(f"{where}: mismatch: {mismatch!r}; allowed: {', '.join(MISMATCH)}")
    timelimit = data.get("timelimit")
    if timelimit is not None and (not isinstance(timelimit, (int, float)) or isinstance(timelimit, bool)
                                  or timelimit <= 0):
        problems.append(f"{where}: timelimit: expected a positive number of seconds")
    if problems:
        raise ConfigProblems(problems)
    spec = SweepSpec(path=str(Path(path).resolve()) if path != "<sweep>" else path, name=name, programs=programs,
                     board=board, overrides=list(overrides), axes=axes, zips=zips, skip=skip, mismatch=mismatch,
                     timelimit=float(timelimit) if timelimit else None)
    n = math.prod(len(v) for v in axes.values()) * math.prod(len(next(iter(g.values()))) for g in zips)
    if n * len(programs) > MAX_POINTS:
        raise ConfigProblems([f"{where}: {n * len(programs)} points (at most {MAX_POINTS})"])
    return spec


def load_sweep(path: str) -> SweepSpec:
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ConfigProblems([f"{path}: cannot read the sweep file: {e.strerror or e}"]) from None
    try:
        data = yaml_safe.load(text)
    except Exception as e:  # yaml.YAMLError with a mark
        mark = getattr(e, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigProblems([f"{path}:{line}: not valid YAML: {getattr(e, 'problem', None) or e}"]) from None
    return parse_sweep(data, path)
