"""The Ethos-U55/U65 block configuration facts the weight streams and the timing both depend on (Regor's
``ethos_u55.cpp`` ``FindBlockConfig`` and ``ethos_u55_weight_encoder.cpp``): the IFM block depth and the OFM
micro-block of an operation."""

from __future__ import annotations


def _roundup(a: int, b: int) -> int:
    return -(-a // b) * b


def ifm_block_depth_limit(part_kernel_first: bool, ifm_bits: int) -> int:
    """The IFM channels one pass of the MAC array takes at most: 16 for a part-kernel-first traversal or a
    16-bit IFM, else 32 (the weight encoder orders the weights in IFM blocks of this depth)."""
    return 16 if part_kernel_first or ifm_bits == 16 else 32


def ifm_block_depth(arch, op) -> int:
    """The IFM block depth of a convolution or reduce-sum: 16-bit and wider IFMs the 16-bit limit rounded to 4
    channels, 8-bit IFMs the limit of their traversal rounded to the IFM micro-block; at most the IFM depth
    (rounded likewise)."""
    d = max(op.ifm.depth, 1)
    if op.ifm.bits >= 16:
        return _roundup(min(d, ifm_block_depth_limit(False, 16)), 4)
    part_kernel = op.kernel is not None and op.kernel.part_kernel_first
    return _roundup(min(d, ifm_block_depth_limit(part_kernel, op.ifm.bits)), arch.ifm_ublock_depth)


def micro_block(arch, op) -> tuple:
    """The configuration's OFM micro-block; Regor's 1-D case: a 2-high micro-block becomes 1x4 for a convolution
    with OFM height 1, even OFM width and kernel height 1."""
    uh, uw, uc = arch.ofm_ublock
    if (uh == 2 and op.kind == "CONV" and op.ofm.height == 1 and op.ofm.width % 2 == 0
            and op.kernel is not None and op.kernel.height == 1):
        return (1, 4, uc)
    return (uh, uw, uc)
