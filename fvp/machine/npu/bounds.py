"""What one NPU operation may ask of the host, checked before any of its work starts (issue 16).

A command stream is data from the program: its register values can describe an operation of any size. Before
an operation computes anything, every resource it would need is bounded by what the board's memories can hold
and by a fixed host budget, and an operation over a bound ends the stream with a one-line ``NpuFault``:

* a feature map (the OFM it writes, each IFM it reads) cannot hold more bytes than the memory its region and
  base point into (``bus_error``: on the hardware such an access runs off that memory or overwrites itself),
  and its whole byte range must lie in that memory (checked for the OFM too, before computing it, not after);
* a DMA cannot move more bytes than the memories at its source and destination hold (``bus_error``);
* the weights an operation decodes cannot outnumber what its weight stream's length can encode
  (:func:`max_decoded_weights`: the MLW codec's maximum expansion; ``cmd_parse_error``);
* a stream executes at most :data:`MAX_OPERATIONS_PER_STREAM` operations (``unsupported``: the host memory of
  their records);
* the host memory the engine needs for the operation (its dense operand, accumulator and output arrays, the
  weight stream copied and decoded, a stripe of the convolution's im2col matrix) is at most
  :data:`HOST_BYTES_PER_OP` (``unsupported``: valid for the hardware, too large to simulate).

Work that stays within these bounds can still be long (a large convolution); the engines call
``fvp.machine.sim.interruption_point()`` between stripes and taps, so ``--timelimit`` stops it within about a
second. ``memory`` objects without ``memory_at`` (test fakes) skip the memory-size checks.
"""

from __future__ import annotations

from ...errors import NpuFault
from . import featuremap as fmap
from .memo import MISS, IdentityMemo

#: host bytes one operation may use (its arrays in the fast engine; the reference engine counts its object arrays
#: as HOST_BYTES_FACTOR times more)
HOST_BYTES_PER_OP = 1 << 30

#: operations one command stream may execute: each keeps a record (about 1 KiB of host memory) for the timing
#: model and the PMU; a real stream has at most a few thousand
MAX_OPERATIONS_PER_STREAM = 100_000

#: elements of one stripe of the fast engine's im2col matrix (the convolution is computed stripe by stripe)
IM2COL_STRIPE_ELEMENTS = 1 << 22

# The MLW codec's maximum expansion: a slice holds at most 32768 weights (SLICELEN is 15 bits) behind a header of
# at least 23 bits (ZDIV 3, SLICELEN 15, WDIV 3, WTRUNC 1, NEWPAL 1), whose weights may cost no further bit
# (uncompressed with a one-entry palette); each bit of a zero-run length stands for at most 2**3 zeros.
_MLW_SLICE_WEIGHTS = 32768
_MLW_SLICE_HEADER_BITS = 23
_MLW_ZEROS_PER_BIT = 8


def max_decoded_weights(nbytes: int) -> int:
    """The most weight values an MLW stream of ``nbytes`` bytes can decode to."""
    bits = 8 * max(int(nbytes), 0)
    return (bits // _MLW_SLICE_HEADER_BITS) * _MLW_SLICE_WEIGHTS + _MLW_ZEROS_PER_BIT * bits


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n} bytes"


def _memory(ctx, region: int, offset: int):
    """(address, (start, size, name) or None) of region offset ``offset``."""
    address = (ctx.bases[region] + offset) & ctx.mask
    seen = getattr(ctx, "memory_at_cache", None)  # execute's context: the memory map is fixed during a stream
    if seen is not None:
        mem = seen.get(address, seen)
        if mem is not seen:
            return address, mem
    at = getattr(ctx.memory, "memory_at", None)
    mem = at(address) if at is not None else None
    if seen is not None:
        seen[address] = mem
    return address, mem


def _check_fm(ctx, op, fm, tensor: str, h: int, w: int, d: int, write: bool) -> None:
    if fm.storage == "CHAINED":  # a U85 chaining buffer, not memory
        return
    ext = fmap.extent(fm, h, w, d)
    if ext is None:
        return
    _check_extent(ctx, op, fm, tensor, h, w, d, write, ext, fmap.storage_bytes(fm, h, w, d))


