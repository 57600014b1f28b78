"""Ethos-U55/U65 compute cycles of a kernel operation: the MAC array per OFM block (micro-blocks, sub-kernels,
traversal, weight-buffer floor, accumulator delay) and the output/activation stage per element; their two-stage
pipeline (``timing/pipeline.py``, shared with the Ethos-U85's). Regor's ``ethos_u55_performance.cpp``; the cycle
tables per configuration are in ``variants.py``."""

from __future__ import annotations

import math

from hwdesc import ethosu as R

from ..descriptors import SCALE_ENTRY_BYTES, SUBKERNEL_MAX
from ..timing.geometry import _cdiv, _roundup, ifm_block_depth, ifm_depth_passes
from ..timing.pipeline import accumulator_delay, pipeline
from .blocks import micro_block
from .variants import PRODUCT_U55


def ao_cycles_per_element(arch, op) -> float:
    """Output/activation stage cycles per OFM element: max(output table[idx], activation table[act])
    (the tables and index rules of Regor's ``ethos_u55_performance.cpp``)."""
    out = arch.output_cycles_per_elem
    act_t = arch.activation_cycles_per_elem
    kind, sub = op.kind, op.sub_op
    if kind == "ELEMENTWISE" and op.ifm.bits == 32:
        idx = 0 if sub in R.UNARY_ELEMENTWISE_MODES else 1
    elif sub == "MUL" and op.ofm.bits == 32:
        idx = 2
    elif sub == "MUL" or (kind != "ELEMENTWISE" and op.acc_format == "I40"):
        idx = 3
    elif sub in ("ADD", "SUB"):
        idx = 5
    elif kind == "POOL" and sub == "MAX":
        idx = 6
    else:
        idx = 7
    a = op.activation
    if a is not None and (a.table is not None or a.builtin):
        aidx = 0
    elif a is not None and (a.min > op.ofm.min_value or a.max < op.ofm.max_value):
        aidx = 1  # a clamp narrower than the OFM type: a fused ReLU-family activation
    else:
        aidx = 2
    return max(out[idx], act_t[aidx])


def mac_cycles_per_block(arch, op, block: tuple) -> tuple:
    """(MAC cycles, weight-buffer cycles) of one OFM block (h, w, c) of a CONV/DEPTHWISE/POOL operation
    (Regor's per-block model, ``ethos_u55_performance.cpp`` ``EstimateMacCyclesPerBlock``: block clipped to the
    feature map, micro-blocks per block, cycles per sub-kernel; pooling included)."""
    kind = op.kind
    ub = micro_block(arch, op)
    nh, nw, nc = (_cdiv(block[0], ub[0]), _cdiv(block[1], ub[1]), _cdiv(block[2], ub[2]))
    nhw = nh * nw
    cycles_wb = 32 * ub[2] // 8
    bits = op.ifm.bits
    acc40 = op.acc_format == "I40"
    reduce_sum = kind == "POOL" and op.sub_op == "REDUCE_SUM"
    conv_like = kind == "CONV" or reduce_sum
    part_kernel = kind == "CONV" and op.kernel.part_kernel_first
    ibd = ifm_block_depth(arch, op)
    u55_32 = arch.product == PRODUCT_U55 and arch.macs == 32
    k = op.kernel
    total = 0
    wb_total = 0
    for y in range(0, k.height, SUBKERNEL_MAX):
        for x in range(0, k.width, SUBKERNEL_MAX):
            elems = min(SUBKERNEL_MAX, k.height - y) * min(SUBKERNEL_MAX, k.width - x)
            wb = 0
            if kind == "POOL" and not reduce_sum:
                # Regor: max(4, k) cycles per micro-block, times ifm_bits / 2 except on U55-32 (4 for 8-bit)
                steps = 1
                cyc = max(4, elems) * nhw * nc
                if not u55_32:
                    cyc *= bits // 2
            elif kind == "DEPTHWISE":
                steps = _cdiv(elems, 4)
                per = 4 * nhw * max(bits // 8, 1)
                cyc = max(cycles_wb, per) * steps * nc
                wb = cycles_wb * steps * nc
            elif conv_like and not part_kernel:
                steps = elems
                cyc = max(cycles_wb, 4 * nhw) * steps * nc
                wb = 0 if reduce_sum else cycles_wb * steps * nc
            else:
                steps = _cdiv(elems, 2 if bits == 16 else 4)
                cyc = max(cycles_wb, 4 * nhw) * steps * nc * _cdiv(ibd, 8)
                wb = cycles_wb * steps * nc * _cdiv(ibd, 8)
            if u55_32:
                d = 7 if acc40 else 3
                delay = accumulator_delay(d, nhw, nc, steps)
                if (nw == 1 or nh == 1) and nc > 1 and acc40:
                    delay += d * nc
            else:
                delay = accumulator_delay(3 if (acc40 and arch.macs <= 128) else 2, nhw, nc, steps)
            if part_kernel:
                delay *= _cdiv(ibd, 8)
            total += cyc + delay
            wb_total += wb
    passes = ifm_depth_passes(op, ibd, conv_like)
    cores = max(op.cores, 1)
    return total * passes / cores, wb_total * passes / cores


def compute_cycles(arch, op, geo: dict, block_memory_cycles=0.0, scale_latency: float = 0.0) -> dict:
    """MAC/AO pipeline over all blocks (:func:`pipeline`): per block M (MAC) and A (AO) stages, each at least
    Regor's command-issue floor (block memory + M + A) / 4, and A at least the block's scale/bias fetch
    (scale entry bytes x block depth x the scales' read latency / 256, Regor).  ``block_memory_cycles``: (IFM
    block read, OFM block write) cycles, whose sum is the memory term, or that sum.  Returns total, fill, mac, ao
    and wd cycles."""
    if isinstance(block_memory_cycles, (tuple, list)):
        ifm_c, ofm_c = block_memory_cycles
        block_memory_cycles = ifm_c + ofm_c
    ao_pe = ao_cycles_per_element(arch, op)
    uses_macs = op.kind in ("CONV", "DEPTHWISE", "POOL")
    nhcwb16_ew = op.kind == "ELEMENTWISE" and op.ofm.is_nhcwb16

    def stages(blk):
        h, w, c = blk
        if uses_macs:
            m, wb = mac_cycles_per_block(arch, op, (h, w, c))
        else:
            m, wb = 0.0, 0.0
        elems = h * w * (_roundup(c, 16) if nhcwb16_ew else c)
        a = math.ceil(ao_pe * elems)
        if op.kind in ("CONV", "DEPTHWISE") and scale_latency > 0:
            a = max(a, float(SCALE_ENTRY_BYTES) * c * scale_latency / 256.0)
        return m, a, wb, (block_memory_cycles + m + a) / 4.0

    return pipeline(geo["groups"], uses_macs, stages)
