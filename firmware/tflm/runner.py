"""``tflm_inference_runner``: a Python counterpart of the TFLite Micro inference runner on the Corstone-300.

It does what Arm's ML Embedded Evaluation Kit's ``inference_runner`` use case does with a model at a known
address (MLEK ``source/use_case/inference_runner``: ``MainLoop.cc``, ``UseCaseHandler.cc``;
``source/application/api/common/source/Model.cc``; ``source/profiler/Profiler.cc``; the NPU counters of
``source/hal/source/components/npu/ethosu_profiler.c``): load the ``.tflite`` the platform placed in memory
(``GetModel``, schema version check), create the allocator on the tensor arena, ``AllocateTensors``, print the
model's tensors (``LogInterpreterInfo``), fill the inputs, run one inference between the profiler's start and
stop, print ``Final results:`` and the profile block, write the outputs, and end with EOT.

Log strings (``info`` prints ``INFO - ``, ``printf_err`` ``ERROR - ``), from the sources above:

- ``Model.cc``: ``Creating allocator using tensor arena at 0x%p``, ``Allocating tensors``, ``Model INPUT
  tensors: ``, ``\\ttensor type is %s``, ``\\ttensor occupies %zu bytes with dimensions``, ``\\t\\t%d: %3d``,
  ``Quant dimension: %i``, ``Scale[%d] = %f``, ``ZeroPoint[%d] = %d``, ``Model OUTPUT tensors: ``,
  ``Activation buffer (a.k.a tensor arena) size used: %zu``, ``Number of operators: %u``,
  ``\\tOperator %zu: %s``, ``tensor allocation failed!``, ``Model's schema version ...``;
- ``UseCaseHandler.cc``: ``Running inference... ``(LCD only), ``Final results:``, ``Total number of inferences:
  1``; ``MainLoop.cc``: ``Failed to initialise model``, ``Inference completed.``, ``Inference failed.``;
- ``Profiler.cc``: ``Profile for %s:`` then one line per counter. MLEK up to 22.x prints ``%s %s: %.0f``
  (name unit: value) in the order NPU AXI0_RD_DATA_BEAT_RECEIVED, AXI0_WR_DATA_BEAT_WRITTEN,
  AXI1_RD_DATA_BEAT_RECEIVED beats, NPU ACTIVE, NPU IDLE, NPU TOTAL cycles (the form of the published FVP
  figures, ``NPU ACTIVE cycles: 413814``), then ``CPU TOTAL cycles`` (``CPU_PROFILE_ENABLED``); current MLEK
  prints ``%s: %.0f %s`` in the counter order of ``ethosu_profiler.c`` (NPU IDLE, the three AXI counters,
  NPU ACTIVE, NPU TOTAL, CPU TOTAL). ``firmware.options.log_format`` picks ``mlek-22`` (default) or
  ``mlek-25``.

The PMU is programmed as ``ethosu_profiler.c`` does: event counters 0..3 = NPU_IDLE, AXI0 read beats, AXI0
write beats, AXI1 read beats, enabled with the cycle counter in the driver's inference begin hook and disabled
in the end hook of every ``ethos-u`` operator; NPU ACTIVE = TOTAL - IDLE. CPU TOTAL is the CPU cycles over the
whole inference (the board's CPU cost model: CPU kernels, driver, waits for the NPU).

Inputs: files given with ``-i`` (raw bytes, or ``.npy`` of the tensor's dtype and shape), else what MLEK
does: bytes of ``std::rand() & 0xFF`` (newlib's ``rand``, unseeded), or zeros with
``firmware.options.inputs: zeros``. Outputs: ``-o BASE`` writes ``BASE-<i>.bin`` (raw tensor bytes), as the
``.pte`` path does.
"""

from __future__ import annotations

import io

import numpy as np

from hwdesc import ethosu as U55, ethosu85 as U85
from hwdesc.boot import BootInfo

