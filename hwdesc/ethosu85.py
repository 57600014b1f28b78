"""Ethos-U85 hardware interface: MMIO registers, PMU registers and event numbers, the command-stream ISA.

Sources (facts only): Vela 5.1's ``ethos_u85_interface.hpp`` (arch 2.0.0; offsets, bit-fields, enums, reset
values, access types of the register file and of every command), and, for how fields are used and for the
CONFIG/ID words of the driver payload, Vela's ``ethos_u85_register_cs_generator.cpp`` and ``ethos_u85.cpp``.
Names follow the header (``NPU_SET_IFM_PRECISION.activation_storage``, ``NPU_OP_RESIZE``); the U55/U65
counterpart is :mod:`hwdesc.ethosu`, whose :class:`~hwdesc.ethosu.CommandDef`, command-word layout and
driver-payload format (``COP1``) the U85 shares, and whose definitions it takes where the header's facts are
the U55's: the registers ID, CMD, RESET, QREAD, QCONFIG, QSIZE and PROT, the PMU block (moved to 0x1180, 8
counters), the feature maps' zero-point, tile and region commands, eleven other commands (NPU_OP_STOP,
NPU_SET_KERNEL_STRIDE ...) and the codes noted below.

* :data:`MMIO` -- the register file the CPU sees: :data:`MMIO_BASE` (ID .. BASEP7_HI, REVISION, PID/CID) and
  :data:`MMIO_PMU` (PMCR .. PMEVTYPER7, at 0x1180 .. 0x139C on the U85; 8 event counters).
  :data:`MMIO_DEBUG` holds the debug registers (clock forcing, the DMA and TSU state, internal-memory
  window, unit status); it is not part of :data:`MMIO`. The conventions are :mod:`hwdesc.ethosu`'s: reset
  values are the ones after a completed reset (STATUS reads 0; the header's 0x8 has ``reset_status`` set
  while a reset is pending), ID and CONFIG depend on the variant (``reset=None``; :func:`id_word` and
  :func:`config_word` give the values Vela expects); the header's RW set/clear registers are ``W1S``/``W1C``
  and RESET is ``WO``; a 64-bit register is two: ``X`` (bits [31:0]) and ``X_HI`` at +4; field names are
  spelt as there (lower case but for ``*_CPL``/``*_CSL``; the six PMU set/clear registers share the
  ``EVENT_CNT_n``/``CYCLE_CNT`` bits, which the header's PMOVS*/PMINT* suffix with ``_OVF``/``_INT``).
  The offsets are those of Vela's header, the one U85 register description read here (the PMU block moved
  from the U55's 0x180); the Arm core driver's own U85 header was not available to compare.
* :data:`PMU_EVENT` -- PMU event numbers; :data:`PMU_COUNTERS`.
* :data:`NPU_VARIANTS_U85`, :data:`ACCELERATOR_CONFIGS`, :func:`config_word`, :func:`id_word`.
* The command stream: word layout, command code and the raw register values as in :mod:`hwdesc.ethosu`
  (:data:`COMMANDS` maps codes, :data:`BY_NAME` names to ``CommandDef``; ``CODE.NPU_SET_IFM_BASE0`` is a
  code). ``reg`` is the TSU register offset the header gives. Addresses, offsets, strides and the DMA length
  are 40 bits: the payload holds bits [31:0] (``addr_lo``) and param[7:0] (``addr_hi``) bits [39:32]; such
  commands have ``address=True`` (``signed_address`` for strides, two's complement over 40 bits). The weight
  and scale lengths have no high part. NPU_OP_BRANCH is a CMD1 operation (code 0x4100): param[0] the
  condition, the payload the target (a byte offset in the command stream).
* Codes of the fields (:data:`POOLING_MODE`, :data:`ELEMENTWISE_MODE`, :data:`ROUND_MODE_OFM`,
  :data:`ACTIVATION_FUNCTION`, :data:`BROADCAST_MODE`, :data:`MICROBLOCK`, ...), one per enum of the header;
  those that are the U55's code for code are :mod:`hwdesc.ethosu`'s objects (``ACTIVATION_PRECISION`` is its
  ``PRECISION``).
"""

from __future__ import annotations

from typing import NamedTuple

from . import ethosu as _u55
from .ethosu import (DMA_REGION_MODE, DMA_STRIDE_MODE, KERNEL_DECOMPOSITION, KERNEL_DILATION, OFM_SCALE_MODE,
                     PAYLOAD_FLAG, PRECISION_BITS, WEIGHT_ORDER, CommandCodes, CommandDef, pmu_control_registers,
                     pmu_event_counter_registers, register_pair, tile_commands)
from .regs import Codes, Field, Register, RegisterMap, bit

# ================================================================================ codes
ACC_FORMAT = Codes({0: "I32", 1: "I48"})
ACC_INPUT = Codes({0: "RESET", 1: "KEEP", 2: "IFM2"})
ACC_OUTPUT = Codes({0: "ENABLE", 1: "DISABLE"})
ACTIVATION_CLIP_RANGE = Codes({0: "B16", 1: "NONE"})
ACTIVATION_FUNCTION = Codes({0: "LUT_NONE", 1: "LUT_U8_U8", 4: "LUT_S8_S8", 5: "LUT_S8_S16", 7: "LUT_S8_S32",
                             8: "LUT_S16_S16", 9: "LUT_S16_S32", 10: "LUT_TANH", 11: "LUT_SIGMOID"})
