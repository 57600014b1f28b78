"""The FVP's command line as the drop-ins take it: the binaries' flavours, the parser, ``-C``/``-f`` parameters (the
FVP's names, this simulator's board keys, the semihosting ones taken out), the semihosting command line, and what
``--list-params`` / ``--list-instances`` print.

``parse_parameters`` turns the parsed arguments into ``Parameters``: the semihosting command line and cwd, the
host directory semihosting paths are relative to, and the ``-C`` values for the board loader (a name the FVP would
not know either is a warning and is dropped, as the FVP warns and runs on).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
from dataclasses import dataclass

from ...boards import load_board
from ...boards.fvp_params import MPS4_SUBSYSTEM
from ..cli_args import cycles, seconds

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
    ("cpu0.semihosting-heap_base, -heap_limit, -stack_base, -stack_limit", "int", "0",
     "SYS_HEAPINFO's answer to an application run on QEMU (0: no information)"),
    ("cpu0.engine", "string", "auto", "qemu: the application ELF's own code on QEMU; python: this simulator's "
     "firmware image in its place; auto: qemu for an ELF with code when QEMU is installed"),
    ("cpu0.cpi_mul, cpu0.cpi_div", "int", "1", "cycles per instruction of code run on QEMU: cpi_mul / cpi_div"),
    ("mps3_board.visualisation.*, mps3_board.telnetterminal*.*, vis_hdlcd.*", "-", "-", "accepted, no effect"),
    ("mps3_board.uart[1-5].*, mps3_board.smsc_91c111.*, mps3_board.hostbridge.*", "-", "-", "accepted, no effect"),
    ("ethosu.diagnostics, mps3_board.DISABLE_GATING, cpu0.FPU/MVE/SECEXT/INITSVTOR", "-", "-",
     "accepted, no effect"),
    ("<board key>, e.g. npu.memory_mode, firmware.pools.temp.size", "-", "-",
     "any key of this simulator's board YAML (see `fvp config`)"),
]


class Usage(Exception):
    """Bad command line: one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, never the usage block
        raise Usage(message)


