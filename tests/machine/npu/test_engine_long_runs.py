"""The fast engine's paths for many inferences, against the reference engine: the pools that copy (Vela's
transpositions), the numpy output stage kept per operation (DBL shifts above 31 included), and the kernels for
every size once a process has pushed enough elements through the engine."""

import dataclasses

import numpy as np
import pytest

from fvp.machine.npu.descriptors import Activation, FeatureMap, Kernel, NpuOperation, Scale
from fvp.machine.npu.engines import fast, reference as ref
from fvp.machine.npu.engines.fast import copies, paths, scaling

DBL, TRUNCATE, NATURAL = 0, 1, 2
TYPES = {"int8": (8, True), "uint8": (8, False), "int16": (16, True)}


def _fm(name, dt, h, w, c, zp=0):
    bits, signed = TYPES[dt]
    return FeatureMap(name=name, region=1, bases=(0, 0, 0, 0), height=h, width=w, depth=c, height0=h, height1=h,
                      width0=w, stride_x=0, stride_y=0, stride_c=0, bits=bits, signed=signed, format="NHWC",
                      zero_point=zp)


def _pool(dt="int8", ofm_dt=None, sub="AVERAGE", scale=Scale(0x80000001, 31), act=None, kernel=None, zp=(0, 0),
          shape=(25, 64, 1), mode=DBL):
    h, w, c = shape
    bits, signed = TYPES[dt]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    kernel = kernel or Kernel(1, 1, 1, 1, 1, 1, 0, 0, 0, 0, "NONE", False, "D8X8")
    return NpuOperation(kind="POOL", offset=0, param=0, sub_op=sub, ifm=_fm("ifm", dt, h, w, c, zp[0]),
                        ofm=_fm("ofm", ofm_dt or dt, h, w, c, zp[1]), kernel=kernel, ofm_block=(2, 8, 8),
                        ofm_scale_mode="GLOBAL", ofm_scale=scale, ofm_round_mode=mode,
                        activation=act or Activation(0, 0, lo, hi))


def _every_value(op):
    """Every value of the IFM's type, then random ones, in the operation's IFM shape."""
    i = op.ifm
    lo = -(1 << (i.bits - 1)) if i.signed else 0
    n = i.height * i.width * i.depth
    vals = np.resize(np.arange(lo, lo + (1 << i.bits), dtype=np.int32), max(n, 1 << i.bits))
    return [vals[k:k + n].reshape(i.height, i.width, i.depth) for k in range(0, vals.size - n + 1, n)]


@pytest.mark.parametrize("dt", ["int8", "uint8", "int16"])
def test_transposition_pools_copy_and_equal_the_reference(dt):
    # Vela's transposition (ds_cnn, MobileNetV2): AVERAGE 1x1, OFM_SCALE (2**31 + 1, 31), DBL; and MAX, and
    # AVERAGE with an identity scale (1, 0)
    for op in (_pool(dt), _pool(dt, sub="MAX", scale=Scale(1, 0)), _pool(dt, scale=Scale(1, 0), mode=NATURAL),
               _pool(dt, shape=(3, 7, 5))):
        assert copies.copies(op, fast._pool), op
        for x in _every_value(op):
            got = fast.run_kernel_op(op, x)
            assert got is x or np.array_equal(got, x)
            assert np.array_equal(ref.run_kernel_op(op, x), x)


def test_pools_that_do_not_copy_take_the_full_path_and_equal_the_reference():
    k2 = Kernel(2, 2, 1, 1, 1, 1, 0, 0, 0, 0, "NONE", False, "D8X8")
    kpad = Kernel(1, 1, 1, 1, 1, 1, 1, 0, 0, 0, "NONE", False, "D8X8")
    cases = [
        _pool(scale=Scale(0x40000000, 31)),                          # halves
        _pool(act=Activation(0, 0, -100, 100)),                      # a narrower clamp
        _pool(zp=(3, 0)),                                             # the zero points differ
        _pool("int8", "int16"),                                       # another OFM type
        _pool(kernel=k2, shape=(6, 6, 2)),                            # a 2x2 window (shape below: 5x5 OFM)
        _pool(kernel=kpad),                                           # padding
        _pool(sub="REDUCE_SUM"),                                      # sums over the channels
    ]
    rng = np.random.default_rng(5)
    for op in cases:
        if op.kernel.height == 2:
            op = dataclasses.replace(op, ofm=dataclasses.replace(op.ofm, height=5, width=5))
        assert not copies.copies(op, fast._pool), op
        x = rng.integers(-128, 128, (op.ifm.height, op.ifm.width, op.ifm.depth)).astype(np.int32)
        assert np.array_equal(fast.run_kernel_op(op, x), ref.run_kernel_op(op, x)), op