ACTIVATION_REVERSE = Codes({0: "NONE", 1: "H", 2: "W", 3: "C"})
ACTIVATION_STORAGE = Codes({0: "TILE2X2", 1: "TILE3X1", 2: "CHAINED", 3: "NONE"})
ACTIVATION_TRANSPOSE = Codes({0: "HWC", 1: "WHC", 2: "HCW", 3: "WCH", 6: "CHW", 7: "CWH"})
ACTIVATION_TYPE = Codes({0: "UNSIGNED", 1: "SIGNED"})
AXI_MEM_DOMAIN = Codes({0: "NON_SHARABLE", 1: "INNER_SHARABLE", 2: "OUTER_SHARABLE", 3: "SYSTEM"})
AXI_MEM_ENCODING = Codes({
    0: "DEVICE_NON_BUFFERABLE", 1: "DEVICE_BUFFERABLE", 2: "NORMAL_NON_CACHEABLE_NON_BUFFERABLE",
    3: "NORMAL_NON_CACHEABLE_BUFFERABLE", 4: "WRITE_THROUGH_NO_ALLOCATE", 5: "WRITE_THROUGH_READ_ALLOCATE",
    6: "WRITE_THROUGH_WRITE_ALLOCATE", 7: "WRITE_THROUGH_READ_AND_WRITE_ALLOCATE", 8: "WRITE_BACK_NO_ALLOCATE",
    9: "WRITE_BACK_READ_ALLOCATE", 10: "WRITE_BACK_WRITE_ALLOCATE", 11: "WRITE_BACK_READ_AND_WRITE_ALLOCATE"})
AXI_PORT = Codes({0: "SRAM", 1: "EXT"})
BRANCH_COND = Codes({0: "ALWAYS", 1: "RF_TRUE"})
BROADCAST_MODE = Codes({0: "NONE", 1: "H", 2: "W", 3: "HW", 4: "C", 5: "CH", 6: "CW", 7: "CWH", 8: "SCALAR"})
CMD_CTRL = Codes({0: "CMD0_CTRL", 1: "CMD1_CTRL"})
CUSTOM_DMA = Codes({0: "NOT_IMPLEMENTED", 1: "IMPLEMENTED"})
DMA_FAULT_CHANNEL = Codes({0: "CMD_READ", 1: "IFM_READ", 2: "WEIGHT_READ", 3: "SBS_READ", 4: "MEM2MEM_READ",
                           8: "OFM_WRITE", 9: "MEM2MEM_WRITE"})
DMA_FAULT_SRC = Codes({0: "SRAM", 1: "EXT"})
DMA_IDX_MODE = Codes({0: "DISABLED", 1: "ENABLED"})
ELEMENTWISE_MODE = Codes({
    0: "MUL", 1: "ADD", 2: "SUB", 3: "MIN", 4: "MAX", 5: "LRELU", 6: "ABS", 7: "CLZ", 8: "SHR", 9: "SHL",
    10: "LSR", 11: "DIV", 16: "CMP_EQ", 17: "CMP_NE", 18: "CMP_GE", 19: "CMP_GT", 33: "AND", 34: "OR", 35: "XOR",
    36: "NOT", 42: "AND_NOT"})
#: elementwise modes with one operand (no IFM2; Regor's IsUnaryElementwise)
UNARY_ELEMENTWISE_MODES = ("ABS", "CLZ", "LRELU", "NOT")
MAX_BEATS = Codes({0: "B64", 1: "B128", 2: "B256"})
MICROBLOCK = Codes({0: "U1X1", 1: "U1X2", 2: "U1X4", 3: "U2X2", 4: "U2X4", 5: "U4X4"})
PMU_AXI_CHANNEL = Codes({0: "RD_CMD", 1: "RD_IFM", 2: "RD_WEIGHTS", 3: "RD_SCALE_BIAS", 4: "RD_MEM2MEM",
                         5: "RD_IFM_STREAM", 6: "RD_MEM2MEM_IDX", 8: "WR_OFM", 9: "WR_MEM2MEM"})
PMU_PORT_DISABLE = Codes({0: "ENABLE", 1: "DISABLE"})
POOLING_MODE = Codes({0: "MAX", 1: "AVERAGE", 2: "REDUCE_SUM", 3: "SUM", 4: "NONE", 5: "MIN", 6: "ARGMAX_X",
                      7: "ARGMAX_Y"})
PRIVILEGE_LEVEL = Codes({0: "USER", 1: "PRIVILEGED"})
RAM_ID = Codes({0: "LUT", 1: "IB", 2: "AB", 3: "CB", 4: "OB"})
RESIZE_MODE = Codes({0: "BILINEAR", 1: "REPLICATE", 2: "NEAREST"})
ROUND_MODE_IFM = Codes({0: "DOUBLE_SYMMETRIC", 1: "NATURAL"})
ROUND_MODE_OFM = Codes({0: "DOUBLE_SYMMETRIC", 1: "NATURAL", 2: "DOUBLE_ASYMMETRIC", 3: "SYMMETRIC",
                        4: "TRUNCATE_TO_ZERO", 5: "TRUNCATE_TO_LOWER"})
