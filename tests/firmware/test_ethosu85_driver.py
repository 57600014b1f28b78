"""The Ethos-U driver's U85 path and the perf monitor's U85 counters, against a register-recording bus: what
ethosu_device_u85.c / ethosu_config_u85.h and arm_perf_monitor.cpp (ETHOSU85) write."""

import pytest

from firmware.drivers.ethosu import EthosU85Driver, EthosUDriver, driver_for
from firmware.executorch.perf_monitor import PerfMonitor, npu_family
from firmware.executorch.profiles import get_profile
from hwdesc import ethosu85 as U85

R = U85.MMIO
BASE = 0x5000_4000


class RegBus:
    """The NPU's registers as a dict: reads of CONFIG/ID/PROT answer as a U85 after reset; writes are logged."""

    def __init__(self, config, ident=None):
        self.regs = {R.CONFIG.offset: config, R.ID.offset: U85.id_word() if ident is None else ident,
                     R.PROT.offset: R.PROT.pack(active_CPL=1, active_CSL=1), R.STATUS.offset: 0}
        self.writes = []
        self.console = b""

    def read32(self, addr):
        return self.regs.get(addr - BASE, 0)

    def write32(self, addr, value):
        self.writes.append((addr - BASE, value))
        self.regs[addr - BASE] = value

    def work(self, kind, amount=1.0):
        pass

    def written(self, reg, i=None):
        off = reg.offset if i is None else reg.at(i)
        return [v for o, v in self.writes if o == off]


class Console:
    def __init__(self):
        self.text = ""

    def write(self, data):
        self.text += data.decode()


def _driver(macs, config=None, **kw):
    bus = RegBus(U85.config_word(macs) if config is None else config)
    console = Console()
    cls, build = driver_for(f"ethos-u85-{macs}")
    drv = cls(bus, BASE, qconfig=2, regioncfg=(3, 0, 1, 1, 1, 1, 1, 1), console=console, **build, **kw)
    return drv, bus, console


def test_driver_for_picks_the_build():
    assert driver_for("ethos-u85-1024") == (EthosU85Driver, {"macs": 1024})
    # the U55/U65 driver, with the AXI limits of the config header it is built with (ethosu_config_u65.h: 64 reads)
    assert driver_for("ethos-u55-128") == (EthosUDriver, {"u65": False})
    assert driver_for("ethos-u65-512") == (EthosUDriver, {"u65": True})


@pytest.mark.parametrize("macs,ext_reads", [(128, 32), (256, 32), (512, 64), (2048, 64)])
def test_init_sets_mem_attr_axi_limits_and_power_ctrl(macs, ext_reads):
    drv, bus, console = _driver(macs)
    assert drv.init() and not console.text
    assert bus.written(R.RESET) == [R.RESET.pack(pending_CPL=1, pending_CSL=1)]
    # MEM_ATTR0/1: the SRAM port, MEM_ATTR2/3: the EXT port
    assert [bus.written(R.MEM_ATTR, i) for i in range(4)] == [[0], [0], [4], [4]]
    sram, ext = bus.written(R.AXI_SRAM)[0], bus.written(R.AXI_EXT)[0]
    assert [R.AXI_SRAM.get(sram, f) for f in ("max_outstanding_read_m1", "max_outstanding_write_m1", "max_beats")] \
        == [11, 15, 2]
    assert [R.AXI_EXT.get(ext, f) for f in ("max_outstanding_read_m1", "max_outstanding_write_m1", "max_beats")] \
        == [ext_reads - 1, 31, 2]
    assert bus.written(R.POWER_CTRL) == [0]


def test_init_refuses_an_npu_of_another_product():
    from hwdesc.ethosu import MMIO_BASE as U55_BASE

    drv, bus, console = _driver(256, config=U55_BASE.CONFIG.pack(macs_per_cc=7, shram_size=24, product=0))
    assert not drv.init()
    assert console.text.startswith("E: Failed to initialize device. Driver has not been compiled for this product")
    assert not bus.written(R.RESET)


def test_optimizer_config_mismatch_messages():
    drv, bus, console = _driver(256)
    assert drv._handle_optimizer_config(U85.config_word(256), U85.id_word()) and not console.text
    assert not drv._handle_optimizer_config(U85.config_word(2048), U85.id_word())
    lines = [ln.split(" (")[0] for ln in console.text.splitlines()]
    assert lines == ["E: NPU config mismatch. npu.macs_per_cc=8, optimizer.macs_per_cc=11",
                     "E: NPU config mismatch. npu.num_axi_ext=1, optimizer.num_axi_ext=2",
                     "E: NPU config mismatch. npu.num_axi_sram=2, optimizer.num_axi_sram=4"]
    console.text = ""
    old = R.ID.pack(arch_major_rev=1, arch_minor_rev=0, arch_patch_rev=6)
    assert not drv._handle_optimizer_config(U85.config_word(256), old)
    assert console.text.startswith("E: NPU arch mismatch. npu.arch=2.0.0, optimizer.arch=1.0.6")


def test_perf_monitor_programs_the_u85_pmu():
    bus = RegBus(U85.config_word(256))
    prof = get_profile("executorch-1.5")
    pm = PerfMonitor(bus, BASE, None, prof, npu_family("ethos-u85-256"))
    pm.inference_begin()
    names = ["SRAM_RD_DATA_BEAT_RECEIVED", "SRAM_WR_DATA_BEAT_WRITTEN", "EXT_RD_DATA_BEAT_RECEIVED",
             "EXT_WR_DATA_BEAT_WRITTEN", "NPU_IDLE", "MAC_ACTIVE", "WD_ACTIVE"]
    assert [bus.written(R.PMEVTYPER, i) for i in range(7)] == [[U85.PMU_EVENT.value(n)] for n in names]
    assert not bus.written(R.PMEVTYPER, 7)  # the eighth counter is left alone
    assert bus.written(R.PMCNTENSET) == [0x8000_007F]
    assert bus.written(R.PMCCNTR_CFG) == [R.PMCCNTR_CFG.pack(cycle_cnt_cfg_start=0x23, cycle_cnt_cfg_stop=0x20)]
    for i in range(8):
        bus.regs[R.PMEVCNTR.at(i)] = 10 + i
    bus.regs[R.PMCCNTR.offset], bus.regs[R.PMCCNTR_HI.offset] = 5, 1
    pm.inference_end()
    assert pm.event_counts == [10, 11, 12, 13, 14, 15, 16] and pm.pmu_cycles == (1 << 32) + 5
    # the PR #12353-era runner counted five U85 events; the U55 build four
    assert len(PerfMonitor(bus, BASE, None, get_profile("executorch-pr12353"), "u85").events) == 5
    assert len(PerfMonitor(bus, BASE, None, prof, npu_family("ethos-u65-512")).events) == 4
