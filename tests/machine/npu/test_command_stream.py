"""Command-stream decoding, register state, operation descriptors, variants and feature-map addressing."""

import os

import numpy as np
import pytest
from ethosu.vela.api import NpuAccelerator, npu_create_driver_payload

from fvp.errors import NpuFault
from fvp.machine.npu import featuremap as fmap
from fvp.machine.npu.arch import ARCHS, arch_from_config_word, get_arch
from fvp.machine.npu.command_stream import RegisterState, decode_commands, parse_driver_payload
from fvp.machine.npu.descriptors import FeatureMap
from fvp.machine.npu.operations import build_operation, iter_operations
from hwdesc import ethosu as R

from .helpers import extract_vela_blobs

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "data", "corpus")
U55 = get_arch("ethos-u55-128")
U65 = get_arch("ethos-u65-256")


@pytest.fixture(scope="module")
def add_q():
    return extract_vela_blobs(open(os.path.join(DATA, "add_q.pte"), "rb").read())[0]


def w0(code, param=0):
    return (param << 16) | code


# ------------------------------------------------------------------------------------------------ tables


def test_register_table_is_consistent():
    assert R.CODE.NPU_SET_IFM_BASE0 == 0x4000
    assert R.CODE.NPU_OP_ELEMENTWISE == 0x006
    assert R.BY_NAME["NPU_SET_OFM_PRECISION"].reg == 0x850
    regs = [d.reg for d in R.COMMANDS.values() if d.reg is not None]
    assert len(regs) == len(set(regs))  # TSU offsets are unique
    for d in R.COMMANDS.values():
        assert not d.code & R.RESERVED_MASK
        assert d.has_payload == (d.code >= 0x4000)


@pytest.mark.parametrize("name,acc", [("ethos-u55-32", NpuAccelerator.Ethos_U55_32),
                                      ("ethos-u55-64", NpuAccelerator.Ethos_U55_64),
                                      ("ethos-u55-128", NpuAccelerator.Ethos_U55_128),
                                      ("ethos-u55-256", NpuAccelerator.Ethos_U55_256),
                                      ("ethos-u65-256", NpuAccelerator.Ethos_U65_256),
                                      ("ethos-u65-512", NpuAccelerator.Ethos_U65_512)])
def test_config_and_id_words_match_vela_driver_payload(name, acc):
    p = parse_driver_payload(npu_create_driver_payload([0xFFFF0000], acc))
    a = get_arch(name)
    assert p.config_word == a.config_word
    # arch revision fields (bits [31:16]); the low half differs between Vela's Python core (0x0000) and
    # Regor (0x6001, what the corpus carries and what ``id_word`` holds)
    assert p.id_word >> 16 == a.id_word >> 16
    assert arch_from_config_word(a.config_word) is a
    assert list(p.stream) == [0xFFFF0000]


def test_arch_facts():
    assert get_arch("Ethos_U55_128").config_word == 0x00001807
    assert get_arch("ethos-u65-512").cores == 2 and get_arch("ethos-u65-512").address_bits == 40
    assert get_arch("ethos-u55-128").lut_start_bytes == 0x5800
    assert {a.axi_width_bytes for a in ARCHS.values() if a.name.startswith("ethos-u55")} == {8}
    with pytest.raises(Exception):
        get_arch("ethos-u95-256")
    u85 = get_arch("ethos-u85-2048")
    assert u85.family.name == "ethos-u85" and u85.total_macs == 2048 and u85.address_bits == 40
    assert u85.microarch.axi_sram_ports_log2 == 2


def test_each_configuration_names_its_product_family():
    """Every configuration is built by its family and names it; the families are the variant table's."""
    from fvp.machine.npu.arch import FAMILIES

    assert [a for f in FAMILIES for a in f.variants] == list(ARCHS.values())
    for a in ARCHS.values():
        assert a in a.family.variants
        assert a.family.name == ("ethos-u85" if a.name.startswith("ethos-u85") else "ethos-u55")
        assert a.family.isa.COMMANDS  # the ISA table the decoder and the disassembler read


