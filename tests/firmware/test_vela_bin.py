"""The Vela delegate blob parser on the real blobs of the corpus, on blobs broken on purpose, and under fuzzing."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firmware.executorch.bundled import load_bundled
from firmware.executorch.error import Error, RuntimeFailure
from firmware.executorch.program import load_program
from firmware.executorch.vela_bin import next_mul_16, parse_vela_bin, validate_vela_bin

DATA = Path(__file__).resolve().parents[1] / "data"
CORPUS = DATA / "corpus"
ORACLE = DATA / "oracle"


def _blob(name: str, index: int = 0) -> tuple[bytes, int]:
    """(blob bytes, its offset in the file) of delegate ``index`` of a corpus program."""
    raw = (CORPUS / name).read_bytes()
    base = 0
    if name.endswith(".bpte"):
        bp = load_bundled(raw)
        prog, base = bp.load_program(), bp.program_offset
    else:
        prog = load_program(raw)
    off, size = prog.delegate_data(prog.execution_plans[0].delegates[index])
    return raw[base + off: base + off + size], base + off


ADD_Q, ADD_Q_OFF = _blob("add_q.pte")


def _block(name: bytes, payload: bytes, external: int = 0) -> bytes:
    return struct.pack("<16sIB11s", name, len(payload), external, bytes(11)) + payload + bytes(-len(payload) % 16)


def _blocks(blob: bytes):
    """[(name, header offset, payload)] by walking a well-formed blob."""
    out, pos = [], 0
    while pos < len(blob):
        name, size = struct.unpack_from("<16sI", blob, pos)
        out.append((name.rstrip(b"\0"), pos, blob[pos + 32: pos + 32 + size]))
        pos += 32 + next_mul_16(size)
    return out


def _rebuild(blob: bytes, replace: dict | None = None, drop=(), insert_before: tuple | None = None) -> bytes:
    parts = []
    for name, _, payload in _blocks(blob):
        if insert_before and name == insert_before[0]:
            parts.append(insert_before[1])
        if name in drop:
            continue
        parts.append(_block(name, (replace or {}).get(name, payload)))
    return b"".join(parts)


def _fails(blob, match, code=Error.InvalidProgram, **kw):
    with pytest.raises(RuntimeFailure) as ei:
        parse_vela_bin(blob, **kw)
    assert ei.value.code == code
    assert "\n" not in ei.value.message
    assert match in ei.value.message, ei.value.message
    return ei.value.message


# ---------------------------------------------------------------------------------------------------------
# Real blobs
# ---------------------------------------------------------------------------------------------------------

def test_add_q_blob_research_4_2():
    assert (ADD_Q_OFF, len(ADD_Q)) == (112, 1104)
    vb = parse_vela_bin(ADD_Q, blob_address=0x7000_0000 + ADD_Q_OFF)
    assert vb.cmd_data == (64, 696) and ADD_Q[64:68] == b"COP1"
    assert vb.weight_data == (800, 32)
    assert vb.scratch_size == 144
    assert [io.offset for io in vb.inputs] == [64, 80] and [io.offset for io in vb.outputs] == [64]
    assert all(io.shape == (1,) * 6 and io.elem_size == 1 and io.region == 1 for io in vb.inputs + vb.outputs)
    assert vb.io_record_size == 36
    assert [(b.name, b.offset, b.size) for b in vb.blocks] == [
        ("vela_bin_stream", 0, 0), ("cmd_data", 32, 696), ("weight_data", 768, 32), ("scratch_size", 832, 4),
        ("inputs", 880, 76), ("outputs", 992, 40), ("vela_end_stream", 1072, 0)]


def test_addint_blob():
    blob, off = _blob("addint_u55.pte")
    vb = parse_vela_bin(blob, blob_address=off)
    assert (off, len(blob)) == (112, 736)
    assert vb.cmd_data[1] == 372 and vb.weight_data[1] == 1 and vb.scratch_size == 64
    assert vb.inputs[0].shape == (1, 1, 1, 1, 1, 5) and vb.inputs[0].elem_size == 4 and vb.inputs[0].offset == 32
    assert vb.outputs[0].offset == 0 and vb.outputs[0].nbytes == 20


@pytest.mark.parametrize("name", sorted(p.name for p in ORACLE.iterdir()))
def test_corpus_blobs_match_oracle(name):
    meta = json.loads((ORACLE / name / "meta.json").read_text())
    for i, md in enumerate(meta["delegates"]):
        blob, off = _blob(f"{name}.bpte", i)
        vb = parse_vela_bin(blob, blob_address=off)
        assert len(blob) == md["blob_size"] and vb.size == md["blob_size"]
        assert vb.scratch_size == md["scratch_size"]
        assert vb.cmd_data[1] == md["cmd_data_size"]
        assert vb.weight_data[1] == md["weight_data_size"]
        assert vb.block_order == md["block_order"]
        for got, want in ((vb.inputs, md["vela_inputs"]), (vb.outputs, md["vela_outputs"])):
            assert [dict(shape=list(io.shape), elem_size=io.elem_size, offset=io.offset, region=io.region)
                    for io in got] == want


# ---------------------------------------------------------------------------------------------------------
# The runtime's validation messages
# ---------------------------------------------------------------------------------------------------------

def test_alignment_messages():
    assert _fails(ADD_Q, "", blob_address=0x1008) == "Vela bin ptr not aligned to 16 bytes: 0x1008"
    assert validate_vela_bin(ADD_Q, blob_address=0x1008) == ["Vela bin ptr not aligned to 16 bytes: 0x1008",
                                                             "End of vela bin not aligned to 16 bytes: 0x1438"]
    assert validate_vela_bin(ADD_Q) == [] and validate_vela_bin(ADD_Q, blob_address=0x30000070) == []
    _fails(ADD_Q + bytes(8), "End of vela bin not aligned to 16 bytes")


def test_header_and_footer_messages():
    bad = bytearray(ADD_Q)
    bad[0:4] = b"xela"
    assert _fails(bytes(bad), "") == "Incorrect header in vela_bin_stream"
    bad = bytearray(ADD_Q)
    bad[-32:-28] = b"xela"
    assert _fails(bytes(bad), "") == "Incorrect footer in vela_bin_stream"
    assert validate_vela_bin(b"") == ["Incorrect header in vela_bin_stream", "Incorrect footer in vela_bin_stream"]
    assert validate_vela_bin(bytes(8)) == ["End of vela bin not aligned to 16 bytes: 0xffffffe8",
                                           "Incorrect header in vela_bin_stream", "Incorrect footer in vela_bin_stream"]


def test_walk_messages():
    end = _block(b"vela_end_stream", b"")
    assert _fails(ADD_Q + end, "") == "Expected vela binary to end with vela_end_stream"
    bogus = _rebuild(ADD_Q, insert_before=(b"inputs", _block(b"bogus", b"1234")))
    assert _fails(bogus, "") == "Invalid block name or malformed binary"
    _fails(_rebuild(ADD_Q, replace={b"cmd_data": b"XOP1" + bytes(12)}), "does not start with COP1 or COP2")
    assert parse_vela_bin(_rebuild(ADD_Q, replace={b"cmd_data": b"COP2" + bytes(12)})).cmd_data[1] == 16
    _fails(_rebuild(ADD_Q, drop=[b"cmd_data"]), "vela_bin_stream has no cmd_data block")
    _fails(_rebuild(ADD_Q, drop=[b"outputs"]), "vela_bin_stream has no outputs block")
    _fails(_rebuild(ADD_Q, replace={b"scratch_size": b"\x01"}), "scratch_size block at offset 832 has 1 bytes")
    _fails(_rebuild(ADD_Q, replace={b"inputs": struct.pack("<i", 2) + bytes(40)}),
           "Vela inputs block of 44 bytes does not hold 2 VelaIO records (76 or 60 bytes expected)")
    _fails(_rebuild(ADD_Q, replace={b"inputs": struct.pack("<i", -1)}), "negative count -1")
    second = _rebuild(ADD_Q, insert_before=(b"cmd_data", _block(b"vela_bin_stream", b"")))
    _fails(second, "vela_bin_stream block at offset 32 is not the first block")
    # no weight_data: allowed (the runtime passes a null region 0)
    assert parse_vela_bin(_rebuild(ADD_Q, drop=[b"weight_data"])).weight_data is None
    # a payload claiming more bytes than the blob has
    big = bytearray(ADD_Q)
    struct.pack_into("<I", big, 32 + 16, 0x7FFFFFF0)
    _fails(bytes(big), "payload of 2147483632 bytes runs past the blob end")


def test_external_block_not_supported():
    blob = _rebuild(ADD_Q, replace={})
    parts = [(_block(n, p, external=1) if n == b"weight_data" else _block(n, p)) for n, _, p in _blocks(blob)]
    _fails(b"".join(parts), "external (NamedDataMap) reference", code=Error.NotSupported)


def test_old_28_byte_io_records():
    def io28(recs):
        return struct.pack("<i", len(recs)) + b"".join(struct.pack("<7i", *s, es, off, 1) for s, es, off in recs)

    blob = _rebuild(ADD_Q, replace={b"inputs": io28([((1, 4, 4, 8), 1, 0), ((5, 0, 0, 0), 1, 128)]),
                                    b"outputs": io28([((1, 2, 2, 8), 1, 256)])})
    vb = parse_vela_bin(blob)
    assert vb.io_record_size == 28
    assert vb.inputs[0].shape == (1, 1, 1, 4, 4, 8) and vb.inputs[0].raw_shape == (1, 4, 4, 8)
    assert vb.inputs[1].shape == (1, 1, 1, 1, 1, 5) and vb.inputs[1].nbytes == 5
    assert vb.outputs[0].offset == 256 and vb.outputs[0].numel == 32
    mixed = _rebuild(ADD_Q, replace={b"inputs": io28([((1, 1, 1, 1), 1, 0)])})
    _fails(mixed, "different VelaIO record sizes")


def test_zero_io_records_are_36_byte():
    vb = parse_vela_bin(_rebuild(ADD_Q, replace={b"inputs": struct.pack("<i", 0)}))
    assert vb.inputs == [] and vb.io_record_size == 36


# ---------------------------------------------------------------------------------------------------------
# Robustness: every outcome is a parse or a one-line RuntimeFailure
# ---------------------------------------------------------------------------------------------------------

def _parse_or_fail(blob: bytes):
    try:
        return parse_vela_bin(blob)
    except RuntimeFailure as exc:
        assert exc.message and "\n" not in exc.message
        assert exc.code in (Error.InvalidProgram, Error.NotSupported)
        return None


def test_every_truncation():
    results = [_parse_or_fail(ADD_Q[:n]) for n in range(len(ADD_Q))]
    assert all(r is None for r in results)  # a cut blob never passes: the footer must end it exactly


def test_every_header_word_corrupted():
    for name, pos, _ in _blocks(ADD_Q):
        for field_off in (16, 20):  # size, external flag
            for v in (0, 1, 15, 16, 17, 0x7FFFFFFF, 0xFFFFFFFF, 0xFFFFFFF1):
                bad = bytearray(ADD_Q)
                struct.pack_into("<I", bad, pos + field_off, v)
                _parse_or_fail(bytes(bad))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(ADD_Q) - 1), st.integers(0, 7)), min_size=1, max_size=12))
def test_random_bit_flips(flips):
    bad = bytearray(ADD_Q)
    for pos, bit in flips:
        bad[pos] ^= 1 << bit
    _parse_or_fail(bytes(bad))


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=0, max_size=400))
def test_random_garbage_with_valid_frame(payload):
    blob = _block(b"vela_bin_stream", b"") + payload + bytes(-len(payload) % 16) + _block(b"vela_end_stream", b"")
    _parse_or_fail(blob)