SECURITY_LEVEL = Codes({0: "SECURE", 1: "NON_SECURE"})
STATE = Codes({0: "STOPPED", 1: "RUNNING"})
WD_ACTIVE_CORE = Codes({0: "NONE", 1: "STANDARD", 2: "FAST", 3: "TENSOR"})
WEIGHT_FORMAT = Codes({0: "SWD", 1: "FWD"})
WEIGHT_SPARSITY = Codes({0: "NONE", 1: "SPARSE_2_4"})
# the header's enums that are the U55's code for code (hwdesc.ethosu): DMA_REGION_MODE, DMA_STRIDE_MODE,
# KERNEL_DECOMPOSITION, KERNEL_DILATION, OFM_SCALE_MODE, WEIGHT_ORDER and PRECISION_BITS (bits per element of
# each ACTIVATION_PRECISION) by their names, these three under the header's names
ACTIVATION_FORMAT = _u55.DATA_FORMAT
ACTIVATION_PRECISION = _u55.PRECISION
IFM_UPSCALE_MODE = _u55.UPSCALE_MODE

# ================================================================================ PMU event numbers
PMU_COUNTERS = 8  # event counters (PMCR.num_event_cnt)
#: the first event number of the AXI SRAM and AXI EXT event groups (the same events at the same offsets)
PMU_AXI_EVENT_BASE = (0x80, 0x180)
_AXI_EVENTS = (
    (0x0, "RD_TRANS_ACCEPTED"), (0x1, "RD_TRANS_COMPLETED"), (0x2, "RD_DATA_BEAT_RECEIVED"),
    (0x3, "RD_TRAN_REQ_STALLED"), (0x4, "WR_TRANS_ACCEPTED"), (0x5, "WR_TRANS_COMPLETED_M"),
    (0x6, "WR_TRANS_COMPLETED_S"), (0x7, "WR_DATA_BEAT_WRITTEN"), (0x8, "WR_TRAN_REQ_STALLED"),
    (0x9, "WR_DATA_BEAT_STALLED"), (0xC, "ENABLED_CYCLES"), (0xE, "RD_STALL_LIMIT"), (0xF, "WR_STALL_LIMIT"))
PMU_EVENT = Codes({
    0x00: "NO_EVENT", 0x11: "CYCLE", 0x20: "NPU_IDLE", 0x21: "CC_STALLED_ON_BLOCKDEP",
    0x22: "CC_STALLED_ON_SHRAM_RECONFIG", 0x23: "NPU_ACTIVE",
    0x30: "MAC_ACTIVE", 0x33: "MAC_DPU_ACTIVE", 0x34: "MAC_STALLED_BY_W_OR_ACC", 0x35: "MAC_STALLED_BY_W",
    0x36: "MAC_STALLED_BY_ACC", 0x37: "MAC_STALLED_BY_IB", 0x39: "MAC_STALLED_BY_INT_W",
    0x3A: "MAC_STALLED_BY_INT_ACC",
    0x40: "AO_ACTIVE", 0x43: "AO_STALLED_BY_BS_OR_OB", 0x44: "AO_STALLED_BY_BS", 0x45: "AO_STALLED_BY_OB",
    0x46: "AO_STALLED_BY_AB_OR_CB", 0x47: "AO_STALLED_BY_AB", 0x48: "AO_STALLED_BY_CB",
    0x50: "WD_ACTIVE", 0x51: "WD_STALLED", 0x53: "WD_STALLED_BY_WD_BUF", 0x54: "WD_STALLED_BY_WS_FC",
    0x55: "WD_STALLED_BY_WS_TC", 0x59: "WD_TRANS_WBLK", 0x5A: "WD_TRANS_WS_FC", 0x5B: "WD_TRANS_WS_TC",
    # per weight-decoder stream core (SC0..SC3) and weight buffer (WB0..WB3): four events from each base
    **{base + i: f"{name}{i}" for base, name in (
        (0x60, "WD_STALLED_BY_WS_SC"), (0x64, "WD_PARSE_ACTIVE_SC"), (0x68, "WD_PARSE_STALL_SC"),
        (0x6C, "WD_PARSE_STALL_IN_SC"), (0x70, "WD_PARSE_STALL_OUT_SC"), (0x74, "WD_TRANS_WS_SC"),
        (0x78, "WD_TRANS_WB")) for i in range(4)},
    **{base + off: f"{port}_{name}" for port, base in zip(("SRAM", "EXT"), PMU_AXI_EVENT_BASE)
       for off, name in _AXI_EVENTS},
    0xA0: "AXI_LATENCY_ANY", **{0xA1 + i: f"AXI_LATENCY_{32 << i}" for i in range(6)},
    0xB0: "ECC_DMA", 0xB1: "ECC_MAC_IB", 0xB2: "ECC_MAC_AB", 0xB3: "ECC_AO_CB", 0xB4: "ECC_AO_OB",
    0xB5: "ECC_AO_LUT",
})

# ================================================================================ MMIO registers (CPU side)
_AXI_LIMITS = (Field("max_outstanding_read_m1", 0, 6), Field("max_outstanding_write_m1", 8, 5),
               Field("max_beats", 16, 2, enum=MAX_BEATS))

#: the registers that are the U55's (hwdesc.ethosu) at the same offsets
_SHARED = _u55.MMIO_BASE