# ------------------------------------------------------------------------------------------------ add_q.pte


def test_add_q_cop1_header_and_stream(add_q):
    p = parse_driver_payload(add_q.cmd_data)
    assert p.config_word == 0x00001807 and p.id_word == 0x10066001
    assert len(p.stream) == 166 and p.stream_offset == 32
    cmds = decode_commands(p.stream, U55)
    assert cmds[0].name == "NPU_SET_OPA_SCALE" and cmds[0].payload == 1 and cmds[0].length == 2
    assert cmds[-1].name == "NPU_OP_STOP" and cmds[-1].param == 0xFFFF and cmds[-1].offset == 0x294
    assert sum(c.length for c in cmds) == 166
    ops = [c for c in cmds if c.is_operation]
    assert [(c.offset, c.name, c.param) for c in ops] == [
        (0x108, "NPU_OP_ELEMENTWISE", 1), (0x194, "NPU_OP_ELEMENTWISE", 0), (0x1E4, "NPU_OP_ELEMENTWISE", 1),
        (0x22C, "NPU_OP_ELEMENTWISE", 0), (0x290, "NPU_OP_ELEMENTWISE", 1), (0x294, "NPU_OP_STOP", 0xFFFF)]


def test_add_q_operations_keep_register_state(add_q):
    ops = [op for _, op in iter_operations(add_q.stream, U55)]
    assert [op.mnemonic for op in ops] == ["ELEMENTWISE ADD", "ELEMENTWISE MUL", "ELEMENTWISE ADD",
                                           "ELEMENTWISE MUL", "ELEMENTWISE ADD", "STOP"]
    op1, op2, _, _, op5, _ = ops
    assert op1.ifm.dtype == "int8" and op1.ifm.zero_point == -128 and op1.ifm.bases[0] == 0x50
    assert op1.broadcast.scalar and op1.broadcast.scalar_value == 0 and op1.ifm2 is None
    assert op1.ofm.dtype == "int32" and op1.ofm.format == "NHCWB16" and op1.ofm.stride_y == 0x40
    assert op2.ifm2.region == 0 and op2.ifm2.bases[0] == 0x10 and op2.ofm_scale.shift == 11
    assert op2.ofm_round_mode == R.ROUND_NATURAL
    # op 5 relies on registers written only by op 1 (Regor drops repeated writes)
    assert op5.opa_scale.multiplier == 1 and op5.opb_scale == 1 and op5.ifm_scale_mode == 0
    assert op5.ifm.bases[0] == 0x50 and op5.ifm.dtype == "int32" and op5.ifm2.bases[0] == 0
    assert op5.ofm.dtype == "int8" and op5.ofm.zero_point == -128 and op5.ofm.bases[0] == 0x40
    assert (op5.ofm_scale.multiplier, op5.ofm_scale.shift) == (1, 20)
    assert (op5.activation.min, op5.activation.max) == (-128, 127)
    assert op5.blockdep == 0 and ops[2].blockdep == 3


# ------------------------------------------------------------------------------------------------ faults


@pytest.mark.parametrize("words,offset,text", [
    ([w0(0x007)], 0, "unknown CMD0 opcode"),  # no such operation
    ([w0(0x105), w0(0x1FF)], 4, "unknown CMD0 opcode"),
    ([0x4077, 0], 0, "unknown CMD1 opcode"),
    ([w0(0x105) | 0x0400], 0, "reserved bits"),
    ([w0(0x8105)], 0, "control field"),
    ([w0(0x105), 0x4000], 4, "missing its 32-bit payload"),  # truncated CMD1
    ([w0(0x123, 1)], 0, "not valid on ethos-u55-128"),  # PARALLEL_MODE is U65-only
    ([0x4090, 0x100], 0, "not valid on ethos-u55-128"),  # WEIGHT1_BASE
])
def test_decode_faults(words, offset, text):
    with pytest.raises(NpuFault) as e:
        decode_commands(np.array(words, np.uint32), U55)
    assert e.value.kind == "cmd_parse_error"
    assert e.value.offset == offset
    assert text in str(e.value)


