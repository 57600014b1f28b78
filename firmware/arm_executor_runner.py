"""A Python counterpart of ExecuTorch's ``examples/arm/executor_runner/arm_executor_runner.cpp``.

It runs the ``.pte``/``.bpte`` image the platform placed in memory (the FVP's ``network_model_sec``) the way
the real runner does on a Corstone-300 or, built for an Ethos-U85, on a Corstone-320 (the same steps and log
lines; the driver and the perf monitor's counters are the U85's): set up the method allocator pool and the
planned buffers, load the method (the EthosUBackend parses each Vela blob), prepare the inputs (all ones,
files given with ``-i``, or the bundled test inputs), run the inferences with the perf monitor, print the
outputs, verify bundled outputs, print the memory statistics and end with ``Program complete, exiting.`` and
the EOT byte.

The memory allocator is a separate piece chosen by name (``firmware.allocator``), and everything that differs
between runtime versions (struct sizes, accounting, log strings, step order) comes from the runtime profile
(``firmware.runtime``). Entry point: ``main(bus, boot_info)``. Beside it, in ``executor_runner/``: the options
a board may set and ``check_config`` (validates the firmware section of the board), the BundleIO check, and what
the image offers the host (``default_image``, the tutorial's ``x + x`` baked in per NPU configuration;
``ethosu_command_streams`` and ``inspect_program``, the program reader for ``fvp disasm`` and ``fvp inspect``;
``check_program``, what ``fvp run`` refuses before it runs).
"""

from __future__ import annotations

import base64
import sys

import numpy as np

from hwdesc.boot import BootInfo

from .drivers.ethosu import driver_for
from .drivers.uart import Uart
from .executorch import log
from .executorch.bundled import is_bundled, load_bundled
from .executorch.error import Error, RuntimeFailure
from .executorch.ethosu_backend import EthosUBackend
from .executorch.etdump import INTERMEDIATE_OUTPUTS, ETDumpGen
from .executorch.kernels import REGISTRY
from .executorch.memory import HierarchicalAllocator, MemoryManager, make_allocator
from .executorch.method import Method, RtTensor
from .executorch.perf_monitor import PerfMonitor, npu_family
from .executorch.profiles import (DEFAULT_PROFILE, ETDUMP_DEBUG_FLAG, SEMIHOSTING_PROFILE, TUTORIAL_PROFILE,
                                  bind, get_profile)
from .executorch.program import load_program
from .executor_runner.bundle_check import BundleCheck
from .executor_runner.image import (check_program, default_image, ethosu_command_streams, ethosu_configurations,
                                     inspect_program)
from .executor_runner.options import DEBUG_BUFFER_SIZE, ETDUMP_DEBUG_LEVELS, check_config
from .npy import load_npy

# the kernels as the runtime registers them (the operator registry, executorch/kernels/registry.py): each behind
# the unboxing wrapper that checks its arguments' EValue tags against the types declared with the kernel
RUNTIME_KERNELS = REGISTRY.unboxed()


__all__ = ["check_config", "check_program", "default_image", "ethosu_command_streams", "ethosu_configurations",
           "inspect_program", "main", "session"]


class _Abort(Exception):
    """An ``ET_CHECK_MSG`` failed: the fatal line is printed, the runner aborts."""


