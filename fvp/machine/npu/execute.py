"""Execute a whole Ethos-U command stream against memory, strictly in order (ethosu.md sections 1.9-1.10).

DMA copies happen at ``NPU_OP_DMA_START``; every kernel operation runs to completion at its ``NPU_OP_*``
(computed into a temporary, then written, so IFM and OFM may alias).  Waits, ``BLOCKDEP`` and the PMU mask have
no functional effect in this serialisation.  Faults (a malformed command, an unreachable address, the
watchdog) end the run and are returned in :class:`StreamResult`, never raised.  Fault kinds: ``cmd_parse_error``,
``bus_error``, ``watchdog``, ``unsupported`` (a feature the model does not implement: F16 accumulators, 64-bit feature maps, operations too large for host memory) and ``internal_error`` (a bug in
the model; the original exception is ``fault.__cause__``).

``memory`` is any object with ``view(address, length, write) -> np.ndarray[uint8]`` (zero-copy into simulated
RAM) raising ``NpuFault("bus_error", address=...)`` for an address the NPU cannot reach.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import NpuFault
from ..cancel import interruption_point
from . import bounds
from . import featuremap as fmap
from .arch import get_arch
from .command_stream import RegisterState, as_words, decode_command
from .descriptors import TRANSPOSE_AXES
from .memo import MISS, BoundedCache, IdentityMemo
from .operations import NpuOperation, build_operation
from .traffic import SHRAM_REGION, OpRecord  # noqa: F401  (OpRecord: the records a StreamResult lists)

@dataclass
class StreamResult:
    operations: list  # OpRecord per executed NPU_OP_* (STOP included)
    stopped: bool  # reached NPU_OP_STOP
    fault: NpuFault | None
    commands: int  # commands executed (register writes and operations)
    end_offset: int = 0  # byte offset after the last command executed (STOP included)

    @property
    def ok(self) -> bool:
        return self.stopped and self.fault is None

    @property
    def macs(self) -> int:
        return sum(r.macs for r in self.operations)


def _get_engine(engine):
    if engine == "reference":
        from .engines import reference

        return reference
    if engine == "fast":
        from .engines import fast

        return fast
    if hasattr(engine, "run_kernel_op"):
        return engine
    raise ValueError(f"unknown NPU engine {engine!r} (expected 'fast' or 'reference')")


class _Ctx:
    def __init__(self, arch, base_pointers, memory, shram, engine, weight_cache):
        self.arch = arch
        self.bases = [int(b) for b in base_pointers] + [0] * (8 - len(base_pointers))
        self.memory = memory
        self.shram = shram
        self.engine = engine
        self.weight_cache = weight_cache
        self.mask = arch.address_mask
        self.checker = None
        self.chain = {}  # Ethos-U85 chaining buffers: index -> the OFM array a chained operation left there
        self.memory_at_cache = {}  # bounds: address -> memory.memory_at(address), for this stream's run

    def view(self, region: int, offset: int, length: int, write: bool) -> np.ndarray:
        address = (self.bases[region] + offset) & self.mask
        try:
            v = self.memory.view(address, int(length), write)
        except NpuFault as f:
            if f.region is None:
                f.region = region
            if f.address is None:
                f.address = address
            raise
        if v.shape[0] < length:
            raise NpuFault("bus_error", f"memory view at 0x{address:x} shorter than {length} bytes",
                           address=address, region=region)
        return v

    def shram_slice(self, offset: int, length: int) -> np.ndarray:
        if offset < 0 or offset + length > self.shram.shape[0]:
            raise NpuFault("bus_error", f"SHRAM access 0x{offset:x}+{length} outside the {self.shram.shape[0]}-byte "
                           f"SHRAM", address=offset)
        return self.shram[offset:offset + length]


_REVERSE_AXIS = {"H": 0, "W": 1, "C": 2}


def _read_fm(ctx: _Ctx, rec: OpRecord, fm, tensor: str, h: int, w: int, d: int) -> np.ndarray:
    if fm.storage == "CHAINED":
        v = ctx.chain.get(fm.region)
        if v is None or v.shape != (h, w, d):
            got = "empty" if v is None else "x".join(map(str, v.shape))
            raise NpuFault("cmd_parse_error", f"{tensor} reads chaining buffer {fm.region} as {h}x{w}x{d}, but it "
                           f"holds {got}")
        return v
    ext = fmap.extent(fm, h, w, d)
    if ext is None:
        return np.zeros((max(h, 0), max(w, 0), max(d, 0)), np.int32)
    lo, hi = ext
    view = ctx.view(fm.region, lo, hi - lo, False)
    rec.add("r", tensor, fm.region, fmap.storage_bytes(fm, h, w, d))
    return fmap.gather(fm, view, lo, h, w, d)


def _write_fm(ctx: _Ctx, rec: OpRecord, fm, values: np.ndarray) -> None:
    if fm.storage == "CHAINED":
        ctx.chain[fm.region] = values
        return
    if fm.reverse != "NONE":
        values = np.flip(values, axis=_REVERSE_AXIS[fm.reverse])
    if fm.transpose != "HWC":
        values = np.ascontiguousarray(values.transpose(TRANSPOSE_AXES[fm.transpose]))
    h, w, d = values.shape
    ext = fmap.extent(fm, h, w, d)
    if ext is None:
        return
    lo, hi = ext
    view = ctx.view(fm.region, lo, hi - lo, True)
    rec.add("w", "ofm", fm.region, fmap.storage_bytes(fm, h, w, d))
    fmap.scatter(fm, view, lo, values)


def _weights_and_scales(ctx: _Ctx, rec: OpRecord, op: NpuOperation):
    from .weights import WeightCache

    cache = ctx.weight_cache
    if cache is None:
        cache = ctx.weight_cache = WeightCache()
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


def _stream_bytes(ctx: _Ctx, op: NpuOperation, active) -> list:
    """Copies of the weight and scale streams of the cores in ``active``, in the order they are read."""
    out = []
    for c in active:
        wr, sr = op.weights[c], op.scales[c]
        out.append(ctx.view(wr.region, wr.address, wr.length, False).tobytes())
        out.append(ctx.view(sr.region, sr.address, sr.length, False).tobytes())
    return out


def _decode_weights_and_scales(ctx: _Ctx, rec: OpRecord, op: NpuOperation, cache):
    from .weights import decode_scales

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
        W = cache.get(wbytes, ofm_depth=od, ifm_depth=op.ifm.depth, kernel_h=k.height, kernel_w=k.width,
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


def _weights_and_scales_u85(ctx: _Ctx, rec: OpRecord, op: NpuOperation):
    """The U85's weight streams (one per weight decoder, or one in the fast format) and its scale stream."""
    from .weights_u85 import decode_weights_u85, ifm_block_depth_u85

    streams = []
    for wr in op.weights:
        streams.append(ctx.view(wr.region, wr.address, wr.length, False) if wr.length else np.zeros(0, np.uint8))
        rec.add("r", "weights", wr.region, wr.length)
    k = op.kernel
    traversal = ("depthwise" if op.kind == "DEPTHWISE" else
                 "part_kernel_first" if k.part_kernel_first else "depth_first")
    ub = op.ofm_ublock
    params = dict(
        ofm_depth=op.ofm.depth, ifm_depth=op.ifm.depth, kernel_h=k.height, kernel_w=k.width,
        dilation_y=k.dilation_y, dilation_x=k.dilation_x, stride_y=k.stride_y, stride_x=k.stride_x,
        ofm_block_depth=op.ofm_block[2],
        ifm_block_depth=ifm_block_depth_u85(traversal=traversal, ifm_bits=op.ifm.bits, macs=ctx.arch.macs,
                                            ofm_ublock_depth=ub[2], sparse=op.sparse_weights),
        ofm_ublock=tuple(ub), traversal=traversal, ifm_bits=op.ifm.bits, macs=ctx.arch.macs, cores=ctx.arch.cores,
        weight_format=op.weight_format, sparse=op.sparse_weights)
    cache = ctx.weight_cache
    if cache is None:
        from .weights import WeightCache
        cache = ctx.weight_cache = WeightCache()
    raw = [bytes(s) for s in streams]
    key = b"u85" + b"".join(len(r).to_bytes(4, "little") + r for r in raw)
    W = cache.get_decoded(key, tuple(sorted(params.items())), lambda: decode_weights_u85(raw, **params))
    return W, _scales_u85(ctx, rec, op)


