"""hwdesc/ethosu85.py against the facts of Vela's ``ethos_u85_interface.hpp`` and against a real U85 program.

The facts are in tests/data/ethosu85_isa.json, written once from the header by tools/extract_u85_isa.py (Vela 5.1
and 5.2 give the same file); the program is tests/data/u85/add_u85-128.bpte (ExecuTorch + Vela 5.1,
ethos-u85-128, one elementwise ADD).
"""

import json
from pathlib import Path

import pytest

from fvp.machine.npu.command_stream import parse_driver_payload
from hwdesc import ethosu85 as U
from hwdesc.ethosu import PAYLOAD_FLAG, RESERVED_MASK
from machine.npu.helpers import extract_vela_blobs

DATA = Path(__file__).resolve().parents[1] / "data"
ISA = json.loads((DATA / "ethosu85_isa.json").read_text())
PROGRAM = DATA / "u85" / "add_u85-128.bpte"
ALL_REGISTERS = U.MMIO + U.MMIO_DEBUG
TSU = range(0x800, 0xC00)

# where the module departs from the header on purpose (the hwdesc.ethosu conventions, see the module docstring)
ACCESS_REFINED = {"RESET": "WO", **{f"PM{r}SET": "W1S" for r in ("CNTEN", "OVS", "INT")},
                  **{f"PM{r}CLR": "W1C" for r in ("CNTEN", "OVS", "INT")}}
RESET_REFINED = {"ID": None, "CONFIG": None, "STATUS": 0}


# ------------------------------------------------------------------------------------------ commands
def test_every_opcode_is_defined_with_the_headers_number():
    expected = {n: v for n, v in ISA["cmd0_opcode"].items()}
    expected.update({n: PAYLOAD_FLAG | v for n, v in ISA["cmd1_opcode"].items()})
    assert {n: d.code for n, d in U.BY_NAME.items()} == expected
    assert len(U.COMMANDS) == len(expected) == 111
    assert all(U.COMMANDS[d.code] is d for d in U.BY_NAME.values())
    assert U.CODE.NPU_SET_WEIGHT_FORMAT == 0x12E and U.CODE.NPU_SET_IFM2_SCALE == 0x4026
    assert (U.NPU_OP_RESIZE, U.NPU_OP_BRANCH, U.NPU_OP_STOP) == (0x007, 0x4100, 0x000)
    with pytest.raises(AttributeError):
        U.CODE.NPU_SET_PARALLEL_MODE  # U65 only


def test_every_register_command_writes_the_headers_tsu_register():
    regs = {n: d.reg for n, d in U.BY_NAME.items() if d.kind == "reg"}
    assert regs == ISA["command_registers"]
    assert all(d.reg is None and n.startswith("NPU_OP_") for n, d in U.BY_NAME.items() if d.kind == "op")


def _layout(cdef):
    """(name, lo, width, enum) of a command's fields over the whole command, as the header's structs give them."""
    param = cdef.param_fields if cdef.has_payload else cdef.fields
    payload = cdef.fields if cdef.has_payload else ()
    return sorted([(f.name, 16 + f.lo, f.width, f.enum) for f in param]
                  + [(f.name, 32 + f.lo, f.width, f.enum) for f in payload], key=lambda t: t[1])


@pytest.mark.parametrize("name", sorted(ISA["commands"]))
def test_command_fields_are_the_headers(name):
    ours = _layout(U.BY_NAME[name])
    assert [t[:3] for t in ours] == [tuple(f[:3]) for f in ISA["commands"][name]]
    for (fname, _, _, enum), header in zip(ours, ISA["commands"][name]):
        expected = None if header[3] is None else getattr(U, header[3].upper())
        assert enum is expected, (name, fname)


@pytest.mark.parametrize("cdef", list(U.COMMANDS.values()), ids=lambda d: d.name)
def test_fields_fit_and_do_not_overlap(cdef):
    areas = [(cdef.param_fields, 16), (cdef.fields, 32)] if cdef.has_payload else [(cdef.fields, 16)]
    for fields, bits in areas:
        used = 0
        for f in fields:
            assert f.width > 0 and f.lo + f.width <= bits, (cdef.name, f.name)
            assert not used & f.mask, (cdef.name, f.name)
            used |= f.mask
    assert cdef.address == any(f.name == "addr_hi" for f in cdef.param_fields)
    assert not cdef.signed_address or cdef.address


