"""Ethos-U85 weight and scale streams: weight traversal order, the fast-weight (FWD) format, scale entries.

Models how the U85 consumes the weight streams at WEIGHT_BASE..WEIGHT3_BASE and the scale stream at SCALE_BASE.
Source of every fact: Vela 5.1's U85 encoder (``ethos_u85_weight_encoder.cpp``: ``EthosU85WeightOrdering``,
``EthosU85WeightOrderingFwd``, ``EncodeBias32/48``, ``EthosU85ScaleSource``), its block configuration
(``ethos_u85.cpp`` ``GetOpConfig``) and its codec (``mlw_codec/source/mlw_encode.cpp``,
``mlw_encode_fwd.cpp``); the tests compile models with Vela for U85 and check that the streams it writes unpack
to the model's weights.

* Weight formats (NPU_SET_WEIGHT_FORMAT): SWD ("standard weight decoder") writes one stream per weight decoder
  (``cores``), each in the MLW bitstream format U55 uses, 15-bit SLICELEN included (Vela's U85 encoder runs the
  same ``MLW_ENCODE_SYNTAX_ETHOSU`` context), so :func:`fvp.machine.npu.mlw.decode_mlw` decodes it unchanged.
  FWD ("fast weight decoder") writes one stream: a 256-bit header (bit 0 raw mode, bit 1 small LUT, bits 2..103
  reserved, bits 104..111 the signed zero adjust, then sixteen 9-bit sign-magnitude LUT entries) followed by one
  fixed-width code per value: 2-bit LUT index (small LUT), 4-bit LUT index, or 8 raw bits holding
  ``value + zero_adjust`` as int8; padded to a 256-bit boundary. With more than one decoder the FWD stream
  interleaves the per-decoder traversals in blocks of ``ofm_ublock_depth * ifm_ublock_depth * round / cores``
  values. The 2:4 sparsity bit changes only the traversal (16 IFM channels per inner step); zeros stay in
  the stream. Depthwise is never FWD.
* Traversal of one decoder's stream (stream ``s`` of ``cores``): OFM blocks; IFM blocks, forward for even OFM
  blocks and backward for odd ones; sub-kernels of at most 8x8 (4 in a dilated axis), X outer, Y inner; IFM
  micro-blocks (``ifm_ublock_depth``); OFM micro-blocks; for part-kernel-first and depthwise the kernel elements
  in stride phases (``(y % stride_y, x % stride_x)`` phases in order, depth-first ignores the stride), each
  phase row by row with every odd row reversed; elements rounded up to 5 (part-kernel 8-bit) or 10
  (part-kernel 16-bit or sparse, depthwise), depthwise adding padding slots after every 10 (none for 8-bit IFM
  on up to 256 MACs, 2 on up to 512 MACs, 6 above); per
  element: IFM steps of 8 (16 sparse, 1 depthwise) channels, then the decoder's groups of 4 OFM channels of the
  micro-block (channels ``4s..4s+3`` of every ``4 * cores``), 4 channels, the IFM channels of the step. The
  zeros the encoder writes for channels past the operation and for padding slots are skipped, not checked (as
  are values for channels past the OFM block, which only a block depth that is not a multiple of the
  micro-block depth would give).
* Scales: one stream of 10-byte entries, one per OFM channel in order, padded with zero entries to a multiple of
  ``ofm_ublock_depth`` rounded up to 16. ACC_FORMAT I32: 32-bit signed bias, 31-bit scale, 6-bit shift; I48:
  48-bit signed bias, 15-bit scale, 6-bit shift; byte 9 and the bits above each field are reserved (ignored).

Simplifications: the whole operation is unpacked at once, into ``W[o, ky, kx, i]`` (int32, undilated kernel,
``i`` of size 1 for depthwise), like ``u55/weights.py`` for the U55. The command stream carries no IFM block
depth: :func:`blocks.configured_ifm_block_depth` is the rule Vela's block configuration applies, taken as the
hardware's.
``unpack_weights`` builds the traversal with numpy one IFM block and sub-kernel at a time (the readable
specification) or, for larger operations, with the numba kernel ``_index_map_kernel`` (the same loop nest, with
the same slots per sub-kernel, tested against it).
"""

from __future__ import annotations

import numpy as np

