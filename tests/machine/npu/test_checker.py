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
from fvp.machine.npu.operations import Dma, NpuOperation, iter_operations

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
    from fvp.host import session

    spec = load_board(None, ["firmware.options.log_outputs=false"])
    out = io.StringIO()
    p = session.build(spec, model=Path(path).read_bytes(), model_name="x", args={}, out=out, check_stream=check)
    r = session.run(p)
    return r, [line for line in out.getvalue().splitlines() if "stream check" in line]


@pytest.mark.parametrize("name", ["add_u55-128", "conv1d_u55-128", "mobilenet_v1_025_u55-128", "resnet8_u55-128",
                                  "mv2_full_u55-128", "lstm_u55-128", "softmax_u55-128"])
def test_corpus_runs_clean(name):
    r, findings = _run(CORPUS / f"{name}.bpte")
    assert r.exit_code == 0 and findings == []


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
    from fvp.host import session

    def run(name):
        prog = DATA / "oracle_u85" / name / f"{name}.bpte"
        spec = load_board("corstone-320-ethos-u85-" + name.rsplit("-", 1)[1], ["firmware.options.log_outputs=false"])
        out = io.StringIO()
        p = session.build(spec, model=prog.read_bytes(), model_name="x", args={}, out=out, check_stream="warn")
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
