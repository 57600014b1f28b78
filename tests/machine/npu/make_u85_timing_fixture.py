#!/usr/bin/env python3
"""Regenerate tests/data/u85_vela_cycles.json: Vela 5.1's own Ethos-U85 cycle estimates for small one-operator
TFLite models, the reference of tests/machine/npu/test_timing_u85.py.

Each model (built with the TFLM tests' ``tflite_builder``) is compiled with Vela 5.1 for every U85 MAC
configuration with ``--system-config Ethos_U85_SYS_DRAM_Mid --memory-mode Sram_Only --enable-debug-db
--verbose-performance``; from the debug database (tables ``perf``, ``perf_debug``, ``perf_debug_main``,
``perf_debug_wd``, read with ``tools/vela_per_op.py``'s parser) each scheduled operation's shapes, data types,
kernel, block configuration (IFM block, OFM block, OFM micro-block, traversal) and Vela's MAC, AO, command and
total cycles are kept, with the driver payload Vela wrote (``--output-format raw``, base64).  The tests rebuild
each operation as an ``NpuOperation`` from those fields, and decode the payload's command stream, and compare.

Usage: python tests/machine/npu/make_u85_timing_fixture.py [--vela /tmp/vela51/bin/vela]
(the project's test environment has Vela 5.2; the fixture is Vela 5.1's, the version the timing model follows)
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path[:0] = [str(ROOT / "tests" / "firmware" / "tflm"), str(ROOT)]

from tflite_builder import Op, T, build  # noqa: E402

from tools.vela_per_op import _tables  # noqa: E402

OUT = ROOT / "tests" / "data" / "u85_vela_cycles.json"
ACCELS = ("ethos-u85-128", "ethos-u85-256", "ethos-u85-512", "ethos-u85-1024", "ethos-u85-2048")
SYSTEM_CONFIG, MEMORY_MODE = "Ethos_U85_SYS_DRAM_Mid", "Sram_Only"


def _q(name, shape, scale=0.05, zp=0, dtype="int8"):
    return T(name, shape, dtype, scale=[scale], zero_point=[zp if dtype == "int8" else 0])


def conv(name, h, w, cin, cout, kh, kw, stride=1, padding=1, act=0, dtype="int8", seed=1):
    r = np.random.default_rng(seed)
    wt = r.integers(-127, 128, (cout, kh, kw, cin), dtype=np.int8)
    bdt = "int64" if dtype == "int16" else "int32"
    bias = r.integers(-1000, 1000, (cout,)).astype(np.int64 if dtype == "int16" else np.int32)
    oh = -(-h // stride) if padding == 0 else (h - kh) // stride + 1
    ow = -(-w // stride) if padding == 0 else (w - kw) // stride + 1
    ts = [_q("x", [1, h, w, cin], 0.05, -2, dtype), T("w", [cout, kh, kw, cin], "int8", wt, [0.01] * cout, [0] * cout),
          T("b", [cout], bdt, bias, [0.0005] * cout, [0] * cout), _q("y", [1, oh, ow, cout], 0.1, 1, dtype)]
    ops = [Op("CONV_2D", ["x", "w", "b"], ["y"], ("Conv2DOptions", {
        "Padding": padding, "StrideW": stride, "StrideH": stride, "FusedActivationFunction": act,
        "DilationWFactor": 1, "DilationHFactor": 1}))]
    return name, build(ts, ops, ["x"], ["y"])


def depthwise(name, h, w, c, k, stride=1, seed=2):
    r = np.random.default_rng(seed)
    wt = r.integers(-127, 128, (1, k, k, c), dtype=np.int8)
    bias = r.integers(-1000, 1000, (c,), dtype=np.int32)
    oh, ow = -(-h // stride), -(-w // stride)
    ts = [_q("x", [1, h, w, c], 0.06, 2), T("w", [1, k, k, c], "int8", wt, [0.01] * c, [0] * c, qdim=3),
          T("b", [c], "int32", bias, [0.0006] * c, [0] * c), _q("y", [1, oh, ow, c], 0.1, -1)]
    ops = [Op("DEPTHWISE_CONV_2D", ["x", "w", "b"], ["y"], ("DepthwiseConv2DOptions", {
        "Padding": 0, "StrideW": stride, "StrideH": stride, "DepthMultiplier": 1, "FusedActivationFunction": 0,
        "DilationWFactor": 1, "DilationHFactor": 1}))]
    return name, build(ts, ops, ["x"], ["y"])


def pool(name, kind, h, w, c, f, stride):
    oh, ow = (h - f) // stride + 1, (w - f) // stride + 1
    ts = [_q("x", [1, h, w, c], 0.1, -5), _q("y", [1, oh, ow, c], 0.1, -5)]
    ops = [Op(kind, ["x"], ["y"], ("Pool2DOptions", {"Padding": 1, "StrideW": stride, "StrideH": stride,
                                                    "FilterWidth": f, "FilterHeight": f,
                                                    "FusedActivationFunction": 0}))]
    return name, build(ts, ops, ["x"], ["y"])


def binary(name, op, shape, shape2=None, dtype="int8"):
    ts = [_q("x", shape, 0.1, -3, dtype), _q("y", shape2 or shape, 0.23, 5, dtype), _q("z", shape, 0.15, 1, dtype)]
    opts = (f"{op.title()}Options", {"FusedActivationFunction": 0})
    return name, build(ts, [Op(op, ["x", "y"], ["z"], opts)], ["x", "y"], ["z"])


def fully_connected(name, n_in, n_out, seed=4):
    r = np.random.default_rng(seed)
    wt = r.integers(-127, 128, (n_out, n_in), dtype=np.int8)
    bias = r.integers(-2000, 2000, (n_out,), dtype=np.int32)
    ts = [_q("x", [1, n_in], 0.05, 4), T("w", [n_out, n_in], "int8", wt, [0.013], [0]),
          T("b", [n_out], "int32", bias, [0.05 * 0.013], [0]), _q("y", [1, n_out], 0.3, -7)]
    ops = [Op("FULLY_CONNECTED", ["x", "w", "b"], ["y"], ("FullyConnectedOptions", {"FusedActivationFunction": 0}))]
    return name, build(ts, ops, ["x"], ["y"])


def models():
    return [
        conv("conv1x1_c64", 16, 16, 64, 64, 1, 1),
        conv("conv1x1_c32", 16, 16, 32, 48, 1, 1),
        conv("conv1x1_c96_odd", 10, 14, 96, 40, 1, 1),
        conv("conv3x3_c32", 16, 16, 32, 48, 3, 3, padding=0),
        conv("conv3x3_s2_c16", 17, 17, 16, 24, 3, 3, stride=2, padding=0),
        conv("conv2x3_c64", 12, 12, 64, 32, 2, 3),
        conv("conv1x10_c64", 8, 20, 64, 32, 1, 10),
        conv("conv9x9_c8", 16, 16, 8, 16, 9, 9),
        conv("conv3x3_relu", 16, 16, 32, 32, 3, 3, padding=0, act=1),
        conv("conv1x1_int16", 16, 16, 32, 32, 1, 1, dtype="int16"),
        fully_connected("fc256x64", 256, 64),
        depthwise("dw3x3_c32", 16, 16, 32, 3),
        depthwise("dw5x5_s2_c16", 17, 17, 16, 5, stride=2),
        pool("maxpool3x3_s2", "MAX_POOL_2D", 17, 17, 32, 3, 2),
        pool("avgpool2x2_s2", "AVERAGE_POOL_2D", 16, 16, 16, 2, 2),
        binary("add_16x16x32", "ADD", [1, 16, 16, 32]),
        binary("mul_16x16x32", "MUL", [1, 16, 16, 32]),
        binary("add_bcast_c", "ADD", [1, 16, 16, 32], [1, 1, 1, 32]),
        binary("add_int16", "ADD", [1, 16, 16, 32], dtype="int16"),
    ]


def _ints(row, prefix):
    return [int(float(row.get(f"{prefix}_{a}") or 0)) for a in "hwc"]


def parse(xml: str) -> list:
    t = _tables(xml)
    main = {r["id"]: r for r in t.get("perf_debug_main", [])}
    dbg = {r["id"]: r for r in t.get("perf_debug", [])}
    wd = {r["id"]: r for r in t.get("perf_debug_wd", [])}
    ops = []
    for r in t.get("perf", []):
        i = r["id"]
        m, d = main.get(i, {}), dbg.get(i, {})
        num = (lambda v: int(float(v)) if v not in (None, "") else None)
        ops.append({
            "operator": r["operator"], "op_cycles": num(r["op_cycles"]), "npu_cycles": num(r["npu_cycles"]),
            "macs": num(r["mac_count"]),
            "mac_cycles": num(m.get("mac_cycles")), "ao_cycles": num(m.get("ao_cycles")),
            "cmd_cycles": num(m.get("cmd_cycles")), "traversal": m.get("traversal", ""),
            "ifm_block": _ints(m, "ifm_block"), "ofm_block": _ints(m, "ofm_block"),
            "ofm_ublock": _ints(m, "ofm_ublock"),
            "ifm": _ints(d, "ifm_shape"), "ifm2": _ints(d, "ifm2_shape"), "ofm": _ints(d, "ofm_shape"),
            "dtypes": [d.get("ifm_dtype", ""), d.get("ifm2_dtype", ""), d.get("ofm_dtype", "")],
            "formats": [d.get("ifm_format", ""), d.get("ifm2_format", ""), d.get("ofm_format", "")],
            "kernel": {k: num(d.get(f"kernel_{k}")) for k in (
                "size_x", "size_y", "stride_x", "stride_y", "dilation_x", "dilation_y", "padding_T", "padding_B",
                "padding_L", "padding_R")},
            "weight_format": d.get("weight_format", ""), "weight_total_bytes": num(d.get("weight_total_bytes")),
            "wd_cycles": num(wd.get(i, {}).get("wd_cycles")),
        })
    return ops


def run(vela: str, name: str, data: bytes, accel: str, ini: Path) -> dict:
    """{"ops": the debug database's operations, "payload": base64 of the driver payload (COP1 + stream)}."""
    with tempfile.TemporaryDirectory(prefix="u85-fixture-") as tmp:
        src = Path(tmp) / f"{name}.tflite"
        src.write_bytes(data)
        out = Path(tmp) / "out"
        cmd = [vela, str(src), "--accelerator-config", accel, "--system-config", SYSTEM_CONFIG, "--memory-mode",
               MEMORY_MODE, "--config", str(ini), "--output-format", "raw", "--enable-debug-db",
               "--verbose-performance", "--output-dir", str(out)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {p.stderr[-400:]}")
        payload = np.load(next(out.glob("*_vela.npz")), allow_pickle=True)["cmd_data"].tobytes()
        return {"ops": parse(next(out.glob("*_debug.xml")).read_text()),
                "payload": base64.b64encode(payload).decode("ascii")}


def dump(doc: dict) -> str:
    """The fixture as JSON with one operation per line."""
    one = (lambda v: json.dumps(v, sort_keys=True))
    lines = ["{", f' "memory_mode": {one(doc["memory_mode"])},', f' "system_config": {one(doc["system_config"])},',
             f' "vela": {one(doc["vela"])},', ' "cases": {']
    names = sorted(doc["cases"])
    for i, name in enumerate(names):
        lines.append(f"  {one(name)}: {{")
        accels = sorted(doc["cases"][name])
        for j, accel in enumerate(accels):
            r = doc["cases"][name][accel]
            ops = ",\n     ".join(one(o) for o in r["ops"])
            lines.append(f"   {one(accel)}: {{\n    \"ops\": [\n     {ops}],\n    \"payload\": {one(r['payload'])}}}"
                         + ("," if j < len(accels) - 1 else ""))
        lines.append("  }" + ("," if i < len(names) - 1 else ""))
    lines += [" }", "}"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vela", default="/tmp/vela51/bin/vela")
    args = ap.parse_args(argv)
    ver = subprocess.run([args.vela, "--version"], capture_output=True, text=True).stdout.strip()
    py = Path(args.vela).resolve().parent / "python"
    ini = Path(subprocess.run([str(py), "-c", "import ethosu, os; print(os.path.join(ethosu.__path__[0], "
                                              "'config_files', 'Arm', 'vela.ini'))"],
                              capture_output=True, text=True).stdout.strip())
    cases = {}
    for name, data in models():
        cases[name] = {accel: run(args.vela, name, data, accel, ini) for accel in ACCELS}
        print(name, {a: [o["mac_cycles"] for o in r["ops"]] for a, r in cases[name].items()})
    doc = {"vela": ver, "system_config": SYSTEM_CONFIG, "memory_mode": MEMORY_MODE, "cases": cases}
    OUT.write_text(dump(doc))
    print(f"wrote {OUT}: {len(cases)} models x {len(ACCELS)} configurations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
