#!/usr/bin/env python3
"""Validate the NPU timing model: our cycles beside Vela's compile-time estimate and published FVP figures.

For every corpus program (``tests/data/corpus/*.bpte`` and the ``.pte`` files that have an Ethos-U delegate)
this runs the program on the board it was compiled for (the NPU, system config and memory mode of its Ethos-U
compile specs, as ``fvp run`` does) and
prints our NPU cycles, Vela's estimate summed over the network summaries of the program's compile log
(``<name>.log``: "NPU cycles", the memory access cycles, "Total cycles"), the ratio, what bounds our cycles,
and the AXI beats. Then it compares with the published FVP numbers (Arm's ML Embedded Evaluation Kit's
``docs/use_cases/*.md``, ExecuTorch's issues, pull requests and tutorial; each figure below names its source)
where a comparable program exists in the corpus, and says which published rows cannot be reproduced.

Nothing is hard-coded except the published reference numbers (cited); everything of ours is computed by
running the simulator. ``--fast`` runs a small subset (for the tests).

``--tflm`` runs instead only the MLEK reconstructions of ``tests/data/tflm`` (KWS MicroNet-M, AD MicroNet-M,
MobileNetV2 1.0 224: tools/make_tflm_models.py) through ``fvp run`` as MLEK runs them (the TFLite Micro image,
U55-128, Ethos_U55_High_End_Embedded, Shared_Sram): the PMU block beside MLEK's published figures, Vela's
estimate for the reconstruction and for the ML-zoo file, what differs between the two, and the wall time of
each ``fvp run``. The full run includes this section; ``--mlek-models DIR`` adds the exact ML-zoo files.

``--per-op [PROGRAM ...]`` prints instead, per network, every operation Vela scheduled with our cycles beside
Vela's per-layer estimate (tools/vela_per_op.py; docs/timing.md section 4.1).

``--u85 [DIR ...]`` runs instead every Ethos-U85 program of ``tests/data/oracle_u85`` (and of each DIR: folders
``<name>/<name>.bpte`` with the oracle builder's ``meta.json``, e.g. the full MobileNetV2 kept out of the
repository) on its Corstone-320 board, beside Vela's estimate from the compile log (``meta.json``), checks that
the cycles fall as the MAC count grows for every network compiled for several sizes, and says what the
published Corstone-320 figure is.

``--same-file PATH ...`` runs instead MLEK's published models from files the user has (nothing is fetched: ML-zoo's
``kws_micronet_m.tflite``, ``ad_medium_int8.tflite``, ``rnnoise_INT8.tflite``, ``wav2letter_pruned_int8.tflite``,
``vww4_128_128_INT8.tflite``, YOLO-Fastest's ``yolo-fastest_192_face_v4.tflite``; recognised by their SHA-256 or
name), compiled by the installed Vela, on our U55-128 with Vela's memory timing and with the FVP's timing adapters,
beside the published FVP figures (docs/timing.md section 4's same-file table).

Usage: python tools/validate_cycles.py [--fast] [--corpus DIR] [--mlek-models DIR]
       python tools/validate_cycles.py --same-file PATH [PATH ...]
       python tools/validate_cycles.py --tflm
       python tools/validate_cycles.py --per-op [PROGRAM ...]
       python tools/validate_cycles.py --u85 [DIR ...]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fvp.host.compare import run_board  # noqa: E402

FAST = ["add_u55-128.bpte", "mobilenet_v1_025_u55-128.bpte", "mobilenet_v1_025_u55-128_sramonly.bpte",
        "addint_u55.pte"]

_VELA_KEYS = {
    "NPU cycles": "npu", "SRAM Access cycles": "sram", "DRAM Access cycles": "dram",
    "On-chip Flash Access cycles": "onchip", "Off-chip Flash Access cycles": "offchip", "Total cycles": "total",
    "Neural network macs": "macs",
}

# Published figures: FVP NPU cycles from the Ethos-U PMU. Row 1: the ML Embedded Evaluation Kit's
# docs/use_cases/img_class.md (https://gitlab.arm.com/artificial-intelligence/ethos-u/ml-embedded-evaluation-kit);
# row 10: ExecuTorch PR #9830 (https://github.com/pytorch/executorch/pull/9830: "5.5M NPU cycles on mv2 when using
# Sram_Only"). The row numbers are those of NOT_REPRODUCIBLE below (rows 2-9: MLEK's other use cases,
# docs/use_cases/<name>.md).
PUBLISHED_MV2_SHARED = {
    "row": 1, "what": "MLEK img_class MobileNetV2 1.0 224 int8, Corstone-300 FVP, U55-128, "
                      "Ethos_U55_High_End_Embedded, Shared_Sram",
    "total": 7_346_172, "active": 7_345_741, "axi0_rd": 2_468_259, "axi0_wr": 1_151_319, "axi1_rd": 432_351,
}
PUBLISHED_MV2_SRAM_ONLY = {
    "row": 10, "what": "ExecuTorch MobileNetV2 (torchvision, int8), Corstone-300 FVP, U55-128, Sram_Only "
                       "(ET PR #9830)", "total": 5_500_000,
}
# ExecuTorch issue #9356 (https://github.com/pytorch/executorch/issues/9356): the add example on the Corstone-300
# FVP (U55)
PUBLISHED_ADD = {"what": "ExecuTorch add example (x + x, delegated), Corstone-300 FVP, U55 (ET issue #9356)",
                 "cycles": 411, "axi0_rd": 6}
# ExecuTorch's tutorial docs/source/tutorial-arm-ethos-u.md (2024-10..2025-09, e.g. at v0.7.0:
# https://github.com/pytorch/executorch/blob/v0.7.0/docs/source/tutorial-arm-ethos-u.md): the MobileNetV2 log
# shown after a Corstone-320 command line
PUBLISHED_TUTORIAL_MV2 = {"what": "ExecuTorch tutorial MobileNetV2 log (tutorial-arm-ethos-u.md, 2024-10..2025-09)",
                          "cycles": 5_920_305, "cntr0": 359_921, "counters": 4}
TFLM_DATA = ROOT / "tests" / "data" / "tflm"
NOT_REPRODUCIBLE = [
    ("2a", "KWS DS-CNN (older MLEK)", "a larger DS-CNN than the corpus' ds_cnn (2.66 M MACs); not the same network"),
    ("2b", "KWS MicroNet-M on Alif silicon", "network not in the corpus; hardware at 160 MHz"),
    (4, "ASR wav2letter", "not in the repository: --same-file with ML-zoo's wav2letter_pruned_int8.tflite"),
    (5, "KWS+ASR", "network not in the corpus"),
    (6, "YOLO-Fastest", "not in the repository: --same-file with yolo-fastest_192_face_v4.tflite"),
    (7, "Visual wake word", "not in the repository: --same-file with ML-zoo's vww4_128_128_INT8.tflite"),
    (8, "RNNoise", "not in the repository: --same-file with ML-zoo's rnnoise_INT8.tflite"),
    (9, "inference_runner dnn_s", "network not in the corpus"),
    (11, "MobileNetV2 on Corstone-320 / Ethos-U85", "its PMU block is a Corstone-300 Ethos-U55 run's (4 counters, "
     "U55 event names; --u85 says why), so no published U85 figure is left to compare with"),
    ("12-14", "MobileNetV2 on Alif E8 / other boards (ms, hardware)", "wall-clock incl. CPU work; no NPU cycles"),
    ("15-16", "Vela estimates in third-party docs", "Vela figures, not FVP; other networks"),
    (17, "TFLM person_detect CPU-only", "no NPU"),
    ("-", "ExecuTorch tutorial MobileNetV2 log (tutorial-arm-ethos-u.md: 5,920,305 cycles, AXI0 read 359,921)",
     "memory mode and NPU of that run are not stated, and it predates the PMU fix of ET PR #9830"),
]


def parse_vela_log(path: Path) -> dict | None:
    """Sum of every network summary in a compile log (a program with several delegates has several)."""
    if not path.is_file():
        return None
    out = {v: 0 for v in _VELA_KEYS.values()}
    n = 0
    for line in path.read_text(errors="replace").splitlines():
        for key, name in _VELA_KEYS.items():
            m = re.match(rf"\s*{re.escape(key)}\s+(\d+)", line)
            if m:
                out[name] += int(m.group(1))
                if name == "total":
                    n += 1
    if n == 0:
        return None
    out["summaries"] = n
    return out


def _fmt(n) -> str:
    return "-" if n is None else f"{int(round(n)):,}"


def _bound(run) -> str:
    tot = sum(run.bound_cycles.values()) or 1
    parts = [f"{k} {100 * v / tot:.0f}%" for k, v in run.bound_cycles.items() if v / tot >= 0.005]
    return ", ".join(parts[:3]) or "-"


def _vela_bound(v: dict) -> str:
    mem = {"Sram": v["sram"], "Dram": v["dram"], "OnChipFlash": v["onchip"], "OffChipFlash": v["offchip"]}
    name, val = max(mem.items(), key=lambda kv: kv[1])
    return "compute" if v["npu"] >= val else f"{name} (access {val:,} > NPU {v['npu']:,})"


def _u85_programs(dirs) -> list:
    """(bpte path, meta dict) of every oracle-builder folder in ``dirs``."""
    import json

    out = []
    for d in dirs:
        for m in sorted(Path(d).glob("*/meta.json")):
            bpte = m.parent / f"{m.parent.name}.bpte"
            if bpte.is_file():
                out.append((bpte, json.loads(m.read_text())))
    return out


def u85_report(dirs) -> int:
    """Our cycles beside Vela's for the Ethos-U85 programs, the MAC-size monotonicity, the published figure."""
    print("Ethos-U85 (Corstone-320) NPU cycles beside Vela 5.1's compile-time estimate (meta.json of each program)")
    hdr = f"{'program':<34} {'NPU':<15} {'memory mode':<15} {'ours':>11} {'Vela total':>11} {'ours/Vela':>9}  bound"
    print(hdr)
    print("-" * len(hdr))
    ok = True
    ratios, by_net = [], {}
    seen = set()
    for bpte, meta in _u85_programs(dirs):
        if bpte.name in seen:
            continue
        seen.add(bpte.name)
        run = run_board(bpte.read_bytes(), bpte.name, "auto")
        # a program whose quantized outputs differ from PyTorch's by more than the bundle's tolerance FAILs its
        # bundled check on any faithful model (the oracle builder measured it: meta bundled_vs_out0), as does one
        # whose stream Vela got wrong (meta bundle_check_fails says how)
        worst = max((x.get("max_abs_diff", 0) for x in meta.get("bundled_vs_out0", [])), default=0)
        expected_fail = run.result == "FAIL" and (worst > 0.01 or bool(meta.get("bundle_check_fails")))
        if not expected_fail and (run.exit_code != 0 or run.result not in ("PASS", "ok")):
            ok = False
            print(f"{bpte.stem:<34} result: {run.result} {run.error}")
        vela = (meta.get("vela_totals_from_log") or {}).get("total_cycles")
        ratio = run.npu_cycles / vela if vela else math.nan
        if vela and vela >= 10_000:
            ratios.append(ratio)
        print(f"{bpte.stem:<34} {run.variant:<15} {run.memory_mode:<15} {run.npu_cycles:>11,} "
              f"{vela or 0:>11,} {ratio:>9.2f}  {_bound(run)}")
        # the network: the oracle builder's folder name without "_u85-<MACs>" and the memory-mode tag
        net = re.sub(r"(_dedicated|_shared)?_u85-\d+$", "", bpte.stem)
        by_net.setdefault((net, run.memory_mode), []).append((int(run.variant.rsplit("-", 1)[1]),
                                                              run.npu_cycles, bpte.stem))
    if ratios:
        g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"\nours/Vela total, networks (Vela >= 10,000 cycles): {len(ratios)} programs, geometric mean {g:.2f}, "
              f"min {min(ratios):.2f}, max {max(ratios):.2f}")
    print("\nthe same network at several MAC sizes (cycles must fall as the MACs grow):")
    for (net, mode), runs in sorted(by_net.items()):
        if len(runs) < 2:
            continue
        runs.sort()
        falling = all(b[1] < a[1] for a, b in zip(runs, runs[1:]))
        ok &= falling
        steps = " > ".join(f"{macs}: {cycles:,}" for macs, cycles, _ in runs)
        print(f"  {net} {mode}: {steps}  {'monotone' if falling else 'NOT MONOTONE'}")
    p = PUBLISHED_TUTORIAL_MV2
    print(f"\npublished: {p['what']}: ethosu_pmu_cycle_cntr {p['cycles']:,}, cntr0 {p['cntr0']:,}")
    print(f"  not a Corstone-320 anchor: the log's PMU block has {p['counters']} event counters with U55 event names "
          f"(the Corstone-320 runner programs 7 on the U85's 8), so the run was a Corstone-300 Ethos-U55 build (the "
          f"counters read no external-port traffic: Sram_Only-like) of an older ExecuTorch and Vela; see "
          f"validate_cycles.py without --u85 for the U55 MobileNetV2 comparison")
    return 0 if ok else 1


