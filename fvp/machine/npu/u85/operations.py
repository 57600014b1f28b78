"""Ethos-U85 operation descriptors: the U85 register state at an ``NPU_OP_*`` as an :class:`NpuOperation`.

The U85 command set (``hwdesc/ethosu85.py``) keeps the U55's feature-map registers (tiles, strides, padding,
kernel, block size) but moves the arithmetic controls: the rounding mode and scale of each stage are in
``NPU_SET_IFM_SCALE`` / ``NPU_SET_IFM2_SCALE`` / ``NPU_SET_OFM_SCALE`` (param: shift, dbl_rnd, round_mode;
payload: a 31-bit multiplier), the precision registers carry a storage (tiles, chaining buffer, scalar/none)
and, for the OFM, a transpose and a reverse; each elementwise input has its own broadcast mode; the LUT
activation names its index and result types. This module translates that into the same
:class:`~fvp.machine.npu.descriptors.NpuOperation` the U55 decoder builds, so one set of engines computes both
(the translation of each code is below, with the reason).

Facts from Vela 5.1's Regor U85 backend (``ethos_u85_register_cs_generator.cpp``: which stage each register
drives, ``GetOfmRoundingMode``, ``GenerateActivation``'s LUT slots and clip range, ``GenerateInputBroadcast``).

DMA: 1-D, 2-D and 3-D copies (SIZE0 rows, SIZE1 planes, each side with its own strides), and the 2-D and 3-D
gather and scatter (an int32 index per row replaces the row counter on the indexed side; in 3-D, IDX_SKIP1 bytes of
the index table are skipped after each plane; an index above IDX_MAX stops the stream) [inferred from Regor's
GenerateDMA and its Gather/Scatter lowering; the 2-D gather checked by a held-out embedding program, the 3-D one
by gather and index_select programs, ``tests/data/u85``].

NPU_OP_BRANCH: the condition (param) and the target (payload, a byte offset in the stream); ``execute.py`` moves
the program counter.

Simplified / refused (``NpuFault("unsupported")`` naming the feature): elementwise DIV, accumulator input KEEP (and IFM2 outside the null pool) and disabled accumulator
output, depthwise weights in the fast or sparse format, the OFM scale's double-round shift (no compiler writes it; the IFM and
IFM2 scales' are modelled: Regor's TFLite ADD/SUB).

LUT_S16_S32 (Regor's lowering of TOSA's int16 -> int32 TABLE: the (base, slope) pairs of the 513-entry table)
keeps the interpolation's 7 fraction bits, as the TOSA specification's TABLE defines its result
(``Activation.fraction_kept``).

LUT_TANH / LUT_SIGMOID (Vela's int16 TANH/LOGISTIC: a 2 KiB table at slot 0, Regor's
``ConvertTanhSigmoidToLUT16``) become the U55's TANH/SIGMOID with ``lut_slot`` naming the table's slot; the
engines compute both the same way, the U85 from its table (``engines/reference.py``, built-in TANH/SIGMOID).
"""

from __future__ import annotations

from ....errors import NpuFault
from .. import registers
from ..descriptors import (UNARY_ELEMENTWISE_MODES, Activation, ActivationFunction, AddressRange, Broadcast,
                           ClipRange, Dma, FeatureMap, IfmScaleMode, NpuOperation, Resize, RoundMode, Scale)

#: the round mode of each U85 OFM / IFM round mode the engines model: DOUBLE_SYMMETRIC is Regor's DBL (TOSA
#: double rounding), TRUNCATE_TO_ZERO its TRUNCATE
_OFM_ROUND = {"DOUBLE_SYMMETRIC": RoundMode.DBL, "NATURAL": RoundMode.NATURAL, "TRUNCATE_TO_ZERO": RoundMode.TRUNCATE,
              "TRUNCATE_TO_LOWER": RoundMode.TRUNCATE_TO_LOWER, "SYMMETRIC": RoundMode.SYMMETRIC,
              "DOUBLE_ASYMMETRIC": RoundMode.DOUBLE_ASYMMETRIC}
_IFM_ROUND = {"DOUBLE_SYMMETRIC": RoundMode.DBL, "NATURAL": RoundMode.NATURAL}

