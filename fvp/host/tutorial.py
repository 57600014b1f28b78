"""ExecuTorch's ``examples/arm/run.sh`` flow with this simulator in place of the FVP (``tools/run.sh``).

Takes run.sh's flags and does its steps: compile the model (ExecuTorch's ``aot_arm_compiler`` when ExecuTorch
with its Arm backend is installed; otherwise the prebuilt model zoo for the built-in names), skip the runner
build (the Python ``arm_executor_runner`` is the application), then run the program like ``run_fvp.sh``: the
banner, the FVP command line (here the ``FVP_Corstone_SSE-300_Ethos-U55/U65`` or, for an Ethos-U85 target,
``FVP_Corstone_SSE-320`` drop-in, run in this process: no second interpreter), the log tee'd to a
file, ``Simulation complete, <status>`` and ``Checking for problems in log:``. The check greps what run_fvp.sh
greps (lines starting with ``F`` or ``E``, ``[critical]``, ``Hard fault``, the CPU-time message) plus every
``Info: Simulation is stopping. Reason:`` line and a non-zero simulator exit status, and unlike run_fvp.sh
(ExecuTorch issue 22316) the exit status says what it found: 0 ``No problems found!``, 1 ``Found ERROR`` (or
a failed compile), 2 bad usage.

``--target=cortex-m55`` is run.sh's Cortex-M-only flow: no delegate (the quantized layers are ``cortex_m::*``
CMSIS-NN kernels on the CPU), a bundled program, run like ``run_fvp.sh --bundle``: the semihosting runner
(``cpu0.semihosting-cmd_line=executor_runner -m <bpte> -i fvp_dummy_input.bin -o out``, built with
``ET_ATOL=5.0 ET_RTOL=1.0``) on the default Corstone-300 board, the NPU unused, the verdict from the bundled
check (``Bundled I/O check PASSED/FAILED for <name>``), then the same problem check. run.sh refuses that target without ``--bundleio``; here
it is implied, with a note.

Programs you already have: ``--pte FILE`` or ``--model_name=FILE.pte``/``.bpte`` (target, system config and
memory mode then default to what the program was compiled for). ``EXECUTORCH_PYTHON`` names an interpreter
with ExecuTorch when it lives in another environment; ``--zoo`` uses the zoo even when ExecuTorch is installed.
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from .programs import et_build
from .programs import zoo
from .programs.kind import is_executorch
from .programs.program_board import program_config
from ..boards import ConfigProblems
from .entry import EXIT_FAILURE as EXIT_FAIL, EXIT_OK, EXIT_USAGE, guarded

DEFAULT_TIMEOUT = 600
INSTALL_HINT = "pip install '.[executorch]'"
SEP = "-" * 80

# run_fvp.sh: grep -E "^(F|E|\[critical\]|Hard fault.|Info: Simulation is stopping. Reason: CPU time has been
# exceeded.).*$"; plus every stop reason of this simulator (limits, faults, aborts)
_UPSTREAM_PROBLEM = re.compile(r"^(F|E|\[critical\]|Hard fault.|Info: Simulation is stopping\. Reason: CPU time "
                               r"has been exceeded\.)")
_OUR_PROBLEM = re.compile(r"^Info: Simulation is stopping\. Reason:")
# the lines of the runner's #[RUN THIS] block that write a file from base64 (run_fvp.sh runs the block)
_RUN_THIS_FILE = re.compile(r'^echo "([A-Za-z0-9+/=]*)" \| base64 -d >([\w.]+)$')

# run.sh flags that have no effect here (no cross-compiled runner), with why
_NO_EFFECT = {
    "select_ops_list": "every portable kernel is linked into the Python runner",
    "build_type": "no runner is cross-compiled",
    "build_dir": "no runner is cross-compiled",
    "extra_build_flags": "no runner is cross-compiled",
    "toolchain": "no runner is cross-compiled",
    "et_build_root": "outputs go to --output (default arm_test/...)",
    "scratch_dir": "no toolchain setup is needed",
    "specify_ethosu_scratch": "the temp pool keeps the size the memory mode gives it",
    "model_explorer": "not available", "visualize_pte": "not available", "visualize_tosa": "not available",
    "perf_overlay": "not available",
}


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _Usage(message)


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = _Parser(prog=prog, allow_abbrev=False,
                description="ExecuTorch's examples/arm/run.sh on the open fvp Corstone-300 simulator: compile a "
                            "model for an Ethos-U target and run it, checking the log like run_fvp.sh.")
    a = p.add_argument
    a("--model_name", help="built-in model (add, mul, ..., mobilenet_v1_025), a .py/.pt file for aot_arm_compiler, "
                           "or an existing .pte/.bpte")
    a("--pte", help="run this existing .pte/.bpte (no compile)")
    a("--model_input", help="model input .pt file (passed to aot_arm_compiler)")
    a("--target", default=None, help="ethos-u55-32/64/128/256, ethos-u65-256/512 (default ethos-u55-128), "
                                     "ethos-u85-128/256/512/1024/2048 (Corstone-320), or cortex-m55 (no NPU: "
                                     "CMSIS-NN kernels on the CPU, a bundled program)")
    a("--system_config", default=None, help="Vela system config (default: the target's)")
    a("--memory_mode", default=None, help="Vela memory mode (default Shared_Sram for U55, Sram_Only for U65, "
                                          "Dedicated_Sram_384KB for U85)")
    a("--config", default=None, help="Vela config file (vela.ini) for aot_arm_compiler")
    a("--aot_arm_compiler_flags", default="", help="more flags for aot_arm_compiler")
    a("--no_delegate", action="store_true", help="do not delegate to the Ethos-U")
    a("--no_quantize", action="store_true", help="do not quantize (float ops run on the CPU)")
    a("--bundleio", action="store_true", help="make a .bpte with test inputs and expected outputs, and check them")
    a("--output", default=None, help="output folder (default arm_test/<model>_arm_delegate_<target>)")
    a("--timeout", type=float, default=DEFAULT_TIMEOUT, help="simulation time limit in host seconds (default 600)")
    a("--build_only", action="store_true", help="compile only, do not run")
    a("--pte_placement", default="elf", help="elf (default) or an address for --data FILE@ADDRESS")
    a("--qdq_fusion_op", action="store_true", help="passed to aot_arm_compiler as --enable_qdq_fusion_pass")
    a("--zoo", action="store_true", help="use the prebuilt model zoo even when ExecuTorch is installed")
    for name in ("select_ops_list", "build_type", "build_dir", "extra_build_flags", "toolchain", "et_build_root",
                 "scratch_dir"):
        flags = [f"--{name}"] + ([f"--{name.replace('_', '-')}"] if name in ("build_dir", "scratch_dir") else [])
        a(*flags, dest=name, default=None, help=argparse.SUPPRESS)
    for name in ("specify_ethosu_scratch", "etdump", "model_explorer", "visualize_pte", "visualize_tosa",
                 "perf_overlay"):
        a(f"--{name}", dest=name, action="store_true", help=argparse.SUPPRESS)
    a("--invoked-as", dest="invoked_as", default=None, help=argparse.SUPPRESS)
    return p


# ------------------------------------------------------------------------------------------------ helpers
def executorch_python() -> str | None:
    """An interpreter with ExecuTorch's Arm backend: ``EXECUTORCH_PYTHON``, or this one if it has it."""
    env = os.environ.get("EXECUTORCH_PYTHON")
    if env:
        return env
    try:
        spec = importlib.util.find_spec("executorch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        if (Path(loc) / "backends" / "arm" / "scripts" / "aot_arm_compiler.py").is_file():
            return sys.executable
    return None


def _is_program_file(path: str) -> bool:
    return path.endswith((".pte", ".bpte"))


def _aot_flags(args, cortex_m: bool = False) -> list[str]:
    flags = []
    if not args.no_delegate and not cortex_m:  # run.sh drops --delegate for the Cortex-M targets
        flags.append("--delegate")
    if not args.no_quantize:
        flags.append("--quantize")
    try:
        extra = shlex.split(args.aot_arm_compiler_flags or "")
    except ValueError as e:
        raise _Usage(f"--aot_arm_compiler_flags: {e}") from None
    for f in extra:
        if f not in flags and not (cortex_m and f in ("--delegate", "-d")):
            flags.append(f)
    return flags


def _say(*lines: str) -> None:
    for line in lines:
        print(line, flush=True)


class Run:
    def __init__(self, args, prog: str):
        self.args = args
        self.prog = prog

    # -------------------------------------------------------------------- configuration
    def resolve(self) -> None:
        a = self.args
        if a.pte and a.model_name:
            raise _Usage("give either --model_name or --pte, not both")
        if not a.pte and not a.model_name:
            raise _Usage("--model_name=<name or file> (or --pte FILE) is required")
        self.existing = a.pte or (a.model_name if _is_program_file(a.model_name) else None)
        recorded = {}
        if self.existing:
            if not os.path.isfile(self.existing):
                raise _Usage(f"{self.existing}: program file not found")
            with open(self.existing, "rb") as f:
                data = f.read()
            if not is_executorch(data):
                raise _Usage(f"{self.existing}: not an ExecuTorch program (.pte/.bpte identifier missing)")
            recorded = program_config(data).as_flags()
        self.recorded = recorded
        self.target = a.target or recorded.get("target") or "ethos-u55-128"
        try:
            et_build.check_target(self.target)
        except ConfigProblems as e:
            raise _Usage(e.problems[0]) from None
        self.system_config = a.system_config or recorded.get("system_config") or \
            et_build.default_system_config(self.target)
        self.memory_mode = a.memory_mode or recorded.get("memory_mode") or et_build.default_memory_mode(self.target)
        name = self.existing or a.model_name
        self.model_short = os.path.splitext(os.path.basename(name))[0]
        self.cortex_m = et_build.is_cortex_m(self.target)
        self.flags = _aot_flags(a, self.cortex_m)
        self.delegate = "--delegate" in self.flags or "-d" in self.flags
        self.quantize = "--quantize" in self.flags or "-q" in self.flags
        self.bundleio = a.bundleio or "--bundleio" in self.flags
        self.notes = []
        if self.cortex_m and not self.bundleio:
            if self.existing and not self.existing.endswith(".bpte"):
                raise _Usage(f"--target={self.target} runs a bundled program (.bpte) on the semihosting runner; "
                             f"{self.existing} is not one")
            self.bundleio = True
            if not self.existing:
                self.notes.append(f"note: --target={self.target} requires --bundleio in run.sh (the Cortex-M runner "
                                  f"loads its inputs from the bundle); using it")
        suffix = f"_arm_delegate_{self.target}" if self.delegate else f"_arm_{self.target}"
        if self.existing:
            self.output = Path(a.output or os.path.join("arm_test", self.model_short))
        else:
            self.output = Path(a.output or os.path.join("arm_test", self.model_short + suffix))
            self.pte = self.output / (self.model_short + suffix + (".bpte" if self.bundleio else ".pte"))
        if a.pte_placement != "elf":
            try:
                self.placement = int(a.pte_placement, 0)
            except ValueError:
                raise _Usage(f"--pte_placement={a.pte_placement}: expected elf or an address such as "
                             f"0x70000000") from None
        else:
            self.placement = et_build.MODEL_ADDRESS
        if a.timeout is not None and a.timeout <= 0:
            raise _Usage(f"--timeout={a.timeout}: expected a positive number of seconds")

    # -------------------------------------------------------------------- step 1: the program
    def get_program(self) -> int:
        a = self.args
        for note in self.notes:
            _say(note)
        for name, why in _NO_EFFECT.items():
            if getattr(a, name, None):
                _say(f"note: --{name} has no effect here: {why}")
        if self.existing:
            self.pte = Path(self.existing)
            if self.recorded:
                _say(f"note: {self.existing} was compiled for {self.recorded.get('target', '?')}, "
                     f"{self.recorded.get('system_config', '?')}, {self.recorded.get('memory_mode', '?')}")
            self._print_pte()
            return EXIT_OK
        et_python = None if a.zoo else executorch_python()
        if et_python:
            return self._compile(et_python)
        return self._from_zoo()

    def _compile(self, python: str) -> int:
        a = self.args
        self.output.mkdir(parents=True, exist_ok=True)
        cmd = [python, "-m", "executorch.backends.arm.scripts.aot_arm_compiler", f"--model_name={a.model_name}",
               f"--target={self.target}", *self.flags, f"--intermediates={self.output}", f"--output={self.pte}",
               f"--system_config={self.system_config}", f"--memory_mode={self.memory_mode}"]
        if self.bundleio and "--bundleio" not in cmd:
            cmd.append("--bundleio")
        if a.model_input:
            cmd.append(f"--model_input={a.model_input}")
        if a.config:
            cmd.append(f"--config={a.config}")
        if a.qdq_fusion_op:
            cmd.append("--enable_qdq_fusion_pass")
        _say(f"CALL {shlex.join(cmd)}")
        try:
            rc = subprocess.call(cmd)
        except OSError as e:
            print(f"{self.prog}: error: cannot run {python}: {e.strerror}", file=sys.stderr)
            return EXIT_USAGE
        if rc != 0 or not self.pte.is_file():
            print(f"{self.prog}: error: aot_arm_compiler failed (exit status {rc}) for --model_name={a.model_name}",
                  file=sys.stderr)
            return EXIT_FAIL
        self._print_pte()
        return EXIT_OK

    def _from_zoo(self) -> int:
        a = self.args
        name = a.model_name
        known = zoo.models()
        unsupported = [f for f in self.flags if f not in ("--delegate", "-d", "--quantize", "-q", "--bundleio")]
        entry = None
        if name in known and not a.model_input and not unsupported and a.config in (None, "Arm/vela.ini"):
            entry = zoo.find(name, self.target, self.quantize, self.delegate, self.system_config, self.memory_mode)
        if entry is None:
            if name in known:
                why = (f"the model zoo has no {name} for --target={self.target} --system_config={self.system_config} "
                       f"--memory_mode={self.memory_mode}"
                       + (" --no_delegate" if not self.delegate else "") + (" --no_quantize" if not self.quantize
                                                                            else "")
                       + (f" {' '.join(unsupported)}" if unsupported else "")
                       + (" --model_input" if a.model_input else "") + (" --config" if a.config else ""))
            else:
                why = f"--model_name={name} is not in the model zoo ({', '.join(known) or 'empty'})"
            print(f"{self.prog}: error: {why}; compiling it needs ExecuTorch's Arm backend: {INSTALL_HINT}",
                  file=sys.stderr)
            return EXIT_USAGE
        data = zoo.program_bytes(entry, self.bundleio)
        self.output.mkdir(parents=True, exist_ok=True)
        self.pte.write_bytes(data)
        v = zoo.load_index().get("versions", {})
        made = ", ".join(f"{k} {v[k]}" for k in ("executorch", "torch", "ethos-u-vela") if k in v)
        _say(f"note: ExecuTorch is not installed: using the model zoo's {entry['file']}"
             + (" (its plain program)" if not self.bundleio else "")
             + (f", made by aot_arm_compiler ({made})" if made else "")
             + f" with {' '.join(self.flags)} --target={self.target} --system_config={self.system_config} "
               f"--memory_mode={self.memory_mode}" + (" --bundleio" if self.bundleio else ""))
        self._print_pte()
        return EXIT_OK

    def _print_pte(self) -> None:
        _say(f"pte_data_size: {self.pte.stat().st_size} {self.pte}", f"pte_file: {self.pte}")

    # -------------------------------------------------------------------- step 2: the run
    def fvp_command(self) -> tuple[list[str], list[str]]:
        """(shown command line, command actually run)."""
        binary = et_build.fvp_binary(self.target)
        board, board_keys = et_build.board_overrides(self.target, self.system_config, self.memory_mode)
        params = et_build.fvp_params(self.target)
        params += [k for k in board_keys if not k.startswith("npu.variant=")]
        if self.args.etdump:  # run.sh --etdump builds the runner with ETDump and ET_DUMP_INTERMEDIATE_OUTPUTS
            params += ["firmware.options.etdump=true", "firmware.options.etdump_debug=intermediate"]
        tail = ["--data", f"{self.pte}@0x{self.placement:x}", "--timelimit", f"{self.args.timeout:g}"]
        argv = [x for p in params for x in ("-C", p)] + tail
        shown = [binary] + argv
        run = [sys.executable, "-m", "fvp.host.dropin", f"--flavour={et_build.flavour(self.target)}"] + argv
        return shown, run

    def cortex_m_command(self) -> tuple[list[str], list[str]]:
        """run_fvp.sh --bundle for a Cortex-M target: the semihosting runner reads the .bpte from its directory."""
        binary = et_build.fvp_binary(self.target)
        board, board_keys = et_build.board_overrides(self.target)
        bundle = Path(self.pte).resolve()
        params = [f"ethosu.num_macs={et_build.num_macs(self.target)}",
                  "mps3_board.visualisation.disable-visualisation=1",
                  "mps3_board.telnetterminal0.start_telnet=0",
                  "mps3_board.uart0.out_file=-",
                  "mps3_board.uart0.shutdown_on_eot=1",
                  "cpu0.semihosting-enable=1",
                  "cpu0.semihosting-stack_base=0",
                  "cpu0.semihosting-heap_limit=0",
                  f"cpu0.semihosting-cwd={bundle.parent}",
                  "ethosu.extra_args=--fast",
                  f"cpu0.semihosting-cmd_line=executor_runner -m {bundle.name} -i fvp_dummy_input.bin -o out"]
        params += board_keys
        argv = [x for p in params for x in ("-C", p)] + ["--timelimit", f"{self.args.timeout:g}"]
        shown = [binary] + argv
        run = [sys.executable, "-m", "fvp.host.dropin", f"--flavour={et_build.flavour(self.target)}"] + argv
        return shown, run

    def simulate(self) -> int:
        if self.cortex_m:
            return self.simulate_cortex_m()
        shown, cmd = self.fvp_command()
        res = self._announce_and_run(shown, cmd, "NPU cycles from its timing model, CPU cycles from a cost table.")
        if res is None:
            return EXIT_USAGE
        if self.args.etdump:
            self._write_run_this_files(res[1])
        return self._check_problems(*res)

    def _write_run_this_files(self, lines: list[str]) -> None:
        """What run_fvp.sh does with the runner's ``#[RUN THIS]`` block: the files its ``echo ... | base64 -d``
        lines write (etdump.bin, debug_buffer.bin), here into the output folder."""
        inside = False
        for ln in lines:
            if ln.startswith("#[RUN THIS]"):
                inside = True
            elif ln.startswith("#[END]"):
                inside = False
            elif inside and (m := _RUN_THIS_FILE.match(ln)):
                path = self.output / m.group(2)
                path.write_bytes(base64.b64decode(m.group(1)))
                _say(f"{m.group(2)}: {path}")

    def _announce_and_run(self, shown: list[str], cmd: list[str], cycles: str) -> tuple[int, list[str]] | None:
        """run_fvp.sh's banner, the logged simulator run, then ``Simulation complete, <status>``; None when the
        simulator cannot be started."""
        _say(SEP,
             f"Running {self.pte} for {self.target} run with FVP:{shown[0]} num_macs:{et_build.num_macs(self.target)} "
             f"timeout:{self.args.timeout:g}",
             f"Note: this is the open fvp simulator standing in for Arm's FVP: cycle-approximate, {cycles}",
             SEP)
        res = self._run_logged(shown, cmd)
        if res is not None:
            _say(f"[{self.prog}] Simulation complete, {res[0]}")
        return res

    def _check_problems(self, rc: int, lines: list[str]) -> int:
        """run_fvp.sh's "Checking for problems in log:", with an honest exit status."""
        _say("Checking for problems in log:")
        problems = [ln for ln in lines if _UPSTREAM_PROBLEM.match(ln) or _OUR_PROBLEM.match(ln)]
        if rc != 0:
            problems.append(f"[{self.prog}] the simulator exited with status {rc}")
        if problems:
            _say(*problems)
            _say("Found ERROR")
            return EXIT_FAIL
        _say("No problems found!")
        return EXIT_OK

    def _run_logged(self, shown: list[str], cmd: list[str]) -> tuple[int, list[str]] | None:
        """The drop-in (``cmd``: ``python -m fvp.host.dropin --flavour=... ARGS``) run in this process, its stdout
        and stderr merged line by line into the terminal and the log (run_fvp.sh's ``2>&1 | tee``): the same run
        as the FVP binary ``shown`` names, without starting a second interpreter."""
        from .dropin.command import main as dropin_main

        self.output.mkdir(parents=True, exist_ok=True)
        log_path = self.output / f"{Path(self.pte).stem}_fvp.log"
        _say(f"CALL {shlex.join(shown)}", f"log: {log_path}")
        with open(log_path, "w", encoding="utf-8") as log:
            tee = _LineTee(sys.stdout, log)
            saved = sys.stdout, sys.stderr
            sys.stdout = sys.stderr = tee
            try:
                rc = dropin_main(cmd[cmd.index("fvp.host.dropin") + 1:])
            finally:
                sys.stdout, sys.stderr = saved
                tee.close()
        return rc, tee.lines

    def simulate_cortex_m(self) -> int:
        """run_fvp.sh's Cortex-M branch: the dummy input file, the semihosting run, then the bundled verdict."""
        shown, cmd = self.cortex_m_command()
        bundle = Path(self.pte).resolve()
        (bundle.parent / "fvp_dummy_input.bin").write_bytes(bytes(4))
        res = self._announce_and_run(shown, cmd, "CPU cycles from a cost table (the NPU is unused).")
        if res is None:
            return EXIT_USAGE
        rc, lines = res
        if any("Test_result: PASS" in ln for ln in lines):
            _say(f"[{self.prog}] Bundled I/O check PASSED for {bundle.name}")
            verdict = EXIT_OK
        elif any("Test_result: FAIL" in ln for ln in lines):
            _say(f"[{self.prog}] Bundled I/O check FAILED for {bundle.name}")
            verdict = EXIT_FAIL
        else:
            _say(f"[{self.prog}] No Test_result line found in FVP output for {bundle.name}")
            verdict = EXIT_FAIL
        return max(verdict, self._check_problems(rc, lines))


class _LineTee:
    """A text stream (with a binary ``buffer``, as the UART writes bytes) that copies every complete line to the
    terminal and to the log, and keeps the lines for the problem check."""

    def __init__(self, terminal, log):
        self.terminal, self.log = terminal, log
        self.lines: list[str] = []
        self._part = ""
        self.buffer = _TeeBuffer(self)

    def write(self, text: str) -> int:
        self._part += text
        *done, self._part = self._part.split("\n")
        for line in done:
            line = line.rstrip("\r")
            self.terminal.write(line + "\n")
            self.log.write(line + "\n")
            self.lines.append(line)
        if done:
            self.terminal.flush()
        return len(text)

    def flush(self) -> None:
        self.terminal.flush()

    def isatty(self) -> bool:
        return False

    def close(self) -> None:
        if self._part:
            self.write("\n")


class _TeeBuffer:
    def __init__(self, tee: _LineTee):
        self.tee = tee

    def write(self, data: bytes) -> int:
        return self.tee.write(bytes(data).decode("utf-8", "replace"))

    def flush(self) -> None:
        self.tee.flush()


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = "tools/run.sh"
    for i, a in enumerate(argv):
        if a.startswith("--invoked-as="):
            prog = a.partition("=")[2] or prog
    def body():
        args = build_parser(prog).parse_args(argv)
        run = Run(args, prog)
        run.resolve()
        rc = run.get_program()
        if rc != EXIT_OK:
            return rc
        if args.build_only:
            _say(f"[{prog}] --build_only: the program is ready; not running it")
            return EXIT_OK
        if run.cortex_m:
            _say("note: no executor_runner build: the simulator's Python runner stands in for the semihosting "
                 "runner of backends/cortex_m/test/build_test_runner.sh (ET_ATOL=5.0, ET_RTOL=1.0, no temp pool)")
        else:
            _say(f"note: no arm_executor_runner build: the simulator's Python runner is the application "
                 f"(memory mode {run.memory_mode}, system config {run.system_config})")
        return run.simulate()

    return guarded(prog, body, (_Usage,))


if __name__ == "__main__":
    sys.exit(main())
