"""Vela-compiled .tflite fixtures made by the real toolchain (tests/data/tflm: tools/make_tflm_models.py, Keras +
the TFLite converter, Vela 5.2, TFLite's reference kernels on the pre-Vela model): the MLEK reconstructions (KWS
and AD MicroNet-M, MobileNetV2 1.0 224), CPU operators between NPU parts, int16 (int16 LOGISTIC/TANH on every int16
input value: the NPU's built-in SIGMOID/TANH, the U85's LUT_SIGMOID/LUT_TANH), U55-64/256 and U65-256, Sram_Only
and Dedicated_Sram. Each runs through `fvp run` (and the KWS one through the FVP drop-in's --data) and its output
bytes must equal the committed reference outputs; the U85 fixtures (no TFLite Micro board has a U85) run their
command streams on the NPU model directly, with both engines. Every NPU part is bit-exact (SOFTMAX, SIGMOID and
TANH too); the one difference from the reference is int16 FULLY_CONNECTED's rounding in LiteRT (KNOWN_DIFFERENCES),
where the NPU gives TFLite Micro's values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from testutil import run_fvp

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data" / "tflm"
META = json.loads((DATA / "models.json").read_text())
REF = np.load(DATA / "reference.npz")

# no TFLite Micro board has an Ethos-U85: these run on the NPU model directly (test_u85_fixture_on_the_npu_model)
U85 = [n for n in META if META[n]["target"].startswith("ethos-u85")]
RUNNABLE = [n for n in META if n not in U85]
# outputs where the reference (LiteRT 2.21's BUILTIN_REF) is not what TFLite Micro and the NPU compute: fixture ->
# {output: the flat indices that differ by exactly 1}. int16_act's last operator, an int16 FULLY_CONNECTED with
# a 64-bit bias: LiteRT's values are those of the full 32-bit multipliers (e.g. -478205 * 1445642152 / 2^39 =
# -1257.4998 -> -1257), while TFLite Micro's 64-bit MultiplyByQuantizedMultiplier cuts the multiplier to Q15
# (firmware/fixedpoint.py mbqm64) and Vela programs the same cut scale (22059 >> 23: -1257.5004 -> -1258);
# the TFLite Micro port on the pre-Vela model gives the NPU's outputs. Its SIGMOID and TANH layers equal LiteRT's
# intermediate tensors on all 1024 elements each.
KNOWN_DIFFERENCES = {"int16_act_u55-128": {0: [4, 5]}}


def _input(name: str) -> np.ndarray:
    """The fixture's test input: reference.npz <name>/in0, or every int16 value (models.json test_input)."""
    if META[name].get("test_input", "").startswith("every int16 value"):
        from firmware.tflm.model import load_model

        m = load_model((DATA / f"{name}_vela.tflite").read_bytes())
        t = m.tensors[m.inputs[0]]
        return np.arange(-32768, 32768, dtype=np.int16).reshape([int(d) for d in t.shape])
    return REF[f"{name}/in0"]


def _outputs(name: str, prefix: str = "out") -> list:
    out, k = [], 0
    while f"{name}/{prefix}{k}" in REF:
        out.append(REF[f"{name}/{prefix}{k}"])
        k += 1
    return out


def _fvp_run(name: str, tmp_path: Path, *extra: str) -> tuple:
    """``fvp run`` of the fixture with its test input: (exit status, stdout, stderr)."""
    np.save(tmp_path / "in0.npy", _input(name))
    return run_fvp("run", DATA / f"{name}_vela.tflite", "-i", tmp_path / "in0.npy", "-o", tmp_path / "out",
                   *META[name]["fvp_args"], *extra)


def _check_output(name: str, k: int, got: np.ndarray, ref: np.ndarray, prefix: str = "out") -> None:
    assert got.size == ref.size, f"{name} output {k}: {got.size} elements, the reference has {ref.size}"
    got = got.reshape(ref.shape)
    bad = np.flatnonzero(got.ravel() != ref.ravel())
    known = KNOWN_DIFFERENCES.get(name, {}).get(k, []) if prefix == "out" else []
    if list(bad) == known and np.all(np.abs(got.ravel()[bad].astype(np.int64) - ref.ravel()[bad]) == 1):
        return
    if bad.size:
        raise AssertionError(f"{name} output {k}: {bad.size} of {ref.size} elements differ (at {list(bad[:8])}, "
                             f"known: {known}), first: {got.ravel()[bad[0]]} vs reference {ref.ravel()[bad[0]]}")


def _same_outputs(name: str, tmp_path: Path, prefix: str = "out") -> None:
    refs = _outputs(name, prefix)
    assert refs, f"{name}: no reference outputs"
    for k, ref in enumerate(refs):
        _check_output(name, k, np.fromfile(tmp_path / f"out-{k}.bin", ref.dtype), ref, prefix)


def _counter(log: str, name: str) -> int:
    return int(log.split(f"INFO - {name}: ")[1].split()[0])


