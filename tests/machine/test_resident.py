"""fvp.machine.resident: a firmware's session entry stepped request by request, with Platform.run's stop rules."""

import io

import pytest

from fvp.boards import load_board
from fvp.errors import SimulationStop
from fvp.machine.platform import Platform
from fvp.machine.resident import FirmwareStopped, Resident


@pytest.fixture
def platform():
    p = Platform(load_board(None), console=io.BytesIO(), out=io.StringIO())
    yield p
    p.close()


def _console(bus, boot):
    from firmware.drivers.uart import Uart

    return Uart(bus, boot.console_base)


def echo_entry(bus, boot):
    """A toy session entry: says hello, then doubles what it is sent (charging some CPU work), ends with EOT."""
    uart = _console(bus, boot)
    uart.write(b"ready\n")
    request = yield {"ready": True}
    while request is not None:
        t0 = bus.now_ps()  # when the request reached the firmware
        bus.work("memcpy_byte", 7 * request)  # work of a length that leaves the CPU in another clock phase
        uart.write(f"got {request}\n".encode())
        request = yield {"twice": 2 * request, "t0": t0}
    uart.write(b"bye\n\x04")


def test_steps_hand_out_replies_and_the_console_of_each(platform):
    fw = Resident(platform, echo_entry)
    step = fw.start()
    assert step.reply == {"ready": True} and step.console == b"ready\n"
    s1 = fw.request(3)
    assert s1.reply["twice"] == 6 and s1.console == b"got 3\n"
    s2 = fw.request(5)
    assert s2.reply["twice"] == 10 and s2.console == b"got 5\n"
    result, console = fw.finish()
    assert (result.reason, console) == ("user", b"bye\n\x04") and not fw.running
    assert fw.finish()[0] is result  # idempotent


def test_every_request_starts_in_the_clock_phase_of_the_first(platform):
    import math

    fw = Resident(platform, echo_entry)
    fw.start()
    period = fw.period_ps()
    spec = platform.spec
    assert period == 10 ** 12 // math.gcd(spec.cpu.clock_hz, spec.npu.system_config.core_clock_hz)
    t0 = [fw.request(n).reply["t0"] for n in (1, 2, 3, 5, 1)]
    assert len({t % period for t in t0}) == 1 and len(set(t0)) == 5  # same phase, later and later
    assert platform.sim.idle_fraction() >= 0


def test_a_stop_inside_a_request_ends_the_firmware_with_its_reason(platform):
    def entry(bus, boot):
        request = yield "ready"
        while request is not None:
            if request == "fault":
                raise SimulationStop("hard_fault", "bus error at 0x0")
            request = yield "ok"

    fw = Resident(platform, entry)
    fw.start()
    assert fw.request("x").reply == "ok"
    with pytest.raises(FirmwareStopped) as e:
        fw.request("fault")
    assert e.value.result.reason == "hard_fault" and "bus error" in e.value.result.message
    assert not fw.running
    with pytest.raises(RuntimeError):
        fw.request("x")


def test_a_firmware_bug_is_a_crash_not_a_traceback(platform):
    def entry(bus, boot):
        yield "ready"
        raise KeyError("oops")

    fw = Resident(platform, entry)
    fw.start()
    with pytest.raises(FirmwareStopped) as e:
        fw.request(1)
    assert e.value.result.reason == "crash" and "KeyError" in e.value.result.message


def test_an_entry_that_returns_exits_and_one_that_will_not_end_is_an_error(platform):
    def returns(bus, boot):
        yield "ready"
        return 0

    fw = Resident(platform, returns)
    fw.start()
    assert fw.finish()[0].reason == "exit"

    def stubborn(bus, boot):
        while True:
            yield "again"

    fw = Resident(Platform(load_board(None), console=io.BytesIO(), out=io.StringIO()), stubborn)
    fw.start()
    result, _ = fw.finish()
    assert result.reason == "error" and "did not end" in result.message
    fw.platform.close()
