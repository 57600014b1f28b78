"""Ethos-U85 weight and scale streams against Vela: small TFLite models compiled for ethos-u85-128..2048, their
weight/scale streams and block configuration read back from the command stream, unpacked to the model's
weights; the numba traversal against the numpy one; malformed streams."""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ethosu.vela")

from ethosu import regor
from ethosu.vela import vela as vela_cli

from fvp.machine.npu.arch import get_arch
from fvp.machine.npu.command_stream import parse_driver_payload
from fvp.machine.npu.mlw import MlwError, decode_mlw
import fvp.machine.npu.u85.weights as wu85
from fvp.machine.npu.u85.weights import (decode_fwd, decode_scales as decode_scales_u85,
                                         decode_weights as decode_weights_u85, scale_entries as scale_entries_u85,
                                         unpack_weights as unpack_weights_u85,
                                         weight_stream_length as weight_stream_length_u85)

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "firmware" / "tflm"))  # tflite_builder
from tflite_builder import Op, T, build

# ---- The few U85 commands these tests read: test-local constants from Vela 5.1 ethos_u85_interface.hpp
# (cmd0_opcode / cmd1_opcode, and the bit fields of npu_set_kernel_stride_t, npu_set_acc_format_t,
# npu_set_weight_format_t, npu_set_ifm_precision_t). A command word is opcode[9:0], control[15:14]
# (1: a 32-bit payload word follows), param[31:16].
NPU_OP_CONV, NPU_OP_DEPTHWISE = 2, 3
NPU_SET_IFM_DEPTH_M1, NPU_SET_IFM_PRECISION = 260, 261      # precision: activation_precision bits 3:2
NPU_SET_OFM_DEPTH_M1, NPU_SET_OFM_BLK_DEPTH_M1 = 275, 279
NPU_SET_KERNEL_WIDTH_M1, NPU_SET_KERNEL_HEIGHT_M1, NPU_SET_KERNEL_STRIDE = 288, 289, 290
NPU_SET_ACC_FORMAT, NPU_SET_WEIGHT_FORMAT = 292, 302
NPU_SET_WEIGHT_BASE, NPU_SET_WEIGHT_LENGTH, NPU_SET_SCALE_BASE, NPU_SET_SCALE_LENGTH = 32, 33, 34, 35
NPU_SET_WEIGHTn = ((32, 33), (144, 145), (146, 147), (148, 149))  # WEIGHT_BASE/LENGTH, WEIGHT1..3_BASE/LENGTH
MICROBLOCK = {0: (1, 1), 1: (1, 2), 2: (1, 4), 3: (2, 2), 4: (2, 4), 5: (4, 4)}   # enum microblock: (h, w)

ACCELERATORS = ["ethos-u85-128", "ethos-u85-256", "ethos-u85-512", "ethos-u85-1024", "ethos-u85-2048"]


# ---------------------------------------------------------------------------------------------------------------
# models

@dataclass(frozen=True)
class Case:
    kind: str            # conv, dw, fc
    cin: int
    cout: int
    k: tuple = (1, 1)    # kernel (h, w)
    stride: int = 1
    dilation: int = 1
    dtype: str = "int8"  # IFM/OFM type
    weights: str = "random"   # random, sparse (2:4 on input channels), lut2 (4 values), lut4 (9 values)
    zero_point: int = 0  # weight zero point
    big_bias: bool = False