from ..drivers.ethosu import driver_for
from ..drivers.uart import Uart
from ..npy import load_npy
from .ethosu_op import EthosUKernel
from .interpreter import Interpreter, InterpreterError
from .model import ModelError, builtin_names, load_model
from .planner import PLANNERS
from .program_info import ethosu_configurations  # noqa: F401 - the image's program reader, for the host

_OPTIONS = {
    "inputs": "how inputs are filled without -i: random (MLEK: std::rand() & 0xFF) or zeros",
    "log_format": "the profile block's format: mlek-22 (name unit: value) or mlek-25 (name: value unit)",
    "log_tensor_info": "print the input/output tensor details (Model.cc LogInterpreterInfo), true/false",
    # inherited from the Corstone-300 board's ExecuTorch section; accepted, not used by this image
    "inferences": "number of inferences (1; MLEK's inference_runner runs one)",
    "log_outputs": "unused by this image (inherited from the ExecuTorch runner's section)",
    "atol": "unused by this image (inherited)",
    "rtol": "unused by this image (inherited)",
}

# the events ethosu_profiler.c counts, per NPU family (the PMU registers and event numbers from the interface
# tables): ETHOSU55/ETHOSU65 NPU_IDLE first (ACTIVE = TOTAL - IDLE), the AXI0 read/write and AXI1 read beats;
# ETHOSU85 NPU_ACTIVE first (IDLE = TOTAL - ACTIVE), the SRAM and EXT read/write beats, printed with the names
# ethosu_profiler.c gives them ("NPU ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED", ...)
PROFILER_EVENTS = {
    "u55": (U55.MMIO, (U55.PMU_EVENT.NPU_IDLE, U55.PMU_EVENT.AXI0_RD_DATA_BEAT_RECEIVED,
                       U55.PMU_EVENT.AXI0_WR_DATA_BEAT_WRITTEN, U55.PMU_EVENT.AXI1_RD_DATA_BEAT_RECEIVED)),
    "u85": (U85.MMIO, tuple(U85.PMU_EVENT.value(n) for n in (
        "NPU_ACTIVE", "SRAM_RD_DATA_BEAT_RECEIVED", "SRAM_WR_DATA_BEAT_WRITTEN", "EXT_RD_DATA_BEAT_RECEIVED",
        "EXT_WR_DATA_BEAT_WRITTEN"))),
}
U85_BEATS = ("SRAM_RD_DATA_BEAT_RECEIVED", "SRAM_WR_DATA_BEAT_WRITTEN", "EXT_RD_DATA_BEAT_RECEIVED",
             "EXT_WR_DATA_BEAT_WRITTEN")


def check_config(boot: BootInfo) -> list[str]:
    """Problems with the board's firmware section for this image, one line each (exit status 2)."""
    problems = []
    planner = boot.allocator
    if planner not in PLANNERS:
        problems.append(f"firmware.allocator: {planner!r} is not a TFLite Micro memory planner; allowed: "
                        f"{', '.join(PLANNERS)}")
    if "arena" not in boot.pools or not boot.pools["arena"].size:
        problems.append("firmware.pools.arena: required by tflm_inference_runner (the tensor arena: region, size, "
                        "npu: true)")
    for key, value in boot.options.items():
        if key not in _OPTIONS:
            problems.append(f"firmware.options.{key}: unknown option; allowed: {', '.join(_OPTIONS)}")
        elif key == "inputs" and value not in ("random", "zeros"):
            problems.append(f"firmware.options.inputs: {value!r}: expected random or zeros")
        elif key == "log_format" and value not in ("mlek-22", "mlek-25"):
            problems.append(f"firmware.options.log_format: {value!r}: expected mlek-22 or mlek-25")
        elif key == "log_tensor_info" and not isinstance(value, bool):
            problems.append(f"firmware.options.log_tensor_info: {value!r}: expected true or false")
        elif key == "inferences" and value != 1:
            problems.append(f"firmware.options.inferences: {value!r}: tflm_inference_runner runs one inference")
    return problems


class _Stop(Exception):
    pass


