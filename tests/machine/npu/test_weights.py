"""Weight ordering and scale entries against Vela's public encoders; the decoded-weight cache."""

import numpy as np
import pytest

from ethosu.vela.api import NpuAccelerator, NpuBlockTraversal, npu_encode_bias, npu_encode_weights

import fvp.machine.npu.u55.weights as weights_mod
from fvp.machine.npu.mlw import MlwError, decode_mlw
from fvp.machine.npu.u55.weights import cached_weights, decode_scales, unpack_weights, weight_stream_length
from fvp.machine.npu.weight_cache import WeightCache

# accelerator -> OFM micro-block depth (research section 4; IFM micro-block depth is 8 everywhere)
ACCELERATORS = {
    NpuAccelerator.Ethos_U55_32: 4,
    NpuAccelerator.Ethos_U55_64: 8,
    NpuAccelerator.Ethos_U55_128: 8,
    NpuAccelerator.Ethos_U55_256: 8,
    NpuAccelerator.Ethos_U65_256: 8,
}


def random_weights(rng, shape, zeros=0.3):
    w = rng.integers(-255, 256, shape).astype(np.int16)
    w[rng.random(shape) < zeros] = 0
    return w


def encode_and_unpack(acc, w, *, dilation=(1, 1), ifm_bits=8, obd=16, depthwise=False, part_kernel=False):
    """Encode OHWI ``w`` with Vela, decode and unpack it with ours; returns (W, decoded, params)."""
    traversal = NpuBlockTraversal.PART_KERNEL_FIRST if part_kernel else NpuBlockTraversal.DEPTH_FIRST
    stream = npu_encode_weights(acc, w, dilation, ifm_bits, obd, depthwise, traversal)   # dilation is (x, y)
    params = dict(ofm_depth=w.shape[0], ifm_depth=w.shape[3], kernel_h=w.shape[1], kernel_w=w.shape[2],
                  dilation_y=dilation[1], dilation_x=dilation[0], ofm_block_depth=obd, depthwise=depthwise,
                  part_kernel_first=part_kernel, ifm_bits=ifm_bits, ofm_ublock_depth=ACCELERATORS[acc])
    decoded = decode_mlw(bytes(stream))
    return unpack_weights(decoded, **params), decoded, params


def random_case(rng):
    depthwise = rng.random() < 0.3
    kh = int(rng.choice([1, 2, 3, 5, 7, 9, 11]))
    kw = kh if rng.random() < 0.7 else int(rng.choice([1, 3, 4, 9]))
    ofm = int(rng.integers(1, 71))
    ifm = 1 if depthwise else int(rng.integers(1, 71))
    return dict(shape=(ofm, kh, kw, ifm), depthwise=depthwise,
                part_kernel=(not depthwise) and bool(rng.integers(2)),
                dilation=(int(rng.integers(1, 3)), int(rng.integers(1, 3))),
                ifm_bits=int(rng.choice([8, 16])), obd=int(rng.choice([8, 16, 32, 64])))


@pytest.mark.parametrize("acc", list(ACCELERATORS), ids=lambda a: a.name)
@pytest.mark.parametrize("seed", range(6))
def test_ordering_matches_vela_random(acc, seed):
    rng = np.random.default_rng(1000 * seed + acc.value)
    for _ in range(12):
        case = random_case(rng)
        w = random_weights(rng, case.pop("shape"))
        got, decoded, params = encode_and_unpack(acc, w, **case)
        assert got.dtype == np.int32 and got.shape == w.shape
        np.testing.assert_array_equal(got, w, err_msg=str(params))
        assert len(decoded) == weight_stream_length(**params), params


CASES = [
    # (shape OHWI, depthwise, part_kernel, dilation (x, y), ifm_bits, obd)
    ((32, 1, 1, 16), False, False, (1, 1), 8, 16),      # depth-first 1x1: IFM padded to 32
    ((16, 3, 3, 3), False, True, (1, 1), 8, 16),        # part-kernel first, 3 input channels
    ((40, 3, 3, 1), True, False, (1, 1), 8, 32),        # depthwise 3x3
    ((24, 3, 3, 20), False, False, (2, 2), 8, 16),      # dilation 2
    ((20, 9, 9, 12), False, False, (1, 1), 8, 16),      # 9x9 > 8: four sub-kernels
    ((20, 9, 9, 12), False, True, (1, 1), 16, 8),       # sub-kernels, part-kernel, 16-bit
    ((10, 9, 7, 5), False, True, (2, 1), 8, 64),        # dilation x only: sub-kernel 8 high, 4 wide
    ((70, 5, 5, 1), True, False, (2, 2), 16, 64),       # depthwise, dilation, 16-bit
    ((17, 1, 1, 70), False, False, (1, 1), 16, 32),     # 16-bit depth-first: IFM block 16
    ((1000, 1, 1, 64), False, False, (1, 1), 8, 64),    # fully connected sized
    ((1, 1, 1, 1), False, False, (1, 1), 8, 8),
    ((1, 1, 1, 1), True, False, (1, 1), 8, 8),
]


