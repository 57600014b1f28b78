"""Ethos-U55/U65 hardware interface: MMIO registers, PMU registers and event numbers, the command-stream ISA.

Sources (facts only): the Arm Ethos-U core driver's ``ethosu55_interface.h``/``ethosu65_interface.h``
(arch 1.1.0) and the research notes ethosu.md sections 1.2/1.3 (commands, TSU registers) and 6 (PMU).
Names follow the hardware header (``STATUS.cmd_parse_error``, ``NPU_OP_CONV``, ``NPU_SET_IFM_BASE0`` ...).

* :data:`MMIO` -- the register file the CPU sees: :data:`MMIO_BASE` (ID .. BASEP7_HI) and :data:`MMIO_PMU`
  (PMCR .. PMEVTYPER3). Reset values are the ones the model has after a reset (the soft reset completes at
  once, so STATUS.reset_status reads 0); ID and CONFIG depend on the variant (``reset=None``).
  :func:`register_pair` (a 64-bit register as ``X`` and ``X_HI``), :func:`pmu_control_registers` and
  :func:`pmu_event_counter_registers` (the PMU block at a base, for a number of counters) build them, and
  :mod:`hwdesc.ethosu85`'s too.
* :data:`PMU_EVENT` -- PMU event numbers (``PMU_EVENT.NPU_ACTIVE == 0x23``).
* :data:`NPU_VARIANTS` -- the configuration names; :data:`COP1_FOURCC`, :data:`DRIVER_ACTION` -- Vela's driver
  payload around a command stream.
* The command stream: a command word is ``[9:0] opcode, [13:10] reserved (0), [15:14] control (0 = CMD0,
  1 = CMD1), [31:16] param``. The low half-word (``control << 14 | opcode``) is called the command *code*
  here: it identifies a command uniquely (CMD0 ``0x0105`` = NPU_SET_IFM_PRECISION, CMD1 ``0x4000`` =
  NPU_SET_IFM_BASE0), as Vela's ``cmd1`` enum values plus ``CmdMode.Payload32`` do. :data:`COMMANDS` maps
  codes, :data:`BY_NAME` names to :class:`CommandDef`; ``CODE.NPU_SET_IFM_BASE0`` is a code.
  :func:`tile_commands` gives the feature maps' zero-point, tile and region commands both ISAs have.
  A decoder keeps register values raw: a CMD0 register holds its 16-bit param, a CMD1 register
  ``payload | param << 32`` so that U65 address bits [39:32] (param[7:0]) and the OFM/OPA shift (param[5:0])
  are kept.
* Codes of the fields: activation function (:data:`ACTIVATION_FUNCTION`, with :data:`ACTIVATION_BUILTIN`),
  rounding (:data:`ROUND_MODE`), data types (:data:`SIGNEDNESS`, :data:`PRECISION`, :data:`DATA_FORMAT`) ...
"""

from __future__ import annotations

from dataclasses import dataclass

from .regs import Codes, Field, Register, RegisterMap, bit

# ================================================================================ MMIO registers (CPU side)
_COUNTERS = 4  # PMU event counters (PMCR.num_event_cnt)
_OFFSET_HI = (Field("offset_hi", 0, 8),)


def register_pair(name, offset, access, lo_fields=(), hi_fields=_OFFSET_HI, *, doc="bits [31:0]",
                  hi_doc="bits [39:32]", count=1, stride=4):
    """A 64-bit register as its two words: ``name`` (bits [31:0]) at ``offset`` and ``name_HI`` at ``offset + 4``
    (by default the high word holds address bits [39:32]); with ``count``, an array of such pairs ``stride``
    bytes apart (BASEPn/BASEPn_HI)."""
    return (Register(name, offset, access, 0, lo_fields, count=count, stride=stride, doc=doc),
            Register(f"{name}_HI", offset + 4, access, 0, hi_fields, count=count, stride=stride, doc=hi_doc))


