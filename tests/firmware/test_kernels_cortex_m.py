"""The Cortex-M backend kernels (``firmware/executorch/kernels/cortex_m/``) against ExecuTorch's own references.

``tests/data/cortex_m/refs.npz`` holds cases computed by the Python reference implementations of the
``cortex_m::*`` operators in the toolchain venv (``make_refs.py`` there). The kernels follow the C++/CMSIS-NN
arithmetic; where that rounds differently from the Python reference the comparison says how: average pool and div
differ only at exact halves (the C rounds them away from zero, the reference to even), softmax is the fixed-point
CMSIS-NN algorithm (checked here against a scalar transcription of it and within one step of the float softmax).
Further tests: the requantization against big-integer arithmetic, saturation, the CMSIS-NN failure paths.
"""

import json
from types import SimpleNamespace

import numpy as np
import pytest

from firmware.executorch import log
from firmware.executorch.error import Error, RuntimeFailure
from firmware.executorch.kernels import KERNELS
from firmware.executorch.kernels.cortex_m.elementwise import elementwise_add_s8
from firmware.executorch.kernels.cortex_m.fixed_point import divide_by_power_of_two, requantize
from firmware.executorch.kernels.cortex_m.softmax import softmax_rows
from testutil import DATA, KernelHarness

REFS = np.load(DATA / "cortex_m" / "refs.npz")
CASES = sorted(k[:-4] for k in REFS.files if k.endswith("__op"))
CL = (0, 2, 3, 1)


class Harness(KernelHarness):
    def tensor(self, arr, channels_last=False, dtype=None):
        return super().tensor(np.asarray(arr, dtype=dtype), dim_order=CL if channels_last else None)

    def call(self, op, args, out):
        KERNELS[op](self.ctx, args + [out, out])  # a KernelCall passes out, then the returned tensor
        return out.array(self.bus)


def run_case(name):
    h = Harness()
    spec = json.loads(str(REFS[f"{name}__args"]))
    args = []
    for a in spec[:-1]:
        if "t" in a:
            args.append(h.tensor(REFS[f"{name}__t{a['t']}"], a["cl"]))
        elif "ints" in a:
            args.append(h.ints(a["ints"]))
        elif "none" in a:
            args.append(None)
        else:
            args.append(next(v for k, v in a.items()))
    o = spec[-1]
    out = h.tensor(np.zeros(o["out"], dtype=o["dtype"]), o["cl"])
    got = h.call(str(REFS[f"{name}__op"]), args, out)
    return got, REFS[f"{name}__out"], h


def c_round_div(num, den):
    """The C ``sum > 0 ? (sum + n/2) / n : (sum - n/2) / n`` with truncating division, in Python integers."""
    half = den // 2
    v = num + half if num > 0 else num - half
    q = abs(v) // den
    return q if v >= 0 else -q


def avgpool_windows(x, k, s, p, oh, ow):
    """(sum, count) of every output window clipped to the input: x is (N, C, H, W)."""
    n, c, h, w = x.shape
    sums = np.zeros((n, c, oh, ow), np.int64)
    cnt = np.zeros((oh, ow), np.int64)
    for i in range(oh):
        for j in range(ow):
            y0, y1 = max(i * s[0] - p[0], 0), min(i * s[0] - p[0] + k[0], h)
            x0, x1 = max(j * s[1] - p[1], 0), min(j * s[1] - p[1] + k[1], w)
            sums[:, :, i, j] = x[:, :, y0:y1, x0:x1].astype(np.int64).sum(axis=(2, 3))
            cnt[i, j] = (y1 - y0) * (x1 - x0)
    return sums, cnt