#: LUT activation -> the clip range of its index type, the one the engines' LUT lookup is indexed in
_LUT_INDEX = {"LUT_U8_U8": ClipRange.FORCE_UINT8, "LUT_S8_S8": ClipRange.FORCE_INT8, "LUT_S8_S16": ClipRange.FORCE_INT8,
              "LUT_S8_S32": ClipRange.FORCE_INT8, "LUT_S16_S16": ClipRange.FORCE_INT16,
              "LUT_S16_S32": ClipRange.FORCE_INT16}
#: bytes of one table of each LUT kind (GenerateActivation: 256 per 8-bit entry table, 2 KiB for 16-bit index)
_LUT_BYTES = {"LUT_U8_U8": 256, "LUT_S8_S8": 256, "LUT_S8_S16": 512, "LUT_S8_S32": 1024, "LUT_S16_S16": 2048,
              "LUT_S16_S32": 2048, "LUT_TANH": 2048, "LUT_SIGMOID": 2048}
#: the U85's table-driven TANH/SIGMOID -> the function the engines compute them by (from the table at its slot)
_LUT_FUNCTION = {"LUT_TANH": ActivationFunction.TANH, "LUT_SIGMOID": ActivationFunction.SIGMOID}
#: the DMA's stride mode (hwdesc.ethosu85 DMA_STRIDE_MODE) -> the descriptor's (0: 1-D, 1: 2-D, 2: 3-D)
_DMA_MODE = {"D1": 0, "D2": 1, "D3": 2}

_NO_CLIP = 1 << 62

_OP_KINDS = {"NPU_OP_STOP": "STOP", "NPU_OP_IRQ": "IRQ", "NPU_OP_CONV": "CONV", "NPU_OP_DEPTHWISE": "DEPTHWISE",
             "NPU_OP_POOL": "POOL", "NPU_OP_ELEMENTWISE": "ELEMENTWISE", "NPU_OP_RESIZE": "RESIZE",
             "NPU_OP_DMA_START": "DMA", "NPU_OP_DMA_WAIT": "DMA_WAIT", "NPU_OP_KERNEL_WAIT": "KERNEL_WAIT",
             "NPU_OP_PMU_MASK": "PMU_MASK", "NPU_OP_BRANCH": "BRANCH"}


def _unsupported(what: str, offset: int):
    return NpuFault("unsupported", f"{what} is not modelled", offset=offset)


def _precision(state, reg: str, offset: int):
    """(bits, signed, format, storage) of an IFM/IFM2/OFM precision register."""
    signed = bool(state.field(reg, "activation_type"))
    bits = 8 << state.field(reg, "activation_precision")
    fmt = state.code(reg, "activation_format", offset)
    storage = state.code(reg, "activation_storage", offset)
    return bits, signed, fmt, storage


def _zero_point(state, reg: str, signed: bool) -> int:
    return state.s16(reg) if signed else state.u16(reg)


def _fm(state, prefix: str, name: str, height: int, width: int, depth: int, offset: int,
        precision=None) -> FeatureMap:
    p = "NPU_SET_" + prefix + "_"
    bits, signed, fmt, storage = precision or _precision(state, p + "PRECISION", offset)
    if bits == 64:
        raise _unsupported(f"64-bit {name}", offset)
    transpose, reverse = "HWC", "NONE"
    if prefix == "OFM":
        transpose = state.code(p + "PRECISION", "activation_transpose", offset)
        reverse = state.code(p + "PRECISION", "activation_reverse", offset)
    if storage == "TILE3X1":
        raise _unsupported(f"{name} storage TILE3X1", offset)
    return registers.feature_map(state, prefix, name, height, width, depth, bits=bits, signed=signed, format=fmt,
                                 storage=storage, transpose=transpose, reverse=reverse)


def _scale(state, reg: str, rounding: dict, offset: int) -> tuple:
    """(Scale, round mode) of an IFM/IFM2/OFM scale register. The IFM and IFM2 scales' double-round shift
    (``dbl_rnd``: Regor's TFLite ADD/SUB, 20 for 8-bit and 15 for 16-bit inputs, whose scale has TFLite's left
    shift folded in) is :attr:`Scale.double_round`; the OFM's, which no compiler writes, is refused."""
    mode = state.code(reg, "round_mode", offset)
    if mode not in rounding:
        raise _unsupported(f"{reg} round mode {mode}", offset)
    dbl_rnd = state.field(reg, "dbl_rnd")
    if dbl_rnd and reg == "NPU_SET_OFM_SCALE":
        raise _unsupported(f"{reg} double-round shift {dbl_rnd}", offset)
    return Scale(state.payload(reg) & 0x7FFFFFFF, state.field(reg, "shift"), dbl_rnd), rounding[mode]