def test_every_fixture_is_a_vela_output_with_its_record():
    """The committed files are what models.json says: Vela's ethos-u operator plus the listed CPU operators."""
    from firmware.tflm.model import load_model

    assert {p.name for p in DATA.glob("*_vela.tflite")} == {f"{n}_vela.tflite" for n in META}
    for name, rec in META.items():
        data = (DATA / f"{name}_vela.tflite").read_bytes()
        assert len(data) == rec["vela_bytes"], name
        m = load_model(data)
        assert [op.op_name for op in m.operators] == rec["vela_operators"], name
        assert "ethos-u" in rec["vela_operators"], name
        assert len(m.inputs) == 1, name
        t = m.tensors[m.inputs[0]]
        x = _input(name)
        assert x.dtype == t.dtype and list(x.shape) == [int(d) for d in t.shape], name
        assert len(_outputs(name)) == len(m.outputs), name


@pytest.mark.slow
@pytest.mark.parametrize("name", RUNNABLE)
def test_fixture_bit_exact_through_fvp_run(name, tmp_path):
    rec = META[name]
    rc, log, err = _fvp_run(name, tmp_path)
    assert rc == 0, log[-3000:] + err[-2000:]
    assert f"INFO - Number of operators: {len(rec['vela_operators'])}" in log
    for i, op in enumerate(rec["vela_operators"]):
        assert f"INFO - \tOperator {i}: {op}" in log
    assert _counter(log, "NPU ACTIVE cycles") > 0 and _counter(log, "NPU AXI0_RD_DATA_BEAT_RECEIVED beats") > 0
    assert "Inference completed." in log and "Simulation stopped by user" in log
    _same_outputs(name, tmp_path)


class _Memory:
    """Address -> numpy bytes of a few regions (the NPU's ``memory``)."""

    def __init__(self):
        self.regions = []

    def add(self, address: int, data: np.ndarray) -> None:
        self.regions.append((address, data))

    def view(self, address: int, length: int, write: bool) -> np.ndarray:
        for base, a in self.regions:
            if base <= address and address + length <= base + a.size:
                return a[address - base:address - base + length]
        from fvp.errors import NpuFault

        raise NpuFault("bus_error", f"no memory at 0x{address:x}", address=address)


def _run_on_the_npu_model(name: str, engine: str) -> list:
    """The fixture's ethos-u operator on the NPU model alone, as TFLM places it: base pointer n = the operator's
    input n + 1 then its outputs (flash, scratch, scratch_fast, IFM, OFMs), the flash tensor in place, the others
    in one arena at their offline-planned offsets; the model's outputs read back from the arena."""
    from firmware.tflm.model import load_model
    from fvp.machine.npu.arch import get_arch
    from fvp.machine.npu.command_stream import parse_driver_payload
    from fvp.machine.npu.execute import execute_stream

    data = (DATA / f"{name}_vela.tflite").read_bytes()
    m = load_model(data)
    (op,) = [o for o in m.operators if o.op_name == "ethos-u"]
    cms = m.tensors[op.inputs[0]]
    words = parse_driver_payload(data[cms.data_offset:cms.data_offset + cms.nbytes]).stream
    offsets = m.offline_offsets
    flash_at, arena_at = 0x1000_0000, 0x2000_0000
    mem = _Memory()
    mem.add(flash_at, np.frombuffer(data, np.uint8).copy())
    arena = np.zeros(max(offsets[i] + m.tensors[i].nbytes for i in range(len(m.tensors)) if offsets[i] >= 0),
                     np.uint8)
    mem.add(arena_at, arena)
    bases = []
    for i in list(op.inputs[1:]) + list(op.outputs):
        t = m.tensors[i]
        bases.append(flash_at + t.data_offset if t.data_offset is not None else
                     arena_at + offsets[i] if offsets[i] >= 0 else 0)
    x = _input(name)
    arena[offsets[m.inputs[0]]:offsets[m.inputs[0]] + x.nbytes] = np.frombuffer(x.tobytes(), np.uint8)
    arch = get_arch(META[name]["target"])
    res = execute_stream(words, arch=arch, base_pointers=bases, memory=mem, shram=np.zeros(arch.shram_bytes, np.uint8),
                         engine=engine)
    assert res.ok, res.fault
    outs = []
    for i in m.outputs:
        t = m.tensors[i]
        outs.append(arena[offsets[i]:offsets[i] + t.nbytes].view(t.dtype).reshape([int(d) for d in t.shape]))
    return outs


EXHAUSTIVE = [n for n in META if META[n].get("test_input", "").startswith("every int16 value")]


