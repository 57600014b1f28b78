"""The register groups every Ethos-U decodes alike, for both product families' operation builders: a feature
map's tiles, bases, strides and zero point (the commands ``hwdesc.ethosu.tile_commands`` gives both ISAs, and the
base and stride commands at the same codes), and an operation's kernel (KERNEL_WIDTH/HEIGHT_M1, KERNEL_STRIDE,
IFM_PAD_*, IFM_UPSCALE, which the Ethos-U85's ISA takes from the U55's). What a product's precision registers say
(bits, sign, format, the U85's storage, transpose and reverse) the product decodes itself."""

from __future__ import annotations

from ...errors import NpuFault
from .descriptors import FeatureMap, Kernel


def feature_map(state, prefix: str, name: str, height: int, width: int, depth: int, *, bits: int, signed: bool,
                format: str, **product) -> FeatureMap:
    """The feature map of the ``prefix`` registers (``IFM``, ``IFM2``, ``OFM``) with the area, element type and
    format the product decoded; ``product``: the descriptor's product-specific fields (storage ...)."""
    p = "NPU_SET_" + prefix + "_"
    zp = state.s16(p + "ZERO_POINT") if signed else state.u16(p + "ZERO_POINT")
    return FeatureMap(
        name=name, region=state.field(p + "REGION", "region"),
        bases=tuple(state.address(f"{p}BASE{i}") for i in range(4)), height=height, width=width, depth=depth,
        height0=state.m1(p + "HEIGHT0_M1"), height1=state.m1(p + "HEIGHT1_M1"), width0=state.m1(p + "WIDTH0_M1"),
        stride_x=state.signed_address(p + "STRIDE_X"), stride_y=state.signed_address(p + "STRIDE_Y"),
        stride_c=state.signed_address(p + "STRIDE_C"), bits=bits, signed=signed, format=format, zero_point=zp,
        **product)


def kernel(state, offset: int) -> Kernel:
    """The operation's kernel: undilated size, stride, dilation, padding, upscale, traversal bit, decomposition.
    A dilated size that is not a multiple of its dilation is an invalid command stream."""
    def ks(fname):
        return state.field("NPU_SET_KERNEL_STRIDE", fname)

    dil_x, dil_y = ks("dilation_x") + 1, ks("dilation_y") + 1
    kw_m1 = state.u16("NPU_SET_KERNEL_WIDTH_M1")
    kh_m1 = state.u16("NPU_SET_KERNEL_HEIGHT_M1")
    if kw_m1 % dil_x or kh_m1 % dil_y:
        raise NpuFault("cmd_parse_error", f"dilated kernel size {kh_m1 + 1}x{kw_m1 + 1} is not a multiple of the "
                       f"dilation {dil_y}x{dil_x}", offset=offset)
    up = state.code("NPU_SET_IFM_UPSCALE", "mode", offset)
    return Kernel(
        width=kw_m1 // dil_x + 1, height=kh_m1 // dil_y + 1,
        stride_x=((ks("stride_x_msb") << 1) | ks("stride_x_lsb")) + 1,
        stride_y=((ks("stride_y_msb") << 1) | ks("stride_y_lsb")) + 1, dilation_x=dil_x, dilation_y=dil_y,
        pad_top=state.field("NPU_SET_IFM_PAD_TOP", "pad"), pad_left=state.field("NPU_SET_IFM_PAD_LEFT", "pad"),
        pad_bottom=state.field("NPU_SET_IFM_PAD_BOTTOM", "pad"), pad_right=state.field("NPU_SET_IFM_PAD_RIGHT", "pad"),
        upscale=up, part_kernel_first=bool(ks("weight_order")),
        decomposition=state.code("NPU_SET_KERNEL_STRIDE", "decomposition", offset))
