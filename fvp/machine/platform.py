"""Builds a board from its spec, places the program image and runs a firmware entry; says why it stopped.

``Platform(spec, model=...)`` walks the validated ``BoardSpec``: RAM regions at their non-secure and secure
windows, devices at theirs, the interrupt controller, the Ethos-U with its variant, system config and memory
mode; it places the model image where the firmware's linker layout puts ``network_model_sec`` and fills the
boot-info record. ``run(main)`` calls the firmware's entry with the bus handle and the boot info (the host
loads the image the YAML names, the way the FVP loads an ``.axf`` with ``-a``: ``fvp.host.programs.firmware_image``)
and returns a ``RunResult``: why the simulation stopped, the simulated time, the NPU's stream records. The
FVP's own closing lines, ``--stat`` and the exit status are the host's (``fvp.host.run.session``).
"""

from __future__ import annotations

import io
import os
import sys
import time
from dataclasses import dataclass, field

from hwdesc.boot import BootInfo, Memory, NpuInfo, Pool, RunArgs

from .bus import AddressMap, Bus, Ram
from ..boards import layout_firmware
from ..boards.outputs import open_output
from ..boards.schema import BoardSpec
from .cpu import CpuCostModel
from .devices.stub import StubDevice
from .devices.system import CortexM55System, InterruptController
from .devices.uart import CmsdkUart
from ..errors import ConfigError, FvpError, SimulationStop, StopReason
from .port import BusPort
from .sim import Simulator
from .written import WrittenMap


@dataclass
class RunResult:
    """Why the simulation stopped (``reason``, ``message`` its detail) and what the run measured."""

    reason: StopReason
    message: str
    sim_time_ps: int
    cpu_cycles: int
    charged_cpu_cycles: int
    wall_seconds: float
    cpu_seconds: float
    npu_streams: list = field(default_factory=list)
    guest_errors: list = field(default_factory=list)
    layout: dict = field(default_factory=dict)


class _Sink:
    """Where UART output goes: a binary stream (stdout's buffer) or a file."""

    def __init__(self, target):
        self.target = target

    def write(self, data: bytes) -> None:
        self.target.write(data)

    def flush(self) -> None:
        self.target.flush()


class _PacedPipe(_Sink):
    """The console on a pipe with the UART's ``unbuffered_output``: each line is pushed through the pipe and the
    simulation waits (at most ``PACE_S``) until the reader has taken it. Arm's FVP prints such a console a
    character at a time as the CPU runs its putc loop, so a reader that selects on the pipe and reads a line at
    a time (ExecuTorch's ``FvpRunnerSession``, waiting for ``SERVER_INFERENCE_DONE``) always keeps up; lines that
    reached such a reader in one chunk would wait in its buffer while it waits on the pipe. A reader that does
    not keep up within ``PACE_S`` turns the pacing off for the rest of the run. Linux reads what a pipe holds
    with FIONREAD; where that is not available the console is not paced."""

    PACE_S = 1.0

    def __init__(self, target, fd: int):
        super().__init__(target)
        self.fd = fd
        self.pacing = True

    def write(self, data: bytes) -> None:
        self.target.write(data)
        if b"\n" in data and self.pacing:
            self.target.flush()
            self._wait_until_read()

    def _wait_until_read(self) -> None:
        import array
        import fcntl
        import termios

        held = array.array("i", [0])
        deadline = time.monotonic() + self.PACE_S
        while True:
            try:
                fcntl.ioctl(self.fd, termios.FIONREAD, held)
            except OSError:
                self.pacing = False
                return
            if held[0] <= 0:
                return
            if time.monotonic() > deadline:
                self.pacing = False
                return
            time.sleep(0.0002)


def _stdout_pipe_fd() -> int | None:
    """stdout's file descriptor when it is a pipe (Linux and the like), else None."""
    import stat

    try:
        fd = sys.stdout.fileno()
        return fd if stat.S_ISFIFO(os.fstat(fd).st_mode) and sys.platform.startswith("linux") else None
    except (AttributeError, OSError, ValueError):
        return None


def _binary_stdout():
    return getattr(sys.stdout, "buffer", None) or _TextAsBinary(sys.stdout)


class _TextAsBinary:
    def __init__(self, text):
        self.text = text

    def write(self, data: bytes):
        self.text.write(data.decode("latin-1"))

    def flush(self):
        self.text.flush()


