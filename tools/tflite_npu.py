#!/usr/bin/env python3
"""Run the Ethos-U part of a Vela-compiled TFLite model on our NPU model, as TFLite Micro would on the FVP.

A host tool (not part of the simulated machine): it reads a ``.tflite`` file with the TFLite Micro image's own
reader (``firmware/tflm/model.py``: the flatbuffers runtime and the generated TFLite schema classes), finds every ``ethos-u`` custom operator and runs
its command stream on the Ethos-U of a board (``fvp/machine/platform.py``) through the firmware's Ethos-U driver
(``firmware/drivers/ethosu.py``), with the placement of Arm's ML Embedded Evaluation Kit (MLEK) on the
Corstone-300 FVP:

- the whole model file (command stream and flash/weight tensor used in place) in DDR, where the board puts the
  firmware's model (``firmware.model``); REGIONCFG routes region 0 (the flash tensor) to AXI1 in Shared_Sram;
- the tensor arena in SRAM (the board's SRAM pool): the scratch tensor and the IFM/OFM tensors at the offsets of
  the model's ``OfflineMemoryAllocation`` metadata (Vela plans them; TFLM honours it), zero-filled (timing does
  not depend on the data values);
- QCONFIG/REGIONCFG/AXI_LIMIT as the Ethos-U core driver's defaults for the board's memory mode (what MLEK
  builds with); no fast memory (MLEK's U55 builds pass none), so base pointer 2 is the scratch_fast tensor.

The custom operator's convention (TFLM ``tensorflow/lite/micro/kernels/ethos_u/ethosu.cc``): custom options are
a flexbuffer whose root is CO_TYPE_ETHOSU = 1; input 0 is the command stream (the driver payload: ``COP1``,
optimizer config, command stream); the base pointers are the remaining inputs then the outputs (at most 8):
Vela orders them flash, scratch, scratch_fast, IFMs, so region n is base pointer n; each base pointer's size is
the product of the tensor's dims.

The PMU is programmed around each invocation (the driver's inference begin/end hooks) to give MLEK's figures:
the cycle counter counts every enabled cycle (NPU TOTAL) and the four event counters count AXI0 read beats,
AXI0 write beats, AXI1 read beats and NPU_IDLE; NPU ACTIVE = TOTAL - IDLE. The idle part is the CPU's time in
the driver between the hooks and the NPU's start/end, so it comes from the board's CPU cost model, not from
the NPU model.

A ``.tflite`` without an ``ethos-u`` operator is compiled first with the installed Vela (``--vela``,
``--accelerator-config``, ``--system-config``, ``--memory-mode``; the ``vela.ini`` shipped in the Vela
package; run by ``fvp.host.programs.vela``), and Vela's own estimate is read from its summary CSV.

Usage: python tools/tflite_npu.py MODEL_OR_DIR [...] [--board NAME] [-C key=value] [--profile]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from firmware.tflm.ethosu_op import CO_TYPE_ETHOSU, MAX_BASE_POINTERS, flexbuffer_root_int  # noqa: E402
from hwdesc.ethosu import MMIO as NPU, PMU_EVENT as EV  # noqa: E402

# Published Corstone-300 FVP figures (MLEK docs/use_cases/<name>.md: Ethos-U55-128, Ethos_U55_High_End_Embedded,
# Shared_Sram, the timing adapters of ta_config_u55_high_end.cmake) and Vela 5.1.0's estimate on the same files
# (compile notes), keyed by the name MLEK gives the source model; ``sha256``: the source files known to be MLEK's
# (ML-zoo's int8 files; YOLO-Fastest from emza-vs ModelZoo, as MLEK's cmsis-pack examples embed it), which identify
# a model whatever it is called. Vela 5.1.0 reproduces the KWS and AD estimates exactly.
PUBLISHED = {
    "kws_micronet_m": {
        "what": "KWS MicroNet-M (MLEK kws), ML-zoo int8",
        "fvp": {"active": 413_814, "idle": 358, "total": 414_172,
                "axi0_rd": 132_130, "axi0_wr": 48_252, "axi1_rd": 17_544},
        "vela51": {"npu": 415_689, "total": 417_771},
        # the ML-zoo file, and MLEK's own Vela output for U55-128 (Arm-Examples/cmsis-mlek
        # template/audio/kws/src/kws_micronet_m_vela_H128.tflite.cpp's array)
        "sha256": ("c1feed3af5dac44de7477fb4161670ba18a3fc06039e4a14da41b1c4dd454cb4",
                   "4588354334d8d57b9d678a0c1cb10e3f90701b78f1c0f3331d00744992dff037"),
    },
    "ad_medium_int8": {
        "what": "Anomaly detection MicroNet-M (MLEK ad), ML-zoo 7c32b097 int8",
        "fvp": {"active": 967_731, "idle": 441, "total": 968_172},
        "vela51": {"npu": 809_743, "total": 935_782},
        "sha256": ("a8b1c9037c2a80e6ff770f0a550777cf744a52850bed6545b2bfc9bacf604c98",),
    },
    "rnnoise_INT8": {
        "what": "Noise reduction RNNoise (MLEK noise_reduction), ML-zoo int8",
        "fvp": {"active": 103_870, "idle": 643, "total": 104_514},
        "sha256": ("9c582545b7c13af44616c44b654f4fe721aa2585630b0ca173ca3589f6f11c2c",),
    },
    "yolo-fastest_192_face_v4": {
        "what": "Object detection YOLO-Fastest 192x192 face (MLEK object_detection)",
        "fvp": {"active": 2_050_339, "idle": 855, "total": 2_051_194},
        "sha256": ("e94bcdb011784bead70ab0c0e9d2dae1a9ea5f103b43e1e6fac3019302cf71ab",),
    },
    "wav2letter_pruned_int8": {
        "what": "ASR wav2letter pruned (MLEK asr), ML-zoo int8",
        "fvp": {"active": 28_450_696, "idle": 476, "total": 28_451_172,
                "axi0_rd": 6_564_262, "axi0_wr": 928_889, "axi1_rd": 841_712},
    },
    "vww4_128_128_INT8": {
        "what": "Visual wake word MicroNet vww4 128x128 (MLEK vww), ML-zoo int8",
        "fvp": {"active": 706_754, "idle": 10_954, "total": 717_708},
    },
}


# the PMU set-up (the interface tables' registers and event numbers)
PMCR, PMCNTENSET, PMCCNTR_LO, PMCCNTR_HI, PMCCNTR_CFG = (NPU[n].offset for n in (
    "PMCR", "PMCNTENSET", "PMCCNTR", "PMCCNTR_HI", "PMCCNTR_CFG"))
PMU_EVENTS = (EV.AXI0_RD_DATA_BEAT_RECEIVED, EV.AXI0_WR_DATA_BEAT_WRITTEN, EV.AXI1_RD_DATA_BEAT_RECEIVED,
              EV.NPU_IDLE)


class ToolError(Exception):
    pass


# ================================================================================================ TFLite reading


@dataclass
class EthosuOp:
    index: int
    inputs: list  # [firmware.tflm.model.Tensor]
    outputs: list

    @property
    def command_stream(self):  # -> firmware.tflm.model.Tensor
        return self.inputs[0]

    @property
    def base_tensors(self) -> list:
        return (self.inputs[1:] + self.outputs)[:MAX_BASE_POINTERS]


@dataclass
class TfliteModel:
    path: str
    data: bytes
    ethosu_ops: list = field(default_factory=list)
    other_ops: list = field(default_factory=list)  # builtin names / custom codes of the operators left on the CPU
    planned: dict = field(default_factory=dict)  # tensor index -> OfflineMemoryAllocation offset in the arena


def read_tflite(path: str | Path) -> TfliteModel:
    """Parse a ``.tflite`` with the TFLite Micro image's reader (``firmware/tflm/model.py``: the generated schema
    classes, buffers, offline plan) and list its ``ethos-u`` custom operators."""
    from firmware.tflm.model import ModelError, load_model

    data = Path(path).read_bytes()
    try:
        m = load_model(data)
    except ModelError as e:
        raise ToolError(f"{path}: not a usable TFLite model ({e})") from None
    if m.n_subgraphs > 1:
        raise ToolError(f"{path}: {m.n_subgraphs} subgraphs; only single-subgraph models (what Vela writes) are run")
    out = TfliteModel(path=str(path), data=data,
                      planned={t: o for t, o in enumerate(m.offline_offsets or ()) if o >= 0})
    for op in m.operators:
        if op.custom_code != "ethos-u":
            out.other_ops.append(op.op_name)
            continue
        if flexbuffer_root_int(op.custom_options) != CO_TYPE_ETHOSU:
            raise ToolError(f"{path}: operator {op.index}: ethos-u operator whose custom options are not "
                            f"CO_TYPE_ETHOSU")
        ins = [m.tensors[t] for t in op.inputs if t >= 0]
        outs = [m.tensors[t] for t in op.outputs if t >= 0]
        if not ins or ins[0].data_offset is None:
            raise ToolError(f"{path}: operator {op.index}: no constant command-stream input")
        out.ethosu_ops.append(EthosuOp(index=op.index, inputs=ins, outputs=outs))
    return out


# ================================================================================================ Vela


def compile_with_vela(src: Path, out_dir: Path, accelerator: str, system_config: str, memory_mode: str,
                      vela: str | None = None) -> tuple[Path, dict | None, str]:
    """Compile ``src`` with Vela (``fvp.host.programs.vela``, the one Vela runner); returns (compiled .tflite, Vela's estimate
    from the summary CSV, version)."""
    from fvp.host.programs.vela import VelaError, compile_tflite

    try:
        out = compile_tflite(src, out_dir, accelerator, system_config, memory_mode, vela=vela)
    except VelaError as e:
        raise ToolError(str(e).removeprefix("--vela: ")) from None
    return out.path, read_vela_summary(out.summary), out.version


def read_vela_summary(path: Path) -> dict | None:
    from fvp.host.programs.vela import read_summary

    return read_summary(path)


# ================================================================================================ running


class MlekPmu:
    """Driver hooks that program the NPU PMU at inference begin and read it at the end."""

    def __init__(self, bus, base: int):
        self.bus, self.base = bus, base
        self.results: list = []

    def inference_begin(self) -> None:
        w, r, b = self.bus.write32, self.bus.read32, self.base
        w(b + PMCR, r(b + PMCR) | NPU.PMCR.mask("cnt_en"))
        w(b + PMCCNTR_CFG, 0)  # no start/stop event: every enabled cycle (NPU TOTAL)
        for i, ev in enumerate(PMU_EVENTS):
            w(b + NPU.PMEVTYPER.at(i), ev)
        w(b + PMCNTENSET, NPU.PMCNTENSET.mask())  # the four event counters and the cycle counter
        w(b + PMCR, r(b + PMCR) | NPU.PMCR.mask("event_cnt_rst", "cycle_cnt_rst"))

    def inference_end(self) -> None:
        r, b = self.bus.read32, self.base
        # stop counting first, so that every counter covers the same interval (each register read takes CPU
        # time, during which an enabled NPU_IDLE/cycle counter would go on counting)
        self.bus.write32(b + PMCR, r(b + PMCR) & ~NPU.PMCR.mask("cnt_en"))
        total = r(b + PMCCNTR_LO) | (r(b + PMCCNTR_HI) << 32)
        ev = [r(b + NPU.PMEVCNTR.at(i)) for i in range(len(PMU_EVENTS))]
        self.results.append({"total": total, "axi0_rd": ev[0], "axi0_wr": ev[1], "axi1_rd": ev[2],
                             "idle": ev[3], "active": total - ev[3]})


class _Console:
    def __init__(self):
        self.buf = io.BytesIO()

    def write(self, data: bytes) -> None:
        self.buf.write(data)

    def text(self) -> str:
        return self.buf.getvalue().decode("utf-8", "replace")


@dataclass
class OpRun:
    op: EthosuOp
    pmu: dict
    stream: object  # fvp.machine.npu.device.StreamRecord
    bases: list
    sizes: list


@dataclass
class ModelRun:
    model: TfliteModel
    board: str
    variant: str
    system_config: str
    memory_mode: str
    ops: list
    platform: object
    placement: dict

    @property
    def npu_cycles(self) -> int:
        return sum(o.stream.npu_cycles for o in self.ops)

    def pmu_total(self, key: str) -> int:
        return sum(o.pmu[key] for o in self.ops)


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def run_model(model: TfliteModel, board: str = "corstone-300-ethos-u55-128", overrides=()) -> ModelRun:
    """Run every ``ethos-u`` operator of ``model`` in order on a fresh board with MLEK's placement."""
    from firmware.drivers.ethosu import EthosUDriver
    from fvp.boards import load_board
    from fvp.machine.platform import Platform

    if not model.ethosu_ops:
        raise ToolError(f"{model.path}: no ethos-u custom operator (compile it with Vela first)")
    spec = load_board(board, list(overrides))
    if spec.npu is None:
        raise ToolError(f"board {board}: no Ethos-U")
    platform = Platform(spec, out=io.StringIO(), quiet_guest=True)
    boot = platform.boot_info
    npu = boot.npu
    regions = spec.firmware.link_regions  # the runner's linker regions: name -> (base, size)
    if "DDR" not in regions or "SRAM" not in regions:
        raise ToolError(f"board {board}: the firmware memory map has no DDR or SRAM region")
    ddr_base = int(regions["DDR"][0])
    sram_base, sram_size = (int(v) for v in regions["SRAM"])
    cpu_view = platform.bus.view

    # the model file in DDR (MLEK: nn_model in DDR), 16-byte aligned as the linker aligns it
    model_addr = _align(ddr_base, 16)
    cpu_view(model_addr, len(model.data), "cpu")[:] = memoryview(model.data)
    placement = {"model": (model_addr, len(model.data)), "arena": (sram_base, 0)}
    console = _Console()
    pmu = MlekPmu(platform.port, npu.base)
    driver = EthosUDriver(platform.port, npu.base, qconfig=npu.qconfig, regioncfg=npu.regioncfg,
                          fast_memory=None, console=console, hooks=pmu)
    if not driver.init():
        raise ToolError(f"Ethos-U driver init failed: {console.text().strip()}")
    runs = []
    arena_end = 0
    for op in model.ethosu_ops:
        # the arena: planned tensors at their offsets, others after them (16-byte aligned)
        addrs: dict = {}
        for t in op.inputs + op.outputs:
            if t.data_offset is None and t.index in model.planned:
                addrs[t.index] = sram_base + model.planned[t.index]
                arena_end = max(arena_end, model.planned[t.index] + t.numel)
        for t in op.inputs + op.outputs:
            if t.data_offset is None and t.index not in addrs:
                arena_end = _align(arena_end, 16)
                addrs[t.index] = sram_base + arena_end
                arena_end += t.numel
        if arena_end > sram_size:
            raise ToolError(f"{model.path}: the arena needs {arena_end} bytes, the board's SRAM has {sram_size}")
        bases, sizes = [], []
        for t in op.base_tensors:
            a = model_addr + t.data_offset if t.data_offset is not None else addrs[t.index]
            bases.append(a)
            sizes.append(t.numel)
        cms = op.command_stream
        n_before = len(platform.npu_streams())
        rc = driver.invoke_v3(model_addr + cms.data_offset, cms.data_size, bases, sizes)
        streams = platform.npu_streams()[n_before:]
        if rc != 0 or not streams:
            raise ToolError(f"{model.path}: operator {op.index}: ethosu_invoke_v3 failed: {console.text().strip()}")
        if len(streams) != 1:
            raise ToolError(f"{model.path}: operator {op.index}: {len(streams)} command streams in one payload")
        rec = streams[0]
        if rec.fault is not None:
            raise ToolError(f"{model.path}: operator {op.index}: NPU fault: {rec.fault}")
        runs.append(OpRun(op=op, pmu=pmu.results[-1], stream=rec, bases=bases, sizes=sizes))
    placement["arena"] = (sram_base, arena_end)
    return ModelRun(model=model, board=spec.name, variant=spec.npu.variant,
                    system_config=spec.npu.system_config.name, memory_mode=spec.npu.memory_mode.name,
                    ops=runs, platform=platform, placement=placement)