MMIO_BASE = RegisterMap("ethosu85", (
    _SHARED.ID,
    Register("STATUS", 0x004, "RO", 0, (
        Field("state", 0, 1, enum=STATE), bit("irq_raised", 1), bit("bus_status", 2), bit("reset_status", 3),
        bit("cmd_parse_error", 4), bit("cmd_end_reached", 5), bit("pmu_irq_raised", 6), bit("ecc_fault", 8),
        bit("branch_fault", 9), Field("faulting_interface", 11, 1, enum=DMA_FAULT_SRC),
        Field("faulting_channel", 12, 4, enum=DMA_FAULT_CHANNEL), Field("irq_history_mask", 16, 16))),
    _SHARED.CMD, _SHARED.RESET,
    *register_pair("QBASE", 0x010, "RW", doc="command stream base, bits [31:0]"),
    _SHARED.QREAD, _SHARED.QCONFIG, _SHARED.QSIZE, _SHARED.PROT,
    Register("CONFIG", 0x028, "RO", None, (
        Field("macs_per_cc", 0, 4), Field("cmd_stream_version", 4, 4), Field("num_axi_sram", 8, 2),
        Field("num_axi_ext", 10, 1), Field("num_wd", 12, 2), Field("custom_dma", 27, 1, enum=CUSTOM_DMA),
        Field("product", 28, 4)), doc="macs_per_cc, num_axi_sram, num_axi_ext and num_wd are log2 values"),
    Register("COND_STATUS", 0x030, "RW", 0, (bit("result_flag", 0),),
             doc="result_flag: by its name, the flag of NPU_OP_BRANCH's RF_TRUE condition"),
    Register("POWER_CTRL", 0x038, "RW", 0, (Field("mac_step_cycles", 0, 6),)),
    Register("REGIONCFG", 0x03C, "RW", 0, tuple(Field(f"region{i}", 2 * i, 2) for i in range(8)),
             doc="the MEM_ATTR index of each region"),
    Register("MEM_ATTR", 0x040, "RW", 0, (
        Field("mem_domain", 0, 2, enum=AXI_MEM_DOMAIN), Field("axi_port", 2, 1, enum=AXI_PORT),
        Field("memtype", 4, 4, enum=AXI_MEM_ENCODING)), count=4),
    Register("AXI_SRAM", 0x050, "RW", 0, _AXI_LIMITS),
    Register("AXI_EXT", 0x054, "RW", 0, _AXI_LIMITS),
    Register("CFG_SRAM_CAP", 0x060, "RO", 0, _AXI_LIMITS),
    Register("CFG_EXT_CAP", 0x064, "RO", 0, _AXI_LIMITS),
    *(r for name, offset in (("CFG_SRAM_HASH0", 0x068), ("CFG_SRAM_HASH1", 0x070), ("CFG_EXT_HASH0", 0x078))
      for r in register_pair(name, offset, "RO", (Field("zero", 0, 6), Field("hash_lo", 6, 26)),
                             (Field("hash_hi", 0, 8),), doc="address hash, bits [31:6]")),
    *register_pair("BASEP", 0x080, "RW", count=8, stride=8, doc="region base pointers, bits [31:0]"),
    Register("REVISION", 0xFC0, "RO", 0),
    *(Register(f"PID{i}", (0xFE0 if i < 4 else 0xFC0) + 4 * i, "RO", reset)
      for i, reset in enumerate((0x82, 0xB5, 0x0B, 0x00, 0x04, 0x00, 0x00, 0x00))),
    *(Register(f"CID{i}", 0xFF0 + 4 * i, "RO", reset) for i, reset in enumerate((0x0D, 0xF0, 0x05, 0xB1))),
))

MMIO_PMU = RegisterMap("ethosu85.pmu", (
    *pmu_control_registers(0x1180, PMU_COUNTERS),
    Register("PMCCNTR_CFG", 0x11A8, "RW", 0, (
        Field("cycle_cnt_cfg_start", 0, 10), *(bit(f"s{i}", 12 + i) for i in range(4)),
        Field("cycle_cnt_cfg_stop", 16, 10), *(bit(f"e{i}", 28 + i) for i in range(4)))),
    Register("PMCAXI_CHAN", 0x11AC, "RW", 0, (
        Field("ch_sel", 0, 4, enum=PMU_AXI_CHANNEL), Field("axi_sel", 8, 1, enum=AXI_PORT), bit("bw_ch_sel_en", 10))),
    Register("PMCLUT", 0x11B0, "RW", 0, (bit("pcm_lut_en_0", 0), Field("pmc_lut_0", 16, 16))),
    *pmu_event_counter_registers(0x1180, PMU_COUNTERS, (Field("ev_type", 0, 10, enum=PMU_EVENT),
                                                       *(bit(f"d{i}", 12 + i) for i in range(4)))),
))

MMIO = MMIO_BASE + MMIO_PMU

_DMA_STATUS0 = (
    "cmd_ch_idle", "ifm0_ch_idle", "ifm1_ch_idle", "wgt_ch_idle", "bas_ch_idle", "m2m_ch_idle", "ofm_ch_idle",
    "axi_halt_req", "axi_halt_ack", "axi_pause_req", "axi_pause_ack", "cmd_abort_ack", "cmd_abort_req",
    "ifm_mac_if_stall", "ifm_tc_if_stall", "ifm_ao_if_stall", "ofm_if_stall", "cmd_if_stall", "wd_sc0_if_stall",
    "wd_sc1_if_stall", "wd_sc2_if_stall", "wd_sc3_if_stall", "wd_fc_if_stall", "bs_if_stall", "lutcfg_if_stall")
