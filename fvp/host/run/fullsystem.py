"""Which CPU engine runs an application ELF, and running it on QEMU (``fvp run APP.elf``, the drop-ins' ``-a``).

``choose(elf_path, setting)``: an ELF with code runs on QEMU (``fvp.machine.qemu``) when ``cpu.engine`` is
``qemu``, or ``auto`` (the default) and QEMU is installed; an ELF without code (``fvp elf`` output) and
``cpu.engine=python`` run this project's firmware image in its place, as before. With ``auto``, an ELF with code
and no usable QEMU runs the Python firmware with one ``note:`` saying its code was not executed and how to
install QEMU; with ``qemu`` the missing QEMU is an error (exit status 2). The Corstone-320 has no QEMU machine
(QEMU 7.2 has no MPS4 board): its ELFs run the Python firmware.

``run(spec, choice, ...)``: the board's platform without a program placed (the ELF places or reads its own), the
``--data`` files loaded, the engine run, the FVP's trailer printed (``session.run``).
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass

from hwdesc.boot import RunArgs

from ...errors import ConfigError
from . import session

ENGINE_KEY = "cpu.engine"


@dataclass(frozen=True)
class Choice:
    engine: str  # "qemu" or "python"
    image: object = None  # fvp.machine.qemu.image.LoadImage, when the ELF was read for its code
    note: str = ""  # why an ELF with code runs the Python firmware (auto mode without QEMU)
    qemu: tuple = ()  # (path, version) of the QEMU that runs it


def setting(board_params: list, default: str = "auto") -> str:
    """``cpu.engine`` as the command line sets it (``-C cpu.engine=...`` or the FVP name ``cpu0.engine``); the
    board loader checks the value."""
    value = default
    for item in board_params:
        name, _, v = item.partition("=")
        if name.strip() in (ENGINE_KEY, "cpu0.engine") or name.strip().endswith(".cpu0.engine"):
            value = v.strip().strip("'\"")
    return value


def choose(elf_path: str | None, engine: str, *, platform: str = "corstone-300", label: str | None = None) -> Choice:
    """The engine for application ``elf_path`` (None: no ELF, the Python firmware) under ``cpu.engine``; a problem
    names the file as ``label`` (default ``-a PATH``, the drop-in's)."""
    if elf_path is None or engine == "python":
        return Choice("python")
    if engine not in ("auto", "qemu"):
        raise ConfigError(f"{ENGINE_KEY}={engine}: expected auto, qemu or python")
    from ...machine.qemu.image import read_image
    from ...machine.qemu.process import QemuUnavailable, check_qemu

    label = label or f"-a {elf_path}"
    image = read_image(elf_path, label)
    if not image.has_code:
        if engine == "qemu":
            raise ConfigError(f"{label}: {ENGINE_KEY}=qemu, but the ELF holds no code to run (an `fvp elf` "
                              f"output runs on this simulator's firmware image: {ENGINE_KEY}=auto)")
        return Choice("python", image)
    if platform != "corstone-300":
        why = "QEMU has no machine for the Corstone-320 (MPS4)"
        if engine == "qemu":
            raise ConfigError(f"{label}: {ENGINE_KEY}=qemu: {why}")
        return Choice("python", image, note=f"{os.path.basename(elf_path)} holds Cortex-M code that was not "
                                            f"executed: {why}; this simulator's firmware image ran in its place")
    try:
        qemu = check_qemu()
    except QemuUnavailable as e:
        if engine == "qemu":
            raise ConfigError(f"{label}: {ENGINE_KEY}=qemu: {e}") from None
        return Choice("python", image, note=f"{os.path.basename(elf_path)} holds Cortex-M55 code that was not "
                                            f"executed (this simulator's firmware image ran in its place): {e}")
    return Choice("qemu", image, qemu=qemu)


def program_argument(cmdline: str) -> str | None:
    """The ``-m FILE`` of an ExecuTorch runner's command line, if it has one (it tells the board, as a program's
    compile specs do); any other argument is the application's business."""
    try:
        argv = shlex.split(cmdline)
    except ValueError:
        return None
    for i, a in enumerate(argv[:-1]):
        if a == "-m":
            return argv[i + 1]
    return None


# where an arm_executor_runner ELF holds its program (pte_to_header.py: section network_model_sec, the array
# model_pte, in C++ the internal-linkage _ZL9model_pte); the drop-in's elf_image reads the same with pyelftools
_PROGRAM_SECTION, _PROGRAM_SYMBOLS = "network_model_sec", ("_ZL9model_pte", "model_pte")


def elf_program(path: str) -> bytes | None:
    """The ExecuTorch program an application ELF holds (for the board its compile specs name), or None."""
    from ...machine.qemu.elf32 import Elf32

    try:
        with open(path, "rb") as f:
            elf = Elf32(f.read())
        syms = elf.symbols(_PROGRAM_SYMBOLS, sizes=True)
        for name in _PROGRAM_SYMBOLS:
            if name in syms and syms[name][1]:
                data = elf.bytes_at(*syms[name])
                if data is not None:
                    return data
        sec = next((s for s in elf.sections if s.name == _PROGRAM_SECTION and s.size), None)
        return elf.section_data(sec) if sec is not None else None
    except (OSError, ValueError):
        return None


def describe(choice: Choice) -> str:
    path, version = choice.qemu
    return f"its own code on QEMU {'.'.join(map(str, version))} (mps3-an547, {path})"


def run(spec, choice: Choice, *, elf: str, cmdline: str = "", cwd: str | None = None, heapinfo=(0, 0, 0, 0),
        data_files=(), cycle_limit=None, time_limit=None, stat: bool = False, strict=None, check_stream=None):
    """Run ``elf``'s code on QEMU on the board ``spec``; ``(outcome of session.run, the platform)``."""
    from ...machine.qemu.engine import EngineOptions, QemuEngine

    engine = QemuEngine(EngineOptions(elf=elf, cmdline=cmdline or shlex.quote(os.path.basename(elf)),
                                      cwd=cwd or os.getcwd(), heapinfo=heapinfo), image=choice.image)
    engine.prepare(spec)  # the ELF's fit on both memory maps: one line each, before anything starts
    platform = session.build(spec, model=None, args=RunArgs(), host_cwd=cwd, data_files=list(data_files),
                             cycle_limit=cycle_limit, time_limit=time_limit, strict=strict,
                             check_stream=check_stream)
    result = session.run(platform, engine, stat=stat)
    sys.stdout.flush()
    return result, platform