CASES = {
    "conv3x3_3to17": Case("conv", 3, 17, (3, 3)),
    "conv1x1_33to7": Case("conv", 33, 7),
    "conv1x1_96to40": Case("conv", 96, 40),
    "conv5x5_s2_16to32": Case("conv", 16, 32, (5, 5), stride=2),
    "conv3x3_d2_20to24": Case("conv", 20, 24, (3, 3), dilation=2),
    "conv7x7_s2_8to16": Case("conv", 8, 16, (7, 7), stride=2),
    "conv5x5_s2_64to16": Case("conv", 64, 16, (5, 5), stride=2),      # depth-first: the stride is no phase
    "conv9x9_12to10": Case("conv", 12, 10, (9, 9)),
    "conv3x5_s3_10to6": Case("conv", 10, 6, (3, 5), stride=3),
    "conv3x3_int16_5to9": Case("conv", 5, 9, (3, 3), dtype="int16", big_bias=True),
    "conv1x1_int16_40to24": Case("conv", 40, 24, dtype="int16"),
    "conv5x5_zp_16to32": Case("conv", 16, 32, (5, 5), zero_point=-20),
    "conv3x3_lut2": Case("conv", 32, 48, (3, 3), weights="lut2"),
    "conv3x3_lut4": Case("conv", 32, 48, (3, 3), weights="lut4"),
    "conv1x1_lut2": Case("conv", 32, 48, weights="lut2"),
    "conv3x3_sparse": Case("conv", 64, 64, (3, 3), weights="sparse"),
    "conv1x1_sparse": Case("conv", 128, 64, weights="sparse"),
    "conv5x5_sparse": Case("conv", 32, 32, (5, 5), weights="sparse"),  # 25 elements: rounded to 30
    "conv3x3_sparse_int16": Case("conv", 64, 64, (3, 3), dtype="int16", weights="sparse"),
    "dw3x3_19": Case("dw", 19, 19, (3, 3), big_bias=True),
    "dw3x3_s2_int16_19": Case("dw", 19, 19, (3, 3), stride=2, dtype="int16"),
    "dw5x5_d2_40": Case("dw", 40, 40, (5, 5), dilation=2),
    "dw3x3_int16_33": Case("dw", 33, 33, (3, 3), dtype="int16"),
    "fc_70to40": Case("fc", 70, 40),
    "fc_int16_70to40": Case("fc", 70, 40, dtype="int16"),
    "fc_sparse_256to128": Case("fc", 256, 128, weights="sparse"),
}

IN_SCALE, OUT_SCALE, H, W = 0.05, 0.1, 16, 16


