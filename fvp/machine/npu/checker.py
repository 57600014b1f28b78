"""The stream checker (``fvp run --check-stream``): what a command stream declares against what it does.

While a stream executes, every operation is checked before it runs (``StreamChecker.before``) and its writes
recorded after (``after``). Each finding is one line, ``[warning]`` or ``[error]``, naming the command's byte
offset in the stream, the operation as ``fvp disasm`` prints it, the tensor, the address range and the rule,
in words (docs/stream-checker.md lists the rules). Rules:

* ``unused-tile``: a coordinate of a feature map falls into tile 1, 2 or 3 (beyond WIDTH0 / HEIGHT0 /
  HEIGHT1) while that tile's base is 0 (Vela's value for a tile it does not use): the stream sets up one tile
  and addresses more;
* ``brick``: an NHCWB16 feature map whose channel stride cannot hold a 16-channel brick of its rows, or whose
  base is not 16-byte aligned;
* ``tile-overlap``: two tiles of an OFM put elements on the same bytes (a tile's base that repeats another's, or
  strides of a different shape): one tile's results overwrite the other's;
* ``dma-hazard``: a kernel operation reads or writes bytes a DMA started before it may still be writing (no
  DMA_WAIT in between), or a DMA writes bytes an earlier kernel operation may still use (no KERNEL_WAIT);
* ``output-overlaps-input``: an operation's OFM bytes overlap its IFM bytes with a different layout (an in-place
  operation must read each element before it is overwritten: same addresses for the same element);
* ``register``: register values that are illegal for the variant: a zero or oversized OFM block, the
  accumulator area starting before the IFM buffer ends or past the SHRAM, 64-bit feature maps;
* ``blockdep``: an operation that reads the OFM of the operation before it (the same tensor, the same shape)
  declares a BLOCKDEP that lets one of its first jobs (blocks) run while a job of the previous operation that
  writes what it reads is still running; the jobs as Vela's register generator models them
  (``EthosU55RCSGenerator::CalcBlockDep``: the previous operation's last OFM blocks, this one's first IFM
  blocks, job i of this operation beside job j from the end of the previous one when i + j < BLOCKDEP), for the
  product families that model it (``family.max_blockdep``: the Ethos-U55/U65);
* ``unwritten-read``: an operation or DMA reads bytes that nothing has written since the program was loaded
  (``fvp.machine.written``: the loader, the firmware and the NPU's own OFMs and DMAs write; the runner's copies of
  the inputs into the scratch are writes like any other), so it computes with stale or uninitialised memory.
  Feature maps are compared element by element where their bounding ranges are not written in full; a DMA row
  whose only unwritten bytes are the padding up to a 16-byte boundary after a written start is Vela copying a
  whole (16-byte rounded) allocation, not a finding.

* ``shram-bounds``: a DMA whose internal (SHRAM / LUT RAM) destination or source runs past the end of the
  variant's internal memory (Vela 5.1 writes a U55-32 LUT DMA past its 16 KiB SHRAM): the command stream is
  invalid;
* ``lut-residency``: a DMA writes LUT bytes that hold the table of an operation whose result waits in a U85
  chaining buffer for the operation that reads it: the chained operations run together, block by block
  [inferred: the chaining buffer holds a block, not the tensor], so the earlier one's table must stay resident
  until the chain's last operation; Vela 5.1 loads the next table over it in an int16 LSTM.

* ``branch``: an ``NPU_OP_BRANCH RF_TRUE`` whose condition no NPU operation has set (it reads
  COND_STATUS.result_flag's reset value or what the CPU wrote), or whose condition is the result of an operation
  of more than one element: which of its elements sets the flag is not public (this simulator: any non-zero
  element); Vela branches on a one-element boolean only. And (an error) a backward ``ALWAYS`` branch whose loop
  holds no ``NPU_OP_STOP`` and no branch out of it: the stream never ends.

``strict`` makes the first error stop the simulation (``SimulationStop("guest_error")``, exit status 1).
"""

from __future__ import annotations

import numpy as np

from ...errors import SimulationStop
from . import featuremap as fmap
from . import lut
from .timing.geometry import ifm_block_depth


def _tile_boxes(fm, h, w):
    return fmap._tile_boxes(h, w, fm.height0, fm.height1, fm.width0)