class NpuProfiler:
    """The driver hooks of ``ethosu_profiler.c``: counters on between ethosu_inference_begin and _end."""

    def __init__(self, bus, base: int, family: str = "u55"):
        self.bus, self.base, self.family = bus, base, family
        self.regs, self.events = PROFILER_EVENTS[family]
        r = self.regs
        self.pmcr, self.enset, self.enclr, self.ccnt, self.ccnt_hi, self.ccnt_cfg = (r[n].offset for n in (
            "PMCR", "PMCNTENSET", "PMCNTENCLR", "PMCCNTR", "PMCCNTR_HI", "PMCCNTR_CFG"))
        # the cycle counter and the event counters the profiler uses
        self.mask = r.PMCNTENSET.mask("CYCLE_CNT", *(f"EVENT_CNT_{i}" for i in range(len(self.events))))

    def init(self) -> None:
        w, r, b, regs = self.bus.write32, self.bus.read32, self.base, self.regs
        for i, ev in enumerate(self.events):
            w(b + regs.PMEVTYPER.at(i), ev)
        w(b + self.ccnt_cfg, 0)
        w(b + self.pmcr, r(b + self.pmcr) | regs.PMCR.mask("cnt_en"))  # ETHOSU_PMU_Enable
        w(b + self.enclr, self.mask)
        w(b + self.pmcr, r(b + self.pmcr) | regs.PMCR.mask("event_cnt_rst", "cycle_cnt_rst"))

    def inference_begin(self) -> None:
        self.bus.write32(self.base + self.enclr, self.mask)
        self.bus.write32(self.base + self.enset, self.mask)

    def inference_end(self) -> None:
        self.bus.write32(self.base + self.enclr, self.mask)

    def counters(self) -> dict:
        r, b = self.bus.read32, self.base
        total = r(b + self.ccnt) | (r(b + self.ccnt_hi) << 32)
        ev = [r(b + self.regs.PMEVCNTR.at(i)) for i in range(len(self.events))]
        if self.family == "u85":
            out = {"active": ev[0], "idle": total - ev[0], "total": total}
            out.update(zip(U85_BEATS, ev[1:]))
            return out
        return {"idle": ev[0], "axi0_rd": ev[1], "axi0_wr": ev[2], "axi1_rd": ev[3], "total": total,
                "active": total - ev[0]}


def newlib_rand_bytes(n: int) -> np.ndarray:
    """``std::rand() & 0xFF`` n times from newlib's unseeded 64-bit LCG."""
    state = 1
    out = np.empty(n, np.uint8)
    mask64 = (1 << 64) - 1
    for i in range(n):
        state = (state * 6364136223846793005 + 1) & mask64
        out[i] = ((state >> 32) & 0x7FFFFFFF) & 0xFF
    return out