def pmu_control_registers(base: int, counters: int):
    """The PMU block's first registers, PMCR .. PMCCNTR_HI, at ``base`` for ``counters`` event counters (the
    Ethos-U85's block is this one at 0x1180 with 8 counters): PMCR; the count-enable, overflow and interrupt
    set/clear pairs, whose bits are EVENT_CNT_n and CYCLE_CNT; the 48-bit cycle counter."""
    bits = tuple(bit(f"EVENT_CNT_{i}", i) for i in range(counters)) + (bit("CYCLE_CNT", 31),)
    return (
        Register("PMCR", base, "RW", counters << 11, (
            bit("cnt_en", 0), bit("event_cnt_rst", 1), bit("cycle_cnt_rst", 2), bit("mask_en", 3),
            Field("num_event_cnt", 11, 5))),
        *(r for i, group in enumerate(("PMCNTEN", "PMOVS", "PMINT")) for r in (
            Register(f"{group}SET", base + 4 + 8 * i, "W1S", 0, bits),
            Register(f"{group}CLR", base + 8 + 8 * i, "W1C", 0, bits, alias=f"{group}SET"))),
        *register_pair("PMCCNTR", base + 0x20, "RW", hi_fields=(Field("cycle_cnt_hi", 0, 16),),
                       doc="cycle counter, bits [31:0]", hi_doc="cycle counter, bits [47:32]"),
    )


def pmu_event_counter_registers(base: int, counters: int, evtype_fields):
    """PMEVCNTRn and PMEVTYPERn (whose fields ``evtype_fields`` are) of the PMU block at ``base``."""
    return (Register("PMEVCNTR", base + 0x180, "RW", 0, count=counters),
            Register("PMEVTYPER", base + 0x200, "RW", 0, evtype_fields, count=counters))


MMIO_BASE = RegisterMap("ethosu", (
    Register("ID", 0x000, "RO", None, (
        Field("version_status", 0, 4), Field("version_minor", 4, 4), Field("version_major", 8, 4),
        Field("product_major", 12, 4), Field("arch_patch_rev", 16, 4), Field("arch_minor_rev", 20, 8),
        Field("arch_major_rev", 28, 4))),
    Register("STATUS", 0x004, "RO", 0, (
        bit("state", 0), bit("irq_raised", 1), bit("bus_status", 2), bit("reset_status", 3),
        bit("cmd_parse_error", 4), bit("cmd_end_reached", 5), bit("pmu_irq_raised", 6), bit("wd_fault", 7),
        bit("ecc_fault", 8), bit("faulting_interface", 11), Field("faulting_channel", 12, 4),
        Field("irq_history_mask", 16, 16))),
    Register("CMD", 0x008, "RW", 0x0000000C, (
        bit("transition_to_running_state", 0), bit("clear_irq", 1), bit("clock_q_enable", 2),
        bit("power_q_enable", 3), bit("stop_request", 4), Field("clear_irq_history", 16, 16))),
    Register("RESET", 0x00C, "WO", 0, (bit("pending_CPL", 0), bit("pending_CSL", 1))),
    *register_pair("QBASE", 0x010, "RW", doc="command stream base, bits [31:0]",
                   hi_doc="bits [39:32] (40-bit U65 only)"),
    Register("QREAD", 0x018, "RO", 0, doc="bytes of the command stream consumed"),
    Register("QCONFIG", 0x01C, "RW", 0, (Field("cmd_region0", 0, 2),)),
    Register("QSIZE", 0x020, "RW", 0, doc="command stream size in bytes"),
    Register("PROT", 0x024, "RO", 0, (bit("active_CPL", 0), bit("active_CSL", 1))),
    Register("CONFIG", 0x028, "RO", None, (
        Field("macs_per_cc", 0, 4), Field("cmd_stream_version", 4, 4), Field("shram_size", 8, 8),
        bit("functional_safety", 26), bit("custom_dma", 27), Field("product", 28, 4))),
    Register("LOCK", 0x02C, "RW", 0),
    Register("REGIONCFG", 0x03C, "RW", 0, tuple(Field(f"region{i}", 2 * i, 2) for i in range(8))),
    Register("AXI_LIMIT", 0x040, "RW", 0, (
        Field("max_beats", 0, 2), Field("memtype", 4, 4), Field("max_outstanding_read_m1", 16, 6),
        Field("max_outstanding_write_m1", 24, 5)), count=4),
    *register_pair("BASEP", 0x080, "RW", count=8, stride=8, doc="region base pointers, bits [31:0]",
                   hi_doc="bits [39:32] (40-bit U65 only)"),
))



