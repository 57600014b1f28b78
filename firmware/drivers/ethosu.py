"""Arm Ethos-U driver (the ``ethos-u-core-driver`` flow), talking to the NPU through its registers.

Init: soft reset through RESET (secure, privileged), wait for STATUS.reset_status to clear, check PROT, then
the AXI setup of the selected memory mode (QCONFIG, REGIONCFG, AXI_LIMIT0..3). ``invoke_v3`` walks the Vela
driver payload: the ``COP1`` FOURCC, OPTIMIZER_CONFIG (the program's CONFIG/ID words checked against the
NPU's CONFIG/ID registers, with the driver's ``NPU config mismatch`` messages), NOPs and COMMAND_STREAM
(QBASE/QSIZE, BASEP0..n, CMD.transition_to_running_state, WFI until IRQ, CMD.clear_irq, STATUS check).
Errors print the driver's ``E: <message> (<file>:<line>)`` lines on stderr (the UART). The inference
begin/end hooks (``ethosu_inference_begin``/``_end``) are where the perf monitor programs and reads the PMU.

The driver is built for one NPU (the runner's ``ETHOSU_TARGET_NPU_CONFIG``; :func:`driver_for` picks the class
from the variant name): :class:`EthosUDriver` is ``ethosu_device_u55_u65.c``, :class:`EthosU85Driver`
``ethosu_device_u85.c`` with ``ethosu_config_u85.h``'s defaults. The Ethos-U85's differences: init refuses an
NPU whose CONFIG.product is not the U85's; the AXI setup is MEM_ATTR0..3 (0/1 the SRAM port, 2/3 the EXT
port), AXI_SRAM and AXI_EXT (outstanding transactions, 256-byte bursts; the EXT read limit is 32 below 512
MACs, 64 from 512) and POWER_CTRL (no MAC power ramping); QCONFIG and REGIONCFG (MEM_ATTR indices) are written
with each command stream; the optimizer-config check compares product, MACs, AXI ports, command-stream version
and custom DMA (``NPU config mismatch. npu.x=.., optimizer.x=..``); a fault is bus, parse, branch or ECC.
Simplified: the driver's LOG_INFO/LOG_DEBUG lines (off at the default log level) are not printed.
"""

from __future__ import annotations

import os
import sys

from hwdesc.ethosu import MMIO as R  # the NPU's registers (the driver's ethosu55_interface.h)
from hwdesc import ethosu as E  # the driver payload (COP1)
from hwdesc.ethosu85 import MMIO as R85  # the Ethos-U85's registers (ethosu85_interface.h)

ID, STATUS, CMD, RESET, QBASE, QBASE_HI, QREAD, QCONFIG, QSIZE, PROT, CONFIG, REGIONCFG = (R[n].offset for n in (
    "ID", "STATUS", "CMD", "RESET", "QBASE", "QBASE_HI", "QREAD", "QCONFIG", "QSIZE", "PROT", "CONFIG", "REGIONCFG"))
ST_IRQ_RAISED, ST_BUS_STATUS, ST_RESET_STATUS, ST_CMD_PARSE_ERROR, ST_CMD_END_REACHED, ST_WD_FAULT, ST_ECC_FAULT = (
    R.STATUS.mask(n) for n in ("irq_raised", "bus_status", "reset_status", "cmd_parse_error", "cmd_end_reached",
                               "wd_fault", "ecc_fault"))
CMD_RUN, CMD_CLEAR_IRQ = R.CMD.mask("transition_to_running_state"), R.CMD.mask("clear_irq")
CMD_PWR_CLK_MASK = R.CMD.mask("clock_q_enable", "power_q_enable")

OPTIMIZER_CONFIG, COMMAND_STREAM, NOP = (E.DRIVER_ACTION.value(n) for n in ("OPTIMIZER_CONFIG", "COMMAND_STREAM", "NOP"))
FAST_MEMORY_BASE_ADDR_INDEX = 2

