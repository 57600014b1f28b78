"""The ``fvp`` command: run programs on a simulated Corstone-300, inspect boards and command streams.

``fvp run [MODEL]`` boots the board (default: Corstone-300 + Ethos-U55-128), places the program where the
runner's linker script puts it, runs the firmware named in the board YAML and prints its UART output and the
FVP's own trailer. Without MODEL it runs the program built into the firmware image: the ExecuTorch tutorial's
delegated ``x + x``. Exit status: 0 success, 1 the program failed (fatal log line, fault, verification), 2 bad
usage or configuration, 3 a simulation limit was reached.
"""

from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from .cli_args import OneLineParser, cycles, seconds
from ..boards import ConfigProblems, as_written, available_boards, board_for_target, load_board
from .entry import EXIT_USAGE, guarded
from ..errors import ConfigError
from . import session

def _add_board_options(p: argparse.ArgumentParser, multiple: bool = False) -> None:
    if multiple:
        p.add_argument("-c", "--config", dest="boards", action="append", metavar="BOARD", default=[],
                       help="a board to compare (repeat); names from `fvp boards` or YAML paths")
    else:
        p.add_argument("-c", "--config", dest="board", metavar="BOARD", default=None,
                       help="board: a name from `fvp boards` or a path to a YAML file (default: default)")
    p.add_argument("--target", metavar="NPU", default=None,
                   help="shortcut for the default board of an NPU: ethos-u55-32/64/128/256, ethos-u65-256/512 "
                        "(Corstone-300), ethos-u85-128/256/512/1024/2048 (Corstone-320)")
    p.add_argument("-C", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                   help="override a board key (firmware.allocator=minimal, npu.variant=ethos-u55-256, "
                        "firmware.pools.method.size=1MiB) or pass an FVP parameter (ethosu.num_macs=256, "
                        "mps3_board.uart0.out_file=-, mps3_board.uart0.shutdown_on_eot=1; visualisation "
                        "and telnet parameters are accepted and ignored)")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="fvp",
        description="An open, cycle-approximate model of Arm's Corstone-300 FVP (Cortex-M55 + Ethos-U55/U65) "
                    "that runs ExecuTorch programs (.pte/.bpte) with a Python arm_executor_runner.")
    parser.add_argument("--version", action="version", version=f"fvp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="run a program on the board (no MODEL: the embedded tutorial program)",
                         description="Run an ExecuTorch program (.pte or .bpte) on the simulated board. Without "
                                     "MODEL, run the tutorial's delegated x + x program built into the firmware.",
                         epilog="exit status: 0 the program ran and ended with EOT; 1 it failed (a fatal F line, an "
                                "NPU or CPU fault, a failed bundled verification); 2 bad usage, board or model file; "
                                "3 a simulation limit (--cyclelimit, --timelimit) was reached; --vela without Vela installed or a "
                                "Vela failure (its last line is said) is 2")
    run.add_argument("model", nargs="?", metavar="MODEL",
                     help="a .pte, .bpte or .tflite file (default: the embedded program)")
    _add_board_options(run)
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
                     help="no start-up lines from the simulator, as on the drop-in (fvp run prints none anyway)")
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

    dis = sub.add_parser("disasm", help="disassemble the Ethos-U command streams of a program",
                         description="Print, per Ethos-U delegate, every command of its stream (offset, words, "
                                     "mnemonic, fields) and a one-line summary per NPU operation.")
    dis.add_argument("model", metavar="MODEL", help="a .pte or .bpte file")
    dis.add_argument("--summary", action="store_true", help="print only the per-operation summary")

    ins = sub.add_parser("inspect", help="describe a program: methods, inputs/outputs, delegates, operators, memory",
                         description="Print a program's methods, their inputs and outputs (dtype, shape, dim order, "
                                     "quantization), delegates with their compile specs, the operators it needs and "
                                     "whether each is available here, planned memory per mem_id and the pool sizes "
                                     "the runner needs. Exit status: 0, or 2 for a file that is not a program.")
    ins.add_argument("model", metavar="MODEL", help="a .pte or .bpte file")
    ins.add_argument("--json", action="store_true", help="print the facts as JSON")

    elf = sub.add_parser("elf", help="write a runner ELF holding a program, for the FVP drop-in's -a",
                         description="Write an ELF laid out like ExecuTorch's arm_executor_runner: the program in "
                                     "network_model_sec (symbol model_pte) and the runner's pools for the board the "
                                     "program resolves to (as fvp run resolves it), so FVP_Corstone_SSE-300_Ethos-U55 "
                                     "(FVP_Corstone_SSE-320 for an Ethos-U85 program) -a FILE runs it. The ELF holds "
                                     "no Cortex-M code (Arm's FVP cannot run it). A .tflite gets an ML Embedded "
                                     "Evaluation Kit application's layout (nn_model, the tensor arena activationBuf).")
    elf.add_argument("model", metavar="MODEL", help="a .pte, .bpte or .tflite file")
    elf.add_argument("-o", "--output", required=True, metavar="FILE", help="the ELF to write")
    _add_board_options(elf)

    cmp_ = sub.add_parser("compare", help="run a program on several boards and compare NPU cycles, PMU counters, "
                                          "traffic and memory",
                          description="Run MODEL on every board given with -c (repeat; a board may carry its own "
                                      "overrides: -c 'default,npu.memory_mode=Sram_Only'; --target NPU adds that "
                                      "NPU's default board) and print the figures side by side. With several "
                                      "MODELs (e.g. one compiled per NPU size) and no -c, each runs on the board its "
                                      "compile specs name (target, system config, memory mode); with as many -c as "
                                      "MODELs, they pair up.")
    cmp_.add_argument("model", metavar="MODEL", nargs="+", help="a .pte or .bpte file (or several)")
    _add_board_options(cmp_, multiple=True)
    cmp_.add_argument("--csv", metavar="FILE", help="also write the table as CSV (one row per board)")
    cmp_.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    cmp_.add_argument("--plot", metavar="FILE.png", help="bar chart of NPU cycles and traffic (needs matplotlib)")
    cmp_.add_argument("--timelimit", type=seconds, metavar="SECONDS", help="host time limit per board")

    sub.add_parser("boards", help="list the boards in the config directory")

    sub.add_parser("bench", help="measure simulation speed (see `fvp bench --help`)", add_help=False)

    sub.add_parser("sweep", help="run programs over a grid of board keys (see `fvp sweep --help`)", add_help=False)

    cfg = sub.add_parser("config", help="print the resolved board (after extends: and -C overrides)")
    _add_board_options(cfg)
    cfg.add_argument("--all", action="store_true",
                     help="include every Vela system config and memory mode, not only the selected ones")
    return parser


