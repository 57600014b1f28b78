"""The boot-info record: what the platform tells a firmware image at reset, typed, in the neutral package.

A real image learns these facts from its linker script and the device headers it was built with (where the
pools and the program are, the NPU's base address, IRQ and configuration, the console's base); here the platform
builds one ``BootInfo`` from the board (``fvp.machine.platform``) and the firmware receives it as it is
(``firmware.arm_executor_runner``, ``firmware.tflm``). Both halves import this module and neither defines a
second copy or its own defaults: every field is given by the platform. ``RunArgs`` is what the host's command
line gives the run (the platform passes it on in ``BootInfo.args``).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping


@dataclass(frozen=True)
class Pool:
    """A memory pool the firmware's linker script places: its symbol's name, address, size and memory region."""
    name: str
    address: int
    size: int
    region: str


@dataclass(frozen=True)
class Memory:
    """A memory of the board as the firmware's map sees it: base (and secure alias), size, the bus masters."""
    name: str
    base: int
    secure_base: int | None
    size: int
    masters: tuple


@dataclass(frozen=True)
class NpuInfo:
    """The Ethos-U the image is built for and how its driver programs it (``ETHOSU_TARGET_NPU_CONFIG``, the
    QCONFIG and REGIONCFG values of the memory mode), with the board's system config for the record."""
    base: int
    irq: int
    variant: str
    macs_per_cc: int  # log2 of the MACs per cycle, as CONFIG.macs_per_cc reads
    product: int
    qconfig: int
    regioncfg: tuple
    memory_mode: str
    system_config: str
    clock_hz: int


@dataclass(frozen=True)
class BootInfo:
    board: str
    cpu_type: str
    cpu_clock_hz: int
    memory: Mapping  # name -> Memory
    console_base: int | None
    system_base: int | None
    npu: NpuInfo | None
    runtime: str  # firmware.runtime
    allocator: str  # firmware.allocator
    options: Mapping  # firmware.options
    model_address: int | None  # None: no program placed
    model_size: int
    model_name: str
    pools: Mapping  # name -> Pool
    args: "RunArgs"

    def __post_init__(self):  # read-only views: the firmware cannot change what the platform said
        for name in ("memory", "options", "pools"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))


@dataclass(frozen=True)
class RunArgs:
    """What the run's command line gives the image, as the FVP gives a real image its semihosting command line
    and host files: the input files (``-i``), the output basename (``-o``), the ETDump files, the semihosting
    runner's argv (``cpu0.semihosting-cmd_line``, also what SYS_GET_CMDLINE returns), whether the program is the
    one baked into the image (no MODEL), and where the program came from (``"data"``: ``--data`` to an ELF built
    with ``ET_MODEL_PTE_ADDR``)."""
    inputs: tuple = ()
    output: str | None = None
    etdump: str | None = None
    etdump_debug_buffer: str | None = None
    argv: tuple | None = None
    embedded: bool = False
    model_from: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "inputs", tuple(self.inputs or ()))
        if self.argv is not None:
            object.__setattr__(self, "argv", tuple(self.argv))
