"""The NPU's int16 TANH and SIGMOID (the U55/U65's built-in functions, the U85's LUT_TANH/LUT_SIGMOID): the shared
arithmetic against TFLite's int16 kernels (the firmware's TFLite Micro port) on every int16 input at the scales
Vela programs, Vela's U85 table against the built-in one, ACTIVATION_MIN/MAX after the function, the U85
decoder, and fast == reference on random operations (numpy and numba paths)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from firmware.tflm.kernels import activations as tflm
from fvp.machine.npu.engines import fast, reference as ref
from fvp.machine.npu.engines.fast import paths
from fvp.machine.npu.descriptors import Activation, Kernel, NpuOperation, Scale
from hwdesc.sigmoid import SIGMOID_TABLE_U16

from .test_engines import _fm, random_kernel_case

TANH, SIGMOID = 3, 4
NAMES = {TANH: "TANH", SIGMOID: "SIGMOID"}
ENGINES = [ref, fast]


def vela_scale(input_scale: float, function: int) -> tuple:
    """OFM_SCALE Vela gives the 1x1 AVERAGE pool of an int16 TANH/LOGISTIC (Regor ``TanhSigmoidScale``,
    tflite_scaling.cpp): (3 << shift, 0) for an input scale 2^-12 (TANH also 2^-11), else s * 0x3000 doubled to
    [16384, 32767] with the doublings as the shift."""
    x_log2 = math.log2(input_scale)
    rounded = int(round(x_log2))
    shift = rounded + 12
    if abs(x_log2 - rounded) < 0.001 and (shift == 0 or (function == TANH and shift == 1)):
        return 3 << shift, 0
    rescale, shift = 0x3000 * input_scale, 0
    while rescale < 16384 and shift <= 30:
        shift += 1
        rescale *= 2
    return int(rescale), shift


def pool_op(function: int, m: int, s: int, n: int, lo=-32768, hi=32767, lut_slot=None, zp=0) -> NpuOperation:
    """A 1x1 AVERAGE pool over n int16 elements with OFM_SCALE (m, s) DBL and a TANH/SIGMOID activation."""
    k = Kernel(1, 1, 1, 1, 1, 1, 0, 0, 0, 0, "NONE", False, "D8X8")
    return NpuOperation(kind="POOL", offset=0, param=0, sub_op="AVERAGE", ifm=_fm("ifm", "int16", 1, 1, n, 0),
                        ofm=_fm("ofm", "int16", 1, 1, n, zp), kernel=k, ofm_scale_mode="GLOBAL",
                        ofm_scale=Scale(m, s), ofm_round_mode=0, ofm_block=(1, 1, 8),
                        activation=Activation(function, 0, lo, hi, lut_slot=lut_slot))


class _Tensor:
    def __init__(self, scale):
        self.params_scale, self.params_zero_point = scale, 0


ALL_INT16 = np.arange(-32768, 32768, dtype=np.int64)
# power-of-two scales (TFLite's special case), small ones (only the table's first points), those whose range ends
# near the table's end (255 steps: SIGMOID at 130560 / 12288 = 10.625), and large ones (mostly saturated)
SCALES = [2 ** -12, 2 ** -11, 2 ** -10, 2 ** -13, 1e-6, 1e-5, 5e-5, 1e-4, 3.24e-4, 3.3e-4, 1 / 1000, 0.002, 0.01,
          0.05, 0.1, 0.5, 1.0, 2.0, 2.6]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("function", [SIGMOID, TANH])
def test_every_int16_input_gives_tflites_int16_result(function, engine):
    """At every scale and for every int16 input: the NPU's output stage with Vela's OFM_SCALE gives what TFLite's
    int16 LOGISTIC/TANH give (the TFLite Micro port's ``logistic_int16`` / ``tanh_int16``, checked against
    LiteRT)."""
    x = ALL_INT16.reshape(1, 1, -1)
    for scale in SCALES:
        scale = float(np.float32(scale))
        m, s = vela_scale(scale, function)
        op = pool_op(function, m, s, x.shape[2])
        got = engine.run_kernel_op(op, x).ravel()
        mult, shift = tflm.int16_params(NAMES[function], _Tensor(scale), _Tensor(2.0 ** -15),
                                        (0, 1) if function == TANH else (0,))
        want = (tflm.logistic_int16 if function == SIGMOID else tflm.tanh_int16)(ALL_INT16, mult, shift)
        assert np.array_equal(got, want.astype(np.int64)), (NAMES[function], scale, m, s)


def test_the_functions_hand_computed():
    """A few points worked by hand from the table (input in units of 1/12288)."""
    seg = ref.BUILTIN_SEGMENTS
    t = SIGMOID_TABLE_U16
    y = np.array([0, 512, -512, 700, -700, 255 * 512, -255 * 512, 1 << 30, -(1 << 30)])
    # SIGMOID: table[i] << 9 (+ fraction * slope), + 2^9, >> 10; negative inputs 32768 - f(|x|)
    s700 = ((t[1] << 9) + 188 * (t[2] - t[1]) + 512) >> 10
    assert ref.builtin_function(y, "SIGMOID", seg).tolist() == [
        16384, (t[1] + 1) >> 1, 32768 - ((t[1] + 1) >> 1), s700, 32768 - s700, 32767, 1, 32767, 1]
    # TANH: a table step every 256: x = 512 is table[2] - 0x8000 exactly
    t700 = (((t[2] - 0x8000) << 8) + 188 * (t[3] - t[2]) + 128) >> 8
    assert ref.builtin_function(y, "TANH", seg).tolist() == [
        0, t[2] - 0x8000, 0x8000 - t[2], t700, -t700, 32767, -32767, 32767, -32767]


def vela_u85_table(function: int) -> np.ndarray:
    """The 2 KiB LUT Vela loads for the U85's LUT_SIGMOID/LUT_TANH (Regor ``ConvertTanhSigmoidToLUT16``): word
    256 + i, i in [-256, 256), is ``slope << 16 | base`` of the segment starting at table step i."""
    t = SIGMOID_TABLE_U16
    words = np.zeros(512, np.uint32)
    for i in range(-256, 256):
        if i >= 0:
            j0, j1 = i, min(i + 1, 255)
            v0, v1 = t[j0] - 0x8000, t[j1] - 0x8000
        else:
            j0 = 255 if i == -256 else -i
            j1 = j0 - 1 if function == SIGMOID or i != -256 else 255
            v0, v1 = 0x8000 - t[j0], 0x8000 - t[j1]
        words[256 + i] = (max(v1 - v0, 0) << 16) | (v0 & 0xFFFF)
    return words.view(np.uint8)


@pytest.mark.parametrize("function", [SIGMOID, TANH])
def test_velas_u85_table_reads_as_the_built_in_one(function):
    lut = vela_u85_table(function)
    base, slope = ref.builtin_segments(lut)
    assert np.array_equal(base, ref.BUILTIN_SEGMENTS[0]) and np.array_equal(slope, ref.BUILTIN_SEGMENTS[1])
    # and the U85's function is computed from the LUT RAM, not from the built-in table: another table, another
    # result (every engine)
    other = lut.copy().view("<u4")
    other[300] ^= 5
    x = ALL_INT16.reshape(1, 1, -1)
    op = pool_op(function, 24576, 11, x.shape[2], lut_slot=0)
    for engine in ENGINES:
        same = engine.run_kernel_op(op, x, lut=lut)
        assert np.array_equal(same, engine.run_kernel_op(dataclasses.replace(op, activation=dataclasses.replace(
            op.activation, lut_slot=None)), x))
        assert not np.array_equal(same, engine.run_kernel_op(op, x, lut=other.view(np.uint8)))


@pytest.mark.parametrize("engine", ENGINES)
def test_activation_min_max_bound_the_functions_result(engine):
    """Vela's LSTM lowering clamps a sigmoid to TFLite's reachable outputs [11, 32757] through ACTIVATION_MIN/MAX:
    the bounds apply to the function's Q0.15 result, not to its input."""
    x = ALL_INT16.reshape(1, 1, -1)
    free = engine.run_kernel_op(pool_op(SIGMOID, 6, 0, x.shape[2]), x).ravel()
    got = engine.run_kernel_op(pool_op(SIGMOID, 6, 0, x.shape[2], lo=11, hi=32757), x).ravel()
    assert free.min() < 11 and free.max() > 32757
    assert np.array_equal(got, np.clip(free, 11, 32757))
    # a zero point enters before the function (the value it sees), as for a LUT [uncertain: Vela writes 0]
    shifted = engine.run_kernel_op(pool_op(SIGMOID, 6, 0, x.shape[2], zp=600), x).ravel()
    assert np.array_equal(shifted, ref.builtin_function(ALL_INT16 * 6 + 600, "SIGMOID", ref.BUILTIN_SEGMENTS))