class Runner:
    def __init__(self, bus, boot: BootInfo):
        self.bus, self.boot = bus, boot
        self.console = Uart(bus, boot.console_base)
        opts = boot.options
        self.log_format = opts.get("log_format", "mlek-22")
        self.fill = opts.get("inputs", "random")
        self.tensor_info = bool(opts.get("log_tensor_info", True))
        self.driver_log = io.BytesIO()

    def _emit(self, text: str) -> None:
        data = text.encode("utf-8", "replace")
        self.bus.work("log_char", len(data))
        self.console.write(data)

    def info(self, msg: str) -> None:
        self._emit(f"INFO - {msg}\n")

    def err(self, msg: str) -> None:
        self._emit(f"ERROR - {msg}\n")

    def fail(self, msg: str, reason: str) -> None:
        self.err(msg)
        raise _Stop(reason)

    def main(self) -> int:
        try:
            self.run()
        except _Stop as e:
            self.bus.abort(str(e))
        return 0

    def run(self) -> None:
        self.boot_up()
        self.prepare_inputs(self.model, self.interp)
        self.infer()
        self.write_outputs(self.model, self.interp)
        self.info("Inference completed.")
        self.console.write(b"\x04")

    def boot_up(self) -> None:
        """Everything before the inputs: the model, the driver, the interpreter, its tensors."""
        bus, boot = self.bus, self.boot
        self.info("Arm ML embedded code samples: inference_runner (Python TFLite Micro counterpart, tflm_inference_runner)")
        if boot.model_address is None or not boot.model_size:
            self.fail("Failed to initialise model", "no model in memory (give a .tflite file)")
        self.info(f"Model pointer: 0x{boot.model_address:08x}")
        data = bus.read(boot.model_address, boot.model_size)
        bus.work("parse_byte", len(data))
        try:
            model = load_model(data)
        except ModelError as e:
            self.err(str(e))
            self.fail("Failed to initialise model", f"{boot.model_name or 'model'}: {e}")
        arena = boot.pools["arena"]
        npu = boot.npu
        family = "u85" if npu is not None and str(npu.variant).startswith("ethos-u85") else "u55"
        self.profiler = NpuProfiler(bus, npu.base, family) if npu is not None else None
        driver = None
        if npu is not None:
            fast = boot.pools.get("fast_scratch")
            driver_cls, build = driver_for(npu.variant)  # the driver built for this NPU (ETHOSU55/65/85)
            driver = driver_cls(bus, npu.base, qconfig=npu.qconfig, regioncfg=npu.regioncfg,
                                fast_memory=(fast.address, fast.size) if fast is not None and fast.size else None,
                                console=self.console, hooks=self.profiler, **build)
            if not driver.init():
                self.fail("Failed to initialise Ethos-U device", "Ethos-U init failed")
        self.info(f"Creating allocator using tensor arena at 0x{arena.address:08x}")
        ethosu = (lambda interp, op: EthosUKernel(interp, op, driver, None)) if driver is not None else None
        interp = Interpreter(bus, model, boot.model_address, arena.address, arena.size,
                             planner=boot.allocator if boot.allocator in PLANNERS else "greedy", ethosu=ethosu)
        self.info("Allocating tensors")
        try:
            interp.allocate_tensors()
        except InterpreterError as e:
            self.fail("Failed to initialise model", self._interpreter_failed(e, "tensor allocation failed!"))
        self.interp, self.model = interp, model
        if self.tensor_info:
            self.log_interpreter_info(model, interp)

    def infer(self) -> dict:
        """One inference between the profiler's start and stop, its results and profile printed; the counters."""
        bus = self.bus
        if self.profiler is not None:
            self.profiler.init()
        c0 = bus.cpu_cycles()
        try:
            self.interp.invoke()
        except InterpreterError as e:
            raise _Stop(self._interpreter_failed(e, "Invoke failed.", "Inference failed.")) from None
        cpu = bus.cpu_cycles() - c0
        self.info("Final results:")
        self.info("Total number of inferences: 1")
        return self.print_profile(cpu)

    def _interpreter_failed(self, e: InterpreterError, *then: str) -> str:
        """The interpreter's error lines, then the application's (``then``); the reason the run stopped."""
        for line in (*e.lines, *then):
            self.err(line)
        return f"{self.boot.model_name or 'model'}: {e.reason}"

    def log_interpreter_info(self, model, interp) -> None:
        def tensor_info(t):
            self.info(f"\ttensor type is {t.type_name}")
            self.info(f"\ttensor occupies {t.nbytes} bytes with dimensions")
            for i, d in enumerate(t.shape):
                self.info(f"\t\t{i}: {d:3d}")
            if t.scale.size:
                self.info(f"Quant dimension: {t.quantized_dimension}")
                for i, s in enumerate(t.scale):
                    self.info(f"Scale[{i}] = {float(s):f}")
                for i, z in enumerate(t.zero_point):
                    self.info(f"ZeroPoint[{i}] = {int(z)}")

        self.info("Model INPUT tensors: ")
        for i in model.inputs:
            tensor_info(model.tensors[i])
        self.info("Model OUTPUT tensors: ")
        for i in model.outputs:
            tensor_info(model.tensors[i])
        self.info(f"Activation buffer (a.k.a tensor arena) size used: {interp.arena_used_bytes}")
        self.info(f"Number of operators: {len(model.operators)}")
        names = builtin_names()
        for i, node in enumerate(interp.nodes):
            self.info(f"\tOperator {i}: {node.name if node.name == 'ethos-u' else names.get(node.op.builtin_code, node.name)}")

    def prepare_inputs(self, model, interp) -> None:
        files = list(self.boot.args.inputs)
        for k, ti in enumerate(model.inputs):
            t = model.tensors[ti]
            dst = self.bus.view(interp.address(ti), t.nbytes)
            if k < len(files):
                path = files[k]
                raw = self.bus.host_read_file(path)
                if raw is None:
                    self.fail(f"cannot read input file {path}", f"input {k}: cannot read {path}")
                if path.endswith(".npy"):
                    try:
                        arr = load_npy(raw)
                    except ValueError as e:
                        self.fail(f"{path}: not a valid .npy file: {e}", f"input {k}: bad .npy")
                    if arr.dtype != t.dtype or arr.size != t.numel:
                        self.fail(f"{path}: array {arr.dtype}{list(arr.shape)}, input {k} is "
                                  f"{t.type_name}{list(t.shape)}", f"input {k}: wrong array")
                    raw = np.ascontiguousarray(arr).tobytes()
                if len(raw) != t.nbytes:
                    self.fail(f"input file {path}: {len(raw)} bytes, input {k} needs {t.nbytes}",
                              f"input {k}: size mismatch")
                dst[:] = np.frombuffer(raw, np.uint8)
            elif self.fill == "zeros":
                dst[:] = 0
            else:
                dst[:] = newlib_rand_bytes(t.nbytes)
            self.bus.work("memset_byte", t.nbytes)

    def print_profile(self, cpu: int) -> dict:
        """The profile block; returns its figures (the session entry hands them to the host)."""
        c = self.profiler.counters() if self.profiler is not None else None
        self.info("Profile for Inference:")
        rows = []
        if c is not None and self.profiler.family == "u85":
            # ethosu_profiler.c's ETHOSU85 counters in its order, the derived NPU IDLE, the total
            rows += [("NPU ACTIVE", "cycles", c["active"])]
            rows += [(f"NPU ETHOSU_PMU_{n}", "beats", c[n]) for n in U85_BEATS]
            rows += [("NPU IDLE", "cycles", c["idle"]), ("NPU TOTAL", "cycles", c["total"])]
        elif c is not None:
            npu = [("NPU AXI0_RD_DATA_BEAT_RECEIVED", "beats", c["axi0_rd"]),
                   ("NPU AXI0_WR_DATA_BEAT_WRITTEN", "beats", c["axi0_wr"]),
                   ("NPU AXI1_RD_DATA_BEAT_RECEIVED", "beats", c["axi1_rd"]),
                   ("NPU ACTIVE", "cycles", c["active"]), ("NPU IDLE", "cycles", c["idle"]),
                   ("NPU TOTAL", "cycles", c["total"])]
            if self.log_format == "mlek-25":
                npu = [npu[4], npu[0], npu[1], npu[2], npu[3], npu[5]]
            rows += npu
        rows.append(("CPU TOTAL", "cycles", cpu))
        for name, unit, value in rows:
            if self.log_format == "mlek-25":
                self.info(f"{name}: {value} {unit}")
            else:
                self.info(f"{name} {unit}: {value}")
        events = {}
        if c is not None and self.profiler.family == "u85":  # the counted events by their PMU names
            events = {"NPU_ACTIVE": c["active"], **{n: c[n] for n in U85_BEATS}}
        elif c is not None:
            events = {"NPU_IDLE": c["idle"], "AXI0_RD_DATA_BEAT_RECEIVED": c["axi0_rd"],
                      "AXI0_WR_DATA_BEAT_WRITTEN": c["axi0_wr"], "AXI1_RD_DATA_BEAT_RECEIVED": c["axi1_rd"]}
        return {"cpu_cycles": cpu, "pmu_cycles": c["total"] if c else 0, "npu_active_cycles": c["active"] if c else 0,
                "pmu_events": events}

    def write_outputs(self, model, interp) -> None:
        base = self.boot.args.output
        if not base:
            return
        failures = []
        for k, ti in enumerate(model.outputs):
            t = model.tensors[ti]
            path = f"{base}-{k}.bin"
            data = self.bus.read(interp.address(ti), t.nbytes)
            self.info(f"Writing output tensor {k} ({t.type_name}{list(t.shape)}, {t.nbytes} bytes) to {path}")
            res = self.bus.host_write_file(path, data)
            if not res.ok:
                self.err(f"Failed to write output file {path}: {res.strerror}")
                failures.append(f"output file {path} was not written: {res.strerror} (errno {res.errno})")
        if failures:
            raise _Stop(failures[0])


