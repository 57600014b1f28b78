"""Ethos-U55/U65 operations: the register state at an ``NPU_OP_*`` as an :class:`NpuOperation` (research notes
ethosu.md section 1).

:func:`build_operation` turns the TSU register state (``command_stream.RegisterState``) at an ``NPU_OP_*``
command into a frozen :class:`~fvp.machine.npu.descriptors.NpuOperation`: everything the functional engines and
the timing model need, already decoded (shapes, strides, tiles, types, kernel, scales, activation, DMA ...). Every
enumerated field is translated into its named code here (``RegisterState.code``, ``hwdesc.ethosu``'s names, which
the descriptors' codes share); a reserved value (an IFM_PRECISION scale mode or round mode 3, an ACTIVATION
function between the table's codes, ...) is an invalid command stream, an ``NpuFault`` naming the command, the
field and the value.
"""

from __future__ import annotations

from dataclasses import replace

from hwdesc import ethosu as R

from .. import registers
from ..descriptors import (UNARY_ELEMENTWISE_MODES, Activation, ActivationFunction, AddressRange, Broadcast,
                           ClipRange, Dma, FeatureMap, IfmScaleMode, NpuOperation, RoundMode, Scale)
from .variants import is_u65


_OP_KINDS = {
    R.NPU_OP_STOP: "STOP", R.NPU_OP_IRQ: "IRQ", R.NPU_OP_CONV: "CONV", R.NPU_OP_DEPTHWISE: "DEPTHWISE",
    R.NPU_OP_POOL: "POOL", R.NPU_OP_ELEMENTWISE: "ELEMENTWISE", R.NPU_OP_DMA_START: "DMA",
    R.NPU_OP_DMA_WAIT: "DMA_WAIT", R.NPU_OP_KERNEL_WAIT: "KERNEL_WAIT", R.NPU_OP_PMU_MASK: "PMU_MASK",
}
#: bits per element of each PRECISION code
_BITS = {name: R.PRECISION_BITS[code] for code, name in R.PRECISION.items()}
#: DMA_STRIDE_MODE -> the descriptor's stride mode (0: 1-D, 1: 2-D, 2: 3-D)
_DMA_MODE = {"D1": 0, "D2": 1, "D3": 2}


def _fm(state, prefix: str, name: str, height: int, width: int, depth: int, *, ofm: bool = False,
        offset: int = 0) -> FeatureMap:
    p = "NPU_SET_" + prefix + "_"
    return registers.feature_map(state, prefix, name, height, width, depth,
                                 signed=bool(state.field(p + "PRECISION", "type")),
                                 bits=_BITS[state.code(p + "PRECISION", "precision", offset)],
                                 format=state.code(p + "PRECISION", "format", offset))


def _dma(state, offset: int) -> Dma:
    def src(fname):
        return state.field("NPU_SET_DMA0_SRC_REGION", fname)

    def dst(fname):
        return state.field("NPU_SET_DMA0_DST_REGION", fname)

    u65 = is_u65(state.arch)
    return Dma(
        src_region=src("region"), src_internal=bool(src("region_mode")), src_address=state.address("NPU_SET_DMA0_SRC"),
        dst_region=dst("region"), dst_internal=bool(dst("region_mode")), dst_address=state.address("NPU_SET_DMA0_DST"),
        length=state.address("NPU_SET_DMA0_LEN"),
        src_stride_mode=_DMA_MODE[state.code("NPU_SET_DMA0_SRC_REGION", "stride_mode", offset)],
        dst_stride_mode=_DMA_MODE[state.code("NPU_SET_DMA0_DST_REGION", "stride_mode", offset)],
        size0=state.u16("NPU_SET_DMA0_SIZE0"), size1=state.u16("NPU_SET_DMA0_SIZE1"),
        skip0=state.signed_address("NPU_SET_DMA0_SKIP0") if u65 else 0,
        skip1=state.signed_address("NPU_SET_DMA0_SKIP1") if u65 else 0,
    )


