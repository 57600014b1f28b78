"""From a sweep file to tasks: which compile of each program a point runs, and with which board and overrides.

A program is a family of compiles (its ``files:``, the zoo's compiles of its ``zoo:`` model, and what ExecuTorch
compiles on demand), each made for one (NPU variant, system config, memory mode), read from its Ethos-U
compile specs. For each point the keys ``npu.variant``, ``npu.system_config`` and ``npu.memory_mode`` the
point (or the sweep's ``overrides``, or a named base board's variant) sets are the compile it wants; what it
leaves open comes from the compile, as ``fvp run`` does (``fvp.host.programs.program_board``):

- a compile that matches every key the point sets: the point runs it (``stream: exact``);
- none for the point's variant: a stream built for another MAC configuration can never run (the driver refuses
  it), so ExecuTorch compiles one (``stream: compiled``) or the row says ``needs-compile``;
- one for the variant, but another memory mode or system config: with ``mismatch: compile`` (the default) the
  same (compile, or ``needs-compile``); with ``mismatch: what-if`` the existing stream runs with the point's
  memory mode (REGIONCFG, the runner's pools for it) and system config (``stream: what-if``; the row names the
  compile it ran). That is what ``fvp run -C npu.memory_mode=...`` does; it is a valid run of that binary on
  that runner build, but not what Vela would have scheduled for that mode, so it is never the default.

Compiles run here, in the planning process, once per (model, flags, target, system config, memory mode), and are
cached on disk by content (``$FVP_CACHE_DIR`` or ``~/.cache/fvp/sweep-compiles``), each with a seal under the
user's cache key (``fvp.machine.npu.diskcache.seal``): a compile another user or job put there is compiled
again, not run.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ... import __version__
from ...safe_write import write_file
from ..cluster import config_dir_hash  # noqa: F401 (part of a point's identity; re-exported)
from ..programs import et_build
from ...boards import ConfigProblems, board_for_target, find_board, load_board
from ..programs.program_board import program_config
from .spec import COMPILE_KEYS, SweepSpec, format_value


@dataclass
class Compile:
    label: str  # file name (or zoo:/compiled: label)
    sha256: str
    target: str | None
    system_config: str | None
    memory_mode: str | None
    source: str  # file / zoo / compiled

    def key(self) -> dict:
        return {"target": self.target, "system_config": self.system_config, "memory_mode": self.memory_mode}


@dataclass
class Plan:
    tasks: list = field(default_factory=list)  # dicts for point.run_task
    rows: list = field(default_factory=list)  # rows decided without a run (needs-compile, errors)
    blobs: dict = field(default_factory=dict)  # sha256 -> program bytes
    skipped: int = 0
    compiles: int = 0  # programs compiled by ExecuTorch for this plan (cache misses)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def simulator_version() -> str:
    """``fvp <version>`` plus the git commit of the source tree when it is one (``+dirty`` with local edits)."""
    root = Path(__file__).resolve().parents[2]
    rev = ""
    if (root / ".git").exists():
        try:
            rev = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                                 text=True, timeout=10).stdout.strip()
            dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "fvp", "firmware",
                                    "hwdesc"], capture_output=True, text=True, timeout=10).stdout.strip()
            if rev and dirty:
                rev += "+dirty"
        except (OSError, subprocess.SubprocessError):
            rev = ""
    return f"fvp {__version__}" + (f" ({rev})" if rev else "")


def point_key(program_sha: str, board: str, overrides: list) -> str:
    """The identity of a result: the program's bytes, the board (files + every override, in order) and the
    simulator's version. A rerun skips a point whose key has a result."""
    board_id = board
    if os.path.isfile(board):
        board_id = sha256(Path(board).read_bytes())
    doc = json.dumps([program_sha, board_id, list(overrides), config_dir_hash(), __version__], sort_keys=True)
    return sha256(doc.encode())[:24]


# ------------------------------------------------------------------------------------------------ compiles
def cache_dir() -> Path:
    return Path(os.environ.get("FVP_CACHE_DIR") or Path.home() / ".cache" / "fvp") / "sweep-compiles"


