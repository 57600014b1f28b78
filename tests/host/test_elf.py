"""``fvp elf MODEL -o runner.elf``: a runner-shaped ELF (stdlib writer) that the FVP drop-in's ``-a`` runs."""

import importlib.util
import struct

import pytest

from testutil import CORPUS, run_fvp

needs_elf = pytest.mark.skipif(importlib.util.find_spec("elftools") is None,
                               reason="pyelftools is not installed (pip install '.[elf]')")
UART = ["-C", "mps3_board.uart0.out_file=-"]


def _sections(data: bytes) -> dict:
    """name -> (type, addr, offset, size), read with struct from the ELF32 section headers."""
    shoff, = struct.unpack_from("<I", data, 32)
    shnum, shstrndx = struct.unpack_from("<HH", data, 48)
    hdrs = [struct.unpack_from("<IIIIIIIIII", data, shoff + 40 * i) for i in range(shnum)]
    strtab_off = hdrs[shstrndx][4]
    out = {}
    for h in hdrs[1:]:
        name = data[strtab_off + h[0]:data.index(b"\0", strtab_off + h[0])].decode()
        out[name] = (h[1], h[3], h[4], h[5])
    return out


def test_elf_layout(tmp_path):
    program = (CORPUS / "add_u55-128.bpte").read_bytes()
    out = tmp_path / "runner.elf"
    rc, stdout, err = run_fvp("elf", CORPUS / "add_u55-128.bpte", "-o", out)
    assert rc == 0, err
    assert "run it with: FVP_Corstone_SSE-300_Ethos-U55 -C ethosu.num_macs=128 -a " in err
    data = out.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 1 and struct.unpack_from("<H", data, 18)[0] == 40  # ELF32, ARM
    secs = _sections(data)
    typ, addr, off, size = secs["network_model_sec"]
    assert (typ, addr, size) == (1, 0x7000_0000, len(program)) and data[off:off + size] == program
    assert secs[".bss.method_allocator_sec"][0] == 8 and secs[".bss.method_allocator_sec"][3] == 60 << 20
    assert secs[".bss.tensor_arena"][1:4:2] == (0x3100_0000, 2 << 20)  # the temp pool in SRAM, as Shared_Sram


@needs_elf
def test_reader_reads_what_the_writer_wrote(tmp_path):
    from fvp.host.dropin.elf_image import read_elf

    program = (CORPUS / "mobilenet_v1_025_u65-256.bpte").read_bytes()
    out = tmp_path / "u65.elf"
    rc, _, err = run_fvp("elf", CORPUS / "mobilenet_v1_025_u65-256.bpte", "-o", out)
    assert rc == 0, err
    img = read_elf(str(out))
    assert img.program == program and img.program_address == 0x7000_0000 and img.machine == "EM_ARM"
    assert set(img.pools) == {"method", "temp", "fast_scratch"}  # Dedicated_Sram: the fast scratch in SRAM
    assert img.pools["fast_scratch"] == (0x3100_0000, 384 << 10)


@needs_elf
@pytest.mark.parametrize("name, macs", [("add_u55-128.bpte", 128), ("mobilenet_v1_025_u65-256.bpte", 256)])
def test_round_trip_through_the_dropin(tmp_path, name, macs):
    out = tmp_path / "runner.elf"
    rc, _, err = run_fvp("elf", CORPUS / name, "-o", out)
    assert rc == 0, err
    flavour = ["--flavour=u65"] if "u65" in name else []  # python -m fvp.host.dropin as the U65 binary
    rc, log, err = run_fvp(*flavour, "-C", f"ethosu.num_macs={macs}", *UART, "-a", out, prog="fvp.host.dropin")
    assert rc == 0, err + log
    assert f"Info: application: runner.elf:network_model_sec ({(CORPUS / name).stat().st_size} bytes)" in log
    assert "pools from the ELF:" in log
    assert "TEST: BundleIO index[0] Test_result: PASS" in log
    assert "Info: /OSCI/SystemC: Simulation stopped by user." in log


def test_bad_inputs_are_one_line_exit_2(tmp_path):
    notes = tmp_path / "notes.pte"
    notes.write_text("not a program\n")
    for args in (["elf", notes, "-o", tmp_path / "x.elf"],
                 ["elf", CORPUS / "add_u55-128.bpte", "-o", tmp_path / "missing" / "x.elf"],
                 ["elf", tmp_path / "absent.pte", "-o", tmp_path / "x.elf"]):
        rc, out, err = run_fvp(*args)
        assert rc == 2 and out == "" and len(err.splitlines()) == 1 and err.startswith("fvp: error: "), err
    assert not (tmp_path / "x.elf").exists()