_PMU_LINES = {"active": "NPU ACTIVE cycles", "idle": "NPU IDLE cycles", "total": "NPU TOTAL cycles",
              "axi0_rd": "NPU AXI0_RD_DATA_BEAT_RECEIVED beats", "axi0_wr": "NPU AXI0_WR_DATA_BEAT_WRITTEN beats",
              "axi1_rd": "NPU AXI1_RD_DATA_BEAT_RECEIVED beats", "cpu": "CPU TOTAL cycles"}


def _published_mlek(key: str) -> tuple[str, dict] | None:
    """(what, figures) of MLEK's published FVP run of a network: tools/tflite_npu.py PUBLISHED for KWS and AD,
    row 1 above for MobileNetV2 (MLEK's docs/use_cases/img_class.md)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import tflite_npu

    if key in tflite_npu.PUBLISHED:
        p = tflite_npu.PUBLISHED[key]
        return p["what"], p["fvp"]
    if key == "mobilenet_v2_1.0_224":
        p = PUBLISHED_MV2_SHARED
        return p["what"], {"active": p["active"], "idle": p["total"] - p["active"], "total": p["total"],
                           "axi0_rd": p["axi0_rd"], "axi0_wr": p["axi0_wr"], "axi1_rd": p["axi1_rd"]}
    return None


def run_tflm_fixture(data_dir: Path, name: str, rec: dict, inputs) -> tuple[dict, float, str]:
    """``fvp run`` on one fixture with its committed input: (the PMU block, wall seconds, the log)."""
    with tempfile.TemporaryDirectory(prefix="validate-tflm-") as tmp:
        import numpy as np

        np.save(Path(tmp) / "in0.npy", inputs[f"{name}/in0"])
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "fvp", "run", str(data_dir / f"{name}_vela.tflite"),
                            "-i", str(Path(tmp) / "in0.npy"), *rec["fvp_args"]], capture_output=True, text=True,
                           cwd=ROOT)
        wall = time.perf_counter() - t0
    pmu = {}
    for key, label in _PMU_LINES.items():
        m = re.search(rf"INFO - {re.escape(label)}: (\d+)", p.stdout)
        if m:
            pmu[key] = int(m.group(1))
    if p.returncode != 0 or "active" not in pmu:
        raise RuntimeError(f"{name}: fvp run exit {p.returncode}: {(p.stdout + p.stderr).strip()[-300:]}")
    return pmu, wall, p.stdout


def tflm_report(data_dir: Path = TFLM_DATA) -> int:
    """The MLEK reconstructions through ``fvp run`` beside MLEK's published FVP figures."""
    import numpy as np

    meta_path = data_dir / "models.json"
    if not meta_path.is_file():
        print(f"MLEK reconstructions: {meta_path} not found (tools/make_tflm_models.py writes it)")
        return 1
    meta = json.loads(meta_path.read_text())
    inputs = np.load(data_dir / "reference.npz")
    print("MLEK reconstructions (tests/data/tflm, tools/make_tflm_models.py) through `fvp run` (TFLite Micro image), "
          "beside MLEK's published Corstone-300 FVP figures")
    keys = ("active", "idle", "total", "axi0_rd", "axi0_wr", "axi1_rd")
    hdr = (f"  {'':<34} {'NPU ACTIVE':>11} {'IDLE':>6} {'TOTAL':>11} {'AXI0 rd':>10} {'AXI0 wr':>10} "
           f"{'AXI1 rd':>9}  wall")
    ok = True
    for name, rec in meta.items():
        pub = _published_mlek(rec.get("published") or "")
        if pub is None:
            continue
        what, fig = pub
        try:
            pmu, wall, _ = run_tflm_fixture(data_dir, name, rec, inputs)
        except RuntimeError as e:
            ok = False
            print(f"  error: {e}")
            continue
        print(f"\n{name}: {rec['target']}, {rec['system_config']}, {rec['memory_mode']}")
        print(hdr)
        print(f"  {'ours (fvp run)':<34} " + " ".join(f"{pmu.get(k, 0):>{w},}" for k, w in
                                                      zip(keys, (11, 6, 11, 10, 10, 9))) + f"  {wall:.1f} s")
        print(f"  {'published: ' + what[:23]:<34} " + " ".join(
            f"{_fmt(fig.get(k)):>{w}}" for k, w in zip(keys, (11, 6, 11, 10, 10, 9))))
        print(f"  {'ours / published':<34} " + " ".join(
            (f"{pmu[k] / fig[k]:>{w}.3f}" if fig.get(k) else f"{'-':>{w}}") for k, w in
            zip(keys, (11, 6, 11, 10, 10, 9))))
        ve, vm = rec.get("vela_estimate") or {}, rec.get("vela_estimate_mlek_file") or {}
        line = (f"  Vela {rec['versions']['vela']} estimate: reconstruction NPU {_fmt(ve.get('cycles_npu'))}, total "
                f"{_fmt(ve.get('cycles_total'))}")
        if vm:
            line += f"; the ML-zoo file NPU {_fmt(vm.get('cycles_npu'))}, total {_fmt(vm.get('cycles_total'))}"
        print(line)
        enc, orig = _fmt(ve.get("total_npu_encoded_weights")), _fmt(ve.get("total_original_weights"))
        diffs = [f"weights random (seed {rec['seed']}), not trained: Vela encodes {enc} weight bytes of {orig}"]
        if vm:
            diffs[0] += (f" (the ML-zoo file: {_fmt(vm.get('total_npu_encoded_weights'))} of "
                         f"{_fmt(vm.get('total_original_weights'))})")
        layout = rec.get("layout_vs_mlek_file")
        if layout is not None:
            diffs.append("layer layout against the ML-zoo file: " + (layout if isinstance(layout, str)
                                                                     else f"{len(layout)} differences"))
        else:
            diffs.append("layer layout from the published architecture (no ML-zoo file to compare with)")
        n_out = int(np.asarray(inputs[f"{name}/out0"]).size)
        on_npu = "SOFTMAX" in rec["source_operators"] and "SOFTMAX" not in rec["vela_operators"]
        softmax = " (SOFTMAX on the NPU)" if on_npu else ""
        diffs.append(f"{n_out} outputs, as published{softmax}; quantization scales calibrated on noise of the input "
                     f"range; the input is seeded noise "
                     f"(MLEK's published runs: its use case on sample data)")
        for d in diffs:
            print(f"  differs: {d}")
    return 0 if ok else 1