def regioncfg_axi_port(memtype: int) -> int:
    """The AXI port a region's REGIONCFG memory type (0..3) sends its traffic through: types 0 and 1 use the
    AXI_LIMIT0/1 settings of AXI0, types 2 and 3 the AXI_LIMIT2/3 settings of AXI1."""
    return (memtype >> 1) & 1


# the command-stream regions Vela's memory modes place (const/arena/cache, Vela's BasePointerIndex)
REGION_WEIGHTS, REGION_SCRATCH, REGION_SCRATCH_FAST = 0, 1, 2

MMIO_PMU = RegisterMap("ethosu.pmu", (
    *pmu_control_registers(0x180, _COUNTERS),
    Register("PMCCNTR_CFG", 0x1A8, "RW", 0, (Field("cycle_cnt_cfg_start", 0, 10), Field("cycle_cnt_cfg_stop", 16, 10))),
    Register("PMCAXI_CHAN", 0x1AC, "RW", 0, (Field("ch_sel", 0, 4), Field("axi_cnt_sel", 8, 2), bit("bw_ch_sel_en", 10))),
    *pmu_event_counter_registers(0x180, _COUNTERS, (Field("ev_type", 0, 10),)),
))

MMIO = MMIO_BASE + MMIO_PMU

# ================================================================================ variants
#: the Ethos-U configurations (product and MACs per cycle) a board may name; fvp/machine/npu/arch.py holds
#: each one's microarchitecture (the Ethos-U85's interface is hwdesc/ethosu85.py)
NPU_VARIANTS = ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256", "ethos-u65-256", "ethos-u65-512",
                "ethos-u85-128", "ethos-u85-256", "ethos-u85-512", "ethos-u85-1024", "ethos-u85-2048")

# ================================================================================ Vela's driver payload
#: a custom operator's payload (Vela's ``COP1``): the FOURCC word, then driver actions. An action word is
#: ``[7:0]`` the action, and for COMMAND_STREAM the stream's length in words: bits [23:16] in ``[15:8]``,
#: bits [15:0] in ``[31:16]``; OPTIMIZER_CONFIG is followed by the CONFIG and ID words the program expects.
COP1_FOURCC = 0x31504F43  # "COP1" in little-endian bytes
DRIVER_ACTION = Codes({1: "OPTIMIZER_CONFIG", 2: "COMMAND_STREAM", 3: "READ_APB_REG", 4: "DUMP_SHRAM", 5: "NOP"})
_ACTION, _LENGTH_HI, _LENGTH_LO = Field("action", 0, 8), Field("length_hi", 8, 8), Field("length_lo", 16, 16)


def driver_action(word: int) -> int:
    """The action code of a driver-action word (``DRIVER_ACTION``)."""
    return _ACTION.get(word)


def driver_action_length(word: int) -> int:
    """The length in words of a COMMAND_STREAM action's stream."""
    return (_LENGTH_HI.get(word) << 16) | _LENGTH_LO.get(word)