def _load(args) -> "object":
    board = getattr(args, "board", None)
    if getattr(args, "target", None):
        if board is not None:
            raise ConfigProblems(["use either -c/--config or --target, not both"])
        board = board_for_target(args.target)
    return load_board(board, args.overrides)


def _read_model(path: str) -> bytes:
    from .inputs import read_program

    return read_program(path)  # bounded: a program must fit the region the board places it in


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
        from ..bounded_read import read_input
        from .inputs import memory_limit

        out.append((read_input(path, memory_limit(spec, address) if spec is not None else 1 << 32,
                               label=f"--data {item}", why=f"it must fit the memory at 0x{address:08x}"), address))
    return out


def _note(lines) -> None:
    for line in lines:
        print(f"fvp: note: {line}", file=sys.stderr)


def cmd_run(args) -> int:
    if args.target and args.board is not None:
        raise ConfigProblems(["use either -c/--config or --target, not both"])
    model_name = None
    embedded = False
    if args.model:
        from .program_board import resolve

        model = _read_model(args.model)
        model_name = os.path.basename(args.model)
        res = resolve(model, board=args.board, target=args.target, overrides=args.overrides, model_name=model_name)
        spec = res.load()
        _note(res.notes)
        if args.vela or args.vela_args:
            from .vela import prepare

            model, model_name = prepare(model, model_name, spec, args.vela_args, note=lambda line: _note([line]))
    else:
        if args.vela or args.vela_args:
            raise ConfigProblems(["--vela: give the MODEL (.tflite) to compile"])
        from .firmware_image import default_image

        spec = _load(args)
        model, model_name = default_image(spec)
        embedded = True
    if args.trace:
        from .report import check_trace_path

        check_trace_path(args.trace)
    if args.etdump:
        from ..safe_write import check_writable

        r = check_writable(args.etdump)
        if not r.ok:
            raise ConfigError(f"--etdump {args.etdump}: cannot write: {r.strerror}")
    options = getattr(spec.firmware, "options", None) or {}
    debug = options.get("etdump_debug", "none") != "none"
    if debug and not (args.etdump or options.get("etdump") is True):
        raise ConfigError("firmware.options.etdump_debug needs the ETDump (--etdump FILE or "
                          "-C firmware.options.etdump=true)")
    if args.etdump_debug_buffer:
        from ..safe_write import check_writable

        if not (args.etdump and debug):
            raise ConfigError("--etdump-debug-buffer needs --etdump FILE and -C firmware.options.etdump_debug="
                              "outputs|intermediate")
        r = check_writable(args.etdump_debug_buffer)
        if not r.ok:
            raise ConfigError(f"--etdump-debug-buffer {args.etdump_debug_buffer}: cannot write: {r.strerror}")
    elif args.etdump and debug:
        raise ConfigError("firmware.options.etdump_debug with --etdump: name the debug buffer's file too "
                          "(--etdump-debug-buffer FILE)")
    run_args = {"inputs": args.inputs, "output": args.output, "embedded": embedded, "etdump": args.etdump,
                "etdump_debug_buffer": args.etdump_debug_buffer}
    platform = session.build(spec, model=model, model_name=model_name, args=run_args,
                             data_files=_parse_data(args.data, spec), cycle_limit=args.cyclelimit,
                             time_limit=args.timelimit, strict=True if args.strict else None,
                             check_stream=args.check_stream)
    result = session.run(platform, stat=args.stat)
    if args.profile or args.trace:
        from .report import print_profile, write_trace

        if args.profile:
            print_profile(platform, result)
        if args.trace:
            write_trace(platform, result, args.trace)
    return result.exit_code


