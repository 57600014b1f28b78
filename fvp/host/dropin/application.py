"""What the drop-in is asked to run: the application ELF (``-a``), the data files (``--data FILE@ADDRESS``) and
the program, which comes from the semihosting command line (``-m``), a ``--data`` file that is a program, or the
ELF's own program section, in that order.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..programs.kind import identifier, program_kind
from .params import Parameters, Usage, parse_semihosting_cmdline, read_file, strip_instance


@dataclass
class Application:
    """The program to run and where it came from, the ELF (or None), the other ``--data`` files and the parsed
    semihosting command line (or None)."""
    model: bytes
    model_name: str
    model_addr: int | None  # where --data placed it; None: the board places it
    source: str  # for the start-up line: "add.pte (semihosting)", "app.elf:network_model_sec (2160 bytes)", ...
    elf: object | None = None
    semi: dict | None = None
    data_files: list = field(default_factory=list)


def application_path(args, params: Parameters) -> str:
    """The file of ``-a [INSTANCE=]FILE`` (one application: the model has one CPU)."""
    cpu0 = params.cpu0
    if len(args.apps) > 1:
        raise Usage(f"-a: one application ({cpu0}) only; this model has a single CPU")
    inst, path = strip_instance(args.apps[0])
    if inst and inst.rstrip("*") not in (cpu0, "cpu0", "", "*") and not inst.startswith((cpu0, "cpu0")):
        raise Usage(f"-a {args.apps[0]}: unknown instance {inst!r}; the application runs on {cpu0}")
    return path


def data_files(args, fl: dict) -> list:
    """``--data [INST=]FILE@ADDRESS`` items: ``(path, bytes, address)`` each, read bounded."""
    out = []
    for item in args.data:
        _, spec = strip_instance(item)
        path, sep, addr = spec.rpartition("@")
        if not sep or not path:
            raise Usage(f"--data {item}: expected FILE@ADDRESS")
        addr = addr.rpartition(":")[2]
        try:
            address = int(addr, 0)
        except ValueError:
            raise Usage(f"--data {item}: {addr!r} is not an address") from None
        out.append((path, read_file(path, "--data", fl["board"]), address))
    return out


def find_application(args, fl: dict, params: Parameters) -> Application:
    cpu0 = params.cpu0
    elf = None
    if args.apps:
        path = application_path(args, params)
        from .elf_image import read_elf

        elf = read_elf(path)
    model, model_name, model_addr, others = None, None, None, []
    for path, content, address in data_files(args, fl):
        if program_kind(content) is not None and model is None:
            model, model_name, model_addr = content, os.path.basename(path), address
        else:
            others.append((content, address))
    semi = parse_semihosting_cmdline(params.semihosting_cmdline) if params.semihosting_cmdline else None
    source = None
    if semi and semi["model"]:
        mpath = semi["model"] if os.path.isabs(semi["model"]) else os.path.join(params.host_cwd, semi["model"])
        model, model_name, model_addr = read_file(mpath, "semihosting -m", fl["board"]), os.path.basename(mpath), None
        source = f"{semi['model']} (semihosting)"
    elif model is not None:
        source = f"{model_name} (--data @0x{model_addr:08x})"
    elif elf is not None and elf.program is not None:
        if program_kind(elf.program) is None:
            raise Usage(f"-a {elf.path}: its {elf.program_source} holds neither an ExecuTorch program (.pte/.bpte) "
                        f"nor a .tflite (identifier {identifier(elf.program)!r})")
        model, model_name, model_addr = elf.program, os.path.basename(elf.path), None
        source = f"{os.path.basename(elf.path)}:{elf.program_source} ({len(model)} bytes)"
    if model is None:
        if elf is not None:
            raise Usage(f"-a {elf.path}: the ELF holds neither an ExecuTorch program (network_model_sec section or "
                        f"model_pte symbol) nor a .tflite (MLEK's nn_model), and no program was given with --data "
                        f"FILE.pte@ADDRESS or cpu0.semihosting-cmd_line")
        raise Usage("nothing to run: give -a app.elf (with the program in network_model_sec), "
                    f"--data model.pte@0x70000000, or -C {cpu0}.semihosting-cmd_line='executor_runner -m model.pte'")
    return Application(model, model_name, model_addr, source, elf, semi, others)