# ================================================================================ PMU event numbers
PMU_EVENT = Codes({
    0x00: "NO_EVENT", 0x11: "CYCLE", 0x20: "NPU_IDLE", 0x21: "CC_STALLED_ON_BLOCKDEP",
    0x22: "CC_STALLED_ON_SHRAM_RECONFIG", 0x23: "NPU_ACTIVE",
    0x30: "MAC_ACTIVE", 0x31: "MAC_ACTIVE_8BIT", 0x32: "MAC_ACTIVE_16BIT", 0x33: "MAC_DPU_ACTIVE",
    0x38: "MAC_ACTIVE_32BIT", 0x40: "AO_ACTIVE", 0x41: "AO_ACTIVE_8BIT", 0x42: "AO_ACTIVE_16BIT", 0x50: "WD_ACTIVE",
    **{base + off: f"AXI{port}_{name}" for port, base in ((0, 0x80), (1, 0x180)) for off, name in (
        (0x0, "RD_TRANS_ACCEPTED"), (0x1, "RD_TRANS_COMPLETED"), (0x2, "RD_DATA_BEAT_RECEIVED"),
        (0x4, "WR_TRANS_ACCEPTED"), (0x5, "WR_TRANS_COMPLETED_M"), (0x6, "WR_TRANS_COMPLETED_S"),
        (0x7, "WR_DATA_BEAT_WRITTEN"), (0xC, "ENABLED_CYCLES"))},
})
#: the first event number of the AXI0 and AXI1 event groups (event = base + the AXI0 event's offset from 0x80)
PMU_AXI_EVENT_BASE = (0x80, 0x180)

# ================================================================================ command stream: word layout
OPCODE_MASK = 0x3FF
RESERVED_MASK = 0x3C00  # bits [13:10]
CONTROL_SHIFT = 14
CONTROL_CMD0 = 0
CONTROL_CMD1 = 1
PAYLOAD_FLAG = 0x4000  # control = CMD1 in the low half-word


@dataclass(frozen=True)
class CommandDef:
    """One command of the ISA.

    ``kind`` is ``"op"`` for ``NPU_OP_*`` (CMD0 operations) and ``"reg"`` for register writes.
    ``reg`` is the TSU register offset (the MMIO offset of the register in the register file).
    ``fields`` describe the param (CMD0) or the payload (CMD1); ``param_fields`` the CMD1 param fields.
    ``address`` marks CMD1 registers that hold an address/offset/stride (U65 takes bits [39:32] from
    param[7:0]); ``signed_address`` those that are signed (strides).
    """

    code: int
    name: str
    kind: str
    reg: int | None = None
    fields: tuple = ()
    param_fields: tuple = ()
    u65_only: bool = False
    u55_only: bool = False
    address: bool = False
    signed_address: bool = False

    @property
    def opcode(self) -> int:
        return self.code & OPCODE_MASK

    @property
    def has_payload(self) -> bool:
        return bool(self.code & PAYLOAD_FLAG)

    @property
    def length(self) -> int:
        """Length of the command in 32-bit words."""
        return 2 if self.has_payload else 1

    def valid_for(self, is_u65: bool) -> bool:
        return not (self.u65_only and not is_u65) and not (self.u55_only and is_u65)


# ================================================================================ codes
POOLING_MODE = Codes({0: "MAX", 1: "AVERAGE", 2: "REDUCE_SUM"})
ELEMENTWISE_MODE = Codes({0: "MUL", 1: "ADD", 2: "SUB", 3: "MIN", 4: "MAX", 5: "LRELU", 6: "ABS", 7: "CLZ",
                    8: "SHR", 9: "SHL"})
