"""The Ethos-U55 and Ethos-U65 product family: one command set (``hwdesc.ethosu``) on configurations of 32 to 512
MACs, the U65 with 40-bit addresses, 2-D/3-D DMA and, on the U65-512, a second core (Regor's
``architecture/ethosu55`` and ``ethosu65``).

One module per job: ``variants`` (the configurations), ``operations`` (register state -> descriptors),
``blocks`` (IFM block depth, micro-block: the block configuration the weights and the timing share),
``weights`` (weight ordering, scale entries), ``dma`` (1-D, and the U65's 2-D/3-D, DMA), ``performance`` (MAC and
output-stage cycles). The submodules are imported when first used.
"""

from __future__ import annotations

from hwdesc import ethosu

from ..family import ProductFamily
from .variants import is_u65, variant_table


class EthosU55Family(ProductFamily):
    name = "ethos-u55"
    isa = ethosu
    #: BLOCKDEP is a 2-bit field (Vela's MaxBlockdep)
    max_blockdep = (1 << ethosu.BY_NAME["NPU_SET_BLOCKDEP"].fields[0].width) - 1

    def has_command(self, cdef, arch) -> bool:
        return cdef.valid_for(is_u65(arch))  # the U65-only registers (2-D/3-D DMA, the second core's)

    def memory_ports(self, mem) -> int:
        return 1  # one AXI port per memory

    def limit_by_channels(self, model, op, transfers, cost):
        return cost  # no per-channel limits modelled: a memory's bandwidth is shared by every transfer


FAMILY = EthosU55Family()
FAMILY.variants = variant_table(FAMILY)