@pytest.mark.parametrize("name", CASES)
def test_against_reference(name):
    got, want, _ = run_case(name)
    cmp = str(REFS[f"{name}__cmp"])
    op = str(REFS[f"{name}__op"])
    assert got.shape == want.shape
    if cmp == "exact":
        np.testing.assert_array_equal(got, want)
    elif cmp == "softmax":
        assert np.abs(got.astype(int) - want.astype(int)).max() <= 1
        spec = json.loads(str(REFS[f"{name}__args"]))
        mult, shift, diff_min = spec[4]["int"], spec[5]["int"], spec[6]["int"]
        x = REFS[f"{name}__t0"]
        rows = x.reshape(-1, x.shape[-1])
        want_c = np.array([scalar_softmax(r, mult, shift, diff_min) for r in rows]).reshape(x.shape)
        np.testing.assert_array_equal(got, want_c)
    elif op.startswith("cortex_m::quantized_avg_pool2d"):
        spec = json.loads(str(REFS[f"{name}__args"]))
        k, s, p = spec[1]["ints"], spec[2]["ints"], spec[3]["ints"]
        sums, cnt = avgpool_windows(REFS[f"{name}__t0"], k, s, p, *got.shape[2:])
        tie = (2 * sums) % cnt == 0
        tie &= sums % cnt != 0
        differ = got != want
        assert not (differ & ~tie).any(), "outside exact halves the C and the reference round alike"
        expect = np.vectorize(c_round_div)(sums, np.broadcast_to(cnt, sums.shape))
        np.testing.assert_array_equal(got, np.clip(expect, -128, 127))
    elif op == "cortex_m::quantized_div.out":
        spec = json.loads(str(REFS[f"{name}__args"]))
        a = REFS[f"{name}__t0"].astype(np.float64) - spec[1]["int"]
        b = REFS[f"{name}__t1"].astype(np.float64) - spec[3]["int"]
        q = np.where(b != 0, a / np.where(b != 0, b, 1), 0) * spec[5]["float"]
        tie = np.abs(q - np.trunc(q)) == 0.5
        assert not ((got != want) & ~tie).any()
        expect = np.clip(np.trunc(q + np.copysign(0.5, q)) + spec[4]["int"], -128, 127)
        np.testing.assert_array_equal(got, expect)
    else:
        raise AssertionError(cmp)


def test_documented_differences_are_exercised():
    """The fixtures include cases where the C rounding differs from the Python reference."""
    got, want, _ = run_case("div_ties")
    assert (got != want).any()
    diffs = sum(int((run_case(n)[0] != run_case(n)[1]).sum()) for n in CASES if n.startswith("avgpool"))
    assert diffs > 0


# ------------------------------------------------------------------------------------------------ softmax
def _mul_sat(a, b):
    if a == b == -(1 << 31):
        return (1 << 31) - 1
    return (a * b + (1 << 30)) >> 31


def _div_pow2(x, e):
    mask = (1 << e) - 1
    rem, q = x & mask, x >> e
    return q + (1 if rem > (mask >> 1) + (1 if q < 0 else 0) else 0)


def _w32(x):
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _exp_neg(val):
    vmmq = (val & ((1 << 24) - 1)) - (1 << 24)
    rem = vmmq - val
    x = (vmmq << 5) + (1 << 28)
    x2 = _mul_sat(x, x)
    r = 1895147668 + _mul_sat(1895147668, x + _div_pow2(_mul_sat(_div_pow2(_mul_sat(x2, x2), 2) + _mul_sat(x2, x),
                                                                   715827883) + x2, 1))
    for bit, f in zip(range(24, 31), (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)):
        if rem & (1 << bit):
            r = _mul_sat(r, f)
    return (1 << 31) - 1 if val == 0 else r


def _pow2_sat(v, e):
    t = (1 << (31 - e)) - 1
    return (1 << 31) - 1 if v > t else -(1 << 31) if v < -t else _w32(v << e)


def _one_over(v):
    s = v + (1 << 31) - 1
    half = (s + 1) // 2 if s >= 0 else -((-s + 1) // 2)
    x = _w32(1515870810 + _mul_sat(half, -1010580540))
    for _ in range(3):
        x = _w32(x + _pow2_sat(_mul_sat(x, (1 << 29) - _mul_sat(half, x)), 2))
    return _pow2_sat(x, 1)


