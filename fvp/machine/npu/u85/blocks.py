"""The Ethos-U85 block configuration facts the weight streams and the timing both depend on: the weight traversal
of an operation, its IFM block depth and its OFM micro-block (the one NPU_SET_ACC_FORMAT names), from Vela's
``ethos_u85.cpp`` ``GetOpConfig``; and the layout of the weight streams that follows from them (how many values
each decoder's stream holds: what the weight decoders produce, ``weights.py``, and how long they take,
``performance.py``), from Vela's ``ethos_u85_weight_encoder.cpp``."""

from __future__ import annotations

from ..descriptors import SUBKERNEL_MAX

#: traversal names -> code used by the weight kernels (NPU_SET_KERNEL_STRIDE.weight_order and NPU_OP_DEPTHWISE)
TRAVERSALS = {"depth_first": 0, "part_kernel_first": 1, "depthwise": 2}
_DF, _PKF, _DW = TRAVERSALS["depth_first"], TRAVERSALS["part_kernel_first"], TRAVERSALS["depthwise"]
#: NPU_SET_WEIGHT_FORMAT.weight_format
WEIGHT_FORMATS = {"SWD": 0, "FWD": 1}
_INTERLEAVE = 4                 # OFM channels a decoder takes from a micro-block at a time


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


# ---------------------------------------------------------------------------------------------------------------
# the weight streams' layout

def _layout(ofm_depth, ifm_depth, kernel_h, kernel_w, dilation_y, dilation_x, stride_y, stride_x, ofm_block_depth,
            ifm_block_depth, ofm_ublock, traversal, ifm_bits, macs, cores, weight_format, sparse):
    """Validate the parameters; return the traversal parameters of one decoder's stream as a tuple of ints."""
    for name, value in (("ofm_depth", ofm_depth), ("ifm_depth", ifm_depth), ("kernel_h", kernel_h),
                        ("kernel_w", kernel_w), ("ofm_block_depth", ofm_block_depth), ("macs", macs),
                        ("cores", cores)):
        if int(value) != value or value < 1:
            raise ValueError(f"unpack_weights: {name} must be a positive integer, not {value!r}")
    if traversal not in TRAVERSALS:
        raise ValueError(f"unpack_weights: traversal must be one of {sorted(TRAVERSALS)}, not {traversal!r}")
    if weight_format not in WEIGHT_FORMATS:
        raise ValueError(f"unpack_weights: weight_format must be 'SWD' or 'FWD', not {weight_format!r}")
    if dilation_y not in (1, 2) or dilation_x not in (1, 2):
        raise ValueError(f"unpack_weights: dilation must be 1 or 2, not ({dilation_y}, {dilation_x})")
    if stride_y not in (1, 2, 3, 4) or stride_x not in (1, 2, 3, 4):
        raise ValueError(f"unpack_weights: stride must be 1..4, not ({stride_y}, {stride_x})")
    if ifm_bits not in (8, 16, 32):
        raise ValueError(f"unpack_weights: ifm_bits must be 8, 16 or 32, not {ifm_bits!r}")
    oud = int(tuple(ofm_ublock)[-1])
    if ifm_block_depth is None:
        ifm_block_depth = configured_ifm_block_depth(traversal=traversal, ifm_bits=ifm_bits, macs=macs,
                                                     ofm_ublock_depth=oud, sparse=sparse)
    if oud < 1 or oud % (_INTERLEAVE * cores):
        raise ValueError(f"unpack_weights: OFM micro-block depth {oud} is not a multiple of "
                         f"{_INTERLEAVE} x {cores} decoders")
    trav = TRAVERSALS[traversal]
    sparse = bool(sparse)
    fast = WEIGHT_FORMATS[weight_format] == 1
    if trav == _DW and (sparse or fast):
        raise ValueError("unpack_weights: depthwise weights are never sparse or FWD")
    ifm16 = ifm_bits == 16
    if trav == _PKF:
        iud = 8 if (ifm16 and not sparse) else int(ifm_block_depth)
        rnd = 10 if (ifm16 or sparse) else 5
    elif trav == _DF:
        iud = int(ifm_block_depth)
        rnd = 1
    else:
        iud = 1
        rnd = 10
    step = 1 if trav == _DW else (16 if sparse else 8)
    if trav != _DW and (int(ifm_block_depth) != ifm_block_depth or ifm_block_depth < 1 or iud % step
                        or ifm_block_depth % iud):
        raise ValueError(f"unpack_weights: IFM block depth {ifm_block_depth!r} is not a multiple of "
                         f"{max(iud, step)}")
    dw_pad = 0
    if trav == _DW:                                  # padding slots after every 10 depthwise elements
        dw_pad = 0 if (not ifm16 and macs <= 256) else 2 if macs <= 512 else 6
    if trav == _DF:                                  # depth-first ignores the stride
        stride_y = stride_x = 1
    return (int(ofm_depth), 1 if trav == _DW else int(ifm_depth), int(kernel_h), int(kernel_w),
            SUBKERNEL_MAX // dilation_y, SUBKERNEL_MAX // dilation_x, int(stride_y), int(stride_x),
            int(ofm_block_depth), 1 if trav == _DW else int(ifm_block_depth), oud, iud, rnd, step, dw_pad, trav,
            int(cores)), fast