def _activation(state, ofm: FeatureMap, offset: int) -> Activation:
    """ACTIVATION as the engines read it: a LUT becomes TABLE_<slot> (slot = 256-byte unit of the LUT RAM the
    table starts at) with the clip range of its index type; the 16-bit clip boundaries are signed unless the
    clipped type (the LUT index type, else the OFM type) is unsigned; clip range NONE disables the clamp."""
    fn = state.code("NPU_SET_ACTIVATION", "activation_function", offset)
    table = state.field("NPU_SET_ACTIVATION", "table")
    no_clip = state.code("NPU_SET_ACTIVATION", "activation_clip_range", offset) == "NONE"
    lut_slot = None
    if fn == "LUT_NONE":
        function, clip_range, unsigned = ActivationFunction.NONE, ClipRange.OFM_PRECISION, not ofm.signed
    elif fn in _LUT_INDEX:
        slot = table * _LUT_BYTES[fn] // 256
        if slot > 7:
            raise NpuFault("cmd_parse_error", f"{fn} table {table} lies outside the 2 KiB LUT RAM", offset=offset)
        function, clip_range, unsigned = ActivationFunction.table(slot), _LUT_INDEX[fn], fn == "LUT_U8_U8"
    elif fn in _LUT_FUNCTION:
        slot = table * _LUT_BYTES[fn] // 256
        if slot + _LUT_BYTES[fn] // 256 > 8:
            raise NpuFault("cmd_parse_error", f"{fn} table {table} lies outside the 2 KiB LUT RAM", offset=offset)
        function, clip_range, unsigned = _LUT_FUNCTION[fn], ClipRange.OFM_PRECISION, not ofm.signed
        lut_slot = slot
    else:
        raise _unsupported(f"activation {fn}", offset)
    if no_clip:
        lo, hi = -_NO_CLIP, _NO_CLIP
    elif unsigned:
        lo, hi = state.u16("NPU_SET_ACTIVATION_MIN"), state.u16("NPU_SET_ACTIVATION_MAX")
    else:
        lo, hi = state.s16("NPU_SET_ACTIVATION_MIN"), state.s16("NPU_SET_ACTIVATION_MAX")
    return Activation(function=function, clip_range=clip_range, min=lo, max=hi, lut_slot=lut_slot,
                      fraction_kept=fn == "LUT_S16_S32")


def _broadcast_dims(state, reg: str, offset: int) -> str:
    return state.code(reg, "broadcast_mode", offset)


def _dma(state, offset: int) -> Dma:
    def src(fname):
        return state.field("NPU_SET_DMA0_SRC_REGION", fname)

    def dst(fname):
        return state.field("NPU_SET_DMA0_DST_REGION", fname)

    mode = _DMA_MODE[state.code("NPU_SET_DMA0_SRC_REGION", "stride_mode", offset)]
    indexed = "src" if src("idx_mode") else "dst" if dst("idx_mode") else ""
    if src("idx_mode") and dst("idx_mode"):
        raise NpuFault("cmd_parse_error", "DMA indexed at both its source and its destination", offset=offset)
    return Dma(src_region=src("region"), src_internal=bool(src("region_mode")),
               src_address=state.address("NPU_SET_DMA0_SRC"), dst_region=dst("region"),
               dst_internal=bool(dst("region_mode")), dst_address=state.address("NPU_SET_DMA0_DST"),
               length=state.address("NPU_SET_DMA0_LEN"), src_stride_mode=mode, dst_stride_mode=mode,
               size0=state.u16("NPU_SET_DMA0_SIZE0"), size1=state.u16("NPU_SET_DMA0_SIZE1"), skip0=0, skip1=0,
               src_stride0=state.signed_address("NPU_SET_DMA0_SRC_STRIDE0"),
               src_stride1=state.signed_address("NPU_SET_DMA0_SRC_STRIDE1"),
               dst_stride0=state.signed_address("NPU_SET_DMA0_DST_STRIDE0"),
               dst_stride1=state.signed_address("NPU_SET_DMA0_DST_STRIDE1"), indexed=indexed,
               idx_region=state.field("NPU_SET_DMA0_IDX_REGION", "region"),
               idx_address=state.address("NPU_SET_DMA0_IDX"),
               idx_max=state.field("NPU_SET_DMA0_IDX_MAX", "idx_max"),
               idx_skip1=state.signed_address("NPU_SET_DMA0_IDX_SKIP1") if indexed and mode == 2 else 0)


