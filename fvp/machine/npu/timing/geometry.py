"""Block geometry of a kernel operation: OFM blocks along each axis, the IFM rows and columns a block fetches
(halo included, per sub-kernel), the IFM block depth and the passes over the IFM depth, contiguous runs for burst
efficiency. What the product decides (a convolution's IFM block depth, the micro-block) its family says
(``arch.family``)."""

from __future__ import annotations

import numpy as np

from ..descriptors import SUBKERNEL_MAX


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _roundup(a: int, b: int) -> int:
    return _cdiv(a, b) * b


def _axis_blocks(n: int, b: int) -> list:
    """[(block size, count)] along one axis of length ``n`` with blocks of ``b``."""
    b = max(1, min(b, n))
    full, rem = divmod(n, b)
    out = [(b, full)] if full else []
    if rem:
        out.append((rem, 1))
    return out


def _fetched(out_len: int, blk: int, stride: int, k: int, dil: int, pad: int, in_len: int) -> int:
    """Input rows (or columns) fetched over all blocks of one axis: each block reads its window (halo
    included, padding not fetched), once per sub-kernel of at most 8 taps.

    Vectorised over the blocks (a grown stream can ask for 65,536 blocks x 256 sub-kernels: a Python loop took
    seconds there, with no point to interrupt it); exact integer arithmetic, the same sums as block by block."""
    blk = max(1, min(blk, out_len))
    if out_len <= 0:
        return 0
    starts = np.arange(0, out_len, blk, dtype=np.int64)
    ends = np.minimum(starts + blk, out_len)
    lo0 = starts * stride - pad
    hi0 = (ends - 1) * stride - pad
    total = 0
    for ks in range(0, max(k, 1), SUBKERNEL_MAX):
        ksub = min(SUBKERNEL_MAX, k - ks)
        span = (ksub - 1) * dil + 1
        lo = np.maximum(lo0 + ks * dil, 0)
        hi = np.minimum(hi0 + ks * dil + span, in_len)
        total += int(np.maximum(hi - lo, 0).sum())
    return total


def ifm_block_depth(arch, op) -> int:
    """IFM depth the MAC array consumes per pass: depthwise, pooling, elementwise and resize the OFM block's; a
    convolution or reduce-sum its product's block configuration (``family.ifm_block_depth``)."""
    if op.kind in ("DEPTHWISE", "ELEMENTWISE", "RESIZE") or (op.kind == "POOL" and op.sub_op != "REDUCE_SUM"):
        return max(1, min(op.ofm_block[2], op.ofm.depth))
    return arch.family.ifm_block_depth(arch, op)


def ifm_depth_passes(op, ibd: int, conv_like: bool) -> int:
    """How many times a block's MAC work is done over the IFM depth: once per IFM block of ``ibd`` channels for a
    convolution-like operation (convolution, reduce-sum), else once (both products' models)."""
    return _cdiv(max(op.ifm.depth, 1), ibd) if conv_like else 1


def kernel_geometry(arch, op) -> dict:
    """Block traversal of a kernel operation: OFM block (clipped), block groups, counts, IFM re-fetch."""
    ofm = op.ofm
    oh, ow, od = max(ofm.height, 1), max(ofm.width, 1), max(ofm.depth, 1)
    bh, bw, bd = op.ofm_block or (oh, ow, od)
    bh, bw, bd = min(bh, oh), min(bw, ow), min(bd, od)
    ys, xs, zs = _axis_blocks(oh, bh), _axis_blocks(ow, bw), _axis_blocks(od, bd)
    groups = [((h, w, c), nh * nw * nc) for h, nh in ys for w, nw in xs for c, nc in zs]
    spatial = sum(n for _, n in ys) * sum(n for _, n in xs)
    depth_blocks = sum(n for _, n in zs)
    k = op.kernel
    ifm = op.ifm
    if op.kind == "ELEMENTWISE" or k is None:
        refetch = 1.0
        ifm_blk = (bh, bw, bd)
    else:
        ih, iw = max(ifm.height, 1), max(ifm.width, 1)
        rows = _fetched(oh, bh, k.stride_y, k.height, k.dilation_y, k.pad_top, ih)
        cols = _fetched(ow, bw, k.stride_x, k.width, k.dilation_x, k.pad_left, iw)
        refetch = rows * cols / float(ih * iw)
        if op.kind == "CONV" or (op.kind == "POOL" and op.sub_op == "REDUCE_SUM"):
            refetch *= depth_blocks
        ibh = min((bh - 1) * k.stride_y + min(k.dilated_height, SUBKERNEL_MAX * k.dilation_y), ih)
        ibw = min((bw - 1) * k.stride_x + min(k.dilated_width, SUBKERNEL_MAX * k.dilation_x), iw)
        ifm_blk = (max(ibh, 1), max(ibw, 1), ifm_block_depth(arch, op))
    return {"ofm_block": (bh, bw, bd), "groups": groups, "blocks": sum(n for _, n in groups),
            "spatial_blocks": spatial, "depth_blocks": depth_blocks, "ifm_refetch": refetch, "ifm_block": ifm_blk}


def contiguous_run(fm, block, cores: int = 1) -> int:
    """Bytes the NPU moves in one contiguous run when it reads/writes ``block`` (h, w, c) of ``fm``: NHWC
    rows of ``w x C`` when the block spans the whole depth, else ``c`` channels; NHCWB16 16-channel bricks of
    ``w`` pixels (the whole row of bricks when the block spans the full width)."""
    _, bw, bc = block
    e = max(fm.bits // 8, 1)
    if fm.format == "NHCWB16":
        if bw >= fm.width:
            return 16 * fm.width * e * _cdiv(max(bc, 1), 16)
        return 16 * bw * e * max(cores, 1)
    if bc >= fm.depth:
        return bw * fm.depth * e
    return bc * e