DATA_FORMAT = Codes({0: "NHWC", 1: "NHCWB16"})
PRECISION = Codes({0: "B8", 1: "B16", 2: "B32", 3: "B64"})
PRECISION_BITS = {0: 8, 1: 16, 2: 32, 3: 64}
SIGNEDNESS = Codes({0: "unsigned", 1: "signed"})
IFM_SCALE_MODE = Codes({0: "OPA_OPB_16", 1: "OPA_32", 2: "OPB_32"})
OFM_SCALE_MODE = Codes({0: "PER_CHANNEL", 1: "GLOBAL"})
ROUND_MODE = Codes({0: "DBL", 1: "TRUNCATE", 2: "NATURAL"})
UPSCALE_MODE = Codes({0: "NONE", 1: "NEAREST", 2: "ZEROS"})
ACC_FORMAT = Codes({0: "I32", 1: "I40", 2: "F16"})
ACTIVATION_FUNCTION = Codes({0: "NONE", 3: "TANH", 4: "SIGMOID", **{16 + i: f"TABLE_{i}" for i in range(8)}})
ACTIVATION_CLIP_RANGE = Codes({0: "OFM_PRECISION", 2: "FORCE_UINT8", 3: "FORCE_INT8", 5: "FORCE_INT16"})
WEIGHT_ORDER = Codes({0: "DEPTH_FIRST", 1: "PART_KERNEL_FIRST"})
KERNEL_DECOMPOSITION = Codes({0: "D8X8", 1: "D4X4"})
KERNEL_DILATION = Codes({0: "NONE", 1: "X2"})
PARALLEL_MODE = Codes({0: "SINGLE_CORE", 1: "DUAL_CORE_DEPTH"})
DMA_REGION_MODE = Codes({0: "EXTERNAL", 1: "INTERNAL"})
DMA_STRIDE_MODE = Codes({0: "D1", 1: "D2", 2: "D3"})
OPERAND_ORDER = Codes({0: "ORDER_B", 1: "ORDER_A"})

ROUND_DBL, ROUND_TRUNCATE, ROUND_NATURAL = ROUND_MODE.DBL, ROUND_MODE.TRUNCATE, ROUND_MODE.NATURAL
#: the built-in (non-LUT) activation functions
ACTIVATION_BUILTIN = (ACTIVATION_FUNCTION.TANH, ACTIVATION_FUNCTION.SIGMOID)
#: elementwise modes with one operand (no IFM2)
UNARY_ELEMENTWISE_MODES = ("ABS", "CLZ", "LRELU")

# ================================================================================ command fields
F16 = (Field("value", 0, 16),)
F16S = (Field("value", 0, 16, signed=True),)
_REGION = (Field("region", 0, 3), Field("custom_dma_cs", 15, 1))
# NPU_SET_IFM/IFM2/OFM_PRECISION: the type, format and rounding fields are at the same bits in each
_TYPE = Field("type", 0, 1, enum=SIGNEDNESS)
_FORMAT = Field("format", 6, 2, enum=DATA_FORMAT)
_ROUND = Field("round_mode", 14, 2, enum=ROUND_MODE)
_IFM_PRECISION = (_TYPE, Field("precision", 2, 2, enum=PRECISION), _FORMAT,
                  Field("scale_mode", 8, 2, enum=IFM_SCALE_MODE), _ROUND)
_IFM2_PRECISION = _IFM_PRECISION[:3]
_OFM_PRECISION = (_TYPE, Field("precision", 1, 2, enum=PRECISION), _FORMAT,
                  Field("scale_mode", 8, 1, enum=OFM_SCALE_MODE), _ROUND)
_KERNEL_STRIDE = (
    Field("stride_x_lsb", 0, 1),
    Field("stride_y_lsb", 1, 1),
    Field("weight_order", 2, 1, enum=WEIGHT_ORDER),
    Field("dilation_x", 3, 1, enum=KERNEL_DILATION),
    Field("dilation_y", 4, 1, enum=KERNEL_DILATION),
    Field("decomposition", 5, 1, enum=KERNEL_DECOMPOSITION),
    Field("stride_x_msb", 6, 1),
    Field("stride_y_msb", 9, 1),
)
_ACTIVATION = (
    Field("activation_function", 0, 5, enum=ACTIVATION_FUNCTION),
    Field("activation_clip_range", 12, 3, enum=ACTIVATION_CLIP_RANGE),
)
_DMA_REGION = (
    Field("region", 0, 3),  # a core mask in bits [7:0] when INTERNAL on U65
    Field("region_mode", 8, 1, enum=DMA_REGION_MODE),
    Field("stride_mode", 9, 2, enum=DMA_STRIDE_MODE),
    Field("custom_dma_cs", 15, 1),
)
_IFM2_BROADCAST = (
    Field("broadcast_h", 0, 1),
    Field("broadcast_w", 1, 1),
    Field("broadcast_c", 2, 1),
    Field("operand_order", 6, 1, enum=OPERAND_ORDER),
    Field("broadcast_constant", 7, 1),
)
_SHIFT = (Field("shift", 0, 6),)
_ADDR_HI = (Field("addr_hi", 0, 8),)

