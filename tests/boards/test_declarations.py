"""The board keys are declared once (fvp/boards/schema.py): the schema, the typed spec, the defaults and the key
table of docs/boards.md come from the declarations."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest

from fvp.boards import ConfigProblems, load_board
from fvp.boards import schema as S

ROOT = Path(__file__).resolve().parents[2]


def _board_keys():
    spec = importlib.util.spec_from_file_location("board_keys", ROOT / "tools" / "board_keys.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_docs_key_table_is_the_declarations():
    mod = _board_keys()
    text = mod.DOC.read_text()
    assert mod.with_table(text) == text, "docs/boards.md's key table is out of date: run python3 tools/board_keys.py"


def test_every_declared_key_is_in_the_schema_and_the_table():
    table = S.key_table()
    for name in ("npu.max_commands", "memory.<NAME>.masters", "devices.<NAME>.out_file", "firmware.pools.<NAME>.align",
                 "system_configs.<NAME>.memories.<TYPE>.burst_length", "cpu.costs.<NAME>"):
        assert f"| `{name}` |" in table
    assert list(S.SCHEMA["npu"].schema) == list(S.NPU.keys)


def test_typed_fields_come_from_the_keys():
    assert [f.name for f in dataclasses.fields(S.MemoryModeSpec)] == [
        "name", "const_port", "arena_port", "cache_port", "arena_cache_size", "qconfig", "regioncfg"]
    assert [f.name for f in dataclasses.fields(S.DeviceSpec)] == [
        "name", "type", "base", "secure_base", "size", "irq", "props"]
    assert dataclasses.fields(S.BoardSpec)[-1].name == "provenance"


def test_defaults_come_from_the_declarations():
    s = load_board(None)
    assert s.devices["scc"].props["read_value"] == 32_000_000
    assert s.devices["timing_adapter0"].props["read_value"] == S.DEVICE.variants["stub"].keys["read_value"].default
    assert s.devices["system"].irq is None
    assert s.firmware.model.npu is True


@pytest.mark.parametrize("override, says", [
    ("npu.max_commands=0", "npu.max_commands: 0: a command count must be >= 1"),
    ("firmware.pools.temp.align=0", "firmware.pools.temp.align: 0: an alignment must be >= 1"),
    ("devices.uart0.size=0", "devices.uart0.size: 0: a device size must be >= 1"),
    ("memory.DDR.masters=[]", "memory.DDR.masters: []: expected at least 1 item: a memory needs a master"),
    ("memory_modes.Shared_Sram.regioncfg=[]", "regioncfg: expected 8 values 0..3 (one per region), got []"),
])
def test_zero_or_empty_is_an_error_not_the_default(override, says):
    with pytest.raises(ConfigProblems) as e:
        load_board(None, [override])
    assert len(e.value.problems) == 1 and e.value.problems[0].startswith(f"-C {override}: ")
    assert says in e.value.problems[0], e.value.problems
