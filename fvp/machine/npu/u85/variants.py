"""The Ethos-U85 configurations (Vela's ``ethos_u85.cpp``: ``s_EthosU85Configs``, ``s_EthosU85PerfInfo``; the weight
decoders and AXI ports of ``hwdesc.ethosu85.ACCELERATOR_CONFIGS``).

The Ethos-U85 has no SHRAM: its internal buffers are the IFM, accumulator, output and chaining RAMs
(:class:`U85Rams`, Vela's ``AcceleratorConfig`` for each MAC configuration) and a 2 KiB LUT RAM filled by DMA.
``cores`` is the number of weight decoders (CONFIG.num_wd = log2 of it), which is how many weight streams the
standard weight format has; ``macs`` is already the whole NPU's.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwdesc import ethosu85

from ..variant import NpuArch

#: CONFIG.product (Vela's ConfigRegisters)
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


def _variant(family, macs, ofm_ublocks, ifm_ublock, ifm_ram, acc_ram, ob_ram, cb_ram, channel_rbs, output_cycles,
         activation_cycles):
    # the U85 has a 40-bit address space and 16-byte (128-bit) AXI data beats. Its only internal memory DMA can
    # address is the 2 KiB LUT RAM (Vela's "lutram"): ``shram_bytes`` is that RAM, LUT slot n at byte 256 * n.
    cfg = ethosu85.ACCELERATOR_CONFIGS[macs]
    return NpuArch(name=f"ethos-u85-{macs}", product=PRODUCT_U85, macs=macs, cores=cfg.cores, total_macs=macs,
                   ofm_ublock=ofm_ublocks[0], ifm_ublock=ifm_ublock, shram_bytes=2048, shram_granules=(),
                   elem_units=max(1, macs // 16), address_bits=40, axi_width_bytes=16, max_outstanding_dma=2,
                   max_outstanding_kernels=2, output_cycles_per_elem=output_cycles,
                   activation_cycles_per_elem=activation_cycles, config_word=ethosu85.config_word(macs),
                   id_word=ethosu85.id_word(),
                   microarch=U85Rams(ofm_ublocks=ofm_ublocks, ifm_ram_bytes=ifm_ram, acc_ram_bytes=acc_ram,
                                     ob_ram_bytes=ob_ram, cb_ram_bytes=cb_ram,
                                     axi_sram_ports_log2=cfg.num_axi_sram_log2,
                                     axi_ext_ports_log2=cfg.num_axi_ext_log2, channel_rbs=channel_rbs),
                   family=family)


def variant_table(family) -> tuple:
    """The configurations of the family ``family`` (each names it)."""
    return (
        _variant(family, 128, ((1, 2, 8), (1, 1, 16)), (1, 2, 8), 8192, 8192, 2048, 768,
             (64, 64, 128, 128, 104, 16), (0.5, 0.5, 0.5, 1.0, 1.0, 1.0), (0.5, 1.0)),
        _variant(family, 256, ((1, 2, 16), (1, 4, 8), (2, 2, 8)), (2, 2, 8), 16384, 16384, 2048, 1536,
             (104, 104, 128, 128, 128, 16), (0.25, 0.25, 0.25, 0.5, 0.5, 0.5), (0.25, 0.5)),
        _variant(family, 512, ((2, 2, 16), (1, 4, 16)), (2, 2, 16), 16384, 32768, 4096, 3072,
             (128, 128, 256, 256, 128, 16), (0.125, 0.125, 0.25, 0.5, 0.25, 0.25), (0.125, 0.25)),
        _variant(family, 1024, ((2, 2, 32), (1, 4, 32), (2, 4, 16)), (4, 2, 16), 16384, 65536, 4096, 6144,
             (256, 256, 416, 208, 256, 16), (0.0625, 0.125, 0.25, 0.5, 0.125, 0.25), (0.0625, 0.125)),
        _variant(family, 2048, ((2, 2, 64), (1, 4, 64), (4, 4, 16)), (4, 4, 16), 32768, 131072, 8192, 12288,
             (256, 256, 512, 256, 256, 16), (0.03125, 0.0625, 0.125, 0.25, 0.0625, 0.125), (0.03125, 0.0625)),
    )