def _check_extent(ctx, op, fm, tensor, h, w, d, write, ext, nbytes) -> None:
    address, mem = _memory(ctx, fm.region, ext[0])
    if mem is not None and nbytes > mem[1]:
        raise NpuFault("bus_error", f"{op.mnemonic} at 0x{op.offset:x}: the {tensor} ({h}x{w}x{d} {fm.dtype} "
                       f"{fm.format}, {_mib(nbytes)}) is larger than {mem[2]} ({_mib(mem[1])}), the memory its "
                       f"region {fm.region} and base point into", offset=op.offset, address=address,
                       region=fm.region)
    if write:  # the OFM's range is checked now, not after the operation was computed
        ctx.view(fm.region, ext[0], ext[1] - ext[0], True)


def _elements(h, w, d) -> int:
    return max(h, 0) * max(w, 0) * max(d, 0)


def host_bytes(op) -> int:
    """Host bytes the fast engine needs for a kernel operation (an upper estimate)."""
    o, i = op.ofm, op.ifm
    n_ofm = _elements(o.height, o.width, o.depth)
    n_ifm = _elements(i.source_height, i.source_width, i.depth)
    n_ifm2 = 0
    if op.ifm2 is not None and not (op.broadcast is not None and op.broadcast.scalar):
        f2 = op.ifm2
        n_ifm2 = _elements(f2.height, f2.width, f2.depth)
    n_pad = n_weights = cols = 0
    k = op.kernel
    if k is not None and op.kind != "ELEMENTWISE":
        ph = (o.height - 1) * k.stride_y + k.dilated_height
        pw = (o.width - 1) * k.stride_x + k.dilated_width
        n_pad = _elements(ph, pw, i.depth)
        if op.kind == "CONV":
            K = k.elements * i.depth
            n_weights = o.depth * K
            cols = 8 * min(o.height * o.width * K, max(o.width * K, IM2COL_STRIPE_ELEMENTS))
        elif op.kind == "DEPTHWISE":
            n_weights = o.depth * k.elements
    stream = sum(r.length for r in op.weights)
    return 8 * (2 * n_ifm + 2 * n_ifm2 + 2 * n_pad + 6 * n_ofm + 2 * n_weights) + cols + 2 * stream


# Operations that passed check_kernel_op once (the decoded operations a replayed stream runs again), with the
# limits they passed: (operation; HOST_BYTES_FACTOR, HOST_BYTES_PER_OP) -> the memory checks: feature maps
# (tensor, fm, h, w, d, write, extent, bytes) and weight streams. What depends on the operation alone is not
# recomputed; what depends on memory and the base pointers is checked again, in the same order.
_CHECKED = IdentityMemo()


def check_kernel_op(ctx, op) -> None:
    """Refuse a kernel operation whose feature maps, weights or host arrays exceed their bounds."""
    factor = getattr(ctx.engine, "HOST_BYTES_FACTOR", 1)
    limits = (factor, HOST_BYTES_PER_OP)
    hit = _CHECKED.get((op,), limits)
    if hit is not MISS:
        for tensor, fm, h, w, d, write, ext, nbytes in hit[0]:
            _check_extent(ctx, op, fm, tensor, h, w, d, write, ext, nbytes)
        for wr in hit[1]:
            _memory_fits(ctx, op, "weight stream", wr.region, wr.address, wr.length)
        return
    _check_kernel_op(ctx, op, factor)
    fms = []
    for tensor, fm, h, w, d, write in _feature_maps(op):
        if fm.storage == "CHAINED":
            continue
        ext = fmap.extent(fm, h, w, d)
        if ext is not None:
            fms.append((tensor, fm, h, w, d, write, ext, fmap.storage_bytes(fm, h, w, d)))
    streams = list(op.weights) if op.kind in ("CONV", "DEPTHWISE") else []
    _CHECKED.put((op,), (fms, streams), limits)


def checked_before(ctx, op) -> bool:
    """Whether ``op`` passed :func:`check_kernel_op` before with this engine's limits (what depends on the
    operation alone holds again; the memory checks do not come with it)."""
    return _CHECKED.get((op,), (getattr(ctx.engine, "HOST_BYTES_FACTOR", 1), HOST_BYTES_PER_OP)) is not MISS


