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

import argparse
import os
import re
import shlex
import sys

from .. import __version__
from .cli_args import cycles, seconds
from ..boards import load_board
from ..boards.fvp_params import MPS4_SUBSYSTEM
from ..errors import ConfigProblems
from .entry import guarded
from . import session

FLAVOURS = {
    "u55": {"binary": "FVP_Corstone_SSE-300_Ethos-U55", "board": "corstone-300-ethos-u55-128", "npu": "Ethos-U55",
            "macs": "32, 64, 128, 256", "default_macs": 128, "platform": "Corstone-300"},
    "u65": {"binary": "FVP_Corstone_SSE-300_Ethos-U65", "board": "corstone-300-ethos-u65-512", "npu": "Ethos-U65",
            "macs": "256, 512", "default_macs": 512, "platform": "Corstone-300"},
    # the Corstone-320's NPU and CPU are under mps4_board.subsystem. (FVP default num_macs 256)
    "u85": {"binary": "FVP_Corstone_SSE-320", "board": "corstone-320-ethos-u85-256", "npu": "Ethos-U85",
            "macs": "128, 256, 512, 1024, 2048", "default_macs": 256, "platform": "Corstone-320",
            "prefix": MPS4_SUBSYSTEM},
}

_PROGRAM_MAGIC = re.compile(rb"ET\d\d|BP\d\d|TFL3")  # .pte, .bpte, .tflite (TFLite Micro image)

# (name, type, default, meaning): what -l lists. Only what this simulator acts on, plus the accepted no-ops.
_PARAMS = [
    ("ethosu.num_macs", "int", "{macs}", "MACs per cycle of the {npu}: {allowed}"),
    ("ethosu.extra_args", "string", "''",
     "--fast/-F: functional NPU (no timing); --pmu-trace FILE: the PMU trace; other options are refused"),
    ("mps3_board.uart0.out_file", "string", "'-'", "UART0 output: '-' for stdout or a file name"),
    ("mps3_board.uart0.shutdown_on_eot", "bool", "1", "stop the simulation on EOT (0x04) written to UART0"),
    ("mps3_board.uart0.shutdown_tag", "string", "''", "stop the simulation when this string is printed"),
    ("mps3_board.uart0.unbuffered_output", "bool", "0", "flush UART0 output after every character"),
    ("cpu0.CFGITCMSZ", "int", "-", "ITCM size code: 2^(N-1) KiB"),
    ("cpu0.CFGDTCMSZ", "int", "-", "DTCM size code: 2^(N-1) KiB"),
    ("cpu0.semihosting-cmd_line", "string", "''",
     "'executor_runner -m MODEL [-i INPUT]... [-o OUTBASE]': the program, inputs and output files"),
    ("cpu0.semihosting-cwd", "string", "''", "directory for relative semihosting paths"),
    ("cpu0.semihosting-enable", "bool", "1", "accepted (semihosting file I/O is always available)"),
    ("cpu0.semihosting-stack_base, -heap_base, -heap_limit, -stack_limit", "int", "-", "accepted, no effect"),
    ("mps3_board.visualisation.*, mps3_board.telnetterminal*.*, vis_hdlcd.*", "-", "-", "accepted, no effect"),
    ("mps3_board.uart[1-5].*, mps3_board.smsc_91c111.*, mps3_board.hostbridge.*", "-", "-", "accepted, no effect"),
    ("ethosu.diagnostics, mps3_board.DISABLE_GATING, cpu0.FPU/MVE/SECEXT/INITSVTOR", "-", "-",
     "accepted, no effect"),
    ("<board key>, e.g. npu.memory_mode, firmware.pools.temp.size", "-", "-",
     "any key of this simulator's board YAML (see `fvp config`)"),
]


