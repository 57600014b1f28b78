"""The ``fvp`` command: its subcommands, each in the room of what it runs.

``fvp run`` is ``run.command``; ``fvp elf`` writes with ``dropin.elf_writer``; ``fvp compare``, ``fvp bench``,
``fvp sweep``, ``fvp disasm`` and ``fvp inspect`` have their own modules; ``fvp boards`` and ``fvp config`` (the
board files) are here. Exit status: 0 success, 1 the program failed (fatal log line, fault, verification), 2 bad
usage or configuration, 3 a simulation limit was reached.
"""

from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from ..boards import ConfigProblems, as_written, available_boards, load_board
from ..errors import ConfigError
from .cli_args import OneLineParser, add_board_options, load_for, seconds
from .entry import EXIT_USAGE, guarded
from .programs.identify import read_checked_program
from .run import command as run_command

def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="fvp",
        description="An open, cycle-approximate model of Arm's Corstone-300 and Corstone-320 FVPs (Cortex-M55 + "
                    "Ethos-U55/U65, Cortex-M85 + Ethos-U85) that runs ExecuTorch programs (.pte/.bpte) with a Python "
                    "arm_executor_runner and Vela-compiled TFLite Micro models (.tflite) with a Python TFLite Micro "
                    "runner; the FVP drop-ins (FVP_Corstone_SSE-300_Ethos-U55/-U65, FVP_Corstone_SSE-320) take "
                    "Arm's FVP command line.")
    parser.add_argument("--version", action="version", version=f"fvp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run_command.add_parser(sub)

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
                                     "Evaluation Kit application's layout (nn_model, the tensor arena activationBuf). "
                                     "Without MODEL: a semihosting runner (the program comes from -m on the drop-in's "
                                     "semihosting command line). Every -C is written into the ELF (pools, placements, "
                                     "the ETDump build: firmware.options.etdump/etdump_debug) or refused.")
    elf.add_argument("model", metavar="MODEL", nargs="?",
                     help="a .pte, .bpte or .tflite file; none: a semihosting runner, whose program the drop-in "
                          "reads from the host (-C cpu0.semihosting-cmd_line='executor_runner -m program.pte ...'), "
                          "as ExecuTorch's test harness runs it (docs/executorch-tests.md)")
    elf.add_argument("-o", "--output", required=True, metavar="FILE", help="the ELF to write")
    add_board_options(elf)

    cmp_ = sub.add_parser("compare", help="run a program on several boards and compare NPU cycles, PMU counters, "
                                          "traffic and memory",
                          description="Run MODEL on every board given with -c (repeat; a board may carry its own "
                                      "overrides: -c 'default,npu.memory_mode=Sram_Only'; --target NPU adds that "
                                      "NPU's default board) and print the figures side by side. With several "
                                      "MODELs (e.g. one compiled per NPU size) and no -c, each runs on the board its "
                                      "compile specs name (target, system config, memory mode); with as many -c as "
                                      "MODELs, they pair up.")
    cmp_.add_argument("model", metavar="MODEL", nargs="+", help="a .pte or .bpte file (or several)")
    add_board_options(cmp_, multiple=True)
    cmp_.add_argument("--csv", metavar="FILE", help="also write the table as CSV (one row per board)")
    cmp_.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    cmp_.add_argument("--plot", metavar="FILE.png", help="bar chart of NPU cycles and traffic (needs matplotlib)")
    cmp_.add_argument("--timelimit", type=seconds, metavar="SECONDS", help="host time limit per board")

    sub.add_parser("boards", help="list the boards in the config directory")

    sub.add_parser("bench", help="measure simulation speed (see `fvp bench --help`)", add_help=False)

    sub.add_parser("sweep", help="run programs over a grid of board keys (see `fvp sweep --help`)", add_help=False)

    cfg = sub.add_parser("config", help="print the resolved board (after extends: and -C overrides)")
    add_board_options(cfg)
    cfg.add_argument("--all", action="store_true",
                     help="include every Vela system config and memory mode, not only the selected ones")
    return parser


def cmd_disasm(args) -> int:
    from .disasm_model import disassemble_model

    return disassemble_model(read_checked_program(args.model), args.model, summary_only=args.summary)


def cmd_inspect(args) -> int:
    from .inspect import inspect_model

    return inspect_model(read_checked_program(args.model), args.model, as_json=args.json)


def cmd_elf(args) -> int:
    if args.target and args.board is not None:
        raise ConfigProblems(["use either -c/--config or --target, not both"])
    from .dropin.elf_writer import write_runner_elf

    program = read_checked_program(args.model) if args.model else None
    return write_runner_elf(program, os.path.basename(args.model or "semihosting"), args.output, board=args.board,
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

    spec = load_for(args)
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

    boards = list(args.boards) + [f"target:{t}" for t in args.target]
    return compare(args.model, boards, args.overrides, csv_path=args.csv, json_path=args.json,
                   plot_path=args.plot, timelimit=args.timelimit)


COMMANDS = {"run": run_command.cmd_run, "disasm": cmd_disasm, "inspect": cmd_inspect, "elf": cmd_elf, "compare": cmd_compare,
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
    app_args = []
    if argv[:1] == ["run"] and "--" in argv:  # fvp run APP.elf -- ARG...: the application's command line
        cut = argv.index("--")
        argv, app_args = argv[:cut], argv[cut + 1:]
    args = parser.parse_args(argv)
    if args.command == "run":
        if args.app_args:  # words after MODEL without --
            parser.error(f"unrecognized arguments: {' '.join(args.app_args)}")
        args.app_args = app_args
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    return guarded("fvp", lambda: COMMANDS[args.command](args))


if __name__ == "__main__":
    sys.exit(main())