def _with_builtin(op, lut, rng):
    function = int(rng.choice([TANH, SIGMOID]))
    lo, hi = sorted(int(v) for v in rng.integers(-40000, 40000, 2))
    slot = None
    if rng.random() < 0.4:  # the U85's table-driven form: a random table
        slot, lut = 0, rng.integers(0, 256, 2048).astype(np.uint8)
        if rng.random() < 0.5:
            lut = vela_u85_table(function)
    else:
        lut = None
    return dataclasses.replace(op, activation=Activation(function, 0, lo, hi, lut_slot=slot)), lut


@pytest.mark.parametrize("kernels", [False, True], ids=["numpy", "numba"])
def test_fast_equals_reference_with_builtin_activations(kernels, monkeypatch):
    """Random CONV/DEPTHWISE/POOL/ELEMENTWISE operations (every OFM type, rounding mode and scale) with a
    TANH/SIGMOID and random bounds; with ``kernels`` the fast engine's numba paths for every size."""
    if kernels:
        monkeypatch.setattr(paths, "_numpy_large_elements", [paths.JIT_AFTER_ELEMENTS + 1])
    n = 0
    for seed in range(160):
        rng = np.random.default_rng(5000 + seed)
        op, a, b, W, bs, lut = random_kernel_case(rng, ["CONV", "DEPTHWISE", "POOL", "ELEMENTWISE"][seed % 4])
        op, lut = _with_builtin(op, lut, rng)
        want = ref.run_kernel_op(op, a, b, W, bs, lut)
        got = fast.run_kernel_op(op, a, b, W, bs, lut)
        assert np.array_equal(got, want), (seed, op)
        n += int(np.unique(want).size > 2)
    assert n > 40  # most operations see more than their clamp bounds


def test_u85_decoder_maps_lut_sigmoid_and_lut_tanh():
    """ACTIVATION LUT_SIGMOID (11) / LUT_TANH (10) on the U85: the engines' SIGMOID/TANH with the table's slot."""
    from fvp.machine.npu.command_stream import RegisterState
    from fvp.machine.npu.u85.operations import _activation

    state = RegisterState("ethos-u85-256")
    ofm = _fm("ofm", "int16", 1, 1, 1, 0)
    activation = state.isa.BY_NAME["NPU_SET_ACTIVATION"].code
    for code, name in ((11, "SIGMOID"), (10, "TANH")):
        state.values[activation] = code
        act = _activation(state, ofm, 0)
        assert act.name == name and act.builtin and act.lut_slot == 0 and act.table is None