class _Usage(Exception):
    """Bad command line: one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, never the usage block
        raise _Usage(message)


def build_parser(binary: str) -> argparse.ArgumentParser:
    p = _Parser(prog=binary, allow_abbrev=False, add_help=True,
                description=f"{binary} command line on the open fvp Corstone-300/320 simulator (not Arm's FVP).")
    p.add_argument("-C", "--parameter", dest="params", action="append", default=[], metavar="NAME=VALUE",
                   help="set a parameter (FVP name or board key)")
    p.add_argument("-f", "--config-file", dest="config_files", action="append", default=[], metavar="FILE",
                   help="read NAME=VALUE parameter lines from FILE")
    p.add_argument("-a", "--application", dest="apps", action="append", default=[], metavar="[INST=]FILE",
                   help="the runner ELF; the program in its network_model_sec section is run")
    p.add_argument("--data", action="append", default=[], metavar="[INST=]FILE@ADDRESS",
                   help="load FILE at ADDRESS (a .pte/.bpte there is the program to run)")
    p.add_argument("--timelimit", type=seconds, metavar="SECONDS", help="stop after SECONDS of host time")
    p.add_argument("--cpulimit", type=seconds, metavar="SECONDS",
                   help="stop after SECONDS of host time (host CPU time on the FVP)")
    p.add_argument("--cyclelimit", type=cycles, metavar="N", help="stop after N CPU cycles")
    p.add_argument("--simlimit", type=seconds, metavar="SECONDS", help="stop after SECONDS of simulated time")
    p.add_argument("--stat", action="store_true", help="print run statistics at the end")
    p.add_argument("-l", "--list-params", action="store_true", help="list the parameters and exit")
    p.add_argument("--list-instances", action="store_true", help="list the instances and exit")
    p.add_argument("-q", "--quiet", action="store_true", help="no start-up lines from the simulator")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    p.add_argument("--flavour", choices=sorted(FLAVOURS), help=argparse.SUPPRESS)
    for flag in ("-I", "--iris-server", "-A", "--iris-allow-remote", "-S", "--cadi-server"):
        p.add_argument(flag, dest="unsupported", action="append_const", const=flag, help=argparse.SUPPRESS)
    for flag in ("--iris-port", "--plugin", "--cadi-port"):
        p.add_argument(flag, dest="unsupported_v", action="append", help=argparse.SUPPRESS)
    return p


# ------------------------------------------------------------------------------------------------ helpers
def _strip_instance(text: str) -> tuple[str, str]:
    """``cpu0=app.elf`` -> (``cpu0``, ``app.elf``); a plain path has no instance."""
    m = re.match(r"^([A-Za-z_][\w.\[\]]*\*?|\*)=(.+)$", text)
    if m and "/" not in m.group(1):
        return m.group(1), m.group(2)
    return "", text


def _read_file(path: str, what: str, board: str | None = None) -> bytes:
    """A file the command line names, bounded (fvp.host.inputs): ``-f`` text by TEXT_LIMIT, a ``--data`` file or a
    program by the largest memory of ``board`` (the placement then checks the address)."""
    from ..bounded_read import read_input, read_text
    from .inputs import largest_memory

    if board is None:
        return read_text(path, label=f"{what} {path}")
    return read_input(path, largest_memory(load_board(board)), label=f"{what} {path}",
                      why="no memory of the board can hold it")


def _config_file_params(path: str) -> list[str]:
    out = []
    text = _read_file(path, "-f").decode("utf-8", "replace")
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise _Usage(f"-f {path}:{n}: expected NAME=VALUE, got {line!r}")
        name, _, value = line.partition("=")
        out.append(f"{name.strip()}={value.strip()}")
    return out


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def parse_semihosting_cmdline(text: str) -> dict:
    """``executor_runner -m model.pte -i a.bin -i b.bin -o out`` -> {model, inputs, output, argv}."""
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise _Usage(f"-C cpu0.semihosting-cmd_line: {e}") from None
    out = {"model": None, "inputs": [], "output": None, "argv": argv}
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("-m", "-i", "-o") and i + 1 < len(argv):
            v = argv[i + 1]
            if a == "-m":
                out["model"] = v
            elif a == "-i":
                out["inputs"].append(v)
            else:
                out["output"] = v
            i += 2
            continue
        raise _Usage(f"-C cpu0.semihosting-cmd_line: unknown runner argument {a!r}; "
                     f"the runner takes -m MODEL, -i INPUT (repeat), -o OUTBASE")
    if len(text) > 256:
        print(f"Warning: cpu0.semihosting-cmd_line is {len(text)} characters; the FVP truncates it at 256 "
              f"(this simulator does not)", file=sys.stderr)
    return out


def _known_parameter(name: str, value: str, flavour: str, binary: str) -> bool:
    """False (with the FVP's warning on stderr) for a parameter the FVP would not know either: the FVP warns and
    runs on, and scripts rely on that. A name under a board section (``npu.``, ``firmware.``, ``memory.``) is
    this simulator's own key and is left to the board loader, which refuses a misspelled one."""
    from ..boards.fvp_params import UnknownParameter, translate_fvp_param

    try:
        translate_fvp_param(name, value, {}, flavour)
    except UnknownParameter:
        print(f"Warning: {binary}: unknown parameter '{name}' ignored (-C {name}={value})", file=sys.stderr)
        return False
    except ValueError:  # a known parameter with a bad value: the loader says so, as an error
        pass
    return True


def _mlek_pool_overrides(elf, base, overrides, board_params, flavour) -> tuple[list, str]:
    """The pools of an MLEK application ELF, before the board is checked: the arena's region and size, and an NPU
    cache (``cache_arena``) as the board's fast scratch. MLEK's ``ethosu_mem_config.h`` has a cache in a
    Dedicated_Sram build only (the arena then in DDR), so an ELF with one runs in that memory mode unless
    ``-C npu.memory_mode`` says otherwise (Dedicated_Sram requires the fast scratch). Returns (overrides, note)."""
    from .elf_image import region_of

    links = load_board(base, list(overrides), fvp_flavour=flavour).firmware.link_regions
    out = []
    for pool, (addr, size) in sorted(elf.pools.items()):
        region = region_of(links, addr)
        out += ([f"firmware.pools.{pool}.region={region}"] if region else []) + [f"firmware.pools.{pool}.size={size}"]
        if pool == "fast_scratch":
            out += ["firmware.pools.fast_scratch.align=16", "firmware.pools.fast_scratch.npu=true"]
    if "fast_scratch" not in elf.pools or any(p.split("=", 1)[0].strip() == "npu.memory_mode" for p in board_params):
        return out, ""
    return ["npu.memory_mode=Dedicated_Sram"] + out, "; memory mode Dedicated_Sram (the ELF has an NPU cache)"


# FVP_EXIT_STATUS=fvp: the exit status Arm's FVP gives, for scripts that expect it (docs/differences.md)
EXIT_STATUS_ENV = "FVP_EXIT_STATUS"
_SH_FEATURES = ":semihosting-features"  # the semihosting extensions file newlib's _exit looks for


def _exit_convention() -> str:
    value = os.environ.get(EXIT_STATUS_ENV, "simulator")
    if value not in ("simulator", "fvp"):
        raise _Usage(f"{EXIT_STATUS_ENV}={value}: expected fvp (the exit status of Arm's FVP) or simulator (the "
                     f"default: 1 the program failed, 3 a limit was reached)")
    return value


def _fvp_status(result, host_cwd: str) -> int:
    """Arm's FVP's exit status for a run it carried to its end. The application's own status when it left
    through semihosting SYS_EXIT_EXTENDED, which newlib's ``_exit`` uses only when the semihosting cwd holds a
    ``:semihosting-features`` file with SH_EXT_EXIT_EXTENDED (the Corstone FVPs do not simulate the file: Arm's
    LLVM-embedded-toolchain test-support/run_fvp.py writes one for that reason); 0 otherwise: the EOT byte, a
    SYS_EXIT (which carries no status), a limit, a fault or an abort (the FVP says why in its log only)."""
    if result.reason == "exit":
        try:
            with open(os.path.join(host_cwd, _SH_FEATURES), "rb") as f:
                head = f.read(5)
        except OSError:
            head = b""
        if len(head) == 5 and head[:4] == b"SHFB" and head[4] & 1:
            return int(result.message) & 0xFF
    return 0


def _failure_line(result) -> str:
    """Why a run ended with a non-zero status, in one line (the log says it too, on stdout)."""
    reason, message = result.reason, result.message
    if reason == "hard_fault":
        why = f"the CPU took a hard fault: {message}"
    else:
        lines = [ln for ln in session.trailer_lines(reason, message, result.sim_time_ps // 1000)
                 if ln.strip() and not ln.startswith("[warning ]")]
        why = lines[-1] if lines else reason
        for prefix in ("Info: Simulation is stopping. Reason: ", "[critical] "):
            why = why.removeprefix(prefix)
    return f"{why.rstrip('.')} (exit status {result.exit_code})"


def _elf_problem(problem: str, elf, user_params: list, model_desc: str) -> str:
    """A board problem about a placement the drop-in took from the ELF, said in the ELF's terms (its symbol, or
    ``model_desc`` for the program), not in the ``-C`` keys the drop-in set for it: the user typed only
    ``user_params``."""
    m = re.search(r"firmware: (\w+) \((0x\w+\.\.0x\w+)\) overlaps (\w+) \((0x\w+\.\.0x\w+)\)", problem)
    if m:  # two placements on the same bytes (e.g. --data over the ELF's pools)
        def name(n):
            return model_desc if n == "model" else f"the ELF's {elf.pool_symbols.get(n, n)}"
        return f"-a {elf.path}: {name(m.group(1))} ({m.group(2)}) overlaps {name(m.group(3))} ({m.group(4)})"
    m = re.search(r"\bfirmware\.(?:pools\.(\w+)|model)\b", problem)
    if m is None or (m.group(1) is not None and m.group(1) not in elf.pools):
        return problem
    what = elf.pool_symbols.get(m.group(1), m.group(1)) if m.group(1) else elf.program_source
    yours = [p for p in user_params if p.split("=", 1)[0] in problem[:m.start()]]
    return (f"-a {elf.path}: {what}, as the ELF places it" + (f", with -C {', -C '.join(yours)}" if yours else "")
            + f": {problem[m.start():]}")


def _spelled(fl: dict, name: str) -> str:
    """A parameter or instance name of the Corstone-300 FVP as ``fl``'s FVP spells it (the Corstone-320: the CPU and
    NPU under ``mps4_board.subsystem.``, the board's devices under ``mps4_board.``)."""
    if "prefix" not in fl:
        return name
    name = re.sub(r"(?<![\w.])(ethosu|cpu0)\b", lambda m: fl["prefix"] + m.group(1), name)
    return name.replace("mps3_board.", "mps4_board.")


def _list_params(fl: dict) -> None:
    for name, typ, default, meaning in _PARAMS:
        default = default.format(macs=fl["default_macs"])
        meaning = meaning.format(npu=fl["npu"], allowed=fl["macs"])
        print(f"{_spelled(fl, name):60s} # ({typ}) default = {default} : {meaning}")


def _list_instances(fl: dict) -> None:
    for inst in ("cpu0", "ethosu", "mps3_board.uart0", "mps3_board.visualisation", "mps3_board.telnetterminal0"):
        print(_spelled(fl, inst))


# ------------------------------------------------------------------------------------------------ main
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

    return guarded(binary, body, (_Usage,))


def _run(args, fl: dict, flavour: str, binary: str) -> int:
    convention = _exit_convention()
    if args.version:
        print(f"fvp {__version__}: open {fl['platform']} simulator with the {binary} command line "
              f"(not Arm's Fast Model; https://developer.arm.com for the real FVP)")
        return 0
    if args.list_params:
        _list_params(fl)
        return 0
    if args.list_instances:
        _list_instances(fl)
        return 0
    unsupported = (args.unsupported or []) + (args.unsupported_v or [])
    if unsupported:
        raise _Usage(f"{unsupported[0]}: debug servers and plugins (Iris, CADI) are not supported by this simulator")

    # parameters: config files first, then -C in order; semihosting ones are taken out here
    params = [p for f in args.config_files for p in _config_file_params(f)] + list(args.params)
    semi_cmdline, semi_cwd, board_params = None, None, []
    cpu0 = fl.get("prefix", "") + "cpu0"  # the CPU's instance name on this FVP
    for item in params:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise _Usage(f"-C {item}: expected NAME=VALUE")
        if name == f"{cpu0}.semihosting-cmd_line":
            semi_cmdline = _unquote(value)
        elif name == f"{cpu0}.semihosting-cwd":
            semi_cwd = _unquote(value)
        elif _known_parameter(name, value, flavour, binary):
            board_params.append(f"{name}={value}")
    host_cwd = semi_cwd or os.getcwd()
    if semi_cwd is not None and not os.path.isdir(semi_cwd):
        raise _Usage(f"-C {cpu0}.semihosting-cwd={semi_cwd}: no such directory")

    # the application and the data files
    elf = None
    if len(args.apps) > 1:
        raise _Usage(f"-a: one application ({cpu0}) only; this model has a single CPU")
    if args.apps:
        inst, path = _strip_instance(args.apps[0])
        if inst and inst.rstrip("*") not in (cpu0, "cpu0", "", "*") and not inst.startswith((cpu0, "cpu0")):
            raise _Usage(f"-a {args.apps[0]}: unknown instance {inst!r}; the application runs on {cpu0}")
        from .elf_image import read_elf

        elf = read_elf(path)
    model, model_name, model_addr, data_files = None, None, None, []
    for item in args.data:
        _, spec = _strip_instance(item)
        path, sep, addr = spec.rpartition("@")
        if not sep or not path:
            raise _Usage(f"--data {item}: expected FILE@ADDRESS")
        addr = addr.rpartition(":")[2]
        try:
            address = int(addr, 0)
        except ValueError:
            raise _Usage(f"--data {item}: {addr!r} is not an address") from None
        data = _read_file(path, "--data", fl["board"])
        if len(data) >= 8 and _PROGRAM_MAGIC.fullmatch(data[4:8]) and model is None:
            model, model_name, model_addr = data, os.path.basename(path), address
        else:
            data_files.append((data, address))
    semi = parse_semihosting_cmdline(semi_cmdline) if semi_cmdline else None
    source = None
    if semi and semi["model"]:
        mpath = semi["model"] if os.path.isabs(semi["model"]) else os.path.join(host_cwd, semi["model"])
        model, model_name, model_addr = _read_file(mpath, "semihosting -m", fl["board"]), os.path.basename(mpath), None
        source = f"{semi['model']} (semihosting)"
    elif model is not None:
        source = f"{model_name} (--data @0x{model_addr:08x})"
    elif elf is not None and elf.program is not None:
        if not _PROGRAM_MAGIC.fullmatch(elf.program[4:8]):
            raise _Usage(f"-a {elf.path}: its {elf.program_source} holds neither an ExecuTorch program (.pte/.bpte) "
                         f"nor a .tflite (identifier {bytes(elf.program[4:8])!r})")
        model, model_name, model_addr = elf.program, os.path.basename(elf.path), None
        source = f"{os.path.basename(elf.path)}:{elf.program_source} ({len(model)} bytes)"
    if model is None:
        if elf is not None:
            raise _Usage(f"-a {elf.path}: the ELF holds neither an ExecuTorch program (network_model_sec section or "
                         f"model_pte symbol) nor a .tflite (MLEK's nn_model), and no program was given with --data "
                         f"FILE.pte@ADDRESS or cpu0.semihosting-cmd_line")
        raise _Usage("nothing to run: give -a app.elf (with the program in network_model_sec), "
                     f"--data model.pte@0x70000000, or -C {cpu0}.semihosting-cmd_line='executor_runner -m model.pte'")

    # the board: base for this binary, then what the program and the ELF say, then the user's -C
    from .program_board import is_tflite, resolve

    tflite = is_tflite(model)  # MLEK's dynamic-model flow: the TFLite Micro image on this binary's NPU
    res = resolve(model, board=None if tflite else fl["board"], overrides=board_params, model_name=model_name,
                  fvp_flavour=flavour)
    base = res.board
    overrides: list[str] = list(res.program_overrides)
    notes = [f"{what} {res.used[key][0]}" for key, what in (("memory_mode", "memory mode"),
                                                            ("system_config", "system config"))
             if key in res.used and res.used[key][1] == "program"]
    if res.cannot_run:  # the FVP runs it and the driver refuses it: say why up front
        from .et_build import flavour as flavour_of

        want = res.program.value("target")
        want_fl = FLAVOURS[flavour_of(want)]
        print(f"Warning: {model_name} was compiled for {want}; {res.cannot_run} ({_spelled(fl, 'ethosu.num_macs')}), "
              f"the Ethos-U driver refuses it: give -C {_spelled(want_fl, 'ethosu.num_macs')}={want.rsplit('-', 1)[-1]}"
              + (f" to {want_fl['binary']}" if want_fl is not fl else ""), file=sys.stderr)
    mode_note = ""
    if tflite and elf is not None and model is elf.program:
        extra, mode_note = _mlek_pool_overrides(elf, base, overrides, board_params, flavour)
        overrides += extra
    elf_layout = elf is not None and elf.runner_layout
    elf_mode_note = ""
    if elf_layout:  # the ELF's build placed the pools: the program's compile specs do not place them again
        overrides = [o for o in overrides if not o.startswith("firmware.pools.")]
        mode, src = res.used.get("memory_mode", ("", ""))
        if src == "program" and mode.startswith("Dedicated_Sram") and "fast_scratch" not in elf.pools:
            # no dedicated_sram: the ELF was not built for Dedicated_Sram; its driver runs the stream without a
            # fast scratch, in the memory mode run.sh builds for this NPU by default
            from .et_build import default_memory_mode

            elf_mode = default_memory_mode(res.program.value("target") or fl["board"].split("-", 2)[2])
            if elf_mode.startswith("Dedicated_Sram"):
                elf_mode = "Shared_Sram"
            overrides = [o for o in overrides if not o.startswith("npu.memory_mode=")] + [f"npu.memory_mode={elf_mode}"]
            notes = [n for n in notes if not n.startswith("memory mode ")]
            elf_mode_note = (f"memory mode {elf_mode}, not the program's {mode}: the ELF has no fast scratch "
                             f"(dedicated_sram), it was not built for {mode}")
    spec0 = load_board(base, overrides + board_params, fvp_flavour=flavour)
    links = spec0.firmware.link_regions
    from .elf_image import region_of

    elf_note = ""
    if elf is not None:
        for pool, (addr, size) in sorted(elf.pools.items()):
            region = region_of(links, addr)
            if region is not None:
                overrides.append(f"firmware.pools.{pool}.region={region}")
                if elf_layout:  # at the address the ELF's linker gave it
                    overrides.append(f"firmware.pools.{pool}.address={addr}")
            overrides.append(f"firmware.pools.{pool}.size={size}")
            if pool not in spec0.firmware.pools:  # a pool the board does not declare
                overrides.append(f"firmware.pools.{pool}.align=16")
                if pool == "fast_scratch":
                    overrides.append("firmware.pools.fast_scratch.npu=true")
        if elf_layout:  # a pool of the board that the ELF's build does not have
            overrides += [f"firmware.pools.{pool}.size=0" for pool in spec0.firmware.pools if pool not in elf.pools]
        if elf.etdump:  # built with the ETDump event tracer: the runner prints the #[RUN THIS] block
            overrides.append("firmware.options.etdump=true")
            if elf.etdump_debug != "none":  # and with ET_DUMP_(INTERMEDIATE_)OUTPUTS: the debug buffer too
                overrides.append(f"firmware.options.etdump_debug={elf.etdump_debug}")
        if elf.pools:
            elf_note = ("pools from the ELF: " + ", ".join(f"{k} {v[1]} bytes" for k, v in sorted(elf.pools.items()))
                        + mode_note)
        if elf_mode_note:
            elf_note = f"{elf_mode_note}; {elf_note}"
        if model_addr is None and elf.program is not None and model is elf.program:
            region = region_of(links, elf.program_address or 0)
            if region is not None and (region != spec0.firmware.model.region or elf_layout):
                overrides.append(f"firmware.model.region={region}")
                if elf_layout:
                    overrides.append(f"firmware.model.address={elf.program_address}")
        elif model_addr is None and elf_layout:
            # read from the host (semihosting -m): the runner reads it into its input_file pool; here it goes
            # after the ELF's pools in the model's region, where it overlaps nothing of the ELF's layout
            region = spec0.firmware.model.region
            ends = [a + n for a, n in elf.pools.values() if region_of(links, a) == region]
            if ends:
                overrides += [f"firmware.model.region={region}", f"firmware.model.address={-(-max(ends) // 16) * 16}"]
    if model_addr is not None:
        region = region_of(links, model_addr)
        if region is None:
            raise _Usage(f"--data {model_name}@0x{model_addr:08x}: the address is not in any memory the runner "
                         f"links (regions: {', '.join(links)})")
        if region != spec0.firmware.model.region or model_addr != links[region][0]:
            overrides += [f"firmware.model.region={region}", f"firmware.model.address={model_addr}"]
    try:
        spec = load_board(base, overrides + board_params, fvp_flavour=flavour)
        if elf is not None:  # the placements checked here, so that a conflict is said in the ELF's terms
            from ..boards import layout_firmware

            layout_firmware(spec, len(model))
    except ConfigProblems as e:
        if elf is None:
            raise
        desc = (f"--data {model_name}@0x{model_addr:08x}" if model_addr is not None
                else f"the program ({elf.program_source})")
        raise ConfigProblems([_elf_problem(p, elf, board_params, desc) for p in e.problems]) from None

    cycle_limit = args.cyclelimit
    if args.simlimit is not None:
        sim_cycles = int(args.simlimit * spec.cpu.clock_hz)
        cycle_limit = sim_cycles if cycle_limit is None else min(cycle_limit, sim_cycles)
    time_limit = args.timelimit
    if args.cpulimit is not None:
        time_limit = args.cpulimit if time_limit is None else min(time_limit, args.cpulimit)

    run_args = {"inputs": list(semi["inputs"]) if semi else [], "output": semi["output"] if semi else None,
                "embedded": False}
    if semi:
        run_args["cmdline"] = semi["argv"]
        run_args["argv"] = semi["argv"]  # what the semihosting runner's main() reads
    elif model_addr is not None and elf is not None and elf.program is None:
        run_args["model_from"] = "data"  # the ELF was built with ET_MODEL_PTE_ADDR (run_fvp.sh --elf --data)
    platform = session.build(spec, model=model, model_name=model_name, args=run_args, data_files=data_files,
                             host_cwd=host_cwd, cycle_limit=cycle_limit, time_limit=time_limit)
    image = session.checked_image(platform)
    if not args.quiet:
        npu = spec.npu
        macs = npu.variant.rsplit("-", 1)[-1] if npu else "?"
        say = [f"Info: fvp {__version__}, an open {fl['platform']} simulator standing in for {binary} "
               f"(this is not Arm's FVP)",
               f"Info: {spec.fvp_name}: Creating {fl['npu']} with config H{macs}"
               + (f" ({npu.system_config.name}, {npu.memory_mode.name})" if npu else ""),
               f"Info: application: {source}"
               + (f"; from its compile specs: {', '.join(notes)}" if notes else "")
               + (f"; {elf_note}" if elf_note else "")]
        print("\n".join(say), flush=True)
    result = session.run(platform, image.main, stat=args.stat)
    sys.stdout.flush()
    code = result.exit_code if convention == "simulator" else _fvp_status(result, host_cwd)
    if result.exit_code != 0:  # a harness that shows only stderr ("Failed running command") sees the reason
        note = f"; exit status {code} as Arm's FVP ({EXIT_STATUS_ENV}=fvp)" if code != result.exit_code else ""
        print(f"{binary}: error: {_failure_line(result)}{note}", file=sys.stderr, flush=True)
    return code


def main_u55(argv=None) -> int:
    return main(argv, "u55")


def main_u65(argv=None) -> int:
    return main(argv, "u65")


def main_u85(argv=None) -> int:
    """``FVP_Corstone_SSE-320``."""
    return main(argv, "u85")


if __name__ == "__main__":
    sys.exit(main())
