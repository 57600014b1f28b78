"""MLW weight-bitstream decoder: round trips through Vela's encoder, malformed streams, numba vs reference."""

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ethosu import mlw_codec

from fvp.errors import NpuFault
from fvp.machine.npu.mlw import MlwError, decode_mlw, decode_mlw_reference

HYPO = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def encode(values) -> bytes:
    return bytes(mlw_codec.encode([int(v) for v in values]))


def vela_decode(stream: bytes) -> np.ndarray:
    # only ever called on streams Vela produced itself: its C decoder exit()s on malformed input
    return np.array(mlw_codec.decode(bytearray(stream)), dtype=np.int64)


def check_all_decoders(values, stream: bytes, trace=None):
    values = np.asarray(values, dtype=np.int64)
    fast = decode_mlw(stream)
    ref = decode_mlw_reference(stream, trace=trace)
    assert fast.dtype == np.int16 and ref.dtype == np.int16
    np.testing.assert_array_equal(fast, values)
    np.testing.assert_array_equal(ref, values)
    np.testing.assert_array_equal(vela_decode(stream), values)


def make_weights(kind: str, n: int, rng) -> np.ndarray:
    if kind == "uniform9":                      # zero-point corrected, full 9-bit range
        return rng.integers(-255, 256, n)
    if kind == "int8":
        return rng.integers(-128, 128, n)
    if kind == "laplace":                       # trained-weight-like, peaky around 0
        return np.clip(np.round(rng.laplace(0, 6, n)), -127, 127).astype(np.int64)
    if kind == "laplace3":                      # small GRC divisors with a large palette
        return np.clip(np.round(rng.laplace(0, 3, n)), -255, 255).astype(np.int64)
    if kind == "sparse80":                      # short zero runs
        w = rng.integers(-128, 128, n)
        w[rng.random(n) < 0.8] = 0
        return w
    if kind == "sparse":                        # many zeros -> zero runs
        w = rng.integers(-128, 128, n)
        w[rng.random(n) < 0.9] = 0
        return w
    if kind == "very_sparse":                   # long zero runs (large ZDIV)
        w = np.zeros(n, np.int64)
        idx = rng.integers(0, n, max(1, n // 200))
        w[idx] = rng.integers(-255, 256, idx.size)
        return w
    if kind == "few_values":                    # small palette
        return rng.choice(np.array([-7, -3, 0, 5, 11, 90]), n)
    if kind == "two_values":
        return rng.choice(np.array([-1, 1]), n)
    if kind == "palette32":                     # palette of up to 32 values, some far from zero
        return rng.choice(rng.integers(-255, 256, 32), n)
    if kind == "few_zeros":
        w = rng.integers(1, 200, n) * rng.choice(np.array([-1, 1]), n)
        w[rng.random(n) < 0.02] = 0
        return w
    if kind == "zeros":
        return np.zeros(n, np.int64)
    if kind == "small_ints":                    # GRC with small divisors / truncated mode
        return rng.integers(-2, 3, n)
    raise AssertionError(kind)


KINDS = ["uniform9", "int8", "laplace", "laplace3", "sparse80", "sparse", "very_sparse", "few_values", "two_values",
         "palette32", "few_zeros", "zeros", "small_ints"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 2, 7, 13, 100, 1000, 3000])
def test_round_trip_against_vela(kind, n):
    rng = np.random.default_rng(hash((kind, n)) & 0xFFFF)
    w = make_weights(kind, n, rng)
    check_all_decoders(w, encode(w))


def test_round_trip_covers_every_coding_mode():
    """Collect slice headers over a mix of streams: every mode the encoder uses must be exercised."""
    rng = np.random.default_rng(7)
    seen = set()
    slices_per_stream = []
    streams = [make_weights(k, n, rng) for k in KINDS for n in (50, 600, 4000)]
    # sections with different statistics force palette restarts (several NEWPAL slices in one stream)
    streams.append(np.concatenate([make_weights(k, 1500, rng) for k in ("few_values", "uniform9", "sparse",
                                                                           "palette32", "two_values")]))
    # more than 32768 non-zero weights: the 15-bit SLICELEN forces a split
    streams.append(rng.choice(np.array([-1, 1, 2]), 40000))
    for w in streams:
        trace = []
        check_all_decoders(w, encode(w), trace)
        slices_per_stream.append(len(trace))
        for s in trace:
            seen.add(("zdiv", s["zdiv"]))
            seen.add(("wdiv", s["wdiv"]))
            seen.add(("wtrunc", s["wtrunc"]))
            seen.add(("newpal", s["newpal"]))
            seen.add(("palette", s["palsize"] > 0))
            if s["wdiv"] == 7:
                seen.add(("uncompressed", "palette" if s["palsize"] else "direct"))
            if s["slicelen"] == 32766:
                seen.add(("max_slice", True))
    expected = ({("zdiv", z) for z in (0, 1, 2, 3, 6)} | {("wdiv", d) for d in range(6)} | {("wdiv", 7)}
                | {("wtrunc", 0), ("wtrunc", 1), ("newpal", 0), ("newpal", 1), ("palette", True),
                   ("palette", False), ("uncompressed", "direct"), ("uncompressed", "palette"),
                   ("max_slice", True)})
    assert expected <= seen, sorted(expected - seen, key=str)
    assert max(slices_per_stream) >= 3


def test_empty_and_padding_only_streams():
    assert decode_mlw(b"").shape == (0,)
    assert decode_mlw_reference(b"").shape == (0,)
    for pad in (b"\xff", b"\xff" * 16, b"\x07", b"\x07\xff"):   # end-of-stream markers only
        assert decode_mlw(pad).shape == (0,)
        assert decode_mlw_reference(pad).shape == (0,)
    assert decode_mlw(np.zeros(0, np.uint8)).shape == (0,)


def test_single_value_streams():
    for v in (0, 1, -1, 255, -255, 128, -128):
        s = encode([v])
        assert len(s) == 16
        check_all_decoders([v], s)


def test_vela_empty_encoding_is_malformed():
    # Vela writes SLICELEN = -1 (32768 weights) for an empty input; its own decoder underruns on it.
    s = encode([])
    with pytest.raises(MlwError, match="truncated"):
        decode_mlw(s)
    with pytest.raises(MlwError, match="truncated"):
        decode_mlw_reference(s)


def test_input_types():
    w = np.arange(-20, 20)
    s = encode(w)
    for data in (s, bytearray(s), memoryview(s), np.frombuffer(s, np.uint8), np.frombuffer(s, np.uint8)[None, :]):
        np.testing.assert_array_equal(decode_mlw(data), w)
        np.testing.assert_array_equal(decode_mlw_reference(data), w)
    with pytest.raises(TypeError):
        decode_mlw(np.zeros(4, np.int32))
    with pytest.raises(TypeError):
        decode_mlw("abc")


def test_concatenated_streams_and_max_values():
    rng = np.random.default_rng(3)
    parts = [make_weights(k, n, rng) for k, n in (("sparse", 700), ("uniform9", 300), ("few_values", 50))]
    streams = [encode(p) for p in parts]
    joined = b"".join(streams)
    everything = np.concatenate(parts)
    check_all_decoders(everything, joined)
    # max_values stops at the first slice boundary at or after the count (the hardware fetches no further)
    first = decode_mlw(joined, max_values=len(parts[0]))
    np.testing.assert_array_equal(first, parts[0])
    np.testing.assert_array_equal(decode_mlw_reference(joined, max_values=len(parts[0])), parts[0])
    head = decode_mlw(joined, max_values=1)
    assert 1 <= len(head) <= len(parts[0])
    np.testing.assert_array_equal(head, parts[0][: len(head)])
    assert decode_mlw(joined, max_values=0).shape == (0,)
    # trailing garbage beyond what is needed is never read with max_values
    garbage = streams[0] + b"\x00\x00\x00"
    with pytest.raises(MlwError):
        decode_mlw(garbage)
    np.testing.assert_array_equal(decode_mlw(garbage, max_values=len(parts[0])), parts[0])


def assert_clean_error(exc: MlwError, nbits: int):
    assert isinstance(exc, NpuFault) and exc.kind == "cmd_parse_error"
    msg = str(exc)
    assert msg and "\n" not in msg and msg.startswith("MLW weight stream")
    assert f"bit {exc.bit}" in msg
    assert 0 <= exc.bit <= nbits


def both(data, max_values=None):
    """Run both decoders; they must agree on the values or on the exact error."""
    try:
        fast = decode_mlw(data, max_values=max_values)
    except MlwError as e:
        assert_clean_error(e, len(data) * 8)
        with pytest.raises(MlwError) as ref_exc:
            decode_mlw_reference(data, max_values=max_values)
        assert str(ref_exc.value) == str(e) and ref_exc.value.bit == e.bit
        return e
    ref = decode_mlw_reference(data, max_values=max_values)
    np.testing.assert_array_equal(fast, ref)
    return fast


@pytest.mark.parametrize("kind", ["uniform9", "sparse", "few_values", "very_sparse", "small_ints"])
def test_truncated_streams_raise(kind):
    rng = np.random.default_rng(11)
    w = make_weights(kind, 400, rng)
    s = encode(w)
    errors = 0
    for cut in range(1, len(s)):
        r = both(s[:cut])
        if isinstance(r, MlwError):
            errors += 1
        else:                       # only a cut inside the 0xFF padding after the end-of-stream marker decodes
            np.testing.assert_array_equal(r, w)
            assert s[cut:] == b"\xff" * (len(s) - cut)
    assert errors > 0


class BitWriter:
    """Builds hand-made streams: fields LSB first."""

    def __init__(self):
        self.bits = []

    def put(self, value, n):
        self.bits += [(value >> i) & 1 for i in range(n)]
        return self

    def eos(self):
        self.put(7, 3)
        while len(self.bits) % 8:
            self.bits.append(1)
        return self

    def bytes(self):
        bits = self.bits + [0] * (-len(self.bits) % 8)
        return bytes(sum(b << i for i, b in enumerate(bits[k:k + 8])) for k in range(0, len(bits), 8))


def header(w, zdiv=6, slicelen=0, wdiv=0, wtrunc=0, newpal=1, dirofs=0, palsize=0, palbits=0, palette=()):
    w.put(zdiv, 3).put(slicelen, 15).put(wdiv, 3).put(wtrunc, 1).put(newpal, 1)
    if newpal:
        w.put(dirofs, 5).put(palsize, 5).put(palbits, 3)
        for p in palette:
            w.put(p, palbits + 2)
    return w


def test_hand_made_valid_stream():
    # one weight, uncompressed direct mode with 9-bit indices: 8 symbols per chunk, value 2*100+1 = -100
    # one weight, uncompressed direct mode with 9-bit indices: value 2*100+1 = -100; only the remainders of
    # real weights are coded (the chunk's 7 padding symbols have none)
    s = header(BitWriter(), wdiv=7, palbits=7).put(201, 9).eos().bytes()
    assert len(s) == 6
    np.testing.assert_array_equal(both(s), [-100])


@pytest.mark.parametrize("name,stream,pattern", [
    ("reserved ZDIV", header(BitWriter(), zdiv=4).put(0, 24).eos().bytes(), "reserved ZDIV value 4 .* bit 0$"),
    ("reserved WDIV", header(BitWriter(), wdiv=6).put(0, 24).eos().bytes(), "reserved WDIV value 6 .* bit 18$"),
    ("no palette first", header(BitWriter(), newpal=0).put(0, 24).eos().bytes(), "NEWPAL=0"),
    ("no palette after EOS", header(BitWriter(), wdiv=7, palbits=7).put(0, 9).eos()
     .put(6, 3).put(0, 15).put(7, 3).put(0, 1).put(0, 1).put(0, 9).eos().bytes(), r"NEWPAL=0 \(slice at bit 48\)"),
    ("zero-run switch", header(BitWriter(), wdiv=7, palbits=7).put(0, 9)
     .put(0, 3).put(0, 15).put(7, 3).put(0, 1).put(0, 1).put(0, 9).eos().bytes(),
     "slice at bit 45 switches zero-run mode"),
    # GRC div 5: twelve code-2 slots then a code 0 -> quotient 24, index 24 << 5 = 768 > 511
    ("index beyond 9 bits", header(BitWriter(), wdiv=5).put(0xFFF, 12).put(0xFFF, 12).put(0, 12).put(0, 0)
     .put(0, 5 * 12).eos().bytes(), "weight index 768 does not fit 9 bits"),
    # uncompressed 9-bit index 500 with DIROFS 31 -> value 531
    ("value beyond 9 bits", header(BitWriter(), wdiv=7, dirofs=31, palbits=7).put(500, 9).put(0, 63).eos().bytes(),
     "direct weight value 531 does not fit 9 bits"),
    ("truncated header", BitWriter().put(6, 3).put(0, 5).bytes(), "field SLICELEN at bit 3"),
    ("truncated palette", header(BitWriter(), wdiv=7, palsize=3, palbits=7, palette=(1, 2)).bytes(),
     "field PALETTE"),
    # 45 bits of slice, then the 3 padding bits of the last byte read as a ZDIV of 0 and SLICELEN is missing
    ("missing end-of-stream", header(BitWriter(), wdiv=7, palbits=7).put(0, 9).bytes(), "field SLICELEN at bit 48"),
    ("missing end-of-stream, byte aligned", header(BitWriter(), slicelen=1, wdiv=7, palbits=4).put(0, 12).bytes(),
     "field ZDIV at bit 48"),
])
def test_malformed_hand_made(name, stream, pattern):
    e = both(stream)
    assert isinstance(e, MlwError), name
    assert e.args[0] == str(e)
    assert re.search(pattern, str(e)), (name, str(e))


@settings(HYPO, max_examples=300)
@given(st.binary(min_size=0, max_size=64))
def test_random_bytes_never_crash(data):
    both(data)


@HYPO
@given(st.sampled_from([0, 1, 2, 3, 6]), st.integers(0, 60), st.sampled_from([0, 1, 2, 3, 4, 5, 7]),
       st.integers(0, 1), st.integers(0, 31), st.integers(0, 31), st.integers(0, 7), st.randoms(use_true_random=False),
       st.binary(min_size=0, max_size=80))
def test_valid_header_random_body(zdiv, slicelen, wdiv, wtrunc, dirofs, palsize, palbits, rnd, body):
    """A well-formed first slice header with a random palette and a random body: reaches deep into the chunk
    decoding (index and value range checks, truncation in every field)."""
    w = header(BitWriter(), zdiv=zdiv, slicelen=slicelen, wdiv=wdiv, wtrunc=wtrunc, dirofs=dirofs, palsize=palsize,
               palbits=palbits,
               palette=[rnd.randrange(1 << (palbits + 2)) for _ in range(palsize + 1 if palsize else 0)])
    for byte in body:
        w.put(byte, 8)
    both(w.eos().bytes())


@HYPO
@given(st.data())
def test_bit_flipped_streams(data):
    """Valid streams with a few flipped bits: same values or the same MlwError from both decoders."""
    n = data.draw(st.integers(1, 300))
    kind = data.draw(st.sampled_from(KINDS))
    w = make_weights(kind, n, np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))))
    s = bytearray(encode(w))
    for _ in range(data.draw(st.integers(1, 4))):
        bit = data.draw(st.integers(0, len(s) * 8 - 1))
        s[bit >> 3] ^= 1 << (bit & 7)
    both(bytes(s))


