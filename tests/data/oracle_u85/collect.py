"""Copy Ethos-U85 oracles into this folder and write ``manifest.json`` (a development tool, not a test).

Run with the toolchain's Python (ExecuTorch 1.5.1 + ethos-u-vela 5.1.0), after ``make_oracle.py`` has built
``ROOT/custom/<name>/`` for every fixture (README.md says how):

    python collect.py --root /tmp/u85work/oracle [--max-bytes 1500000] NAME [NAME ...]

For each name it reads the oracle folder's ``meta.json``, Vela's summary CSV of the compile
(``output/out_summary_<system config>.csv``, written for the last partition Vela compiled) and, per delegate,
re-runs Vela 5.1 on the partition's TOSA file with the delegate's own compile flags plus
``--verbose-performance``: that gives the per-delegate summary CSV and the per-layer CSV (estimated cycles per
operator). The re-run's command stream must equal the one in the program, so the estimates describe the very
stream the fixture holds. Fixtures whose ``.bpte`` is larger than ``--max-bytes`` stay out of the folder
(``in_repo: false``); everything else gets the U55 fixtures' file set: ``<name>.bpte``, ``meta.json`` and
``oracle.npz`` recompressed without the flat ``q{k}_*`` / ``npu{k}_*`` duplicates.
"""
import argparse
import csv
import glob
import io
import json
import os
import re
import shutil
import struct
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _num(v):
    for f in (int, float):
        try:
            return f(v)
        except ValueError:
            pass
    return v


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    head = rows[0]
    out = []
    for r in rows[1:]:
        if len(r) > len(head):  # a comma inside the last column (operator names)
            r = r[:len(head) - 1] + [",".join(r[len(head) - 1:])]
        out.append({k: _num(v) for k, v in zip(head, r)})
    return out


def cmd_data_of(blob):
    off = 0
    while off < len(blob):
        name, ln, _, _ = struct.unpack_from("<16sIB11s", blob, off)
        off += 32
        if name.split(b"\0")[0] == b"cmd_data":
            return blob[off:off + ln]
        off += ln + (15 - (ln - 1) % 16 if ln else 0)
    raise ValueError("no cmd_data block")


def delegate_blobs(bpte):
    from executorch.devtools.bundled_program.serialize import deserialize_from_flatbuffer_to_bundled_program
    from executorch.exir._serialize._program import deserialize_pte_binary
    bp = deserialize_from_flatbuffer_to_bundled_program(open(bpte, "rb").read())
    prog = deserialize_pte_binary(bp.program).program
    return [bytes(prog.backend_delegate_data[d.processed.index].data) for d in prog.execution_plan[0].delegates]


def vela_performance(tosa_path, flags):
    """Vela on one TOSA file with --verbose-performance: (summary row, per-layer rows, cmd_data)."""
    from ethosu.vela import vela
    keep = [f for f in flags.split() if not f.startswith("--verbose")]
    with tempfile.TemporaryDirectory() as tmp:
        t = os.path.join(tmp, "out.tosa")
        shutil.copy(tosa_path, t)
        outd = os.path.join(tmp, "output")
        old = sys.stdout
        sys.stdout = io.StringIO()
        try:
            vela.main(keep + ["--verbose-performance", f"--output-dir={outd}", t])
        finally:
            sys.stdout = old
        summary = read_csv(glob.glob(os.path.join(outd, "out_summary_*.csv"))[0])[0]
        per_layer = read_csv(os.path.join(outd, "out_per-layer.csv")) if os.path.exists(
            os.path.join(outd, "out_per-layer.csv")) else []
        cmd = np.load(os.path.join(outd, "out_vela.npz"))["cmd_data"].tobytes()
    return summary, per_layer, cmd


SUMMARY_FIELDS = ["accelerator_configuration", "system_config", "memory_mode", "core_clock", "arena_cache_size",
                  "sram_memory_used", "dram_memory_used", "on_chip_flash_memory_used", "off_chip_flash_memory_used",
                  "sram_total_bytes", "dram_total_bytes", "on_chip_flash_total_bytes", "off_chip_flash_total_bytes",
                  "nn_macs", "cycles_npu", "cycles_sram_access", "cycles_dram_access", "cycles_on_chip_flash_access",
                  "cycles_off_chip_flash_access", "cycles_total", "inference_time", "passes_after_fusing"]
LAYER_FIELDS = {"Original Operator": "op", "NNG Operator": "nng_op", "Target": "target",
                "Staging Usage": "staging_usage", "Op Cycles": "op_cycles", "NPU": "npu_cycles",
                "SRAM AC": "sram_ac", "DRAM AC": "dram_ac", "OnFlash AC": "onflash_ac", "OffFlash AC": "offflash_ac",
                "MAC Count": "macs", "Name": "name"}


