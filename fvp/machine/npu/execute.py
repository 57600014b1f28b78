"""Execute a whole Ethos-U command stream against memory, strictly in order (ethosu.md sections 1.9-1.10).

DMA copies happen at ``NPU_OP_DMA_START``; every kernel operation runs to completion at its ``NPU_OP_*``
(computed into a temporary, then written, so IFM and OFM may alias).  Waits, ``BLOCKDEP`` and the PMU mask have
no functional effect in this serialisation.

Control flow (the Ethos-U85's ``NPU_OP_BRANCH``, Vela's lowering of TOSA COND_IF and WHILE_LOOP: the called
graphs inlined into the one stream, ``EthosU85RCSGenerator::GenerateBranch``): the command processor's program
counter moves to the branch target (a byte offset from the stream's start, word aligned, inside the stream; else
the stream is invalid) when the condition holds: ALWAYS, or RF_TRUE with COND_STATUS.result_flag set. Every kernel
operation sets the flag from its OFM: set when an element of its result is non-zero [inferred: the register's
and the condition's names, and Vela's rule that COND_IF's condition must be the OFM of an operation
(``GraphIrOptimiser::FixupControlFlow``); Vela branches only on one-element boolean results, where every reading
agrees: the checker's ``branch`` rule flags a branch on the flag of a larger result]. DMAs leave the flag. A
loop that never ends is stopped by the watchdog: the command count (``max_commands``) or, first for loops of
operations, the bound on the operations' records (``bounds.MAX_OPERATIONS_PER_STREAM``), both a ``watchdog``
fault; and by ``--timelimit`` (each branch is an interruption point). ``--cyclelimit`` does not reach inside a
stream: the stream runs functionally when it starts, its cycles are known when it ends. A stream that executed
a branch is not replayed from the decoded-stream cache (its operations depend on the data).

What only a product does (building an operation from the register state, reading its weight and scale streams,
its DMA) its family does (``arch.family``); the engines compute every product's operations from the same
descriptors.

Faults (a malformed command or an invalid register value, an unreachable address, the watchdog) end the run and
are returned in :class:`StreamResult`, never raised.  Fault kinds: ``cmd_parse_error``, ``bus_error``,
``watchdog``, ``unsupported`` (a feature the model does not implement: F16 accumulators, 64-bit feature maps,
operations too large for host memory) and ``internal_error`` (a bug in the model; the original exception is
``fault.__cause__``).

``memory`` is any object with ``view(address, length, write) -> np.ndarray[uint8]`` (zero-copy into simulated
RAM) raising ``NpuFault("bus_error", address=...)`` for an address the NPU cannot reach.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import NpuFault
from ..cancel import interruption_point
from . import bounds, copy_runs, lut
from . import featuremap as fmap
from .arch import family_sources, get_arch
from .command_stream import RegisterState, as_words, decode_command
from .descriptors import TRANSPOSE_AXES
from .memo import MISS, BoundedCache, IdentityMemo
from .descriptors import NpuOperation
from .operations import build_operation
from .traffic import SHRAM_REGION, OpRecord  # noqa: F401  (OpRecord: the records a StreamResult lists)
from .weight_cache import WeightCache

@dataclass
class StreamResult:
    operations: list  # OpRecord per executed NPU_OP_* (STOP included)
    stopped: bool  # reached NPU_OP_STOP
    fault: NpuFault | None
    commands: int  # commands executed (register writes and operations)
    end_offset: int = 0  # byte offset after the last command executed (STOP included)
    result_flag: int = 0  # COND_STATUS.result_flag when the stream ended (the U85's; NPU_OP_BRANCH reads it)

    @property
    def branched(self) -> bool:
        """Whether the stream executed an NPU_OP_BRANCH (its operations then depend on the data)."""
        return any(r.op.kind == "BRANCH" for r in self.operations)

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
    """The context of one stream's execution: the configuration and its product family, the base pointers, the
    memory, the SHRAM (the U85's LUT RAM), the engine, the decoded-weight cache; what the product's weight and
    DMA code reads through (``view``, ``shram_slice``)."""

    def __init__(self, arch, base_pointers, memory, shram, engine, weight_cache):
        self.arch = arch
        self.family = arch.family
        self.bases = [int(b) for b in base_pointers] + [0] * (8 - len(base_pointers))
        self.memory = memory
        self.shram = shram
        self.engine = engine
        self.weight_cache = weight_cache if weight_cache is not None else WeightCache()
        self.mask = arch.address_mask
        self.checker = None
        self.chain = {}  # Ethos-U85 chaining buffers: index -> the OFM array a chained operation left there
        self.memory_at_cache = {}  # bounds: address -> memory.memory_at(address), for this stream's run
        self.result_flag = 0  # COND_STATUS.result_flag (the U85's): set by each kernel operation's OFM
        self.words = None  # the stream's words (execute_stream)
        long_run = getattr(self.engine, "long_run", None)  # the fast engine in a long run: large feature-map
        self.kernels = bool(long_run()) if long_run is not None else False  # copies by its numba loops too

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
            raise NpuFault("bus_error", f"invalid command stream: internal memory access 0x{offset:x}+{length} "
                           f"runs past the {self.shram.shape[0]}-byte {self.arch.family.internal_memory} of "
                           f"{self.arch.name}", address=offset)
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
    return fmap.gather(fm, view, lo, h, w, d, ctx.kernels)


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
    fmap.scatter(fm, view, lo, values, ctx.kernels)


def _lut_bytes(ctx: _Ctx, rec: OpRecord, op: NpuOperation):
    """The SHRAM / LUT RAM bytes from the activation's table slot on, or None (no table: no activation, or the
    U55/U65's built-in TANH/SIGMOID)."""
    ext = lut.table_extent(ctx.arch, op)
    if ext is None:
        return None
    start, table_bytes = ext
    length = ctx.shram.shape[0] - start
    act = op.activation
    if act.builtin and length < table_bytes:
        raise NpuFault("cmd_parse_error", f"{act.name} table at LUT slot {act.lut_slot} runs past the end of the "
                       f"LUT RAM", offset=op.offset)
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
        W, bs = ctx.family.weights_and_scales(ctx, rec, op)
    elif op.scales:  # a pool in PER_CHANNEL mode (the U85's): bias and scale per channel from the scale stream
        bs = ctx.family.scales(ctx, rec, op)
    lut = _lut_bytes(ctx, rec, op)
    try:
        out = ctx.engine.run_kernel_op(op, a, b, W, bs, lut)
    except NotImplementedError as e:
        raise NpuFault("unsupported", str(e), offset=op.offset) from None
    _write_fm(ctx, rec, op.ofm, out)
    ctx.result_flag = int(bool(np.any(out)))
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

    return object_cache("streams", *npu_sources(), *family_sources(), types=(NpuOperation,))


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
        rec = ctx.family.run_dma(ctx, op)
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
    batches = copy_runs.runs(ctx, ops)  # runs of copying operations, each executed as one copy when it can be
    batched_last = False  # whether the last kernel operation so far ran in such a batch
    try:
        while k < len(ops):
            op = ops[k]
            entry = batches.get(k)
            if entry is not None:
                interruption_point()
                recs = copy_runs.run(ctx, ops[k:entry[0]], entry)
                if recs is not None:
                    records.extend(recs)
                    k = entry[0]
                    batched_last = any(r.op.is_kernel_op for r in recs) or batched_last
                    continue
            records.append(_run_operation(ctx, op))
            batched_last = batched_last and not op.is_kernel_op
            k += 1
        if batched_last and hasattr(ctx.family.isa, "NPU_OP_BRANCH"):  # a product with COND_STATUS
            _flag_after_copy_runs(ctx, records)
    except NpuFault as f:
        if f.offset is None or f.offset < 0:
            f.offset = op.offset
        return StreamResult(records, False, f, op_counts[k], op.offset + 4, ctx.result_flag)
    except Exception as e:  # noqa: BLE001 - as in execute_stream
        return StreamResult(records, False, _internal_fault(e, op.offset), op_counts[k], op.offset + 4,
                            ctx.result_flag)
    return StreamResult(records, True, None, count, end, ctx.result_flag)


def _flag_after_copy_runs(ctx: _Ctx, records: list) -> None:
    """COND_STATUS.result_flag as the stream's last kernel operation leaves it, where that operation ran in a
    batch of copies (``copy_runs``, which computes no result array): from its OFM in memory, so that a replayed
    stream leaves the flag a first run leaves."""
    last = next((r for r in reversed(records) if r.op.is_kernel_op), None)
    if last is None or last.op.ofm is None or last.op.ofm.storage == "CHAINED":
        return
    h, w, d = last.op.ofm.stored_shape
    ctx.result_flag = int(bool(np.any(_read_fm(ctx, OpRecord(last.op), last.op.ofm, "ofm", h, w, d))))


def execute_stream(words, *, arch, base_pointers, memory, shram: np.ndarray, engine="fast", weight_cache=None,
                   max_commands: int | None = None, checker=None, result_flag: int = 0) -> StreamResult:
    """Execute the register command stream ``words`` (uint32; no COP1 header) until ``NPU_OP_STOP``.

    ``base_pointers`` are the 8 region base addresses (BASEP0..7), ``shram`` the NPU's internal SHRAM (uint8,
    written by DMAs to INTERNAL, read by LUT activations), ``engine`` ``"fast"`` (numba) or ``"reference"``.
    A stream that ends without STOP gives a ``cmd_parse_error`` fault; more than ``max_commands`` commands a
    ``watchdog`` fault. ``result_flag`` is COND_STATUS.result_flag when the stream starts (the U85's; the
    result's ``result_flag`` is its value at the end).
    """
    arch = get_arch(arch)
    ctx = _Ctx(arch, base_pointers, memory, shram, _get_engine(engine), weight_cache)
    ctx.checker = checker  # fvp.machine.npu.checker.StreamChecker (--check-stream) or None
    ctx.result_flag = int(bool(result_flag))
    w = as_words(words)
    ctx.words = w  # the stream (the checker's branch rule reads a loop's commands)
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
    branched = False
    taken = 0  # branches taken
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
                if branched:  # a loop of NPU_OP_BRANCH that has not ended: the watchdog's verdict
                    raise NpuFault("watchdog", f"more than {bounds.MAX_OPERATIONS_PER_STREAM} operations executed "
                                   f"after {taken} branches taken: the command stream loops without end (or "
                                   f"longer than this simulator keeps records for)", offset=off)
                raise NpuFault("unsupported", f"more than {bounds.MAX_OPERATIONS_PER_STREAM} operations in one "
                               f"command stream (the host memory of their records)", offset=off)
            op = build_operation(state, cmd, arch)
            op_counts.append(count)
            if op.kind == "STOP":
                records.append(OpRecord(op))
                if not branched:
                    _remember(key, [r.op for r in records], op_counts, i * 4, _stream_disk(ctx))
                return StreamResult(records, True, None, count, i * 4, ctx.result_flag)
            if op.kind == "BRANCH":
                records.append(_run_operation(ctx, op))
                branched = True
                if op.sub_op == "ALWAYS" or ctx.result_flag:
                    i = _branch_target(op, n)
                    taken += 1
                continue
            records.append(_run_operation(ctx, op))
    except NpuFault as f:
        if f.offset is None or f.offset < 0:
            f.offset = off
        return StreamResult(records, False, f, count, i * 4 if i <= n else n * 4, ctx.result_flag)
    except Exception as e:  # noqa: BLE001 - a simulator bug must not escape as a traceback for a bad stream
        return StreamResult(records, False, _internal_fault(e, off), count, i * 4 if i <= n else n * 4,
                            ctx.result_flag)


def _branch_target(op: NpuOperation, words: int) -> int:
    """The word index an NPU_OP_BRANCH continues at; a target that is not a word of the stream is invalid."""
    t = op.branch_target
    if t % 4 or t // 4 >= words:
        raise NpuFault("cmd_parse_error", f"invalid command stream: NPU_OP_BRANCH {op.sub_op} at 0x{op.offset:x} "
                       f"targets byte 0x{t:x}, which is not the start of a word of the {words * 4}-byte stream",
                       offset=op.offset)
    return t // 4