def scalar_softmax(row, mult, shift, diff_min):
    """arm_nn_softmax_common_s8, element by element in Python integers (a second transcription of the C)."""
    row = [int(v) for v in row]
    mx = max(row)
    mask = _w32(1 << shift)
    total = 0
    for v in row:
        d = v - mx
        if d >= diff_min:
            total += _div_pow2(_exp_neg(_mul_sat(_w32(d * mask), mult)), 12)
    total = _w32(total)
    headroom = 32 - (total & 0xFFFFFFFF).bit_length()
    scale = _one_over(_w32((_w32(total << headroom) if total > 0 else 0) - (1 << 31)))
    out = []
    for v in row:
        d = v - mx
        if d >= diff_min:
            r = _div_pow2(_mul_sat(scale, _exp_neg(_mul_sat(_w32(d * mask), mult))), 12 - headroom + 23) - 128
            out.append(max(min(r, 127), -128))
        else:
            out.append(-128)
    return out


def test_softmax_uniform_and_extreme_rows():
    mult, shift, dmin = 1077952640, 19, -3968  # CMSIS-NN's own softmax test parameters
    rows = np.array([[5] * 8, [127, -128, -128, -128, -128, -128, -128, -128], [-128] * 7 + [127],
                     [0, 1, 2, 3, 4, 5, 6, 7]], np.int8)
    got = softmax_rows(rows, mult, shift, dmin)
    want = np.array([scalar_softmax(r, mult, shift, dmin) for r in rows])
    np.testing.assert_array_equal(got, want)
    assert (got[0] == -128 + 256 // 8).all()  # eight equal inputs: 1/8 each


# ------------------------------------------------------------------------------------------------ requantization
def _requant_big(v, m, s):
    """arm_nn_requantize with the C's 32-bit left shift, in Python integers."""
    v = _w32(v << max(s, 0))
    r = (v * m + (1 << 30)) >> 31
    e = max(-s, 0)
    return _div_pow2(r, e)


def test_requantize_matches_integer_formula():
    rng = np.random.default_rng(1)
    vals = np.concatenate([rng.integers(-(1 << 31), 1 << 31, 400), [0, 1, -1, (1 << 31) - 1, -(1 << 31), 3 << 20,
                                                                    -(5 << 20), 1 << 30]])
    for s in (-31, -20, -7, -1, 0, 1, 3, 12, 30):
        for m in (1 << 30, 1073741823, 2147483647, 1518500250, -1518500250):
            got = requantize(vals, m, s)
            want = [_requant_big(int(v), m, s) for v in vals]
            assert got.tolist() == want, (s, m)


def test_rounding_divide_halves_away_from_zero():
    assert divide_by_power_of_two(np.array([5, -5, 6, -6, 7, -7]), 1).tolist() == [3, -3, 3, -3, 4, -4]
    assert divide_by_power_of_two(np.array([2, -2, 3, -3]), 2).tolist() == [1, -1, 1, -1]


def test_add_left_shift_overflow_wraps_like_int32():
    # a positive output shift left-shifts the summed operands in 32 bits; the kernel wraps there as the C does
    x = np.array([127, -128, 100], np.int8)
    got = elementwise_add_s8(x, x, 0, 1 << 30, 0, 0, 1 << 30, 0, 20, 0, 1 << 30, 5, -128, 127)
    v = [_requant_big(int(a) << 20, 1 << 30, 0) * 2 for a in x]
    want = [max(-128, min(127, _requant_big(t, 1 << 30, 5))) for t in v]
    assert got.tolist() == want
    assert got.tolist() == [-128, 0, -128]  # wrapped: 127 and 100 land on the opposite rail


# ------------------------------------------------------------------------------------------------ convolution paths
def _conv_args(h, x, w, bias, stride, pad, dil, in_off=0, out_off=0, scratch=64, nhwc=False):
    o = w.shape[0]
    return [h.tensor(x, not nhwc), h.tensor(w), None if bias is None else h.tensor(bias, dtype=np.int32),
            h.ints(stride), h.ints(pad), h.ints(dil), in_off, out_off, h.tensor(np.full(o, 1 << 30), dtype=np.int32),
            h.tensor(np.full(o, -4), dtype=np.int32), -128, 127, h.tensor(np.zeros(scratch, np.int8))]


def _plain_conv(x_nchw, w_ohwi, stride, pad, in_off, ow):
    """The mathematical 1-D convolution along the width (height 1), before requantization."""
    n, c, _, wd = x_nchw.shape
    o, _, k, _ = w_ohwi.shape
    acc = np.zeros((n, o, ow), np.int64)
    for j in range(ow):
        for t in range(k):
            pos = j * stride - pad + t
            if 0 <= pos < wd:
                acc[:, :, j] += (x_nchw[:, :, 0, pos].astype(np.int64) + in_off) @ w_ohwi[:, 0, t, :].T.astype(np.int64)
    return acc


def test_conv_1xn_right_edge_of_a_valid_convolution():
    """CMSIS-NN's 1xN path (input height 1) treats the last window's final tap as padding when a 'valid'
    convolution leaves one input column unused ((W - K) % stride == 1): that output differs from the plain sum."""
    rng = np.random.default_rng(2)
    x = rng.integers(-128, 128, (1, 4, 1, 10)).astype(np.int8)
    w = rng.integers(-128, 128, (3, 1, 3, 4)).astype(np.int8)
    h = Harness()
    out = h.tensor(np.zeros((1, 3, 1, 4), np.int8), True)
    got = h.call("cortex_m::quantized_conv2d.out", _conv_args(h, x, w, None, [1, 2], [0, 0], [1, 1]), out)
    acc = _plain_conv(x, w, 2, 0, 0, 4)
    plain = np.clip(requantize(acc, 1 << 30, -4), -128, 127)
    np.testing.assert_array_equal(got[:, :, 0, :3], plain[:, :, :3])
    x_pad = x.copy()
    x_pad[..., 8] = 0  # the tap at input column 8 reads padding instead
    acc_quirk = _plain_conv(x_pad, w, 2, 0, 0, 4)
    np.testing.assert_array_equal(got[:, :, 0, 3], np.clip(requantize(acc_quirk, 1 << 30, -4), -128, 127)[:, :, 3])


def _conv_failure(x_shape, w_shape, out_shape, stride, padding, **kw) -> RuntimeFailure:
    """How quantized_conv2d fails on zeros (``x_shape``), ones (``w_shape``) and an ``out_shape`` output."""
    h = Harness()
    x = np.zeros(x_shape, np.int8)
    w = np.ones(w_shape, np.int8)
    out = h.tensor(np.zeros(out_shape, np.int8), True)
    with pytest.raises(RuntimeFailure) as e:
        h.call("cortex_m::quantized_conv2d.out", _conv_args(h, x, w, None, stride, padding, [1, 1], **kw), out)
    return e.value


def test_conv_1xn_padding_it_cannot_place_fails():
    """pad 1, (W + 2 - K) % stride == 1: arm_convolve_1_x_n_s8 returns ARM_CMSIS_NN_FAILURE."""
    e = _conv_failure((1, 4, 1, 12), (3, 1, 3, 4), (1, 3, 1, 6), [1, 2], [0, 1])
    assert e.code == Error.Internal and "status -3" in e.message


def test_conv_without_scratch_fails_like_cmsis():
    e = _conv_failure((1, 3, 5, 5), (2, 3, 3, 3), (1, 2, 5, 5), [1, 1], [1, 1], scratch=0)
    assert e.code == Error.Internal


def test_conv_nhwc_variant_matches_the_channels_last_one():
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (2, 5, 6, 7)).astype(np.int8)
    w = rng.integers(-128, 128, (4, 3, 2, 5)).astype(np.int8)
    bias = rng.integers(-1000, 1000, 4)
    h = Harness()
    a = h.call("cortex_m::quantized_conv2d.out", _conv_args(h, x, w, bias, [2, 1], [1, 0], [1, 2], 7, -3),
               h.tensor(np.zeros((2, 4, 3, 4), np.int8), True))
    b = h.call("cortex_m::quantized_conv2d_nhwc.out",
               _conv_args(h, x.transpose(0, 2, 3, 1), w, bias, [2, 1], [1, 0], [1, 2], 7, -3, nhwc=True),
               h.tensor(np.zeros((2, 3, 4, 4), np.int8)))
    np.testing.assert_array_equal(a, b.transpose(0, 3, 1, 2))


