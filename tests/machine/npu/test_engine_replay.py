"""The warm-inference shortcuts against the reference engine and against a cold run.

* the fused kernels that read the padded IFM in place (CONV's im2col, DEPTHWISE), for every upscale mode, and
  both sides of DEPTHWISE's int32/int64 sums switch;
* the per-operation memo of decoded weights and scales (``WeightCache.by_operation``): a replayed stream whose
  weight or scale bytes changed in memory decodes again, with the cold run's result;
* the per-operation memo of the bounds checks: a replay still faults on memory it can no longer reach.
"""

import dataclasses

import numpy as np
import pytest

from fvp.machine.npu.engines import fast
from fvp.machine.npu.engines.fast import fused
from fvp.machine.npu.engines import reference as ref
from fvp.machine.npu.weight_cache import WeightCache

from .corpus import load
from .helpers import run_blob
from .test_engines import random_kernel_case
from .test_startup_paths import _force


def _fused_case(seed, kind):
    rng = np.random.default_rng(9000 + seed)
    op, a, b, W, bs, lut = random_kernel_case(rng, kind)
    bias, scale, shift = bs
    bs = (bias >> 30, scale, np.minimum(shift, 40).astype(np.int32))  # the fused kernels' domain
    want = ref.run_kernel_op(op, a, b, W, bs, lut)
    W.flags.writeable = False
    bs = tuple(np.asarray(x) for x in bs)
    for x in bs:
        x.flags.writeable = False
    return op, a, b, W, bs, lut, want


@pytest.mark.parametrize("int32_sums", [True, False])
def test_depthwise_in_place_kernel_both_sum_widths(monkeypatch, int32_sums):
    _force(monkeypatch, "kernels")
    if not int32_sums:
        monkeypatch.setattr(fused, "DEPTHWISE_INT32_SUMS", 0)
    seen = []
    kernel = fused._depthwise_requant_kernel
    monkeypatch.setattr(fused, "_depthwise_requant_kernel", lambda *a: seen.append((a[12], a[11])) or kernel(*a))
    for seed in range(80):
        op, a, b, W, bs, lut, want = _fused_case(seed, "DEPTHWISE")
        got = fast.run_kernel_op(op, a, b, W, bs, lut)
        assert np.array_equal(got, want), op
        got = fast.run_kernel_op(op, a, b, W, bs, lut)  # again: the memoised output-stage parameters
        assert np.array_equal(got, want), op
    assert {narrow for narrow, _ in seen} == {int32_sums}
    assert {up for _, up in seen} == {0, 1, 2}  # NONE, NEAREST, ZEROS


def test_conv_in_place_im2col(monkeypatch):
    _force(monkeypatch, "kernels")
    hits = []
    im2col = fused._im2col_kernel
    monkeypatch.setattr(fused, "_im2col_kernel", lambda *a: hits.append(a[14]) or im2col(*a))
    for seed in range(120):
        op, a, b, W, bs, lut, want = _fused_case(seed, "CONV")
        assert np.array_equal(fast.run_kernel_op(op, a, b, W, bs, lut), want), op
    assert set(hits) == {0, 1, 2} and len(hits) > 30  # in place for NONE, NEAREST, ZEROS; the rest chunked


# ------------------------------------------------------------------------------------------------ replays


@dataclasses.dataclass
class _WholeScratch:
    shape: tuple
    offset: int = 0
    elem_size: int = 1


def _blob():
    cp = load("mobilenet_v1_025_u55-128")
    blob = cp.blobs[min(cp.blobs)]
    # the whole scratch as the output: every feature map the stream wrote is compared
    blob = dataclasses.replace(blob, outputs=[_WholeScratch((blob.scratch_size,))])
    rng = np.random.default_rng(3)
    ins = [rng.integers(0, 256, int(np.prod(io.shape)) * io.elem_size, dtype=np.uint8).tobytes()
           for io in blob.inputs]
    return blob, ins


def test_changed_weight_and_scale_bytes_are_decoded_again():
    blob, ins = _blob()
    cache = WeightCache()
    res, first = run_blob(blob, ins, weight_cache=cache)
    assert res.ok
    res, again = run_blob(blob, ins, weight_cache=cache)  # a replay: every operation's memo hits
    assert res.ok and again == first and len(cache._by_op) > 0
    ops = [r.op for r in res.operations if r.op.kind in ("CONV", "DEPTHWISE")]
    data = bytearray(blob.weight_data)
    s = ops[0].scales[0]
    src = s.address
    if s.region != 0:  # a DMA brought the scales from the weights (region 0): change them there
        d = next(r.op.dma for r in res.operations if r.op.kind == "DMA" and r.op.dma.dst_region == s.region
                 and r.op.dma.dst_address <= s.address < r.op.dma.dst_address + r.op.dma.length)
        assert d.src_region == 0
        src = d.src_address + s.address - d.dst_address
    for i in range(ops[0].ofm.depth):  # the first CONV/DEPTHWISE's scale entries: each multiplier changes
        data[src + 10 * i + 8] ^= 0x20
    changed = dataclasses.replace(blob, weight_data=bytes(data))
    res, got = run_blob(changed, ins, weight_cache=cache)
    res2, cold = run_blob(changed, ins, weight_cache=WeightCache())
    assert res.ok and res2.ok and got == cold and got != first
    res, back = run_blob(blob, ins, weight_cache=cache)
    assert back == first


def test_replayed_bounds_checks_still_fault():
    from fvp.machine.npu import bounds

    blob, ins = _blob()
    res, _ = run_blob(blob, ins)
    kernel_ops = [r.op for r in res.operations if r.op.is_kernel_op]
    assert res.ok and all((op,) in bounds._CHECKED for op in kernel_ops)  # remembered: a replay next
    small = dataclasses.replace(blob, scratch_size=64)  # the feature maps no longer fit the scratch memory
    res, _ = run_blob(small, [b"" for _ in ins])
    assert not res.ok and res.fault.kind == "bus_error"
