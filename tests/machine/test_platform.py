"""The platform: UART, simulated time and limits, the FVP trailer, --stat, hard faults, disasm."""

import io
import re

import pytest

from fvp.machine.bus import AddressMap, Bus, Ram
from fvp.boards import load_board
from fvp.machine.devices.uart import CmsdkUart
from fvp.errors import BusFault, SimulationStop
from fvp.host.run import session
from fvp.machine.platform import Platform
from fvp.machine.sim import Simulator
from testutil import CORPUS, run_fvp


class _Sink:
    def __init__(self):
        self.data = bytearray()
        self.flushes = 0

    def write(self, b):
        self.data += b

    def flush(self):
        self.flushes += 1


def test_uart_transmits_only_when_enabled_and_stops_on_eot():
    sink = _Sink()
    notes = []
    u = CmsdkUart("uart0", sink, shutdown_on_eot=True, guest_error=notes.append)
    u.write(0x000, ord("x"), 4)
    assert sink.data == b"" and notes and "TX_EN=0" in notes[0]
    u.write(0x008, 1, 4)
    for ch in b"hi\n":
        u.write(0x000, ch, 4)
    assert sink.data == b"hi\n"
    assert u.read(0x008, 4) == 1 and u.read(0x004, 4) == 0
    with pytest.raises(SimulationStop) as e:
        u.write_bytes(b"ok\x04ignored")
    assert e.value.reason == "user"
    assert sink.data == b"hi\nok\x04"


def test_uart_shutdown_tag():
    sink = _Sink()
    u = CmsdkUart("uart0", sink, shutdown_on_eot=False, shutdown_tag="EXITTHESIM")
    u.write(0x008, 1, 4)
    u.write_bytes(b"\x04 is plain data here\n")
    with pytest.raises(SimulationStop):
        u.write_bytes(b"done EXITTHE")
        u.write_bytes(b"SIM\n")


def test_address_map_and_bus_masters():
    amap = AddressMap()
    ram = Ram("SRAM", 0x1000, frozenset({"cpu", "npu"}))
    tcm = Ram("DTCM", 0x1000, frozenset({"cpu"}))
    amap.add(0x3100_0000, 0x1000, ram, "SRAM", ram.masters)
    amap.add(0x2100_0000, 0x1000, ram, "SRAM", ram.masters)  # alias of the same memory
    amap.add(0x3000_0000, 0x1000, tcm, "DTCM", tcm.masters)
    with pytest.raises(ValueError):
        amap.add(0x3000_0800, 0x1000, tcm, "X", {"cpu"})
    bus = Bus(amap)
    bus.write_word(0x3100_0010, 0xDEADBEEF, 4)
    assert bus.read_word(0x2100_0010, 4) == 0xDEADBEEF
    assert bus.view(0x3100_0010, 4, "npu").tobytes() == bytes.fromhex("efbeadde")
    with pytest.raises(BusFault, match="cannot reach DTCM"):
        bus.view(0x3000_0000, 16, "npu")
    with pytest.raises(BusFault, match="unmapped"):
        bus.read_word(0x5000_0000, 4)
    with pytest.raises(BusFault, match="runs past the end"):
        bus.view(0x3100_0FF0, 32)
    assert "unmapped" in amap.describe(0x3000_2000)


def test_close_gives_back_the_memories_and_keeps_earlier_views():
    """A closed platform's RAM is freed at once (not when the collector breaks its cycles): a view taken
    before keeps its bytes, an access afterwards is a clear bus fault, the secure alias too."""
    p = Platform(load_board("default"), model=b"\x5a" * 64, out=io.StringIO(), quiet_guest=True)
    addr, _ = p.layout["model"]
    before = p.bus.view(addr, 64)
    ram = p.amap.find(addr).target
    p.close()
    assert before.tobytes() == b"\x5a" * 64 and ram.data.size == 0
    for access in (lambda a: p.bus.view(a, 4), lambda a: p.bus.read_word(a, 4), lambda a: p.bus.write_word(a, 1, 4)):
        with pytest.raises(BusFault, match="after the platform was closed"):
            access(addr)
    with pytest.raises(BusFault, match="after the platform was closed"):
        p.bus.view(0x3100_0000, 4)  # ISRAM0's secure alias
    p.close()  # twice is harmless


