"""Ethos-U variant table (research notes ethosu.md sections 1.1 and 4).

One frozen :class:`NpuArch` per configuration Vela knows: ``ethos-u55-32/64/128/256`` and
``ethos-u65-256/512``.  Everything here is static data: the functional engines need only ``product``,
``address_bits``, ``shram_bytes`` and the ublock depth (weight order); the rest is for the timing model
and for the device's ID/CONFIG registers.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwdesc.ethosu import MMIO_BASE, NPU_VARIANTS

from ...errors import ConfigError

#: ID register image Vela's driver payload carries (arch 1.0.6); the driver compares it with the hardware.
ID_WORD = 0x10066001

PRODUCT_U55 = 0
PRODUCT_U65 = 1


@dataclass(frozen=True)
class NpuArch:
    """Static description of one Ethos-U configuration.

    Block shapes are ``(height, width, depth)``.  ``shram_bytes`` is per core; ``config_word`` is the
    CONFIG register image (macs_per_cc = log2 of MACs per cycle over all cores, shram_size in KiB over all
    cores, product in bits [31:28]); ``id_word`` the ID register image.
    """

    name: str
    product: int  # 0 = Ethos-U55, 1 = Ethos-U65
    macs: int  # MACs per cycle per core
    cores: int
    ofm_ublock: tuple  # (h, w, c)
    ifm_ublock: tuple  # (h, w, c)
    shram_bytes: int  # per core
    shram_granules: tuple  # [IFM8, IFM16, IFM8_EW, IFM16_EW, IFM32, Acc16, Acc32, Acc40]
    elem_units: int
    address_bits: int  # 32 (U55) or 40 (U65)
    axi_width_bytes: int  # bytes per AXI data beat: 8 (U55) or 16 (U65)
    max_outstanding_dma: int
    max_outstanding_kernels: int
    output_cycles_per_elem: tuple  # 8 entries, see ethosu.md section 4
    activation_cycles_per_elem: tuple  # [LUT/sigmoid/tanh, ReLU family, none]
    cmd_stream_version: int = 0
    id_word: int = ID_WORD

    # ----------------------------------------------------------------- derived values
    @property
    def is_u65(self) -> bool:
        return self.product == PRODUCT_U65

    @property
    def is_u55(self) -> bool:
        return self.product == PRODUCT_U55

    @property
    def total_macs(self) -> int:
        return self.macs * self.cores

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
    def config_word(self) -> int:
        return MMIO_BASE.CONFIG.pack(macs_per_cc=self.macs_per_cc_log2, cmd_stream_version=self.cmd_stream_version,
                                     shram_size=self.shram_kib, product=self.product)

    @property
    def address_mask(self) -> int:
        return (1 << self.address_bits) - 1

    @property
    def lut_start_bytes(self) -> int:
        """Byte address of LUT slot 0 in SHRAM (the last 2 KiB on 24/48-bank parts)."""
        return self.shram_bytes - 2048

    @property
    def ofm_ublock_depth(self) -> int:
        return self.ofm_ublock[2]

    @property
    def ifm_ublock_depth(self) -> int:
        return self.ifm_ublock[2]


_U55_32_CYC = ((2.0, 3.0, 3.0, 3.0, 4.0, 6.0, 1.0, 2.0), (1.0, 1.0, 0.0))
_U55_64_CYC = ((1.0, 1.5, 1.5, 1.5, 2.0, 3.0, 0.5, 1.0), (1.0, 1.0, 0.0))
_U55_128_CYC = ((0.75, 1.25, 0.75, 0.75, 1.0, 1.5, 0.25, 0.5), (1.0, 0.5, 0.0))
_U256_CYC = ((0.625, 1.125, 0.5, 0.375, 0.5, 0.75, 0.125, 0.25), (1.0, 0.25, 0.0))
_U65_512_CYC = ((0.3125, 0.5625, 0.25, 0.1875, 0.25, 0.375, 0.0625, 0.125), (0.5, 0.125, 0.0))

_G_SMALL32 = (2, 2, 2, 2, 4, 4, 4, 4)
_G_SMALL64 = (2, 2, 2, 2, 4, 4, 4, 8)
_G_128 = (4, 4, 4, 4, 8, 4, 8, 12)
_G_256 = (8, 8, 8, 8, 16, 8, 16, 20)


def _u55(name, macs, ofm_ub, ifm_ub, shram_kib, gran, units, cyc):
    return NpuArch(name=name, product=PRODUCT_U55, macs=macs, cores=1, ofm_ublock=ofm_ub, ifm_ublock=ifm_ub,
                   shram_bytes=shram_kib * 1024, shram_granules=gran, elem_units=units, address_bits=32,
                   axi_width_bytes=8, max_outstanding_dma=1, max_outstanding_kernels=2,
                   output_cycles_per_elem=cyc[0], activation_cycles_per_elem=cyc[1])


def _u65(name, cores, cyc):
    return NpuArch(name=name, product=PRODUCT_U65, macs=256, cores=cores, ofm_ublock=(2, 2, 8),
                   ifm_ublock=(2, 2, 8), shram_bytes=48 * 1024, shram_granules=_G_256, elem_units=8,
                   address_bits=40, axi_width_bytes=16, max_outstanding_dma=2, max_outstanding_kernels=2,
                   output_cycles_per_elem=cyc[0], activation_cycles_per_elem=cyc[1])


ARCHS = {
    a.name: a
    for a in (
        _u55("ethos-u55-32", 32, (1, 1, 4), (1, 1, 8), 16, _G_SMALL32, 1, _U55_32_CYC),
        _u55("ethos-u55-64", 64, (1, 1, 8), (1, 1, 8), 16, _G_SMALL64, 2, _U55_64_CYC),
        _u55("ethos-u55-128", 128, (1, 2, 8), (1, 2, 8), 24, _G_128, 4, _U55_128_CYC),
        _u55("ethos-u55-256", 256, (2, 2, 8), (2, 2, 8), 48, _G_256, 8, _U256_CYC),
        _u65("ethos-u65-256", 1, _U256_CYC),
        _u65("ethos-u65-512", 2, _U65_512_CYC),
    )
}


assert tuple(ARCHS) == NPU_VARIANTS  # the names a board may give (hwdesc), each with its microarchitecture


def get_arch(name) -> NpuArch:
    """Look up a variant by name (``ethos-u55-128``; case, ``_`` and an ``Ethos_U55_128`` spelling accepted).

    An :class:`NpuArch` is returned unchanged.
    """
    if isinstance(name, NpuArch):
        return name
    key = str(name).strip().lower().replace("_", "-")
    if key in ARCHS:
        return ARCHS[key]
    raise ConfigError(f"unknown NPU variant {name!r}; expected one of {', '.join(ARCHS)}")


def arch_from_config_word(config_word: int) -> NpuArch:
    """The variant whose CONFIG register image equals ``config_word`` (as in a COP1 header)."""
    for a in ARCHS.values():
        if a.config_word == config_word:
            return a
    raise ConfigError(f"no NPU variant has CONFIG word 0x{config_word:08x}")