def test_u65_only_commands_accepted_on_u65():
    cmds = decode_commands(np.array([w0(0x123, 1), 0x4090, 0x100, 0x4033, 4, w0(0, 0xFFFF)], np.uint32), U65)
    assert [c.name for c in cmds] == ["NPU_SET_PARALLEL_MODE", "NPU_SET_WEIGHT1_BASE", "NPU_SET_DMA0_SKIP0",
                                      "NPU_OP_STOP"]


def test_cop1_parser_rejects_garbage():
    with pytest.raises(ValueError):
        parse_driver_payload(b"\0" * 16)


# ------------------------------------------------------------------------------------------------ descriptors


def _state(arch, cmds):
    st = RegisterState(arch)
    words = []
    for c in cmds:
        words.extend(c)
    for c in decode_commands(np.array(words, np.uint32), arch):
        st.apply(c)
    return st


def _op(arch, cmds, op_word):
    st = _state(arch, cmds)
    cmd = decode_commands(np.array([op_word], np.uint32), arch)[0]
    return build_operation(st, cmd, arch)


def test_addresses_and_signed_strides_u55_vs_u65():
    regs = [(0x4000 | (0x12 << 16), 0x3456_7890),  # IFM_BASE0, param 0x12 = address bits [39:32] on U65
            (0x4005 | (0xFFFF << 16), 0xFFFF_FFF0),  # IFM_STRIDE_Y = -16 (Vela writes param 0xFFFF on U55)
            (0x4004, 0xFFFF_FFFF),  # IFM_STRIDE_X: -1 on U55, +2**32 - 1 on U65 (bit 39 clear)
            (w0(0x111, 3),), (w0(0x112, 1),), (w0(0x113, 7),), (w0(0x105, 1),), (w0(0x114, 1),)]
    op55 = _op(U55, regs, w0(0x006, 6))
    assert op55.ifm.bases[0] == 0x3456_7890 and op55.ifm.stride_y == -16 and op55.ifm.stride_x == -1
    op65 = _op(U65, regs, w0(0x006, 6))
    assert op65.ifm.bases[0] == 0x12_3456_7890 and op65.ifm.stride_y == -16 and op65.ifm.stride_x == 0xFFFF_FFFF
    assert op55.sub_op == "ABS" and op55.ifm2 is None and op55.ofm.shape == (2, 4, 8)


@pytest.mark.parametrize("sx,sy", [(1, 1), (2, 1), (3, 4), (4, 2)])
def test_kernel_stride_dilation_encoding(sx, sy):
    ks = ((sx - 1) & 1) | (((sy - 1) & 1) << 1) | (((sx - 1) >> 1) << 6) | (((sy - 1) >> 1) << 9)
    ks |= (1 << 3) | (1 << 2)  # dilation x = 2, part-kernel-first
    regs = [(w0(0x122, ks),), (w0(0x120, 4),), (w0(0x121, 2),), (w0(0x111, 3),), (w0(0x112, 2),),
            (w0(0x100, 1),), (w0(0x103, 2),), (w0(0x104, 15),)]
    op = _op(U55, regs, w0(0x002))
    k = op.kernel
    assert (k.stride_x, k.stride_y, k.dilation_x, k.dilation_y) == (sx, sy, 2, 1)
    assert (k.width, k.height, k.dilated_width, k.dilated_height) == (3, 3, 5, 3)
    assert k.part_kernel_first and (k.pad_top, k.pad_bottom) == (1, 2)
    # implied IFM extent: (OFM - 1) * stride + dilated kernel - pads
    assert op.ifm.height == (3 - 1) * sy + 3 - 1 - 2
    assert op.ifm.width == (4 - 1) * sx + 5
    assert op.ifm.depth == 16 and op.weights[0].region == 0


def test_dma_descriptor_internal_destination():
    regs = [(w0(0x130, 0),), (0x4030, 0x40), (w0(0x131, 0x103),), (0x4031, 0x5800), (0x4032, 256)]
    op = _op(U55, regs, w0(0x010))
    d = op.dma
    assert op.kind == "DMA" and d.src_region == 0 and not d.src_internal and d.dst_internal
    assert (d.src_address, d.dst_address, d.length, d.total_bytes) == (0x40, 0x5800, 256, 256)


