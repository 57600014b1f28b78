"""One Ethos-U configuration: :class:`NpuArch` (research notes ethosu.md sections 1.1 and 4; for U85 Vela's
``ethos_u85.cpp``).

Static data only, the same fields for every product: the functional engines need ``address_bits``,
``shram_bytes`` and the micro-block depths (weight order); the rest is for the timing model and for the device's
ID/CONFIG registers. Each product family builds its own configurations (``u55/variants.py``, ``u85/variants.py``)
and is named by them (``family``: the object the shared model calls, ``family.py``); what only one product has
lives in ``microarch`` (the Ethos-U85's internal RAMs and AXI channels), read only by that product's modules.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class NpuArch:
    """Static description of one Ethos-U configuration.

    Block shapes are ``(height, width, depth)``. ``macs`` is per core (U85: of the whole NPU), ``total_macs``
    the whole NPU's; ``shram_bytes`` is per core (the U85's LUT RAM, the only internal memory its DMA reaches);
    ``config_word`` is the CONFIG register image, ``id_word`` the ID register image (both as the product
    defines them; a Vela driver payload carries the pair it was compiled for); ``product`` is CONFIG.product.
    """

    name: str
    product: int
    macs: int
    cores: int  # U55/U65: MAC cores (the U65-512 has 2); U85: weight decoders (CONFIG.num_wd = log2 of it)
    total_macs: int
    ofm_ublock: tuple  # (h, w, c)
    ifm_ublock: tuple  # (h, w, c)
    shram_bytes: int
    shram_granules: tuple  # [IFM8, IFM16, IFM8_EW, IFM16_EW, IFM32, Acc16, Acc32, Acc40]; () without SHRAM
    elem_units: int
    address_bits: int  # 32 (U55) or 40 (U65, U85)
    axi_width_bytes: int  # bytes per AXI data beat: 8 (U55) or 16 (U65, U85)
    max_outstanding_dma: int
    max_outstanding_kernels: int
    output_cycles_per_elem: tuple  # the product's output-stage table (ethosu.md section 4, Regor's perf info)
    activation_cycles_per_elem: tuple
    config_word: int
    id_word: int
    microarch: object = None  # what only this product has (the Ethos-U85: ``u85.variants.U85Rams``)
    family: object = field(default=None, compare=False, repr=False)  # its ``family.ProductFamily``

    # ----------------------------------------------------------------- derived values
    @property
    def macs_per_cc_log2(self) -> int:
        return self.total_macs.bit_length() - 1

    @property
    def shram_kib(self) -> int:
        """SHRAM size in KiB over all cores, as in CONFIG.shram_size."""
        return self.shram_bytes * self.cores // 1024

    @property
    def shram_banks(self) -> int:
        """1 KiB banks per core."""
        return self.shram_bytes // 1024

    @property
    def address_mask(self) -> int:
        return (1 << self.address_bits) - 1

    @property
    def lut_start_bytes(self) -> int:
        """Byte address of LUT slot 0 in SHRAM (the last 2 KiB on 24/48-bank parts; 0 in the U85's LUT RAM)."""
        return self.shram_bytes - 2048

    @property
    def ofm_ublock_depth(self) -> int:
        return self.ofm_ublock[2]

    @property
    def ifm_ublock_depth(self) -> int:
        return self.ifm_ublock[2]
