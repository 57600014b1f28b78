"""Ethos-U55/U65 weight and scale streams: weight ordering, scale/bias entries, and reading them for an operation.

Models how the NPU consumes a decoded weight stream (``fvp.machine.npu.mlw``) and the scale stream at SCALE_BASE.
Facts from Vela 5.1's weight encoders (Regor's ``architecture/ethosu55/ethos_u55_weight_encoder.cpp``: the scale
entries of ``EncodeBias``, the buffer layout, the traversal order; the Python ``weight_compressor.py``) and the
micro-block depths of Regor's ``ethos_u55.cpp``; Vela's ``npu_encode_weights`` / ``npu_encode_bias`` are the
oracles the tests compare against.

* ``unpack_weights`` inverts the hardware traversal order: OFM blocks, IFM blocks, <= 8x8 sub-kernels
  (4x4 with dilation 2 in that axis), OFM/IFM micro-blocks and kernel elements, with the zero padding the
  encoder inserts (IFM depth rounded up to the IFM block in depth-first order, kernel elements rounded up for
  depthwise and part-kernel-first). Padding values are skipped, not checked. The result is ``W[o, ky, kx, i]``
  (``i`` has size 1 for depthwise), int32, undilated kernel.
* ``decode_scales`` reads the 10-byte per-channel entries: 40-bit signed bias, 32-bit unsigned multiplier,
  6-bit shift (bits 7:6 of the last byte are ignored).
* ``cached_weights`` decodes a stream once per (bytes, parameters) through the shared ``weight_cache.WeightCache``
  and hands out read-only arrays; ``weights_and_scales`` reads an operation's streams (one per core).

Simplifications: the whole operation's weights are unpacked at once (the hardware streams them block by block);
for U65 dual core each core's stream is unpacked separately (core k holds output channels k, k+2, ...; the
per-core OFM block depth follows Vela, ``(ofm_block_depth + cores - 1 - core) // cores``), which is an
inference from Vela's stream-splitting code. A depthwise operation with the part-kernel bit set is ordered as
depthwise (Vela never emits that combination).
"""

from __future__ import annotations

import numpy as np

from ....errors import NpuFault
from ..descriptors import SCALE_ENTRY_BYTES, SUBKERNEL_MAX
from ..jit import njit
from ..mlw import MlwError, _as_uint8, decode_mlw
from .blocks import ifm_block_depth_limit

__all__ = ["unpack_weights", "weight_stream_length", "decode_scales", "cached_weights", "weights_and_scales"]


def _layout(ofm_depth, ifm_depth, kernel_h, kernel_w, dilation_y, dilation_x, ofm_block_depth, depthwise,
            part_kernel_first, ifm_bits, ofm_ublock_depth, ifm_ublock_depth, cores, core):
    """Validate the parameters; return the per-core traversal parameters as a tuple of ints for the kernels."""
    for name, value in (("ofm_depth", ofm_depth), ("ifm_depth", ifm_depth), ("kernel_h", kernel_h),
                        ("kernel_w", kernel_w), ("ofm_block_depth", ofm_block_depth),
                        ("ofm_ublock_depth", ofm_ublock_depth), ("ifm_ublock_depth", ifm_ublock_depth)):
        if int(value) != value or value < 1:
            raise ValueError(f"unpack_weights: {name} must be a positive integer, not {value!r}")
    if dilation_y not in (1, 2) or dilation_x not in (1, 2):
        raise ValueError(f"unpack_weights: dilation must be 1 or 2, not ({dilation_y}, {dilation_x})")
    if ifm_bits not in (8, 16, 32):
        raise ValueError(f"unpack_weights: ifm_bits must be 8, 16 or 32, not {ifm_bits!r}")
    if cores not in (1, 2) or not 0 <= core < cores:
        raise ValueError(f"unpack_weights: bad core {core!r} of {cores!r}")
    depthwise = bool(depthwise)
    part_kernel = bool(part_kernel_first) and not depthwise
    core_ofm_depth = len(range(core, int(ofm_depth), cores))
    core_block_depth = (int(ofm_block_depth) + cores - 1 - core) // cores
    return (core_ofm_depth, 1 if depthwise else int(ifm_depth), int(kernel_h), int(kernel_w),
            SUBKERNEL_MAX // dilation_y, SUBKERNEL_MAX // dilation_x, max(1, core_block_depth), depthwise,
            part_kernel, int(ifm_bits), int(ofm_ublock_depth), int(ifm_ublock_depth))