def _feature_maps(op):
    """(tensor, feature map, h, w, d, written) of the areas a kernel operation reads and writes, in check order."""
    i = op.ifm
    out = []
    if op.kind == "ELEMENTWISE":
        if op.ifm_scalar is None:
            out.append(("IFM", i, i.height, i.width, i.depth, False))
        if op.ifm2 is not None and not (op.broadcast is not None and op.broadcast.scalar):
            f2 = op.ifm2
            out.append(("IFM2", f2, f2.height, f2.width, f2.depth, False))
    else:
        out.append(("IFM", i, i.source_height, i.source_width, i.depth, False))
        if op.ifm2 is not None:  # U85 convolution with weights from IFM2
            f2 = op.ifm2
            out.append(("IFM2", f2, f2.height, f2.width, f2.depth, False))
    out.append(("OFM", op.ofm, *op.ofm.stored_shape, True))
    return out


def _check_kernel_op(ctx, op, factor) -> None:
    i = op.ifm
    if op.kind == "ELEMENTWISE":
        if op.ifm_scalar is None:
            _check_fm(ctx, op, i, "IFM", i.height, i.width, i.depth, False)
        if op.ifm2 is not None and not (op.broadcast is not None and op.broadcast.scalar):
            f2 = op.ifm2
            _check_fm(ctx, op, f2, "IFM2", f2.height, f2.width, f2.depth, False)
    else:
        _check_fm(ctx, op, i, "IFM", i.source_height, i.source_width, i.depth, False)
        if op.ifm2 is not None:  # U85 convolution with weights from IFM2
            f2 = op.ifm2
            _check_fm(ctx, op, f2, "IFM2", f2.height, f2.width, f2.depth, False)
    o = op.ofm
    _check_fm(ctx, op, o, "OFM", *o.stored_shape, True)
    if op.kind in ("CONV", "DEPTHWISE"):
        k = op.kernel
        per_channel = k.elements * (i.depth if op.kind == "CONV" else 1)
        cores = max(len(op.weights), 1)
        by_channel = op.weights_split == "CHANNELS"
        for core, wr in enumerate(op.weights):
            # "CHANNELS" (the U65's cores): stream k holds channels k, k + cores, ...; "TRAVERSAL" (the U85's
            # decoders): the streams share one traversal of the channels, so only their total is bounded here
            if by_channel:
                need = len(range(core, o.depth, cores)) * per_channel
                most = max_decoded_weights(wr.length)
            else:
                need = o.depth * per_channel if core == 0 else 0
                most = sum(max_decoded_weights(w.length) for w in op.weights) if core == 0 else 0
            if need > most:
                raise NpuFault("cmd_parse_error", f"{op.mnemonic} at 0x{op.offset:x} needs {need} weights, but its "
                               f"{wr.length}-byte weight stream can encode at most {most}", offset=op.offset)
            _memory_fits(ctx, op, "weight stream", wr.region, wr.address, wr.length)
    need = host_bytes(op) * factor
    if need > HOST_BYTES_PER_OP:
        raise NpuFault("unsupported", f"{op.mnemonic} at 0x{op.offset:x} is too large to simulate: it needs about "
                       f"{_mib(need)} of host memory (the limit is {_mib(HOST_BYTES_PER_OP)} per operation)",
                       offset=op.offset)


def _memory_fits(ctx, op, what: str, region: int, offset: int, nbytes: int) -> None:
    address, mem = _memory(ctx, region, offset)
    if mem is not None and address + nbytes > mem[0] + mem[1]:
        raise NpuFault("bus_error", f"{op.mnemonic} at 0x{op.offset:x}: the {what} of {_mib(nbytes)} at 0x{address:x} "
                       f"runs past the end of {mem[2]} (0x{mem[0] + mem[1]:x})", offset=op.offset,
                       address=address, region=region)


def check_dma(ctx, op, total: int, dst_span: int) -> None:
    """Refuse a DMA that moves more than its source and destination memories hold, or than the host budget."""
    d = op.dma
    if not d.src_internal:
        _memory_fits(ctx, op, "DMA source", d.src_region, d.src_address, total)
    if not d.dst_internal:
        _memory_fits(ctx, op, "DMA destination", d.dst_region, d.dst_address, dst_span)
    if total > HOST_BYTES_PER_OP:
        raise NpuFault("unsupported", f"DMA at 0x{op.offset:x} of {_mib(total)} is too large to simulate (the limit "
                       f"is {_mib(HOST_BYTES_PER_OP)} per operation)", offset=op.offset)