def cmd_disasm(args) -> int:
    from .disasm_model import disassemble_model

    return disassemble_model(_read_model(args.model), args.model, summary_only=args.summary)


def cmd_inspect(args) -> int:
    from .inspect import inspect_model

    return inspect_model(_read_model(args.model), args.model, as_json=args.json)


def cmd_elf(args) -> int:
    if args.target and args.board is not None:
        raise ConfigProblems(["use either -c/--config or --target, not both"])
    from .elf_writer import write_runner_elf

    return write_runner_elf(_read_model(args.model), os.path.basename(args.model), args.output, board=args.board,
                            target=args.target, overrides=args.overrides,
                            note=lambda line: print(line, file=sys.stderr))


def cmd_boards(args) -> int:
    for name in available_boards():
        try:
            spec = load_board(name)
            print(f"{name:32s} {spec.npu.variant:14s} {spec.npu.system_config.name:28s} {spec.npu.memory_mode.name}")
        except ConfigError as e:
            print(f"{name:32s} (invalid: {str(e).splitlines()[0]})")
    return 0


def cmd_config(args) -> int:
    import yaml

    spec = _load(args)
    raw = {k: v for k, v in spec.raw.items() if not k.startswith("_")}
    order = ["board", "memory", "devices", "cpu", "npu", "firmware", "simulation", "system_configs", "memory_modes"]
    raw = {k: raw[k] for k in order if k in raw} | {k: v for k, v in raw.items() if k not in order}
    if not args.all and spec.npu is not None:  # the selected system config and memory mode, not Vela's whole table
        raw["system_configs"] = {k: v for k, v in raw.get("system_configs", {}).items()
                                 if k == spec.npu.system_config.name}
        raw["memory_modes"] = {k: v for k, v in raw.get("memory_modes", {}).items() if k == spec.npu.memory_mode.name}
    print(f"# board: {spec.name} ({', '.join(spec.files)})")
    print(yaml.safe_dump(as_written(raw), sort_keys=False, default_flow_style=False).rstrip())
    return 0


def cmd_compare(args) -> int:
    from .compare import compare

    boards = list(args.boards) + ([f"target:{args.target}"] if args.target else [])
    return compare(args.model, boards, args.overrides, csv_path=args.csv, json_path=args.json,
                   plot_path=args.plot, timelimit=args.timelimit)


COMMANDS = {"run": cmd_run, "disasm": cmd_disasm, "inspect": cmd_inspect, "elf": cmd_elf, "compare": cmd_compare,
            "boards": cmd_boards, "config": cmd_config}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        from .bench import main as bench_main

        return bench_main(argv[1:])
    if argv[:1] == ["sweep"]:
        from .sweep.command import main as sweep_main

        return sweep_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    return guarded("fvp", lambda: COMMANDS[args.command](args))


if __name__ == "__main__":
    sys.exit(main())