class Runner(BundleCheck):
    def __init__(self, bus, boot: BootInfo):
        self.bus = bus
        self.boot = boot
        self.console = Uart(bus, boot.console_base)
        self.log = log.EtLog(self.console, bus)
        log.install(self.log)
        name = boot.runtime
        if name == "auto":  # the semihosting build (a runner command line) is modelled by one profile only
            name = (TUTORIAL_PROFILE if boot.args.embedded else
                    SEMIHOSTING_PROFILE if boot.args.argv is not None else DEFAULT_PROFILE)
        self.profile_name = name
        self.profile = get_profile(name)
        self.msgs = self.profile["messages"]
        opts = boot.options
        self.inferences = int(opts.get("inferences", 1))
        self.log_outputs = bool(opts.get("log_outputs", True))
        self.log_inputs = bool(opts.get("log_inputs", False))
        self.atol = float(opts.get("atol", 0.01))
        self.rtol = float(opts.get("rtol", 0.01))
        # ETDump: printed base64 (the runner built with ET_EVENT_TRACER_ENABLED), or written to the host file
        # ``fvp run --etdump FILE`` names (as the semihosting build writes etdump.bin)
        self.etdump_path = boot.args.etdump
        self.tracer = None
        self.etdump_enabled = bool(opts.get("etdump", False)) or bool(self.etdump_path)
        # ET_DUMP_OUTPUTS / ET_DUMP_INTERMEDIATE_OUTPUTS (only with the event tracer) and ET_DEBUG_BUFFER_SIZE
        self.debug_level = ETDUMP_DEBUG_LEVELS[opts.get("etdump_debug", "none")] if self.etdump_enabled else 0
        self.debug_buffer_size = int(opts.get("etdump_debug_buffer_size", DEBUG_BUFFER_SIZE))
        self.debug_buffer_path = boot.args.etdump_debug_buffer
        npu = boot.npu
        # the runner is built for the board's NPU (run.sh: -DETHOSU_TARGET_NPU_CONFIG=<target>): it selects the
        # driver (ETHOSU55/65 or ETHOSU85 with ETHOSU_MACS) and the perf monitor's PMU events
        variant = npu.variant if npu else None
        self.perf = PerfMonitor(bus, npu.base if npu else None, boot.system_base, self.profile, npu_family(variant))
        self.driver = None
        fast = boot.pools.get("fast_scratch")
        self.fast_scratch = (fast.address, fast.size) if fast is not None and fast.size else None
        if npu is not None:
            driver_cls, build = driver_for(variant)
            self.driver = driver_cls(bus, npu.base, qconfig=npu.qconfig, regioncfg=npu.regioncfg,
                                     fast_memory=self.fast_scratch, console=self.console, hooks=self.perf, **build)
        self.backends = {"EthosUBackend": EthosUBackend(self.driver, self.perf, self.fast_scratch)} if npu else {}
        self.write_failures: list[str] = []  # output files that could not be written (the run fails at its end)
        # the build the ELF stands for, where the profile models it: SEMIHOSTING (main() reads the argv of
        # cpu0.semihosting-cmd_line) and ET_MODEL_PTE_ADDR (the program given with --data to an ELF without one)
        self.semi = self.profile.get("semihosting")
        self.argv = boot.args.argv if self.semi else None
        self.pte_addr = bool(self.profile.get("pte_addr_span")) and boot.args.model_from == "data"
        self.input_files = None  # [(path, bytes)] read by the semihosting main(), in argv order
        self.server_mode = False  # --server_mode true: inferences on request from stdin (runner_server.py)
        self.file_alloc = None   # the semihosting runner's input_file_allocator

    # ------------------------------------------------------------------ helpers
    def check(self, ok: bool, cond: str, message: str, why: str = "") -> None:
        """``ET_CHECK_MSG``: on failure print ``F ... In function f(), assert failed (cond): msg`` and abort;
        ``why`` is added to the reason the simulator reports (the trailer, the drop-in's error line), not to the
        runner's own line."""
        if ok:
            return
        frame = sys._getframe(1)
        self.log.log("F", f"In function {frame.f_code.co_name}(), assert failed ({cond}): {message}", depth=1)
        raise _Abort(f"{message} ({why})" if why else message)

    def method_pool_hint(self, pool_size: int) -> None:
        """What to do when the method pool cannot hold what loading the method needs (as the Ethos-U backend
        says for the temp pool): a larger one, at least the planned memory and a margin for the method's
        loaded objects (a few KiB for the corpus programs, ``method_allocator_loaded``)."""
        planned = sum(getattr(self, "planned_sizes", ()))
        need = planned + max(64 << 10, planned // 8)
        unit, name = (1 << 20, "MiB") if need >= 1 << 20 else (1 << 10, "KiB")
        self.bus.host_note(f"the method pool ({pool_size} bytes) is too small for this program: its planned memory "
                           f"is {planned} bytes, plus what loading the method takes: give it a larger one, e.g. "
                           f"-C firmware.pools.method.size={-(-need // unit)}{name} (fvp inspect shows the planned "
                           f"memory)")

    def checked(self, fn, *args):
        """``fn(*args)`` under the runner's fatal checks: a failed ``ET_CHECK`` aborts the run."""
        try:
            return fn(*args)
        except _Abort as e:
            self.bus.abort(str(e))

    # ------------------------------------------------------------------ main
    def main(self, until_ready: bool = False) -> int:
        """``main()``; ``until_ready``: stop once the inputs are prepared (the session entry goes on from there)."""
        bus, boot = self.bus, self.boot
        self.perf.cpu_init()
        if self.driver is not None and not self.driver.init():
            log.fatal("Failed to initialize Ethos-U device")
            bus.abort("Ethos-U init failed")
        try:
            if self.argv is not None:
                self.semihosting_args()
            self.check(boot.model_address is not None, "model_pte != nullptr", self.msgs["model_not_initialized"])
            image = bus.view(boot.model_address, boot.model_size)
            head = image[:8].tobytes()
            magic = head[4:8].decode("latin-1")
            log.info(self.profile["pte_line"].format(addr=boot.model_address, magic=magic,
                                                     first=chr(head[0]) if head else "", size=boot.model_size))
            self.runner_init(image)
            if not until_ready:
                self.after_init()
        except _Abort as e:
            bus.abort(str(e))
        return 0

    def semihosting_args(self) -> None:
        """``main()`` of the semihosting runner: echo argv, read the ``-i`` input files (counted from 1) and the
        ``-m`` program into the input file pool, require ``-o``; a problem ends the run with ``_exit(1)``.
        Simplified: a file that cannot be opened is reported with errno 2 (ENOENT) whatever the cause (the
        bus's semihosting read returns no errno)."""
        msgs, semi, argv, bus = self.msgs, self.semi, self.argv, self.bus
        log.info(msgs["semi_params"])
        compiled = "-m" not in argv  # ET_COMPILED_PTE: the program is baked in
        if len(argv) < semi["argc_min_compiled" if compiled else "argc_min_model_file"]:
            for line in msgs["semi_argc_compiled" if compiled else "semi_argc_model"]:
                log.fatal(line)
            bus.exit(1)
        log.info(msgs["semi_arg0"].format(a=argv[0]))
        for i in range(1, len(argv), 2):
            log.info(msgs["semi_arg_pair"].format(a=argv[i], b=argv[i + 1] if i + 1 < len(argv) else "(null)"))
        pool = self.boot.pools.get("input_file")
        self.file_alloc = make_allocator(self.boot.allocator, "input_file", pool.address if pool else 0,
                                         pool.size if pool else semi["file_pool_size"], bus,
                                         self.profile["accounting"])
        self.input_files, output, i = [], None, 0
        while i < len(argv):
            flag, value = argv[i], argv[i + 1] if i + 1 < len(argv) else None
            if flag == "-i" and value is not None:
                n = len(self.input_files) + 1
                log.info(msgs["reading_input"].format(index=n, path=value))
                data = self.read_host_file(value)
                if data is None:
                    log.error(msgs["reading_input_failed"].format(index=n, path=value))
                    bus.exit(1)
                self.input_files.append((value, data))
            elif flag == "-m" and value is not None:
                log.info(msgs["reading_pte"].format(path=value))
                if self.read_host_file(value) is None:
                    log.error(msgs["reading_pte_failed"].format(path=value))
                    bus.exit(1)
            elif flag == "-o" and value is not None:
                output = value
            elif flag == "--server_mode":  # ExecuTorch main's semihosting server mode (runner_server.py)
                if value is None:
                    log.fatal(msgs["server_mode_missing"])
                    bus.exit(1)
                if value not in ("true", "false"):
                    log.fatal(msgs["server_mode_invalid"].format(value=value))
                    bus.exit(1)
                self.server_mode = value == "true"
            i += 2 if flag in ("-i", "-m", "-o", "--server_mode") else 1
        if output is None:
            log.fatal(msgs["missing_output"])
            bus.exit(1)

    def read_host_file(self, path: str) -> bytes | None:
        """``read_binary_file``: a host file into the input file pool, or None (logged)."""
        data = self.bus.host_read_file(path)
        if data is None:
            log.fatal(self.msgs["file_open_failed"].format(path=path, errno=2))
            return None
        if self.file_alloc.allocate(len(data), self.semi["file_alignment"]) is None:
            log.fatal(self.msgs["file_alloc_failed"].format(size=len(data)))
            return None
        return data

    def runner_init(self, image: np.ndarray) -> None:
        bus, boot, msgs, prof = self.bus, self.boot, self.msgs, self.profile
        self.bundle = None
        prog_off, prog_size = 0, boot.model_size
        if is_bundled(image):
            try:
                self.bundle = load_bundled(image)
            except RuntimeFailure as e:
                self.check(False, "status == Error::Ok",
                           f"get_program_data() from bundle PTE failed: 0x{int(e.code):x} ({e.message})")
            prog_off, prog_size = self.bundle.program_offset, self.bundle.program_size
        # ET_MODEL_PTE_ADDR: model_size is a bound, not the program's size (a bundle still knows its program's)
        self.model_size = prof["pte_addr_span"] if self.pte_addr else boot.model_size
        self.program_size = prog_size if self.bundle is not None or not self.pte_addr else self.model_size
        log.info(msgs["model_loaded"].format(size=self.program_size))
        bus.work("parse_byte", prog_size)
        try:
            program = load_program(image[prog_off:prog_off + prog_size])
        except RuntimeFailure as e:
            self.check(False, "program.ok()", msgs["program_load_failed"].format(addr=boot.model_address + prog_off,
                                                                               status=int(e.code)) + f" ({e.message})")
        self.program = program
        log.info(msgs["methods"].format(n=program.num_methods))
        self.check(program.num_methods > 0, "program->num_methods() > 0", msgs["no_methods"])
        plan = program.execution_plans[0]
        self.method_name = plan.name
        log.info(msgs["running_method"].format(name=plan.name))

        pool = boot.pools["method"]
        accounting = prof["accounting"]
        self.method_alloc = make_allocator(boot.allocator, "method", pool.address, pool.size, bus, accounting)
        log.info(msgs["method_pool"].format(size=pool.size))
        stats = getattr(self.method_alloc, "has_statistics", False)
        used = (lambda: self.method_alloc.used_size()) if stats else (lambda: 0)
        fast_index = prof.get("planned_fast_index")
        fast_pool = boot.pools.get("planned_fast")
        self.fast_alloc = None
        if fast_index is not None and fast_pool is not None and fast_pool.size:
            self.fast_alloc = make_allocator(boot.allocator, "planned_fast", fast_pool.address, fast_pool.size, bus,
                                             accounting)
            log.info(msgs["planned_fast_pool"].format(size=fast_pool.size))
        base_planned = used()
        buffers = []
        self.planned_sizes = [s for i, s in enumerate(plan.memory_planned_buffer_sizes) if i != fast_index]
        for idx, size in enumerate(plan.memory_planned_buffer_sizes):
            log.info(prof["planned_line"].format(index=idx, mem_id=idx + 1, size=size))
            region = "SLOW_MEMORY_REGION"
            if size == 0:
                addr = 0  # an empty span
            elif idx == fast_index:
                self.check(self.fast_alloc is not None, "planned_fast_allocator != nullptr",
                           msgs["planned_fast_missing"].format(index=idx, mem_id=idx + 1))
                region = "FAST_MEMORY_REGION"
                addr = self.fast_alloc.allocate(size, prof["planned_alignment"])
            else:
                addr = self.method_alloc.allocate(size, prof["planned_alignment"])
                if addr is None:
                    self.method_pool_hint(pool.size)
            self.check(addr is not None, "buffer != nullptr",
                       f"Could not allocate memory for planned buffer with mem_id={idx + 1}, size {size} in {region}")
            buffers.append((addr, size))
        self.planned = used() - base_planned
        tpool = boot.pools["temp"]
        self.temp_alloc = make_allocator(boot.allocator, "temp", tpool.address, tpool.size, bus, accounting)
        mm = MemoryManager(self.method_alloc, HierarchicalAllocator(buffers), self.temp_alloc)

        base_loaded = used()
        if self.etdump_enabled:
            log.info(msgs["etdump_setup"])
            self.tracer = ETDumpGen(self.perf.cpu_ccntr)
            if self.debug_level:
                self.setup_debug_buffer()
        self.method = Method(program, 0, mm, prof, bus, boot.model_address + prog_off, RUNTIME_KERNELS,
                             self.backends, kernel_signature=REGISTRY.signature)
        self.method.event_tracer = self.tracer
        load_ok = True
        try:
            if self.tracer is not None:  # Program::load_method: the "Default" block, its event and Method::init's
                self.tracer.create_event_block("Default")
                with self.tracer.profile("Program::load_method"), self.tracer.profile("Method::init"):
                    self.method.load()
            else:
                self.method.load()
        except RuntimeFailure as e:
            load_ok = False
            log.info(msgs["load_failed"].format(name=plan.name, status=int(e.code)))
            self.load_status = e.code
            self.load_why = str(e.message).splitlines()[0] if e.message else ""
            if e.code == Error.OperatorMissing:
                self.load_why += ": this runner has no kernel for it; fvp inspect lists what the program needs"
            elif e.code == Error.MemoryAllocationFailed and "planned buffer" not in self.load_why:
                self.method_pool_hint(pool.size)
        self.loaded = used() - base_loaded
        log.info(msgs["method_loaded"].format(name=plan.name))
        self.check(load_ok, "method.ok()", msgs["load_failed"].format(name=plan.name, status=int(getattr(self, "load_status", 0))),
                   why=getattr(self, "load_why", ""))

        log.info(msgs["preparing_inputs"])
        base_input = used()
        if self.bundle is not None:
            log.info(msgs["bundled_input"].format(index=0))
            try:
                self.load_bundled_input(0)
            except RuntimeFailure as e:
                self.check(False, "status == Error::Ok", f"load_bundled_input failed with status 0x{int(e.code):x}")
        else:
            try:
                self.prepare_input_tensors()
            except RuntimeFailure as e:
                self.check(False, "inputs.ok()", f"Failed to prepare inputs 0x{int(e.code):x}")
        self.input = used() - base_input
        if self.log_inputs:
            self.print_tensors("Input", [self.method.values[i] for i in plan.inputs])
        log.info(msgs["input_prepared"])
        self.executor_base = used()

    # ------------------------------------------------------------------ inputs
    def prepare_input_tensors(self) -> None:
        m, bus, prof = self.method, self.bus, self.profile
        n = len(m.plan.inputs)
        if self.input_files is not None:
            return self.set_input_buffers()
        files = list(self.boot.args.inputs)
        if prof["prepare_inputs"] == "evalue_list":
            m._alloc("EValue", n)
        else:
            m._alloc("voidptr", n)
        for i in range(n):
            t = m.input_tensor(i)
            if t is None:
                continue
            if prof["prepare_inputs"] != "evalue_list":
                addr = self.method_alloc.allocate(t.nbytes, prof["default_alignment"])
                if addr is None:
                    raise RuntimeFailure(Error.MemoryAllocationFailed, "input buffer")
            if i < len(files):
                data = self.read_input_file(i, files[i], t)
                if len(data) != t.nbytes:
                    log.error(self.msgs["input_size_mismatch"].format(got=len(data), want=t.nbytes))
                    raise RuntimeFailure(Error.InvalidArgument, "input size")
                m.set_input_bytes(i, data)
                continue
            if t.type_name == "Bool":
                t.array(bus)[...] = True
            elif prof["fill_all_dtypes"] or t.type_name in ("Int", "Float", "Char"):
                if t.dtype is not None:
                    t.array(bus)[...] = 1
            bus.work("memset_byte", t.nbytes)
            m.inputs_set[i] = True

    def set_input_buffers(self, allocator=None) -> None:
        """``prepare_input_tensors`` of the semihosting runner: one file per input, read by ``main()``; a size
        mismatch is logged and the loop goes on (the error is returned at the end). The input EValue list comes
        from ``allocator`` (the method allocator at start-up, the temp allocator in the server loop)."""
        m, msgs = self.method, self.msgs
        n = len(m.plan.inputs)
        if not (self.input_files and n == len(self.input_files)):
            log.error(msgs["wrong_inputs"])
            raise RuntimeFailure(Error.InvalidArgument, "input count")
        m._alloc("EValue", n, allocator)
        failed = False
        for i, (path, raw) in enumerate(self.input_files):
            t = m.input_tensor(i)
            if t is None:
                continue
            data = self.input_bytes(i, path, raw, t)
            if len(data) != t.nbytes:
                log.error(msgs["input_size_mismatch"].format(got=len(data), want=t.nbytes))
                failed = True
                continue
            m.set_input_bytes(i, data)
        if failed:
            raise RuntimeFailure(Error.InvalidArgument, "input size")

    def read_input_file(self, index: int, path: str, tensor: RtTensor) -> bytes:
        """Input ``index`` from a host file (logged counted from the profile's ``input_index_base``)."""
        shown = index + self.profile["input_index_base"]
        log.info(self.msgs["reading_input"].format(index=shown, path=path))
        data = self.bus.host_read_file(path)
        if data is None:
            log.error(self.msgs["reading_input_failed"].format(index=shown, path=path))
            raise RuntimeFailure(Error.AccessFailed, f"cannot read {path}")
        return self.input_bytes(index, path, data, tensor)

    def input_bytes(self, index: int, path: str, data: bytes, tensor: RtTensor) -> bytes:
        """A file's bytes for input ``index``: raw bytes in the tensor's memory order (what the semihosting
        runner reads), or a ``.npy`` array (this simulator's convenience) of the tensor's dtype, in logical
        shape, laid out in the tensor's dim order."""
        if path.endswith(".npy"):
            try:
                arr = load_npy(data)
            except ValueError as e:
                log.error(f"{path}: not a valid .npy file: {e}")
                raise RuntimeFailure(Error.InvalidArgument, "npy") from None
            if tensor.dtype is not None and arr.dtype != tensor.dtype:
                log.error(f"{path}: array of {arr.dtype} but input {index} is a {tensor.type_name} tensor "
                          f"({np.dtype(tensor.dtype).name})")
                raise RuntimeFailure(Error.InvalidArgument, "npy dtype")
            if arr.shape == tuple(tensor.sizes):
                arr = arr.transpose(tensor.dim_order)
            data = np.ascontiguousarray(arr).tobytes()
        return data

    def load_bundled_input(self, case: int) -> None:
        suite = self.bundle.test_suite(self.method_name)
        if case >= len(suite.test_cases):
            raise RuntimeFailure(Error.InvalidArgument, f"no test case {case}")
        tc = suite.test_cases[case]
        if len(tc.inputs) != len(self.method.plan.inputs):
            raise RuntimeFailure(Error.InvalidArgument, f"bundled test case has {len(tc.inputs)} inputs, the method "
                                                        f"{len(self.method.plan.inputs)}")
        for i, v in enumerate(tc.inputs):
            if v.kind == "Tensor":
                t = self.method.input_tensor(i)
                if t is None or t.scalar_type != v.scalar_type or t.numel != v.numel:
                    raise RuntimeFailure(Error.InvalidArgument, f"bundled input {i} does not match the method's input")
                if len(v.sizes) > 1 and tuple(v.dim_order) != t.dim_order:
                    self.bus.host_note(
                        f"bundled input {i} is stored in dim order {list(v.dim_order)} but the method's input "
                        f"tensor has dim order {list(t.dim_order)}; set_input copies the bytes as they are (as "
                        f"ExecuTorch does), so the program reads the data permuted")
                self.method.set_input_bytes(i, v.data(self.bundle.buffer))

    # ------------------------------------------------------------------ run
    def after_init(self, model_ok: bool | None = None, steps=None) -> None:
        """Run the model, then the profile's ``after_run`` steps; given ``model_ok`` (the session entry's end),
        only the ``steps`` given."""
        prof, msgs = self.profile, self.msgs
        if model_ok is None:
            steps = prof["after_run"]
            if self.server_mode:  # the inferences and their outputs happen on request; then the same ending
                from .runner_server import run_model_server

                model_ok = run_model_server(self)  # it verifies and logs its own "Model run"
                steps = [s for s in steps if s not in ("inferences_finished", "outputs", "verify", "model_run_run")]
            else:
                model_ok = self.run_model()
        for step in steps:
            if step == "inferences_finished":
                log.info(prof["run_lines"]["finished"].format(n=self.inferences))
            elif step == "model_executed":
                log.info(prof["run_lines"]["executed"])
            elif step == "outputs":
                self.print_outputs()
            elif step == "verify":
                if self.bundle is not None:
                    model_ok = self.verify_result() and model_ok
            elif step == "model_run_run":
                log.info(prof["run_lines"]["model_run"].format(ok=int(model_ok)))
            elif step == "model_run_main":
                log.info(prof["run_lines"]["model_run"].format(ok=int(model_ok)))
                self.check(model_ok, "model_ok", msgs["problem"])
            elif step == "mem_status":
                self.log_mem_status()
            elif step == "complete":
                self.write_etdump()
                self.check(model_ok, "model_ok", msgs["problem"])
                if self.write_failures:
                    more = len(self.write_failures) - 1
                    self.bus.abort(self.write_failures[0] + (f" (and {more} more)" if more else ""))
                log.info(msgs["complete"])
            elif step == "eot":
                if self.argv is not None:  # the semihosting runner: _exit(0), no EOT byte
                    self.bus.exit(0)
                log.info(msgs["eot"])

    def run_model(self) -> bool:
        prof, msgs = self.profile, self.msgs
        if prof["perf"] == "head":
            log.info(prof["run_lines"]["starting"].format(n=self.inferences))
        else:
            log.info(prof["run_lines"]["starting"])
        self.perf.start()
        for i in range(self.inferences):
            self.bus.trace("B", "runner", f"inference {i}")
            try:
                self.method.execute()
            except RuntimeFailure as e:
                self.perf.stop(i if prof["stop_count"] == "executed" else self.inferences)
                self.check(False, "status == Error::Ok", msgs["exec_failed"].format(name=self.method_name, status=int(e.code)))
            self.bus.trace("E", "runner", f"inference {i}")
            self.temp_alloc.reset()
        self.perf.stop(self.inferences)
        return True

    # ------------------------------------------------------------------ ETDump
    def setup_debug_buffer(self) -> None:
        """The debug buffer from the method allocator (16-aligned), handed to ``set_debug_buffer``, and the debug
        level (``kIntermediateOutputs`` or ``kProgramOutputs``); without the memory the run goes on without it."""
        msgs, size = self.msgs, self.debug_buffer_size
        addr = self.method_alloc.allocate(size, 16)
        if addr is None:
            log.error(msgs["etdump_debug_alloc_failed"].format(size=size))
            return
        self.tracer.set_debug_buffer(self.bus, addr, size)
        key = "etdump_debug_intermediate" if self.debug_level >= INTERMEDIATE_OUTPUTS else "etdump_debug_outputs"
        log.info(msgs[key].format(size=size, addr=addr))
        self.tracer.set_event_tracer_debug_level(self.debug_level)

    def write_etdump(self) -> None:
        """``write_etdump``: to the host file (``--etdump``, as the semihosting build writes etdump.bin) or base64
        on the console in the block run_fvp.sh extracts; the debug buffer first (debug_buffer.bin)."""
        if self.tracer is None:
            return
        msgs, tracer = self.msgs, self.tracer
        debug = tracer.debug_buffer is not None
        path = self.etdump_path or (self.semi["etdump_path"] if self.argv is not None else None)
        if path and debug:  # the semihosting build: fwrite of the used bytes to debug_buffer.bin
            dpath = self.debug_buffer_path if self.etdump_path else self.semi["debug_buffer_path"]
            log.info(msgs["etdump_debug_file"].format(path=dpath))
            res = self.bus.host_write_file(dpath, tracer.debug_buffer_data())
            if not res.ok:
                log.error(msgs["etdump_debug_open_failed"].format(path=dpath, errno=res.errno))
                self.write_failures.append(f"ETDump debug buffer file {dpath} was not written: {res.strerror} "
                                           f"(errno {res.errno})")
        data = tracer.get_etdump_data()
        if path:
            log.info(msgs["etdump_file"].format(path=path))
            res = self.bus.host_write_file(path, data)
            if not res.ok:
                log.error(msgs["etdump_open_failed"].format(path=path, errno=res.errno))
                self.write_failures.append(f"ETDump file {path} was not written: {res.strerror} "
                                           f"(errno {res.errno})")
            return
        encoded = base64.b64encode(data).decode()
        debug_lines, flag, size = (), "", len(encoded)
        if debug:
            dump = tracer.debug_buffer_data()
            if dump:
                enc = base64.b64encode(dump).decode()
                size = max(size, len(enc))  # one base64 buffer that fits both
                debug_lines = tuple(line.format(data=enc) for line in msgs["etdump_debug_block"])
                flag = ETDUMP_DEBUG_FLAG
            else:
                log.error(msgs["etdump_debug_empty"])
        log.info(msgs["etdump_base64_size"].format(n=size))
        block = [line.format(data=encoded, flag=flag) for line in msgs["etdump_block"]]
        log.printf("".join(block[:1] + list(debug_lines) + block[1:]))

    # ------------------------------------------------------------------ outputs
    def print_outputs(self) -> None:
        outs = self.method.output_values()
        log.info(self.msgs["outputs"].format(n=len(outs)))
        if self.log_outputs or self.argv is not None:  # the semihosting runner prints no elements, only files
            self.print_tensors("Output", outs, elements=self.argv is None)
        base = self.boot.args.output
        if base:
            for i, v in enumerate(outs):
                if isinstance(v, RtTensor):
                    path = f"{base}-{i}.bin"
                    log.info(self.msgs["writing_output"].format(path=path))
                    data = v.raw(self.bus).tobytes()
                    res = self.bus.host_write_file(path, data)
                    if res.ok:
                        continue
                    if not res.opened:
                        log.error(self.msgs["output_open_failed"].format(path=path, errno=res.errno))
                    else:
                        log.error(self.msgs["write_partial"].format(path=path, written=res.written, size=len(data)))
                    # the runner goes on (as the C++ does); the run fails at its end (exit status 1)
                    self.write_failures.append(f"output file {path} was not written: {res.strerror} "
                                               f"(errno {res.errno})")

    def print_tensors(self, label: str, values: list, elements: bool = True) -> None:
        """The printf'd ``Input``/``Output`` lines: every element of Int, Float, Char and Bool tensors
        (``elements``), a ``Not Tensor`` line for every other value."""
        msgs, lines = self.msgs, []
        # the bool spellings differ: the input dump prints "true", the output dump "true " (padded to "false")
        true = "true " if label == "Output" else "true"
        for i, v in enumerate(values):
            if not isinstance(v, RtTensor):
                lines.append(msgs["not_tensor"].format(label=label, i=i))
                continue
            name = v.type_name
            if not elements or name not in ("Int", "Float", "Char", "Bool"):
                continue
            flat = v.array(self.bus).reshape(-1).tolist()  # Python floats, ints, bools: the values exactly
            key = "element_" + ("float" if name == "Float" else name.lower())
            fmt = bind(msgs[key], label=label, i=i).format  # label and index once per tensor
            if name == "Float":
                lines.extend(fmt(j=j, v=x) for j, x in enumerate(flat))
            elif name in ("Int", "Char"):
                lines.extend(fmt(j=j, v=int(x)) for j, x in enumerate(flat))
            else:
                lines.extend(fmt(j=j, text=true if x else "false", v=int(x)) for j, x in enumerate(flat))
        if lines:
            log.printf("".join(lines))

    # ------------------------------------------------------------------ statistics
    def log_mem_status(self) -> None:
        msgs = self.msgs
        addr = "_addr" if self.pte_addr else ""  # ET_MODEL_PTE_ADDR: the sizes are bounds, and say so
        log.info(msgs["pte_program_size" + addr].format(size=self.program_size))
        log.info(msgs["pte_loaded_size" + addr].format(size=self.model_size))
        fa = self.file_alloc
        if fa is not None and fa.size() > 0:
            if getattr(fa, "has_statistics", False):
                log.info(msgs["input_file_stat"].format(used=fa.used_size(), size=fa.size(), free=fa.free_size(),
                                                        pct=100 * fa.used_size() // fa.size()))
            else:
                log.info(msgs["stats_unavailable"].format(pool="input_file", kind=fa.name))
        ma = self.method_alloc
        if ma.size() != 0:
            if getattr(ma, "has_statistics", False):
                used = ma.used_size()
                log.info(msgs["method_used"].format(used=used, size=ma.size(), free=ma.free_size(),
                                                    pct=100 * used // ma.size()))
                log.info(msgs["method_planned"].format(n=self.planned))
                fa = self.fast_alloc
                if fa is not None and getattr(fa, "has_statistics", False):
                    log.info(msgs["planned_fast_stat"].format(used=fa.used_size(), size=fa.size(),
                                                              free=fa.free_size(), pct=100 * fa.used_size() // fa.size()))
                    log.info(msgs["planned_fast_used"].format(n=fa.used_size()))
                log.info(msgs["method_loaded_stat"].format(n=self.loaded))
                log.info(msgs["method_input"].format(n=self.input))
                log.info(msgs["method_executor"].format(n=used - self.executor_base))
            else:
                log.info(msgs["stats_unavailable"].format(pool="method", kind=ma.name))
        ta = self.temp_alloc
        if ta.size() > 0:
            if self.profile["temp_line"] == "size":
                log.info(msgs["temp_size"].format(size=ta.size()))
            elif getattr(ta, "has_statistics", False):
                peak = ta.peak_used()
                log.info(msgs["peak_temp"].format(peak=peak, size=ta.size(), free=ta.free_size(),
                                                  pct=100 * peak // ta.size()))
            else:
                log.info(msgs["stats_unavailable"].format(pool="temp", kind=ta.name))
        if self.tracer is not None and self.tracer.debug_buffer is not None:
            used, size = self.tracer.debug_used, self.tracer.debug_buffer[1]
            log.info(msgs["etdump_debug_stat"].format(used=used, size=size, free=size - used, pct=100 * used // size))


def main(bus, boot: BootInfo) -> int:
    """The reset handler: run the program and end with EOT (or abort on a fatal check)."""
    try:
        return Runner(bus, boot).main()
    finally:
        log.install(None)  # the runner's console ends with the run (a later run or tool must not log to it)


def session(bus, boot: BootInfo):
    """The session entry (``fvp.machine.resident``): the runner kept alive between the host's inferences, each
    run as the semihosting server mode's loop runs one, with the inputs and outputs handed over in memory
    instead of files (``runner_server.serve``)."""
    from .runner_server import serve

    try:
        return (yield from serve(Runner(bus, boot)))
    finally:
        log.install(None)
