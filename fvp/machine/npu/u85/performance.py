"""Ethos-U85 compute cycles of a kernel operation: the MAC array per OFM block, the output/activation (AO)
stage per element (chained operations included), the weight decoder, and their pipeline (``timing/pipeline.py``,
shared with the Ethos-U55/U65's).

Sources (facts only): Vela 5.1's Regor ``ethos_u85_performance.cpp`` (``EstimateMacCyclesPerBlock``,
``EstimateMacOpCycles``, ``EstimateElementwiseCycles``, ``GetOutputCyclesPerElement``,
``GetActivationCyclesPerElement``, ``EstimateAOCyclesPerElement``, ``WeightDecodeCycles``), ``ethos_u85.cpp``
(the per-configuration tables ``s_EthosU85PerfInfo``, held in ``variants.py``; ``FindBlockConfig``'s IFM block
depth, ``blocks.py``); how many values the weight decoders produce is the layout of the U85's weight streams
(``blocks.py``, Vela's ``ethos_u85_weight_encoder.cpp``).

Where the U85 differs from the U55/U65 formulas of ``u55/performance.py``:

* the micro-block is the operation's own (``NPU_SET_ACC_FORMAT.microblock``), not fixed per variant;
* the weight-buffer floor per micro-block step is 32 x micro-block depth / (8 x weight decoders), with no
  division of the whole block by cores afterwards;
* a depth-first convolution (and reduce-sum) step costs max(floor, IFM block depth / 8 x micro-blocks in
  H x W) x IFM bytes per element (the U55: 4 x micro-blocks), with the U85 IFM block depth (64, 32, 16, 128);
  2:4-sparse weights halve convolution cycles; pooling costs max(4, kernel) x micro-blocks x IFM bits / 2 on
  every configuration; the accumulator delay is 3 cycles for a 48-bit accumulator on the 128-MAC
  configuration, else 2;
* the AO stage's cost per element is indexed by the data types (8/16/32/64-bit OFM, 32-bit binary
  elementwise, a 32-bit result written to the chaining buffer), DIV costs 33 cycles per element, and an
  activation, transpose or reverse costs the activation table's entry (half rate for an H/W swap or a W
  reverse); operations chained through the chaining buffer add their AO costs per element;
* the command-issue floor uses |OFM block write - IFM block read| cycles for a convolution-like operation of
  more than one block and max(IFM, OFM) for an elementwise one (Regor's overlapped-I/O assumption), when the
  caller gives the two terms (``block_memory_cycles`` as a pair); a single number is used as it is.

Simplified: RESIZE is costed as an elementwise operation (Vela 5.1 gives it no cycles; Vela 5.2 costs it as
elementwise); the weight decoder's count of zero weights is the encoder's padding (the zeros among the real
weights are not known to the timing model), and the fast weight format decodes 64 weights per cycle (Vela 5.1
reports no distinct-value count for it, so its rule always takes the 64 branch); the decoder time is reported
(``wd``) but, as in Vela, not added to the operation's cycles.
"""

from __future__ import annotations

import math

from ..descriptors import SCALE_ENTRY_BYTES, SUBKERNEL_MAX, UNARY_ELEMENTWISE_MODES, ActivationFunction
from ..timing.geometry import _cdiv, _roundup, ifm_block_depth, ifm_depth_passes
from ..timing.pipeline import accumulator_delay, pipeline
from .blocks import block_ifm_depth, micro_block, weight_stream_length
#: OFM transposes that swap H and W: the AO stage runs them at half rate (Regor's NWHC, NWCH, NCWH)
HW_SWAP_TRANSPOSES = ("WHC", "WCH", "CWH")
#: AO cycles per element of an integer division
DIV_CYCLES_PER_ELEMENT = 33.0


def _storage(fm) -> str:
    return getattr(fm, "storage", "TILE2X2") if fm is not None else "TILE2X2"


def writes_to_chaining_buffer(op) -> bool:
    """The operation's OFM goes to the chaining buffer (OFM storage CHAINED), not to memory."""
    return _storage(op.ofm) == "CHAINED"


def output_cycles_per_element(arch, op) -> float:
    """The output stage's cycles per OFM element (Regor ``GetOutputCyclesPerElement``): the configuration's
    table entry [8-bit, 16-bit, 32-bit, 64-bit OFM, 32-bit binary elementwise to a narrower OFM or any 32-bit
    result to the chaining buffer, 32-bit binary elementwise to 32-bit]; DIV 33."""
    if op.kind == "ELEMENTWISE" and op.sub_op == "DIV":
        return DIV_CYCLES_PER_ELEMENT
    out = arch.output_cycles_per_elem
    ib, ob = op.ifm.bits, op.ofm.bits
    binary = op.kind == "ELEMENTWISE" and op.sub_op not in UNARY_ELEMENTWISE_MODES
    if writes_to_chaining_buffer(op) and (ob == 32 or ib == 32):
        idx = 4
    elif ob == 64:
        idx = 3
    elif binary and ib == 32:
        idx = 5 if ob == 32 else 4
    elif ob == 32:
        idx = 2
    elif ob == 16:
        idx = 1
    else:
        idx = 0
    return out[idx]