_DMA_STATUS1 = tuple(f"axi_{port}_{s}" for port in ("sram0", "sram1", "sram2", "sram3", "ext0", "ext1")
                     for s in ("ar_stalled", "rd_limit_stall", "aw_stalled", "w_stalled", "wr_limit_stall"))
_MAC_STATUS = (
    "block_cfg_valid", "trav_en", "wait_for_ib", "wait_for_acc_buf", "wait_for_weights", "stall_stripe", "dw_sel",
    "wait_for_dw0_ready", "wait_for_dw1_ready", "acc_buf_sel_ai", "wait_for_acc0_ready", "wait_for_acc1_ready",
    "acc_buf_sel_aa", "acc0_valid", "acc1_valid")

#: the debug registers; the DMA_* ones show the address each DMA channel is at (RO)
MMIO_DEBUG = RegisterMap("ethosu85.debug", (
    Register("CLKFORCE", 0x140, "RW", 0, tuple(bit(f"{u}_clk", i) for i, u in enumerate(
        ("top_level", "cc", "dma", "mac", "ao", "wd")))),
    Register("DEBUG_ADDRESS", 0x144, "RW", 0, (Field("addr", 0, 28), Field("ram_id", 28, 4, enum=RAM_ID)),
             doc="by the names, the internal RAM (and word) the INTERNAL_MEMORY window shows"),
    Register("DEBUG_MISC", 0x148, "RW", 0),
    *register_pair("DMA_IFM_SRC", 0x240, "RO"),
    Register("DMA_IFM_DST", 0x248, "RO", 0),
    Register("DMA_OFM_SRC", 0x24C, "RO", 0),
    *register_pair("DMA_OFM_DST", 0x250, "RO"),
    *register_pair("DMA_WEIGHT_SRC", 0x258, "RO"),
    *register_pair("DMA_CMD_SRC", 0x260, "RO"),
    Register("DMA_CMD_SIZE", 0x268, "RO", 0),
    *register_pair("DMA_M2M_SRC", 0x26C, "RO"),
    *register_pair("DMA_M2M_DST", 0x274, "RO"),
    Register("CURRENT_QREAD", 0x27C, "RO", 0),
    *register_pair("DMA_SCALE_SRC", 0x280, "RO"),
    *(r for i in (1, 2, 3) for r in register_pair(f"DMA_WEIGHT{i}_SRC", 0x280 + 8 * i, "RO")),
    Register("CURRENT_OP", 0x2B8, "RO", 0),
    Register("CURRENT_CMD", 0x2BC, "RO", 0),
    Register("INTERNAL_MEMORY", 0x400, "RW", 0, count=256),
    Register("WD_STATUS", 0x1100, "RO", 0, (
        bit("ctrl_idle", 0), Field("active_core", 2, 2, enum=WD_ACTIVE_CORE),
        *(bit(f"sc{i}_idle", 4 + i) for i in range(4)), bit("fc_idle", 8), bit("tc_idle", 9),
        *(bit(f"wbuf{i}_{s}", 16 + 2 * i + j) for i in range(4) for j, s in enumerate(("valid", "idle"))),
        *(bit(f"stalled_by_ws_{u}", 24 + i) for i, u in enumerate(("sc0", "sc1", "sc2", "sc3", "fc", "tc"))),
        bit("stalled_by_wd_buf", 30))),
    Register("MAC_STATUS", 0x1104, "RO", 0, tuple(bit(n, i) for i, n in enumerate(_MAC_STATUS))
             + (Field("events", 16, 11),)),
    Register("AO_STATUS", 0x1108, "RO", 0, (bit("ao_active", 0), *(
        bit(f"ao_stalled_by_{u}", 3 + i) for i, u in enumerate(("bs_or_ob", "bs", "ob", "ab_or_cb", "ab", "cb"))))),
    Register("DMA_STATUS0", 0x1110, "RO", 0, tuple(bit(n, i) for i, n in enumerate(_DMA_STATUS0))),
    Register("DMA_STATUS1", 0x1114, "RO", 0, tuple(bit(n, i) for i, n in enumerate(_DMA_STATUS1))),
))

# ================================================================================ variants, CONFIG and ID
#: the Ethos-U85 configurations (MACs per cycle) a board may name
NPU_VARIANTS_U85 = ("ethos-u85-128", "ethos-u85-256", "ethos-u85-512", "ethos-u85-1024", "ethos-u85-2048")


class AcceleratorConfig(NamedTuple):
    """What a MAC configuration puts in CONFIG besides macs_per_cc (Vela's ``s_EthosU85Configs``)."""

    cores: int  # weight decoders: CONFIG.num_wd = log2(cores)
    num_axi_sram_log2: int  # CONFIG.num_axi_sram: log2 of the AXI SRAM ports
    num_axi_ext_log2: int  # CONFIG.num_axi_ext: log2 of the AXI EXT ports


#: MACs per cycle -> the configuration's parameters
ACCELERATOR_CONFIGS = {
    128: AcceleratorConfig(1, 1, 0), 256: AcceleratorConfig(1, 1, 0), 512: AcceleratorConfig(2, 1, 0),
    1024: AcceleratorConfig(4, 1, 1), 2048: AcceleratorConfig(4, 2, 1),
}
ARCH_VERSION = (2, 0, 0)  # major, minor, patch (ID.arch_*_rev)
_ID_PRODUCT_MAJOR = 7
_CONFIG_PRODUCT = 2  # CONFIG.product of the U85 (Vela's ConfigRegisters)
_CMD_STREAM_VERSION = 1


