"""Ethos-U variant table (research notes ethosu.md sections 1.1 and 4; for U85 Vela's ``ethos_u85.cpp``).

One frozen :class:`NpuArch` per configuration Vela knows: ``ethos-u55-32/64/128/256``,
``ethos-u65-256/512`` and ``ethos-u85-128/256/512/1024/2048``.  Everything here is static data: the
functional engines need only ``product``, ``address_bits``, ``shram_bytes`` and the ublock depth (weight
order); the rest is for the timing model and for the device's ID/CONFIG registers.

The Ethos-U85 has no SHRAM: its internal buffers are the IFM, accumulator, output and chaining RAMs
(:class:`U85Rams`, Vela's ``AcceleratorConfig`` for each MAC configuration) and a 2 KiB LUT RAM filled by
DMA. ``cores`` is, for U85, the number of weight decoders (CONFIG.num_wd = log2 of it), which is how many
weight streams the standard weight format has.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwdesc import ethosu85
from hwdesc.ethosu import MMIO_BASE, NPU_VARIANTS

from ...errors import ConfigError

#: ID register image Vela's driver payload carries (arch 1.0.6); the driver compares it with the hardware.
ID_WORD = 0x10066001

PRODUCT_U55 = 0
PRODUCT_U65 = 1
PRODUCT_U85 = 2


@dataclass(frozen=True)
class U85Rams:
    """An Ethos-U85 configuration's internal RAMs and AXI ports (Vela 5.1 ``s_EthosU85Configs``)."""

    ofm_ublocks: tuple  # the OFM micro-blocks (h, w, c) this MAC configuration supports
    ifm_ram_bytes: int
    acc_ram_bytes: int
    ob_ram_bytes: int
    cb_ram_bytes: int
    axi_sram_ports_log2: int  # hwdesc.ethosu85.ACCELERATOR_CONFIGS
    axi_ext_ports_log2: int
    channel_rbs: tuple  # outstanding read bursts per AXI channel (Vela's channelRBs)
    lut_ram_bytes: int = 2048


@dataclass(frozen=True)
class NpuArch:
    """Static description of one Ethos-U configuration.

    Block shapes are ``(height, width, depth)``.  ``shram_bytes`` is per core; ``config_word`` is the
    CONFIG register image (macs_per_cc = log2 of MACs per cycle over all cores, shram_size in KiB over all
    cores, product in bits [31:28]); ``id_word`` the ID register image.
    """

    name: str
    product: int  # 0 = Ethos-U55, 1 = Ethos-U65
    macs: int  # MACs per cycle per core (U85: of the whole NPU)
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
    u85: U85Rams | None = None

    # ----------------------------------------------------------------- derived values
    @property
    def is_u65(self) -> bool:
        return self.product == PRODUCT_U65

    @property
    def is_u55(self) -> bool:
        return self.product == PRODUCT_U55

    @property
    def is_u85(self) -> bool:
        return self.product == PRODUCT_U85

    @property
    def total_macs(self) -> int:
        # a U85's weight decoders feed one MAC array: ``macs`` is already the whole NPU's
        return self.macs if self.is_u85 else self.macs * self.cores

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
        if self.is_u85:
            return ethosu85.config_word(self.macs)
        return MMIO_BASE.CONFIG.pack(macs_per_cc=self.macs_per_cc_log2, cmd_stream_version=self.cmd_stream_version,
                                     shram_size=self.shram_kib, product=self.product)

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


def _u85(macs, ofm_ublocks, ifm_ublock, ifm_ram, acc_ram, ob_ram, cb_ram, channel_rbs, output_cycles,
         activation_cycles):
    # Vela 5.1 ethos_u85.cpp s_EthosU85Configs / s_EthosU85PerfInfo (weight decoders and AXI ports from
    # hwdesc.ethosu85); the U85 has a 40-bit address space and 16-byte (128-bit) AXI data beats. Its only
    # internal memory DMA can address is the 2 KiB LUT RAM (Vela's "lutram"): ``shram_bytes`` is that RAM,
    # LUT slot n at byte 256 * n.
    cfg = ethosu85.ACCELERATOR_CONFIGS[macs]
    return NpuArch(name=f"ethos-u85-{macs}", product=PRODUCT_U85, macs=macs, cores=cfg.cores,
                   ofm_ublock=ofm_ublocks[0], ifm_ublock=ifm_ublock, shram_bytes=2048, shram_granules=(),
                   elem_units=max(1, macs // 16), address_bits=40, axi_width_bytes=16, max_outstanding_dma=2,
                   max_outstanding_kernels=2, output_cycles_per_elem=output_cycles,
                   activation_cycles_per_elem=activation_cycles, cmd_stream_version=1, id_word=ethosu85.id_word(),
                   u85=U85Rams(ofm_ublocks=ofm_ublocks, ifm_ram_bytes=ifm_ram, acc_ram_bytes=acc_ram,
                               ob_ram_bytes=ob_ram, cb_ram_bytes=cb_ram, axi_sram_ports_log2=cfg.num_axi_sram_log2,
                               axi_ext_ports_log2=cfg.num_axi_ext_log2, channel_rbs=channel_rbs))


ARCHS = {
    a.name: a
    for a in (
        _u55("ethos-u55-32", 32, (1, 1, 4), (1, 1, 8), 16, _G_SMALL32, 1, _U55_32_CYC),
        _u55("ethos-u55-64", 64, (1, 1, 8), (1, 1, 8), 16, _G_SMALL64, 2, _U55_64_CYC),
        _u55("ethos-u55-128", 128, (1, 2, 8), (1, 2, 8), 24, _G_128, 4, _U55_128_CYC),
        _u55("ethos-u55-256", 256, (2, 2, 8), (2, 2, 8), 48, _G_256, 8, _U256_CYC),
        _u65("ethos-u65-256", 1, _U256_CYC),
        _u65("ethos-u65-512", 2, _U65_512_CYC),
        _u85(128, ((1, 2, 8), (1, 1, 16)), (1, 2, 8), 8192, 8192, 2048, 768,
             (64, 64, 128, 128, 104, 16), (0.5, 0.5, 0.5, 1.0, 1.0, 1.0), (0.5, 1.0)),
        _u85(256, ((1, 2, 16), (1, 4, 8), (2, 2, 8)), (2, 2, 8), 16384, 16384, 2048, 1536,
             (104, 104, 128, 128, 128, 16), (0.25, 0.25, 0.25, 0.5, 0.5, 0.5), (0.25, 0.5)),
        _u85(512, ((2, 2, 16), (1, 4, 16)), (2, 2, 16), 16384, 32768, 4096, 3072,
             (128, 128, 256, 256, 128, 16), (0.125, 0.125, 0.25, 0.5, 0.25, 0.25), (0.125, 0.25)),
        _u85(1024, ((2, 2, 32), (1, 4, 32), (2, 4, 16)), (4, 2, 16), 16384, 65536, 4096, 6144,
             (256, 256, 416, 208, 256, 16), (0.0625, 0.125, 0.25, 0.5, 0.125, 0.25), (0.0625, 0.125)),
        _u85(2048, ((2, 2, 64), (1, 4, 64), (4, 4, 16)), (4, 4, 16), 32768, 131072, 8192, 12288,
             (256, 256, 512, 256, 256, 16), (0.03125, 0.0625, 0.125, 0.25, 0.0625, 0.125), (0.03125, 0.0625)),
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