def test_conv_rejects_contiguous_nchw_input():
    h = Harness()
    x = np.zeros((1, 3, 5, 5), np.int8)
    args = _conv_args(h, x, np.ones((2, 3, 1, 1), np.int8), None, [1, 1], [0, 0], [1, 1])
    args[0] = h.tensor(x)  # NCHW dim order
    with pytest.raises(RuntimeFailure) as e:
        h.call("cortex_m::quantized_conv2d.out", args, h.tensor(np.zeros((1, 2, 5, 5), np.int8), True))
    assert e.value.code == Error.InvalidArgument


# ------------------------------------------------------------------------------------------------ other failure paths
def test_linear_without_kernel_sum_fails_on_mve():
    h = Harness()
    args = [h.tensor(np.ones((2, 4), np.int8)), h.tensor(np.ones((3, 4), np.int8)),
            h.tensor(np.zeros(3), dtype=np.int32), None, 0, 0, 0, h.ints([1 << 30]), h.ints([-1]), 127, -128]
    with pytest.raises(RuntimeFailure) as e:
        h.call("cortex_m::quantized_linear.out", args, h.tensor(np.zeros((2, 3), np.int8)))
    assert e.value.code == Error.Internal


def test_add_size_mismatch_is_a_fatal_check(capsys):
    h = Harness()
    lines = []
    log.install(SimpleNamespace(log=lambda level, msg, depth=1: lines.append((level, msg))))
    try:
        args = [h.tensor(np.ones((2, 3), np.int8)), 0, 1 << 30, 0, h.tensor(np.ones((3, 2), np.int8)), 0, 1 << 30, 0,
                0, 1 << 30, -1, -128, 127]
        with pytest.raises(RuntimeFailure) as e:
            h.call("cortex_m::quantized_add.out", args, h.tensor(np.zeros((2, 3), np.int8)))
    finally:
        log.install(None)
    assert e.value.code == Error.Internal
    assert lines and lines[0][0] == "F" and "assert failed" in lines[0][1]