class StreamChecker:
    def __init__(self, arch, mode: str = "warn", report=print, written=None):
        self.arch = arch
        self.written = written  # fvp.machine.written.WrittenMap, or None: the unwritten-read rule is off
        self._writes: list = []  # (lo, hi) bus ranges the operation being checked writes, marked by ``after``
        self._prev = None  # the kernel operation before this one, unless a KERNEL_WAIT let it finish
        self.mode = mode
        self.report = report
        self.findings: list[str] = []
        self.errors = 0
        self._dmas: list = []  # outstanding DMAs: (op, [(space, lo, hi) written])
        self._kernels: list = []  # outstanding kernel ops: (op, [(space, lo, hi) read or written])
        self._chained_tables: list = []  # (op, lo, hi): LUT bytes of operations of the open U85 chain
        self._flag_op = None  # the kernel operation that set COND_STATUS.result_flag last (the U85's BRANCH)
        self._loops_seen: set = set()  # (target, offset) of the backward branches of this stream judged
        self._loops_ctx = None  # the stream's execution context they belong to

    # ------------------------------------------------------------------ reporting
    def _say(self, level: str, op, rule: str, text: str) -> None:
        name = "NPU_OP_DMA_START" if op.kind == "DMA" else f"NPU_OP_{op.mnemonic}"
        line = f"[{level}] stream check: command at 0x{op.offset:04x} {name}: {text} (rule: {rule})"
        self.findings.append(line)
        self.report(line)
        if level == "error":
            self.errors += 1
            if self.mode == "strict":
                raise SimulationStop("guest_error", f"--check-stream=strict: {line}")

    # ------------------------------------------------------------------ ranges
    def _fm_ranges(self, ctx, fm, h, w, d):
        """(space, lo, hi) bus-address ranges of each tile box of the area."""
        out = []
        elem = fm.bits // 8
        nhcwb16 = fm.format == "NHCWB16"
        sx = 16 * elem if nhcwb16 else fm.stride_x
        co = fmap.channel_offsets(d, elem, nhcwb16, fm.stride_c)
        cmin, cmax = int(co.min()), int(co.max())
        base = ctx.bases[fm.region]
        for t, ny, nx in _tile_boxes(fm, h, w):
            ys, xs = (ny - 1) * fm.stride_y, (nx - 1) * sx
            lo = fm.bases[t] + min(0, ys) + min(0, xs) + cmin
            hi = fm.bases[t] + max(0, ys) + max(0, xs) + cmax + elem
            out.append(("bus", (base + lo) & ctx.mask, (base + hi) & ctx.mask, t))
        return out

    @staticmethod
    def _overlap(a, b):
        return a[0] == b[0] and a[1] < b[2] and b[1] < a[2]

    # ------------------------------------------------------------------ the rules
    #: tiles larger than this many elements are not compared element by element (the checker stays cheap)
    TILE_OVERLAP_MAX_ELEMENTS = 1 << 20

    @staticmethod
    def _element_offsets(fm, h, w, d, skip: set) -> dict:
        """Per tile box (not in ``skip``): the sorted region offsets of its elements' first bytes, as the
        hardware forms them from the tile's base and the strides (rows, columns, channels)."""
        elem = fm.bits // 8
        nhcwb16 = fm.format == "NHCWB16"
        sx = 16 * elem if nhcwb16 else fm.stride_x
        co = fmap.channel_offsets(d, elem, nhcwb16, fm.stride_c)
        out = {}
        for t, ny, nx in _tile_boxes(fm, h, w):
            if t in skip:
                continue
            a = (fm.bases[t] + np.arange(ny, dtype=np.int64)[:, None, None] * fm.stride_y
                 + np.arange(nx, dtype=np.int64)[None, :, None] * sx + co[None, None, :])
            out[t] = np.unique(a.ravel())
        return out

    def _tile_overlap(self, op, fm, tensor, h, w, d, skip: set) -> None:
        """``tile-overlap``: the byte offsets of each tile's elements against every other tile's."""
        if len([b for b in _tile_boxes(fm, h, w) if b[0] not in skip]) < 2 or h * w * d > self.TILE_OVERLAP_MAX_ELEMENTS:
            return
        elem = fm.bits // 8
        spans = {t: np.unique((starts[:, None] + np.arange(elem)[None, :]).ravel())
                 for t, starts in self._element_offsets(fm, h, w, d, skip).items()}
        tiles = sorted(spans)
        for i, t1 in enumerate(tiles):
            for t2 in tiles[i + 1:]:
                both = np.intersect1d(spans[t1], spans[t2], assume_unique=True)
                if both.size:
                    self._say("error", op, "tile-overlap",
                              f"{tensor} {h}x{w}x{d} {fm.format} in region {fm.region}: tiles {t1} and {t2} write "
                              f"{both.size} of the same bytes (from offset 0x{int(both[0]):x}; BASE{t1} = "
                              f"0x{fm.bases[t1]:x}, BASE{t2} = 0x{fm.bases[t2]:x}, tile 0 {fm.height0} row(s) x "
                              f"{fm.width0} column(s), STRIDE_Y {fm.stride_y}): one tile's results overwrite the "
                              f"other's")
                    return

    #: feature maps larger than this are not compared element by element for ``unwritten-read`` (not reported)
    UNWRITTEN_MAX_ELEMENTS = 1 << 22

    def _unwritten_fm(self, ctx, op, fm, tensor, h, w, d, skip: set, ranges) -> None:
        """``unwritten-read`` for a feature map read: its tiles' bounding ranges first, elements if needed."""
        wm = self.written
        if all(wm.covered(lo, hi - lo) for _, lo, hi, _ in ranges) or h * w * d > self.UNWRITTEN_MAX_ELEMENTS:
            return
        elem = fm.bits // 8
        base = ctx.bases[fm.region]
        for t, starts in self._element_offsets(fm, h, w, d, skip).items():
            first = (base + int(starts[0])) & ctx.mask
            bad = wm.unwritten(first, starts - starts[0], elem)
            if bad.size:
                a = (first + int(bad[0])) & ctx.mask
                self._say("error", op, "unwritten-read",
                          f"{tensor} {h}x{w}x{d} {fm.format} in region {fm.region}: {bad.size} of its elements "
                          f"(tile {t}, the first at {wm.describe(a)}) were never written since the program was "
                          f"loaded: the operation reads stale or uninitialised memory")
                return

    def _unwritten_range(self, op, what: str, lo: int, n: int) -> None:
        if n > 0 and not self.written.covered(lo, n):
            self._say("error", op, "unwritten-read",
                      f"{what} 0x{lo:08x}-0x{lo + n - 1:08x} ({n} bytes at {self.written.describe(lo)}) were not all "
                      f"written since the program was loaded: the operation reads stale or uninitialised memory")

    def _tiles(self, ctx, op, fm, tensor, h, w, d) -> set:
        """The tile rules; returns the tiles found unused (their bytes are not the tensor's: left out of the
        overlap rules, which would only repeat the finding)."""
        bad = set()
        boxes = _tile_boxes(fm, h, w)
        used = [t for t, _, _ in boxes]
        if fm.format == "NHCWB16":
            elem = fm.bits // 8
            row = min(w, fm.width0 if 0 in used else w) * 16 * elem
            if d > 16 and abs(fm.stride_c) < row:
                self._say("error", op, "brick", f"{tensor} {h}x{w}x{d} NHCWB16: its channel stride {fm.stride_c} "
                          f"is smaller than one 16-channel brick of a row ({row} bytes): bricks overlap")
        for t, ny, nx in boxes:
            if t == 0:
                continue
            if fm.bases[t] == 0:
                where = {1: f"columns {fm.width0}-{w - 1}", 2: f"rows {fm.height0}-{h - 1}",
                         3: f"rows {fm.height1}-{h - 1} of columns {fm.width0}-{w - 1}"}[t]
                bad.add(t)
                self._say("error", op, "unused-tile",
                          f"{tensor} {h}x{w}x{d} {fm.format} in region {fm.region}: {where} fall into tile {t}, "
                          f"which the stream does not set up (BASE{t} = 0, tile 0 at 0x{fm.bases[0]:x} is "
                          f"{fm.height0} row(s) x {fm.width0} column(s)): those elements are read from offset 0x0 of "
                          f"the region, not from the tensor")
        return bad

    def _registers(self, op):
        a = self.arch
        bh, bw, bd = op.ofm_block or (0, 0, 0)
        if min(bh, bw, bd) <= 0:
            self._say("error", op, "register", f"OFM block {bh}x{bw}x{bd} has a zero dimension")
        if op.ab_start < op.ifm_ib_end or op.ab_start > a.shram_banks:
            self._say("error", op, "register", f"the accumulator area starts at SHRAM bank {op.ab_start}, which "
                      f"is before the end of the IFM buffer (bank {op.ifm_ib_end}) or past the "
                      f"{a.shram_banks} banks of {a.name}")
        for fm in (op.ifm, op.ifm2, op.ofm):
            if fm is not None and fm.bits == 64:
                self._say("error", op, "register", f"{fm.name} is 64-bit, a type {a.name} does not have")

    def _hazard(self, op, running: list, ranges: list, message) -> None:
        """A dma-hazard error for ``op`` at the first place where a running operation's bytes meet ``ranges``;
        ``message(that operation, its range, one of ranges)`` says which."""
        for other, used in running:
            for u in used:
                for r in ranges:
                    if self._overlap(u, r):
                        self._say("error", op, "dma-hazard", message(other, u, r))
                        return

    def _hazards_kernel(self, op, ranges):
        self._hazard(op, self._dmas, ranges, lambda dma, wr, r: (
            f"{r[4]} bytes 0x{r[1]:08x}-0x{r[2] - 1:08x} overlap what the DMA at 0x{dma.offset:04x} writes "
            f"(0x{wr[1]:08x}-0x{wr[2] - 1:08x}), and no DMA_WAIT lets it finish first"))

    def _hazards_dma(self, op, written):
        self._hazard(op, self._kernels, written, lambda kop, u, wr: (
            f"it writes 0x{wr[1]:08x}-0x{wr[2] - 1:08x}, which the {u[4]} of NPU_OP_{kop.mnemonic} at "
            f"0x{kop.offset:04x} uses, and no KERNEL_WAIT lets that operation finish first"))

    # ------------------------------------------------------------------ hooks
    def _endless_loop(self, ctx, op) -> None:
        """A backward ALWAYS branch whose loop (its target up to the branch) holds no STOP and no branch out of
        it never ends: decidable from the stream's words (``ctx.words``)."""
        from .command_stream import decode_command

        words = getattr(ctx, "words", None)
        start, end = op.branch_target, op.offset
        if self._loops_ctx is not ctx:  # a new stream
            self._loops_ctx, self._loops_seen = ctx, set()
        if words is None or start > end or start % 4 or (start, end) in self._loops_seen:
            return
        self._loops_seen.add((start, end))
        i = start // 4
        try:
            while i * 4 < end:
                cmd = decode_command(words, i, self.arch)
                if cmd.name == "NPU_OP_STOP" or (cmd.name == "NPU_OP_BRANCH" and not start <= cmd.payload <= end):
                    return
                i += cmd.length
        except Exception:  # noqa: BLE001 - an invalid command inside the loop: the run reports it
            return
        self._say("error", op, "branch", f"it goes back to 0x{start:04x}, and the commands from there to it hold "
                  f"no NPU_OP_STOP and no branch out: the loop never ends (the NPU watchdog or a time limit stops "
                  f"it): the command stream is invalid")

    def _branch(self, ctx, op) -> None:
        if op.sub_op == "ALWAYS":
            self._endless_loop(ctx, op)
        if op.sub_op != "RF_TRUE":
            return
        src = self._flag_op
        o = src.ofm if src is not None else None
        if o is None:
            text = ("its condition, COND_STATUS.result_flag, was set by no NPU operation before it: the branch "
                    "reads the register's reset value or what the CPU wrote there")
        elif o.height * o.width * o.depth != 1:
            text = (f"its condition is the result of NPU_OP_{src.mnemonic} at 0x{src.offset:04x}, {o.height}x"
                    f"{o.width}x{o.depth} elements: which element sets COND_STATUS.result_flag is not public (this "
                    f"simulator: any non-zero element)")
        else:
            return
        self._say("warning", op, "branch", text)

    def before(self, ctx, op) -> None:
        if op.kind == "BRANCH":
            self._branch(ctx, op)
            return
        if op.kind == "DMA_WAIT":
            self._dmas = self._dmas[len(self._dmas) - op.count:] if op.count < len(self._dmas) else self._dmas
            return
        if op.kind == "KERNEL_WAIT":
            if op.count == 0:
                self._prev = None
            k = op.count
            self._kernels = self._kernels[len(self._kernels) - k:] if k < len(self._kernels) else self._kernels
            return
        if op.kind == "DMA":
            self._internal_dma(op)
            written = self._dma_ranges(ctx, op)
            self._hazards_dma(op, written)
            self._dmas.append((op, written))
            self._writes = [(lo, hi) for space, lo, hi, _, _ in written if space == "bus"]
            if self.written is not None:
                self._unwritten_dma(ctx, op)
            return
        if not op.is_kernel_op:
            return
        self._flag_op = op
        self._registers(op)
        ranges = []
        i = op.ifm
        if op.kind == "ELEMENTWISE":
            areas = [] if op.ifm_scalar is not None else [(i, "IFM", i.height, i.width, i.depth)]
            if op.ifm2 is not None and not (op.broadcast is not None and op.broadcast.scalar):
                f2 = op.ifm2
                areas.append((f2, "IFM2", f2.height, f2.width, f2.depth))
        else:
            areas = [(i, "IFM", i.source_height, i.source_width, i.depth)]
            if op.ifm2 is not None:  # U85 convolution with weights from IFM2
                areas.append((op.ifm2, "IFM2", op.ifm2.height, op.ifm2.width, op.ifm2.depth))
        o = op.ofm
        areas.append((o, "OFM", *o.stored_shape))
        self._writes = []
        for fm, tensor, h, w, d in areas:
            if h <= 0 or w <= 0 or d <= 0 or fm.storage == "CHAINED":  # a U85 chaining buffer is not memory
                continue
            bad = self._tiles(ctx, op, fm, tensor, h, w, d)
            if tensor == "OFM":
                self._tile_overlap(op, fm, tensor, h, w, d, bad)
            fm_ranges = self._fm_ranges(ctx, fm, h, w, d)
            if tensor == "OFM":
                self._writes += [(lo, hi) for _, lo, hi, _ in fm_ranges]
            good = [r for r in fm_ranges if r[3] not in bad]
            if tensor != "OFM" and self.written is not None:
                self._unwritten_fm(ctx, op, fm, tensor, h, w, d, bad, good)
            ranges += [(s, lo, hi, t, tensor) for s, lo, hi, t in good]
        base = ctx.bases
        for tensor, rs in (("weights", op.weights), ("scales", op.scales)):
            for r in rs:
                if r.length > 0:
                    lo = (base[r.region] + r.address) & ctx.mask
                    ranges.append(("bus", lo, lo + r.length, 0, tensor))
                    if self.written is not None:
                        self._unwritten_range(op, f"its {tensor} stream", lo, r.length)
        self._hazards_kernel(op, ranges)
        self._in_place(op, ranges)
        if self._prev is not None and op.blockdep > 0 and self.arch.family.max_blockdep is not None:
            self._blockdep(ctx, self._prev, op)
        self._prev = op
        self._chain(op)
        # [inferred from Vela's wait insertion] the command processor takes a new kernel operation only when the
        # previous one is done, so beside a DMA at most the last kernel operation still runs
        self._kernels = [(op, ranges)]

    @staticmethod
    def _jobs(area, job, n: int, from_start: bool) -> list:
        """The first (or last) ``n`` jobs of ``job``-sized blocks over ``area`` (h, w, d), depth fastest, then
        width, then height, as boxes ((y0, x0, z0), (y1, x1, z1)); the order of Vela's ``GetJobs``."""
        split = [-(-a // j) for a, j in zip(area, job)]
        total = split[0] * split[1] * split[2]
        first, last = (0, min(total, n)) if from_start else (max(0, total - n), total)
        out = []
        for i in range(first, last):
            y = (i // (split[2] * split[1])) * job[0]
            x = ((i // split[2]) % split[1]) * job[1]
            z = (i % split[2]) * job[2]
            out.append(((y, x, z), (min(y + job[0], area[0]), min(x + job[1], area[1]), min(z + job[2], area[2]))))
        return out

    def _blockdep(self, ctx, prev, op) -> None:
        """``blockdep``: this operation's first IFM jobs against the previous operation's last OFM jobs, where
        this operation's IFM (or IFM2) is the previous OFM (same address, same shape, same layout)."""
        po = prev.ofm
        if prev.ofm_block is None or op.ofm_block is None or op.kernel is None:
            return
        pbase = (ctx.bases[po.region] + po.bases[0]) & ctx.mask
        for fm, name in ((op.ifm, "IFM"), (op.ifm2, "IFM2")):
            if fm is None or (name == "IFM2" and op.broadcast is not None and op.broadcast.scalar):
                continue
            h, w = (fm.height, fm.width) if op.kind == "ELEMENTWISE" else (fm.source_height, fm.source_width)
            if ((ctx.bases[fm.region] + fm.bases[0]) & ctx.mask != pbase or (h, w, fm.depth) != po.shape
                    or fm.format != po.format or fm.stride_y != po.stride_y or fm.bits != po.bits):
                continue
            k = op.kernel
            bh, bw, _ = op.ofm_block
            # the IFM block Vela's block configuration reads (a convolution's IFM block depth; depthwise,
            # pooling and elementwise read the depth they write)
            ijob = ((bh - 1) * k.stride_y + k.dilated_height, (bw - 1) * k.stride_x + k.dilated_width,
                    ifm_block_depth(self.arch, op))
            most = self.arch.family.max_blockdep
            cur = self._jobs((h, w, fm.depth), ijob, most, True)
            last = self._jobs(po.shape, prev.ofm_block, most, False)
            for i, (a0, a1) in enumerate(cur):
                for j in range(len(last)):
                    if i + j >= op.blockdep:
                        break
                    b0, b1 = last[len(last) - 1 - j]
                    if all(a0[t] < b1[t] and b0[t] < a1[t] for t in range(3)):
                        self._say("error", op, "blockdep",
                                  f"BLOCKDEP {op.blockdep} lets its {name} job {i} (rows {a0[0]}-{a1[0] - 1}, columns "
                                  f"{a0[1]}-{a1[1] - 1}, channels {a0[2]}-{a1[2] - 1}) start while job {j} from the end "
                                  f"of NPU_OP_{prev.mnemonic} at 0x{prev.offset:04x} (rows {b0[0]}-{b1[0] - 1}, columns "
                                  f"{b0[1]}-{b1[1] - 1}, channels {b0[2]}-{b1[2] - 1}) still writes those elements")
                        return

    def _chain(self, op) -> None:
        """Keep the LUT bytes of the operations of an open U85 chain (OFM to a chaining buffer) until the
        operation that ends it (an OFM in memory)."""
        if op.ofm.storage != "CHAINED":
            self._chained_tables = []
            return
        ext = lut.table_extent(self.arch, op)
        if ext is not None:
            self._chained_tables.append((op, ext[0], ext[0] + ext[1]))

    def _internal_dma(self, op) -> None:
        """``shram-bounds`` of a DMA's internal source and destination; ``lut-residency`` of its destination."""
        d = op.dma
        if d.total_bytes <= 0:
            return
        a = self.arch
        size, memory = a.shram_bytes, a.family.internal_memory
        fp = a.family.dma_footprint(a, op)
        src_span = 0 if fp.gather else fp.src_bytes if fp.src_rows is None else int(fp.src_rows.max()) + d.length
        for internal, address, span, verb in ((d.src_internal, d.src_address, src_span, "reads"),
                                              (d.dst_internal, d.dst_address, fp.dst_span, "writes")):
            if internal and address + span > size:
                self._say("error", op, "shram-bounds",
                          f"it {verb} {memory} bytes 0x{address:x}-0x{address + span - 1:x}, past the end of the "
                          f"{size}-byte {memory} of {a.name} (LUT slots from 0x{a.lut_start_bytes:x}): the command "
                          f"stream is invalid")
                return
        if not d.dst_internal:
            return
        lo, hi = d.dst_address, d.dst_address + fp.dst_span
        for other, tlo, thi in self._chained_tables:
            if lo < thi and tlo < hi:
                self._say("error", op, "lut-residency",
                          f"it writes {memory} bytes 0x{lo:x}-0x{hi - 1:x}, over the table (0x{tlo:x}-0x{thi - 1:x}, "
                          f"slot {lut.table_slot(other)}) of NPU_OP_{other.mnemonic} at 0x{other.offset:04x}, whose "
                          f"result waits in chaining buffer {other.ofm.region} for the operation that reads it: "
                          f"chained operations run together, so that table is overwritten before it is used: the "
                          f"command stream is invalid")
                return

    def _in_place(self, op, ranges):
        outs = [r for r in ranges if r[4] == "OFM"]
        for r in ranges:
            if r[4] not in ("IFM", "IFM2"):
                continue
            src = op.ifm if r[4] == "IFM" else op.ifm2
            same = (src.bases == op.ofm.bases and src.stride_y == op.ofm.stride_y and src.format == op.ofm.format
                    and src.bits == op.ofm.bits and (src.format == "NHCWB16" or src.stride_x == op.ofm.stride_x)
                    and src.stride_c == op.ofm.stride_c)
            for o in outs:
                if self._overlap(r, o) and not same:
                    self._say("warning", op, "output-overlaps-input",
                              f"OFM bytes 0x{o[1]:08x}-0x{o[2] - 1:08x} overlap the {r[4]} "
                              f"(0x{r[1]:08x}-0x{r[2] - 1:08x}) with a different layout: elements may be "
                              f"overwritten before they are read")
                    return

    def _dma_ranges(self, ctx, op):
        d = op.dma
        if d.total_bytes <= 0:
            return []
        span = self.arch.family.dma_footprint(self.arch, op).dst_span
        if d.dst_internal:
            return [("shram", d.dst_address, d.dst_address + span, 0, "DMA destination")]
        lo = (ctx.bases[d.dst_region] + d.dst_address) & ctx.mask
        return [("bus", lo, lo + span, 0, "DMA destination")]

    def _unwritten_dma(self, ctx, op) -> None:
        """``unwritten-read`` for a DMA's source (and a gather's or scatter's index table): its rows as the DMA
        reads them (a gather's rows are those its index table names, not checked row by row: left out)."""
        d = op.dma
        if d.total_bytes <= 0 or d.src_internal:
            return
        fp = self.arch.family.dma_footprint(self.arch, op)
        src = (ctx.bases[d.src_region] + d.src_address) & ctx.mask
        if fp.index_bytes:
            self._unwritten_range(op, "its index table", (ctx.bases[d.idx_region] + d.idx_address) & ctx.mask,
                                  fp.index_bytes)
        if fp.gather:
            return
        if fp.src_rows is None:  # a contiguous source
            self._unwritten_range(op, "its source", src, fp.src_bytes)
            return
        starts = fp.src_rows
        lo = int(starts.min())
        bad = self.written.unwritten((src + lo) & ctx.mask, np.unique(starts - lo), d.length)
        if 0 < bad.size <= 64:
            bad = np.array([b for b in bad if not self._padding_tail((src + lo + int(b)) & ctx.mask, d.length)],
                           np.int64)
        if bad.size:
            a = (src + lo + int(bad[0])) & ctx.mask
            self._say("error", op, "unwritten-read",
                      f"{bad.size} of its source rows of {d.length} bytes (the first at "
                      f"{self.written.describe(a)}) were never written since the program was loaded: the DMA "
                      f"copies stale or uninitialised memory")

    def _padding_tail(self, addr: int, length: int) -> bool:
        """Whether a DMA row's unwritten bytes are only the padding of a Vela allocation: a written start, the
        rest short of 16 bytes up to a 16-byte boundary (Vela rounds tensor allocations to 16 bytes and copies
        whole allocations: a WHILE_LOOP's copies of its loop variables, ``AllocationSizeBytes``)."""
        end = addr + length
        if end % 16:
            return False
        return any(self.written.covered(addr, m) for m in range(length - 1, max(0, length - 16), -1))

    def after(self, ctx, op) -> None:
        """The operation has run: what it wrote is written (the unwritten-read rule's shadow map)."""
        if self.written is not None:
            for lo, hi in self._writes:
                self.written.mark(lo, hi - lo)
        self._writes = []

    def summary(self) -> str:
        return f"stream check: {len(self.findings)} findings ({self.errors} errors)"