class Compiler:
    """aot_arm_compiler through ExecuTorch (``fvp.host.tutorial.executorch_python``), cached by content."""

    def __init__(self, log=None):
        from ..tutorial import executorch_python

        self.python = executorch_python()
        self.log = log or (lambda s: print(s, file=sys.stderr))
        self.misses = 0

    @property
    def available(self) -> bool:
        return bool(self.python)

    def compile(self, prog, target: str, system_config: str, memory_mode: str) -> tuple[bytes, str]:
        """(program bytes, cache path); raises ``RuntimeError`` with the compiler's last lines when it fails."""
        model = prog.model or prog.zoo
        h = hashlib.sha256()
        for part in (Path(model).read_bytes() if os.path.isfile(model) else model.encode(),
                     Path(prog.model_input).read_bytes() if prog.model_input else b"",
                     " ".join(prog.flags).encode(), target.encode(), system_config.encode(), memory_mode.encode(),
                     self.python.encode()):
            h.update(part + b"\0")
        bundle = "--bundleio" in prog.flags
        out_dir = cache_dir() / h.hexdigest()[:32]
        out = out_dir / (f"{Path(model).stem}_{target}_{memory_mode}" + (".bpte" if bundle else ".pte"))
        seal_path = out.with_suffix(out.suffix + ".mac")
        for p in (cache_dir(), out_dir, out, seal_path):
            if p.is_symlink():
                raise RuntimeError(f"{p} is a symbolic link: the sweep's compile cache is never used through one")
        if out.is_file() and seal_path.is_file():
            data = out.read_bytes()
            if _seal(h.hexdigest(), data) == seal_path.read_bytes():  # written by this user's compile, unchanged
                return data, str(out)
        out_dir.mkdir(parents=True, exist_ok=True)
        # aot_arm_compiler (1.5.1) writes to --output as a file only when it ends in .pte/.bpte (.bpte exactly when
        # --bundleio); any other name is a folder it creates. So the compile goes to a file of the final name in
        # a private folder, renamed into place when whole (a killed compile leaves no half-written program).
        work = Path(tempfile.mkdtemp(prefix="compile-", dir=out_dir))
        tmp = work / out.name
        cmd = [self.python, "-m", "executorch.backends.arm.scripts.aot_arm_compiler", f"--model_name={model}",
               f"--target={target}", *prog.flags, f"--intermediates={out_dir / 'intermediates'}", f"--output={tmp}",
               f"--system_config={system_config}", f"--memory_mode={memory_mode}"]
        if prog.model_input:
            cmd.append(f"--model_input={prog.model_input}")
        self.log(f"fvp sweep: compiling {Path(model).name} for {target} {system_config} {memory_mode}: "
                 f"{shlex.join(cmd)}")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0 or not tmp.is_file():
                tail = " / ".join((proc.stderr or proc.stdout).strip().splitlines()[-2:])
                what = (f"exit status {proc.returncode}" if proc.returncode != 0
                        else f"exit status 0 but no {out.name} written")
                raise RuntimeError(f"aot_arm_compiler failed ({what}): {tail}")
            os.replace(tmp, out)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        self.misses += 1
        data = out.read_bytes()
        seal = _seal(h.hexdigest(), data)
        if seal is not None:
            write_file(str(seal_path), seal)
        return data, str(out)


def _seal(label: str, data: bytes) -> bytes | None:
    """The compile's seal under this user's cache key (``diskcache.seal``): a compile someone else put in a
    shared cache directory, or changed, is compiled again rather than run."""
    from ...machine.npu.diskcache import seal

    return seal(label, data, cache_dir().parent)


FAST_SCRATCH_REGION = 2  # the Ethos-U backend's base pointers: 0 weights, 1 scratch (temp pool), 2 fast scratch


def stream_regions(program: bytes) -> set:
    """The regions (base-pointer indices) the Ethos-U command streams of ``program`` address: every feature map,
    weight, scale and external DMA region register the streams set (an internal DMA, to SHRAM, addresses none).
    Empty for a program without Ethos-U delegates or one the reader refuses (its run says why)."""
    from ...machine.npu.arch import arch_from_config_word, get_arch
    from ...machine.npu.command_stream import decode_commands, parse_driver_payload
    from ..programs.firmware_image import firmware_module

    lister = getattr(firmware_module(load_board(None)), "ethosu_command_streams", None)
    out: set = set()
    try:
        for s in lister(program) if lister is not None else ():
            payload = parse_driver_payload(s["cmd_data"])
            arch = (arch_from_config_word(payload.config_word) if payload.config_word is not None
                    else get_arch("ethos-u55-128"))
            for cmd in decode_commands(payload.stream, arch):
                if not cmd.name.endswith("_REGION"):
                    continue
                if cmd.name.startswith("NPU_SET_DMA0_") and (cmd.param >> 8) & 1:  # region_mode INTERNAL: SHRAM
                    continue
                out.add(cmd.param & 0x7)
    except Exception:  # noqa: BLE001 - not readable here: the point runs and its row says what happened
        return set()
    return out


