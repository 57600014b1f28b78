"""The stream checker (issue 15): clean on correct streams, one finding per seeded defect, the gate fixture's
Vela 5.1 defect flagged."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest

from fvp.errors import SimulationStop
from fvp.machine.npu.arch import get_arch
from fvp.machine.npu.checker import StreamChecker
from fvp.machine.npu.descriptors import Dma, NpuOperation
from fvp.machine.npu.operations import iter_operations

from .corpus import load

DATA = Path(__file__).resolve().parents[2] / "data"
CORPUS = DATA / "corpus"
GATE = DATA / "oracle_extra" / "gate_u55-128" / "gate_u55-128.bpte"
ARCH = get_arch("ethos-u55-128")


class Ctx:
    bases = [0x7000_0000, 0x3100_0000] + [0] * 6
    mask = 0xFFFF_FFFF
    arch = ARCH


def _checker(mode="warn"):
    lines = []
    return StreamChecker(ARCH, mode, report=lines.append), lines


def _first(name, kind):
    prog = load(name)
    return next(op for _, op in iter_operations(prog.blobs[0].stream, ARCH) if op.kind == kind)


def _run(path, check="warn"):
    from fvp.boards import load_board
    from fvp.host.run import session

    spec = load_board(None, ["firmware.options.log_outputs=false"])
    out = io.StringIO()
    model = bytes(path) if isinstance(path, (bytes, bytearray)) else Path(path).read_bytes()
    p = session.build(spec, model=model, model_name="x", out=out, check_stream=check)
    r = session.run(p)
    return r, [line for line in out.getvalue().splitlines() if "stream check" in line]


#: programs whose Vela streams hold a defect the checker reports (their own tests below)
DEFECTS = {"gate_u55-128", "gate_u85-256"}
EVERY_PROGRAM = sorted([*CORPUS.glob("*.bpte"), *CORPUS.glob("*.pte"), *DATA.glob("oracle_extra/*/*.bpte"),
                        *DATA.glob("oracle_u85/*/*.bpte"), *DATA.glob("u85/*.bpte")])


# the bundled corpus programs and the oracle fixtures run with the checker in their end-to-end tests (one run checks
# the outputs and the stream: tests/test_corpus_end_to_end.py, tests/test_oracle_extra.py); the rest run here
CHECKED_END_TO_END = sorted([*CORPUS.glob("*.bpte"), *DATA.glob("oracle_extra/*/*.bpte"),
                             *DATA.glob("oracle_u85/*/*.bpte")])


@pytest.mark.parametrize("path", [p for p in EVERY_PROGRAM if p.stem not in DEFECTS and p not in CHECKED_END_TO_END],
                         ids=lambda p: p.stem)
def test_corpus_runs_clean(path):
    """Every corpus program and oracle fixture (U55, U65, U85; every memory mode), each on the configuration
    it was compiled for, runs without a finding of any rule (unwritten-read included): the programs no
    end-to-end test checks, here."""
    from fvp.host.run import session
    from fvp.host.programs.program_board import resolve

    model = path.read_bytes()
    spec = resolve(model, None, None, ["firmware.options.log_outputs=false"]).load()
    out = io.StringIO()
    p = session.build(spec, model=model, model_name="x", out=out, check_stream="warn")
    session.run(p)
    assert [line for line in out.getvalue().splitlines() if "stream check" in line] == []


def test_every_program_is_checked():
    assert len(EVERY_PROGRAM) >= 120 and DEFECTS <= {p.stem for p in EVERY_PROGRAM}
    import test_corpus_end_to_end
    import test_oracle_extra

    # every program is checked once: here, or with --check-stream in its end-to-end run
    assert test_corpus_end_to_end.CHECK == test_oracle_extra.CHECK == ["--check-stream", "warn"]
    end_to_end = set(test_corpus_end_to_end.PROGRAMS) | {test_oracle_extra._fixture_dir(n) / f"{n}.bpte"
                                                          for n in test_oracle_extra.NAMES}
    assert set(CHECKED_END_TO_END) <= end_to_end and test_oracle_extra.NO_CHECK == DEFECTS


def test_gate_fixture_vela_defect_flagged():
    r, findings = _run(GATE)
    assert len(findings) == 2, findings  # the IFM and IFM2 of the last ADD, nothing else
    assert all("rule: unused-tile" in f and "NPU_OP_ELEMENTWISE ADD" in f and "rows 1-2 fall into tile 2" in f
               for f in findings), findings
    r, findings = _run(GATE, "strict")
    assert r.exit_code == 1 and r.reason == "guest_error"


def test_u85_gate_fixture_vela_defect_flagged_as_overlapping_tiles():
    """The U85 compile of the gating model (Vela 5.1 defect, fixed in 5.2): the last ADD's OFM tiles 0 and 1
    share a base, so their elements land on the same bytes; the U85 fixtures without a defect run clean."""
    from fvp.boards import load_board
    from fvp.host.run import session

    def run(name):
        prog = DATA / "oracle_u85" / name / f"{name}.bpte"
        spec = load_board("corstone-320-ethos-u85-" + name.rsplit("-", 1)[1], ["firmware.options.log_outputs=false"])
        out = io.StringIO()
        p = session.build(spec, model=prog.read_bytes(), model_name="x", out=out, check_stream="warn")
        session.run(p)
        return [line for line in out.getvalue().splitlines() if "stream check" in line]

    findings = run("gate_u85-256")
    assert len(findings) == 1 and "rule: tile-overlap" in findings[0] and "tiles 0 and 1" in findings[0], findings
    for name in ("convs_u85-128", "attention_u85-128", "resnet8_u85-128", "upsample_u85-128"):
        assert run(name) == [], name


def test_seeded_tile_overlap():
    op = _first("add_u55-128", "ELEMENTWISE")
    ofm = replace(op.ofm, height=1, width=3, height0=1, height1=1, width0=1, bases=(0x40, 0x40, 0, 0))
    sx = 16 * ofm.bits // 8 if ofm.format == "NHCWB16" else ofm.stride_x
    chk, lines = _checker()
    chk.before(Ctx(), replace(op, ofm=ofm, ifm=replace(op.ifm, width=3, width0=3),
                              ifm2=replace(op.ifm2, width=3, width0=3) if op.ifm2 is not None else None))
    assert [line for line in lines if "rule: tile-overlap" in line], lines
    chk, lines = _checker()  # tile 1 where tile 0 ends: no overlap
    good = replace(ofm, bases=(0x40, 0x40 + sx, 0, 0))
    chk.before(Ctx(), replace(op, ofm=good, ifm=replace(op.ifm, width=3, width0=3),
                              ifm2=replace(op.ifm2, width=3, width0=3) if op.ifm2 is not None else None))
    assert not [line for line in lines if "rule: tile-overlap" in line], lines


def test_seeded_unused_tile():
    op = _first("add_u55-128", "ELEMENTWISE")
    ifm = replace(op.ifm, height=3, height0=1, height1=1, bases=(0x40, 0, 0, 0))
    ofm = replace(op.ofm, height=3, height0=3, height1=3)
    ifm2 = replace(op.ifm2, height=3, height0=3, height1=3) if op.ifm2 is not None else None
    bad = replace(op, ifm=ifm, ofm=ofm, ifm2=ifm2)
    chk, lines = _checker()
    chk.before(Ctx(), bad)
    tiles = [line for line in lines if "rule: unused-tile" in line]
    assert len(tiles) == 1 and "IFM 3x" in tiles[0], lines
    chk, lines = _checker()
    chk.before(Ctx(), replace(bad, ifm=replace(ifm, height0=3, height1=3)))
    assert not [line for line in lines if "rule: unused-tile" in line]


def test_seeded_brick():
    op = _first("add_u55-128", "ELEMENTWISE")
    ifm = replace(op.ifm, format="NHCWB16", depth=32, width=4, width0=4, stride_c=16)
    chk, lines = _checker()
    chk.before(Ctx(), replace(op, ifm=ifm, ofm=replace(op.ofm, depth=32, width=4, width0=4)))
    assert any("rule: brick" in line for line in lines), lines


def test_seeded_register():
    op = _first("conv1d_u55-128", "POOL")
    chk, lines = _checker()
    chk.before(Ctx(), replace(op, ab_start=op.ifm_ib_end - 1))
    assert len(lines) == 1 and "rule: register" in lines[0] and "accumulator area" in lines[0]


def test_seeded_output_overlaps_input():
    op = _first("add_u55-128", "ELEMENTWISE")
    ofm = replace(op.ofm, bases=op.ifm.bases, stride_y=op.ifm.stride_y + 1)
    chk, lines = _checker()
    chk.before(Ctx(), replace(op, ofm=ofm))
    assert any("rule: output-overlaps-input" in line for line in lines), lines


def _dma_into(op, region, address, length):
    return NpuOperation(kind="DMA", offset=0x10, param=0,
                        dma=Dma(0, False, 0, region, False, address, length, 0, 0, 0, 0, 0, 0))


def test_seeded_dma_hazards():
    op = _first("add_u55-128", "ELEMENTWISE")
    dma = _dma_into(op, op.ifm.region, op.ifm.bases[0], 16)
    wait = NpuOperation(kind="DMA_WAIT", offset=0x18, param=0, count=0)
    # a kernel reading what a DMA still writes
    chk, lines = _checker()
    chk.before(Ctx(), dma)
    chk.before(Ctx(), op)
    assert len(lines) == 1 and "rule: dma-hazard" in lines[0] and "no DMA_WAIT" in lines[0]
    chk, lines = _checker()
    for o in (dma, wait, op):
        chk.before(Ctx(), o)
    assert lines == []
    # a DMA overwriting what the running kernel reads
    chk, lines = _checker()
    chk.before(Ctx(), op)
    chk.before(Ctx(), dma)
    assert len(lines) == 1 and "rule: dma-hazard" in lines[0] and "no KERNEL_WAIT" in lines[0]
    chk, lines = _checker()
    for o in (op, NpuOperation(kind="KERNEL_WAIT", offset=0x18, param=0, count=0), dma):
        chk.before(Ctx(), o)
    assert lines == []


def test_strict_stops_at_the_first_error():
    op = _first("conv1d_u55-128", "POOL")
    chk, lines = _checker("strict")
    with pytest.raises(SimulationStop) as e:
        chk.before(Ctx(), replace(op, ab_start=op.ifm_ib_end - 1))
    assert e.value.reason == "guest_error" and "rule: register" in e.value.message


def test_cli_check_stream(capsys):
    from fvp.host.cli import main

    assert main(["run", str(GATE), "--check-stream=strict"]) == 1
    out = capsys.readouterr().out
    assert "[error] stream check: command at" in out and "--check-stream=strict" in out
    assert main(["run", str(CORPUS / "add_u55-128.bpte"), "--check-stream"]) == 0


# ---------------------------------------------------------------------------- unwritten-read (the shadow map)
def _written(*marks):
    from fvp.machine.bus import AddressMap, Ram
    from fvp.machine.written import WrittenMap

    amap = AddressMap()
    amap.add(0x3100_0000, 1 << 20, Ram("SRAM", 1 << 20, frozenset({"cpu", "npu"})), "SRAM", {"cpu", "npu"})
    amap.add(0x7000_0000, 1 << 20, Ram("DDR", 1 << 20, frozenset({"cpu", "npu"})), "DDR", {"cpu", "npu"})
    wm = WrittenMap(amap)
    for lo, n in marks:
        wm.mark(lo, n)
    return wm


def test_written_map_intervals():
    wm = _written((0x3100_0010, 16), (0x3100_0030, 16))
    assert wm.covered(0x3100_0010, 16) and not wm.covered(0x3100_0010, 17) and not wm.covered(0x3100_0000, 1)
    wm.mark(0x3100_0020, 16)  # touching both: one interval
    assert wm.covered(0x3100_0010, 48) and len(next(iter(wm._maps.values()))[0]) == 1
    import numpy as np

    bad = wm.unwritten(0x3100_0000, np.array([0, 0x10, 0x3c, 0x40], dtype=np.int64), 4)
    assert bad.tolist() == [0, 0x40]
    assert wm.covered(0x1234_0000, 8)  # off RAM: not this rule's business


def _ifm_bytes(op):
    """(bus address, size) of each tile's bounding range of the operation's IFMs and its weights/scales."""
    chk, _ = _checker()
    out = []
    for fm in (op.ifm, op.ifm2):
        if fm is not None:
            out += [(lo, hi - lo) for _, lo, hi, _ in chk._fm_ranges(Ctx(), fm, fm.height, fm.width, fm.depth)]
    for r in list(op.weights) + list(op.scales):
        out.append(((Ctx.bases[r.region] + r.address) & Ctx.mask, r.length))
    return out


def test_seeded_unwritten_read():
    op = _first("add_u55-128", "ELEMENTWISE")
    reads = _ifm_bytes(op)
    # everything the ADD reads was written: clean; the OFM is written afterwards
    wm = _written(*reads)
    chk, lines = StreamChecker(ARCH, "warn", report=(lines := []).append, written=wm), lines
    chk.before(Ctx(), op)
    assert lines == []
    chk.after(Ctx(), op)
    o = op.ofm
    assert all(wm.covered(lo, hi - lo) for _, lo, hi, _ in chk._fm_ranges(Ctx(), o, *o.stored_shape))
    # the last byte of the IFM never written: one finding, naming the IFM and the address of its element
    lo, n = reads[0]
    wm = _written(*reads[1:], (lo, n - 1))
    lines = []
    chk = StreamChecker(ARCH, "warn", report=lines.append, written=wm)
    chk.before(Ctx(), op)
    assert len(lines) == 1 and "rule: unwritten-read" in lines[0] and "IFM" in lines[0], lines
    assert "1 of its elements" in lines[0] and f"0x{lo + n - op.ifm.bits // 8:08x}" in lines[0], lines


def test_seeded_unwritten_dma_source():
    op = _dma_into(None, 1, 0x100, 64)
    src = Ctx.bases[op.dma.src_region] + op.dma.src_address
    lines = []
    wm = _written()
    chk = StreamChecker(ARCH, "warn", report=lines.append, written=wm)
    chk.before(Ctx(), op)
    assert len(lines) == 1 and "rule: unwritten-read" in lines[0] and "its source" in lines[0], lines
    chk.after(Ctx(), op)
    assert wm.covered(Ctx.bases[1] + 0x100, 64)  # what the DMA wrote
    lines.clear()
    wm.mark(src, 64)
    chk.before(Ctx(), op)
    assert lines == []


def test_unwritten_read_in_a_run():
    """The whole flow: the runner's copies of the inputs into the scratch and every operation's output are writes,
    so the corpus runs clean (test_corpus_runs_clean); a delegate whose input record is moved away from where its
    stream reads (the runner copies input 0 to scratch offset 112, the ADD reads offset 64) is reported."""
    import struct

    from firmware.executorch.vela_bin import BLOCK_HEADER_SIZE

    data = bytearray((CORPUS / "add_u55-128.bpte").read_bytes())
    at = data.find(b"inputs\0", data.find(b"vela_bin_stream")) + BLOCK_HEADER_SIZE
    assert struct.unpack_from("<i6iiii", data, at)[8] == 64  # count, 6 dims, elem size, offset, region
    struct.pack_into("<i", data, at + 4 + 4 * 7, 112)
    r, findings = _run(data)
    assert len(findings) == 1 and "rule: unwritten-read" in findings[0], findings
    assert "IFM 1x1x1 NHWC in region 1: 1 of its elements" in findings[0] and "0x31000040" in findings[0], findings


def test_seeded_blockdep():
    """MobileNetV1's stream declares BLOCKDEP 1 for the CONV at 0x101c, which reads the OFM of the operation
    before it: the job model allows exactly that (it reproduces Vela's value for 113 of the 144 operations of
    the U55 fixtures whose BLOCKDEP Vela lowered below 3, and allows more, never less, for the rest); 2 is
    reported."""
    prog = load("mobilenet_v1_025_u55-128")
    ops = [op for _, op in iter_operations(prog.blobs[0].stream, ARCH)]
    at = next(i for i, op in enumerate(ops) if op.offset == 0x101C)
    assert ops[at].kind == "CONV" and ops[at].blockdep == 1
    chk, lines = _checker()
    for op in ops:
        chk.before(Ctx(), op)
    assert not [line for line in lines if "rule: blockdep" in line], lines
    chk, lines = _checker()
    for i, op in enumerate(ops):
        chk.before(Ctx(), replace(op, blockdep=2) if i == at else op)
    found = [line for line in lines if "rule: blockdep" in line]
    assert len(found) == 1 and "command at 0x101c NPU_OP_CONV: BLOCKDEP 2 lets its IFM job" in found[0], found


def _dma_internal(arch, address, length, offset=0x10):
    return NpuOperation(kind="DMA", offset=offset, param=0,
                        dma=Dma(0, False, 0, 0, True, address, length, 0, 0, 0, 0, 0, 0))


def test_seeded_shram_bounds():
    """A DMA into the SHRAM past its end (Vela 5.1's U55-32 LUT DMA past the 16 KiB SHRAM): the rule names it,
    and without the checker the run stops with a fault that says the command stream is invalid."""
    u55_32 = get_arch("ethos-u55-32")
    lines = []
    chk = StreamChecker(u55_32, "warn", report=lines.append)
    chk.before(Ctx(), _dma_internal(u55_32, u55_32.lut_start_bytes, 2048))  # the LUT area itself: fine
    assert lines == []
    chk.before(Ctx(), _dma_internal(u55_32, u55_32.lut_start_bytes + 1024, 2048))
    assert len(lines) == 1 and "rule: shram-bounds" in lines[0], lines
    assert "SHRAM bytes 0x3c00-0x43ff, past the end of the 16384-byte SHRAM of ethos-u55-32" in lines[0]
    assert "the command stream is invalid" in lines[0]

    from ethosu.vela.api import NpuAddressRange, NpuDmaOperation

    from .vela_ops import Case, build_stream, run_case

    from fvp.machine.npu.command_stream import iter_commands

    # Vela's API refuses the address (as its compiler should have): a valid LUT DMA, its destination moved on
    case = Case(ops=[NpuDmaOperation(NpuAddressRange(0, 0x40, 2048),
                                     NpuAddressRange((1 << 8) | 3, u55_32.lut_start_bytes, 2048))])
    words = build_stream(case, "ethos-u55-32")
    dst = next(c for c in iter_commands(words, u55_32) if c.name == "NPU_SET_DMA0_DST")
    words[dst.offset // 4 + 1] += 1024
    res, _, _ = run_case(case, "ethos-u55-32", words=words)
    assert not res.ok and res.fault.offset >= 0
    assert str(res.fault).startswith("invalid command stream: internal memory access 0x3c00+2048 runs past the "
                                     "16384-byte SHRAM of ethos-u55-32"), str(res.fault)


def test_seeded_lut_residency():
    """An int16-LSTM-like defect seeded into a real U85 stream (gru_u85-128): its ADD with a LUT (slot 0) writes
    a chaining buffer that the MUL after it reads; a DMA between them that loads another table into slot 0
    overwrites the ADD's table while the chain still runs. The same DMA after the MUL is fine."""
    arch = get_arch("ethos-u85-128")
    prog = DATA / "oracle_u85" / "gru_u85-128" / "gru_u85-128.bpte"
    from .helpers import extract_vela_blobs

    ops = [op for _, op in iter_operations(extract_vela_blobs(prog.read_bytes())[0].stream, arch)]
    i = next(k for k, op in enumerate(ops) if op.is_kernel_op and op.ofm.storage == "CHAINED"
             and op.activation.table is not None)
    add, mul = ops[i], ops[i + 1]
    dma = _dma_internal(arch, 0, 256, offset=add.offset + 4)

    class U85Ctx(Ctx):
        pass

    U85Ctx.arch = arch

    def check(sequence):
        lines = []
        chk = StreamChecker(arch, "warn", report=lines.append)
        for o in sequence:
            chk.before(U85Ctx(), o)
        return [line for line in lines if "lut-" in line or "shram-" in line]

    found = check([add, dma, mul])
    assert len(found) == 1 and "rule: lut-residency" in found[0], found
    assert f"over the table (0x0-0xff, slot 0) of NPU_OP_{add.mnemonic} at 0x{add.offset:04x}" in found[0]
    assert "LUT RAM bytes 0x0-0xff" in found[0] and "the command stream is invalid" in found[0]
    assert check([add, mul, dma]) == []
    assert check([add, _dma_internal(arch, 256, 256), mul]) == []  # another slot
    assert "rule: shram-bounds" in check([_dma_internal(arch, 1024, 2048)])[0]  # past the 2 KiB LUT RAM