def activation_cycles_per_element(arch, op) -> float:
    """The activation stage's cycles per element when the operation has a fused activation (a LUT, or a clamp
    narrower than the OFM type), a transpose or a reverse; 0 otherwise (Regor
    ``GetActivationCyclesPerElement``: half rate for an H/W-swapping transpose or a W reverse)."""
    ofm = op.ofm
    transpose = getattr(ofm, "transpose", "HWC")
    reverse = getattr(ofm, "reverse", "NONE")
    a = op.activation
    fused = a is not None and (a.function != ActivationFunction.NONE or a.min > ofm.min_value
                               or a.max < ofm.max_value)
    if not (fused or transpose != "HWC" or reverse != "NONE"):
        return 0.0
    half = transpose in HW_SWAP_TRANSPOSES or reverse == "W"
    return arch.activation_cycles_per_elem[1 if half else 0]


def ao_cycles_per_element(arch, op, chained=()) -> float:
    """AO cycles per OFM element of ``op`` and the operations ``chained`` to it through the chaining buffer:
    for each, max(output stage, activation stage), summed (Regor ``EstimateAOCyclesPerElement``: the
    operations of one chain pass through the AO stage one after the other, a fused activation in the same
    pass)."""
    return sum(max(output_cycles_per_element(arch, o), activation_cycles_per_element(arch, o))
               for o in (op, *chained))