def check_program(image: bytes, inputs: int = 0) -> str | None:
    """Why this runner's model reader refuses ``image`` (a ``.tflite``), in one line, or None: what ``fvp run``
    asks before it runs a model (a file the reader refuses is a bad model file, exit status 2). ``inputs``: the
    number of input files (``-i``) given, refused when the model takes fewer (the others would be ignored)."""
    try:
        model = load_model(image)
    except ModelError as e:
        msg = (str(e).splitlines() or ["ModelError"])[0]
        return f"truncated (or damaged): {msg}" if "outside the file" in msg else msg
    if inputs > len(model.inputs):
        return (f"{inputs} input files (-i) for a model that takes {len(model.inputs)} input"
                f"{'s' if len(model.inputs) != 1 else ''}: the others would be ignored")
    return None


def main(bus, boot: BootInfo) -> int:
    """The reset handler."""
    return Runner(bus, boot).main()


def _tensor_info(t, index: int) -> dict:
    quant = None
    if t.scale.size:
        quant = {"scale": [float(x) for x in t.scale], "zero_point": [int(z) for z in t.zero_point],
                 "quantized_dimension": int(t.quantized_dimension)}
        if t.scale.size == 1:
            quant.update(scale=quant["scale"][0], zero_point=quant["zero_point"][0])
    return {"index": index, "kind": "Tensor", "dtype": t.type_name, "numpy_dtype": np.dtype(t.dtype).str,
            "shape": [int(d) for d in t.shape], "dim_order": list(range(len(t.shape))), "nbytes": int(t.nbytes),
            "name": t.name or None, "quantization": quant}