# Why each same-file figure is where it is (docs/timing.md section 4, the table of published same-file figures)
SAME_FILE_NOTES = {
    "kws_micronet_m": "compute-bound; TA1's transaction-level cap (7 x 64 B per 400 cycles) shortens the flash "
                      "weight DMAs, hidden behind compute: within 5 %",
    "ad_medium_int8": "outside 5 %: per layer our compute equals Vela's NPU estimate (0.99-1.01); the FVP is 19 % "
                      "above Vela's NPU cycles where KWS is at 1.00, and nothing public says where (docs/timing.md)",
    "rnnoise_INT8": "bound by the weights streamed from flash: TA1 passes 1.12 B/cycle (whole 64-byte transactions "
                    "against BWCAP 50 words), not Vela's 1.0",
    "yolo-fastest_192_face_v4": "mostly compute and SRAM; the flash DMAs shorten with TA1's rate: within 5 %",
    "wav2letter_pruned_int8": "",
    "vww4_128_128_INT8": "",
}


def same_file_report(paths, work_dir: str | None = None) -> int:
    """MLEK's published models, from files the user has (ML-zoo's, never fetched here), each run twice on the
    Corstone-300 U55-128 board (tools/tflite_npu.py, compiled by the installed Vela for Ethos_U55_High_End_Embedded,
    Shared_Sram): with Vela's memory timing (the timing adapters switched off with ``-C
    system_configs.Ethos_U55_High_End_Embedded.timing_adapters={}``: the model before the adapters) and with the
    FVP's timing adapters (the default), beside the published FVP figure and Vela's estimate."""
    sys.path.insert(0, str(ROOT / "tools"))
    import tflite_npu

    sc = "Ethos_U55_High_End_Embedded"
    try:
        files = tflite_npu._collect(paths)
    except tflite_npu.ToolError as e:
        print(f"same-file figures: error: {e}")
        return 1
    print("same-file figures: MLEK's models on U55-128, Ethos_U55_High_End_Embedded, Shared_Sram (NPU ACTIVE cycles; "
          "MLEK's published runs: its docs/use_cases/*.md)")
    print(f"  {'file':<26} {'Vela timing':>12} {'FVP TAs':>12} {'published':>12} {'ours/pub':>9} {'before':>7} "
          f"{'Vela est.':>11}  why")
    ok = True
    seen = set()
    with tempfile.TemporaryDirectory(prefix="validate-same-file-") as tmp:
        for src in files:
            key = tflite_npu.identify(src)
            if key is None:
                print(f"  {src.name}: not one of MLEK's published models (tools/tflite_npu.py PUBLISHED)")
                continue
            seen.add(key)
            try:  # compiled once, run twice
                model, vela = tflite_npu.read_tflite(src), None
                if not model.ethosu_ops:
                    compiled, est, _ = tflite_npu.compile_with_vela(src, Path(work_dir or tmp), "ethos-u55-128", sc,
                                                                    "Shared_Sram")
                    model, vela = tflite_npu.read_tflite(compiled), (est or {}).get("total")
                board = [f"npu.system_config={sc}", "npu.memory_mode=Shared_Sram"]
                before = tflite_npu.run_model(model, overrides=board + [f"system_configs.{sc}.timing_adapters={{}}"])
                after = tflite_npu.run_model(model, overrides=board)
            except tflite_npu.ToolError as e:
                ok = False
                print(f"  {src.name}: error: {e}")
                continue
            pub = tflite_npu.PUBLISHED[key]["fvp"]["active"]
            b, a = before.pmu_total("active"), after.pmu_total("active")
            print(f"  {src.stem[:26]:<26} {b:>12,} {a:>12,} {pub:>12,} {a / pub:>9.3f} {b / pub:>7.3f} "
                  f"{_fmt(vela):>11}  {SAME_FILE_NOTES.get(key, '')}")
    for key, p in tflite_npu.PUBLISHED.items():
        if key not in seen:
            print(f"  {key[:26]:<26} {'-':>12} {'-':>12} {p['fvp']['active']:>12,} {'-':>9} {'-':>7} {'-':>11}  "
                  f"no file given ({p['what']})")
    return 0 if ok else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fast", action="store_true", help="a small subset (for the tests)")
    ap.add_argument("--corpus", default=str(ROOT / "tests" / "data" / "corpus"), help="corpus directory")
    ap.add_argument("--mlek-models", metavar="DIR", default=None,
                    help="MLEK's .tflite models (KWS/AD MicroNet-M): same-graph anchors via tools/tflite_npu.py")
    ap.add_argument("--same-file", nargs="+", metavar="PATH", default=None,
                    help="MLEK's published models (.tflite files or directories, e.g. ML-zoo's kws_micronet_m.tflite, "
                         "ad_medium_int8.tflite, rnnoise_INT8.tflite, yolo-fastest_192_face_v4.tflite): our NPU "
                         "cycles before and with the timing adapters beside the published FVP figures")
    ap.add_argument("--per-op", action="store_true",
                    help="per-operation table against Vela's per-layer estimate (tools/vela_per_op.py)")
    ap.add_argument("--u85", nargs="*", metavar="DIR", default=None,
                    help="the Ethos-U85 programs of tests/data/oracle_u85 (and of each DIR) instead")
    ap.add_argument("--tflm", action="store_true",
                    help="only the MLEK reconstructions of tests/data/tflm through fvp run, beside MLEK's figures")
    ap.add_argument("programs", nargs="*", help="with --per-op: the programs (default: every cached one)")
    args = ap.parse_args(argv)
    if args.tflm:
        return tflm_report()
    if args.same_file:
        return same_file_report(args.same_file)
    if args.u85 is not None:
        return u85_report([ROOT / "tests" / "data" / "oracle_u85", *args.u85])
    if args.per_op:
        sys.path.insert(0, str(ROOT / "tools"))
        import vela_per_op

        return vela_per_op.main([*args.programs, "--corpus", args.corpus])
    corpus = Path(args.corpus)
    files = sorted(corpus.glob("*.bpte")) + sorted(corpus.glob("*.pte"))
    if args.fast:
        files = [f for f in files if f.name in FAST]
    print("NPU cycles of the timing model (fvp/machine/npu/timing/) beside Vela's compile-time estimate")
    print("Vela = sum over the compile log's network summaries; Vela's total is per layer max(NPU, memory access).")
    print("ours/Vela is our NPU cycles over Vela's total.  'bound' = share of our cycles by what limits them.\n")
    hdr = (f"{'program':<40} {'board':<34} {'ours':>11} {'Vela NPU':>11} {'Vela total':>11} {'ours/Vela':>9}  "
           f"{'AXI0 rd/wr beats':>19} {'AXI1 rd':>8}  bound (ours) | Vela's bound")
    print(hdr)
    print("-" * len(hdr))
    ok = True
    ratios = []
    results = {}
    skipped = []
    for f in files:
        label = "auto"  # the board of the program's compile specs (fvp/host/programs/program_board.py)
        try:
            run = run_board(f.read_bytes(), f.name, label)
        except Exception as e:  # a broken program or board: report, keep going
            ok = False
            print(f"{f.name:<40} {label:<34} error: {e}")
            continue
        if run.npu_streams == 0:
            skipped.append(f"{f.name} (no NPU delegate: {run.result})")
            continue
        results[f.name] = run
        if run.exit_code != 0 or run.result not in ("PASS", "ok"):
            ok = False
        vela = parse_vela_log(f.with_suffix(".log"))
        board = f"{run.variant} {run.memory_mode}"
        pmu = run.pmu
        beats = f"{_fmt(pmu.get('cntr0'))}/{_fmt(pmu.get('cntr2'))}"
        if vela:
            ratio = run.npu_cycles / vela["total"] if vela["total"] else math.nan
            ratios.append((ratio, vela["total"]))
            print(f"{f.name:<40} {board:<34} {run.npu_cycles:>11,} {vela['npu']:>11,} {vela['total']:>11,} "
                  f"{ratio:>9.2f}  {beats:>19} {_fmt(pmu.get('cntr1')):>8}  {_bound(run)} | {_vela_bound(vela)}")
        else:
            print(f"{f.name:<40} {board:<34} {run.npu_cycles:>11,} {'-':>11} {'-':>11} {'-':>9}  {beats:>19} "
                  f"{_fmt(pmu.get('cntr1')):>8}  {_bound(run)} | no compile log")
        if run.result not in ("PASS", "ok"):
            print(f"{'':<40} result: {run.result} {run.error}")
    for s in skipped:
        print(f"skipped: {s}")
    print()
    groups = (("networks (Vela total >= 10,000 cycles)", [r for r, v in ratios if v >= 10_000]),
              ("tiny programs (fixed costs dominate; Vela ignores them)", [r for r, v in ratios if v < 10_000]))
    for what, sel in groups:
        if sel:
            g = math.exp(sum(math.log(r) for r in sel) / len(sel))
            print(f"ours/Vela total, {what}: {len(sel)} programs, geometric mean {g:.2f}, min {min(sel):.2f}, "
                  f"max {max(sel):.2f}")

    print("\nPublished FVP figures (MLEK's docs/use_cases, ExecuTorch's issues, PRs and tutorial) and what we can "
          "reproduce")
    print("-" * 100)
    mv2 = corpus / "mv2_full_u55-128.bpte"
    if args.fast or not mv2.is_file():
        print(f"row {PUBLISHED_MV2_SHARED['row']}/{PUBLISHED_MV2_SRAM_ONLY['row']} (MobileNetV2): "
              f"{'skipped in --fast mode' if args.fast else 'mv2_full_u55-128.bpte not in the corpus'}")
    else:
        p = PUBLISHED_MV2_SHARED
        run = results.get(mv2.name) or run_board(mv2.read_bytes(), mv2.name, "default")
        print(f"row {p['row']}: {p['what']}")
        print(f"  FVP: {p['total']:,} NPU cycles (active {p['active']:,}); AXI0 read {p['axi0_rd']:,} / write "
              f"{p['axi0_wr']:,} beats, AXI1 read {p['axi1_rd']:,} beats")
        print(f"  ours, mv2_full_u55-128.bpte on the same configuration: {run.npu_cycles:,} NPU cycles "
              f"({run.npu_cycles / p['total']:.2f}x); AXI0 read {run.pmu.get('cntr0', 0):,} "
              f"({run.pmu.get('cntr0', 0) / p['axi0_rd']:.2f}x) / write {run.pmu.get('cntr2', 0):,} "
              f"({run.pmu.get('cntr2', 0) / p['axi0_wr']:.2f}x), AXI1 read {run.pmu.get('cntr1', 0):,} "
              f"({run.pmu.get('cntr1', 0) / p['axi1_rd']:.2f}x)")
        print("  comparable, not identical: the same network family (MobileNetV2 1.0, 224x224, ~300 M MACs) and "
              "configuration, but a different compile (ExecuTorch + Vela 5.1 vs MLEK's TFLite model), so the "
              "command streams differ: ours starts with 225 POOL operations that transpose the NCHW input, and "
              "ours rescales residual adds through int32 ADD/MUL chains, which MLEK's stream does not")
        q = PUBLISHED_MV2_SRAM_ONLY
        so = corpus / "mv2_full_u55-128_sramonly.pte"
        print(f"row {q['row']}: {q['what']}")
        print(f"  FVP: about {q['total']:,} NPU cycles")
        if so.is_file():
            run2 = results.get(so.name) or run_board(so.read_bytes(), so.name, "auto")
            print(f"  ours, {so.name} (the same MobileNetV2 compiled for Sram_Only by ExecuTorch 1.5.1 + Vela 5.1): "
                  f"{run2.npu_cycles:,} NPU cycles ({run2.npu_cycles / q['total']:.2f}x); approximate: that figure "
                  f"came from an older ExecuTorch and Vela, torchvision's trained weights and a stream we do not "
                  f"have")
        else:
            print(f"  {so.name} not in the corpus")
    add = corpus / "addint_u55.pte"
    if add.is_file():
        p = PUBLISHED_ADD
        run = results.get(add.name) or run_board(add.read_bytes(), add.name, "default")
        print(f"{p['what']}")
        print(f"  FVP: ethosu_pmu_cycle_cntr {p['cycles']:,}, AXI0 read beats {p['axi0_rd']}")
        print(f"  ours, addint_u55.pte (the tutorial's delegated x + x, int32[5]): {run.pmu.get('cycle_cntr', 0):,} "
              f"({run.pmu.get('cycle_cntr', 0) / p['cycles']:.2f}x), AXI0 read beats {run.pmu.get('cntr0', 0)}; "
              f"probably the same program (its AXI0 reads match); a single elementwise operation, so the cycles are "
              f"the fixed costs: command fetch over AXI1, memory latencies")
    if args.mlek_models:  # the same graphs as MLEK's published FVP figures (tools/tflite_npu.py)
        sys.path.insert(0, str(ROOT / "tools"))
        import tflite_npu

        print(f"same-graph anchors: MLEK's models from {args.mlek_models}, their Ethos-U part on our NPU model")
        try:
            tflite_npu.run_paths([args.mlek_models])
        except tflite_npu.ToolError as e:
            ok = False
            print(f"  error: {e}")
    if args.fast:
        print("MLEK reconstructions (tests/data/tflm): skipped in --fast mode (--tflm runs them)")
    else:
        print()
        ok &= tflm_report() == 0
        print()
    print("not reproducible here:")
    for row, what, why in NOT_REPRODUCIBLE:
        print(f"  row {row}: {what}: {why}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
