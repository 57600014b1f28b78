"""Stop reasons and NPU fault kinds are named codes (fvp.errors.StopReason, FaultKind): every raise site spells one
of them, and they print as their value on every Python."""

import pytest

from fvp.errors import FaultKind, NpuFault, SimulationStop, StopReason


def test_a_stop_carries_a_named_reason_that_prints_as_its_value():
    s = SimulationStop("cycle_limit")
    assert s.reason is StopReason.CYCLE_LIMIT and s.reason == "cycle_limit"
    assert f"{s.reason}" == str(s.reason) == "cycle_limit" and f"{s.reason:>12}" == " cycle_limit"


def test_a_misspelled_reason_or_kind_is_a_bug_not_a_new_reason():
    with pytest.raises(ValueError):
        SimulationStop("cycle-limit")
    with pytest.raises(ValueError):
        NpuFault("parse_error", "x")
    assert NpuFault("bus_error", "x").kind is FaultKind.BUS_ERROR