# ================================================================================================ reporting


def identify(src: Path) -> str | None:
    """The PUBLISHED key of a source model: by the SHA-256 of the file (MLEK's own files, whatever their name),
    else by its name (``kws_micronet_m.tflite``, ``ad_medium_int8_vela.tflite``, ``zoo__rnnoise_INT8.tflite``: the
    stem, without ``_vela``, starts or ends with the key)."""
    digest = hashlib.sha256(Path(src).read_bytes()).hexdigest() if Path(src).is_file() else ""
    for key, p in PUBLISHED.items():
        if digest in p.get("sha256", ()):
            return key
    stem = src.stem[:-5] if src.stem.endswith("_vela") else src.stem
    for key in PUBLISHED:
        if stem.startswith(key) or stem.endswith(key):
            return key
    return None


def _r(a, b) -> str:
    return f"{a / b:.3f}" if a is not None and b else "-"


def _n(v) -> str:
    return "-" if v is None else f"{int(v):,}"


def op_profile(run: ModelRun, top: int = 0) -> list[str]:
    """Per-operation lines of where the cycles go: exclusive cycles, share, bound, compute vs memory."""
    lines = []
    for o in run.ops:
        t = o.stream.timing
        total = max(int(t.total_cycles), 1)
        per_op = [p for p in t.per_op if p.kind not in ("STOP", "IRQ", "PMU_MASK", "DMA_WAIT", "KERNEL_WAIT")]
        names = getattr(t, "ports", None) or {}
        lines.append(f"  stream of operator {o.op.index}: {o.stream.npu_cycles:,} NPU cycles, {len(per_op)} "
                     f"operations (AXI0 = {names.get(0, 'AXI0')}, AXI1 = {names.get(1, 'AXI1')})")
        hdr = (f"    {'#':>3} {'operation':<20} {'OFM':>12} {'kernel':>7} {'MACs':>10} {'excl.cyc':>9} {'share':>6} "
               f"{'compute':>9} {'MAC':>9} {'mem AXI0':>9} {'mem AXI1':>9} {'fixed':>6} {'AXI1 rd B':>9}  bound")
        lines.append(hdr)
        rows = per_op if not top else sorted(per_op, key=lambda p: -p.exclusive_cycles)[:top]
        for p in rows:
            shape = "x".join(str(v) for v in p.ofm_shape) if p.ofm_shape else "-"
            k = f"{p.kernel[0]}x{p.kernel[1]}" if p.kernel else "-"
            lines.append(f"    {p.index:>3} {p.mnemonic[:20]:<20} {shape:>12} {k:>7} {p.macs:>10,} "
                         f"{p.exclusive_cycles:>9,.0f} {100 * p.exclusive_cycles / total:>5.1f}% "
                         f"{p.compute_cycles:>9,.0f} {p.mac_cycles:>9,.0f} {p.memory_cycles.get(0, 0):>9,.0f} "
                         f"{p.memory_cycles.get(1, 0):>9,.0f} {p.fixed_cycles:>6,.0f} "
                         f"{p.bytes_read.get(1, 0):>9,}  {p.bound}")
        bounds: dict = {}
        kinds: dict = {}
        for p in per_op:
            bounds[p.bound] = bounds.get(p.bound, 0) + p.exclusive_cycles
            kinds[p.kind] = kinds.get(p.kind, 0) + p.exclusive_cycles
        attributed = sum(p.exclusive_cycles for p in per_op)
        lines.append("    by bound: " + ", ".join(f"{k} {v:,.0f} ({100 * v / total:.0f}%)" for k, v in
                                                sorted(bounds.items(), key=lambda kv: -kv[1]) if v > 0)
                     + f"; outside any operation {total - attributed:,.0f}")
        lines.append("    by kind: " + ", ".join(f"{k} {v:,.0f} ({100 * v / total:.0f}%)" for k, v in
                                               sorted(kinds.items(), key=lambda kv: -kv[1]) if v > 0))
        mac = sum(p.mac_cycles for p in per_op)
        comp = sum(p.compute_cycles for p in per_op)
        m0 = sum(p.memory_cycles.get(0, 0) for p in per_op)
        m1 = sum(p.memory_cycles.get(1, 0) for p in per_op)
        fixed = sum(p.fixed_cycles for p in per_op)
        lines.append(f"    sums over operations: compute {comp:,.0f} (MAC {mac:,.0f}), memory at full bandwidth "
                     f"AXI0 {m0:,.0f} / AXI1 {m1:,.0f}, fixed costs {fixed:,.0f}")
    return lines