def _weights(case: Case, rng, shape) -> np.ndarray:
    if case.weights == "lut2":
        return rng.choice(np.array([-3, 0, 5, 7], np.int8), shape)
    if case.weights == "lut4":
        return rng.choice(np.array([-3, 0, 5, 7, 1, 2, -9, 100, 4], np.int8), shape)
    if case.weights != "sparse":
        return rng.integers(-128, 128, shape).astype(np.int8)
    w = rng.integers(1, 128, shape).astype(np.int8) * rng.choice(np.array([-1, 1], np.int8), shape)
    g = w.reshape(shape[:-1] + (shape[-1] // 4, 4))   # two zeros in every 4 input channels, the rest in
    np.put_along_axis(g, np.argsort(rng.random(g.shape), axis=-1)[..., :2], 0, axis=-1)   # -127..127 (Vela)
    w = g.reshape(shape)
    return w


@cache
def model(name: str):
    """(tflite bytes, W[o, ky, kx, i] int32 after the zero point, bias int64, effective scale per channel)."""
    case = CASES[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    kh, kw = case.k
    cout, cin = case.cout, case.cin
    wide = case.dtype == "int16"
    bias = rng.integers(-5000, 5000, cout).astype(np.int64)
    if case.big_bias:
        bias[:2] = [-(1 << 47), (1 << 47) - 1] if wide else [-(1 << 31), (1 << 31) - 1]
    bdt = "int64" if wide else "int32"
    ws = [0.004 + 0.0005 * c for c in range(cout)]
    tb = T("b", [cout], bdt, bias.astype(np.int64 if wide else np.int32), [IN_SCALE * s for s in ws], [0] * cout)
    x_shape = [1, cin] if case.kind == "fc" else [1, H, W, cin]
    oh = (H - (kh - 1) * case.dilation - 1) // case.stride + 1
    ow = (W - (kw - 1) * case.dilation - 1) // case.stride + 1
    y_shape = [1, cout] if case.kind == "fc" else [1, oh, ow, cout]
    tx = T("x", x_shape, case.dtype, scale=[IN_SCALE], zero_point=[0])
    ty = T("y", y_shape, case.dtype, scale=[OUT_SCALE], zero_point=[0])
    conv_opts = {"Padding": 1, "StrideW": case.stride, "StrideH": case.stride, "FusedActivationFunction": 0,
                 "DilationWFactor": case.dilation, "DilationHFactor": case.dilation}
    if case.kind == "dw":
        w = _weights(case, rng, (1, kh, kw, cout))
        tw = T("w", [1, kh, kw, cout], "int8", w, ws, [0] * cout, qdim=3)
        op = Op("DEPTHWISE_CONV_2D", ["x", "w", "b"], ["y"],
                ("DepthwiseConv2DOptions", {**conv_opts, "DepthMultiplier": 1}))
        expect = np.transpose(w, (3, 1, 2, 0))
    elif case.kind == "fc":
        w = _weights(case, rng, (cout, 1, 1, cin))
        tw = T("w", [cout, cin], "int8", w.reshape(cout, cin), ws, [0] * cout)
        op = Op("FULLY_CONNECTED", ["x", "w", "b"], ["y"], ("FullyConnectedOptions", {"FusedActivationFunction": 0}))
        expect = w
    else:
        w = _weights(case, rng, (cout, kh, kw, cin))
        if case.zero_point:
            tw = T("w", [cout, kh, kw, cin], "int8", w, [ws[0]], [case.zero_point])
            ws = [ws[0]] * cout
            tb = T("b", [cout], bdt, bias.astype(np.int32), [IN_SCALE * ws[0]], [0])
        else:
            tw = T("w", [cout, kh, kw, cin], "int8", w, ws, [0] * cout)
        op = Op("CONV_2D", ["x", "w", "b"], ["y"], ("Conv2DOptions", conv_opts))
        expect = w
    tflite = build([tx, tw, tb, ty], [op], ["x"], ["y"])
    eff = (np.float32(IN_SCALE) * np.asarray(ws, np.float32).astype(np.float64) / np.float32(OUT_SCALE))
    return tflite, expect.astype(np.int32) - case.zero_point, bias, eff        # TFLite stores float32 scales


# ---------------------------------------------------------------------------------------------------------------
# Vela

@contextlib.contextmanager
def _keep_compiled_model():
    """Vela's CLI hands the model to ``ethosu.regor.compile``; keep what it returns (the raw output format's
    npz stores bytes as numpy strings, which drop trailing zero bytes)."""
    got = []
    real = regor.compile

    def compile_and_keep(*args, **kwargs):
        m = real(*args, **kwargs)
        got.append(m)
        return m

    regor.compile = compile_and_keep
    try:
        yield got
    finally:
        regor.compile = real


@cache
def vela_u85(name: str, accelerator: str):
    """Compile a case with Vela's command line, in process, with ExecuTorch's U85 defaults (Arm/vela.ini,
    Ethos_U85_SYS_DRAM_Mid, Sram_Only, raw output); returns (command-stream words, read-only data)."""
    import ethosu

    ini = next(Path(b) / "config_files" / "Arm" / "vela.ini" for b in ethosu.__path__
               if (Path(b) / "config_files" / "Arm" / "vela.ini").is_file())
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / f"{name}.tflite"
        src.write_bytes(model(name)[0])
        argv = [str(src), "--accelerator-config", accelerator, "--config", str(ini), "--system-config",
                "Ethos_U85_SYS_DRAM_Mid", "--memory-mode", "Sram_Only", "--output-format", "raw",
                "--output-dir", d]
        with _keep_compiled_model() as got, contextlib.redirect_stdout(io.StringIO()):
            assert vela_cli.main(argv) == 0
    compiled = got[-1]
    words = [int(w) for w in parse_driver_payload(bytes(compiled.command_stream)).stream]
    return words, bytes(compiled.read_only.data)


@dataclass
class VelaOp:
    params: dict         # unpack_weights_u85 keywords
    streams: list        # raw weight streams (bytes)
    scales: bytes
    acc_bits: int


def vela_ops(name: str, accelerator: str) -> list[VelaOp]:
    """The convolution and depthwise operations of a compiled case, with their weight and scale streams."""
    words, ro = vela_u85(name, accelerator)
    arch = get_arch(accelerator)
    cmd0: dict = {}         # register state: CMD0 params and CMD1 payloads (with param[7:0] as bits 39:32)
    cmd1: dict = {}
    ops = []
    i = 0
    while i < len(words):
        w = words[i]
        code, param = w & 0x3FF, w >> 16
        if (w >> 14) & 3 == 1:
            cmd1[code] = words[i + 1] | (param & 0xFF) << 32
            i += 2
            continue
        i += 1
        if code not in (NPU_OP_CONV, NPU_OP_DEPTHWISE):
            cmd0[code] = param
            continue
        ks = cmd0.get(NPU_SET_KERNEL_STRIDE, 0)
        dil_x, dil_y = (ks >> 3 & 1) + 1, (ks >> 4 & 1) + 1
        acc = cmd0.get(NPU_SET_ACC_FORMAT, 0)
        wf = cmd0.get(NPU_SET_WEIGHT_FORMAT, 0)
        if code == NPU_OP_DEPTHWISE:
            traversal = "depthwise"
        else:
            traversal = "part_kernel_first" if ks >> 2 & 1 else "depth_first"
        params = dict(
            ofm_depth=cmd0[NPU_SET_OFM_DEPTH_M1] + 1, ifm_depth=cmd0[NPU_SET_IFM_DEPTH_M1] + 1,
            kernel_h=cmd0[NPU_SET_KERNEL_HEIGHT_M1] // dil_y + 1, kernel_w=cmd0[NPU_SET_KERNEL_WIDTH_M1] // dil_x + 1,
            dilation_y=dil_y, dilation_x=dil_x, stride_x=(ks & 1) + 2 * (ks >> 6 & 1) + 1,
            stride_y=(ks >> 1 & 1) + 2 * (ks >> 9 & 1) + 1, ofm_block_depth=cmd0[NPU_SET_OFM_BLK_DEPTH_M1] + 1,
            ofm_ublock=next(u for u in arch.microarch.ofm_ublocks if tuple(u[:2]) == MICROBLOCK[acc >> 8 & 7]),
            traversal=traversal, ifm_bits=8 << (cmd0.get(NPU_SET_IFM_PRECISION, 0) >> 2 & 3), macs=arch.macs,
            cores=arch.cores, weight_format="FWD" if wf & 1 else "SWD", sparse=bool(wf >> 4 & 1))
        n_streams = 1 if params["weight_format"] == "FWD" else arch.cores
        streams = [ro[cmd1[base]:cmd1[base] + cmd1[length]] for base, length in NPU_SET_WEIGHTn[:n_streams]]
        scales = ro[cmd1[NPU_SET_SCALE_BASE]:cmd1[NPU_SET_SCALE_BASE] + cmd1[NPU_SET_SCALE_LENGTH]]
        ops.append(VelaOp(params, streams, scales, 48 if acc & 3 == 1 else 32))
    return ops


def fwd_mode(stream: bytes) -> str:
    return "raw" if stream[0] & 1 else "lut2" if stream[0] & 2 else "lut4"


# ---------------------------------------------------------------------------------------------------------------
# against Vela

@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("name", list(CASES))
def test_weights_round_trip_vela(name, accelerator):
    _, expect, _, _ = model(name)
    ops = vela_ops(name, accelerator)
    assert len(ops) == 1
    op = ops[0]
    got = decode_weights_u85(op.streams, **op.params)
    assert got.dtype == np.int32 and got.shape == expect.shape
    np.testing.assert_array_equal(got, expect, err_msg=str(op.params))
    # the traversal length is the stream's: SWD streams decode to exactly that many values, and an FWD stream
    # is its 32-byte header and one code per value, padded to 32 bytes
    need = weight_stream_length_u85(**op.params)
    if op.params["weight_format"] == "SWD":
        assert [len(decode_mlw(s)) for s in op.streams] == [need] * op.params["cores"]
    else:
        width = {"raw": 8, "lut2": 2, "lut4": 4}[fwd_mode(op.streams[0])]
        assert len(op.streams[0]) == -(-(32 + -(-need * width // 8)) // 32) * 32
    # both traversal builders
    for jit in (False, True):
        decoded = ([decode_fwd(op.streams[0], need)] if op.params["weight_format"] == "FWD"
                   else [decode_mlw(s) for s in op.streams])
        np.testing.assert_array_equal(unpack_weights_u85(decoded, **op.params, jit=jit), expect)


@pytest.mark.parametrize("accelerator", ["ethos-u85-128", "ethos-u85-512", "ethos-u85-2048"])
@pytest.mark.parametrize("name", list(CASES))
def test_scales_vela(name, accelerator):
    _, _, bias, eff = model(name)
    op = vela_ops(name, accelerator)[0]
    case = CASES[name]
    assert op.acc_bits == (48 if case.dtype == "int16" else 32)
    n = scale_entries_u85(op.params["ofm_depth"], op.params["ofm_ublock"][2])
    assert len(op.scales) == -(-n * 10 // 16) * 16                  # SCALE_LENGTH: n entries, 16-byte rounded
    b, s, sh = decode_scales_u85(op.scales, n, op.acc_bits)
    assert b.dtype == np.int64 and s.dtype == np.int64 and sh.dtype == np.int32
    c = case.cout
    np.testing.assert_array_equal(b[:c], bias)
    bits = 31 if op.acc_bits == 32 else 15                        # scale width
    assert np.all((s[:c] >= 1 << (bits - 1)) & (s[:c] < 1 << bits))
    np.testing.assert_allclose(s[:c] / 2.0 ** sh[:c], eff, rtol=2.0 ** (2 - bits))
    assert not b[c:].any() and not s[c:].any() and not sh[c:].any()   # padding entries are zero


def test_vela_cases_cover_every_format():
    """Every format and traversal variant Vela emits by default for U85 occurs among the cases above."""
    seen = set()
    for name in CASES:
        for accelerator in ACCELERATORS:
            for op in vela_ops(name, accelerator):
                p = op.params
                seen.add((p["traversal"], p["weight_format"], p["sparse"]))
                seen.add(("cores", p["cores"] > 1, p["weight_format"]))
                seen.add(("acc", op.acc_bits))
                seen.add(("ublock", p["ofm_ublock"][2]))
                if p["weight_format"] == "FWD":
                    seen.add(("fwd", fwd_mode(op.streams[0]), op.streams[0][13] != 0))   # zero adjust
                if p["traversal"] == "depthwise":
                    seen.add(("dw_pad", wu85._layout(*_layout_args(p))[0][14]))
                if p["kernel_h"] > 8 // p["dilation_y"]:
                    seen.add(("sub_kernels", p["traversal"]))
                if p["stride_y"] > 1:
                    seen.add(("stride", p["traversal"]))
    expected = {
        ("depth_first", "SWD", False), ("depth_first", "FWD", False), ("depth_first", "SWD", True),
        ("depth_first", "FWD", True), ("part_kernel_first", "SWD", False), ("part_kernel_first", "FWD", False),
        ("part_kernel_first", "SWD", True), ("part_kernel_first", "FWD", True), ("depthwise", "SWD", False),
        ("cores", True, "SWD"), ("cores", True, "FWD"), ("cores", False, "SWD"), ("cores", False, "FWD"),
        ("acc", 32), ("acc", 48), ("ublock", 8), ("ublock", 16), ("ublock", 32), ("ublock", 64),
        ("fwd", "raw", False), ("fwd", "raw", True), ("fwd", "lut2", False), ("fwd", "lut4", False),
        ("dw_pad", 0), ("dw_pad", 2), ("dw_pad", 6), ("sub_kernels", "part_kernel_first"),
        ("sub_kernels", "depthwise"), ("stride", "part_kernel_first"), ("stride", "depthwise"),
        ("stride", "depth_first"),
    }
    assert expected <= seen, sorted(expected - seen, key=str)


def _layout_args(p):
    return (p["ofm_depth"], p["ifm_depth"], p["kernel_h"], p["kernel_w"], p["dilation_y"], p["dilation_x"],
            p["stride_y"], p["stride_x"], p["ofm_block_depth"], None, p["ofm_ublock"], p["traversal"],
            p["ifm_bits"], p["macs"], p["cores"], p["weight_format"], p["sparse"])


# ---------------------------------------------------------------------------------------------------------------
# numpy and numba traversals

CONFIGS = {128: ([(1, 2, 8), (1, 1, 16)], 1), 256: ([(1, 2, 16), (1, 4, 8), (2, 2, 8)], 1),
           512: ([(2, 2, 16), (1, 4, 16)], 2), 1024: ([(2, 2, 32), (1, 4, 32), (2, 4, 16)], 4),
           2048: ([(2, 2, 64), (1, 4, 64), (4, 4, 16)], 4)}


def random_layout(rng):
    macs = int(rng.choice(list(CONFIGS)))
    ublocks, cores = CONFIGS[macs]
    ublock = ublocks[rng.integers(len(ublocks))]
    traversal = ["depth_first", "part_kernel_first", "depthwise"][rng.integers(3)]
    sparse = traversal != "depthwise" and rng.random() < 0.3
    fmt = "FWD" if traversal != "depthwise" and rng.random() < 0.4 else "SWD"
    return dict(ofm_depth=int(rng.integers(1, 90)), ifm_depth=int(rng.integers(1, 150)),
                kernel_h=int(rng.choice([1, 2, 3, 5, 9, 11])), kernel_w=int(rng.choice([1, 3, 4, 9])),
                dilation_y=int(rng.integers(1, 3)), dilation_x=int(rng.integers(1, 3)),
                stride_y=int(rng.integers(1, 4)), stride_x=int(rng.integers(1, 4)),
                ofm_block_depth=int(ublock[2] * rng.integers(1, 5)), ofm_ublock=ublock, traversal=traversal,
                ifm_bits=int(rng.choice([8, 16])), macs=macs, cores=cores, weight_format=fmt, sparse=sparse)


@pytest.mark.parametrize("seed", range(4))
def test_numba_traversal_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        params = random_layout(rng)
        p, fast = wu85._layout(*_layout_args(params))
        maps = []
        for s in range(params["cores"]):
            a = wu85._index_map_numpy(p, s)
            b = wu85._index_map(p, s, jit=True)
            np.testing.assert_array_equal(a, b, err_msg=str(params))
            maps.append(a)
        total = sum(m.shape[0] for m in maps)
        assert total == weight_stream_length_u85(**params) * (1 if fast else params["cores"])
        # every weight exactly once, over all the decoders' streams
        idx = np.concatenate(maps)
        idx = np.sort(idx[idx >= 0])
        n = params["ofm_depth"] * params["kernel_h"] * params["kernel_w"] * (
            1 if params["traversal"] == "depthwise" else params["ifm_depth"])
        np.testing.assert_array_equal(idx, np.arange(n))


def test_fwd_interleaves_decoder_blocks():
    """FWD with several decoders: blocks of ofm_ublock_depth * ifm_ublock_depth * round / cores values, decoder
    by decoder (values made up so each one names its weight)."""
    params = dict(ofm_depth=20, ifm_depth=24, kernel_h=3, kernel_w=3, ofm_block_depth=32, ofm_ublock=(2, 2, 16),
                  traversal="part_kernel_first", macs=512, cores=2, weight_format="FWD")
    p, _ = wu85._layout(*_layout_args({**params, "dilation_y": 1, "dilation_x": 1, "stride_y": 1, "stride_x": 1,
                                       "ifm_bits": 8, "sparse": False}))
    maps = [wu85._index_map_numpy(p, s) for s in range(2)]
    block = 16 * 16 * 5 // 2
    inter = np.stack([m.reshape(-1, block) for m in maps], axis=1).reshape(-1)
    stream = np.where(inter >= 0, inter % 251 - 125, 0)
    got = unpack_weights_u85([stream], **params)
    np.testing.assert_array_equal(got.reshape(-1), np.arange(got.size) % 251 - 125)


# ---------------------------------------------------------------------------------------------------------------
# malformed streams and bad parameters

def _vela_op(name="conv3x3_3to17", accelerator="ethos-u85-512"):
    return vela_ops(name, accelerator)[0]


def test_short_decoded_streams_raise():
    op = _vela_op()
    decoded = [decode_mlw(s) for s in op.streams]
    need = weight_stream_length_u85(**op.params)
    padded = [np.concatenate([d, d[:5]]) for d in decoded]              # extra values are ignored
    np.testing.assert_array_equal(unpack_weights_u85(padded, **op.params), model("conv3x3_3to17")[1])
    for k in range(len(decoded)):
        short = list(decoded)
        short[k] = short[k][:need - 1]
        with pytest.raises(MlwError, match=f"weight stream {k} too short") as e:
            unpack_weights_u85(short, **op.params)
        assert e.value.kind == "cmd_parse_error" and "\n" not in str(e.value)
    with pytest.raises(MlwError, match="too short"):
        unpack_weights_u85([np.zeros(0, np.int16)] * len(decoded), **op.params)


@pytest.mark.parametrize("name,accelerator", [("conv3x3_3to17", "ethos-u85-512"),
                                              ("conv5x5_s2_16to32", "ethos-u85-256"),
                                              ("conv3x3_lut2", "ethos-u85-256"), ("conv3x3_lut4", "ethos-u85-512")])
def test_truncated_raw_streams_raise_mlw_errors(name, accelerator):
    op = _vela_op(name, accelerator)
    cuts = [0, 1, 7, 31, 32, 33, len(op.streams[0]) // 2]
    if op.params["weight_format"] == "FWD":                  # one byte short of the last code
        width = {"raw": 8, "lut2": 2, "lut4": 4}[fwd_mode(op.streams[0])]
        cuts.append(32 + -(-weight_stream_length_u85(**op.params) * width // 8) - 1)
    for cut in cuts:
        streams = [s[:cut] for s in op.streams]
        with pytest.raises(MlwError):
            decode_weights_u85(streams, **op.params)


def test_fwd_header_and_garbage():
    op = _vela_op("conv3x3_lut2", "ethos-u85-256")
    assert op.params["weight_format"] == "FWD" and fwd_mode(op.streams[0]) == "lut2"
    need = weight_stream_length_u85(**op.params)
    bad = bytearray(op.streams[0])
    bad[0] |= 3
    with pytest.raises(MlwError, match="raw mode and small LUT"):
        decode_fwd(bytes(bad), need)
    with pytest.raises(MlwError, match="truncated"):
        decode_fwd(op.streams[0][:31], 1)
    assert decode_fwd(op.streams[0][:32], 0).shape == (0,)
    rng = np.random.default_rng(3)
    for _ in range(200):                          # random bytes: values or an MlwError, nothing else
        data = rng.integers(0, 256, int(rng.integers(0, 200)), dtype=np.uint8)
        try:
            v = decode_fwd(data, int(rng.integers(0, 400)))
        except MlwError:
            continue
        assert v.dtype == np.int16 and np.all(np.abs(v.astype(np.int32)) <= 255)
    with pytest.raises(ValueError):
        decode_fwd(op.streams[0], -1)


@pytest.mark.parametrize("name,accelerator", [("conv3x3_3to17", "ethos-u85-512"), ("conv3x3_lut4", "ethos-u85-256")])
def test_corrupted_streams_give_weights_or_mlw_errors(name, accelerator):
    op = _vela_op(name, accelerator)
    rng = np.random.default_rng(5)
    for _ in range(60):
        streams = []
        for s in op.streams:
            b = np.frombuffer(s, np.uint8).copy()
            flips = rng.integers(0, b.size, int(rng.integers(1, 8)))
            b[flips] ^= rng.integers(1, 256, flips.size).astype(np.uint8)
            streams.append(b)
        try:
            w = decode_weights_u85(streams, **op.params)
        except MlwError:
            continue
        assert w.shape == model(name)[1].shape and np.all(np.abs(w) <= 255)


def test_bad_parameters():
    base = dict(ofm_depth=8, ifm_depth=8, kernel_h=3, kernel_w=3, ofm_block_depth=16, ofm_ublock=(1, 4, 8),
                traversal="depth_first", macs=256)
    n = weight_stream_length_u85(**base)
    for bad in (dict(dilation_y=3), dict(ofm_depth=0), dict(kernel_w=-1), dict(ifm_bits=12), dict(stride_x=5),
                dict(traversal="sideways"), dict(weight_format="XWD"), dict(cores=4),
                dict(traversal="depthwise", weight_format="FWD"), dict(traversal="depthwise", sparse=True),
                dict(ifm_block_depth=12)):
        with pytest.raises(ValueError):
            unpack_weights_u85([np.zeros(n, np.int16)], **{**base, **bad})
    with pytest.raises(ValueError, match="stream"):                     # SWD on 2 decoders takes 2 streams
        unpack_weights_u85([np.zeros(n, np.int16)], **{**base, "ofm_ublock": (2, 2, 16), "macs": 512, "cores": 2})
    with pytest.raises(ValueError, match="one-dimensional"):
        unpack_weights_u85([np.zeros((n, 1), np.int16)], **base)


def test_scale_entries_and_short_scales():
    assert scale_entries_u85(17, 8) == 32 and scale_entries_u85(16, 16) == 16 and scale_entries_u85(40, 64) == 64
    assert scale_entries_u85(33, 32) == 64 and scale_entries_u85(1, 8) == 16
    for acc in (32, 48):
        with pytest.raises(MlwError, match="scale stream too short") as e:
            decode_scales_u85(b"\0" * 19, 2, acc)
        assert e.value.kind == "cmd_parse_error"
        b, s, t = decode_scales_u85(b"", 0, acc)
        assert b.shape == s.shape == t.shape == (0,)
    with pytest.raises(ValueError):
        decode_scales_u85(b"\0" * 10, 1, 64)


def test_scale_reserved_bits_are_ignored():
    op = _vela_op("conv3x3_int16_5to9", "ethos-u85-256")
    n = scale_entries_u85(op.params["ofm_depth"], op.params["ofm_ublock"][2])
    clean = decode_scales_u85(op.scales, n, 48)
    raw = np.frombuffer(op.scales, np.uint8).copy()
    e = raw[:n * 10].reshape(n, 10)
    e[:, 7] |= 0x80
    e[:, 8] |= 0xC0
    e[:, 9] = 0xFF
    for a, b in zip(clean, decode_scales_u85(raw, n, 48)):
        np.testing.assert_array_equal(a, b)