# AXI_LIMITn (ethosu_config_u55.h defaults: 64-byte bursts, memtype 0, 32 outstanding reads, 16 writes;
# ethosu_config_u65.h: 64 reads, 32 writes)
AXI_LIMIT_DEFAULT = R.AXI_LIMIT.pack(max_beats=0, memtype=0, max_outstanding_read_m1=32 - 1,
                                     max_outstanding_write_m1=16 - 1)
AXI_LIMIT_DEFAULT_U65 = R.AXI_LIMIT.pack(max_beats=0, memtype=0, max_outstanding_read_m1=64 - 1,
                                         max_outstanding_write_m1=32 - 1)


class EthosUDriver:
    def __init__(self, bus, base: int, *, qconfig: int, regioncfg, fast_memory: tuple | None = None,
                 console=None, secure: bool = True, privileged: bool = True, hooks=None, u65: bool = False):
        self.bus = bus
        self.axi_limit = AXI_LIMIT_DEFAULT_U65 if u65 else AXI_LIMIT_DEFAULT  # the config header built in
        self.base = base
        self.qconfig = qconfig
        self.regioncfg = tuple(regioncfg)
        self.fast_memory = fast_memory  # (address, size) of the dedicated SRAM, or None
        self.console = console
        self.secure = secure
        self.privileged = privileged
        self.hooks = hooks  # object with inference_begin() / inference_end()
        self.status_error = False
        self.last_status = 0
        self.initialised = False

    # ------------------------------------------------------------------ registers
    def _rd(self, off: int) -> int:
        return self.bus.read32(self.base + off)

    def _wr(self, off: int, value: int) -> None:
        self.bus.write32(self.base + off, value & 0xFFFFFFFF)

    def log_err(self, message: str) -> None:
        frame = sys._getframe(1)
        line = f"E: {message} ({os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno})\n"
        if self.console is not None:
            self.bus.work("log_char", len(line))
            self.console.write(line.encode())

    # ------------------------------------------------------------------ init
    def init(self) -> bool:
        self.bus.work("call")
        if not self.soft_reset():
            return False
        self.initialised = True
        return True

    def soft_reset(self) -> bool:
        self._wr(RESET, R.RESET.pack(pending_CPL=int(self.privileged), pending_CSL=int(self.secure)))
        for _ in range(100):
            if not self._rd(STATUS) & ST_RESET_STATUS:
                break
        else:
            self.log_err("Soft reset timed out")
            return False
        prot = self._rd(PROT)
        if R.PROT.get(prot, "active_CPL") != int(self.privileged) or R.PROT.get(prot, "active_CSL") != int(self.secure):
            self.log_err("Failed to switch security state and privilege level")
            return False
        self.axi_init()
        return True

    def axi_init(self) -> None:
        self._wr(QCONFIG, self.qconfig)
        rcfg = 0
        for i, v in enumerate(self.regioncfg[:8]):
            rcfg |= R.REGIONCFG.field(f"region{i}").put(v)
        self._wr(REGIONCFG, rcfg)
        for i in range(R.AXI_LIMIT.count):
            self._wr(R.AXI_LIMIT.at(i), self.axi_limit)

    # ------------------------------------------------------------------ invoke
    def invoke_v3(self, payload_address: int, payload_size: int, base_addr: list, base_addr_size: list) -> int:
        """Run a Vela driver payload; 0 on success, -1 on failure (like ``ethosu_invoke_v3``)."""
        bus = self.bus
        bus.work("call")
        if payload_address % 16:
            self.log_err(f"Command stream addr 0x{payload_address:x} not aligned to 16 bytes")
            return -1
        if payload_size % 4:
            self.log_err(f"Custom data size={payload_size} not a multiple of 4")
            return -1
        fourcc = self._word(payload_address)
        if fourcc != E.COP1_FOURCC:
            self.log_err(f"Custom Operator Payload: {fourcc:x} is not correct, expected {E.COP1_FOURCC:x}")
            return -1
        base_addr = list(base_addr)
        base_addr_size = list(base_addr_size)
        if self.fast_memory is not None and len(base_addr) > FAST_MEMORY_BASE_ADDR_INDEX:
            fm_addr, fm_size = self.fast_memory
            if base_addr_size[FAST_MEMORY_BASE_ADDR_INDEX] > fm_size:
                self.log_err(f"Fast memory area too small. fast_memory_size={fm_size}, "
                             f"base_addr_size={base_addr_size[FAST_MEMORY_BASE_ADDR_INDEX]}")
                return -1
            base_addr[FAST_MEMORY_BASE_ADDR_INDEX] = fm_addr
        for i, a in enumerate(base_addr):
            if a % 16:
                self.log_err(f"Base addr {i}: 0x{a:x} not aligned to 16 bytes")
                return -1

        if self.hooks is not None:
            self.hooks.inference_begin()
        self.status_error = False
        ret = 0
        ptr = payload_address + 4
        end = payload_address + payload_size
        while ptr < end:
            word = self._word(ptr)
            action = E.driver_action(word)
            if action == OPTIMIZER_CONFIG:
                if ptr + 12 > end:
                    self.log_err("Optimizer config truncated")
                    ret = -1
                    break
                ok = self._handle_optimizer_config(self._word(ptr + 4), self._word(ptr + 8))
                ptr += 12
                if not ok:
                    ret = -1
                    break
            elif action == COMMAND_STREAM:
                length_words = E.driver_action_length(word)
                cms = ptr + 4
                if cms + 4 * length_words > end:
                    self.log_err(f"Command stream of {length_words} words runs past the payload end")
                    ret = -1
                    break
                if not self._handle_command_stream(cms, 4 * length_words, base_addr):
                    ret = -1
                    break
                ptr = cms + 4 * length_words
            elif action == NOP:
                ptr += 4
            else:
                self.log_err(f"UNSUPPORTED driver_action_command {action}")
                ret = -1
                break
        if self.hooks is not None:
            self.hooks.inference_end()
        return ret

    def _word(self, addr: int) -> int:
        return int.from_bytes(self.bus.read(addr, 4), "little")

    def _handle_optimizer_config(self, cfg_in: int, id_in: int) -> bool:
        hw_cfg = self._rd(CONFIG)
        hw_id = self._rd(ID)
        ok = True
        cfg, ident = R.CONFIG.get, R.ID.get

        if cfg_in != hw_cfg:
            for name in ("macs_per_cc", "shram_size", "cmd_stream_version", "product"):
                if cfg(hw_cfg, name) != cfg(cfg_in, name):
                    self.log_err(f"NPU config mismatch: npu.{name}={cfg(hw_cfg, name)} optimizer.{name}={cfg(cfg_in, name)}")
                    ok = False

        return self._arch_matches(ident, hw_id, id_in, "NPU arch mismatch: npu.arch={} optimizer.arch={}") and ok

    def _arch_matches(self, ident, hw_id: int, id_in: int, message: str) -> bool:
        """The driver's architecture check: the same major revision, a minor revision at least the optimizer's
        (``message`` takes the two dotted revisions, worded as the product's driver words it)."""
        def arch(word):
            return ident(word, "arch_major_rev"), ident(word, "arch_minor_rev"), ident(word, "arch_patch_rev")

        hw_arch, opt_arch = arch(hw_id), arch(id_in)
        if hw_arch[0] != opt_arch[0] or hw_arch[1] < opt_arch[1]:
            self.log_err(message.format(".".join(map(str, hw_arch)), ".".join(map(str, opt_arch))))
            return False
        return True

    def _handle_command_stream(self, cms: int, size: int, base_addr: list) -> bool:
        self._wr(QBASE, cms & 0xFFFFFFFF)
        self._wr(QBASE_HI, cms >> 32)
        self._wr(QSIZE, size)
        for i, a in enumerate(base_addr[:R.BASEP.count]):
            self._wr(R.BASEP.at(i), a & 0xFFFFFFFF)
            self._wr(R.BASEP_HI.at(i), a >> 32)
        self._wr(CMD, (self._rd(CMD) & CMD_PWR_CLK_MASK) | CMD_RUN)
        # wait_for_irq: WFI until the NPU's interrupt arrives
        while True:
            irq = self.bus.wait_for_interrupt()
            if irq is not None:
                status = self._rd(STATUS)
                if status & ST_IRQ_RAISED:
                    break
        # ethosu_dev_handle_interrupt
        self._wr(CMD, (self._rd(CMD) & CMD_PWR_CLK_MASK) | CMD_CLEAR_IRQ)
        status = self._rd(STATUS)
        self.last_status = status
        if status & (ST_BUS_STATUS | ST_CMD_PARSE_ERROR | ST_WD_FAULT | ST_ECC_FAULT):
            faults = [name for bit, name in ((ST_BUS_STATUS, "bus_status"), (ST_CMD_PARSE_ERROR, "cmd_parse_error"),
                                             (ST_WD_FAULT, "wd_fault"), (ST_ECC_FAULT, "ecc_fault")) if status & bit]
            self.log_err(f"NPU fault: status=0x{status:08x} ({', '.join(faults)}), qread={self._rd(QREAD)}")
            self.status_error = True
            self.soft_reset()
            return False
        if not status & ST_CMD_END_REACHED:
            self.log_err(f"NPU did not reach the end of the command stream: status=0x{status:08x}")
            return False
        return True