def _contiguous_groups(regions) -> list[list]:
    """Regions that follow each other without a gap (in both aliases) and share masters and kind."""
    groups: list[list] = []
    for m in sorted(regions, key=lambda r: r.base):
        if groups:
            p = groups[-1][-1]
            same_alias = (p.secure_base is None and m.secure_base is None) or (
                p.secure_base is not None and m.secure_base is not None and p.secure_base + p.size == m.secure_base)
            if p.base + p.size == m.base and same_alias and p.masters == m.masters and p.kind == m.kind:
                groups[-1].append(m)
                continue
        groups.append([m])
    return groups


class Platform:
    def __init__(self, spec: BoardSpec, *, model: bytes | None = None, model_name: str | None = None,
                 args: RunArgs | None = None, data_files: list[tuple[bytes, int]] = (), out=None,
                 host_cwd: str | None = None, cycle_limit: int | None = None, time_limit: float | None = None,
                 strict: bool | None = None, quiet_guest: bool = False, console=None,
                 read_limit: int | None = None, host_files: dict | None = None, check_stream: str | None = None,
                 stdin=None):
        """``read_limit`` bounds the firmware's semihosting reads; ``host_files`` (host path -> bytes) are the
        input files the host read before the run (``fvp.host.run.session.build`` reads the command line's);
        ``stdin`` is the semihosting terminal's input (a binary stream; default the host's stdin)."""
        self.spec = spec
        npu = spec.npu
        self.check_stream = check_stream or (getattr(npu, "check_stream", None) if npu else None) or "off"
        self.console = console  # a binary stream that receives the UART output instead of out_file
        self.out = out  # text stream for the simulator's own lines (default stdout)
        self.guest_errors: list[str] = []
        self.quiet_guest = quiet_guest
        self.strict = spec.simulation.strict if strict is None else strict
        cyc = cycle_limit if cycle_limit is not None else spec.simulation.cycle_limit
        tl = time_limit if time_limit is not None else spec.simulation.time_limit
        self.sim = Simulator(spec.cpu.clock_hz, cycle_limit=cyc, time_limit_s=tl)
        self.cpu = CpuCostModel(self.sim, spec.cpu.costs)
        self.nvic = InterruptController()
        self.amap = AddressMap()
        self.rams: dict[str, Ram] = {}
        for group in _contiguous_groups(spec.memory.values()):
            # adjacent regions with the same masters (ISRAM0 + ISRAM1) form one contiguous memory: an access
            # or a DMA may cross from one bank into the next, as on the real bus
            first = group[0]
            name = "+".join(m.name for m in group)
            size = sum(m.size for m in group)
            ram = Ram(name, size, first.masters, first.kind)
            for m in group:
                self.rams[m.name] = ram
            self.amap.add(first.base, size, ram, name, first.masters, secure=False)
            if first.secure_base is not None:
                self.amap.add(first.secure_base, size, ram, name, first.masters, secure=True)
        self.bus = Bus(self.amap)
        # --check-stream's shadow map: what has been written since the program was loaded (unwritten-read rule)
        self.written = WrittenMap(self.amap) if self.check_stream != "off" else None
        self.devices: dict = {}
        self._uart_files = []
        for d in spec.devices.values():
            dev = self._make_device(d)
            self.devices[d.name] = dev
            self.amap.add(d.base, d.size, dev, d.name, {"cpu"})
            if d.secure_base is not None:
                self.amap.add(d.secure_base, d.size, dev, d.name, {"cpu"}, secure=True)

        # program image and firmware layout
        self.loaded: list[tuple[int, int]] = []  # (address, size) the loader wrote: what a CPU engine copies in
        self.model = model
        self.layout = layout_firmware(spec, model_size=len(model) if model is not None else 0)
        if model is not None:
            addr, size = self.layout["model"]
            self.bus.view(addr, size, "cpu")[:] = memoryview(model)
            self._loaded(addr, size)
        for data, addr in data_files:
            try:
                self.bus.view(addr, len(data), "cpu")[:] = memoryview(data)
            except FvpError as e:
                raise ConfigError(f"--data @0x{addr:x}: {e}") from None
            self._loaded(addr, len(data))
        self.port = BusPort(self.bus, self.sim, self.cpu, self.nvic, guest_log=self._guest_error, cmdline=(args or RunArgs()).argv, host_cwd=host_cwd,
                            read_limit=read_limit, host_files=host_files, written=self.written, stdin=stdin,
                            before_input=self._flush_console)
        self.boot_info = self._boot_info(model_name, args or RunArgs())

    # ------------------------------------------------------------------ construction
    def _loaded(self, addr: int, size: int) -> None:
        self.loaded.append((addr, size))
        if self.written is not None:
            self.written.mark(addr, size)

    def _make_device(self, d):
        p = d.props
        if d.type == "cmsdk_uart":
            target = p["out_file"]  # the defaults of props are the declaration's (fvp/boards/schema.py)
            if self.console is not None:
                sink = _Sink(self.console)
            elif target in ("-", "", None):
                fd = _stdout_pipe_fd() if p["unbuffered_output"] else None
                sink = _Sink(_binary_stdout()) if fd is None else _PacedPipe(_binary_stdout(), fd)
            else:  # a board file may not replace files or write anywhere (fvp.boards.outputs)
                f = open_output(self.spec, f"devices.{d.name}.out_file", target)
                self._uart_files.append(f)
                sink = _Sink(f)
            return CmsdkUart(d.name, sink, shutdown_on_eot=p["shutdown_on_eot"],
                             shutdown_tag=p["shutdown_tag"], unbuffered=p["unbuffered_output"],
                             guest_error=self._guest_error)
        if d.type == "stub":
            return StubDevice(d.name, p["read_value"], note=self._stub_access)
        if d.type == "cortex-m55-system":
            return CortexM55System(d.name, lambda: self.sim.cpu_cycles, self.nvic, guest_error=self._guest_error)
        if d.type == "ethos-u":
            from .npu.arch import get_arch
            from .npu.device import EthosU

            npu = self.spec.npu
            if npu is None or npu.device != d.name:
                return StubDevice(d.name)
            return EthosU(d.name, get_arch(npu.variant), self.bus, self.sim, self.nvic.raise_irq, int(d.irq),
                          system_config=npu.system_config, memory_mode=npu.memory_mode, timing=npu.timing,
                          engine=npu.engine, max_commands=npu.max_commands, diagnostic=self._npu_diagnostic,
                          guest_error=self._guest_error, timing_params=npu.timing_params,
                          check_stream=self.check_stream, written=self.written)
        raise ConfigError(f"devices.{d.name}.type: unknown device type {d.type!r}")

    def _boot_info(self, model_name: str | None, args: RunArgs) -> BootInfo:
        spec = self.spec
        fw = spec.firmware
        npu_dev = spec.devices.get(spec.npu.device) if spec.npu else None
        uart = next((d for d in spec.devices.values() if d.type == "cmsdk_uart"), None)
        system = next((d for d in spec.devices.values() if d.type == "cortex-m55-system"), None)
        from .npu.arch import get_arch

        arch = get_arch(spec.npu.variant) if spec.npu else None
        model_address, model_size = self.layout["model"] if self.model is not None else (None, 0)
        return BootInfo(
            board=spec.name, cpu_type=spec.cpu.type, cpu_clock_hz=spec.cpu.clock_hz,
            memory={m.name: Memory(m.name, m.base, m.secure_base, m.size, tuple(sorted(m.masters)))
                    for m in spec.memory.values()},
            console_base=(uart.secure_base or uart.base) if uart else None,
            system_base=system.base if system else None,
            npu=None if npu_dev is None else NpuInfo(
                base=npu_dev.secure_base or npu_dev.base, irq=int(npu_dev.irq), variant=spec.npu.variant,
                macs_per_cc=arch.macs_per_cc_log2, product=arch.product, qconfig=spec.npu.memory_mode.qconfig,
                regioncfg=tuple(spec.npu.memory_mode.regioncfg), memory_mode=spec.npu.memory_mode.name,
                system_config=spec.npu.system_config.name, clock_hz=spec.npu.system_config.core_clock_hz),
            runtime=fw.runtime, allocator=fw.allocator, options=dict(fw.options),
            model_address=model_address, model_size=model_size,
            model_name=(model_name or "") if self.model is not None else "",
            pools={name: Pool(name, a, s, fw.pools[name].region) for name, (a, s) in self.layout.items()
                   if name != "model"},
            args=args)

    # ------------------------------------------------------------------ diagnostics
    def _guest_error(self, message: str) -> None:
        """The firmware misused the hardware: a warning with the simulated time, a failure in strict mode."""
        self.guest_errors.append(message)
        if self.strict:
            raise SimulationStop(StopReason.GUEST_ERROR, message)
        if not self.quiet_guest:
            self.say(f"[warning ][cpu0@0][{self.sim.now_ps // 1000} ns] guest error: {message}")

    def _stub_access(self, message: str) -> None:
        # accesses to unmodelled devices are only errors in strict mode (the firmware may probe them)
        if self.strict:
            self._guest_error(message)

    def _npu_diagnostic(self, message: str) -> None:
        npu = self.spec.npu.device if self.spec.npu else "ethosu"
        if message.startswith(("[critical]", "[error]", "[warning]")):  # critical, stream checker
            self.say(f"{message} [{npu}@0][{self.sim.now_ps // 1000} ns]")
        else:
            self.say(f"[warning ][{npu}@0][{self.sim.now_ps // 1000} ns] {message}")

    def say(self, line: str) -> None:
        """A line of the simulator's own (warnings, the host's trailer), after the UART's pending output."""
        self._flush_uarts()
        out = self.out or sys.stdout
        out.write(line + "\n")
        out.flush()

    def _flush_console(self) -> None:
        """The UARTs' pending output pushed through to the host (before the firmware waits for the host)."""
        self._flush_uarts()
        for dev in self.devices.values():
            if isinstance(dev, CmsdkUart):
                try:
                    dev.sink.flush()
                except (AttributeError, OSError, ValueError):
                    pass

    def _flush_uarts(self) -> None:
        for dev in self.devices.values():
            if isinstance(dev, CmsdkUart):
                try:
                    dev.flush()
                except SimulationStop:
                    pass

    # ------------------------------------------------------------------ running
    def run(self, cpu) -> RunResult:
        """Run a CPU engine until the simulation stops; returns why. ``cpu`` is a firmware entry
        ``main(bus_port, boot_info)`` or an engine with ``run(platform)``; either returns the application's exit
        code or raises ``SimulationStop``."""
        t0 = time.monotonic()
        c0 = time.process_time()
        try:
            rc = cpu.run(self) if hasattr(cpu, "run") else cpu(self.port, self.boot_info)
            rc = int(rc or 0)
            reason, message = StopReason.EXIT, str(rc)
        except (SimulationStop, Exception) as e:  # noqa: BLE001 - classified (or re-raised under FVP_DEBUG)
            reason, message = self.stop_reason(e)
        self._flush_uarts()
        return RunResult(reason=reason, message=message, sim_time_ps=self.sim.now_ps, cpu_cycles=self.sim.cpu_cycles,
                         charged_cpu_cycles=self.sim.charged_cpu_cycles, wall_seconds=time.monotonic() - t0,
                         cpu_seconds=time.process_time() - c0, npu_streams=self.npu_streams(),
                         guest_errors=list(self.guest_errors), layout=dict(self.layout))

    @staticmethod
    def stop_reason(e: BaseException) -> tuple[str, str]:
        """Why a firmware entry that raised ``e`` stopped the simulation: a ``SimulationStop``'s reason, an
        ``FvpError`` (``error``), anything else a bug in the firmware model (``crash``: one line, never a
        traceback, unless ``FVP_DEBUG`` is set, which re-raises it)."""
        if isinstance(e, SimulationStop):
            return e.reason, e.message
        if isinstance(e, FvpError):
            return StopReason.ERROR, str(e)
        if os.environ.get("FVP_DEBUG"):
            raise e
        return StopReason.CRASH, f"{type(e).__name__}: {e}"

    def flush_uarts(self) -> None:
        """Push the UARTs' pending output to their sinks (a resident firmware's step ends with it)."""
        self._flush_uarts()

    def console_mark(self) -> int | None:
        """Where the captured console (``console=BytesIO()``) stands now; None when the UART output is not
        captured."""
        self._flush_uarts()
        return self.console.tell() if isinstance(self.console, io.BytesIO) else None

    def console_since(self, mark: int | None) -> bytes:
        """The captured UART output since ``mark``, taken out of the buffer (a long session holds none)."""
        self._flush_uarts()
        if mark is None or not isinstance(self.console, io.BytesIO):
            return b""
        data = self.console.getvalue()[mark:]
        self.console.seek(0)
        self.console.truncate()
        return data

    def take_npu_streams(self) -> list:
        """The NPU's stream records so far, taken out of the devices (the next step starts with none)."""
        out = []
        for dev in self.devices.values():
            recs = getattr(dev, "streams", None)
            if recs:
                out.extend(recs)
                recs.clear()
        return out

    def close(self) -> None:
        """Close the UART output files and give back the memories. A platform holds reference cycles (devices
        and their register hooks), so without this its RAM would wait for the garbage collector's next full
        pass, and a host running program after program would meet freshly mapped pages (page faults) each time.
        Views taken before keep their bytes; a bus access afterwards is a BusFault naming the memory."""
        for f in self._uart_files:
            f.close()
        self._uart_files = []
        for ram in self.rams.values():  # banks that form one memory share it: releasing twice is harmless
            ram.release()

    def npu_streams(self) -> list:
        return [rec for dev in self.devices.values() for rec in getattr(dev, "streams", [])]