# ------------------------------------------------------------------------------------------------ planning
def _setting(key: str, overrides: list, point: dict):
    """What ``key`` is for a point: the point's value, else the last ``-C key=...`` of the sweep, else None."""
    if key in point:
        return format_value(point[key])
    value = None
    for o in overrides:
        if o.partition("=")[0].strip() == key:
            value = o.partition("=")[2].strip()
    return value


class Planner:
    def __init__(self, spec: SweepSpec, compiler: Compiler | None = None, log=None):
        self.spec = spec
        self.log = log or (lambda s: print(s, file=sys.stderr))
        self.compiler = compiler or Compiler(self.log)
        self.blobs: dict = {}
        self.families: dict = {}  # program name -> [Compile]
        self._boards: dict = {}
        self._compiled: dict = {}  # (program name, target, sc, mm) -> Compile or error text
        self._region2: dict = {}  # program sha256 -> whether its streams address the fast scratch
        for prog in spec.programs:
            self.families[prog.name] = self._family(prog)

    # ---- program families
    def _add(self, data: bytes, label: str, source: str) -> Compile:
        sha = sha256(data)
        self.blobs.setdefault(sha, data)
        cfg = program_config(data)
        return Compile(label, sha, cfg.value("target"), cfg.value("system_config"), cfg.value("memory_mode"), source)

    def _family(self, prog) -> list:
        out = []
        for f in prog.files:
            try:
                data = Path(f).read_bytes()
            except OSError as e:
                raise ConfigProblems([f"{f}: cannot read the program: {e.strerror or e}"]) from None
            out.append(self._add(data, os.path.basename(f), "file"))
        if prog.zoo:
            from ..programs import zoo

            bundle = "--bundleio" in prog.flags or not prog.flags
            quant = "--quantize" in prog.flags or not prog.flags
            for e in zoo.load_index()["entries"]:
                if (e["model"] == prog.zoo and bool(e["quantize"]) == quant and e["delegate"]
                        and not et_build.is_cortex_m(e["target"])):
                    out.append(self._add(zoo.program_bytes(e, bundle), f"zoo:{e['file']}", "zoo"))
        return out

    def _board_info(self, board: str) -> dict:
        if board not in self._boards:
            spec = load_board(board)
            raw = spec.raw
            self._boards[board] = {"variant": spec.npu.variant if spec.npu else None,
                                   "system_configs": raw.get("system_configs", {}),
                                   "has_fast": "fast_scratch" in spec.firmware.pools}
        return self._boards[board]

    # ---- one point
    def _explicit(self, point: dict) -> dict:
        want = {"target": None, "system_config": None, "memory_mode": None}
        for o in self.spec.overrides:
            k, _, v = o.partition("=")
            if k.strip() in COMPILE_KEYS:
                want[COMPILE_KEYS[k.strip()]] = v.strip()
        for k, v in point.items():
            if k in COMPILE_KEYS:
                want[COMPILE_KEYS[k]] = format_value(v)
        if want["target"] is None and self.spec.board != "auto":
            want["target"] = self._board_info(self.spec.board)["variant"]
        return want

    def _compile_for(self, prog, target: str, sc: str | None, mm: str | None):
        sc = sc or et_build.default_system_config(target)
        mm = mm or et_build.default_memory_mode(target)
        k = (prog.name, target, sc, mm)
        if k not in self._compiled:
            try:
                data, path = self.compiler.compile(prog, target, sc, mm)
                c = self._add(data, f"compiled:{os.path.basename(path)}", "compiled")
                got = c.key()
                if got["target"] != target:
                    raise RuntimeError(f"the compiled program is for {got['target']}, not {target}")
                self._compiled[k] = c
            except (RuntimeError, OSError) as e:
                self._compiled[k] = f"compile for {target} {sc} {mm} failed: {e}"
        return self._compiled[k]

    def choose(self, prog, point: dict) -> list:
        """[(Compile, stream kind)] or [(None, reason, status)] for one program at one point."""
        fam = self.families[prog.name]
        want = self._explicit(point)
        compilable = bool(prog.model or prog.zoo) and self.compiler.available
        can_source = bool(prog.model or prog.zoo)

        def fits(c, keys=("target", "system_config", "memory_mode")):
            return all(want[k] is None or c.key()[k] is None or c.key()[k] == want[k] for k in keys)

        exact = [c for c in fam if fits(c)]
        if exact:
            if want["target"] is None:  # the variant is left open: every variant's compile is a row
                seen, out = set(), []
                for c in exact:
                    if c.target not in seen:
                        seen.add(c.target)
                        out.append((c, "exact"))
                return out
            return [(exact[0], "exact")]
        same_variant = [c for c in fam if fits(c, ("target",))]
        target = want["target"] or (fam[0].target if fam else None)
        if not same_variant or self.spec.mismatch == "compile":
            if target is None:
                return [(None, f"{prog.name}: no compile to run and no NPU variant to compile for", "error")]
            if compilable:
                c = self._compile_for(prog, target, want["system_config"], want["memory_mode"])
                if isinstance(c, str):
                    return [(None, c, "error")]
                return [(c, "compiled")]
            near = same_variant or fam
            have = ", ".join(sorted({f"{c.target} {c.system_config} {c.memory_mode}" if same_variant else
                                     str(c.target) for c in near})) or "none"
            wanted = " ".join(v for v in (want["target"], want["system_config"], want["memory_mode"]) if v)
            why = (f"no compile of {prog.name} for {wanted} (have: {have}); "
                   + ("compiling needs ExecuTorch (pip install '.[executorch]' or EXECUTORCH_PYTHON)" if can_source
                      else "give a model: (with ExecuTorch) or a files: entry compiled for it"))
            if same_variant:
                why += "; or mismatch: what-if to run the existing stream with this point's board"
            return [(None, why, "needs-compile")]
        # what-if: the variant's compile closest to the point (most keys equal)
        best = max(same_variant, key=lambda c: sum(want[k] is not None and c.key()[k] == want[k]
                                                   for k in ("system_config", "memory_mode")))
        return [(best, "what-if")]

    def _uses_fast_scratch(self, c: Compile) -> bool:
        """Whether a compile's command streams address the NPU's fast scratch (region 2, the Ethos-U backend's
        third base pointer: ``dedicated_sram`` of a Dedicated_Sram build)."""
        if c.sha256 not in self._region2:
            self._region2[c.sha256] = FAST_SCRATCH_REGION in stream_regions(self.blobs[c.sha256])
        return self._region2[c.sha256]

    def _point_has_fast_scratch(self, point: dict, board: str) -> bool:
        mm = _setting("npu.memory_mode", self.spec.overrides, point)
        if mm is not None:
            return et_build.fast_scratch_size(mm) is not None
        return self._board_info(board)["has_fast"]

    def board_and_overrides(self, point: dict, c: Compile) -> tuple:
        """The board name and the ordered -C list for a point running compile ``c``."""
        spec = self.spec
        board = spec.board if spec.board != "auto" else board_for_target(c.target) if c.target else "default"
        info = self._board_info(board)
        mm = _setting("npu.memory_mode", spec.overrides, point)
        sc = _setting("npu.system_config", spec.overrides, point) or c.system_config
        out = []
        if mm is not None:  # the runner is built for the memory mode: its pools go with it (et_build)
            out += [f"npu.memory_mode={mm}"] + et_build.pool_overrides(mm, info["has_fast"])
        out += [o for o in spec.overrides if o.partition("=")[0].strip() != "npu.memory_mode"]
        for k, v in point.items():
            if k == "npu.memory_mode":
                continue
            if k.startswith(("axi0.", "axi1.")) or k == "npu.core_clock":
                scs = info["system_configs"]
                if sc not in scs:
                    raise ConfigProblems([f"{spec.path}: axes: {k}: the system config {sc!r} is not in the board"])
                if k == "npu.core_clock":
                    out.append(f"system_configs.{sc}.core_clock={format_value(v)}")
                else:
                    port, fld = k.split(".", 1)
                    mem = scs[sc].get(f"{port}_port")
                    off = f"system_configs.{sc}.timing_adapters={{}}"
                    if scs[sc].get("timing_adapters") and off not in out:
                        out.append(off)  # a port alias is Vela's memory timing: the FVP's timing adapters off
                    out.append(f"system_configs.{sc}.memories.{mem}.{fld}={format_value(v)}")
            else:
                out.append(f"{k}={format_value(v)}")
        return board, out

    def plan(self) -> Plan:
        spec = self.spec
        plan = Plan(skipped=spec.n_skipped())
        for prog in spec.programs:
            for point in spec.points():
                for choice in self.choose(prog, point):
                    if choice[0] is None:
                        _, reason, status = choice
                        key = point_key(f"{prog.name}:unresolved",
                                        spec.board, [f"{k}={format_value(v)}" for k, v in point.items()])
                        plan.rows.append({"program": prog.name, "axes": dict(point), "key": key, "status": status,
                                          "reason": reason})
                        continue
                    c, stream = choice
                    try:
                        board, overrides = self.board_and_overrides(point, c)
                        if stream == "what-if" and not self._point_has_fast_scratch(point, board) \
                                and self._uses_fast_scratch(c):
                            plan.rows.append({
                                "program": prog.name, "axes": dict(point), "status": "cannot-run",
                                "key": point_key(c.sha256, board, overrides), "stream": stream,
                                "compiled_for": c.key(), "program_file": c.label,
                                "reason": (f"what-if: the stream compiled for {c.target} {c.memory_mode} addresses "
                                           f"the NPU's fast scratch (region 2), which a runner built for "
                                           f"{_setting('npu.memory_mode', spec.overrides, point) or 'this board'}"
                                           f" does not have (no dedicated_sram: the Ethos-U faults at address "
                                           f"0 + offset)")})
                            continue
                    except ConfigProblems as e:
                        plan.rows.append({"program": prog.name, "axes": dict(point), "status": "error",
                                          "key": point_key(c.sha256, spec.board, [str(point)]),
                                          "reason": e.problems[0]})
                        continue
                    plan.tasks.append({
                        "program": prog.name, "program_file": c.label, "program_sha256": c.sha256,
                        "compiled_for": c.key(), "stream": stream, "axes": dict(point), "board": board,
                        "overrides": overrides, "key": point_key(c.sha256, board, overrides),
                        "timelimit": spec.timelimit, "sweep": spec.name})
        plan.blobs = {t["program_sha256"]: self.blobs[t["program_sha256"]] for t in plan.tasks}
        plan.compiles = self.compiler.misses
        return plan