def config_word(macs: int) -> int:
    """The CONFIG value Vela writes in the OPTIMIZER_CONFIG driver action for ``ethos-u85-<macs>``."""
    try:
        cfg = ACCELERATOR_CONFIGS[macs]
    except KeyError:
        raise ValueError(f"no Ethos-U85 configuration with {macs} MACs") from None
    return MMIO_BASE.CONFIG.pack(
        macs_per_cc=macs.bit_length() - 1, cmd_stream_version=_CMD_STREAM_VERSION,
        num_axi_sram=cfg.num_axi_sram_log2, num_axi_ext=cfg.num_axi_ext_log2,
        num_wd=cfg.cores.bit_length() - 1, product=_CONFIG_PRODUCT)


def id_word() -> int:
    """The ID value Vela writes in the OPTIMIZER_CONFIG driver action (the header's ID reset value)."""
    major, minor, patch = ARCH_VERSION
    return MMIO_BASE.ID.pack(arch_major_rev=major, arch_minor_rev=minor, arch_patch_rev=patch,
                             product_major=_ID_PRODUCT_MAJOR)


# ================================================================================ command fields
_REGION = (Field("region", 0, 3),)
_ADDR = dict(param_fields=(Field("addr_hi", 0, 8),), fields=(Field("addr_lo", 0, 32),))
# NPU_SET_IFM/IFM2/OFM_PRECISION: the type, format and storage fields are at the same bits in each
_TYPE = Field("activation_type", 0, 1, enum=ACTIVATION_TYPE)
_FORMAT = Field("activation_format", 6, 2, enum=ACTIVATION_FORMAT)
_STORAGE = Field("activation_storage", 14, 2, enum=ACTIVATION_STORAGE)
_IFM_PRECISION = (_TYPE, Field("activation_precision", 2, 2, enum=ACTIVATION_PRECISION), _FORMAT, _STORAGE)
_OFM_PRECISION = (
    _TYPE,
    Field("activation_precision", 1, 2, enum=ACTIVATION_PRECISION),
    _FORMAT,
    Field("scale_mode", 8, 1, enum=OFM_SCALE_MODE),
    Field("activation_reverse", 9, 2, enum=ACTIVATION_REVERSE),
    Field("activation_transpose", 11, 3, enum=ACTIVATION_TRANSPOSE),
    _STORAGE,
)
_ACC_FORMAT = (
    Field("acc_format", 0, 2, enum=ACC_FORMAT),
    Field("acc_input", 4, 2, enum=ACC_INPUT),
    Field("acc_output", 6, 1, enum=ACC_OUTPUT),
    Field("microblock", 8, 3, enum=MICROBLOCK),
)
_ACTIVATION = (
    Field("activation_function", 0, 5, enum=ACTIVATION_FUNCTION),
    Field("table", 5, 3),  # the LUT slot of a LUT_* function
    Field("activation_clip_range", 12, 1, enum=ACTIVATION_CLIP_RANGE),
)
_WEIGHT_FORMAT = (Field("weight_format", 0, 1, enum=WEIGHT_FORMAT),
                  Field("weight_sparsity", 4, 1, enum=WEIGHT_SPARSITY))
_DMA_SRC_REGION = (
    Field("region", 0, 3),
    Field("region_mode", 8, 1, enum=DMA_REGION_MODE),
    Field("stride_mode", 9, 2, enum=DMA_STRIDE_MODE),
    Field("idx_mode", 11, 1, enum=DMA_IDX_MODE),
)
_DMA_DST_REGION = (_DMA_SRC_REGION[0], _DMA_SRC_REGION[1], _DMA_SRC_REGION[3])
_BROADCAST = (Field("broadcast_mode", 0, 4, enum=BROADCAST_MODE),)
_RESIZE_STEP = dict(param_fields=(Field("one_step_int", 0, 4), Field("blk_step_int", 4, 11)),
                    fields=(Field("one_step_mod", 0, 11), Field("blk_step_mod", 16, 11)))


def _scale(round_mode_width, round_mode_enum):
    """NPU_SET_OFM/IFM/IFM2_SCALE: param shift, double-rounding shift and rounding mode, payload the scale."""
    return dict(param_fields=(Field("shift", 0, 6), Field("dbl_rnd", 6, 5),
                              Field("round_mode", 13, round_mode_width, enum=round_mode_enum)),
                fields=(Field("scale", 0, 31),))


# ================================================================================ the commands
_DEFS: list[CommandDef] = []


def _op(opcode, name, fields=(), **kw):
    _DEFS.append(CommandDef(code=opcode, name=name, kind="op", fields=tuple(fields), **kw))


def _r0(opcode, name, reg, *fields):
    _DEFS.append(CommandDef(code=opcode, name=name, kind="reg", reg=reg, fields=tuple(fields)))


def _v(name, width=16, signed=False):
    return Field(name, 0, width, signed=signed)


def _r1(opcode, name, reg, *, address=True, signed=False, param_fields=(), fields=()):
    _DEFS.append(CommandDef(code=PAYLOAD_FLAG | opcode, name=name, kind="reg", reg=reg, fields=tuple(fields),
                            param_fields=tuple(param_fields), address=address, signed_address=signed))


