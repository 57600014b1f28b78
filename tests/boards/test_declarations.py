"""The board keys are declared once (fvp/boards/schema.py): the schema, the typed spec, the defaults and the key
table of docs/boards.md come from the declarations."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest

from fvp.boards import ConfigProblems, as_written, available_boards, layout_firmware, load_board
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
        "name", "type", "base", "secure_base", "size", "props", "irq"]
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


def _declared_paths(kinds):
    """The key table's paths (``memory.<NAME>.base``) of the keys whose checker is declared as one of ``kinds``
    (the end of its ``what``: ``address``, ``size``, ``clock``)."""
    return {path: key.check for name, node in S.SCHEMA.items() if node is not S.Free
            for path, key in S._rows(node, name) if getattr(key.check, "what", "").endswith(kinds)}


def _at(tree, parts, path=""):
    """(path, value) of every value of ``tree`` at ``parts``, where ``<NAME>``/``<TYPE>`` match any key."""
    if not parts:
        yield path, tree
        return
    if not isinstance(tree, dict):
        return
    names = list(tree) if parts[0].startswith("<") else [parts[0]] if parts[0] in tree else []
    for k in names:
        yield from _at(tree[k], parts[1:], f"{path}.{k}" if path else k)


@pytest.mark.parametrize("board", available_boards())
def test_config_writes_addresses_sizes_and_clocks_with_their_units(board):
    """`fvp config`'s values (fvp.boards.as_written): no declared address, size or clock is a bare integer, and
    each spelling reads back as the same value."""
    placed = layout_firmware(load_board(board), 16)  # the model and a pool have an address when a board fixes one
    spec = load_board(board, [f"firmware.model.address={placed['model'][0]}",
                              f"firmware.pools.temp.address={placed['temp'][0]}"])
    written = as_written(spec.raw)
    seen = set()
    for pattern, check in _declared_paths(("address", "size", "clock")).items():
        raw = dict(_at(spec.raw, pattern.split(".")))
        for path, value in _at(written, pattern.split(".")):
            assert isinstance(value, str), f"{board}: {path}: {value!r} is written as a bare number"
            assert check(value) == raw[path], (board, path, value)
            seen.add(pattern)
    assert {"memory.<NAME>.base", "devices.<NAME>.size", "firmware.model.address", "firmware.pools.<NAME>.address",
            "firmware.memory.<NAME>.size", "cpu.clock", "system_configs.<NAME>.core_clock"} <= seen, seen


def test_a_new_key_is_written_in_its_declared_unit():
    """The spelling comes from the key's checker, so a key declared with a unit needs nothing in `fvp config`."""
    section = S.Section({"where": S.Key(S.ADDRESS, ""), "how_big": S.Key(S.SIZE, ""), "how_fast": S.Key(S.FREQ, ""),
                         "windows": S.Key(S.list_of(S.ADDRESS), ""), "count": S.Key(S.U32, ""),
                         "burst": S.SYSTEM_CONFIG.keys["memories"].check.item.keys["burst_length"]})
    raw = {"count": 4096, "where": 0x7000_0000, "how_big": 3 << 20, "how_fast": 1_500_000_000, "windows": [0x100],
           "burst": 64, "flag": True}
    assert as_written(raw, section) == {"count": 4096, "where": "0x70000000", "how_big": "3MiB", "how_fast": "1500MHz",
                                        "windows": ["0x00000100"], "burst": 64, "flag": True}
    assert list(as_written(raw, section)) == list(raw)  # the board's order, not the declarations'