def check_axes(spec: SweepSpec) -> None:
    """Validate every axis value against the base board, one load per distinct value (one-line errors)."""
    board = spec.board if spec.board != "auto" else "default"
    try:
        find_board(board)
    except ConfigProblems:
        return
    problems = []
    for key, vals in list(spec.axes.items()) + [kv for g in spec.zips for kv in g.items()]:
        if key.startswith(("axi0.", "axi1.")) or key == "npu.core_clock":
            base = load_board(board)
            sc = base.npu.system_config.name
            port = key.split(".")[0]
            mem = getattr(base.npu.system_config, f"{port}_port", None)
            tmpl = (f"system_configs.{sc}.core_clock" if key == "npu.core_clock"
                    else f"system_configs.{sc}.memories.{mem}.{key.split('.', 1)[1]}")
        else:
            tmpl = key
        for v in vals:
            if key == "npu.variant":
                try:
                    et_build.check_target(format_value(v))
                    if et_build.is_cortex_m(format_value(v)):
                        raise ConfigProblems([f"{format_value(v)} has no NPU"])
                    if spec.board == "auto":
                        board_for_target(format_value(v))
                        continue
                except ConfigProblems as e:
                    problems.append(f"{spec.path}: axes.npu.variant: {format_value(v)}: {e.problems[0]}")
                    continue
            extra = []
            if key == "npu.memory_mode":
                extra = et_build.pool_overrides(format_value(v), "fast_scratch" in load_board(board).firmware.pools)
            try:
                load_board(board, [f"{tmpl}={format_value(v)}"] + extra)
            except ConfigProblems as e:
                problems.append(f"{spec.path}: axes.{key}: {format_value(v)}: "
                                + e.problems[0].split(": ", 1)[-1])
    if problems:
        raise ConfigProblems(problems)