def _len(opcode, name, reg, width=32):
    """A weight or scale length: a payload of ``width`` bits and no high part."""
    _r1(opcode, name, reg, address=False, fields=(Field("length", 0, width),))


# the commands that are the U55's to the bit: opcode, TSU register and fields (hwdesc.ethosu)
_DEFS.extend(_u55.BY_NAME[n] for n in (
    "NPU_OP_STOP", "NPU_OP_IRQ", "NPU_OP_DEPTHWISE", "NPU_OP_DMA_START", "NPU_OP_PMU_MASK", "NPU_SET_IFM_PAD_TOP",
    "NPU_SET_IFM_PAD_LEFT", "NPU_SET_IFM_PAD_RIGHT", "NPU_SET_IFM_PAD_BOTTOM", "NPU_SET_IFM_UPSCALE",
    "NPU_SET_KERNEL_STRIDE"))

# CMD0 operations
_op(0x002, "NPU_OP_CONV", (Field("weights_ifm2", 0, 1),))  # 1: the weights are IFM2 (dynamic weights)
_op(0x005, "NPU_OP_POOL", (Field("pooling_mode", 0, 3, enum=POOLING_MODE),))
_op(0x006, "NPU_OP_ELEMENTWISE", (Field("elementwise_mode", 0, 6, enum=ELEMENTWISE_MODE),))
_op(0x007, "NPU_OP_RESIZE", (Field("resize_mode", 0, 2, enum=RESIZE_MODE),))
_op(0x011, "NPU_OP_DMA_WAIT", (Field("k", 0, 2),))
_op(0x012, "NPU_OP_KERNEL_WAIT", (Field("n", 0, 1),))
# CMD1 operation: a (conditional) jump to the byte offset in the payload
_op(PAYLOAD_FLAG | 0x100, "NPU_OP_BRANCH", (Field("branch_target", 0, 32),),
    param_fields=(Field("branch_cond", 0, 1, enum=BRANCH_COND),))

# CMD0 register writes
_r0(0x104, "NPU_SET_IFM_DEPTH_M1", 0x810, _v("depth_m1"))
_r0(0x105, "NPU_SET_IFM_PRECISION", 0x814, *_IFM_PRECISION)
_r0(0x108, "NPU_SET_IFM_BROADCAST", 0x820, *_BROADCAST)
_r0(0x111, "NPU_SET_OFM_WIDTH_M1", 0x844, _v("width_m1"))
_r0(0x112, "NPU_SET_OFM_HEIGHT_M1", 0x848, _v("height_m1"))
_r0(0x113, "NPU_SET_OFM_DEPTH_M1", 0x84C, _v("depth_m1"))
_r0(0x114, "NPU_SET_OFM_PRECISION", 0x850, *_OFM_PRECISION)
_r0(0x115, "NPU_SET_OFM_BLK_WIDTH_M1", 0x854, _v("width_m1", 7))
_r0(0x116, "NPU_SET_OFM_BLK_HEIGHT_M1", 0x858, _v("height_m1", 7))
_r0(0x117, "NPU_SET_OFM_BLK_DEPTH_M1", 0x85C, _v("depth_m1", 10))
_r0(0x120, "NPU_SET_KERNEL_WIDTH_M1", 0x880, _v("width_m1"))
_r0(0x121, "NPU_SET_KERNEL_HEIGHT_M1", 0x884, _v("height_m1"))
_r0(0x124, "NPU_SET_ACC_FORMAT", 0x890, *_ACC_FORMAT)
_r0(0x125, "NPU_SET_ACTIVATION", 0x894, *_ACTIVATION)
_r0(0x126, "NPU_SET_ACTIVATION_MIN", 0x898, _v("clip_boundary", signed=True))
_r0(0x127, "NPU_SET_ACTIVATION_MAX", 0x89C, _v("clip_boundary", signed=True))
_r0(0x128, "NPU_SET_WEIGHT_REGION", 0x8A0, *_REGION)
_r0(0x129, "NPU_SET_SCALE_REGION", 0x8A4, *_REGION)
_r0(0x12A, "NPU_SET_RESIZE_X_SCALE_N_M1", 0x8A8, _v("resize_x_scale_n_m1", 11))
_r0(0x12B, "NPU_SET_RESIZE_Y_SCALE_N_M1", 0x8AC, _v("resize_y_scale_n_m1", 11))
_r0(0x12C, "NPU_SET_RESIZE_X_OFFSET", 0x8B0, _v("resize_x_offset", 12, signed=True))
_r0(0x12D, "NPU_SET_RESIZE_Y_OFFSET", 0x8B4, _v("resize_y_offset", 12, signed=True))
_r0(0x12E, "NPU_SET_WEIGHT_FORMAT", 0x8B8, *_WEIGHT_FORMAT)
_r0(0x12F, "NPU_SET_BLOCKDEP", 0x8BC, _v("blockdep", 3))
_r0(0x130, "NPU_SET_DMA0_SRC_REGION", 0x8C0, *_DMA_SRC_REGION)
_r0(0x131, "NPU_SET_DMA0_DST_REGION", 0x8C4, *_DMA_DST_REGION)
_r0(0x132, "NPU_SET_DMA0_SIZE0", 0x8C8, _v("size"))
_r0(0x133, "NPU_SET_DMA0_SIZE1", 0x8CC, _v("size"))
_r0(0x134, "NPU_SET_DMA0_IDX_REGION", 0x8D0, *_REGION)
_r0(0x180, "NPU_SET_IFM2_BROADCAST", 0x900, *_BROADCAST)
_r0(0x185, "NPU_SET_IFM2_PRECISION", 0x914, *_IFM_PRECISION)
for _opcode, _name, _reg, _field in tile_commands():  # the feature maps' zero points, tiles and regions
    _r0(_opcode, _name, _reg, *(_REGION if _field == "region" else (_v(_field),)))