# ================================================================================ the commands
_DEFS: list[CommandDef] = []


def _op(opcode, name, fields=()):
    _DEFS.append(CommandDef(code=opcode, name=name, kind="op", fields=tuple(fields)))


def _r0(opcode, name, reg, fields=F16, **kw):
    _DEFS.append(CommandDef(code=opcode, name=name, kind="reg", reg=reg, fields=tuple(fields), **kw))


def _r1(opcode, name, reg, *, address=True, signed=False, param_fields=_ADDR_HI, fields=(), **kw):
    _DEFS.append(CommandDef(code=PAYLOAD_FLAG | opcode, name=name, kind="reg", reg=reg, fields=tuple(fields),
                            param_fields=tuple(param_fields), address=address, signed_address=signed, **kw))


def tile_commands():
    """(opcode, name, TSU register, field name) of the CMD0 commands every feature map has at the same
    distance from its group's first command and register (IFM 0x100/0x800, OFM 0x110/0x840, IFM2
    0x180/0x900): the zero point (the OFM's one command earlier), the tile sizes and the region. The Ethos-U85
    has them too; the field names are its header's."""
    for fm, opcode, reg in (("IFM", 0x100, 0x800), ("OFM", 0x110, 0x840), ("IFM2", 0x180, 0x900)):
        for k, what, field in ((8 if fm == "OFM" else 9, "ZERO_POINT", "zero_point"), (0xA, "WIDTH0_M1", "width_m1"),
                               (0xB, "HEIGHT0_M1", "height_m1"), (0xC, "HEIGHT1_M1", "height_m1"),
                               (0xF, "REGION", "region")):
            yield opcode + k, f"NPU_SET_{fm}_{what}", reg + 4 * k, field


# CMD0 operations
_op(0x000, "NPU_OP_STOP", (Field("mask", 0, 16),))
_op(0x001, "NPU_OP_IRQ", (Field("mask", 0, 16),))
_op(0x002, "NPU_OP_CONV")
_op(0x003, "NPU_OP_DEPTHWISE")
_op(0x005, "NPU_OP_POOL", (Field("pooling_mode", 0, 3, enum=POOLING_MODE),))
_op(0x006, "NPU_OP_ELEMENTWISE", (Field("elementwise_mode", 0, 6, enum=ELEMENTWISE_MODE),))
_op(0x010, "NPU_OP_DMA_START")
_op(0x011, "NPU_OP_DMA_WAIT", (Field("k", 0, 4),))
_op(0x012, "NPU_OP_KERNEL_WAIT", (Field("n", 0, 2),))
_op(0x013, "NPU_OP_PMU_MASK", (Field("enable", 0, 1),))

