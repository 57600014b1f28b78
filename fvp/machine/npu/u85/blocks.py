"""The Ethos-U85 block configuration facts the weight streams and the timing both depend on (Vela's
``ethos_u85.cpp`` ``GetOpConfig``): the weight traversal of an operation, its IFM block depth and its OFM
micro-block (the one NPU_SET_ACC_FORMAT names)."""

from __future__ import annotations

#: traversal names -> code used by the weight kernels (NPU_SET_KERNEL_STRIDE.weight_order and NPU_OP_DEPTHWISE)
TRAVERSALS = {"depth_first": 0, "part_kernel_first": 1, "depthwise": 2}


def configured_ifm_block_depth(*, traversal: str, ifm_bits: int, macs: int, ofm_ublock_depth: int,
                               sparse: bool = False) -> int:
    """IFM block depth of a convolution or fully-connected operation (Vela's ``GetOpConfig``): 16 for
    part-kernel-first, 32 for 32-bit IFM or a 16-deep micro-block on 128/256 MACs (dense), 128 for sparse 8-bit,
    otherwise 64. Depthwise ignores it (returns 1)."""
    if traversal not in TRAVERSALS:
        raise ValueError(f"configured_ifm_block_depth: unknown traversal {traversal!r}")
    if traversal == "depthwise":
        return 1
    if traversal == "part_kernel_first":
        return 16
    if ifm_bits == 32 or (macs in (128, 256) and ofm_ublock_depth == 16 and not sparse):
        return 32
    if sparse and ifm_bits == 8:
        return 128
    return 64


def traversal(op) -> str:
    """The weight traversal of a CONV/DEPTHWISE (a reduce-sum is traversed depth first)."""
    if op.kind == "DEPTHWISE":
        return "depthwise"
    return "part_kernel_first" if op.kind == "CONV" and op.kernel is not None and op.kernel.part_kernel_first \
        else "depth_first"


def micro_block(arch, op) -> tuple:
    """The micro-block the operation's ACC_FORMAT names (``op.ofm_ublock``), else the configuration's first."""
    ub = op.ofm_ublock
    return tuple(ub) if ub else arch.ofm_ublock


def block_ifm_depth(arch, op) -> int:
    """The IFM block depth of the operation's block configuration, before clipping to the IFM depth (1 for
    depthwise)."""
    return configured_ifm_block_depth(traversal=traversal(op), ifm_bits=op.ifm.bits, macs=arch.macs,
                                      ofm_ublock_depth=micro_block(arch, op)[2], sparse=op.sparse_weights)


def ifm_block_depth(arch, op) -> int:
    """The IFM depth a convolution or reduce-sum consumes per pass: the block configuration's, clipped to the
    IFM depth."""
    return min(max(op.ifm.depth, 1), block_ifm_depth(arch, op))