def report(run: ModelRun, key: str | None, vela: dict | None, vela_version: str = "",
           out=None, profile: bool = False, source: Path | None = None) -> None:
    w = (out or sys.stdout).write
    pub = PUBLISHED.get(key) if key else None
    src = ""
    if source is not None and Path(source).resolve() != Path(run.model.path).resolve():
        data = Path(source).read_bytes()
        src = f"{Path(source).name} ({len(data):,} B, sha256 {hashlib.sha256(data).hexdigest()[:12]}) -> "
    w(f"{src}{Path(run.model.path).name}: {len(run.ops)} ethos-u operator(s)"
      + (f", {len(run.model.other_ops)} CPU operator(s) {run.model.other_ops}" if run.model.other_ops else "")
      + f"; {run.variant}, {run.system_config}, {run.memory_mode} ({run.board})\n")
    ma, ms = run.placement["model"]
    aa, asz = run.placement["arena"]
    w(f"  model in DDR at 0x{ma:08x} ({ms:,} B), arena in SRAM at 0x{aa:08x} ({asz:,} B)\n")
    hdr = f"  {'':<26} {'NPU active':>11} {'idle':>7} {'total':>11} {'AXI0 rd':>9} {'AXI0 wr':>9} {'AXI1 rd':>9}"
    w(hdr + "\n")
    for i, o in enumerate(run.ops):
        p = o.pmu
        w(f"  {'ours, operator ' + str(o.op.index):<26} {p['active']:>11,} {p['idle']:>7,} {p['total']:>11,} "
          f"{p['axi0_rd']:>9,} {p['axi0_wr']:>9,} {p['axi1_rd']:>9,}   (stream {o.stream.npu_cycles:,} cycles)\n")
    tot = {k: run.pmu_total(k) for k in ("active", "idle", "total", "axi0_rd", "axi0_wr", "axi1_rd")}
    if len(run.ops) > 1:
        w(f"  {'ours, total':<26} {tot['active']:>11,} {tot['idle']:>7,} {tot['total']:>11,} {tot['axi0_rd']:>9,} "
          f"{tot['axi0_wr']:>9,} {tot['axi1_rd']:>9,}\n")
    if pub:
        f = pub["fvp"]
        w(f"  {'FVP (MLEK docs)':<26} {_n(f.get('active')):>11} {_n(f.get('idle')):>7} {_n(f.get('total')):>11} "
          f"{_n(f.get('axi0_rd')):>9} {_n(f.get('axi0_wr')):>9} {_n(f.get('axi1_rd')):>9}\n")
        w(f"  {'ours / FVP':<26} {_r(tot['active'], f.get('active')):>11} {_r(tot['idle'], f.get('idle')):>7} "
          f"{_r(tot['total'], f.get('total')):>11} {_r(tot['axi0_rd'], f.get('axi0_rd')):>9} "
          f"{_r(tot['axi0_wr'], f.get('axi0_wr')):>9} {_r(tot['axi1_rd'], f.get('axi1_rd')):>9}\n")
    if vela and vela.get("total"):
        w(f"  Vela {vela_version or ''} estimate: NPU {vela['npu']:,}, total {vela['total']:,} (SRAM access "
          f"{_n(vela.get('sram'))}, off-chip flash access {_n(vela.get('offchip'))}); ours active / Vela total "
          f"{_r(tot['active'], vela['total'])}, / Vela NPU {_r(tot['active'], vela['npu'])}"
          + (f"; FVP / Vela total {_r(pub['fvp']['active'], vela['total'])}" if pub else "") + "\n")
    if pub and pub.get("vela51"):
        v = pub["vela51"]
        w(f"  Vela 5.1.0 (compile notes): NPU {v['npu']:,}, total {v['total']:,}\n")
    if profile:
        for line in op_profile(run):
            w(line + "\n")