# ================================================================================ Ethos-U85
ETHOSU_PRODUCT_U85 = 2  # CONFIG.product
# ethosu_config_u85.h defaults: MEM_ATTR0/1 the SRAM AXI port, MEM_ATTR2/3 the EXT port (non-sharable, device
# non-bufferable); AXI limits at the maximum the hardware allows; no MAC power ramping
U85_MEM_ATTR = tuple(R85.MEM_ATTR.pack(axi_port=port) for port in (0, 0, 1, 1))
U85_AXI_SRAM_READS, U85_AXI_SRAM_WRITES = 12, 16
U85_AXI_EXT_WRITES = 32
U85_AXI_MAX_BEATS = 2  # 256-byte bursts
U85_MAC_PWR_RAMP_CYCLES = 0


def u85_axi_ext_reads(macs: int) -> int:
    """ethosu_config_u85.h: outstanding EXT reads, 32 below 512 MACs (ETHOSU_MACS), 64 from 512."""
    return 32 if macs < 512 else 64


class EthosU85Driver(EthosUDriver):
    """The core driver built for an Ethos-U85 with ``macs`` MACs (``ethosu_device_u85.c``)."""

    def __init__(self, bus, base: int, *, macs: int, **kw):
        super().__init__(bus, base, **kw)
        self.macs = macs

    def init(self) -> bool:
        self.bus.work("call")
        if R85.CONFIG.get(self._rd(R85.CONFIG.offset), "product") != ETHOSU_PRODUCT_U85:
            self.log_err("Failed to initialize device. Driver has not been compiled for this product")
            return False
        if not self.soft_reset():
            return False
        self.initialised = True
        return True

    def soft_reset(self) -> bool:
        # RESET, STATUS.reset_status and PROT have the U55's offsets and fields: the shared sequence, then axi_init
        if not super().soft_reset():
            return False
        self._wr(R85.POWER_CTRL.offset, R85.POWER_CTRL.pack(mac_step_cycles=U85_MAC_PWR_RAMP_CYCLES))
        return True

    def axi_init(self) -> None:
        for i, attr in enumerate(U85_MEM_ATTR):
            self._wr(R85.MEM_ATTR.at(i), attr)
        self._wr(R85.AXI_SRAM.offset, R85.AXI_SRAM.pack(max_outstanding_read_m1=U85_AXI_SRAM_READS - 1,
                                                        max_outstanding_write_m1=U85_AXI_SRAM_WRITES - 1,
                                                        max_beats=U85_AXI_MAX_BEATS))
        self._wr(R85.AXI_EXT.offset, R85.AXI_EXT.pack(max_outstanding_read_m1=u85_axi_ext_reads(self.macs) - 1,
                                                      max_outstanding_write_m1=U85_AXI_EXT_WRITES - 1,
                                                      max_beats=U85_AXI_MAX_BEATS))

    def _handle_optimizer_config(self, cfg_in: int, id_in: int) -> bool:
        hw_cfg = self._rd(R85.CONFIG.offset)
        hw_id = self._rd(R85.ID.offset)
        cfg, ident = R85.CONFIG.get, R85.ID.get
        ok = True
        if cfg_in != hw_cfg:
            for name, shown in (("product", int), ("macs_per_cc", int), ("num_axi_ext", lambda v: 1 << v),
                                ("num_axi_sram", lambda v: 1 << v), ("cmd_stream_version", int)):
                if cfg(hw_cfg, name) != cfg(cfg_in, name):
                    self.log_err(f"NPU config mismatch. npu.{name}={shown(cfg(hw_cfg, name))}, "
                                 f"optimizer.{name}={shown(cfg(cfg_in, name))}")
                    ok = False
            if not cfg(hw_cfg, "custom_dma") and cfg(cfg_in, "custom_dma"):
                self.log_err(f"NPU config mismatch. npu.custom_dma={cfg(hw_cfg, 'custom_dma')}, "
                             f"optimizer.custom_dma={cfg(cfg_in, 'custom_dma')}")
                ok = False

        return self._arch_matches(ident, hw_id, id_in, "NPU arch mismatch. npu.arch={}, optimizer.arch={}") and ok

    def _handle_command_stream(self, cms: int, size: int, base_addr: list) -> bool:
        w = self._wr
        w(R85.QBASE.offset, cms & 0xFFFFFFFF)
        w(R85.QBASE_HI.offset, cms >> 32)
        w(R85.QSIZE.offset, size)
        w(R85.QCONFIG.offset, self.qconfig)  # ethosu_config_select(qbase, -1): NPU_QCONFIG
        rcfg = 0
        for i, a in enumerate(base_addr[:R85.BASEP.count]):
            w(R85.BASEP.at(i), a & 0xFFFFFFFF)
            w(R85.BASEP_HI.at(i), a >> 32)
            rcfg |= R85.REGIONCFG.field(f"region{i}").put(self.regioncfg[i] if i < len(self.regioncfg) else 0)
        w(R85.REGIONCFG.offset, rcfg)
        cmd_off = R85.CMD.offset
        keep = R85.CMD.mask("clock_q_enable", "power_q_enable")
        w(cmd_off, (self._rd(cmd_off) & keep) | R85.CMD.mask("transition_to_running_state"))
        status_off = R85.STATUS.offset
        while True:  # wait_for_irq: WFI until the NPU's interrupt arrives
            if self.bus.wait_for_interrupt() is not None and self._rd(status_off) & R85.STATUS.mask("irq_raised"):
                break
        w(cmd_off, (self._rd(cmd_off) & keep) | R85.CMD.mask("clear_irq"))  # ethosu_dev_handle_interrupt
        status = self._rd(status_off)
        self.last_status = status
        faults = [n for n in ("bus_status", "cmd_parse_error", "branch_fault", "ecc_fault")
                  if status & R85.STATUS.mask(n)]
        if faults:
            self.log_err(f"NPU fault: status=0x{status:08x} ({', '.join(faults)}), qread={self._rd(R85.QREAD.offset)}")
            self.status_error = True
            self.soft_reset()
            return False
        if not status & R85.STATUS.mask("cmd_end_reached"):
            self.log_err(f"NPU did not reach the end of the command stream: status=0x{status:08x}")
            return False
        return True


def driver_for(variant: str):
    """The driver class a runner built for ``variant`` (``ETHOSU_TARGET_NPU_CONFIG``, e.g. ``ethos-u85-256``) has,
    and the keyword arguments that build adds (the U85's MAC count, ETHOSU_MACS)."""
    family, _, macs = str(variant).rpartition("-")
    if family == "ethos-u85":
        return EthosU85Driver, {"macs": int(macs)}
    return EthosUDriver, {"u65": family == "ethos-u65"}  # ethosu_config_u65.h's AXI limits
