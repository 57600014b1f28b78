"""The Corstone-300 FVP's timing adapters as port bandwidth (fvp/machine/npu/timing/adapter.py): the transaction-level
bandwidth cap, the pending-transaction limit, the pulse, and their use by the timing model and the boards."""

import math

import pytest

from fvp.boards import load_board
from fvp.boards.schema import TimingAdaptersSpec, TimingAdapterSpec
from fvp.errors import ConfigError
from fvp.machine.npu import timing as T
from fvp.machine.npu.arch import get_arch
from fvp.machine.npu.timing.adapter import port_timing

from .test_timing import HIGH_END, SHARED_SRAM, device, dma_record, offsets, sync_record


def ta(maxr=0, maxw=0, maxrw=0, rlatency=0, wlatency=0, pulse_on=0, pulse_off=0, bwcap=0):
    return TimingAdapterSpec(maxr, maxw, maxrw, rlatency, wlatency, pulse_on, pulse_off, bwcap)


# ExecuTorch corstone_utils.cmake / MLEK ta_config_u55_high_end.cmake, Ethos_U55_High_End_Embedded, Shared_Sram
TA0 = ta(maxr=8, maxw=8, rlatency=32, wlatency=32, pulse_on=3999, pulse_off=1, bwcap=4000)
TA1 = ta(maxr=2, rlatency=64, pulse_on=320, pulse_off=80, bwcap=50)


def test_bandwidth_cap_counts_whole_transactions():
    # 50 words per 400 cycles, 8-word (64-byte) transactions: the 7th starts at 48 < 50 words, so 56 words pass
    pt = port_timing(TA1, bus_bytes=8, txn_bytes=64)
    assert pt.read_bw == pytest.approx(7 * 64 / 400)  # 1.12 bytes/cycle, not the nominal 50 x 8 / 400 = 1.0
    assert (pt.read_latency, pt.write_latency) == (64, 0)
    # 128-byte bursts: 4 transactions of 16 words (64 words) per period
    assert port_timing(TA1, 8, 128).read_bw == pytest.approx(4 * 128 / 400)
    # a cap that is a multiple of the transaction passes exactly
    assert port_timing(ta(pulse_on=360, pulse_off=40, bwcap=48), 8, 64).read_bw == pytest.approx(48 * 8 / 400)


def test_sram_adapter_leaves_the_bus_rate():
    pt = port_timing(TA0, bus_bytes=8, txn_bytes=64, npu_reads=32, npu_writes=16)
    assert pt.read_bw == pytest.approx(8.0)  # 500 transactions of 64 B per 4000 cycles = the 8-byte bus
    assert pt.write_bw == pytest.approx(8.0)
    assert (pt.read_latency, pt.write_latency) == (32, 32)


def test_pending_limit_is_littles_law():
    # 2 reads pending, 64-cycle latency plus 8 beats each: 2 x 64 / 72 bytes per cycle
    pt = port_timing(ta(maxr=2, rlatency=64), bus_bytes=8, txn_bytes=64)
    assert pt.read_bw == pytest.approx(2 * 64 / 72)
    assert pt.write_bw == 8.0  # no write limit, no latency: the bus
    # the NPU's own limit counts when it is the lower one; MAXRW limits both directions
    assert port_timing(ta(maxr=8, rlatency=56), 8, 64, npu_reads=4).read_bw == pytest.approx(4 * 64 / 64)
    both = port_timing(ta(maxr=8, maxw=8, maxrw=1, rlatency=56, wlatency=56), 8, 64)
    assert both.read_bw == pytest.approx(64 / 64) and both.write_bw == pytest.approx(64 / 64)


def test_pulse_limits_the_transactions_started():
    # 24 pending reads of 500 + 4 cycles (a 16-byte bus); addresses pass 4000 of 5000 cycles, so 8 rounds of 24
    # transactions start per period: 192 x 64 / 5000, below both the cap (6 B/cycle) and 24 x 64 / 504
    slow = ta(maxr=24, maxw=12, rlatency=500, wlatency=250, pulse_on=4000, pulse_off=1000, bwcap=3750)
    pt = port_timing(slow, bus_bytes=16, txn_bytes=64)
    assert pt.read_bw == pytest.approx(24 * math.ceil(4000 / 504) * 64 / 5000)
    assert pt.read_bw < 24 * 64 / 504 < 3750 * 8 / 5000


def test_no_limits_is_the_bus():
    assert port_timing(ta(), 16, 64) == (16.0, 16.0, 0.0, 0.0)


def _model(tas):
    sc = HIGH_END.__class__(**{**HIGH_END.__dict__, "timing_adapters": tas})
    return T.TimingModel(get_arch("ethos-u55-128"), sc, SHARED_SRAM)


