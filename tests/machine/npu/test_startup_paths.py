"""The numpy paths that keep numba off the start-up path agree with the numba kernels they stand in for:
strided feature-map gather/scatter (tiles, bricks, signed strides, overlapping layouts), and the exact
small-array scaling paths of the fast engine."""

import dataclasses

import numpy as np
import pytest

from fvp.machine.npu import featuremap as fmap
from fvp.machine.npu.descriptors import FeatureMap


def _fm(rng, bits, fmt, overlap=False):
    h, w, c = (int(v) for v in rng.integers(1, 7, 3))
    c = int(rng.choice([c, 16 + c, 33]))
    e = bits // 8
    h0, h1, w0 = int(rng.integers(0, h + 1)), int(rng.integers(0, h + 1)), int(rng.integers(0, w + 1))
    if fmt == "NHCWB16":
        sx = 0
        cs = w * 16 * e * int(rng.choice([1, -1]))
        sy = (-(-c // 16)) * abs(cs) * int(rng.choice([1, -1]))
    else:
        sx = c * e * int(rng.choice([1, 1, -1]))
        sy = w * abs(sx) * int(rng.choice([1, -1]))
        cs = e
    if overlap:  # rows overlap their neighbours: the order of writes decides
        sy = int(np.sign(sy) or 1) * max(e, abs(sy) // 2)
    span = (h + 1) * abs(sy) + (w + 1) * abs(sx) + (c // 16 + 1) * abs(cs) + 16 * e
    span = -(-span // 16) * 16
    gap = 2 if not overlap or rng.random() < 0.5 else 0  # 0: all tiles on one base
    bases = tuple(span + gap * t * span for t in range(4))
    return FeatureMap("t", 1, bases, h, w, c, h0, h1, w0, sx, sy, cs, bits, bool(rng.random() < 0.7), fmt, 0)


@pytest.mark.parametrize("kernels", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_numpy_gather_scatter_match_the_kernels(seed, kernels, monkeypatch):
    """The strided copies (numpy's, and with ``kernels`` the numba loops a long run takes for every piece here)
    against the element-at-a-time kernels."""
    monkeypatch.setattr(fmap, "KERNEL_COPY_MIN_ELEMENTS", 0)
    rng = np.random.default_rng(seed)
    bits = int(rng.choice([8, 16, 32]))
    fm = _fm(rng, bits, str(rng.choice(["NHWC", "NHCWB16"])), overlap=seed % 3 == 0)
    lo, hi = fmap.extent(fm)
    mem = rng.integers(0, 256, hi - lo, dtype=np.uint8)
    assert np.array_equal(fmap.gather(fm, mem, lo, kernels=kernels), fmap.gather_reference(fm, mem, lo))
    lim = 1 << (bits - 1)
    for dt in (np.int64, np.int32):  # the engines' two value types
        if dt is np.int32 and bits == 32 and not fm.signed:
            continue
        vals = rng.integers(-lim if fm.signed else 0, lim if fm.signed else 2 * lim, size=fm.shape).astype(dt)
        a, b = mem.copy(), mem.copy()
        fmap.scatter(fm, a, lo, vals, kernels=kernels)
        fmap.scatter_reference(fm, b, lo, vals)
        assert np.array_equal(a, b)


# ------------------------------------------------------------------------------------------------ engine paths

from fvp.machine.npu.engines import fast, reference as ref  # noqa: E402
from fvp.machine.npu.engines.fast import paths, scaling  # noqa: E402

from .test_engines import random_kernel_case  # noqa: E402


def _force(monkeypatch, path):
    if path == "kernels":  # every array above 0 elements, after the numpy allowance: the numba kernels
        monkeypatch.setattr(paths, "NUMPY_MAX_ELEMENTS", 0)
        monkeypatch.setattr(paths, "JIT_AFTER_ELEMENTS", -1)
    else:  # every array on the numpy paths
        monkeypatch.setattr(paths, "NUMPY_MAX_ELEMENTS", 1 << 40)


@pytest.mark.parametrize("path", ["kernels", "numpy"])
@pytest.mark.parametrize("seed", range(120))
def test_fast_paths_equal_reference(monkeypatch, path, seed):
    """Both sides of the size switch (numba kernels incl. the fused CONV/DEPTHWISE output stage, and the numpy
    paths) against the reference engine on the random operations of test_engines."""
    _force(monkeypatch, path)
    rng = np.random.default_rng(5000 + seed)
    kind = ["CONV", "DEPTHWISE", "POOL", "ELEMENTWISE"][seed % 4]
    op, a, b, W, bs, lut = random_kernel_case(rng, kind)
    if kind in ("CONV", "DEPTHWISE") and seed % 8 < 4:  # the fused kernels' domain: small biases and values
        bias, scale, shift = bs
        bs = (bias >> 20, scale, np.minimum(shift, 31 if seed % 8 < 2 else 40).astype(np.int32))
    if kind != "CONV" and kind != "DEPTHWISE" and seed % 8 < 4 and op.ofm_scale is not None:  # shifts <= 31
        op = dataclasses.replace(op, ofm_scale=dataclasses.replace(op.ofm_scale, shift=op.ofm_scale.shift % 32))
    want = ref.run_kernel_op(op, a, b, W, bs, lut)
    if W is not None:  # as the weight cache hands them out
        W.flags.writeable = False
        bs = tuple(np.asarray(x) for x in bs)
        for x in bs:
            x.flags.writeable = False
    got = fast.run_kernel_op(op, a, b, W, bs, lut)
    assert got.shape == want.shape == op.ofm.shape
    assert np.array_equal(got, want), op


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_mul_round_shift_np_matches_the_kernel(mode):
    rng = np.random.default_rng(mode)
    for lim in (1 << 20, 1 << 40, 1 << 62):
        v = rng.integers(-lim, lim, 400, dtype=np.int64)
        v[:4] = [1 << 62, -(1 << 62), 0, -1]
        m = rng.integers(0, 1 << 32, 400, dtype=np.int64)
        s = rng.integers(0, 64, 400, dtype=np.int64)
        got = scaling.mul_round_shift_np(v, m, s, mode)
        want = [scaling.mul_round_shift(int(x), int(y), int(z), mode) for x, y, z in zip(v, m, s)]
        assert got.tolist() == want


def test_fused_kernels_are_used_for_large_operations(monkeypatch):
    """A large DEPTHWISE/CONV in the fused kernels' domain does not take the general output stage."""
    _force(monkeypatch, "kernels")
    calls = []
    monkeypatch.setattr(fast, "output_stage", lambda *a, **k: calls.append(1))
    for kind in ("CONV", "DEPTHWISE"):
        for seed in range(40):
            rng = np.random.default_rng(seed)
            op, a, b, W, bs, lut = random_kernel_case(rng, kind)
            if lut is not None or op.ofm_round_mode == 1 or op.activation.table is not None:
                continue
            bias, scale, shift = bs
            bs = (bias >> 30, scale, np.minimum(shift, 40).astype(np.int32))
            got = fast.run_kernel_op(op, a, b, W, bs, lut)
            assert got is not None and got.dtype == np.int32
            break
    assert not calls


# ------------------------------------------------------------------------------------------------ weight order

from fvp.machine.npu.u55 import weights as weights_mod  # noqa: E402


@pytest.mark.parametrize("seed", range(60))
def test_numpy_unpack_matches_the_kernel(seed):
    """The numpy weight unpacker (every run) against the numba traversal kernel, on random layouts: depthwise,
    part-kernel-first, dilation, 8/16-bit IFMs, OFM block depths that are not a multiple of the micro-block
    (blocks then overlap, and the later one wins in both), dual-core splits."""
    rng = np.random.default_rng(seed)
    depthwise = bool(rng.random() < 0.3)
    cores = int(rng.choice([1, 2]))
    kw = dict(ofm_depth=int(rng.integers(1, 70)), ifm_depth=int(rng.integers(1, 70)),
              kernel_h=int(rng.integers(1, 11)), kernel_w=int(rng.integers(1, 11)),
              dilation_y=int(rng.choice([1, 2])), dilation_x=int(rng.choice([1, 2])),
              ofm_block_depth=int(rng.choice([8, 16, 12, 20, 32])), depthwise=depthwise,
              part_kernel_first=bool(rng.random() < 0.4), ifm_bits=int(rng.choice([8, 16])),
              ofm_ublock_depth=int(rng.choice([8, 4, 2])), ifm_ublock_depth=int(rng.choice([8, 4])), cores=cores,
              core=int(rng.integers(0, cores)))
    p = weights_mod._layout(*(kw[k] for k in ("ofm_depth", "ifm_depth", "kernel_h", "kernel_w", "dilation_y",
                                               "dilation_x", "ofm_block_depth", "depthwise", "part_kernel_first",
                                               "ifm_bits", "ofm_ublock_depth", "ifm_ublock_depth", "cores",
                                               "core")))
    need = weights_mod._stream_length(*p)
    decoded = rng.integers(-255, 256, need + 5).astype(np.int16)
    a = np.zeros((p[0], p[2], p[3], p[1]), np.int32)
    b = a.copy()
    assert weights_mod._unpack_numpy(decoded, a, *p) == weights_mod._unpack_kernel(decoded, b, *p) == need
    assert np.array_equal(a, b)