def test_a_scale_stream_or_a_table_is_never_a_copy():
    op = _pool()
    x = np.arange(-128, 128 - 256 + 25 * 64, dtype=np.int32)[:25 * 64].reshape(25, 64, 1) % 256 - 128
    bs = (np.zeros(1, np.int64), np.array([0x80000001], np.int64), np.array([31], np.int64))
    assert np.array_equal(fast.run_kernel_op(op, x, bias_scale=bs), ref.run_kernel_op(op, x, bias_scale=bs))


def _stage_case(rng, shift_lo, shift_hi, mode, c=7, per_channel=True):
    ofm = _fm("ofm", "int8", 1, 1, c, int(rng.integers(-20, 20)))
    lo, hi = sorted(int(v) for v in rng.integers(-128, 128, 2))
    op = NpuOperation(kind="CONV", offset=0, param=0, sub_op=None, ifm=_fm("ifm", "int8", 1, 1, c), ofm=ofm,
                      activation=Activation(0, 0, lo, hi), ofm_round_mode=mode, ofm_block=(1, 1, 8))
    if per_channel:
        m = rng.integers(1 << 30, 1 << 31, c).astype(np.int64)
        s = rng.integers(shift_lo, shift_hi + 1, c).astype(np.int64)
    else:
        m, s = int(rng.integers(1 << 30, 1 << 31)), int(rng.integers(shift_lo, shift_hi + 1))
    return op, m, s


@pytest.mark.parametrize("mode", [DBL, NATURAL, TRUNCATE])
def test_numpy_output_stage_kept_per_operation_equals_the_reference(mode):
    rng = np.random.default_rng(int(mode) + 11)
    for trial in range(60):
        lo_s, hi_s = [(0, 31), (32, 45), (20, 62)][trial % 3]
        op, m, s = _stage_case(rng, lo_s, hi_s, mode, per_channel=trial % 2 == 0)
        for again in range(3):  # the first call computes the parameters, the later ones reuse them
            v = rng.integers(-(1 << 29), 1 << 29, (40, op.ofm.depth)).astype(np.int64)
            mm = np.array(m, copy=True) if not np.isscalar(m) else m  # equal values, another array each call
            want = ref.output_stage(v, m, s, op)
            assert np.array_equal(scaling.output_stage(v, mm, s, op), want), (trial, again)
        # the same operation with other scales: the kept parameters are not reused for them
        if not np.isscalar(m):
            m2 = m[::-1].copy()
            v = rng.integers(-(1 << 29), 1 << 29, (40, op.ofm.depth)).astype(np.int64)
            assert np.array_equal(scaling.output_stage(v, m2, s, op), ref.output_stage(v, m2, s, op))


def test_every_size_takes_the_kernels_after_the_threshold(monkeypatch):
    monkeypatch.setattr(paths, "_numpy_large_elements", [0])
    monkeypatch.setattr(paths, "JIT_AFTER_ELEMENTS", 1000)
    assert paths.numpy_path(600) and paths.numpy_path(600)  # small arrays count now
    assert not paths.numpy_path(10)  # 1200 > 1000: the kernels for every size
    rng = np.random.default_rng(3)
    op, m, s = _stage_case(rng, 32, 40, DBL)
    v = rng.integers(-(1 << 29), 1 << 29, (16, op.ofm.depth)).astype(np.int64)
    assert np.array_equal(scaling.output_stage(v, m, s, op), ref.output_stage(v, m, s, op))