def _elements_py(sub_h, sub_w, depthwise, part_kernel, ifm_bits):
    """Kernel elements of a sub-kernel including the encoder's padding."""
    e = sub_h * sub_w
    if part_kernel:
        if ifm_bits == 16:
            e = (e + 1) // 2 * 2
        elif ifm_bits == 8:
            e = (e + 3) // 4 * 4
    elif depthwise:
        e = (e + 3) // 4 * 4
    return e


_elements = njit(_elements_py)  # the same function for the unpack kernel


def _ifm_block_py(iz, ifm_depth, ibd, depthwise, part_kernel, iu):
    """IFM channels the stream holds for the IFM block at ``iz``: one micro-block for depthwise, the depth left
    (at most ``ibd``) for part-kernel-first, the whole block, padded, for depth-first."""
    if depthwise:
        return iu
    if part_kernel:
        return min(ibd, ifm_depth - iz)
    return ibd


_ifm_block_depth = njit(ifm_block_depth_limit)  # the blocks' rule, for the unpack kernel
_ifm_block = njit(_ifm_block_py)


def _stream_length(ofm_depth, ifm_depth, kh, kw, dec_h, dec_w, obd, depthwise, part_kernel, ifm_bits, ou, iu):
    """Number of values (including padding) the traversal consumes. Plain Python (a few hundred block
    iterations for the largest operation): compiling it would cost more than it ever saves."""
    ibd = ifm_block_depth_limit(part_kernel, ifm_bits)
    total = 0
    for oz in range(0, ofm_depth, obd):
        cobd = min(obd, ofm_depth - oz)
        n_ou = (cobd + ou - 1) // ou
        for iz in range(0, 1 if depthwise else ifm_depth, ibd):
            cibd = _ifm_block_py(iz, ifm_depth, ibd, depthwise, part_kernel, iu)
            n_iu = (cibd + iu - 1) // iu
            per_element = ou * (1 if depthwise else iu)
            for sy in range(0, kh, dec_h):
                sh = min(kh - sy, dec_h)
                for sx in range(0, kw, dec_w):
                    sw = min(kw - sx, dec_w)
                    e = _elements_py(sh, sw, depthwise, part_kernel, ifm_bits)
                    total += n_iu * n_ou * e * per_element
    return total