def _collect(paths) -> list[Path]:
    files = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            files += sorted(f for f in p.glob("*.tflite"))
        elif p.is_file():
            files.append(p)
        else:
            raise ToolError(f"{p}: no such file or directory")
    return files


def run_paths(paths, *, board="corstone-300-ethos-u55-128", overrides=(), accelerator="ethos-u55-128",
              system_config="Ethos_U55_High_End_Embedded", memory_mode="Shared_Sram", vela=None,
              work_dir=None, out=None, profile=False, skip_compiled_duplicates=True) -> list:
    """Run every model of ``paths`` (files or directories); compile the ones without an ethos-u operator.
    Returns [(source path, ModelRun)]."""
    out = out or sys.stdout
    results = []
    files = _collect(paths)
    names = {f.name for f in files}
    tmp = None
    if work_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="tflite-npu-")
        work_dir = tmp.name
    try:
        for src in files:
            if skip_compiled_duplicates and src.stem.endswith("_vela") and f"{src.stem[:-5]}.tflite" in names:
                continue  # the compiled twin of a source model in the same directory: the source is compiled
            model = read_tflite(src)
            vela_est, ver = None, ""
            if not model.ethosu_ops:
                compiled, vela_est, ver = compile_with_vela(src, Path(work_dir), accelerator, system_config,
                                                            memory_mode, vela)
                model = read_tflite(compiled)
            else:
                vela_est = read_vela_summary(src.with_name(f"{src.stem[:-5] if src.stem.endswith('_vela') else src.stem}"
                                                           f"_summary_{system_config}.csv"))
            run = run_model(model, board, [f"npu.system_config={system_config}",
                                           f"npu.memory_mode={memory_mode}"] + list(overrides))
            report(run, identify(src), vela_est, ver, out=out, profile=profile, source=src)
            results.append((src, run))
    finally:
        if tmp is not None:
            tmp.cleanup()
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", help=".tflite files or directories of them")
    ap.add_argument("--board", default="corstone-300-ethos-u55-128", help="board name or YAML")
    ap.add_argument("-C", dest="overrides", action="append", default=[], help="board override key=value")
    ap.add_argument("--accelerator-config", default="ethos-u55-128")
    ap.add_argument("--system-config", default="Ethos_U55_High_End_Embedded")
    ap.add_argument("--memory-mode", default="Shared_Sram")
    ap.add_argument("--vela", default=None, help="the vela executable (default: this Python's ethosu.vela)")
    ap.add_argument("--work-dir", default=None, help="where compiled models go (default: a temporary directory)")
    ap.add_argument("--profile", action="store_true", help="per-operation table of where the cycles go")
    args = ap.parse_args(argv)
    try:
        res = run_paths(args.paths, board=args.board, overrides=args.overrides,
                        accelerator=args.accelerator_config, system_config=args.system_config,
                        memory_mode=args.memory_mode, vela=args.vela, work_dir=args.work_dir, profile=args.profile)
    except ToolError as e:
        print(f"tflite_npu: error: {e}", file=sys.stderr)
        return 1
    return 0 if res else 1


if __name__ == "__main__":
    sys.exit(main())
