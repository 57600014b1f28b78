"""The drop-in running an application ELF's own code on QEMU (``-a app.elf``, ``cpu.engine`` qemu or auto).

The board is the one the Python runner would use for the same command line when a program is known (the
``-m`` of the semihosting command line, a ``--data`` program, or the program the ELF holds): its NPU, system
config and memory mode then come from the program's compile specs, so the NPU's cycles and PMU counters are
those of the Python runner. Without a known program it is the binary's default board and ``-C``. The ELF's
build decides the rest (pools, placement); every ``--data`` file is loaded at its address; the semihosting
command line and cwd and the ``cpu0.semihosting-heap/stack`` parameters go to the application as given.
"""

from __future__ import annotations

import os

from ... import __version__
from ...boards import load_board
from ...errors import ConfigError
from ..run import fullsystem
from ..programs.kind import program_kind
from .application import Application, data_files
from .params import Usage, read_file
from .placement import board_for


def limits(args, spec) -> tuple:
    """``(cycle limit, time limit)`` of the command line: --cyclelimit and --simlimit (at the board's CPU clock),
    --timelimit and --cpulimit, the lower of each pair."""
    cycle_limit = args.cyclelimit
    if args.simlimit is not None:
        sim_cycles = int(args.simlimit * spec.cpu.clock_hz)
        cycle_limit = sim_cycles if cycle_limit is None else min(cycle_limit, sim_cycles)
    time_limit = args.timelimit
    if args.cpulimit is not None:
        time_limit = args.cpulimit if time_limit is None else min(time_limit, args.cpulimit)
    return cycle_limit, time_limit


def _known_program(fl, params, elf_path: str, files: list, cmdline: str):
    """``(bytes, name, address or None, ELF reading or None, source)`` of the program the command line names, or
    None."""
    arg = fullsystem.program_argument(cmdline)
    if arg is not None:
        path = arg if os.path.isabs(arg) else os.path.join(params.host_cwd, arg)
        try:
            return read_file(path, "semihosting -m", fl["board"]), os.path.basename(path), None, None, f"-m {arg}"
        except (ConfigError, Usage, OSError):
            return None  # the application says so itself when it cannot open it
    for path, content, address in files:
        if program_kind(content) is not None:
            return content, os.path.basename(path), address, None, f"--data {os.path.basename(path)}"
    try:
        from .elf_image import read_elf

        elf = read_elf(elf_path)
    except ConfigError:  # pyelftools missing or an ELF it cannot read: the board is the binary's own
        return None
    if elf.program is not None and program_kind(elf.program) is not None:
        return elf.program, os.path.basename(elf_path), None, elf, elf.program_source
    return None


def run_application(args, fl: dict, flavour: str, binary: str, params, choice, elf_path: str):
    files = data_files(args, fl)
    cmdline = params.semihosting_cmdline or os.path.basename(elf_path)
    program = _known_program(fl, params, elf_path, files, cmdline)
    notes = []
    if program is not None:
        model, name, addr, elf, source = program
        others = [(c, a) for _, c, a in files if not (addr is not None and a == addr and c is model)]
        app = Application(model, name, addr, source, elf, None, others)
        placement = board_for(app, fl, flavour, params.board_params)
        spec = placement.spec
        if placement.notes:
            notes.append(f"from the compile specs of {source}: {', '.join(placement.notes)}")
    else:
        spec = load_board(fl["board"], params.board_params, fvp_flavour=flavour)
    cycle_limit, time_limit = limits(args, spec)
    if not args.quiet:
        npu = spec.npu
        macs = npu.variant.rsplit("-", 1)[-1] if npu else "?"
        print("\n".join([
            f"Info: fvp {__version__}, an open {fl['platform']} simulator standing in for {binary} "
            f"(this is not Arm's FVP)",
            f"Info: {spec.fvp_name}: Creating {fl['npu']} with config H{macs}"
            + (f" ({npu.system_config.name}, {npu.memory_mode.name})" if npu else ""),
            f"Info: application: {os.path.basename(elf_path)}, {fullsystem.describe(choice)}"
            + "".join(f"; {n}" for n in notes)]), flush=True)
    return fullsystem.run(spec, choice, elf=elf_path, cmdline=cmdline, cwd=params.host_cwd, heapinfo=params.heapinfo,
                          data_files=[(c, a) for _, c, a in files], cycle_limit=cycle_limit, time_limit=time_limit,
                          stat=args.stat)[0]