def test_fused_elementwise_equals_the_reference():
    """ADD/SUB/MUL with the output stage in one kernel pass (a long run's path) against the reference engine, on
    the random elementwise operations of test_engines: every scale mode, operand order and broadcast form, 8- to
    32-bit operands (32-bit ones at the ends of their range too); the operations it declines return None."""
    from fvp.machine.npu.engines.fast import elementwise

    from .test_engines import random_kernel_case

    rng = np.random.default_rng(29)
    seen, declined = set(), 0
    for trial in range(1500):
        op, a, b, _, _, lut = random_kernel_case(rng, "ELEMENTWISE")
        if op.sub_op not in ("ADD", "SUB", "MUL"):
            continue
        if op.ifm.bits == 32 and trial % 3 == 0:  # the ends of the 32-bit range
            a = rng.choice(np.array([-(1 << 31), (1 << 31) - 1, 0, -1], np.int64), size=a.shape)
        # int32 operands, as the executor gathers every feature map but unsigned 32-bit ones
        a, b = a.astype(np.int32), None if b is None else b.astype(np.int32)
        assert elementwise.fused_elementwise(op, a.astype(np.int64), b) is None  # the kernel's one signature
        got = elementwise.fused_elementwise(op, a, b)
        if got is None:
            assert op.activation.table is not None or (op.ofm.bits == 32 and not op.ofm.signed)
            declined += 1
            continue
        assert np.array_equal(got, ref.run_kernel_op(op, a, b, lut=lut)), (trial, op)
        form = ("scalar" if op.broadcast.scalar else "full" if b.shape == a.shape else
                "one" if b.size == 1 else "axes")
        seen.add((op.sub_op, int(op.ifm_scale_mode) if op.sub_op != "MUL" else None, form,
                  op.broadcast.reversed_operands))
    assert declined
    for sub in ("ADD", "SUB"):
        for mode in (0, 1, 2):
            assert {f for s, m, f, _ in seen if (s, m) == (sub, mode)} >= {"scalar", "full", "axes"}, (sub, mode)
    assert {f for s, _, f, r in seen if s == "MUL" and r} >= {"scalar", "full", "axes"}


@pytest.mark.parametrize("program", ["resnet8_u55-128.bpte", "mv2_full_u55-128.bpte"])
def test_a_long_runs_paths_leave_every_inference_as_it_was(program, monkeypatch):
    """A session in the kernels' regime (a long run) gives the same outputs, cycles, PMU and operation records
    with its own paths (the fused elementwise kernel, the feature-map copies and the operands' min/max by numba
    loops) as without them."""
    import fvp
    from fvp.machine.npu import featuremap as fmap
    from fvp.machine.npu.engines.fast import operands
    from testutil import CORPUS

    monkeypatch.setattr(paths, "JIT_AFTER_ELEMENTS", -1)
    rng = np.random.default_rng(11)
    with fvp.Session(CORPUS / program) as s:
        xs = [rng.uniform(-2, 2, s.inputs[0].shape).astype(np.float32) for _ in range(2)]
        s.run(xs[0])  # the stream decoded
        taken, real = [], fast.fused_elementwise
        monkeypatch.setattr(fast, "fused_elementwise", lambda op, a, b: taken.append(real(op, a, b)) or taken[-1])
        fused = [s.run(x) for x in xs]
        assert any(t is not None for t in taken)  # its residual ADDs took the fused kernel
        monkeypatch.setattr(fast, "fused_elementwise", lambda op, a, b: None)
        monkeypatch.setattr(fmap, "KERNEL_COPY_MIN_ELEMENTS", 1 << 62)
        monkeypatch.setattr(operands, "KERNEL_MIN_MAX_ELEMENTS", 1 << 62)
        plain = [s.run(x) for x in xs]
    for a, b in zip(fused, plain):
        assert a.raw_outputs == b.raw_outputs and (a.npu_cycles, a.cpu_cycles, a.pmu) == (b.npu_cycles, b.cpu_cycles,
                                                                                         b.pmu)
        ra = [(r.op, r.bytes_read, r.bytes_written, r.region_read, r.region_written) for st in a.npu_streams
              for r in st.operations]
        rb = [(r.op, r.bytes_read, r.bytes_written, r.region_read, r.region_written) for st in b.npu_streams
              for r in st.operations]
        assert ra == rb
