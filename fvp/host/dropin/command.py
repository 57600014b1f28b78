"""``FVP_Corstone_SSE-300_Ethos-U55`` / ``_Ethos-U65`` / ``FVP_Corstone_SSE-320``: this simulator behind the
FVP's own command line.

Accepts the command lines ExecuTorch's ``run_fvp.sh`` and its pytest harness build, so existing scripts run
unchanged with this package on ``PATH``. The Corstone-300 binaries take the names below; ``FVP_Corstone_SSE-320``
(Cortex-M85 + Ethos-U85, the ``corstone-320-*`` boards) takes the same parameters in the MPS4 spelling:
``mps4_board.subsystem.ethosu.num_macs`` (128..2048, default 256), ``mps4_board.subsystem.ethosu.extra_args``,
``mps4_board.uart0.*``, ``mps4_board.subsystem.cpu0.semihosting-*``, ``mps4_board.visualisation.*`` and
``vis_hdlcd.*`` (fvp.boards.fvp_params); a name of the other FVP is a warning, as it is on that FVP:

- ``-C name=value`` / ``--parameter``: FVP parameters (``ethosu.num_macs``, ``mps3_board.uart0.*``,
  ``ethosu.extra_args``, ``cpu0.CFG[ID]TCMSZ``; visualisation and telnet ones are accepted without effect) and
  this simulator's board keys (``npu.memory_mode=...``, ``firmware.pools.temp.size=...``); ``-f FILE`` reads
  ``name=value`` lines;
- ``-a [cpu0=]app.elf``: the runner ELF. Its code is not executed (the Python ``arm_executor_runner`` stands in
  for it); the program in its ``network_model_sec`` section is run, with the pool sizes the ELF records; an MLEK
  application ELF's ``.tflite`` (``nn_model``) runs on the TFLite Micro image, with the ELF's tensor arena;
- ``--data [INST=]FILE@ADDRESS``: a ``.pte``/``.bpte`` is the program to run (placed at ADDRESS); anything else
  is loaded into memory as it is;
- ``-C cpu0.semihosting-cmd_line="executor_runner -m model.pte -i in0.bin -o out"`` (with
  ``cpu0.semihosting-cwd``): run that program with those input files, writing ``out-<i>.bin``;
- ``--timelimit`` / ``--cpulimit`` (host seconds), ``--cyclelimit`` (CPU cycles), ``--simlimit`` (simulated
  seconds), ``--stat``, ``--version``, ``-l/--list-params``, ``-q``.

When the program's Ethos-U compile specs name a memory mode and system config and no ``-C npu.memory_mode`` is
given, the board uses them, with the pools ExecuTorch's build sets for that mode (what a runner built by
``run.sh`` for that program has). Exit status: 0 ok, 1 the program failed, 2 bad usage, 3 a limit was reached;
a non-zero status always comes with one line on stderr saying why. ``FVP_EXIT_STATUS=fvp`` in the environment
gives Arm's FVP's statuses instead (0 for every run carried to its end, the application's own with
SYS_EXIT_EXTENDED; bad usage stays 2). A ``-C`` name the FVP would not know either
is a warning on stderr and the run goes on, as on the FVP; this simulator's own board keys (a name under a
board section such as ``npu.``) are checked, and a misspelled one is an error.
``python -m fvp.host.dropin`` behaves as the U55 binary (``--flavour=u65`` for the U65 one, ``--flavour=u85`` for
``FVP_Corstone_SSE-320``).
"""

from __future__ import annotations

import os
import sys

from hwdesc.boot import RunArgs

from ... import __version__
from ...errors import StopReason
from ..entry import guarded, printable
from ..run import fullsystem as _engines, session
from .application import application_path, find_application
from .fullsystem import limits, run_application
from .params import FLAVOURS, Usage, build_parser, list_instances, list_params, parse_parameters, spelled
from .placement import board_for


# FVP_EXIT_STATUS=fvp: the exit status Arm's FVP gives, for scripts that expect it (docs/differences.md)
EXIT_STATUS_ENV = "FVP_EXIT_STATUS"
_SH_FEATURES = ":semihosting-features"  # the semihosting extensions file newlib's _exit looks for


def _exit_convention() -> str:
    value = os.environ.get(EXIT_STATUS_ENV, "simulator")
    if value not in ("simulator", "fvp"):
        raise Usage(f"{EXIT_STATUS_ENV}={value}: expected fvp (the exit status of Arm's FVP) or simulator (the "
                     f"default: 1 the program failed, 3 a limit was reached)")
    return value


def _fvp_status(result, host_cwd: str) -> int:
    """Arm's FVP's exit status for a run it carried to its end. The application's own status when it left
    through semihosting SYS_EXIT_EXTENDED, which newlib's ``_exit`` uses only when the semihosting cwd holds a
    ``:semihosting-features`` file with SH_EXT_EXIT_EXTENDED (the Corstone FVPs do not simulate the file: Arm's
    LLVM-embedded-toolchain test-support/run_fvp.py writes one for that reason); 0 otherwise: the EOT byte, a
    SYS_EXIT (which carries no status), a limit, a fault or an abort (the FVP says why in its log only)."""
    if result.reason == StopReason.EXIT:
        try:
            with open(os.path.join(host_cwd, _SH_FEATURES), "rb") as f:
                head = f.read(5)
        except OSError:
            head = b""
        if len(head) == 5 and head[:4] == b"SHFB" and head[4] & 1:
            return int(result.message) & 0xFF
    return 0


