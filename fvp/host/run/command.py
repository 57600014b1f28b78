"""``fvp run [MODEL]``: boot the board, place the program where the runner's linker script puts it, run the firmware
the board names and print its UART output and the FVP's own trailer.

Without MODEL it runs the program built into the firmware image (the ExecuTorch tutorial's delegated ``x + x``).
The board comes from the program (its compile specs, ``programs.program_board``) unless ``-c``/``--target``/``-C``
say otherwise. Exit status: 0 success, 1 the program failed (fatal log line, fault, verification), 2 bad usage or
configuration, 3 a simulation limit was reached.
"""

from __future__ import annotations

import argparse
import os
import sys

from hwdesc.boot import RunArgs

from ...errors import ConfigError
from ...boards import ConfigProblems
from ..cli_args import add_board_options, cycles, load_for, seconds
from ..inputs import read_program
from ..programs.identify import check_program_file
from . import session


def add_parser(sub) -> argparse.ArgumentParser:
    run = sub.add_parser("run", help="run a program on the board (no MODEL: the embedded tutorial program)",
                         description="Run an ExecuTorch program (.pte or .bpte) on the simulated board. Without "
                                     "MODEL, run the tutorial's delegated x + x program built into the firmware.",
                         epilog="exit status: 0 the program ran and ended with EOT; 1 it failed (a fatal F line, an "
                                "NPU or CPU fault, a failed bundled verification); 2 bad usage, board or model file; "
                                "3 a simulation limit (--cyclelimit, --timelimit) was reached; --vela without Vela installed or a "
                                "Vela failure (its last line is said) is 2")
    run.add_argument("model", nargs="?", metavar="MODEL",
                     help="a .pte, .bpte or .tflite file (default: the embedded program), or an application ELF "
                          "whose own code runs on QEMU (fvp run APP.elf [-- ARG...]: ARGs are its semihosting "
                          "command line; docs/full-system.md)")
    run.add_argument("app_args", nargs="*", metavar="-- ARG",
                     help="after --: an application ELF's own command line (its semihosting SYS_GET_CMDLINE)")
    add_board_options(run)
    run.add_argument("-i", "--input", dest="inputs", action="append", default=[], metavar="FILE",
                     help="input tensor i: raw bytes of the tensor or a .npy file (repeat per input); "
                          "default: every element 1, as the runner does (bundled programs use their inputs)")
    run.add_argument("-o", "--output", metavar="BASENAME",
                     help="write output i's raw bytes to BASENAME-i.bin (like the semihosting runner)")
    run.add_argument("--etdump", metavar="FILE",
                     help="write the run's ETDump (ExecuTorch devtools: Inspector(etdump_path=FILE)) to FILE, as the "
                          "runner built with ET_EVENT_TRACER_ENABLED and semihosting writes etdump.bin "
                          "(-C firmware.options.etdump=true prints it base64 as the non-semihosting build does)")
    run.add_argument("--etdump-debug-buffer", metavar="FILE",
                     help="with --etdump and -C firmware.options.etdump_debug=outputs|intermediate: write the debug "
                          "buffer (the debug events' tensor data; Inspector(debug_buffer_path=FILE)) to FILE, as the "
                          "semihosting runner writes debug_buffer.bin")
    run.add_argument("--cyclelimit", type=cycles, metavar="N", help="stop after N simulated CPU cycles")
    run.add_argument("--timelimit", type=seconds, metavar="SECONDS", help="stop after SECONDS of host (wall) time")
    run.add_argument("--stat", action="store_true", help="print the FVP-style statistics block at the end")
    run.add_argument("-q", "--quiet", action="store_true",
                     help="no start-up line on stderr (the program, board, NPU, system config and memory mode run, "
                          "and why), as the drop-in's -q; a failure's reason is still said")
    run.add_argument("--check-stream", nargs="?", const="warn", choices=("off", "warn", "strict"), default=None,
                     help="check every NPU operation and DMA against what the stream declares "
                          "(docs/stream-checker.md); strict: the first error stops the run (exit 1)")
    run.add_argument("--strict", action="store_true",
                     help="treat guest errors (firmware misusing hardware) as failures instead of warnings")
    run.add_argument("--profile", action="store_true",
                     help="print a per-operation table of NPU operations and CPU kernels after the run")
    run.add_argument("--trace", metavar="FILE",
                     help="write a Chrome/Perfetto trace (JSON) of NPU operations, DMAs and CPU kernels")
    run.add_argument("--data", action="append", default=[], metavar="FILE@ADDRESS",
                     help="load FILE into memory at ADDRESS before the firmware starts (FVP --data)")
    run.add_argument("--vela", action="store_true",
                     help="compile a .tflite with Vela (ethos-u-vela) for the board's NPU, system config and memory "
                          "mode first, then run the result (a .tflite that has an ethos-u operator runs as it is)")
    run.add_argument("--vela-args", action="append", default=[], metavar="FLAGS",
                     help="more Vela flags, one quoted string (repeat; implies --vela): --vela-args='--optimise Size'")
    from .evaluate import add_arguments

    add_arguments(run)  # --inputs DATA, --labels, --jobs, --cluster, --progress (a data set: evaluate.py)
    return run


