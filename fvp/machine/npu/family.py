"""The interface of an Ethos-U product family: one object per family, each in a folder of its own.

``u55/`` is the Ethos-U55 and Ethos-U65 (one command set; the U65 adds 40-bit addresses, 2-D/3-D DMA and a second
core), ``u85/`` the Ethos-U85: the shape of Vela's Regor back ends (``architecture/ethosu55`` with ``ethosu65``,
``architecture/ethosu85``), where each product brings its configurations, its register-level code generator, its
weight encoder and its performance model behind one architecture interface. Here each family brings:

* its configurations (:class:`~fvp.machine.npu.variant.NpuArch`, each naming its family) and its command-stream
  ISA table (``hwdesc.ethosu`` or ``hwdesc.ethosu85``: commands, fields and codes, MMIO and PMU registers), read
  by the decoder, the disassembler, the device and the PMU;
* the translation of the register state at an ``NPU_OP_*`` into the product-neutral descriptors
  (``descriptors.py``): every raw field is turned into a named code once, here, and a value the product does not
  define is an invalid command stream (``NpuFault("cmd_parse_error")`` naming the command, the field and the
  value);
* what only it knows how to execute: its weight and scale streams, its DMA (and the bytes a DMA reads and writes,
  for the stream checker);
* the block geometry and the cycles: the IFM block depth and micro-block of an operation, the MAC/AO cycles of its
  blocks, the AXI ports a memory is reached through and the per-channel bandwidth limits.

The shared model (``command_stream``, ``execute``, ``timing``, ``checker``, ``disasm``, ``device``) calls these
methods through ``arch.family`` and never asks which product it runs; ``arch.py`` is the one module that names the
families. A new product (another U55 revision, an Ethos-U85 variant with other rules) is a new folder with a
subclass of :class:`ProductFamily`, listed there.
"""

from __future__ import annotations

import importlib
from pathlib import Path


class ProductFamily:
    """One Ethos-U product family. A subclass sets :attr:`name`, :attr:`isa` and :attr:`max_blockdep`, builds
    :attr:`variants`, and implements :meth:`has_command`, :meth:`memory_ports` and :meth:`limit_by_channels`; the
    rest is the family's modules, which its folder provides with these functions (each imported when first
    used, so a run loads only its own product's code):

    * ``operations``: ``build_operation(state, cmd, arch)``;
    * ``weights``: ``weights_and_scales(ctx, rec, op)``, ``scales(ctx, rec, op)``;
    * ``dma``: ``run_dma(ctx, op)``, ``footprint(arch, op)``;
    * ``blocks``: ``ifm_block_depth(arch, op)``, ``micro_block(arch, op)``;
    * ``performance``: ``compute_cycles(arch, op, geo, block_memory, scale_latency)``.
    """

    #: the family's name ("ethos-u55", "ethos-u85")
    name: str = ""
    #: the command-stream ISA module (``COMMANDS``, ``BY_NAME``, the field codes, ``MMIO_BASE``, ``MMIO_PMU``)
    isa = None
    #: its configurations, in the order of ``hwdesc.ethosu.NPU_VARIANTS``
    variants: tuple = ()
    #: the largest BLOCKDEP whose block overlap the stream checker models (Vela's register generator), or None
    #: when the checker's ``blockdep`` rule does not apply to the family
    max_blockdep: int | None = None
    #: the name of the internal memory an internal DMA address and the LUT slots are in
    internal_memory: str = "SHRAM"

    def module(self, name: str):
        """The family's module ``name`` (``operations``, ``weights`` ...), imported when first asked for."""
        mods = self.__dict__.setdefault("_modules", {})
        mod = mods.get(name)
        if mod is None:
            mod = mods[name] = importlib.import_module(f"{type(self).__module__}.{name}")
        return mod

    # ------------------------------------------------------------------ decoding
    def has_command(self, cdef, arch) -> bool:
        """Whether command ``cdef`` of :attr:`isa` exists on configuration ``arch``."""
        raise NotImplementedError

    def build_operation(self, state, cmd, arch):
        """The :class:`~fvp.machine.npu.descriptors.NpuOperation` of the ``NPU_OP_*`` command ``cmd`` against
        the register state (``command_stream.RegisterState``): every raw field translated into a named code, a
        value the product does not define an invalid command stream."""
        return self.module("operations").build_operation(state, cmd, arch)

    # ------------------------------------------------------------------ executing
    def weights_and_scales(self, ctx, rec, op):
        """``(W, (bias, scale, shift))`` of a CONV/DEPTHWISE with weight streams: the decoded ``W[o, ky, kx, i]``
        and the per-channel scale entries, read through ``ctx.view`` and counted in ``rec``."""
        return self.module("weights").weights_and_scales(ctx, rec, op)

    def scales(self, ctx, rec, op):
        """``(bias, scale, shift)`` of an operation without weights that has a scale stream (a per-channel pool)."""
        return self.module("weights").scales(ctx, rec, op)

    def run_dma(self, ctx, op):
        """Execute the DMA ``op``; returns its ``traffic.OpRecord``."""
        return self.module("dma").run_dma(ctx, op)

    def dma_footprint(self, arch, op):
        """What the DMA ``op`` writes and reads, for the stream checker (``traffic.DmaFootprint``)."""
        return self.module("dma").footprint(arch, op)

    # ------------------------------------------------------------------ geometry and timing
    def ifm_block_depth(self, arch, op) -> int:
        """The IFM depth a convolution or reduce-sum consumes per pass of the MAC array (its block
        configuration), clipped to the IFM depth."""
        return self.module("blocks").ifm_block_depth(arch, op)

    def micro_block(self, arch, op) -> tuple:
        """The OFM micro-block (h, w, c) the operation's blocks are computed in."""
        return self.module("blocks").micro_block(arch, op)

    def compute_cycles(self, arch, op, geo: dict, block_memory: tuple, scale_latency: float) -> dict:
        """The MAC/AO pipeline of a kernel operation over its blocks (``timing.pipeline``): total, fill, mac, ao
        and wd cycles. ``block_memory``: (cycles to read one IFM block, cycles to write one OFM block)."""
        return self.module("performance").compute_cycles(arch, op, geo, block_memory, scale_latency)

    def memory_ports(self, mem) -> int:
        """How many AXI ports of one kind reach memory ``mem`` (a system config's ``MemoryTimingSpec``): its
        bandwidth is that many times one port's."""
        raise NotImplementedError

    def limit_by_channels(self, model, op, transfers, cost: dict) -> dict:
        """``cost`` (port -> bytes at the port's full bandwidth) raised where one AXI channel's limit makes its
        bytes take longer; ``transfers``: (tensor, direction, port, bytes as costed)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ the family itself
    def sources(self) -> list:
        """The source files of the family (what decoded streams, decoded weights and timings derive from)."""
        return sorted(Path(importlib.import_module(type(self).__module__).__file__).resolve().parent.glob("*.py"))

    def __repr__(self) -> str:
        return f"<{self.name} product family>"

    def __reduce__(self):  # one object per family, also after pickling
        return _family, (type(self).__module__,)


def _family(module: str) -> ProductFamily:
    return importlib.import_module(module).FAMILY