def test_simulator_time_events_and_cycle_limit():
    sim = Simulator(32_000_000, cycle_limit=1000)
    fired = []
    sim.schedule(10_000_000, lambda: fired.append(sim.now_ps))  # 10 us
    sim.charge_cpu(100)  # 100 cycles at 32 MHz = 3.125 us
    assert sim.now_ps == 3_125_000 and not fired
    assert sim.run_next_event() and fired == [10_000_000]
    assert sim.cpu_cycles == 320
    with pytest.raises(SimulationStop) as e:
        sim.charge_cpu(10_000)
    assert e.value.reason == "cycle_limit"


def test_trailer_and_stat_block():
    rc, out, err = run_fvp("run", "--stat")
    assert rc == 0
    lines = out.splitlines()
    i = lines.index("Info: /OSCI/SystemC: Simulation stopped by user.")
    assert re.fullmatch(r"\[warning \]\[main@0\]\[\d+ ns\] Simulation stopped by user", lines[i + 1])
    stat = "\n".join(lines[i + 2:])
    for key in ("--- FVP_MPS3_Corstone_SSE_300 statistics:", "Simulated time", "User time", "System time",
                "Wall time", "Performance index", "cpu0", "MIPS", "Memory highwater mark"):
        assert key in stat


def test_cycle_limit_stops_with_fvp_message_and_status_3():
    rc, out, err = run_fvp("run", "--cyclelimit", "2000")
    assert rc == 3
    assert "Info: Simulation is stopping. Reason: Cycle limit has been exceeded." in out
    assert "Program complete" not in out


def test_time_limit_stops_with_fvp_message():
    rc, out, err = run_fvp("run", CORPUS / "mv2_full_u55-128.bpte", "--timelimit", "0.000001")
    assert rc == 3
    assert "Info: Simulation is stopping. Reason: CPU time has been exceeded." in out


def test_uart_to_file_and_eot(tmp_path):
    log = tmp_path / "uart.log"
    rc, out, err = run_fvp("run", "-C", f"mps3_board.uart0.out_file={log}")
    assert rc == 0
    text = log.read_bytes()
    assert b"Program complete, exiting." in text and text.endswith(b"\x04")
    assert "Program complete" not in out and "Simulation stopped by user" in out


def test_hard_fault_on_unmapped_access():
    spec = load_board("default")
    p = Platform(spec, model=b"\0" * 64, model_name="x")

    def bad_firmware(bus, boot):
        bus.read32(0x9000_0000 - 0x3000_0000)  # 0x6000_0000 is DDR; 0x5fff_0000 region is unmapped
        bus.read32(0x5FFF_0000)
        return 0

    out = io.StringIO()
    p.out = out
    r = session.run(p, bad_firmware)
    assert r.exit_code == 1 and r.reason == "hard_fault"
    assert re.search(r"^Hard fault: bus error on a 32-bit read: cpu access to unmapped address 0x5fff0000", out.getvalue(), re.M)


def test_deadlock_when_waiting_for_an_interrupt_that_never_comes():
    p = Platform(load_board("default"), model=b"\0" * 64, model_name="x")
    p.out = io.StringIO()
    r = session.run(p, lambda bus, boot: bus.wait_for_interrupt())
    assert r.exit_code == 1 and r.reason == "deadlock"


def test_disasm_add_q():
    rc, out, err = run_fvp("disasm", CORPUS / "add_q.pte")
    assert rc == 0, err
    ops = re.findall(r"^0x[0-9a-f]{4}  [0-9a-f]{8}\s+NPU_OP_(\w+)\s*(\w*)", out, re.M)
    assert ops == [("ELEMENTWISE", "ADD"), ("ELEMENTWISE", "MUL"), ("ELEMENTWISE", "ADD"),
                   ("ELEMENTWISE", "MUL"), ("ELEMENTWISE", "ADD"), ("STOP", "mask")]
    rc, out, err = run_fvp("disasm", CORPUS / "add_fp_cpu.pte")
    assert rc == 0 and "no Ethos-U delegates" in out
    rc, out, err = run_fvp("disasm", CORPUS / "README.md")
    assert rc == 2 and "Traceback" not in err and err.count("\n") == 1