def _parse_data(items, spec=None) -> list:
    out = []
    for item in items:
        path, sep, addr = item.rpartition("@")
        if not sep or not path:
            raise ConfigProblems([f"--data {item}: expected FILE@ADDRESS"])
        try:
            address = int(addr, 0)
        except ValueError:
            raise ConfigProblems([f"--data {item}: {addr!r} is not an address"]) from None
        from ...bounded_read import read_input
        from ..inputs import memory_limit

        out.append((read_input(path, memory_limit(spec, address) if spec is not None else 1 << 32,
                               label=f"--data {item}", why=f"it must fit the memory at 0x{address:08x}"), address))
    return out


def _note(lines) -> None:
    for line in lines:
        print(f"fvp: note: {line}", file=sys.stderr)


_CONFIG_KEYS = (("target", "npu.variant"), ("system_config", "npu.system_config"), ("memory_mode", "npu.memory_mode"))


def configuration_line(model_name: str, spec, args, used=None, cpu_only: bool = False) -> str:
    """The one stderr line that says what runs: the program, the board, its NPU, system config and memory mode, and
    where each came from (the program's compile specs, ``--target``, ``-c``, ``-C``, or the board's own), then the
    user's other ``-C`` keys. ``used`` is ``program_board.Resolution.used`` (what -> (value, source)); ``cpu_only``:
    the program has no Ethos-U delegate (the board's NPU configuration is then the board's, whatever it is)."""
    used = used or {}
    board = os.path.splitext(os.path.basename(spec.files[-1]))[0] if spec.files else "board"
    if args.board is not None:
        board = args.board
    shown = set()
    parts = []
    for what, key in _CONFIG_KEYS:
        if spec.npu is None:
            break
        value = {"target": spec.npu.variant, "system_config": spec.npu.system_config.name,
                 "memory_mode": spec.npu.memory_mode.name}[what]
        src = used.get(what, (value, ""))[1]
        prov = str(spec.provenance.get(key, ""))
        if src == "program":
            src = "program"
        elif prov.startswith("-C ") and not src:
            src = prov.split("=", 1)[0]
        elif not src:
            src = (f"--target {args.target}" if args.target and what == "target"
                   else f"-c {args.board}" if args.board is not None else "board")
        if src.startswith("-C "):
            shown.add(src[3:])
        parts.append((value, src))
    why = {"program": "the program's compile specs",
           "board": "the board's" + ("; the program has no Ethos-U delegate" if cpu_only else "")}
    groups: list = []  # adjacent values with the same source share its parenthesis
    for value, src in parts:
        if groups and groups[-1][1] == src:
            groups[-1][0].append(value)
        else:
            groups.append(([value], src))
    npu = ", ".join(f"{', '.join(vals)} ({why.get(src, src)})" for vals, src in groups) or "no NPU"
    extra = [o for o in args.overrides if str(o).split("=", 1)[0].strip() not in shown]
    return (f"fvp: running {model_name} on {board}: {npu}"
            + (f"; with -C {' -C '.join(map(str, extra))}" if extra else ""))