def test_softmax_wrong_output_zero_point():
    h = Harness()
    args = [h.tensor(np.zeros((2, 4), np.int8)), -1, 0, 0, 1 << 30, 20, -100]
    with pytest.raises(RuntimeFailure) as e:
        h.call("cortex_m::softmax.out", args, h.tensor(np.zeros((2, 4), np.int8)))
    assert e.value.code == Error.InvalidArgument


def test_avgpool_output_size_check():
    h = Harness()
    args = [h.tensor(np.zeros((1, 2, 6, 6), np.int8), True), h.ints([2, 2]), h.ints([2, 2]), h.ints([0, 0]), False,
            0, 1 << 30, 0, h.tensor(np.zeros(0, np.int8))]
    with pytest.raises(RuntimeFailure) as e:
        h.call("cortex_m::quantized_avg_pool2d.out", args, h.tensor(np.zeros((1, 2, 4, 4), np.int8), True))
    assert e.value.code == Error.InvalidArgument


def test_transpose_rank2_always_swaps():
    """arm_transpose_s8 transposes a 2-D tensor whatever the permutation."""
    h = Harness()
    x = np.arange(12, dtype=np.int8).reshape(3, 4)
    got = h.call("cortex_m::transpose.out", [h.tensor(x), h.ints([1, 0])], h.tensor(np.zeros((4, 3), np.int8)))
    np.testing.assert_array_equal(got, x.T)


def test_max_pool_activation_clamp_and_zero_points():
    h = Harness()
    x = np.array([[[[-100, 50], [20, 120]]]], np.int8)
    args = [h.tensor(x, True), h.ints([2, 2]), h.ints([1, 1]), h.ints([0, 0]), h.ints([1, 1]), False, 3, 3, -10, 100]
    got = h.call("cortex_m::quantized_max_pool2d.out", args, h.tensor(np.zeros((1, 1, 1, 1), np.int8), True))
    assert got.item() == 100
    args[7] = 4  # input and output zero points must match
    with pytest.raises(RuntimeFailure):
        h.call("cortex_m::quantized_max_pool2d.out", args, h.tensor(np.zeros((1, 1, 1, 1), np.int8), True))


def test_work_is_reported():
    _, _, h = run_case("conv_3x3_pad")
    assert h.bus.work_done["kernel.quantized_conv2d"] == 1 * 7 * 6 * 5 * 3 * 3 * 3