def test_address_and_stride_commands():
    strides = {n for n, d in U.BY_NAME.items() if d.signed_address}
    assert strides == {f"NPU_SET_{fm}_STRIDE_{a}" for fm in ("IFM", "OFM", "IFM2") for a in "XYC"} | {
        "NPU_SET_DMA0_SRC_STRIDE0", "NPU_SET_DMA0_SRC_STRIDE1", "NPU_SET_DMA0_DST_STRIDE0",
        "NPU_SET_DMA0_DST_STRIDE1", "NPU_SET_DMA0_IDX_SKIP1"}
    assert U.BY_NAME["NPU_SET_DMA0_LEN"].address and not U.BY_NAME["NPU_SET_WEIGHT_LENGTH"].address
    base = U.BY_NAME["NPU_SET_OFM_BASE0"]
    assert base.param_fields[0].get(0x12) << 32 | base.fields[0].get(0x3456_7890) == 0x12_3456_7890


# ------------------------------------------------------------------------------------------ codes
@pytest.mark.parametrize("enum", sorted(ISA["enums"]))
def test_codes_are_the_headers_enums(enum):
    assert dict(getattr(U, enum.upper())) == {v: n for n, v in ISA["enums"][enum].items()}


def test_pmu_events():
    assert U.PMU_EVENT.NPU_ACTIVE == 0x23 and U.PMU_EVENT.EXT_WR_STALL_LIMIT == 399
    assert U.PMU_EVENT[0x80 + 2] == "SRAM_RD_DATA_BEAT_RECEIVED"
    assert U.PMU_EVENT[0x180 + 2] == "EXT_RD_DATA_BEAT_RECEIVED"


# ------------------------------------------------------------------------------------------ MMIO registers
def test_every_header_register_offset_is_present():
    cmd1_regs = {d.reg for d in U.COMMANDS.values() if d.has_payload and d.reg is not None}
    tsu = {d.reg for d in U.COMMANDS.values() if d.reg is not None}
    for name, offset in ISA["register_defines"].items():
        if offset in TSU:
            assert offset in tsu or (name.endswith("_HI") and offset - 4 in cmd1_regs), name
        else:
            assert ALL_REGISTERS[name].offset == offset, name
    for name, r in ISA["registers"].items():
        ours = ALL_REGISTERS[name]
        assert (ours.offset, ours.count) == (r["offset"], r["count"]), name
        assert ours.count == 1 or ours.stride == 4 * r["words"], name


def test_no_register_the_header_lacks():
    pairs = {f"{n}_HI" for n, r in ISA["registers"].items() if r["words"] == 2}
    for r in ALL_REGISTERS:
        assert r.name in ISA["registers"] or r.name in pairs, r.name
        assert r.offset not in TSU
    assert not set(U.MMIO.by_name) & set(U.MMIO_DEBUG.by_name)


def _norm(fields):
    """A register's fields as comparable tuples: lower-case names, the PMU set/clear suffixes dropped, a field
    that is the whole word left out (the module gives such a register no fields)."""
    out = []
    for name, lo, width in fields:
        name = name.lower().removesuffix("_ovf").removesuffix("_int")
        if (lo, width) != (0, 32):
            out.append((name, lo, width))
    return out


@pytest.mark.parametrize("name", sorted(ISA["registers"]))
def test_register_fields_access_and_reset(name):
    r = ISA["registers"][name]
    words = [(name, 0)] + ([(f"{name}_HI", 32)] if r["words"] == 2 else [])
    for reg_name, base in words:
        ours = ALL_REGISTERS[reg_name]
        header = [(f, lo - base, w) for f, lo, w in r["fields"] if base <= lo < base + 32]
        assert _norm((f.name, f.lo, f.width) for f in ours.fields) == _norm(header), reg_name
        assert ours.access == ACCESS_REFINED.get(reg_name, r["access"]), reg_name
        expected = RESET_REFINED[name] if name in RESET_REFINED else (r["reset"] >> base) & 0xFFFF_FFFF
        assert ours.reset == expected, reg_name