class _Tail:
    """The UART's console: forwards every byte to stdout and keeps the last ``keep`` of them, where the runner's
    memory statistics are (read for the high-water line at the end of the run)."""

    def __init__(self, keep: int = 1 << 16):
        self.target = getattr(sys.stdout, "buffer", None)
        self.keep = keep
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        if self.target is not None:
            self.target.write(data)
        else:
            sys.stdout.write(bytes(data).decode("latin-1"))
        self.data += data
        if len(self.data) > 2 * self.keep:
            del self.data[:-self.keep]

    def flush(self) -> None:
        (self.target or sys.stdout).flush()

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


def _uart_log(spec, console) -> str:
    """The end of the run's UART log: the console's tail, or the last 64 KiB of the file the UART wrote."""
    if console is not None:
        return console.text()
    for dev in spec.devices.values():
        path = dev.props.get("out_file") if dev.type == "cmsdk_uart" else None
        if path and path != "-" and os.path.isfile(path):
            try:
                with open(path, "rb") as f:
                    f.seek(max(0, os.path.getsize(path) - (1 << 16)))
                    return f.read().decode("utf-8", "replace")
            except OSError:
                return ""
    return ""


def cmd_run(args) -> int:
    if args.dataset or args.labels or args.cluster or args.jobs != 1:
        from .evaluate import cmd_evaluate

        return cmd_evaluate(args)
    if args.target and args.board is not None:
        raise ConfigProblems(["use either -c/--config or --target, not both"])
    if args.model and _is_elf(args.model):
        return _run_elf(args)
    if getattr(args, "app_args", None):
        raise ConfigProblems([f"{' '.join(args.app_args)}: arguments after -- are an application ELF's command "
                              f"line (fvp run APP.elf -- ARG...)"])
    model_name = None
    embedded = False
    used = {}
    cpu_only = False
    if args.model:
        from ..programs.program_board import is_tflite, resolve

        model = read_program(args.model)  # bounded: a program must fit the region the board places it in
        check_program_file(model, args.model)  # not a program, or cut short: exit 2 before anything runs
        model_name = os.path.basename(args.model)
        res = resolve(model, board=args.board, target=args.target, overrides=args.overrides, model_name=model_name)
        spec = res.load()
        used = res.used
        cpu_only = not res.program.has_npu and not is_tflite(model)
        _note(res.notes)
        if args.vela or args.vela_args:
            from ..programs.vela import prepare

            model, model_name = prepare(model, model_name, spec, args.vela_args, note=lambda line: _note([line]))
        from ..programs.firmware_image import check_program

        check_program(spec, model, args.model, len(args.inputs))  # what the runner's loader refuses: exit 2
    else:
        if args.vela or args.vela_args:
            raise ConfigProblems(["--vela: give the MODEL (.tflite) to compile"])
        from ..programs.firmware_image import default_image

        spec = load_for(args)
        model, model_name = default_image(spec)
        embedded = True
    if args.trace:
        from .report import check_trace_path

        check_trace_path(args.trace)
    if args.etdump:
        from ...safe_write import check_writable

        r = check_writable(args.etdump)
        if not r.ok:
            raise ConfigError(f"--etdump {args.etdump}: cannot write: {r.strerror}")
    options = getattr(spec.firmware, "options", None) or {}
    debug = options.get("etdump_debug", "none") != "none"
    if debug and not (args.etdump or options.get("etdump") is True):
        raise ConfigError("firmware.options.etdump_debug needs the ETDump (--etdump FILE or "
                          "-C firmware.options.etdump=true)")
    if args.etdump_debug_buffer:
        from ...safe_write import check_writable

        if not (args.etdump and debug):
            raise ConfigError("--etdump-debug-buffer needs --etdump FILE and -C firmware.options.etdump_debug="
                              "outputs|intermediate")
        r = check_writable(args.etdump_debug_buffer)
        if not r.ok:
            raise ConfigError(f"--etdump-debug-buffer {args.etdump_debug_buffer}: cannot write: {r.strerror}")
    elif args.etdump and debug:
        raise ConfigError("firmware.options.etdump_debug with --etdump: name the debug buffer's file too "
                          "(--etdump-debug-buffer FILE)")
    run_args = RunArgs(inputs=args.inputs, output=args.output, embedded=embedded, etdump=args.etdump,
                       etdump_debug_buffer=args.etdump_debug_buffer)
    to_stdout = all(d.props.get("out_file") in ("-", "", None) for d in spec.devices.values()
                    if d.type == "cmsdk_uart")
    console = _Tail() if to_stdout and not args.quiet else None
    platform = session.build(spec, model=model, model_name=model_name, args=run_args,
                             data_files=_parse_data(args.data, spec), cycle_limit=args.cyclelimit,
                             time_limit=args.timelimit, strict=True if args.strict else None,
                             check_stream=args.check_stream, console=console)
    image = session.checked_image(platform)  # the firmware accepts the board: what runs is settled
    if not args.quiet:
        print(configuration_line("the embedded program (the tutorial's x + x)" if embedded else model_name, spec,
                                 args, used, cpu_only), file=sys.stderr, flush=True)
    result = session.run(platform, image.main, stat=args.stat)
    _reports(args, platform, result)
    sys.stdout.flush()
    if not args.quiet and result.exit_code == 0:  # how much memory the program took, per memory and pool
        from .memory import high_water, high_water_line, runner_memory_stats

        hw = high_water(spec, model, runner_memory_stats(_uart_log(spec, console)))
        print(f"fvp: memory high-water marks: {high_water_line(hw)}", file=sys.stderr, flush=True)
    _failure(result)
    return result.exit_code