# CMD0 register writes
_r0(0x100, "NPU_SET_IFM_PAD_TOP", 0x800, (Field("pad", 0, 7),))
_r0(0x101, "NPU_SET_IFM_PAD_LEFT", 0x804, (Field("pad", 0, 7),))
_r0(0x102, "NPU_SET_IFM_PAD_RIGHT", 0x808, (Field("pad", 0, 8),))
_r0(0x103, "NPU_SET_IFM_PAD_BOTTOM", 0x80C, (Field("pad", 0, 8),))
_r0(0x104, "NPU_SET_IFM_DEPTH_M1", 0x810)
_r0(0x105, "NPU_SET_IFM_PRECISION", 0x814, _IFM_PRECISION)
_r0(0x107, "NPU_SET_IFM_UPSCALE", 0x81C, (Field("mode", 0, 2, enum=UPSCALE_MODE),))
_r0(0x10D, "NPU_SET_IFM_IB_END", 0x834, (Field("ib_end", 0, 6),))
_r0(0x111, "NPU_SET_OFM_WIDTH_M1", 0x844)
_r0(0x112, "NPU_SET_OFM_HEIGHT_M1", 0x848)
_r0(0x113, "NPU_SET_OFM_DEPTH_M1", 0x84C)
_r0(0x114, "NPU_SET_OFM_PRECISION", 0x850, _OFM_PRECISION)
_r0(0x115, "NPU_SET_OFM_BLK_WIDTH_M1", 0x854, (Field("value", 0, 6),))
_r0(0x116, "NPU_SET_OFM_BLK_HEIGHT_M1", 0x858, (Field("value", 0, 5),))
_r0(0x117, "NPU_SET_OFM_BLK_DEPTH_M1", 0x85C, (Field("value", 0, 7),))
_r0(0x120, "NPU_SET_KERNEL_WIDTH_M1", 0x880)
_r0(0x121, "NPU_SET_KERNEL_HEIGHT_M1", 0x884)
_r0(0x122, "NPU_SET_KERNEL_STRIDE", 0x888, _KERNEL_STRIDE)
_r0(0x123, "NPU_SET_PARALLEL_MODE", 0x88C, (Field("parallel_mode", 0, 1, enum=PARALLEL_MODE),), u65_only=True)
_r0(0x124, "NPU_SET_ACC_FORMAT", 0x890, (Field("acc_format", 0, 2, enum=ACC_FORMAT),))
_r0(0x125, "NPU_SET_ACTIVATION", 0x894, _ACTIVATION)
_r0(0x126, "NPU_SET_ACTIVATION_MIN", 0x898, F16S)
_r0(0x127, "NPU_SET_ACTIVATION_MAX", 0x89C, F16S)
_r0(0x128, "NPU_SET_WEIGHT_REGION", 0x8A0, _REGION)
_r0(0x129, "NPU_SET_SCALE_REGION", 0x8A4, _REGION)
_r0(0x12D, "NPU_SET_AB_START", 0x8B4, (Field("ab_start", 0, 6),))
_r0(0x12F, "NPU_SET_BLOCKDEP", 0x8BC, (Field("blockdep", 0, 2),))
_r0(0x130, "NPU_SET_DMA0_SRC_REGION", 0x8C0, _DMA_REGION)
_r0(0x131, "NPU_SET_DMA0_DST_REGION", 0x8C4, _DMA_REGION)
_r0(0x132, "NPU_SET_DMA0_SIZE0", 0x8C8)
_r0(0x133, "NPU_SET_DMA0_SIZE1", 0x8CC)
_r0(0x180, "NPU_SET_IFM2_BROADCAST", 0x900, _IFM2_BROADCAST)
_r0(0x181, "NPU_SET_IFM2_SCALAR", 0x904)
_r0(0x185, "NPU_SET_IFM2_PRECISION", 0x914, _IFM2_PRECISION)
_r0(0x18D, "NPU_SET_IFM2_IB_START", 0x934, (Field("ib_start", 0, 6),))
for _opcode, _name, _reg, _field in tile_commands():  # the feature maps' zero points, tiles and regions
    _r0(_opcode, _name, _reg, _REGION if _field == "region" else F16)

# CMD1 register writes (payload = 32-bit value)
for _i in range(4):
    _r1(0x000 + _i, f"NPU_SET_IFM_BASE{_i}", 0xA00 + 8 * _i)
_r1(0x004, "NPU_SET_IFM_STRIDE_X", 0xA20, signed=True)
_r1(0x005, "NPU_SET_IFM_STRIDE_Y", 0xA28, signed=True)
_r1(0x006, "NPU_SET_IFM_STRIDE_C", 0xA30, signed=True)
for _i in range(4):
    _r1(0x010 + _i, f"NPU_SET_OFM_BASE{_i}", 0xA40 + 8 * _i)
