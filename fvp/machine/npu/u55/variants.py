"""The Ethos-U55 and Ethos-U65 configurations (research notes ethosu.md sections 1.1 and 4; Vela's
``architecture_features.py`` and Regor's ``ethos_u55.cpp``, ``ethos_u65.cpp``): MACs and cores, micro-blocks,
SHRAM size and granules, AXI widths, the output and activation stages' cycles per element, CONFIG and ID."""

from __future__ import annotations

from hwdesc.ethosu import MMIO_BASE

from ..variant import NpuArch

#: CONFIG.product of each (Vela's ConfigRegisters)
PRODUCT_U55 = 0
PRODUCT_U65 = 1
#: ID register image Vela's driver payload carries (arch 1.0.6); the driver compares it with the hardware.
ID_WORD = 0x10066001
#: CONFIG.cmd_stream_version
CMD_STREAM_VERSION = 0

_U55_32_CYC = ((2.0, 3.0, 3.0, 3.0, 4.0, 6.0, 1.0, 2.0), (1.0, 1.0, 0.0))
_U55_64_CYC = ((1.0, 1.5, 1.5, 1.5, 2.0, 3.0, 0.5, 1.0), (1.0, 1.0, 0.0))
_U55_128_CYC = ((0.75, 1.25, 0.75, 0.75, 1.0, 1.5, 0.25, 0.5), (1.0, 0.5, 0.0))
_U256_CYC = ((0.625, 1.125, 0.5, 0.375, 0.5, 0.75, 0.125, 0.25), (1.0, 0.25, 0.0))
_U65_512_CYC = ((0.3125, 0.5625, 0.25, 0.1875, 0.25, 0.375, 0.0625, 0.125), (0.5, 0.125, 0.0))

_G_SMALL32 = (2, 2, 2, 2, 4, 4, 4, 4)
_G_SMALL64 = (2, 2, 2, 2, 4, 4, 4, 8)
_G_128 = (4, 4, 4, 4, 8, 4, 8, 12)
_G_256 = (8, 8, 8, 8, 16, 8, 16, 20)


def is_u65(arch) -> bool:
    """The configuration is an Ethos-U65's (40-bit addresses, 2-D/3-D DMA, the second core's registers)."""
    return arch.product == PRODUCT_U65


def _config_word(product: int, macs: int, cores: int, shram_kib: int) -> int:
    # CONFIG: macs_per_cc = log2 of the MACs per cycle over all cores, shram_size in KiB over all cores
    return MMIO_BASE.CONFIG.pack(macs_per_cc=(macs * cores).bit_length() - 1, cmd_stream_version=CMD_STREAM_VERSION,
                                 shram_size=shram_kib * cores, product=product)


def _arch(family, name, product, macs, cores, ublock, ifm_ublock, shram_kib, gran, units, address_bits, axi_width,
          max_dma, cyc):
    return NpuArch(name=name, product=product, macs=macs, cores=cores, total_macs=macs * cores, ofm_ublock=ublock,
                   ifm_ublock=ifm_ublock, shram_bytes=shram_kib * 1024, shram_granules=gran, elem_units=units,
                   address_bits=address_bits, axi_width_bytes=axi_width, max_outstanding_dma=max_dma,
                   max_outstanding_kernels=2, output_cycles_per_elem=cyc[0], activation_cycles_per_elem=cyc[1],
                   config_word=_config_word(product, macs, cores, shram_kib), id_word=ID_WORD, family=family)


def _u55(family, name, macs, ofm_ub, ifm_ub, shram_kib, gran, units, cyc):
    return _arch(family, name, PRODUCT_U55, macs, 1, ofm_ub, ifm_ub, shram_kib, gran, units, 32, 8, 1, cyc)


def _u65(family, name, cores, cyc):
    return _arch(family, name, PRODUCT_U65, 256, cores, (2, 2, 8), (2, 2, 8), 48, _G_256, 8, 40, 16, 2, cyc)


def variant_table(family) -> tuple:
    """The configurations of the family ``family`` (each names it)."""
    return (
        _u55(family, "ethos-u55-32", 32, (1, 1, 4), (1, 1, 8), 16, _G_SMALL32, 1, _U55_32_CYC),
        _u55(family, "ethos-u55-64", 64, (1, 1, 8), (1, 1, 8), 16, _G_SMALL64, 2, _U55_64_CYC),
        _u55(family, "ethos-u55-128", 128, (1, 2, 8), (1, 2, 8), 24, _G_128, 4, _U55_128_CYC),
        _u55(family, "ethos-u55-256", 256, (2, 2, 8), (2, 2, 8), 48, _G_256, 8, _U256_CYC),
        _u65(family, "ethos-u65-256", 1, _U256_CYC),
        _u65(family, "ethos-u65-512", 2, _U65_512_CYC),
    )