@njit
def _unpack_kernel(decoded, w, ofm_depth, ifm_depth, kh, kw, dec_h, dec_w, obd, depthwise, part_kernel,
                   ifm_bits, ou, iu):
    """Scatter ``decoded`` (stream order) into ``w[o, ky, kx, i]``; returns the number of values consumed."""
    ibd = _ifm_block_depth(part_kernel, ifm_bits)
    iu_inner = 1 if depthwise else iu
    cnt = 0
    for oz in range(0, ofm_depth, obd):
        cobd = min(obd, ofm_depth - oz)
        for iz in range(0, 1 if depthwise else ifm_depth, ibd):
            cibd = _ifm_block(iz, ifm_depth, ibd, depthwise, part_kernel, iu)
            outer = cibd if part_kernel else 1
            inner = 1 if part_kernel else cibd
            for sy in range(0, kh, dec_h):
                sh = min(kh - sy, dec_h)
                for sx in range(0, kw, dec_w):
                    sw = min(kw - sx, dec_w)
                    n_el = _elements(sh, sw, depthwise, part_kernel, ifm_bits)
                    for u_out in range(0, outer, iu):
                        for o_ub in range(0, cobd, ou):
                            for el in range(n_el):
                                ky = el // sw
                                kx = el % sw
                                if ky >= sh:            # element padding
                                    cnt += ((inner + iu - 1) // iu) * ou * iu_inner
                                    continue
                                y = sy + ky
                                x = sx + kx
                                for u_in in range(0, inner, iu):
                                    i0 = iz + u_out + u_in
                                    for oo in range(ou):
                                        o = oz + o_ub + oo
                                        if o < ofm_depth:
                                            for ii in range(iu_inner):
                                                i = i0 + ii
                                                if i < ifm_depth:
                                                    w[o, y, x, i] = decoded[cnt + ii]
                                        cnt += iu_inner
    return cnt


def _unpack_numpy(decoded, w, ofm_depth, ifm_depth, kh, kw, dec_h, dec_w, obd, depthwise, part_kernel, ifm_bits,
                  ou, iu):
    """:func:`_unpack_kernel` with numpy, one traversal block (OFM block x IFM block x sub-kernel) at a time:
    a block's values are, in stream order, a dense ``(IFM outer units, OFM micro-blocks, kernel elements,
    IFM inner units, OFM channels of a micro-block, IFM channels of a unit)`` array. Within a block no two
    values go to one weight, and blocks are written in stream order, so the result is the kernel's. It spares
    the first run after installing the kernel's compile (0.9 s); returns the number of values consumed."""
    ibd = ifm_block_depth_limit(part_kernel, ifm_bits)
    iu_inner = 1 if depthwise else iu
    cnt = 0
    ii = np.arange(iu_inner)
    oo = np.arange(ou)
    for oz in range(0, ofm_depth, obd):
        cobd = min(obd, ofm_depth - oz)
        n_ob = -(-cobd // ou)
        for iz in range(0, 1 if depthwise else ifm_depth, ibd):
            cibd = _ifm_block_py(iz, ifm_depth, ibd, depthwise, part_kernel, iu)
            outer = cibd if part_kernel else 1
            inner = 1 if part_kernel else cibd
            n_uo, n_ui = -(-outer // iu), -(-inner // iu)
            o = oz + (np.arange(n_ob) * ou)[:, None] + oo                               # (n_ob, ou)
            i = iz + (np.arange(n_uo) * iu)[:, None, None] + (np.arange(n_ui) * iu)[:, None] + ii  # (n_uo, n_ui, iu')
            for sy in range(0, kh, dec_h):
                sh = min(kh - sy, dec_h)
                for sx in range(0, kw, dec_w):
                    sw = min(kw - sx, dec_w)
                    n_el = _elements_py(sh, sw, depthwise, part_kernel, ifm_bits)
                    size = n_uo * n_ob * n_el * n_ui * ou * iu_inner
                    block = decoded[cnt:cnt + size].reshape(n_uo, n_ob, n_el, n_ui, ou, iu_inner)
                    cnt += size
                    el = np.arange(n_el)
                    ky, kx = el // sw, el % sw
                    O = o[None, :, None, None, :, None]
                    I = i[:, None, None, :, None, :]
                    Y = (sy + ky)[None, None, :, None, None, None]
                    X = (sx + kx)[None, None, :, None, None, None]
                    valid = (O < ofm_depth) & (I < ifm_depth) & (ky < sh)[None, None, :, None, None, None]
                    O, Y, X, I, valid = np.broadcast_arrays(O, Y, X, I, valid)
                    w[O[valid], Y[valid], X[valid], I[valid]] = block[valid]
    return cnt


def weight_stream_length(*, ofm_depth: int, ifm_depth: int, kernel_h: int, kernel_w: int, dilation_y: int = 1,
                         dilation_x: int = 1, ofm_block_depth: int, depthwise: bool, part_kernel_first: bool,
                         ifm_bits: int = 8, ofm_ublock_depth: int = 8, ifm_ublock_depth: int = 8, cores: int = 1,
                         core: int = 0) -> int:
    """Number of decoded values (weights and padding) ``unpack_weights`` needs for these parameters."""
    p = _layout(ofm_depth, ifm_depth, kernel_h, kernel_w, dilation_y, dilation_x, ofm_block_depth, depthwise,
                part_kernel_first, ifm_bits, ofm_ublock_depth, ifm_ublock_depth, cores, core)
    return int(_stream_length(*p))


def unpack_weights(decoded: np.ndarray, *, ofm_depth: int, ifm_depth: int, kernel_h: int, kernel_w: int,
                   dilation_y: int = 1, dilation_x: int = 1, ofm_block_depth: int, depthwise: bool,
                   part_kernel_first: bool, ifm_bits: int = 8, ofm_ublock_depth: int = 8,
                   ifm_ublock_depth: int = 8, cores: int = 1, core: int = 0) -> np.ndarray:
    """Reorder a decoded weight stream (``decode_mlw`` output) into ``W[o, ky, kx, i]`` (int32).

    ``ofm_depth`` is the operation's OFM depth (all cores), ``ifm_depth`` its IFM depth (ignored for depthwise:
    the result has one input channel), ``kernel_h``/``kernel_w`` the undilated kernel size, ``ofm_block_depth``
    the OFM block depth of the block configuration. With ``cores=2`` the result holds this core's channels
    ``o = core, core + 2, ...`` in that order. Raises ``MlwError`` if ``decoded`` is shorter than the traversal
    needs; extra values are ignored.
    """
    p = _layout(ofm_depth, ifm_depth, kernel_h, kernel_w, dilation_y, dilation_x, ofm_block_depth, depthwise,
                part_kernel_first, ifm_bits, ofm_ublock_depth, ifm_ublock_depth, cores, core)
    decoded = np.asarray(decoded)
    if decoded.ndim != 1:
        raise ValueError("unpack_weights: decoded stream must be one-dimensional")
    need = int(_stream_length(*p))
    if decoded.shape[0] < need:
        kind = "depthwise" if p[7] else "convolution"
        raise MlwError(f"MLW weight stream too short: {decoded.shape[0]} values decoded, the {kind} traversal of "
                       f"OHWI {p[0]}x{p[2]}x{p[3]}x{p[1]} weights needs {need}")
    w = np.zeros((p[0], p[2], p[3], p[1]), np.int32)
    if need:
        if decoded.dtype not in (np.int16, np.int32):
            decoded = decoded.astype(np.int32)
        _unpack_numpy(decoded, w, *p)
    return w


def decode_scales(data, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode ``n`` 10-byte scale entries: (bias int64 from 40-bit signed, scale int64 from 32-bit unsigned,
    shift int32 from 6 bits). Raises ``MlwError`` if ``data`` holds fewer than ``n`` entries."""
    raw = _as_uint8(data)
    n = int(n)
    if n < 0:
        raise ValueError(f"decode_scales: negative entry count {n}")
    if raw.shape[0] < n * SCALE_ENTRY_BYTES:
        raise MlwError(f"scale stream too short: {raw.shape[0]} bytes for {n} entries of {SCALE_ENTRY_BYTES} bytes")
    e = raw[: n * SCALE_ENTRY_BYTES].reshape(n, SCALE_ENTRY_BYTES).astype(np.int64)
    bias = e[:, 0] | (e[:, 1] << 8) | (e[:, 2] << 16) | (e[:, 3] << 24) | (e[:, 4] << 32)
    bias = bias - ((bias & (1 << 39)) << 1)                    # sign-extend 40 bits
    scale = e[:, 5] | (e[:, 6] << 8) | (e[:, 7] << 16) | (e[:, 8] << 24)
    shift = (e[:, 9] & 0x3F).astype(np.int32)
    return bias, scale, shift


_UNPACK_DEFAULTS = dict(dilation_y=1, dilation_x=1, ifm_bits=8, ofm_ublock_depth=8, ifm_ublock_depth=8, cores=1,
                        core=0)
_UNPACK_REQUIRED = ("ofm_depth", "ifm_depth", "kernel_h", "kernel_w", "ofm_block_depth", "depthwise",
                    "part_kernel_first")


def cached_weights(cache, stream_bytes, **unpack_kwargs) -> np.ndarray:
    """The decoded and ordered weights of one stream (:func:`unpack_weights`' keywords), from ``cache`` (a
    ``weight_cache.WeightCache``) or decoded into it: read-only, the same object for the same bytes and
    parameters. Only the values the traversal needs are decoded (``decode_mlw(max_values=...)``), as the hardware
    fetches no further."""
    unknown = set(unpack_kwargs) - set(_UNPACK_DEFAULTS) - set(_UNPACK_REQUIRED)
    if unknown:
        raise TypeError(f"cached_weights: unknown unpack parameters {sorted(unknown)}")
    params = dict(_UNPACK_DEFAULTS)
    params.update(unpack_kwargs)
    if isinstance(stream_bytes, np.ndarray):
        stream = _as_uint8(stream_bytes).tobytes()
    else:
        stream = bytes(stream_bytes)

    def decode():
        need = weight_stream_length(**params)
        return unpack_weights(decode_mlw(stream, max_values=need), **params)

    return cache.get_decoded(stream, tuple(sorted((k, int(v)) for k, v in params.items())), decode)


def weights_and_scales(ctx, rec, op):
    """``(W, (bias, scale, shift))`` of a CONV/DEPTHWISE: each core's weight stream decoded and ordered (core k
    holds OFM channels k, k + cores, ...), its scale stream's entries; the bytes counted in ``rec`` (an
    ``OpRecord``). ``ctx`` is the executing stream's context (``execute._Ctx``: ``view``, ``arch``,
    ``weight_cache``)."""
    cache = ctx.weight_cache
    # A decoded operation replayed by a later inference: its streams' bytes compared with the ones it decoded
    # last time (a copy and a memcmp, no hashing), then the same arrays; any changed byte, or a view that
    # faults, takes the full path (which raises the same fault in the same order as it always did).
    active = [c for c in range(len(op.weights)) if len(range(c, op.ofm.depth, len(op.weights)))]
    memo = cache.by_operation(op, ctx.arch.name)
    if memo is not None:
        try:
            snap = _stream_bytes(ctx, op, active)
        except NpuFault:
            snap = None
        if snap == memo[0]:
            for c in active:
                rec.add("r", "weights", op.weights[c].region, op.weights[c].length)
                rec.add("r", "scales", op.scales[c].region, op.scales[c].length)
            cache.hits += len(active)
            return memo[1]
    result = _decode_weights_and_scales(ctx, rec, op, cache)
    for a in (result[0], *result[1]):
        a.flags.writeable = False  # shared by every later replay of this operation
    cache.remember_operation(op, ctx.arch.name, (_stream_bytes(ctx, op, active), result))
    return result


def _stream_bytes(ctx, op, active) -> list:
    """Copies of the weight and scale streams of the cores in ``active``, in the order they are read."""
    out = []
    for c in active:
        wr, sr = op.weights[c], op.scales[c]
        out.append(ctx.view(wr.region, wr.address, wr.length, False).tobytes())
        out.append(ctx.view(sr.region, sr.address, sr.length, False).tobytes())
    return out


def _decode_weights_and_scales(ctx, rec, op, cache):
    k = op.kernel
    od = op.ofm.depth
    depthwise = op.kind == "DEPTHWISE"
    cores = len(op.weights)
    parts = []
    for core in range(cores):
        n = len(range(core, od, cores))
        wr = op.weights[core]
        sr = op.scales[core]
        if n == 0:
            parts.append(None)
            continue
        wbytes = ctx.view(wr.region, wr.address, wr.length, False)
        rec.add("r", "weights", wr.region, wr.length)
        W = cached_weights(cache, wbytes, ofm_depth=od, ifm_depth=op.ifm.depth, kernel_h=k.height, kernel_w=k.width,
                           dilation_y=k.dilation_y, dilation_x=k.dilation_x, ofm_block_depth=op.ofm_block[2],
                           depthwise=depthwise, part_kernel_first=k.part_kernel_first, ifm_bits=op.ifm.bits,
                           ofm_ublock_depth=ctx.arch.ofm_ublock_depth, ifm_ublock_depth=ctx.arch.ifm_ublock_depth,
                           cores=cores, core=core)
        sbytes = ctx.view(sr.region, sr.address, sr.length, False)
        rec.add("r", "scales", sr.region, sr.length)
        parts.append((W, decode_scales(sbytes, n)))
    if cores == 1:
        W, (bias, scale, shift) = parts[0]
        return W, (bias, scale, shift)
    W0 = parts[0][0]
    W = np.zeros((od,) + W0.shape[1:], np.int32)
    bias = np.zeros(od, np.int64)
    scale = np.zeros(od, np.int64)
    shift = np.zeros(od, np.int32)
    for core, p in enumerate(parts):
        if p is None:
            continue
        Wc, (b, s, sh) = p
        W[core::cores] = Wc
        bias[core::cores] = b
        scale[core::cores] = s
        shift[core::cores] = sh
    return W, (bias, scale, shift)


def scales(ctx, rec, op):
    """``(bias, scale, shift)`` of the scale stream of an operation without weights (one entry per OFM channel)."""
    sr = op.scales[0]
    sbytes = ctx.view(sr.region, sr.address, sr.length, False)
    rec.add("r", "scales", sr.region, sr.length)
    return decode_scales(sbytes, op.ofm.depth)