weight_lists = st.one_of(
    st.lists(st.integers(-255, 255), min_size=1, max_size=400),
    st.lists(st.one_of(st.just(0), st.just(0), st.just(0), st.integers(-255, 255)), min_size=1, max_size=800),
    st.lists(st.sampled_from([0, 1, -1, 3, -100, 255]), min_size=1, max_size=800),
    st.lists(st.integers(-3, 3), min_size=1, max_size=800),
    st.lists(st.tuples(st.integers(0, 300), st.integers(-255, 255)), min_size=1, max_size=40).map(
        lambda runs: [v for z, x in runs for v in [0] * z + [x]]),
)


@HYPO
@given(weight_lists)
def test_numba_matches_reference_on_generated_encodings(values):
    s = encode(values)
    fast = decode_mlw(s)
    ref = decode_mlw_reference(s)
    np.testing.assert_array_equal(fast, ref)
    np.testing.assert_array_equal(fast, values)


def test_decode_runs_compiled():
    """Guard against the decoder falling out of numba's nopython mode (a Python loop per bit): 300,000 weights
    decode in a handful of Python lines (the wrapper), counted, not timed."""
    from testutil import python_lines

    rng = np.random.default_rng(5)
    w = np.clip(np.round(rng.laplace(0, 12, 300_000)), -127, 127)
    s = encode(w)
    decode_mlw(s)  # the kernel compiled (or loaded from numba's cache) first
    out, lines = python_lines(decode_mlw, s)
    np.testing.assert_array_equal(out, w)
    assert lines < 1000, lines
