"""An application ELF as the full-system engine loads it: the bytes and where they go, the replaced and
breakpointed sites, the check against QEMU's mps3-an547 and the board's memory maps, refusals. No QEMU needed."""

import os
import struct
import sys

import pytest

from fvp.boards import load_board
from fvp.errors import ConfigError
from fvp.machine.qemu import an547
from fvp.machine.qemu.image import check, read_image
from testutil import DATA

U55 = DATA / "runner_elf" / "u55-128_add_bundled.elf"
SEMIHOSTING = DATA / "runner_elf" / "u65-256_semihosting.elf"
OWN = DATA / "fullsystem" / "fullsystem_test.elf"


def _chunk_at(img, address):
    return next((a, bytes(d), what) for a, d, what in img.chunks if a <= address < a + len(d))


def test_sections_in_no_segment_go_to_their_copy_table_source():
    # ExecuTorch's Corstone-300.ld at cff6f4dd: .data, .sram.data and .rodata have no program header; the
    # start-up's copy table copies them from these addresses (research notes: full-system.md section 3)
    img = read_image(str(U55))
    placed = {what.split()[1]: a for a, _, what in img.chunks if "in no segment" in what}
    assert placed == {".data": 0x1001B0A0, ".sram.data": 0x700010A0, ".rodata": 0x700037A0}
    assert img.has_code and img.entry & ~1 == 0x10000934


def test_semihosting_traps_are_replaced_by_watched_literal_loads():
    img = read_image(str(SEMIHOSTING))
    traps = {a: s for a, s in img.sites.items() if s.kind == "semihosting"}
    assert traps
    for addr, site in traps.items():
        assert site.original == b"\xab\xbe" and site.word == (addr + 4) & ~3  # BKPT 0xAB; LDR r0, [PC, #0]
        base, data, _ = _chunk_at(img, addr)
        assert data[addr - base:addr - base + 2] == b"\x00\x48"
    # sleeps and endless loops stay as they are (breakpoints)
    others = [s for s in img.sites.values() if s.kind != "semihosting"]
    assert others and all(s.word is None for s in others)


def test_the_drivers_wait_and_the_exit_loop_are_sites():
    kinds = {s.kind for s in read_image(str(U55)).sites.values()}
    assert {"wfe", "wfi"} <= kinds  # the Ethos-U driver's semaphore (WFE), the stand-in's _exit (WFI)
    own = read_image(str(OWN))
    assert {s.kind for s in own.sites.values()} >= {"semihosting", "wfi", "loop"}


def test_an_elf_that_fits_both_maps_has_no_problem():
    for elf in (U55, SEMIHOSTING, OWN):
        assert check(read_image(str(elf)), load_board("corstone-300-ethos-u55-128").memory) == []


def test_what_does_not_fit_is_one_line_naming_both_maps():
    img = read_image(str(U55))
    small = load_board("corstone-300-ethos-u55-128", ["memory.DTCM.size=32KiB", "firmware.memory.DTCM.size=32KiB"]).memory
    problems = check(img, small)
    assert problems and all(p.count("\n") == 0 for p in problems)
    assert any("section .bss" in p and "in QEMU's mps3-an547 memory but not in the board's" in p for p in problems)
    img.sections.append((".periph", 0x4800_0000, 0x100))
    assert any(".periph" in p and "neither in QEMU's mps3-an547 memory" in p and an547.describe() in p
               for p in check(img, load_board("corstone-300-ethos-u55-128").memory))


def test_an_elf_without_code_is_told_apart(tmp_path):
    from fvp.host.dropin.elf_writer import runner_elf

    path = tmp_path / "no_code.elf"
    path.write_bytes(runner_elf((DATA / "corpus" / "add_u55-128.bpte").read_bytes(), 0x7000_0000, {}))
    img = read_image(str(path))
    assert not img.has_code and not img.sites


def test_files_that_are_not_applications_are_refused_in_one_line(tmp_path):
    (tmp_path / "text.elf").write_text("hello")
    (tmp_path / "short.elf").write_bytes(b"\x7fELF\x01\x01\x01" + bytes(13))
    header = bytearray((DATA / "fullsystem" / "fullsystem_test.elf").read_bytes()[:52])
    struct.pack_into("<I", header, 32, 1 << 30)  # e_shoff far past the end of the file
    (tmp_path / "cut.elf").write_bytes(bytes(header))
    cases = {"text.elf": "not an ELF file", "short.elf": "not a 32-bit little-endian Arm ELF",
             "cut.elf": "malformed ELF file", "missing.elf": "application file not found"}
    for name, message in cases.items():
        with pytest.raises(ConfigError, match=message) as e:
            read_image(str(tmp_path / name))
        assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="Cortex-M55 cannot run it"):  # this Python: an ELF for another machine
        read_image(sys.executable)
    with pytest.raises(ConfigError, match="is a directory"):
        read_image(str(tmp_path))
    (tmp_path / "empty.elf").write_bytes(b"")
    with pytest.raises(ConfigError, match="not an ELF file"):
        read_image(str(tmp_path / "empty.elf"))
    if os.path.exists("/dev/zero"):  # a device is never read (it would not end)
        with pytest.raises(ConfigError, match="not a regular file"):
            read_image("/dev/zero")