# ------------------------------------------------------------------------------------------------ feature maps


def _random_fm(rng, bits, fmt):
    h, w, c = (int(v) for v in rng.integers(1, 9, 3))
    c = int(rng.integers(1, 40))
    e = bits // 8
    h0 = int(rng.integers(1, h + 1))
    h1 = int(rng.integers(1, h + 1))
    w0_ = int(rng.integers(1, w + 1))
    if fmt == "NHCWB16":
        cs = 16 * w * e
        sy = w * (-(-c // 16) * 16) * e * int(rng.choice([1, -1]))
        sx = 16 * e
    else:
        sx = c * e * int(rng.choice([1, 1, -1]))
        sy = w * abs(sx) * int(rng.choice([1, -1]))
        cs = e
    span = (h + 1) * abs(sy) + (w + 1) * abs(sx) + (c // 16 + 1) * abs(cs) + 16 * e
    span = -(-span // 16) * 16
    bases = tuple(span + 2 * t * span for t in range(4))  # tiles far apart: no overlaps
    return FeatureMap("t", 1, bases, h, w, c, h0, h1, w0_, sx, sy, cs, bits, True, fmt, 0)


@pytest.mark.parametrize("seed", range(30))
def test_gather_scatter_follow_tile_and_brick_addressing(seed):
    rng = np.random.default_rng(seed)
    fm = _random_fm(rng, int(rng.choice([8, 16, 32])), str(rng.choice(["NHWC", "NHCWB16"])))
    lo, hi = fmap.extent(fm)
    mem = np.zeros(hi - lo, np.uint8)
    e = fm.bits // 8
    vals = rng.integers(-(1 << (fm.bits - 1)), 1 << (fm.bits - 1), size=fm.shape)
    fmap.scatter(fm, mem, lo, vals)
    seen = set()
    for (y, x, c), v in np.ndenumerate(vals):
        a = fmap.element_address(fm, y, x, c) - lo  # the section 1.5 formula
        assert 0 <= a and a + e <= len(mem) and a not in seen
        seen.add(a)
        assert int.from_bytes(mem[a:a + e].tobytes(), "little", signed=True) == v
    assert np.array_equal(fmap.gather(fm, mem, lo), vals)
    # the extent is tight: some element touches each end
    assert min(seen) == 0 and max(seen) + e == len(mem)


def test_nhcwb16_addresses_example():
    # int8 16x16x20 NHCWB16: STRIDE_Y = W * 32, STRIDE_C = 16 * W
    fm = FeatureMap("t", 1, (0x1000, 0, 0, 0), 16, 16, 20, 16, 16, 16, 16, 16 * 32, 16 * 16, 8, True, "NHCWB16", 0)
    assert fmap.element_address(fm, 0, 0, 0) == 0x1000
    assert fmap.element_address(fm, 0, 1, 0) == 0x1010
    assert fmap.element_address(fm, 0, 0, 17) == 0x1000 + 256 + 1
    assert fmap.element_address(fm, 1, 2, 3) == 0x1000 + 512 + 32 + 3
    assert fmap.extent(fm) == (0x1000, 0x1000 + 15 * 512 + 256 + 15 * 16 + 4)
    # NHWC ignores STRIDE_C; tile 2 below HEIGHT0, tile 1 right of WIDTH0, tile 3 below HEIGHT1 on the right
    t = FeatureMap("t", 1, (0, 1000, 2000, 3000), 4, 4, 2, 2, 3, 3, 2, 100, 999, 8, True, "NHWC", 0)
    assert fmap.element_address(t, 1, 2, 1) == 100 + 4 + 1
    assert fmap.element_address(t, 3, 0, 0) == 2000 + 100
    assert fmap.element_address(t, 0, 3, 1) == 1000 + 1
    assert fmap.element_address(t, 3, 3, 0) == 3000