def entry(src, name, max_bytes):
    meta = json.load(open(os.path.join(src, "meta.json")))
    e = dict(model=os.path.basename(str(meta.get("model", ""))), target=meta.get("target"),
             system_config=meta.get("system_config"), memory_mode=meta.get("memory_mode"),
             a16=("_a16_" in name), status=meta.get("status"))
    if meta.get("status") != "ok":
        e["reason"] = meta.get("reason")
        return e, meta
    bpte = os.path.join(src, f"{name}.bpte")
    e.update(bpte_size=os.path.getsize(bpte), n_delegates=meta["n_delegates"],
             n_delegate_calls=meta["n_delegate_calls"], cpu_operators=meta["operators"],
             cpu_kernels_via_torch=meta.get("cpu_kernels_via_torch", []),
             bundled_max_abs_diff=[x.get("max_abs_diff") for x in meta["bundled_vs_out0"]],
             in_repo=os.path.getsize(bpte) <= max_bytes)
    csvs = glob.glob(os.path.join(src, "output", "out_summary_*.csv"))
    if csvs:
        row = read_csv(csvs[0])[0]
        e["compile_summary_csv"] = {k: row.get(k) for k in SUMMARY_FIELDS}
        e["compile_summary_csv_note"] = ("Vela's summary CSV of the compile: written per partition, so it holds "
                                         "the last partition Vela compiled" if meta["n_delegates"] > 1 else
                                         "Vela's summary CSV of the compile (the only partition)")
    blobs = delegate_blobs(bpte)
    dels = []
    tot = {"cycles_npu": 0, "cycles_total": 0, "nn_macs": 0}
    for D in meta["delegates"]:
        summary, layers, cmd = vela_performance(os.path.join(src, D["tosa_file"]), D["compile_flags"])
        same = cmd == cmd_data_of(blobs[D["index"]])
        if not same:
            raise SystemExit(f"{name} delegate {D['index']}: Vela re-run gives another command stream")
        for k in tot:
            tot[k] += int(summary[k])
        dels.append(dict(index=D["index"], tosa_file=D["tosa_file"], compile_flags=D["compile_flags"],
                         scratch_size=D["scratch_size"], cmd_data_size=D["cmd_data_size"],
                         weight_data_size=D["weight_data_size"], rerun_cmd_data_identical=same,
                         summary={k: summary.get(k) for k in SUMMARY_FIELDS},
                         per_layer=[{v: r.get(k) for k, v in LAYER_FIELDS.items()} for r in layers]))
    e["delegates"] = dels
    e["vela_totals"] = tot
    return e, meta


def copy_fixture(src, dst, name, meta):
    os.makedirs(dst, exist_ok=True)
    shutil.copy(os.path.join(src, f"{name}.bpte"), os.path.join(dst, f"{name}.bpte"))
    z = np.load(os.path.join(src, "oracle.npz"))
    keep = {k: z[k] for k in z.files if not (k[0] in "qn" and not k.startswith("call"))}
    np.savez_compressed(os.path.join(dst, "oracle.npz"), **keep)
    m = {k: v for k, v in meta.items() if k != "files"}
    with open(os.path.join(dst, "meta.json"), "w") as f:
        json.dump(m, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--max-bytes", type=int, default=1_500_000)
    ap.add_argument("names", nargs="+")
    a = ap.parse_args()
    mp = os.path.join(HERE, "manifest.json")
    man = json.load(open(mp)) if os.path.exists(mp) else {}
    man["about"] = ("Ethos-U85 fixtures of this folder (README.md): target, Vela system config and memory mode, "
                    "Vela 5.1's estimates from the compile's summary CSV and, per delegate, from a re-run "
                    "with --verbose-performance (summary + per-layer rows; same command stream as the "
                    "program). in_repo false: kept out of the repository for size")
    man.setdefault("fixtures", {})
    for name in a.names:
        src = os.path.join(a.root, "custom", name)
        e, meta = entry(src, name, a.max_bytes)
        if e["status"] == "ok" and e["in_repo"]:
            copy_fixture(src, os.path.join(HERE, name), name, meta)
            e["files"] = {f: os.path.getsize(os.path.join(HERE, name, f))
                          for f in sorted(os.listdir(os.path.join(HERE, name)))}
        elif os.path.isdir(os.path.join(HERE, name)):
            shutil.rmtree(os.path.join(HERE, name))
        man["fixtures"][name] = e
        print(name, e["status"], e.get("bpte_size"), "repo" if e.get("in_repo") else "not in repo",
              e.get("vela_totals"))
    man["fixtures"] = dict(sorted(man["fixtures"].items()))
    with open(mp, "w") as f:
        f.write(dumps(man) + "\n")


def dumps(man):
    """JSON with one line per Vela per-layer row (the rows are most of the manifest)."""
    rows = {}
    for e in man["fixtures"].values():
        for D in e.get("delegates", []):
            for i, r in enumerate(D["per_layer"]):
                tok = f"@row{len(rows)}@"
                rows[tok] = json.dumps(r)
                D["per_layer"][i] = tok
    return re.sub(r'"(@row\d+@)"', lambda m: rows[m.group(1)], json.dumps(man, indent=1))


if __name__ == "__main__":
    main()