def _failure(result) -> None:
    if result.exit_code != 0:  # stdout may be a file or a pipe: the reason is on the terminal too
        print(f"fvp: error: {session.failure_line(result)}", file=sys.stderr, flush=True)


def _reports(args, platform, result) -> None:
    """``--profile`` and ``--trace`` of a finished run."""
    if args.profile or args.trace:
        from .report import print_profile, print_time_summary, write_trace

        if args.profile:
            print_profile(platform, result)
            print_time_summary(platform, result)
        if args.trace:
            write_trace(platform, result, args.trace)


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _run_elf(args) -> int:
    """``fvp run APP.elf [-- ARG...]``: the application's own code on QEMU, on the board its program names."""
    import shlex

    from . import fullsystem

    refused = [flag for flag, given in (("-i", args.inputs), ("-o", args.output), ("--etdump", args.etdump),
                                        ("--etdump-debug-buffer", args.etdump_debug_buffer),
                                        ("--vela", args.vela or args.vela_args)) if given]
    if refused:
        raise ConfigProblems([f"{refused[0]}: an option of this simulator's firmware image; an application ELF "
                              f"takes its own arguments after -- (fvp run {args.model} -- ARG...)"])
    choice = fullsystem.choose(args.model, fullsystem.setting(args.overrides), label=args.model)
    if choice.engine != "qemu":
        why = choice.note or ("an ELF without code" if choice.image is not None else
                              "cpu.engine=python: fvp run APP.elf runs the ELF's own code")
        raise ConfigProblems([f"{args.model}: {why}; the FVP drop-in runs this simulator's firmware image for it: "
                              f"FVP_Corstone_SSE-300_Ethos-U55 -a {args.model}"])
    cmdline = shlex.join([os.path.basename(args.model), *args.app_args])
    arg = fullsystem.program_argument(cmdline)
    program = None
    if arg is not None and os.path.isfile(arg):
        program, name = read_program(arg), os.path.basename(arg)
    elif args.board is None and not args.target:
        program, name = fullsystem.elf_program(args.model), os.path.basename(args.model)
    used = {}
    if program is not None and args.board is None and not args.target:
        from ..programs.program_board import resolve

        res = resolve(program, board=None, target=None, overrides=args.overrides, model_name=name)
        spec, used = res.load(), res.used
        _note(res.notes)
    else:
        spec = load_for(args)
    if not args.quiet:
        print(configuration_line(f"{os.path.basename(args.model)} (its own code on QEMU)", spec, args, used),
              file=sys.stderr, flush=True)
    if args.trace:
        from .report import check_trace_path

        check_trace_path(args.trace)
    result, platform = fullsystem.run(spec, choice, elf=args.model, cmdline=cmdline, cwd=os.getcwd(),
                                      data_files=_parse_data(args.data, spec), cycle_limit=args.cyclelimit,
                                      time_limit=args.timelimit, stat=args.stat,
                                      strict=True if args.strict else None, check_stream=args.check_stream)
    _reports(args, platform, result)
    sys.stdout.flush()
    _failure(result)
    return result.exit_code