def mac_cycles_per_block(arch, op, block: tuple) -> tuple:
    """(MAC cycles, weight-buffer cycles) of one OFM block (h, w, c) of a CONV/DEPTHWISE/POOL operation (Regor
    ``EthosU85Performance::EstimateMacCyclesPerBlock``; ``block`` already clipped to the OFM)."""
    kind = op.kind
    ub = micro_block(arch, op)
    nh, nw, nc = (_cdiv(block[0], ub[0]), _cdiv(block[1], ub[1]), _cdiv(block[2], ub[2]))
    nhw = nh * nw
    cycles_wb = 32 * ub[2] // (8 * max(arch.cores, 1))
    bits = op.ifm.bits
    reduce_sum = kind == "POOL" and op.sub_op == "REDUCE_SUM"
    conv_like = kind == "CONV" or reduce_sum
    part_kernel = kind == "CONV" and op.kernel is not None and op.kernel.part_kernel_first
    sparse = 2 if kind == "CONV" and getattr(op, "sparse_weights", False) else 1
    ibd = ifm_block_depth(arch, op)
    delay_unit = 3 if (op.acc_format == "I48" and arch.macs <= 128) else 2
    kh, kw = (op.kernel.height, op.kernel.width) if op.kernel is not None else (1, 1)
    total = wb_total = 0
    for y in range(0, kh, SUBKERNEL_MAX):
        for x in range(0, kw, SUBKERNEL_MAX):
            elems = min(SUBKERNEL_MAX, kh - y) * min(SUBKERNEL_MAX, kw - x)
            wb = 0
            if kind == "POOL" and not reduce_sum:
                steps = 1
                cyc = max(4, elems) * nhw * nc * (bits // 2)
            elif kind == "DEPTHWISE":
                steps = _cdiv(elems, 4)
                cyc = max(cycles_wb, 4 * nhw * (bits // 8)) * steps * nc
                wb = cycles_wb * steps * nc
            elif conv_like and not part_kernel:
                steps = elems
                cyc = max(cycles_wb, ibd // 8 * nhw) * steps * nc * (bits // 8) // sparse
                wb = 0 if reduce_sum else cycles_wb * steps * nc
            else:
                steps = _cdiv(elems, 2 if bits == 16 else 4)
                cyc = max(cycles_wb, 4 * nhw) * steps * nc * _cdiv(ibd, 8) // sparse
                wb = cycles_wb * steps * nc * _cdiv(ibd, 8)
            delay = accumulator_delay(delay_unit, nhw, nc, steps)
            if part_kernel:
                delay *= _cdiv(ibd, 8)
            total += cyc + delay
            wb_total += wb
    passes = ifm_depth_passes(op, ibd, conv_like)
    return total * passes, wb_total * passes


def decoded_weights(arch, op) -> tuple:
    """(weights, padding zeros) the weight decoders produce in one pass over a CONV/DEPTHWISE operation's weight
    streams: the values of the U85 weight traversal (``blocks.weight_stream_length``: the kernel
    rounded to 5 or 10 elements for part-kernel-first and depthwise, depthwise padding slots, the IFM and OFM
    micro-blocks; all decoders' streams), every value that is no real weight counted a zero.  (0, 0) for the
    other kinds."""
    if op.kind not in ("CONV", "DEPTHWISE") or op.kernel is None:
        return 0, 0
    k = op.kernel
    dw = op.kind == "DEPTHWISE"
    fmt = getattr(op, "weight_format", "SWD")
    traversal = "depthwise" if dw else "part_kernel_first" if k.part_kernel_first else "depth_first"
    ifm_depth = max(op.ifm.depth, 1)
    ofm_depth = max(op.ofm.depth, 1)
    per_stream = weight_stream_length(
        ofm_depth=ofm_depth, ifm_depth=ifm_depth, kernel_h=k.height, kernel_w=k.width, dilation_y=k.dilation_y,
        dilation_x=k.dilation_x, stride_y=k.stride_y, stride_x=k.stride_x,
        ofm_block_depth=max(1, op.ofm_block[2] if op.ofm_block else ofm_depth),
        ifm_block_depth=None if dw else block_ifm_depth(arch, op), ofm_ublock=micro_block(arch, op),
        traversal=traversal, ifm_bits=op.ifm.bits, macs=arch.macs, cores=max(arch.cores, 1), weight_format=fmt,
        sparse=bool(getattr(op, "sparse_weights", False)))
    total = per_stream * (1 if fmt == "FWD" else max(arch.cores, 1))
    return total, max(0, total - k.width * k.height * ofm_depth * (1 if dw else ifm_depth))


def weight_decode_cycles(arch, op, zero_count: int | None = None) -> float:
    """Cycles the weight decoders take for one pass over the operation's weights (Regor
    ``WeightDecodeCycles``): the fast format (``FWD``) 64 weights per cycle; the standard format 8 to 32
    weights per cycle per decoder, rising linearly with the share of zeros from 50 % to 90 %.
    ``zero_count`` defaults to the encoder's padding zeros (:func:`decoded_weights`)."""
    n, zeros = decoded_weights(arch, op)
    if n <= 0:
        return 0.0
    if zero_count is not None:
        zeros = zero_count
    if getattr(op, "weight_format", "SWD") == "FWD":
        per_cycle = 64
    else:
        rate = max(min(zeros / n, 0.9), 0.5)
        per_cycle = int(8 + (rate - 0.5) * (32 - 8) / 0.4) * max(arch.cores, 1)
    return float(n // per_cycle)


def compute_cycles(arch, op, geo: dict, block_memory_cycles=0.0, scale_latency: float = 0.0,
                   chained=()) -> dict:
    """MAC/AO pipeline over all blocks of an Ethos-U85 operation (:func:`.pipeline.pipeline`; Regor
    ``EstimateMacOpCycles`` / ``EstimateElementwiseCycles``).  Per block: M from :func:`mac_cycles_per_block`
    (CONV, DEPTHWISE, POOL), A = ceil(AO cycles per element x elements) (an NHCWB16 elementwise OFM counted in
    whole 16-channel bricks), at least the scale/bias fetch (scale entry bytes x block depth x ``scale_latency``
    / 256) for CONV/DEPTHWISE; both stages at least the command-issue floor: (memory + M + A) / 4 with memory
    |OFM - IFM| block cycles when there is more than one block (convolution-like), or (max(IFM, OFM) block
    cycles x elements / OFM block elements + AO per element x elements) / 4 (elementwise, RESIZE).
    ``block_memory_cycles``: (IFM block read, OFM block write) cycles, or one number used as the memory term.
    ``chained``: the operations chained after this one (their AO costs join this one's).  ``wd`` is the weight
    decoders' time over all weight fetches (one pass per spatial OFM block)."""
    ao_pe = ao_cycles_per_element(arch, op, chained)
    uses_macs = op.kind in ("CONV", "DEPTHWISE", "POOL")
    brick = not uses_macs and op.ofm.is_nhcwb16
    if isinstance(block_memory_cycles, (tuple, list)):
        ifm_c, ofm_c = (float(v) for v in block_memory_cycles)
        if uses_macs:
            mem = abs(ofm_c - ifm_c) if geo["blocks"] > 1 else 0.0
        else:
            mem = max(ifm_c, ofm_c)
    else:
        mem = float(block_memory_cycles)
    full = op.ofm_block or geo["ofm_block"]
    full_elems = max(1, full[0] * full[1] * full[2])
    scales = op.kind in ("CONV", "DEPTHWISE") and bool(op.scales) and scale_latency > 0

    def stages(blk):
        h, w, c = blk
        m, wb = mac_cycles_per_block(arch, op, blk) if uses_macs else (0, 0)
        elems = h * w * (_roundup(c, 16) if brick else c)
        a = math.ceil(ao_pe * elems)
        if scales:
            a = max(a, float(SCALE_ENTRY_BYTES) * c * scale_latency / 256.0)
        if uses_macs:
            cmd = (mem + m + a) / 4.0
        else:
            cmd = (mem * elems / full_elems + ao_pe * elems) / 4.0
        return float(m), float(a), float(wb), cmd

    res = pipeline(geo["groups"], uses_macs, stages)
    res["wd"] = weight_decode_cycles(arch, op) * geo["spatial_blocks"]
    return res