@pytest.mark.parametrize("engine", ["fast", "reference"])
@pytest.mark.parametrize("name", EXHAUSTIVE)
def test_int16_sigmoid_tanh_fixture_on_the_npu_model(name, engine):
    """int16 LOGISTIC/TANH on every int16 input value (U55: built-in SIGMOID/TANH; U85: LUT_SIGMOID/LUT_TANH from
    Vela's tables), the command stream alone on the NPU model with each engine: bit-exact, every element."""
    for k, (got, ref) in enumerate(zip(_run_on_the_npu_model(name, engine), _outputs(name), strict=True)):
        assert got.size == ref.size == 65536
        _check_output(name, k, got, ref)


def test_the_u85_fixtures_are_the_u55_ones_for_the_u85():
    """The U85 fixtures compile the same source models as U55 ones (same references), with the U85's LUT
    functions: a 2 KiB table DMA'd into the LUT RAM before each."""
    from firmware.tflm.model import load_model
    from fvp.machine.npu.command_stream import parse_driver_payload
    from fvp.machine.npu.operations import iter_operations

    assert U85
    for name in U85:
        twin = name.replace("_u85-256", "_u55-128")
        assert META[name]["source_sha256"] == META[twin]["source_sha256"], name
        assert all(np.array_equal(a, b) for a, b in zip(_outputs(name), _outputs(twin), strict=True))
        data = (DATA / f"{name}_vela.tflite").read_bytes()
        m = load_model(data)
        cms = m.tensors[[o for o in m.operators if o.op_name == "ethos-u"][0].inputs[0]]
        words = parse_driver_payload(data[cms.data_offset:cms.data_offset + cms.nbytes]).stream
        ops = [o for _, o in iter_operations(words, META[name]["target"]) if o.is_kernel_op]
        assert sorted(o.activation.name for o in ops) == ["SIGMOID", "TANH"]
        assert all(o.activation.lut_slot == 0 for o in ops)


@pytest.mark.slow
def test_kws_reconstruction_through_the_dropin_with_mleks_inputs(tmp_path):
    """MLEK's dynamic-model flow: the drop-in with --data model@0x90000000 fills the input with std::rand() & 0xFF
    (newlib), as MLEK's inference_runner does; the output (written through the semihosting command line) equals
    the reference for those bytes, and the NPU figures equal those of `fvp run` with the same bytes from a file."""
    name = "kws_micronet_m_u55-128"
    model = DATA / f"{name}_vela.tflite"
    rc, dout, derr = run_fvp("-C", "mps3_board.uart0.out_file=-", "--data", f"{model}@0x90000000",
                             "-C", f"cpu0.semihosting-cmd_line=inference_runner -o {tmp_path / 'out'}",
                             prog="fvp.host.dropin")
    assert rc == 0, dout[-3000:] + derr[-2000:]
    assert "INFO - Model pointer: 0x90000000" in dout
    _same_outputs(name, tmp_path, prefix="dropin_out")
    np.save(tmp_path / "rand.npy", REF[f"{name}/dropin_in0"])
    rc, rout, rerr = run_fvp("run", model, "-i", tmp_path / "rand.npy")
    assert rc == 0, rout[-3000:] + rerr[-2000:]
    for c in ("NPU ACTIVE cycles", "NPU AXI0_RD_DATA_BEAT_RECEIVED beats", "NPU AXI0_WR_DATA_BEAT_WRITTEN beats",
              "NPU AXI1_RD_DATA_BEAT_RECEIVED beats"):
        assert _counter(dout, c) == _counter(rout, c), c


def _dropin_args(name: str) -> list[str]:
    """The fixture's `fvp run` arguments as FVP parameters: --target ethos-uNN-M picks the binary's flavour and
    ethosu.num_macs; -C board keys pass through (the drop-in takes this simulator's own keys too)."""
    args, out, it = [], [], iter(META[name]["fvp_args"])
    target = META[name]["target"]
    for a in it:
        if a == "--target":
            next(it)
        else:
            args.append(a)
    out += [f"--flavour={'u65' if 'u65' in target else 'u55'}", "-C", f"ethosu.num_macs={target.rsplit('-', 1)[1]}"]
    return out + args


@pytest.mark.slow
@pytest.mark.parametrize("name", RUNNABLE)
def test_fixture_bit_exact_through_the_dropin(name, tmp_path):
    """Every fixture through the FVP drop-in with MLEK's dynamic-model address (--data model@0x90000000), its input
    and output files named on the semihosting command line: the same reference outputs as `fvp run`."""
    np.save(tmp_path / "in0.npy", _input(name))
    rc, out, err = run_fvp(*_dropin_args(name), "-C", "mps3_board.uart0.out_file=-",
                           "--data", f"{DATA / (name + '_vela.tflite')}@0x90000000", "-C",
                           f"cpu0.semihosting-cmd_line=inference_runner -i {tmp_path / 'in0.npy'} -o {tmp_path / 'out'}",
                           prog="fvp.host.dropin")
    assert rc == 0, out[-3000:] + err[-2000:]
    assert "INFO - Model pointer: 0x90000000" in out and "Inference completed." in out
    _same_outputs(name, tmp_path)
