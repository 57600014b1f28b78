"""The firmware's view of the machine: the bus protocol it is given and the boot-info record.

Firmware code never imports the simulator. The platform hands the entry point an object that satisfies
``Bus`` (register and memory access, WFI, the CPU cost hook, semihosting) and a plain mapping with the board
facts a real image would get from its linker script and device headers (``BootInfo``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


class Bus(Protocol):
    def read32(self, addr: int) -> int: ...
    def write32(self, addr: int, value: int) -> None: ...
    def read8(self, addr: int) -> int: ...
    def write8(self, addr: int, value: int) -> None: ...
    def write_repeated(self, addr: int, data: bytes) -> None: ...
    def view(self, addr: int, size: int) -> np.ndarray: ...
    def read(self, addr: int, size: int) -> bytes: ...
    def write(self, addr: int, data) -> None: ...
    def memcpy(self, dst: int, src: int, size: int) -> None: ...
    def memset(self, dst: int, value: int, size: int) -> None: ...
    def work(self, kind: str, amount: float = 1.0) -> None: ...
    def wait_for_interrupt(self) -> int: ...
    def cpu_cycles(self) -> int: ...
    def now_ps(self) -> int: ...
    def host_read_file(self, path: str) -> bytes | None: ...
    def host_write_file(self, path: str, data: bytes): ...  # .ok, .opened, .written, .errno, .strerror
    def exit(self, code: int = 0) -> None: ...
    def abort(self, reason: str = "") -> None: ...
    def guest_error(self, message: str) -> None: ...
    def host_note(self, message: str) -> None: ...
    def trace(self, phase: str, category: str, name: str) -> None: ...


@dataclass(frozen=True)
class Pool:
    name: str
    address: int
    size: int
    region: str


@dataclass(frozen=True)
class NpuInfo:
    base: int
    irq: int
    variant: str
    macs_per_cc: int
    product: int
    qconfig: int
    regioncfg: tuple
    memory_mode: str
    system_config: str
    clock_hz: int


@dataclass(frozen=True)
class BootInfo:
    board: str
    cpu_clock_hz: int
    console_base: int | None
    system_base: int | None
    npu: NpuInfo | None
    runtime: str
    allocator: str
    options: dict
    model_address: int | None
    model_size: int
    model_name: str
    pools: dict  # name -> Pool
    args: dict

    @classmethod
    def from_mapping(cls, m: dict) -> "BootInfo":
        npu = m.get("npu")
        model = m.get("model") or {}
        fw = m.get("firmware") or {}
        return cls(
            board=m.get("board", ""),
            cpu_clock_hz=m["cpu"]["clock_hz"],  # the board's (the platform always gives it)
            console_base=(m.get("console") or {}).get("base"),
            system_base=(m.get("system") or {}).get("base"),
            npu=None if npu is None else NpuInfo(
                base=npu["base"], irq=npu["irq"], variant=npu["variant"], macs_per_cc=npu["macs_per_cc"],
                product=npu["product"], qconfig=npu["qconfig"], regioncfg=tuple(npu["regioncfg"]),
                memory_mode=npu["memory_mode"], system_config=npu["system_config"], clock_hz=npu["clock_hz"]),
            runtime=fw.get("runtime") or "auto",
            allocator=fw.get("allocator") or "arm",
            options=dict(fw.get("options") or {}),
            model_address=model.get("address"),
            model_size=model.get("size", 0),
            model_name=model.get("name", ""),
            pools={k: Pool(k, v["address"], v["size"], v["region"]) for k, v in (m.get("pools") or {}).items()},
            args=dict(m.get("args") or {}),
        )
