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

# NPU registers (ethosu55_interface.h)
ID, STATUS, CMD, RESET, QBASE, QBASE_HI, QREAD, QCONFIG, QSIZE, PROT, CONFIG = (
    0x000, 0x004, 0x008, 0x00C, 0x010, 0x014, 0x018, 0x01C, 0x020, 0x024, 0x028)
REGIONCFG, AXI_LIMIT0, BASEP0 = 0x03C, 0x040, 0x080

ST_IRQ_RAISED, ST_BUS_STATUS, ST_RESET_STATUS, ST_CMD_PARSE_ERROR, ST_CMD_END_REACHED = 0x2, 0x4, 0x8, 0x10, 0x20
ST_WD_FAULT, ST_ECC_FAULT = 0x80, 0x100
CMD_RUN, CMD_CLEAR_IRQ, CMD_PWR_CLK_MASK = 0x1, 0x2, 0xC

ETHOSU_FOURCC = 0x31504F43  # "COP1"
OPTIMIZER_CONFIG, COMMAND_STREAM, READ_APB_REG, DUMP_SHRAM, NOP = 1, 2, 3, 4, 5
FAST_MEMORY_BASE_ADDR_INDEX = 2

# AXI_LIMITn: max_beats [1:0] (0 = 64 B), memtype [7:4], max_outstanding_read_m1 [21:16], _write_m1 [29:24]
# (ethosu_config_u55.h defaults: 32 outstanding reads, 16 writes, memtype 0)
AXI_LIMIT_DEFAULT = (0 << 0) | (0 << 4) | ((32 - 1) << 16) | ((16 - 1) << 24)


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
        self._wr(RESET, (1 if self.privileged else 0) | ((1 if self.secure else 0) << 1))
        for _ in range(100):
            if not self._rd(STATUS) & ST_RESET_STATUS:
                break
        else:
            self.log_err("Soft reset timed out")
            return False
        prot = self._rd(PROT)
        if (prot & 1) != (1 if self.privileged else 0) or ((prot >> 1) & 1) != (1 if self.secure else 0):
            self.log_err("Failed to switch security state and privilege level")
            return False
        self.axi_init()
        return True

    def axi_init(self) -> None:
        self._wr(QCONFIG, self.qconfig)
        rcfg = 0
        for i, v in enumerate(self.regioncfg[:8]):
            rcfg |= (v & 3) << (2 * i)
        self._wr(REGIONCFG, rcfg)
        for i in range(4):
            self._wr(AXI_LIMIT0 + 4 * i, AXI_LIMIT_DEFAULT)

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
        if fourcc != ETHOSU_FOURCC:
            self.log_err(f"Custom Operator Payload: {fourcc:x} is not correct, expected {ETHOSU_FOURCC:x}")
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
            action = word & 0xFF
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
                length_words = (((word >> 8) & 0xFF) << 16) | (word >> 16)
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

        def f(word, shift, bits):
            return (word >> shift) & ((1 << bits) - 1)

        if cfg_in != hw_cfg:
            if f(hw_cfg, 0, 4) != f(cfg_in, 0, 4):
                self.log_err(f"NPU config mismatch: npu.macs_per_cc={f(hw_cfg, 0, 4)} optimizer.macs_per_cc={f(cfg_in, 0, 4)}")
                ok = False
            if f(hw_cfg, 8, 8) != f(cfg_in, 8, 8):
                self.log_err(f"NPU config mismatch: npu.shram_size={f(hw_cfg, 8, 8)} optimizer.shram_size={f(cfg_in, 8, 8)}")
                ok = False
            if f(hw_cfg, 4, 4) != f(cfg_in, 4, 4):
                self.log_err(f"NPU config mismatch: npu.cmd_stream_version={f(hw_cfg, 4, 4)} "
                             f"optimizer.cmd_stream_version={f(cfg_in, 4, 4)}")
                ok = False
            if f(hw_cfg, 28, 4) != f(cfg_in, 28, 4):
                self.log_err(f"NPU config mismatch: npu.product={f(hw_cfg, 28, 4)} optimizer.product={f(cfg_in, 28, 4)}")
                ok = False
        # ID: arch_patch [19:16], arch_minor [27:20], arch_major [31:28]
        if f(hw_id, 28, 4) != f(id_in, 28, 4) or f(hw_id, 20, 8) < f(id_in, 20, 8):
            self.log_err(f"NPU arch mismatch: npu.arch={f(hw_id, 28, 4)}.{f(hw_id, 20, 8)}.{f(hw_id, 16, 4)} "
                         f"optimizer.arch={f(id_in, 28, 4)}.{f(id_in, 20, 8)}.{f(id_in, 16, 4)}")
            ok = False
        return ok

    def _handle_command_stream(self, cms: int, size: int, base_addr: list) -> bool:
        self._wr(QBASE, cms & 0xFFFFFFFF)
        self._wr(QBASE_HI, cms >> 32)
        self._wr(QSIZE, size)
        for i, a in enumerate(base_addr[:8]):
            self._wr(BASEP0 + 8 * i, a & 0xFFFFFFFF)
            self._wr(BASEP0 + 8 * i + 4, a >> 32)
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