# CMD1 register writes; each TSU register is 64 bits (X at reg, X_HI at reg + 4)
for _fm, _op1, _reg in (("IFM", 0x000, 0xA00), ("OFM", 0x010, 0xA40), ("IFM2", 0x080, 0xB00)):
    for _i in range(4):
        _r1(_op1 + _i, f"NPU_SET_{_fm}_BASE{_i}", _reg + 8 * _i, **_ADDR)
    for _i, _axis in enumerate("XYC"):
        _r1(_op1 + 4 + _i, f"NPU_SET_{_fm}_STRIDE_{_axis}", _reg + 0x20 + 8 * _i, signed=True, **_ADDR)
_r1(0x020, "NPU_SET_WEIGHT_BASE", 0xA80, **_ADDR)
_len(0x021, "NPU_SET_WEIGHT_LENGTH", 0xA88)
_r1(0x022, "NPU_SET_SCALE_BASE", 0xA90, **_ADDR)
_len(0x023, "NPU_SET_SCALE_LENGTH", 0xA98, 20)
_r1(0x024, "NPU_SET_OFM_SCALE", 0xAA0, address=False, **_scale(3, ROUND_MODE_OFM))
_r1(0x025, "NPU_SET_IFM_SCALE", 0xAA8, address=False, **_scale(1, ROUND_MODE_IFM))
_r1(0x026, "NPU_SET_IFM2_SCALE", 0xAB0, address=False, **_scale(1, ROUND_MODE_IFM))
_r1(0x027, "NPU_SET_OP_SCALAR", 0xAB8, address=False, fields=(Field("scalar", 0, 32, signed=True),))
_r1(0x030, "NPU_SET_DMA0_SRC", 0xAC0, **_ADDR)
_r1(0x031, "NPU_SET_DMA0_DST", 0xAC8, **_ADDR)
_r1(0x032, "NPU_SET_DMA0_LEN", 0xAD0, **_ADDR)
_r1(0x033, "NPU_SET_DMA0_SRC_STRIDE0", 0xAD8, signed=True, **_ADDR)
_r1(0x034, "NPU_SET_DMA0_SRC_STRIDE1", 0xAE0, signed=True, **_ADDR)
_r1(0x035, "NPU_SET_DMA0_DST_STRIDE0", 0xAE8, signed=True, **_ADDR)
_r1(0x036, "NPU_SET_DMA0_DST_STRIDE1", 0xAF0, signed=True, **_ADDR)
_r1(0x037, "NPU_SET_DMA0_IDX", 0xAF8, **_ADDR)
_r1(0x038, "NPU_SET_DMA0_IDX_MAX", 0xBC0, address=False, fields=(Field("idx_max", 0, 31),))
_r1(0x039, "NPU_SET_DMA0_IDX_SKIP1", 0xBC8, signed=True, **_ADDR)
for _i in (1, 2, 3):
    _r1(0x090 + 2 * (_i - 1), f"NPU_SET_WEIGHT{_i}_BASE", 0xB40 + 0x10 * (_i - 1), **_ADDR)
    _len(0x091 + 2 * (_i - 1), f"NPU_SET_WEIGHT{_i}_LENGTH", 0xB48 + 0x10 * (_i - 1))
_r1(0x096, "NPU_SET_RESIZE_X", 0xB70, address=False, **_RESIZE_STEP)  # the header's RESIZE_X_STEP register
_r1(0x097, "NPU_SET_RESIZE_Y", 0xB78, address=False, **_RESIZE_STEP)

#: code (low half-word of the first command word) -> definition
COMMANDS: dict[int, CommandDef] = {d.code: d for d in _DEFS}
#: name -> definition
BY_NAME: dict[str, CommandDef] = {d.name: d for d in _DEFS}

assert len(COMMANDS) == len(_DEFS) and len(BY_NAME) == len(_DEFS)

CODE = CommandCodes(BY_NAME)

# The operation codes by name
(NPU_OP_STOP, NPU_OP_IRQ, NPU_OP_CONV, NPU_OP_DEPTHWISE, NPU_OP_POOL, NPU_OP_ELEMENTWISE, NPU_OP_RESIZE,
 NPU_OP_DMA_START, NPU_OP_DMA_WAIT, NPU_OP_KERNEL_WAIT, NPU_OP_PMU_MASK, NPU_OP_BRANCH) = (BY_NAME[n].code for n in (
    "NPU_OP_STOP", "NPU_OP_IRQ", "NPU_OP_CONV", "NPU_OP_DEPTHWISE", "NPU_OP_POOL", "NPU_OP_ELEMENTWISE",
    "NPU_OP_RESIZE", "NPU_OP_DMA_START", "NPU_OP_DMA_WAIT", "NPU_OP_KERNEL_WAIT", "NPU_OP_PMU_MASK",
    "NPU_OP_BRANCH"))