@pytest.mark.parametrize("acc", [NpuAccelerator.Ethos_U55_32, NpuAccelerator.Ethos_U55_128,
                                 NpuAccelerator.Ethos_U55_256], ids=lambda a: a.name)
@pytest.mark.parametrize("shape,depthwise,part_kernel,dilation,ifm_bits,obd", CASES)
def test_ordering_matches_vela_cases(acc, shape, depthwise, part_kernel, dilation, ifm_bits, obd):
    w = random_weights(np.random.default_rng(hash(shape) & 0xFFFF), shape)
    got, decoded, params = encode_and_unpack(acc, w, dilation=dilation, ifm_bits=ifm_bits, obd=obd,
                                             depthwise=depthwise, part_kernel=part_kernel)
    np.testing.assert_array_equal(got, w)
    assert len(decoded) == weight_stream_length(**params)


def test_padded_length_examples():
    # research 3.3: a depth-first 1x1 convolution 16 -> 32 channels decodes to 1024 values
    assert weight_stream_length(ofm_depth=32, ifm_depth=16, kernel_h=1, kernel_w=1, ofm_block_depth=16,
                                depthwise=False, part_kernel_first=False) == 1024
    # depthwise 3x3, 8 channels: 9 elements padded to 12, one value per channel
    assert weight_stream_length(ofm_depth=8, ifm_depth=8, kernel_h=3, kernel_w=3, ofm_block_depth=8,
                                depthwise=True, part_kernel_first=False) == 96


