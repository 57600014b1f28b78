"""The Ethos-U85 product family (``hwdesc.ethosu85``; Regor's ``architecture/ethosu85``): configurations of 128 to
2048 MACs with one to four weight decoders, no SHRAM but a LUT RAM and a chaining buffer, per-operand scaling,
transposes, resize, gather/scatter DMA and AXI channels of their own.

One module per job: ``variants`` (the configurations and their internal RAMs), ``operations`` (register state ->
descriptors), ``blocks`` (IFM block depth, micro-block: the block configuration the weights and the timing share),
``weights`` (weight traversals, the fast weight format, scale entries), ``dma`` (1-D to 3-D, gather, scatter),
``performance`` (MAC, output-stage and weight-decoder cycles), ``channels`` (per-channel AXI limits). The
submodules are imported when first used.
"""

from __future__ import annotations

from hwdesc import ethosu85

from ..family import ProductFamily
from .variants import variant_table


class EthosU85Family(ProductFamily):
    name = "ethos-u85"
    isa = ethosu85
    max_blockdep = None  # the U85's block overlap (its register generator's) is not modelled by the checker
    internal_memory = "LUT RAM"  # no SHRAM: an internal DMA address is in the 2 KiB LUT RAM (Vela's "lutram")

    def has_command(self, cdef, arch) -> bool:
        return True  # every command of the U85's table exists on every configuration

    def memory_ports(self, mem) -> int:
        # one memory type is reached through several AXI ports: vela.ini's <Mem>_ports_used (Ethos_U85_SYS_*:
        # SRAM x2 or x4); Regor (regor.cpp) makes its bandwidth clock_scale x 16 x ports
        return max(int(getattr(mem, "ports_used", 1) or 1), 1)

    def limit_by_channels(self, model, op, transfers, cost):
        return self.module("channels").limit_by_channels(model, op, transfers, cost)


FAMILY = EthosU85Family()
FAMILY.variants = variant_table(FAMILY)