def _stream_length(od, id_, kh, kw, dec_h, dec_w, sy, sx, obd, ibd, oud, iud, rnd, step, dw_pad, trav, cores):
    """Values in one decoder's stream (including padding). Plain Python: a few hundred iterations at most."""
    e = iud * oud // cores
    total = 0
    for oz in range(0, od, obd):
        n_ou = -(-min(obd, od - oz) // oud)
        for iz in range(0, id_, ibd):
            n_iu = 1 if trav == _DW else -(-min(ibd, id_ - iz) // iud)
            for x0 in range(0, kw, dec_w):
                sw = min(kw - x0, dec_w)
                for y0 in range(0, kh, dec_h):
                    n = -(-(min(kh - y0, dec_h) * sw) // rnd) * rnd
                    total += n_iu * n_ou * (n + dw_pad * (n // rnd)) * e
    return total


_DOC_PARAMS = """``ofm_depth``/``ifm_depth`` are the operation's OFM and IFM depths (``ifm_depth`` is ignored for
    depthwise), ``kernel_h``/``kernel_w`` the undilated kernel, ``ofm_block_depth`` from NPU_SET_OFM_BLK_DEPTH_M1,
    ``ifm_block_depth`` by default :func:`configured_ifm_block_depth`'s, ``ofm_ublock`` the (h, w, d) micro-block of
    NPU_SET_ACC_FORMAT, ``traversal`` one of :data:`TRAVERSALS`, ``macs`` and ``cores`` (weight decoders) the
    configuration's, ``weight_format`` 'SWD' or 'FWD' and ``sparse`` the 2:4 bit of NPU_SET_WEIGHT_FORMAT."""


def weight_stream_length(*, ofm_depth: int, ifm_depth: int, kernel_h: int, kernel_w: int, dilation_y: int = 1,
                             dilation_x: int = 1, stride_y: int = 1, stride_x: int = 1, ofm_block_depth: int,
                             ifm_block_depth: int | None = None, ofm_ublock,
                             traversal: str, ifm_bits: int = 8, macs: int,
                             cores: int = 1, weight_format: str = "SWD", sparse: bool = False) -> int:
    """Number of values (weights and padding) in each weight stream: one per decoder for SWD, the whole
    interleaved stream for FWD."""
    p, fast = _layout(ofm_depth, ifm_depth, kernel_h, kernel_w, dilation_y, dilation_x, stride_y, stride_x,
                      ofm_block_depth, ifm_block_depth, ofm_ublock, traversal, ifm_bits, macs, cores, weight_format,
                      sparse)
    n = _stream_length(*p)
    return n * p[-1] if fast else n


weight_stream_length.__doc__ += "\n\n    " + _DOC_PARAMS