def _resize(state, mode: str, offset: int) -> Resize:
    axes = {}
    for axis in ("Y", "X"):
        n = state.field(f"NPU_SET_RESIZE_{axis}_SCALE_N_M1", f"resize_{axis.lower()}_scale_n_m1") + 1
        d = state.field(f"NPU_SET_RESIZE_{axis}", "one_step_int") * n + state.field(f"NPU_SET_RESIZE_{axis}",
                                                                                    "one_step_mod")
        if d == 0:
            raise NpuFault("cmd_parse_error", f"RESIZE_{axis} has a step of 0", offset=offset)
        axes[axis] = (n, d, state.field(f"NPU_SET_RESIZE_{axis}_OFFSET", f"resize_{axis.lower()}_offset"))
    return Resize(mode, *axes["Y"], *axes["X"])


def _ublock(state, arch, offset: int) -> tuple:
    """The OFM micro-block ACC_FORMAT names, with the depth of the arch's micro-block of that shape."""
    name = state.code("NPU_SET_ACC_FORMAT", "microblock", offset)
    h, w = int(name[1]), int(name[3])
    for ub in arch.microarch.ofm_ublocks:
        if ub[:2] == (h, w):
            return ub
    return (h, w, arch.ofm_ublock[2])


def build_operation(state, cmd, arch) -> NpuOperation:
    """Decode the U85 operation ``cmd`` (``command_stream.Command``) against the register state
    (``command_stream.RegisterState``)."""
    kind = _OP_KINDS.get(cmd.name)
    off = cmd.offset
    if kind is None:
        raise ValueError(f"{cmd.name} is not an operation")
    if kind in ("STOP", "IRQ", "DMA_WAIT", "KERNEL_WAIT", "PMU_MASK"):
        fields = cmd.definition.fields
        return NpuOperation(kind=kind, offset=off, param=cmd.param,
                            count=fields[0].get(cmd.param) if fields else 0)
    if kind == "BRANCH":  # the condition in param[0], the target (a byte offset in the stream) in the payload
        return NpuOperation(kind=kind, offset=off, param=cmd.param, sub_op=cmd.code_name("branch_cond"),
                            branch_target=cmd.payload)
    if kind == "DMA":
        return NpuOperation(kind=kind, offset=off, param=cmd.param, dma=_dma(state, off))

    sub = None
    if kind == "POOL":
        sub = cmd.code_name("pooling_mode")
        if sub not in ("MAX", "AVERAGE", "REDUCE_SUM", "SUM", "MIN", "NONE"):
            raise _unsupported(f"pooling mode {sub}", off)
    elif kind == "ELEMENTWISE":
        sub = cmd.code_name("elementwise_mode")
        if sub == "DIV":
            raise _unsupported(f"elementwise mode {sub}", off)
    elif kind == "RESIZE":
        sub = cmd.code_name("resize_mode")
    dynamic = kind == "CONV" and bool(cmd.definition.fields[0].get(cmd.param))  # NPU_OP_CONV weights_ifm2

    acc_input = state.code("NPU_SET_ACC_FORMAT", "acc_input", off)
    acc_output = state.code("NPU_SET_ACC_FORMAT", "acc_output", off)
    # pooling mode NONE with the accumulators loaded from IFM2 is Regor's "null pool": the output stage applied
    # to a 32-bit IFM2 (a rescale of a 32-bit tensor; IFM1 is a dummy 8-bit view of it)
    null_pool = kind == "POOL" and sub == "NONE"
    if null_pool != (acc_input == "IFM2") or (acc_input not in ("RESET", "IFM2")):
        raise _unsupported(f"accumulator input {acc_input}" + (" with pooling mode NONE" if null_pool else ""), off)
    if acc_output != "ENABLE":
        raise _unsupported(f"accumulator output {acc_output}", off)
    acc_format = state.code("NPU_SET_ACC_FORMAT", "acc_format", off)

    oh, ow, od = (state.m1("NPU_SET_OFM_HEIGHT_M1"), state.m1("NPU_SET_OFM_WIDTH_M1"),
                  state.m1("NPU_SET_OFM_DEPTH_M1"))
    ofm = _fm(state, "OFM", "ofm", oh, ow, od, off)
    if ofm.storage == "NONE":
        raise _unsupported("an operation without OFM output", off)
    ofm_scale, ofm_round = _scale(state, "NPU_SET_OFM_SCALE", _OFM_ROUND, off)

    kernel = ifm2 = broadcast = ifm2_scale = ifm_scalar = resize = None
    ifm_scale_mode = IfmScaleMode.OPA_OPB_16
    ifm_round = ifm2_round = RoundMode.DBL
    opa_scale = Scale(1, 0)
    average_hw = None
    if kind == "ELEMENTWISE":
        scalar = state.payload("NPU_SET_OP_SCALAR")
        scalar = scalar - (1 << 32) if scalar >> 31 else scalar
        prec1 = _precision(state, "NPU_SET_IFM_PRECISION", off)
        b1 = _broadcast_dims(state, "NPU_SET_IFM_BROADCAST", off)
        if prec1[3] == "NONE" or b1 == "SCALAR":
            ifm_scalar = scalar
            b1 = "HWC"
        ifm = _fm(state, "IFM", "ifm", 1 if "H" in b1 else oh, 1 if "W" in b1 else ow, 1 if "C" in b1 else od,
                  off, prec1)
        opa_scale, ifm_round = _scale(state, "NPU_SET_IFM_SCALE", _IFM_ROUND, off)
        ifm_scale_mode = IfmScaleMode.PER_OPERAND
        if sub in UNARY_ELEMENTWISE_MODES:
            broadcast = Broadcast(h=False, w=False, c=False, reversed_operands=False, scalar=False, scalar_value=0)
            if sub == "LRELU":  # the negative side's scale (alpha) is IFM2_SCALE
                ifm2_scale, ifm2_round = _scale(state, "NPU_SET_IFM2_SCALE", _IFM_ROUND, off)
        else:
            prec2 = _precision(state, "NPU_SET_IFM2_PRECISION", off)
            b2 = _broadcast_dims(state, "NPU_SET_IFM2_BROADCAST", off)
            ifm2_scale, ifm2_round = _scale(state, "NPU_SET_IFM2_SCALE", _IFM_ROUND, off)
            is_scalar = prec2[3] == "NONE" or b2 == "SCALAR"
            if is_scalar:
                zp2 = _zero_point(state, "NPU_SET_IFM2_ZERO_POINT", prec2[1])
                broadcast = Broadcast(h=True, w=True, c=True, reversed_operands=False, scalar=True,
                                      scalar_value=scalar, scalar_zero_point=zp2)
            else:
                broadcast = Broadcast(h="H" in b2, w="W" in b2, c="C" in b2, reversed_operands=False, scalar=False,
                                      scalar_value=0)
                ifm2 = _fm(state, "IFM2", "ifm2", 1 if broadcast.h else oh, 1 if broadcast.w else ow,
                           1 if broadcast.c else od, off, prec2)
    elif kind == "RESIZE":
        resize = _resize(state, sub, off)
        # KERNEL_HEIGHT/WIDTH_M1 give the IFM area the operation reads (GenerateResizeOp)
        ifm = _fm(state, "IFM", "ifm", state.m1("NPU_SET_KERNEL_HEIGHT_M1"), state.m1("NPU_SET_KERNEL_WIDTH_M1"), od,
                  off)
    else:
        kernel = registers.kernel(state, off)
        ih = (oh - 1) * kernel.stride_y + kernel.dilated_height - kernel.pad_top - kernel.pad_bottom
        iw = (ow - 1) * kernel.stride_x + kernel.dilated_width - kernel.pad_left - kernel.pad_right
        idepth = state.m1("NPU_SET_IFM_DEPTH_M1") if kind == "CONV" or sub == "REDUCE_SUM" else od
        ifm = _fm(state, "IFM", "ifm", max(ih, 0), max(iw, 0), idepth, off)
        if null_pool:
            if kernel.elements != 1 or kernel.stride_x != 1 or kernel.stride_y != 1:
                raise _unsupported("pooling mode NONE with a kernel larger than 1x1", off)
            ifm = _fm(state, "IFM2", "ifm2", oh, ow, od, off)
        if ifm.storage == "NONE":
            raise _unsupported(f"{kind} without an IFM", off)
        if kernel.upscale != "NONE":
            from dataclasses import replace
            ifm = replace(ifm, upscale=kernel.upscale)
        if sub == "AVERAGE":
            average_hw = True  # the U85 AVERAGE mode divides by the window's valid element count
        if dynamic:
            # weights from IFM2 (Regor's MatMul: IFM2 holds B transposed, row y of the OFM takes the weights
            # W[n, k] = IFM2[y, n, k], minus IFM2's zero point); 1x1 kernel, global scale, no bias
            if (kernel.elements != 1 or kernel.stride_x != 1 or kernel.stride_y != 1 or kernel.upscale != "NONE"
                    or kernel.pad_top or kernel.pad_left or kernel.pad_bottom or kernel.pad_right):
                raise _unsupported("convolution with weights from IFM2 other than 1x1, stride 1, unpadded", off)
            ifm2 = _fm(state, "IFM2", "ifm2", oh, od, idepth, off)

    weights = scales = ()
    weight_format = "SWD"
    sparse = False
    if kind in ("CONV", "DEPTHWISE") and not dynamic:
        weight_format = state.code("NPU_SET_WEIGHT_FORMAT", "weight_format", off)
        sparse = bool(state.field("NPU_SET_WEIGHT_FORMAT", "weight_sparsity"))
        if kind == "DEPTHWISE" and (sparse or weight_format != "SWD"):
            raise _unsupported(f"depthwise convolution with {'2:4 sparse' if sparse else weight_format} weights "
                               f"(Vela encodes depthwise weights in the standard format only)", off)
        wr = state.field("NPU_SET_WEIGHT_REGION", "region")
        names = ("WEIGHT", "WEIGHT1", "WEIGHT2", "WEIGHT3")[:1 if weight_format == "FWD" else arch.cores]
        weights = tuple(AddressRange(wr, state.address(f"NPU_SET_{n}_BASE"), state.address(f"NPU_SET_{n}_LENGTH"))
                        for n in names)
    scale_mode = state.code("NPU_SET_OFM_PRECISION", "scale_mode", off)
    if (kind in ("CONV", "DEPTHWISE") and not dynamic) or (kind == "POOL" and scale_mode == "PER_CHANNEL"):
        # a pool in PER_CHANNEL mode (Regor: a pool with scales, e.g. a per-channel rescale of a 32-bit tensor)
        # takes bias and scale per channel from the scale stream as a convolution does
        scales = (AddressRange(state.field("NPU_SET_SCALE_REGION", "region"), state.address("NPU_SET_SCALE_BASE"),
                               state.address("NPU_SET_SCALE_LENGTH")),)

    # a MUL of 32-bit operands takes only OFM_SCALE's shift (Regor's U85 constraints: "Mul with 32-bit IFM supports
    # shift-only"; its int8 softmax writes its Q31 products' scale 1/2 as (2**30, 31) for both products, which
    # is right only with the multiplier left out: TFLite Micro's softmax on the real models, docs/tflm.md)
    ofm_scaling = "MULTIPLIER_AND_SHIFT"
    if kind == "ELEMENTWISE" and sub == "MUL" and ifm.bits == 32:
        ofm_scaling = "SHIFT_ONLY"

    return NpuOperation(
        kind=kind, offset=off, param=cmd.param, sub_op=sub, ifm=ifm, ifm2=ifm2, ofm=ofm, kernel=kernel,
        ofm_block=(state.m1("NPU_SET_OFM_BLK_HEIGHT_M1"), state.m1("NPU_SET_OFM_BLK_WIDTH_M1"),
                   state.m1("NPU_SET_OFM_BLK_DEPTH_M1")),
        acc_format=acc_format, blockdep=state.field("NPU_SET_BLOCKDEP", "blockdep"),
        weights=weights, scales=scales,
        ofm_scale_mode=scale_mode,
        ofm_round_mode=ofm_round, ifm_scale_mode=ifm_scale_mode, ifm_round_mode=ifm_round,
        ofm_scale=ofm_scale, opa_scale=opa_scale, ifm2_scale=ifm2_scale, ifm2_round_mode=ifm2_round,
        ifm_scalar=ifm_scalar, activation=_activation(state, ofm, off), broadcast=broadcast, resize=resize,
        ofm_ublock=_ublock(state, arch, off), weight_format=weight_format, sparse_weights=sparse, average_hw=average_hw,
        weights_split="TRAVERSAL", ofm_scaling=ofm_scaling)