from ..descriptors import SCALE_ENTRY_BYTES
from ..jit import njit
from ..mlw import MlwError, _as_uint8, decode_mlw
from .blocks import (_DOC_PARAMS, _DW, _INTERLEAVE, TRAVERSALS, _layout, _stream_length, block_ifm_depth,
                     traversal as op_traversal, weight_stream_length)

__all__ = ["weight_stream_length", "unpack_weights", "decode_weights", "decode_fwd",
           "scale_entries", "decode_scales", "weights_and_scales", "scales"]

_FWD_HEADER_BITS = 256
_FWD_LUT_ENTRIES = 16
_NUMPY_MAX_BLOCKS = 256         # above this many (IFM block, sub-kernel) steps, the numba kernel builds the map


# ---------------------------------------------------------------------------------------------------------------
# parameters

def _slots_py(sh, sw, stride_y, stride_x, rnd, dw_pad):
    """Kernel positions of a ``sh`` x ``sw`` sub-kernel in stream order, as (y, x) arrays with -1 for the
    padding slots (elements rounded up to ``rnd``, ``dw_pad`` more slots after every ``rnd``)."""
    ys, xs = [], []
    for py in range(stride_y):
        kh = (sh + stride_y - 1 - py) // stride_y
        for px in range(stride_x):
            kw = (sw + stride_x - 1 - px) // stride_x
            for ky in range(kh):
                for kx in range(kw):
                    x = kx if ky % 2 == 0 else kw - 1 - kx
                    ys.append(py + ky * stride_y)
                    xs.append(px + x * stride_x)
    n = len(ys)
    total = -(-n // rnd) * rnd
    y = np.full(total + dw_pad * (total // rnd), -1, np.int64)
    x = y.copy()
    for k in range(n):
        at = k + dw_pad * (k // rnd)
        y[at], x[at] = ys[k], xs[k]
    return y, x


_slots = njit(_slots_py)  # the same function for the numba traversal


def _index_map_numpy(p, s):
    """Flat OHWI index of every value of decoder ``s``'s stream (-1: padding or skipped), with numpy: each
    (OFM block, IFM block, sub-kernel) is a dense (IFM micro-blocks, OFM micro-blocks, slots, IFM steps,
    channel groups, 4, IFM channels of a step) array."""
    od, id_, kh, kw, dec_h, dec_w, sy, sx, obd, ibd, oud, iud, rnd, step, dw_pad, trav, cores = p
    parts = []
    n_steps, n_groups = iud // step, oud // (_INTERLEAVE * cores)
    g_off = (_INTERLEAVE * s + np.arange(n_groups) * _INTERLEAVE * cores)[:, None] + np.arange(_INTERLEAVE)
    i_off = (np.arange(n_steps) * step)[:, None] + np.arange(step)                 # (n_steps, step)
    for ob, oz in enumerate(range(0, od, obd)):
        o_end = min(oz + obd, od)
        n_ou = -(-(o_end - oz) // oud)
        izs = list(range(0, id_, ibd))
        for iz in (izs[::-1] if ob % 2 else izs):
            n_iu = 1 if trav == _DW else -(-min(ibd, id_ - iz) // iud)
            o = oz + (np.arange(n_ou) * oud)[:, None, None] + g_off                    # (n_ou, groups, 4)
            i = iz + (np.arange(n_iu) * iud)[:, None, None] + i_off                    # (n_iu, n_steps, step)
            O = o[None, :, None, None, :, :, None]
            I = i[:, None, None, :, None, None, :]
            for x0 in range(0, kw, dec_w):
                sw = min(kw - x0, dec_w)
                for y0 in range(0, kh, dec_h):
                    ys, xs = _slots_py(min(kh - y0, dec_h), sw, sy, sx, rnd, dw_pad)
                    Y = (y0 + ys)[None, None, :, None, None, None, None]
                    X = (x0 + xs)[None, None, :, None, None, None, None]
                    flat = ((O * kh + Y) * kw + X) * id_ + I
                    valid = (O < o_end) & (I < id_) & (Y >= y0)
                    parts.append(np.where(valid, flat, -1).ravel())
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


@njit
def _index_map_kernel(out, s, od, id_, kh, kw, dec_h, dec_w, sy, sx, obd, ibd, oud, iud, rnd, step, dw_pad, trav,
                      cores):
    """:func:`_index_map_numpy` as Vela's loop nest, one value at a time (the slots of each sub-kernel from the
    same :func:`_slots_py`); returns the number of values."""
    cnt = 0
    n_ib = (id_ + ibd - 1) // ibd
    subs = []                                       # each sub-kernel's origin and slots, in traversal order
    for x0 in range(0, kw, dec_w):
        for y0 in range(0, kh, dec_h):
            ys, xs = _slots(min(kh - y0, dec_h), min(kw - x0, dec_w), sy, sx, rnd, dw_pad)
            subs.append((x0, y0, ys, xs))
    ob = 0
    for oz in range(0, od, obd):
        o_end = min(oz + obd, od)
        for ibn in range(n_ib):
            iz = ((n_ib - 1 - ibn) if ob % 2 else ibn) * ibd
            outer = 1 if trav == _DW else min(ibd, id_ - iz)
            for x0, y0, ys, xs in subs:
                for iuo in range(0, outer, iud):
                    for ouo in range(0, o_end - oz, oud):
                        for k in range(ys.shape[0]):
                            if ys[k] < 0:                    # a padding slot: a value per channel
                                for q in range(iud * oud // cores):
                                    out[cnt] = -1
                                    cnt += 1
                                continue
                            wy = y0 + ys[k]
                            wx = x0 + xs[k]
                            for iu in range(0, iud, step):
                                for g in range(_INTERLEAVE * s, oud, _INTERLEAVE * cores):
                                    for oi in range(_INTERLEAVE):
                                        o = oz + ouo + g + oi
                                        for ii in range(step):
                                            i = iz + iuo + iu + ii
                                            if o < o_end and i < id_:
                                                out[cnt] = ((o * kh + wy) * kw + wx) * id_ + i
                                            else:
                                                out[cnt] = -1
                                            cnt += 1
        ob += 1
    return cnt


def _index_map(p, s, jit=None):
    if jit is None:
        n_blocks = (-(-p[0] // p[8])) * (-(-p[1] // p[9])) * (-(-p[2] // p[4])) * (-(-p[3] // p[5]))
        jit = n_blocks > _NUMPY_MAX_BLOCKS
    if not jit:
        return _index_map_numpy(p, s)
    out = np.empty(_stream_length(*p), np.int64)
    n = _index_map_kernel(out, np.int64(s), *(np.int64(v) for v in p))
    assert n == out.shape[0]
    return out


# ---------------------------------------------------------------------------------------------------------------
# weights

def _fwd_block(p):
    """Values of one decoder's traversal between two switches of the FWD interleaving."""
    oud, iud, rnd, cores = p[10], p[11], p[12], p[16]
    return oud * iud * rnd // cores


def unpack_weights(decoded_streams, *, ofm_depth: int, ifm_depth: int, kernel_h: int, kernel_w: int,
                       dilation_y: int = 1, dilation_x: int = 1, stride_y: int = 1, stride_x: int = 1,
                       ofm_block_depth: int, ifm_block_depth: int | None = None, ofm_ublock, traversal: str,
                       ifm_bits: int = 8,
                       macs: int, cores: int = 1, weight_format: str = "SWD", sparse: bool = False,
                       jit: bool | None = None) -> np.ndarray:
    """Reorder decoded weight streams into ``W[o, ky, kx, i]`` (int32).

    ``decoded_streams`` holds one decoded array per decoder for SWD (``cores`` of them), one for FWD. Extra
    values at the end of a stream are ignored; a stream shorter than the traversal raises ``MlwError``.
    ``jit`` forces (True) or avoids (False) the numba kernel; by default it builds the traversal of larger
    operations.
    """
    p, fast = _layout(ofm_depth, ifm_depth, kernel_h, kernel_w, dilation_y, dilation_x, stride_y, stride_x,
                      ofm_block_depth, ifm_block_depth, ofm_ublock, traversal, ifm_bits, macs, cores, weight_format,
                      sparse)
    cores = p[-1]
    streams = [np.asarray(d) for d in decoded_streams]
    want = 1 if fast else cores
    if len(streams) != want:
        raise ValueError(f"unpack_weights: {weight_format} with {cores} decoder(s) takes {want} stream(s), "
                         f"not {len(streams)}")
    if any(d.ndim != 1 for d in streams):
        raise ValueError("unpack_weights: decoded streams must be one-dimensional")
    length = _stream_length(*p)
    kind = {v: k for k, v in TRAVERSALS.items()}[p[15]].replace("_", "-")
    shape = f"OHWI {p[0]}x{p[2]}x{p[3]}x{p[1]}"
    need = length * cores if fast else length
    for k, d in enumerate(streams):
        if d.shape[0] < need:
            which = "FWD stream" if fast else f"weight stream {k}"
            raise MlwError(f"U85 {which} too short: {d.shape[0]} values decoded, the {kind} traversal of "
                           f"{shape} weights needs {need}")
    if fast and cores > 1:                            # de-interleave the decoders' blocks
        block = _fwd_block(p)
        d = streams[0][:need].reshape(length // block, cores, block)
        streams = [d[:, k, :].reshape(-1) for k in range(cores)]
    w = np.zeros((p[0], p[2], p[3], p[1]), np.int32)
    flat = w.reshape(-1)
    for k, d in enumerate(streams):
        idx = _index_map(p, k, jit)
        keep = idx >= 0
        flat[idx[keep]] = d[:length][keep]
    return w


unpack_weights.__doc__ += "\n    " + _DOC_PARAMS


def decode_weights(raw_streams, **params) -> np.ndarray:
    """Decode the raw weight streams (bytes per decoder for SWD, one for FWD) with the format's decoder and
    unpack them (:func:`unpack_weights`, same keywords). Only the values the traversal needs are decoded."""
    need = weight_stream_length(**{k: v for k, v in params.items() if k != "jit"})
    if params.get("weight_format", "SWD") == "FWD":
        decoded = [decode_fwd(s, need) for s in raw_streams]
    else:
        decoded = [decode_mlw(s, max_values=need) for s in raw_streams]
    return unpack_weights(decoded, **params)


def _fields(raw: np.ndarray, start: int, count: int, width: int) -> np.ndarray:
    """``count`` little-endian (LSB-first) fields of ``width`` bits from bit ``start`` (header fields)."""
    bits = np.unpackbits(raw[start // 8:(start + count * width + 7) // 8], bitorder="little")
    bits = bits[start % 8:start % 8 + count * width].reshape(count, width)
    return (bits.astype(np.int64) << np.arange(width)).sum(axis=1)


def decode_fwd(data, count: int) -> np.ndarray:
    """Decode ``count`` values of a fast-weight-decoder (FWD) stream into int16 weights in stream order.

    Raises ``MlwError`` if the data is shorter than the 32-byte header plus the codes, or the header sets both
    the raw-mode and the small-LUT flags (the encoder never does).
    """
    raw = _as_uint8(data)
    count = int(count)
    if count < 0:
        raise ValueError(f"decode_fwd: negative value count {count}")
    nbits = raw.shape[0] * 8
    if nbits < _FWD_HEADER_BITS:
        raise MlwError(f"FWD weight stream truncated: {raw.shape[0]} bytes, the header alone is "
                       f"{_FWD_HEADER_BITS // 8}", nbits)
    raw_mode, small_lut = (bool(v) for v in _fields(raw, 0, 2, 1))
    if raw_mode and small_lut:
        raise MlwError("FWD weight stream: header sets both raw mode and small LUT", 0)
    width = 8 if raw_mode else 2 if small_lut else 4
    per_byte = 8 // width
    body = raw[_FWD_HEADER_BITS // 8:]
    if count > body.shape[0] * per_byte:
        raise MlwError(f"FWD weight stream truncated: {count} values of {width} bits need "
                       f"{_FWD_HEADER_BITS // 8 + -(-count // per_byte)} bytes, the stream has {raw.shape[0]}",
                       nbits)
    body = body[:-(-count // per_byte)]
    if raw_mode:
        codes = body.astype(np.int64)
        zero_adjust = int(_fields(raw, 104, 1, 8)[0])
        zero_adjust -= (zero_adjust & 0x80) << 1
        values = codes - ((codes & 0x80) << 1) - zero_adjust      # int8 code minus the zero adjust
    else:
        codes = ((body[:, None] >> (np.arange(per_byte, dtype=np.uint8) * width)) & ((1 << width) - 1))
        lut = _fields(raw, 112, _FWD_LUT_ENTRIES, 9)
        lut = np.where(lut & 1, -(lut >> 1), lut >> 1)            # sign-magnitude, sign in bit 0
        values = lut[codes.reshape(-1)[:count]]
    return values.astype(np.int16)


# ---------------------------------------------------------------------------------------------------------------
# scales

def scale_entries(ofm_depth: int, ofm_ublock_depth: int) -> int:
    """Entries in an operation's scale stream: ``ofm_depth`` rounded up to the micro-block depth rounded up
    to 16."""
    unit = -(-int(ofm_ublock_depth) // 16) * 16
    return -(-int(ofm_depth) // unit) * unit


def decode_scales(data, n: int, acc_bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode ``n`` 10-byte scale entries for ACC_FORMAT I32 (``acc_bits=32``) or I48 (``acc_bits=48``):
    (bias int64, scale int64, shift int32). Raises ``MlwError`` if ``data`` holds fewer than ``n`` entries."""
    if acc_bits not in (32, 48):
        raise ValueError(f"decode_scales: acc_bits must be 32 or 48, not {acc_bits!r}")
    raw = _as_uint8(data)
    n = int(n)
    if n < 0:
        raise ValueError(f"decode_scales: negative entry count {n}")
    if raw.shape[0] < n * SCALE_ENTRY_BYTES:
        raise MlwError(f"U85 scale stream too short: {raw.shape[0]} bytes for {n} entries of "
                       f"{SCALE_ENTRY_BYTES} bytes")
    e = raw[: n * SCALE_ENTRY_BYTES].reshape(n, SCALE_ENTRY_BYTES).astype(np.int64)
    nb = acc_bits // 8                                         # bias bytes: 4 or 6; the scale follows
    bias = np.zeros(n, np.int64)
    for k in range(nb):
        bias |= e[:, k] << (8 * k)
    bias -= (bias & (1 << (acc_bits - 1))) << 1                  # sign-extend
    scale = np.zeros(n, np.int64)
    for k in range(SCALE_ENTRY_BYTES - 2 - nb):                  # 4 or 2 bytes, the top bit reserved
        scale |= e[:, nb + k] << (8 * k)
    scale &= (1 << (8 * (SCALE_ENTRY_BYTES - 2 - nb) - 1)) - 1
    shift = (e[:, 8] & 0x3F).astype(np.int32)
    return bias, scale, shift


# ---------------------------------------------------------------------------------------------------------------
# an operation's streams

def weights_and_scales(ctx, rec, op):
    """``(W, (bias, scale, shift))`` of a CONV/DEPTHWISE: its weight streams (one per weight decoder, or one in
    the fast format) decoded and ordered, and its scale stream; the bytes counted in ``rec`` (an ``OpRecord``).
    ``ctx`` is the executing stream's context (``execute._Ctx``: ``view``, ``arch``, ``weight_cache``)."""
    streams = []
    for wr in op.weights:
        streams.append(ctx.view(wr.region, wr.address, wr.length, False) if wr.length else np.zeros(0, np.uint8))
        rec.add("r", "weights", wr.region, wr.length)
    k = op.kernel
    arch = ctx.arch
    params = dict(
        ofm_depth=op.ofm.depth, ifm_depth=op.ifm.depth, kernel_h=k.height, kernel_w=k.width,
        dilation_y=k.dilation_y, dilation_x=k.dilation_x, stride_y=k.stride_y, stride_x=k.stride_x,
        ofm_block_depth=op.ofm_block[2], ifm_block_depth=block_ifm_depth(arch, op), ofm_ublock=tuple(op.ofm_ublock),
        traversal=op_traversal(op), ifm_bits=op.ifm.bits, macs=arch.macs, cores=arch.cores,
        weight_format=op.weight_format, sparse=op.sparse_weights)
    raw = [bytes(s) for s in streams]
    key = b"u85" + b"".join(len(r).to_bytes(4, "little") + r for r in raw)
    W = ctx.weight_cache.get_decoded(key, tuple(sorted(params.items())), lambda: decode_weights(raw, **params))
    return W, scales(ctx, rec, op)


def scales(ctx, rec, op):
    """``(bias, scale, shift)`` of the operation's scale stream: one entry per OFM channel, 48-bit biases with a
    48-bit accumulator."""
    sr = op.scales[0]
    sbytes = ctx.view(sr.region, sr.address, sr.length, False)
    rec.add("r", "scales", sr.region, sr.length)
    return decode_scales(sbytes, op.ofm.depth, 48 if op.acc_format == "I48" else 32)