def _scales_u85(ctx: _Ctx, rec: OpRecord, op: NpuOperation):
    from .weights_u85 import decode_scales_u85

    sr = op.scales[0]
    sbytes = ctx.view(sr.region, sr.address, sr.length, False)
    rec.add("r", "scales", sr.region, sr.length)
    return decode_scales_u85(sbytes, op.ofm.depth, 48 if op.acc_format == "I48" else 32)


def _lut_bytes(ctx: _Ctx, rec: OpRecord, op: NpuOperation):
    """The SHRAM / LUT RAM bytes from the activation's table slot on, or None (no table: no activation, or the
    U55/U65's built-in TANH/SIGMOID)."""
    act = op.activation
    t = act.table
    if t is None and act.builtin:
        t = act.lut_slot  # the U85's LUT_TANH/LUT_SIGMOID: a 2 KiB interpolating table
    if t is None:
        return None
    start = ctx.arch.lut_start_bytes + 256 * t
    length = ctx.shram.shape[0] - start
    clip = act.clip_range
    index_bits = 16 if act.builtin else 8 if clip in (2, 3) else 16 if clip == 5 else op.ofm.bits
    table_bytes = 256 * (op.ofm.bits // 8) if index_bits == 8 else 2048
    if act.builtin and length < table_bytes:
        raise NpuFault("cmd_parse_error", f"{act.name} table at LUT slot {t} runs past the end of the LUT RAM",
                       offset=op.offset)
    rec.add("r", "lut", SHRAM_REGION, min(table_bytes, length))
    return ctx.shram_slice(start, length)


MAX_ELEMENTS = 1 << 28  # per dense array; larger operations are refused instead of exhausting host memory


_SIZE_OK = IdentityMemo()  # (operation; MAX_ELEMENTS) for operations _check_size passed (a pure function of the two)


def _check_size(op: NpuOperation) -> None:
    if _SIZE_OK.get((op,), (MAX_ELEMENTS,)) is MISS:
        _check_size_of(op)
        _SIZE_OK.put((op,), True, (MAX_ELEMENTS,))


def _check_size_of(op: NpuOperation) -> None:
    o = op.ofm
    sizes = [o.height * o.width * o.depth, op.ifm.height * op.ifm.width * op.ifm.depth]
    k = op.kernel
    if k is not None:
        ph = (o.height - 1) * k.stride_y + k.dilated_height
        pw = (o.width - 1) * k.stride_x + k.dilated_width
        sizes.append(ph * pw * op.ifm.depth)
        sizes.append(o.height * o.width * k.elements * op.ifm.depth)  # im2col
        if op.kind in ("CONV", "DEPTHWISE"):
            sizes.append(o.depth * k.elements * (1 if op.kind == "DEPTHWISE" else op.ifm.depth))
    if max(sizes) > MAX_ELEMENTS:
        raise NpuFault("unsupported", f"{op.mnemonic} at 0x{op.offset:x} is too large to simulate "
                       f"({max(sizes)} elements in one array)", offset=op.offset)


def _run_kernel_op(ctx: _Ctx, op: NpuOperation) -> OpRecord:
    rec = OpRecord(op, macs=op.macs)
    if op.acc_format not in ("I32", "I40", "I48"):
        raise NpuFault("unsupported", f"accumulator format {op.acc_format} is not modelled", offset=op.offset)
    for fm in (op.ifm, op.ifm2, op.ofm):
        if fm is not None and fm.bits == 64:
            raise NpuFault("unsupported", f"64-bit {fm.name} is not modelled", offset=op.offset)
    if op.ofm_round_mode == 3 or op.ifm_round_mode == 3:
        raise NpuFault("cmd_parse_error", "reserved round mode 3", offset=op.offset)
    _check_size(op)
    bounds.check_kernel_op(ctx, op)
    ifm = op.ifm
    if op.kind == "ELEMENTWISE":
        shape = (op.ofm.height, op.ofm.width, op.ofm.depth)
        if op.ifm_scalar is not None:  # U85: a scalar IFM (OP_SCALAR)
            a = np.full(shape, op.ifm_scalar, np.int64)
        else:
            a = _read_fm(ctx, rec, ifm, "ifm", ifm.height, ifm.width, ifm.depth)
            if a.shape != shape:  # U85: a broadcast IFM
                a = np.ascontiguousarray(np.broadcast_to(a, shape))
        b = None
        if op.ifm2 is not None:
            f2 = op.ifm2
            b = _read_fm(ctx, rec, f2, "ifm2", f2.height, f2.width, f2.depth)
    else:
        a = _read_fm(ctx, rec, ifm, "ifm", ifm.source_height, ifm.source_width, ifm.depth)
        b = None
        if op.ifm2 is not None:  # U85 convolution with weights from IFM2
            f2 = op.ifm2
            b = _read_fm(ctx, rec, f2, "ifm2", f2.height, f2.width, f2.depth)
    W = bs = None
    if op.kind in ("CONV", "DEPTHWISE") and op.ifm2 is None:
        W, bs = (_weights_and_scales_u85 if op.u85 else _weights_and_scales)(ctx, rec, op)
    elif op.u85 and op.scales:  # a U85 pool in PER_CHANNEL mode
        bs = _scales_u85(ctx, rec, op)
    lut = _lut_bytes(ctx, rec, op)
    try:
        out = ctx.engine.run_kernel_op(op, a, b, W, bs, lut)
    except NotImplementedError as e:
        raise NpuFault("unsupported", str(e), offset=op.offset) from None
    _write_fm(ctx, rec, op.ofm, out)
    return rec


def _run_dma_u85(ctx: _Ctx, op: NpuOperation) -> OpRecord:
    """An Ethos-U85 DMA (``operations_u85``): SIZE1 planes x SIZE0 rows x LEN bytes (1-D: one row), row and plane
    strides on each side; a gather/scatter reads one int32 row number per row from the index table, which takes
    the place of the row counter on the indexed side. Rows are copied in order (a later row wins); every row's
    source and destination are checked against the memory map as it is copied."""
    d = op.dma
    rec = OpRecord(op)
    rows = 1 if d.src_stride_mode == 0 else d.size0
    planes = d.size1 if d.src_stride_mode == 2 else 1
    n = d.length * rows * planes
    if n == 0:
        return rec
    if n > bounds.HOST_BYTES_PER_OP:
        raise NpuFault("unsupported", f"DMA at 0x{op.offset:x} of {n} bytes is too large to simulate",
                       offset=op.offset)
    index = None
    if d.indexed:
        index = ctx.view(d.idx_region, d.idx_address, 4 * rows, False).view("<i4").astype(np.int64)
        rec.add("r", "dma", d.idx_region, 4 * rows)
        bad = np.flatnonzero((index < 0) | (index > d.idx_max))
        if bad.size:
            raise NpuFault("bus_error", f"DMA index {int(index[bad[0]])} (entry {int(bad[0])}) is outside 0.."
                           f"{d.idx_max} (IDX_MAX)", offset=op.offset)

    def at(internal, region, address, stride0, stride1, p, row, write):
        off = address + p * stride1 + row * stride0
        return ctx.shram_slice(off, d.length) if internal else ctx.view(region, off, d.length, write)

    for p in range(planes):
        for r in range(rows):
            if (p * rows + r) % 4096 == 0:
                interruption_point()
            src_row = int(index[r]) if d.indexed == "src" else r
            dst_row = int(index[r]) if d.indexed == "dst" else r
            data = np.array(at(d.src_internal, d.src_region, d.src_address, d.src_stride0, d.src_stride1, p, src_row,
                               False), copy=True)
            at(d.dst_internal, d.dst_region, d.dst_address, d.dst_stride0, d.dst_stride1, p, dst_row, True)[:] = data
    rec.add("r", "dma", SHRAM_REGION if d.src_internal else d.src_region, n)
    rec.add("w", "dma", SHRAM_REGION if d.dst_internal else d.dst_region, n)
    return rec


def _run_dma(ctx: _Ctx, op: NpuOperation) -> OpRecord:
    d = op.dma
    if op.u85:
        return _run_dma_u85(ctx, op)
    rec = OpRecord(op)
    mode = d.dst_stride_mode if ctx.arch.is_u65 else 0
    if mode == 3:
        raise NpuFault("cmd_parse_error", "reserved DMA stride mode 3", offset=op.offset)
    rows = 1 if mode == 0 else d.size0
    planes = d.size1 if mode == 2 else 1
    total = d.length * rows * planes
    if total == 0:
        return rec
    if d.src_internal:
        src = ctx.shram_slice(d.src_address, total)
        rec.add("r", "dma", SHRAM_REGION, total)
    else:
        src = ctx.view(d.src_region, d.src_address, total, False)
        rec.add("r", "dma", d.src_region, total)
    # [inferred from Regor's U65 generator] row r of plane p goes to
    # dst + p * (LEN * SIZE0 + SKIP1) + r * (LEN + SKIP0); the source is contiguous.
    row_stride = d.length + (d.skip0 if mode else 0)
    plane_stride = d.length * rows + (d.skip1 if mode == 2 else 0)
    lo = min(0, (planes - 1) * plane_stride) + min(0, (rows - 1) * row_stride)
    hi = max(0, (planes - 1) * plane_stride) + max(0, (rows - 1) * row_stride) + d.length
    bounds.check_dma(ctx, op, total, hi - lo)
    data = np.array(src, copy=True)
    if d.dst_internal:
        dst = ctx.shram_slice(d.dst_address + lo, hi - lo)
        region = SHRAM_REGION
    else:
        dst = ctx.view(d.dst_region, d.dst_address + lo, hi - lo, True)
        region = d.dst_region
    if rows * planes == 1:
        dst[-lo:-lo + d.length] = data
    elif row_stride >= d.length and plane_stride >= (rows - 1) * row_stride + d.length:
        # rows that do not overlap: one strided copy
        target = np.lib.stride_tricks.as_strided(dst, shape=(planes, rows, d.length),
                                                 strides=(plane_stride, row_stride, 1), writeable=True)
        target[...] = data.reshape(planes, rows, d.length)
    else:  # overlapping rows: in order, the later row wins
        i = 0
        for p in range(planes):
            for r in range(rows):
                if i % 4096 == 0:
                    interruption_point()
                o = p * plane_stride + r * row_stride - lo
                dst[o:o + d.length] = data[i * d.length:(i + 1) * d.length]
                i += 1
    rec.add("w", "dma", region, total)
    return rec


# Streams that decoded cleanly to STOP, by content: (operations, commands, end offset). Decoding is a pure
# function of the words; a program's streams are decoded once and replayed by every later inference.
_DECODED = BoundedCache(max_entries=64)


def _remember(key, ops: list, op_counts: list, end: int, disk=None) -> None:
    decoded = (ops, op_counts[-1], end, op_counts)
    _DECODED.put(key, decoded)
    if disk is not None:
        disk.put_obj(key[0].encode() + key[1], decoded)


def _stream_disk(ctx: _Ctx):
    """The on-disk cache of decoded streams, used when the weight cache has one (the device's process-wide
    cache; ``diskcache.py``), so that a new process decodes nothing of a program it has run before."""
    if getattr(ctx.weight_cache, "disk", None) is None:
        return None
    from .diskcache import npu_sources, object_cache

    return object_cache("streams", *npu_sources())


def _recall(ctx: _Ctx, key):
    decoded = _DECODED.get(key)
    if decoded is None:
        disk = _stream_disk(ctx)
        decoded = disk.get_obj(key[0].encode() + key[1]) if disk is not None else None
        if decoded is not None:
            _remember(key, decoded[0], decoded[3], decoded[2])
    return decoded


def _run_operation(ctx: _Ctx, op) -> OpRecord:
    """One decoded operation: a DMA, a kernel operation, or one with nothing to compute (waits, STOP)."""
    interruption_point()
    checker = ctx.checker  # --check-stream
    if checker is not None:
        checker.before(ctx, op)
    if op.kind == "DMA":
        rec = _run_dma(ctx, op)
    elif op.is_kernel_op:
        rec = _run_kernel_op(ctx, op)
    else:
        return OpRecord(op)
    if checker is not None:
        checker.after(ctx, op)
    return rec


def _internal_fault(e: Exception, offset: int) -> NpuFault:
    """A simulator bug while executing the command at ``offset``, reported as an NPU fault, never a traceback."""
    f = NpuFault("internal_error", f"NPU model error at 0x{offset:x}: {type(e).__name__}: {e}", offset=offset)
    f.__cause__ = e
    return f


def _execute_decoded(ctx: _Ctx, decoded) -> StreamResult:
    """Execute the operations of a stream decoded before (same words): same order, same faults, and the same
    command count and stream offset at a fault as the first run reports."""
    ops, count, end, op_counts = decoded
    records: list[OpRecord] = []
    op = None
    k = 0
    try:
        for k, op in enumerate(ops):
            records.append(_run_operation(ctx, op))
    except NpuFault as f:
        if f.offset is None or f.offset < 0:
            f.offset = op.offset
        return StreamResult(records, False, f, op_counts[k], op.offset + 4)
    except Exception as e:  # noqa: BLE001 - as in execute_stream
        return StreamResult(records, False, _internal_fault(e, op.offset), op_counts[k], op.offset + 4)
    return StreamResult(records, True, None, count, end)


def execute_stream(words, *, arch, base_pointers, memory, shram: np.ndarray, engine="fast", weight_cache=None,
                   max_commands: int | None = None, checker=None) -> StreamResult:
    """Execute the register command stream ``words`` (uint32; no COP1 header) until ``NPU_OP_STOP``.

    ``base_pointers`` are the 8 region base addresses (BASEP0..7), ``shram`` the NPU's internal SHRAM (uint8,
    written by DMAs to INTERNAL, read by LUT activations), ``engine`` ``"fast"`` (numba) or ``"reference"``.
    A stream that ends without STOP gives a ``cmd_parse_error`` fault; more than ``max_commands`` commands a
    ``watchdog`` fault.
    """
    arch = get_arch(arch)
    ctx = _Ctx(arch, base_pointers, memory, shram, _get_engine(engine), weight_cache)
    ctx.checker = checker  # fvp.machine.npu.checker.StreamChecker (--check-stream) or None
    w = as_words(words)
    key = (arch.name, w.tobytes())
    decoded = _recall(ctx, key)
    if decoded is not None and (max_commands is None or decoded[1] <= max_commands):
        return _execute_decoded(ctx, decoded)
    state = RegisterState(arch)
    records: list[OpRecord] = []
    op_counts: list[int] = []  # commands executed when each operation ran
    n = len(w)
    i = 0
    count = 0
    off = 0
    try:
        while True:
            off = i * 4
            if max_commands is not None and count >= max_commands:
                raise NpuFault("watchdog", f"more than {max_commands} commands executed", offset=off)
            cmd = decode_command(w, i, arch)  # raises at the end of the stream
            count += 1
            i += cmd.length
            if not cmd.is_operation:
                state.apply(cmd)
                continue
            if len(op_counts) >= bounds.MAX_OPERATIONS_PER_STREAM:
                raise NpuFault("unsupported", f"more than {bounds.MAX_OPERATIONS_PER_STREAM} operations in one "
                               f"command stream (the host memory of their records)", offset=off)
            op = build_operation(state, cmd, arch)
            op_counts.append(count)
            if op.kind == "STOP":
                records.append(OpRecord(op))
                _remember(key, [r.op for r in records], op_counts, i * 4, _stream_disk(ctx))
                return StreamResult(records, True, None, count, i * 4)
            records.append(_run_operation(ctx, op))
    except NpuFault as f:
        if f.offset is None or f.offset < 0:
            f.offset = off
        return StreamResult(records, False, f, count, i * 4 if i <= n else n * 4)
    except Exception as e:  # noqa: BLE001 - a simulator bug must not escape as a traceback for a bad stream
        return StreamResult(records, False, _internal_fault(e, off), count, i * 4 if i <= n else n * 4)
