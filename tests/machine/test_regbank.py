"""The register-block mechanism and the interface tables it reads (hwdesc)."""

import pytest

from fvp.machine.devices.regbank import RegisterBank
from hwdesc import cmsdk_uart, cortex_m55, ethosu
from hwdesc.regs import Field, Register, RegisterMap


def _map():
    return RegisterMap("toy", (
        Register("CTRL", 0x0, "RW", 0x5, (Field("en", 0, 1), Field("mode", 4, 2))),
        Register("ID", 0x4, "RO", 0x1234),
        Register("GO", 0x8, "WO"),
        Register("SET", 0x10, "W1S"),
        Register("CLR", 0x14, "W1C", alias="SET"),
        Register("ARR", 0x20, count=3, stride=8),
    ))


def test_dispatch_follows_the_access_types():
    errors, kicks = [], []
    bank = RegisterBank(_map(), write={"GO": kicks.append},
                        read_only=lambda reg, v: errors.append((reg.name, v)))
    assert bank.read(0x0) == 0x5 and bank.read(0x4) == 0x1234 and bank.read(0x8) == 0
    assert bank.write(0x4, 7) and errors == [("ID", 7)] and bank.read(0x4) == 0x1234
    bank.write(0x8, 3)
    assert kicks == [3]
    bank.write(0x10, 0b1010)
    bank.write(0x14, 0b0010)
    assert bank.read(0x10) == bank.read(0x14) == 0b1000
    bank.write(0x28, 9)
    assert bank.values["ARR"] == [0, 9, 0] and bank.read(0x28) == 9
    assert bank.read(0x24) is None and not bank.write(0x24, 1) and not bank.handles(0x3)
    bank.reset()
    assert bank["CTRL"] == 0x5 and bank.values["ARR"] == [0, 0, 0]


def test_array_hooks_get_the_index_and_unknown_hooks_are_refused():
    seen = []
    bank = RegisterBank(_map(), read={"ARR": lambda i: 100 + i}, write={"ARR": lambda i, v: seen.append((i, v))})
    assert [bank.read(o) for o in (0x20, 0x28, 0x30)] == [100, 101, 102]
    bank.write(0x30, 5)
    assert seen == [(2, 5)]
    with pytest.raises(AssertionError):
        RegisterBank(_map(), write={"NOPE": print})


def test_fields_pack_and_get():
    reg = _map().CTRL
    assert reg.pack(en=1, mode=2) == 0x21 and reg.get(0x21, "mode") == 2 and reg.mask() == 0x31
    assert ethosu.MMIO.PMCCNTR_CFG.pack(cycle_cnt_cfg_start=ethosu.PMU_EVENT.NPU_ACTIVE,
                                        cycle_cnt_cfg_stop=ethosu.PMU_EVENT.NPU_IDLE) == 0x00200023


def test_the_tables_hold_the_documented_facts():
    m = ethosu.MMIO
    assert (m.STATUS.offset, m.CMD.reset, m.PMCR.reset, m.BASEP.at(7), m.BASEP_HI.at(7)) == (0x4, 0xC, 0x2000, 0xB8, 0xBC)
    assert m.PMEVTYPER.at(3) == 0x38C and m.PMCNTENSET.mask() == 0x8000000F
    assert ethosu.PMU_EVENT[0x187] == "AXI1_WR_DATA_BEAT_WRITTEN" and ethosu.PMU_EVENT.CYCLE == 0x11
    assert ethosu.ACTIVATION_BUILTIN == (3, 4) and ethosu.ROUND_MODE.NATURAL == ethosu.ROUND_NATURAL == 2
    assert ethosu.BY_NAME["NPU_SET_IFM_BASE0"].reg == 0xA00 and ethosu.CODE.NPU_SET_IFM_BASE0 == 0x4000
    assert cortex_m55.REGISTERS.CPUID.reset == 0x410FD220 and cortex_m55.REGISTERS.NVIC_ICPR.at(15) == 0xE2BC
    assert cmsdk_uart.REGISTERS.CTRL.mask() == 0x7F and cmsdk_uart.REGISTERS.BAUDDIV.offset == 0x10