def session(bus, boot: BootInfo):
    """The session entry (``fvp.machine.resident``): the application kept alive between the host's inferences,
    each run as MLEK's inference loop runs one (the inputs written into the arena, the profiler reset and
    started, ``Invoke``, the profile block), with the inputs and outputs handed over in memory. Ends with
    ``Inference completed.`` and EOT."""
    r = Runner(bus, boot)
    try:
        r.boot_up()
    except _Stop as e:
        bus.abort(str(e))
    model, interp = r.model, r.interp
    request = yield {"image": "tflm_inference_runner", "method": "main", "runtime": r.log_format, "bundled": False,
                     "inputs": [_tensor_info(model.tensors[ti], k) for k, ti in enumerate(model.inputs)],
                     "outputs": [_tensor_info(model.tensors[ti], k) for k, ti in enumerate(model.outputs)]}
    while request is not None:
        try:
            if len(request) != len(model.inputs):
                r.fail(f"{len(request)} inputs given, the model has {len(model.inputs)}", "wrong number of inputs")
            for k, ti in enumerate(model.inputs):
                t = model.tensors[ti]
                if request[k] is None:
                    continue
                if len(request[k]) != t.nbytes:
                    r.fail(f"input {k}: {len(request[k])} bytes, the tensor needs {t.nbytes}", f"input {k}: size")
                bus.view(interp.address(ti), t.nbytes)[:] = np.frombuffer(request[k], np.uint8)
                bus.work("memcpy_byte", t.nbytes)
            figures = r.infer()
        except _Stop as e:
            bus.abort(str(e))
        outs = [bus.read(interp.address(ti), model.tensors[ti].nbytes) for ti in model.outputs]
        request = yield dict(figures, outputs=outs)
    r.info("Inference completed.")
    r.console.write(b"\x04")
    return 0