@pytest.mark.parametrize("depthwise", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_dual_core_u65_512(depthwise, seed):
    """U65-512: Vela splits the channels between the cores (o = core, core + 2, ...), each with its own stream
    and OFM block depth ceil/floor(obd / 2)."""
    rng = np.random.default_rng(seed)
    for _ in range(6):
        ofm = int(rng.integers(1, 71))
        ifm = 1 if depthwise else int(rng.integers(1, 40))
        k = int(rng.choice([1, 3, 5, 9]))
        obd = int(rng.choice([8, 16, 32, 64]))
        w = random_weights(rng, (ofm, k, k, ifm))
        for core in range(2):
            mine = w[core::2]
            params = dict(ofm_depth=ofm, ifm_depth=ifm, kernel_h=k, kernel_w=k, ofm_block_depth=obd,
                          depthwise=depthwise, part_kernel_first=False, cores=2, core=core)
            if mine.shape[0] == 0:              # Vela emits no stream for an idle core
                assert unpack_weights(np.zeros(0, np.int16), **params).shape == (0, k, k, ifm)
                continue
            stream = npu_encode_weights(NpuAccelerator.Ethos_U65_512, mine, (1, 1), 8, (obd + 1 - core) // 2,
                                        depthwise, NpuBlockTraversal.DEPTH_FIRST)
            got = unpack_weights(decode_mlw(bytes(stream)), **params)
            np.testing.assert_array_equal(got, mine)


def test_short_stream_raises():
    rng = np.random.default_rng(1)
    w = random_weights(rng, (20, 3, 3, 10))
    got, decoded, params = encode_and_unpack(NpuAccelerator.Ethos_U55_128, w)
    np.testing.assert_array_equal(unpack_weights(np.concatenate([decoded, decoded[:7]]), **params), w)  # extra ok
    with pytest.raises(MlwError, match="too short") as e:
        unpack_weights(decoded[:-1], **params)
    assert e.value.kind == "cmd_parse_error" and "\n" not in str(e.value)
    with pytest.raises(MlwError):
        unpack_weights(np.zeros(0, np.int16), **params)


def test_bad_parameters():
    base = dict(ofm_depth=8, ifm_depth=8, kernel_h=3, kernel_w=3, ofm_block_depth=8, depthwise=False,
                part_kernel_first=False)
    for bad in (dict(dilation_y=3), dict(ofm_depth=0), dict(kernel_w=-1), dict(ifm_bits=12), dict(core=1)):
        with pytest.raises(ValueError):
            unpack_weights(np.zeros(10000, np.int16), **{**base, **bad})


def test_unpack_accepts_int32_and_int64_streams():
    rng = np.random.default_rng(2)
    w = random_weights(rng, (9, 2, 2, 5))
    got, decoded, params = encode_and_unpack(NpuAccelerator.Ethos_U55_64, w)
    for dtype in (np.int32, np.int64):
        np.testing.assert_array_equal(unpack_weights(decoded.astype(dtype), **params), w)


# ---------------------------------------------------------------------------------------------------------------
# scales

def test_decode_scales_matches_vela():
    rng = np.random.default_rng(4)
    n = 300
    bias = rng.integers(-(1 << 39), 1 << 39, n, dtype=np.int64)
    scale = rng.integers(0, 1 << 32, n, dtype=np.int64)
    shift = rng.integers(0, 64, n)
    # edges of every field
    bias[:6] = [-(1 << 39), (1 << 39) - 1, 0, -1, 1, -(1 << 31)]
    scale[:6] = [0, (1 << 32) - 1, 1 << 31, 1, (1 << 31) - 1, 12345]
    shift[:6] = [0, 63, 31, 32, 1, 62]
    data = b"".join(bytes(npu_encode_bias(np.int64(b), int(s), int(t))) for b, s, t in zip(bias, scale, shift))
    assert len(data) == 10 * n
    got_bias, got_scale, got_shift = decode_scales(data + b"\0" * 6, n)   # 16-byte padding is ignored
    assert got_bias.dtype == np.int64 and got_scale.dtype == np.int64 and got_shift.dtype == np.int32
    np.testing.assert_array_equal(got_bias, bias)
    np.testing.assert_array_equal(got_scale, scale)
    np.testing.assert_array_equal(got_shift, shift)
    # other buffer types; the reserved top bits of the shift byte are ignored
    raw = bytearray(data)
    raw[9] |= 0xC0
    for buf in (raw, memoryview(raw), np.frombuffer(bytes(raw), np.uint8)):
        b, s, t = decode_scales(buf, n)
        np.testing.assert_array_equal(t, shift)
        np.testing.assert_array_equal(b, bias)


def test_decode_scales_short_and_empty():
    with pytest.raises(MlwError, match="scale stream too short") as e:
        decode_scales(b"\0" * 19, 2)
    assert e.value.kind == "cmd_parse_error"
    b, s, t = decode_scales(b"", 0)
    assert b.shape == s.shape == t.shape == (0,)


# ---------------------------------------------------------------------------------------------------------------
# cache

def _stream_and_params(seed=0, shape=(16, 3, 3, 8)):
    rng = np.random.default_rng(seed)
    w = random_weights(rng, shape)
    stream = bytes(npu_encode_weights(NpuAccelerator.Ethos_U55_128, w, (1, 1), 8, 16, False,
                                      NpuBlockTraversal.DEPTH_FIRST))
    params = dict(ofm_depth=shape[0], ifm_depth=shape[3], kernel_h=shape[1], kernel_w=shape[2], ofm_block_depth=16,
                  depthwise=False, part_kernel_first=False)
    return w, stream, params


def test_cache_decodes_once(monkeypatch):
    calls = []
    real = weights_mod.decode_mlw

    def counting(data, **kw):
        calls.append(len(data))
        return real(data, **kw)

    monkeypatch.setattr(weights_mod, "decode_mlw", counting)
    w, stream, params = _stream_and_params()
    cache = WeightCache()
    a = cached_weights(cache, stream, **params)
    np.testing.assert_array_equal(a, w)
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a[0, 0, 0, 0] = 1
    b = cached_weights(cache, bytearray(stream), **params)                 # same bytes, another buffer type
    c = cached_weights(cache, np.frombuffer(stream, np.uint8), **params, dilation_y=1, cores=1)   # explicit defaults
    assert a is b is c
    assert len(calls) == 1 and cache.hits == 2 and cache.misses == 1
    # other parameters or other bytes: a new decode
    d = cached_weights(cache, stream, **{**params, "ofm_ublock_depth": 4})
    assert d is not a and len(calls) == 2
    _, stream2, _ = _stream_and_params(seed=1)
    cached_weights(cache, stream2, **params)
    assert len(calls) == 3 and len(cache) == 3
    with pytest.raises(TypeError):
        cached_weights(cache, stream, **params, bogus=1)


def test_cache_lru_by_bytes():
    entries = [_stream_and_params(seed=s) for s in range(4)]
    one = len(entries[0][1]) + entries[0][0].size * 4
    cache = WeightCache(max_bytes=int(2.5 * one))
    first = cached_weights(cache, entries[0][1], **entries[0][2])
    cached_weights(cache, entries[1][1], **entries[1][2])
    assert cached_weights(cache, entries[0][1], **entries[0][2]) is first          # refresh entry 0
    cached_weights(cache, entries[2][1], **entries[2][2])                             # evicts entry 1, the least recent
    assert len(cache) == 2 and cache.total_bytes <= cache.max_bytes
    assert cached_weights(cache, entries[0][1], **entries[0][2]) is first
    misses = cache.misses
    cached_weights(cache, entries[1][1], **entries[1][2])
    assert cache.misses == misses + 1
    # an entry larger than the whole cache is returned but not kept
    tiny = WeightCache(max_bytes=10)
    np.testing.assert_array_equal(cached_weights(tiny, entries[3][1], **entries[3][2]), entries[3][0])
    assert len(tiny) == 0 and tiny.total_bytes == 0


def test_cache_errors_propagate():
    w, stream, params = _stream_and_params()
    cache = WeightCache()
    with pytest.raises(MlwError):
        cached_weights(cache, stream[:20], **params)
    with pytest.raises(MlwError, match="too short"):
        cached_weights(cache, stream, **{**params, "ofm_depth": 64})
    assert len(cache) == 0