_r1(0x014, "NPU_SET_OFM_STRIDE_X", 0xA60, signed=True)
_r1(0x015, "NPU_SET_OFM_STRIDE_Y", 0xA68, signed=True)
_r1(0x016, "NPU_SET_OFM_STRIDE_C", 0xA70, signed=True)
_r1(0x020, "NPU_SET_WEIGHT_BASE", 0xA80)
_r1(0x021, "NPU_SET_WEIGHT_LENGTH", 0xA88)
_r1(0x022, "NPU_SET_SCALE_BASE", 0xA90)
_r1(0x023, "NPU_SET_SCALE_LENGTH", 0xA98)
_r1(0x024, "NPU_SET_OFM_SCALE", 0xAA0, address=False, param_fields=_SHIFT)
_r1(0x025, "NPU_SET_OPA_SCALE", 0xAA8, address=False, param_fields=_SHIFT)
_r1(0x026, "NPU_SET_OPB_SCALE", 0xAB0, address=False, param_fields=())
_r1(0x030, "NPU_SET_DMA0_SRC", 0xAC0)
_r1(0x031, "NPU_SET_DMA0_DST", 0xAC8)
_r1(0x032, "NPU_SET_DMA0_LEN", 0xAD0)
_r1(0x033, "NPU_SET_DMA0_SKIP0", 0xAD8, signed=True, u65_only=True)
_r1(0x034, "NPU_SET_DMA0_SKIP1", 0xAE0, signed=True, u65_only=True)
for _i in range(4):
    _r1(0x080 + _i, f"NPU_SET_IFM2_BASE{_i}", 0xB00 + 8 * _i)
_r1(0x084, "NPU_SET_IFM2_STRIDE_X", 0xB20, signed=True)
_r1(0x085, "NPU_SET_IFM2_STRIDE_Y", 0xB28, signed=True)
_r1(0x086, "NPU_SET_IFM2_STRIDE_C", 0xB30, signed=True)
_r1(0x090, "NPU_SET_WEIGHT1_BASE", 0xB40, u65_only=True)
_r1(0x091, "NPU_SET_WEIGHT1_LENGTH", 0xB48, u65_only=True)
_r1(0x092, "NPU_SET_SCALE1_BASE", 0xB50, u65_only=True)
_r1(0x093, "NPU_SET_SCALE1_LENGTH", 0xB58, u65_only=True)
for _i in range(8):  # U55 arch 1.1 header only; not used by Vela, no effect
    _r1(0x0A0 + _i, f"NPU_SET_USER_DEFINED{_i}", 0xB80 + 8 * _i, address=False, param_fields=(), u55_only=True)

_DEFS.sort(key=lambda d: d.code)  # the tables in code order, the loops' commands among the others
#: code (low half-word of the first command word) -> definition
COMMANDS: dict[int, CommandDef] = {d.code: d for d in _DEFS}
#: name -> definition
BY_NAME: dict[str, CommandDef] = {d.name: d for d in _DEFS}

assert len(COMMANDS) == len(_DEFS) and len(BY_NAME) == len(_DEFS)


class CommandCodes:
    """Attribute access to the command codes of an ISA's ``BY_NAME`` table: ``CODE.NPU_SET_IFM_BASE0 == 0x4000``."""

    def __init__(self, by_name: dict):
        self._by_name = by_name

    def __getattr__(self, name):
        try:
            return self.__dict__["_by_name"][name].code
        except KeyError:
            raise AttributeError(name) from None

    def __dir__(self):
        return list(self._by_name)


CODE = CommandCodes(BY_NAME)

# The operation codes by name
(NPU_OP_STOP, NPU_OP_IRQ, NPU_OP_CONV, NPU_OP_DEPTHWISE, NPU_OP_POOL, NPU_OP_ELEMENTWISE, NPU_OP_DMA_START,
 NPU_OP_DMA_WAIT, NPU_OP_KERNEL_WAIT, NPU_OP_PMU_MASK) = (BY_NAME[n].code for n in (
    "NPU_OP_STOP", "NPU_OP_IRQ", "NPU_OP_CONV", "NPU_OP_DEPTHWISE", "NPU_OP_POOL", "NPU_OP_ELEMENTWISE",
    "NPU_OP_DMA_START", "NPU_OP_DMA_WAIT", "NPU_OP_KERNEL_WAIT", "NPU_OP_PMU_MASK"))
