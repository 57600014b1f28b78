"""Arm Ethos-U55/U65 driver (the ``ethos-u-core-driver`` flow), talking to the NPU through its registers.

Init: soft reset through RESET (secure, privileged), wait for STATUS.reset_status to clear, check PROT, then
the AXI setup of the selected memory mode (QCONFIG, REGIONCFG, AXI_LIMIT0..3). ``invoke_v3`` walks the Vela
driver payload: the ``COP1`` FOURCC, OPTIMIZER_CONFIG (the program's CONFIG/ID words checked against the
NPU's CONFIG/ID registers, with the driver's ``NPU config mismatch`` messages), NOPs and COMMAND_STREAM
(QBASE/QSIZE, BASEP0..n, CMD.transition_to_running_state, WFI until IRQ, CMD.clear_irq, STATUS check).
Errors print the driver's ``E: <message> (<file>:<line>)`` lines on stderr (the UART). The inference
begin/end hooks (``ethosu_inference_begin``/``_end``) are where the perf monitor programs and reads the PMU.
"""

from __future__ import annotations

import os
import sys

from hwdesc.ethosu import MMIO as R  # the NPU's registers (the driver's ethosu55_interface.h)
from hwdesc import ethosu as E  # the driver payload (COP1)

ID, STATUS, CMD, RESET, QBASE, QBASE_HI, QREAD, QCONFIG, QSIZE, PROT, CONFIG, REGIONCFG = (R[n].offset for n in (
    "ID", "STATUS", "CMD", "RESET", "QBASE", "QBASE_HI", "QREAD", "QCONFIG", "QSIZE", "PROT", "CONFIG", "REGIONCFG"))
ST_IRQ_RAISED, ST_BUS_STATUS, ST_RESET_STATUS, ST_CMD_PARSE_ERROR, ST_CMD_END_REACHED, ST_WD_FAULT, ST_ECC_FAULT = (
    R.STATUS.mask(n) for n in ("irq_raised", "bus_status", "reset_status", "cmd_parse_error", "cmd_end_reached",
                               "wd_fault", "ecc_fault"))
CMD_RUN, CMD_CLEAR_IRQ = R.CMD.mask("transition_to_running_state"), R.CMD.mask("clear_irq")
CMD_PWR_CLK_MASK = R.CMD.mask("clock_q_enable", "power_q_enable")

OPTIMIZER_CONFIG, COMMAND_STREAM, NOP = (E.DRIVER_ACTION.value(n) for n in ("OPTIMIZER_CONFIG", "COMMAND_STREAM", "NOP"))
FAST_MEMORY_BASE_ADDR_INDEX = 2

# AXI_LIMITn (ethosu_config_u55.h defaults: 64-byte bursts, memtype 0, 32 outstanding reads, 16 writes)
AXI_LIMIT_DEFAULT = R.AXI_LIMIT.pack(max_beats=0, memtype=0, max_outstanding_read_m1=32 - 1,
                                     max_outstanding_write_m1=16 - 1)


class EthosUDriver:
    def __init__(self, bus, base: int, *, qconfig: int, regioncfg, fast_memory: tuple | None = None,
                 console=None, secure: bool = True, privileged: bool = True, hooks=None):
        self.bus = bus
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
            self._wr(R.AXI_LIMIT.at(i), AXI_LIMIT_DEFAULT)

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

        def arch(word):
            return ident(word, "arch_major_rev"), ident(word, "arch_minor_rev"), ident(word, "arch_patch_rev")

        hw_arch, opt_arch = arch(hw_id), arch(id_in)
        if hw_arch[0] != opt_arch[0] or hw_arch[1] < opt_arch[1]:
            self.log_err(f"NPU arch mismatch: npu.arch={'.'.join(map(str, hw_arch))} "
                         f"optimizer.arch={'.'.join(map(str, opt_arch))}")
            ok = False
        return ok

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