def test_pmu_counters():
    pmcr = U.MMIO.PMCR
    assert pmcr.get(pmcr.reset, "num_event_cnt") == U.PMU_COUNTERS == U.MMIO.PMEVCNTR.count == 8
    assert U.MMIO.PMCNTENSET.mask() == 0x8000_00FF
    assert U.MMIO.PMCNTENCLR.alias == "PMCNTENSET"
    assert U.MMIO.at(0x1300 + 4 * 7) == (U.MMIO.PMEVCNTR, 7)


# ------------------------------------------------------------------------------------------ CONFIG and ID
def test_accelerator_configs_and_config_words():
    assert {str(m): c._asdict() for m, c in U.ACCELERATOR_CONFIGS.items()} == ISA["accelerator_configs"]
    assert sorted(int(v.rsplit("-", 1)[1]) for v in U.NPU_VARIANTS_U85) == sorted(U.ACCELERATOR_CONFIGS)
    cfg = U.MMIO.CONFIG
    for macs, c in U.ACCELERATOR_CONFIGS.items():
        w = U.config_word(macs)
        assert 1 << cfg.get(w, "macs_per_cc") == macs and 1 << cfg.get(w, "num_wd") == c.cores
        assert (cfg.get(w, "num_axi_sram"), cfg.get(w, "num_axi_ext")) == (c.num_axi_sram_log2, c.num_axi_ext_log2)
        assert (cfg.get(w, "product"), cfg.get(w, "cmd_stream_version")) == (2, 1)
    assert U.config_word(2048) == 0x2000_261B  # 11 | 1 << 4 | 2 << 8 | 1 << 10 | 2 << 12 | 2 << 28
    with pytest.raises(ValueError):
        U.config_word(64)


def test_id_word_is_the_headers_id_reset():
    assert U.id_word() == ISA["registers"]["ID"]["reset"] == 0x2000_7000


# ------------------------------------------------------------------------------------------ a real program
def _program():
    (blob,) = extract_vela_blobs(PROGRAM.read_bytes())
    return parse_driver_payload(blob.cmd_data)


def test_config_and_id_words_are_the_programs():
    payload = _program()
    assert U.config_word(128) == payload.config_word
    assert U.id_word() == payload.id_word


def test_every_command_of_the_real_stream_is_defined_with_no_reserved_bit_set():
    words = [int(w) for w in _program().stream]
    i, seen = 0, {}
    while i < len(words):
        w = words[i]
        assert w & RESERVED_MASK == 0, f"word {i}: 0x{w:08x}"
        cdef = U.COMMANDS.get(w & 0xFFFF)
        assert cdef is not None, f"word {i}: 0x{w:08x} is no U85 command"
        param = w >> 16
        param_fields = cdef.param_fields if cdef.has_payload else cdef.fields
        assert param & ~sum(f.mask for f in param_fields) == 0, f"{cdef.name}: reserved param bits in 0x{param:04x}"
        if cdef.has_payload:
            payload = words[i + 1]
            assert payload & ~sum(f.mask for f in cdef.fields) == 0, f"{cdef.name}: reserved payload bits"
            seen[cdef.name] = (param, payload)
        else:
            seen[cdef.name] = (param, None)
        i += cdef.length
    assert i == len(words) and words[-1] & 0xFFFF == U.NPU_OP_STOP
    mode = U.BY_NAME["NPU_OP_ELEMENTWISE"].fields[0]
    assert mode.text(seen["NPU_OP_ELEMENTWISE"][0]) == "ADD"
    ofm_round = U.BY_NAME["NPU_SET_OFM_SCALE"].param_fields[2]
    assert ofm_round.text(seen["NPU_SET_OFM_SCALE"][0]) == "NATURAL"
    precision = U.BY_NAME["NPU_SET_IFM_PRECISION"].fields
    assert [f.text(seen["NPU_SET_IFM_PRECISION"][0]) for f in precision] == ["SIGNED", "B8", "NHWC", "TILE2X2"]