def test_timing_model_ports_follow_the_adapters():
    with_ta = _model({"Shared_Sram": TimingAdaptersSpec("Shared_Sram", TA0, TA1)})
    plain = _model({})
    assert plain.ports[1].bw == pytest.approx(1.0) and with_ta.ports[1].bw == pytest.approx(1.12)
    assert with_ta.ports[0].bw == pytest.approx(8.0)
    # another memory mode has no adapters here: Vela's timing
    other = _model({"Sram_Only": TimingAdaptersSpec("Sram_Only", TA0, TA0)})
    assert other.ports[1].bw == pytest.approx(1.0)
    # a 11,200-byte weight DMA from flash: 10,000 cycles behind the adapter, 11,200 at Vela's 1 byte/cycle
    recs = offsets([dma_record(11_200), sync_record("DMA_WAIT", 0), sync_record("STOP")])
    d_ta = with_ta.stream(recs, device()).per_op[0]
    d_plain = plain.stream(offsets([dma_record(11_200), sync_record("DMA_WAIT", 0), sync_record("STOP")]),
                           device()).per_op[0]
    assert d_ta.cycles == pytest.approx(d_plain.cycles - 1_200, abs=2)


def test_axi_limit_burst_size_reaches_the_adapter():
    m = _model({"Shared_Sram": TimingAdaptersSpec("Shared_Sram", TA0, TA1)})
    dev = device()
    dev.axi_bursts = lambda: ((64, 32, 16), (128, 32, 16))  # AXI_LIMIT2.max_beats = 1: 128-byte bursts on AXI1
    m.stream(offsets([dma_record(1024), sync_record("STOP")]), dev)
    assert m.ports[1].bw == pytest.approx(4 * 128 / 400)


def test_boards_carry_the_fvp_adapters():
    # the U65's values are not taken (docs/timing.md 1.2): Vela's memory timing
    assert not load_board("corstone-300-ethos-u65-256").npu.system_config.timing_adapters
    b = load_board("corstone-300-ethos-u55-128")
    tas = b.npu.system_config.timing_adapters[b.npu.memory_mode.name]
    assert (tas.axi1.maxr, tas.axi1.rlatency, tas.axi1.pulse_on, tas.axi1.pulse_off, tas.axi1.bwcap) == (
        2, 64, 320, 80, 50)
    assert (tas.axi0.rlatency, tas.axi0.bwcap) == (32, 4000)
    # an override goes through the board's checks
    b2 = load_board("corstone-300-ethos-u55-128",
                    ["system_configs.Ethos_U55_High_End_Embedded.timing_adapters.Shared_Sram.axi1.bwcap=48"])
    assert b2.npu.system_config.timing_adapters["Shared_Sram"].axi1.bwcap == 48
    with pytest.raises(ConfigError, match="bwcap"):
        load_board("corstone-300-ethos-u55-128",
                   ["system_configs.Ethos_U55_High_End_Embedded.timing_adapters.Shared_Sram.axi1.bwcap=-1"])


def _board_npu(board):
    import io

    from fvp.machine.platform import Platform

    p = Platform(load_board(board), out=io.StringIO(), quiet_guest=True)
    return p, next(d for d in p.devices.values() if hasattr(d, "axi_bursts"))


@pytest.mark.parametrize("board, pending", [("corstone-300-ethos-u55-128", (32, 16)),
                                            ("corstone-300-ethos-u65-256", (64, 32))])
def test_device_axi_limits_from_the_driver(board, pending):
    from firmware.drivers.ethosu import driver_for
    from hwdesc.ethosu import MMIO as R

    p, npu = _board_npu(board)
    spec = p.boot_info.npu
    cls, build = driver_for(load_board(board).npu.variant)
    drv = cls(p.port, spec.base, qconfig=spec.qconfig, regioncfg=spec.regioncfg, **build)
    assert drv.init()
    # the core driver's defaults (ethosu_config_u55.h / _u65.h): 64-byte bursts on both ports
    assert npu.axi_bursts() == ((64, *pending), (64, *pending))
    # AXI_LIMIT3 (memory type 3: REGIONCFG's region 0 in Shared_Sram, on AXI1) with 128-byte bursts; AXI_LIMIT2
    # is no region's type, so it does not count
    value = R.AXI_LIMIT.pack(max_beats=1, memtype=0, max_outstanding_read_m1=3, max_outstanding_write_m1=1)
    p.port.write32(spec.base + R.AXI_LIMIT.at(2), value)
    assert npu.axi_bursts()[1] == (64, *pending)
    p.port.write32(spec.base + R.AXI_LIMIT.at(3), value)
    assert npu.axi_bursts()[1] == (128, 4, 2)


def test_an_adapter_that_blocks_every_address_is_refused():
    with pytest.raises(ConfigError, match="pulse_on 0 with pulse_off 80 lets no address through"):
        load_board("corstone-300-ethos-u55-128",
                   ["system_configs.Ethos_U55_High_End_Embedded.timing_adapters.Shared_Sram.axi1.pulse_on=0"])