def build_operation(state, cmd, arch) -> NpuOperation:
    """Decode the U55/U65 operation ``cmd`` (an ``NPU_OP_*`` command, ``command_stream.Command``) against the
    register state (``command_stream.RegisterState``)."""
    kind = _OP_KINDS.get(cmd.code)
    if kind is None:
        raise ValueError(f"{cmd.name} is not an operation")
    off = cmd.offset
    if kind in ("STOP", "IRQ", "DMA_WAIT", "KERNEL_WAIT", "PMU_MASK"):
        # the mask (STOP, IRQ), k (DMA_WAIT), n (KERNEL_WAIT) or enable (PMU_MASK) field
        return NpuOperation(kind=kind, offset=off, param=cmd.param, count=cmd.definition.fields[0].get(cmd.param))
    if kind == "DMA":
        return NpuOperation(kind=kind, offset=off, param=cmd.param, dma=_dma(state, off))

    # ---------------------------------------------------------------- kernel operations
    sub = None
    if kind == "POOL":
        sub = cmd.code_name("pooling_mode")
    elif kind == "ELEMENTWISE":
        sub = cmd.code_name("elementwise_mode")

    oh = state.m1("NPU_SET_OFM_HEIGHT_M1")
    ow = state.m1("NPU_SET_OFM_WIDTH_M1")
    od = state.m1("NPU_SET_OFM_DEPTH_M1")
    ofm = _fm(state, "OFM", "ofm", oh, ow, od, ofm=True, offset=off)

    kernel = None
    ifm2 = None
    broadcast = None
    if kind == "ELEMENTWISE":
        ifm = _fm(state, "IFM", "ifm", oh, ow, od, offset=off)
        def b(fname):
            return bool(state.field("NPU_SET_IFM2_BROADCAST", fname))

        signed2 = state.field("NPU_SET_IFM2_PRECISION", "type")
        scalar_val = state.s16("NPU_SET_IFM2_SCALAR") if signed2 else state.u16("NPU_SET_IFM2_SCALAR")
        zp2 = state.s16("NPU_SET_IFM2_ZERO_POINT") if signed2 else state.u16("NPU_SET_IFM2_ZERO_POINT")
        broadcast = Broadcast(h=b("broadcast_h"), w=b("broadcast_w"), c=b("broadcast_c"),
                              reversed_operands=b("operand_order"), scalar=b("broadcast_constant"),
                              scalar_value=scalar_val, scalar_zero_point=zp2)
        if sub not in UNARY_ELEMENTWISE_MODES and not broadcast.scalar:
            ifm2 = _fm(state, "IFM2", "ifm2", 1 if broadcast.h else oh, 1 if broadcast.w else ow,
                       1 if broadcast.c else od, offset=off)
    else:
        kernel = registers.kernel(state, off)
        ih = (oh - 1) * kernel.stride_y + kernel.dilated_height - kernel.pad_top - kernel.pad_bottom
        iw = (ow - 1) * kernel.stride_x + kernel.dilated_width - kernel.pad_left - kernel.pad_right
        if kind == "CONV" or (kind == "POOL" and sub == "REDUCE_SUM"):
            idepth = state.m1("NPU_SET_IFM_DEPTH_M1")
        else:
            idepth = od
        ifm = _fm(state, "IFM", "ifm", max(ih, 0), max(iw, 0), idepth, offset=off)
        if kernel.upscale != "NONE":
            ifm = replace(ifm, upscale=kernel.upscale)

    ofm_scale_raw = state.raw("NPU_SET_OFM_SCALE")
    opa_raw = state.raw("NPU_SET_OPA_SCALE")
    activation = Activation(
        function=ActivationFunction[state.code("NPU_SET_ACTIVATION", "activation_function", off)],
        clip_range=ClipRange[state.code("NPU_SET_ACTIVATION", "activation_clip_range", off)],
        min=state.s16("NPU_SET_ACTIVATION_MIN"), max=state.s16("NPU_SET_ACTIVATION_MAX"))
    dual_core = is_u65(arch) and state.code("NPU_SET_PARALLEL_MODE", "parallel_mode", off) == "DUAL_CORE_DEPTH"

    weights = scales = ()
    if kind in ("CONV", "DEPTHWISE"):
        wr = state.field("NPU_SET_WEIGHT_REGION", "region")
        sr = state.field("NPU_SET_SCALE_REGION", "region")
        weights = (AddressRange(wr, state.address("NPU_SET_WEIGHT_BASE"), state.address("NPU_SET_WEIGHT_LENGTH")),)
        scales = (AddressRange(sr, state.address("NPU_SET_SCALE_BASE"),
                               state.address("NPU_SET_SCALE_LENGTH") & 0xFFFFF),)
        if dual_core:
            weights += (AddressRange(wr, state.address("NPU_SET_WEIGHT1_BASE"),
                                     state.address("NPU_SET_WEIGHT1_LENGTH")),)
            scales += (AddressRange(sr, state.address("NPU_SET_SCALE1_BASE"),
                                    state.address("NPU_SET_SCALE1_LENGTH") & 0xFFFFF),)

    # the output stage of an elementwise operation: LRELU's OFM_SCALE is the negative side's slope (applied to the
    # operand, reference.elementwise_value), a 32-bit one takes only its shift ("scale not applied for 32-bit
    # operations")
    ofm_scaling = "MULTIPLIER_AND_SHIFT"
    if kind == "ELEMENTWISE" and sub == "LRELU":
        ofm_scaling = "NONE"
    elif kind == "ELEMENTWISE" and (ifm.bits == 32 or ofm.bits == 32):
        ofm_scaling = "SHIFT_ONLY"

    # a 32-bit OFM leaves the output quantization out: OFM_SCALE's multiplier (above), the MIN/MAX clamp
    # (engines/reference.py clamp_range) and OFM_ZERO_POINT, unless an activation function reads the value (a table
    # is indexed with the zero point added: Vela's int32 LUT passes are forced to the 8-bit index range). Vela's
    # older core writes the softmax input's zero point to its 32-bit intermediates (softmax.py, from Vela 2.1 on)
    # and relies on it not being added: every SOFTMAX of its streams is right only so (docs/tflm.md, real models)
    zero_point_added = ofm.bits < 32 or activation.function != ActivationFunction.NONE

    return NpuOperation(
        kind=kind, offset=off, param=cmd.param, sub_op=sub, ifm=ifm, ifm2=ifm2, ofm=ofm, kernel=kernel,
        ofm_block=(state.field("NPU_SET_OFM_BLK_HEIGHT_M1", "value") + 1,
                   state.field("NPU_SET_OFM_BLK_WIDTH_M1", "value") + 1,
                   state.field("NPU_SET_OFM_BLK_DEPTH_M1", "value") + 1),
        acc_format=state.code("NPU_SET_ACC_FORMAT", "acc_format", off),
        blockdep=state.field("NPU_SET_BLOCKDEP", "blockdep"),
        ifm_ib_end=state.field("NPU_SET_IFM_IB_END", "ib_end"), ab_start=state.field("NPU_SET_AB_START", "ab_start"),
        ifm2_ib_start=state.field("NPU_SET_IFM2_IB_START", "ib_start"),
        weights=weights, scales=scales,
        ofm_scale_mode=state.code("NPU_SET_OFM_PRECISION", "scale_mode", off),
        ofm_round_mode=RoundMode[state.code("NPU_SET_OFM_PRECISION", "round_mode", off)],
        ifm_scale_mode=IfmScaleMode[state.code("NPU_SET_IFM_PRECISION", "scale_mode", off)],
        ifm_round_mode=RoundMode[state.code("NPU_SET_IFM_PRECISION", "round_mode", off)],
        ofm_scale=Scale(ofm_scale_raw & 0xFFFFFFFF, state.field("NPU_SET_OFM_SCALE", "shift")),
        opa_scale=Scale(opa_raw & 0xFFFFFFFF, state.field("NPU_SET_OPA_SCALE", "shift")),
        opb_scale=state.raw("NPU_SET_OPB_SCALE") & 0xFFFF,
        activation=activation, broadcast=broadcast, cores=2 if dual_core else 1, ofm_scaling=ofm_scaling,
        ofm_zero_point_added=zero_point_added,
    )