def build_parser(binary: str) -> argparse.ArgumentParser:
    p = Parser(prog=binary, allow_abbrev=False, add_help=True,
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


def strip_instance(text: str) -> tuple[str, str]:
    """``cpu0=app.elf`` -> (``cpu0``, ``app.elf``); a plain path has no instance."""
    m = re.match(r"^([A-Za-z_][\w.\[\]]*\*?|\*)=(.+)$", text)
    if m and "/" not in m.group(1):
        return m.group(1), m.group(2)
    return "", text


def read_file(path: str, what: str, board: str | None = None) -> bytes:
    """A file the command line names, bounded (fvp.host.inputs): ``-f`` text by TEXT_LIMIT, a ``--data`` file or a
    program by the largest memory of ``board`` (the placement then checks the address)."""
    from ...bounded_read import read_input, read_text
    from ..inputs import largest_memory

    if board is None:
        return read_text(path, label=f"{what} {path}")
    return read_input(path, largest_memory(load_board(board)), label=f"{what} {path}",
                      why="no memory of the board can hold it")


def config_file_params(path: str) -> list[str]:
    out = []
    text = read_file(path, "-f").decode("utf-8", "replace")
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise Usage(f"-f {path}:{n}: expected NAME=VALUE, got {line!r}")
        name, _, value = line.partition("=")
        if "\0" in line:  # the FVP reads a C string, which ends there; nothing of it is taken as a file name
            raise Usage(f"-f {path}:{n}: {name.strip()}: the value holds a NUL byte")
        out.append(f"{name.strip()}={value.strip()}")
    return out


def unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def parse_semihosting_cmdline(text: str) -> dict:
    """``executor_runner -m model.pte -i a.bin -i b.bin -o out [--server_mode true]`` -> {model, inputs, output,
    argv, server_mode}."""
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise Usage(f"-C cpu0.semihosting-cmd_line: {e}") from None
    out = {"model": None, "inputs": [], "output": None, "argv": argv, "server_mode": False}
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--server_mode":  # ExecuTorch main's runner: true/false (the runner itself refuses other values)
            out["server_mode"] = i + 1 < len(argv) and argv[i + 1] == "true"
            i += 2
            continue
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
        raise Usage(f"-C cpu0.semihosting-cmd_line: unknown runner argument {a!r}; "
                     f"the runner takes -m MODEL, -i INPUT (repeat), -o OUTBASE, --server_mode true|false")
    if len(text) > 256:
        print(f"Warning: cpu0.semihosting-cmd_line is {len(text)} characters; the FVP truncates it at 256 "
              f"(this simulator does not)", file=sys.stderr)
    return out


def known_parameter(name: str, value: str, flavour: str, binary: str) -> bool:
    """False (with the FVP's warning on stderr) for a parameter the FVP would not know either: the FVP warns and
    runs on, and scripts rely on that. A name under a board section (``npu.``, ``firmware.``, ``memory.``) is
    this simulator's own key and is left to the board loader, which refuses a misspelled one."""
    from ...boards.fvp_params import UnknownParameter, translate_fvp_param

    try:
        translate_fvp_param(name, value, {}, flavour)
    except UnknownParameter:
        print(f"Warning: {binary}: unknown parameter '{name}' ignored (-C {name}={value})", file=sys.stderr)
        return False
    except ValueError:  # a known parameter with a bad value: the loader says so, as an error
        pass
    return True


def spelled(fl: dict, name: str) -> str:
    """A parameter or instance name of the Corstone-300 FVP as ``fl``'s FVP spells it (the Corstone-320: the CPU and
    NPU under ``mps4_board.subsystem.``, the board's devices under ``mps4_board.``)."""
    if "prefix" not in fl:
        return name
    name = re.sub(r"(?<![\w.])(ethosu|cpu0)\b", lambda m: fl["prefix"] + m.group(1), name)
    return name.replace("mps3_board.", "mps4_board.")


def list_params(fl: dict) -> None:
    for name, typ, default, meaning in _PARAMS:
        default = default.format(macs=fl["default_macs"])
        meaning = meaning.format(npu=fl["npu"], allowed=fl["macs"])
        print(f"{spelled(fl, name):60s} # ({typ}) default = {default} : {meaning}")


def list_instances(fl: dict) -> None:
    for inst in ("cpu0", "ethosu", "mps3_board.uart0", "mps3_board.visualisation", "mps3_board.telnetterminal0"):
        print(spelled(fl, inst))


@dataclass(frozen=True)
class Parameters:
    """What ``-C``/``-f`` say: the semihosting command line and cwd, the host directory semihosting paths are
    relative to, and the parameters left for the board loader (FVP names it translates, board keys)."""
    semihosting_cmdline: str | None
    semihosting_cwd: str | None
    host_cwd: str
    board_params: list
    cpu0: str  # the CPU's instance name on this FVP
    heapinfo: tuple = (0, 0, 0, 0)  # cpu0.semihosting-heap_base, -heap_limit, -stack_base, -stack_limit


def parse_parameters(args, fl: dict, flavour: str, binary: str) -> Parameters:
    """Config files first, then ``-C`` in order; the semihosting ones are taken out here."""
    params = [p for f in args.config_files for p in config_file_params(f)] + list(args.params)
    semi_cmdline, semi_cwd, board_params = None, None, []
    cpu0 = fl.get("prefix", "") + "cpu0"
    heap = dict.fromkeys(_HEAPINFO, 0)
    for item in params:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise Usage(f"-C {item}: expected NAME=VALUE")
        key = name.removeprefix(f"{cpu0}.semihosting-")
        if key in heap:
            try:
                heap[key] = int(unquote(value), 0) & 0xFFFFFFFF
            except ValueError:
                raise Usage(f"-C {name}={value}: expected an address (a number such as 0x20000000)") from None
        if name == f"{cpu0}.semihosting-cmd_line":
            semi_cmdline = unquote(value)
        elif name == f"{cpu0}.semihosting-cwd":
            semi_cwd = unquote(value)
        elif known_parameter(name, value, flavour, binary):
            board_params.append(f"{name}={value}")
    if semi_cwd is not None and not os.path.isdir(semi_cwd):
        raise Usage(f"-C {cpu0}.semihosting-cwd={semi_cwd}: no such directory")
    return Parameters(semi_cmdline, semi_cwd, semi_cwd or os.getcwd(), board_params, cpu0,
                      tuple(heap[k] for k in _HEAPINFO))


_HEAPINFO = ("heap_base", "heap_limit", "stack_base", "stack_limit")  # SYS_HEAPINFO's block, in its order