def main(argv=None, flavour: str = "u55") -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    fl = FLAVOURS[flavour]
    binary = fl["binary"]

    def body():
        args = build_parser(binary).parse_args(argv)
        f, b, name = fl, binary, flavour
        if args.flavour:
            name = args.flavour
            f = FLAVOURS[name]
            b = f["binary"]
        return _run(args, f, name, b)

    return guarded(binary, body, (Usage,))


def _run(args, fl: dict, flavour: str, binary: str) -> int:
    convention = _exit_convention()
    if args.version:
        print(f"fvp {__version__}: open {fl['platform']} simulator with the {binary} command line "
              f"(not Arm's Fast Model; https://developer.arm.com for the real FVP)")
        return 0
    if args.list_params:
        list_params(fl)
        return 0
    if args.list_instances:
        list_instances(fl)
        return 0
    unsupported = (args.unsupported or []) + (args.unsupported_v or [])
    if unsupported:
        raise Usage(f"{unsupported[0]}: debug servers and plugins (Iris, CADI) are not supported by this simulator")
    params = parse_parameters(args, fl, flavour, binary)
    elf_path = application_path(args, params) if args.apps else None
    choice = _engines.choose(elf_path, _engines.setting(params.board_params), platform=fl["platform"].lower())
    if choice.engine == "qemu":
        result = run_application(args, fl, flavour, binary, params, choice, elf_path)
        return _finish(args, binary, convention, params.host_cwd, result)
    if choice.note:
        print(f"fvp: note: {choice.note}", file=sys.stderr, flush=True)
    app = find_application(args, fl, params)
    placement = board_for(app, fl, flavour, params.board_params)
    spec, notes, elf_note = placement.spec, placement.notes, placement.elf_note
    semi, elf, model_addr, host_cwd = app.semi, app.elf, app.model_addr, params.host_cwd
    cycle_limit, time_limit = limits(args, spec)

    if semi:  # argv: what the semihosting runner's main() reads (and SYS_GET_CMDLINE returns)
        run_args = RunArgs(inputs=semi["inputs"], output=semi["output"], argv=semi["argv"])
    elif model_addr is not None and elf is not None and elf.program is None:
        run_args = RunArgs(model_from="data")  # the ELF was built with ET_MODEL_PTE_ADDR (run_fvp.sh --elf --data)
    else:
        run_args = RunArgs()
    platform = session.build(spec, model=app.model, model_name=app.model_name, args=run_args,
                             data_files=app.data_files, host_cwd=host_cwd, cycle_limit=cycle_limit,
                             time_limit=time_limit)
    image = session.checked_image(platform)
    if not args.quiet:
        npu = spec.npu
        macs = npu.variant.rsplit("-", 1)[-1] if npu else "?"
        say = [f"Info: fvp {__version__}, an open {fl['platform']} simulator standing in for {binary} "
               f"(this is not Arm's FVP)",
               f"Info: {spec.fvp_name}: Creating {fl['npu']} with config H{macs}"
               + (f" ({npu.system_config.name}, {npu.memory_mode.name})" if npu else ""),
               f"Info: application: {app.source}"
               + (f"; from {'its ethos-u operator' if app.model[4:8] == b'TFL3' else 'its compile specs'}: "
                  f"{', '.join(notes)}" if notes else "")
               + (f"; {elf_note}" if elf_note else "")]
        if npu is not None and npu.timing == "none":  # ExecuTorch's test harness passes --fast
            say.append(f"Info: {spelled(fl, 'ethosu.extra_args')}=--fast: the NPU's timing model is off (the FVP's "
                       f"fast mode): NPU cycles, AXI beats and the PMU counters are not modelled and read 0 or 1; "
                       f"leave the option out for cycle figures")
        print("\n".join(say), flush=True)
    result = session.run(platform, image.main, stat=args.stat)
    sys.stdout.flush()
    return _finish(args, binary, convention, host_cwd, result)


def _finish(args, binary: str, convention: str, host_cwd: str, result) -> int:
    code = result.exit_code if convention == "simulator" else _fvp_status(result, host_cwd)
    if result.exit_code != 0:  # a harness that shows only stderr ("Failed running command") sees the reason
        note = f"; exit status {code} as Arm's FVP ({EXIT_STATUS_ENV}=fvp)" if code != result.exit_code else ""
        print(f"{binary}: error: {printable(session.failure_line(result))}{note}", file=sys.stderr, flush=True)
    return code


def main_u55(argv=None) -> int:
    return main(argv, "u55")


def main_u65(argv=None) -> int:
    return main(argv, "u65")


def main_u85(argv=None) -> int:
    """``FVP_Corstone_SSE-320``."""
    return main(argv, "u85")

