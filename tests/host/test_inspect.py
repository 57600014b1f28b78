"""``fvp inspect``: a program's methods, I/O, delegates, operators and memory, read by the firmware's own reader."""

import json
import re

from testutil import CORPUS, run_fvp

MOBILENET = CORPUS / "mobilenet_v1_025_u55-128.bpte"


def _json(path):
    rc, out, err = run_fvp("inspect", path, "--json")
    assert rc == 0, err
    return json.loads(out)


def test_mobilenet_json_has_the_programs_facts():
    facts = _json(MOBILENET)
    assert facts["file"] == MOBILENET.name and facts["format"] == "bpte"
    assert facts["file_size"] == MOBILENET.stat().st_size
    (m,) = facts["methods"]
    assert m["name"] == "forward" and m["bundled_test_cases"] == 1
    (inp,) = m["inputs"]
    assert (inp["dtype"], inp["shape"], inp["dim_order"], inp["nbytes"]) == ("Float", [1, 3, 96, 96], [0, 1, 2, 3],
                                                                           110592)
    q = inp["quantization"]
    assert q["op"] == "cortex_m::quantize_per_tensor.out" and q["dtype"] == "Char"
    assert (q["zero_point"], q["quant_min"], q["quant_max"]) == (0, -128, 127) and abs(q["scale"] - 0.0078387) < 1e-6
    (out,) = m["outputs"]
    assert (out["dtype"], out["shape"]) == ("Float", [1, 2])
    assert out["quantization"]["op"] == "cortex_m::dequantize_per_tensor.out"
    assert out["quantization"]["zero_point"] == 127
    (d,) = m["delegates"]
    assert d["id"] == "EthosUBackend" and d["calls"] == 1
    assert (d["target"], d["memory_mode"], d["system_config"]) == ("ethos-u55-128", "Shared_Sram",
                                                                   "Ethos_U55_High_End_Embedded")
    assert d["compile_specs"]["target"] == "ethos-u55-128"
    assert "--accelerator-config=ethos-u55-128" in d["compile_specs"]["compile_flags"]
    assert d["ethosu"]["scratch_bytes"] == 74496 and d["ethosu"]["inputs"][0]["shape"] == [1, 1, 1, 3, 96, 96]
    assert [(o["name"], o["available"]) for o in m["operators"]] == [
        ("cortex_m::quantize_per_tensor.out", True), ("cortex_m::dequantize_per_tensor.out", True)]
    assert m["planned_memory"] == [{"mem_id": 1, "size": 138240, "pool": "method"}]
    assert m["pools_needed"]["temp"] == 74496


def test_planned_memory_is_what_the_runner_plans():
    for name in ("mobilenet_v1_025_u55-128.bpte", "add_fp_cpu.pte", "ds_cnn_u55-128.bpte"):
        facts = _json(CORPUS / name)
        rc, log, err = run_fvp("run", CORPUS / name)
        assert rc == 0, err
        planned = int(re.search(r"method_allocator_planned:\s+(\d+) bytes", log).group(1))
        assert facts["methods"][0]["planned_bytes"] == planned, name
        sizes = [int(s) for s in re.findall(r"planned buffer with mem_id=\d+, size (\d+)", log)]
        assert [p["size"] for p in facts["methods"][0]["planned_memory"]] == sizes, name


def test_text_output():
    rc, out, err = run_fvp("inspect", MOBILENET)
    assert rc == 0 and err == ""
    assert "input 0: Float[1, 3, 96, 96] dim order (0, 1, 2, 3), 110592 B; quantized to Char by " \
           "cortex_m::quantize_per_tensor.out (scale 0.00783869531, zero point 0" in out
    assert "delegate 0: EthosUBackend, ethos-u55-128, Shared_Sram, Ethos_U55_High_End_Embedded; 1 call" in out
    assert "operators: 2, all available here" in out
    assert "planned memory: mem_id 1: 138240 B (method pool); total 138240 B" in out


def test_cpu_program_and_two_delegates():
    m = _json(CORPUS / "add_fp_cpu.pte")["methods"][0]
    assert m["delegates"] == [] and [o["name"] for o in m["operators"]] == ["aten::add.out"]
    assert [(i["dtype"], i["shape"], i["quantization"]) for i in m["inputs"]] == [("Float", [1], None)] * 2
    assert m["pools_needed"]["temp"] == 0
    ds = _json(CORPUS / "ds_cnn_u55-128.bpte")["methods"][0]
    assert len(ds["delegates"]) == 2 and ds["pools_needed"]["temp"] == max(
        d["ethosu"]["scratch_bytes"] for d in ds["delegates"])


def test_missing_operator_is_named(tmp_path):
    image = (CORPUS / "add_fp_cpu.pte").read_bytes()
    assert image.count(b"aten::add") == 1
    bad = tmp_path / "noop.pte"
    bad.write_bytes(image.replace(b"aten::add", b"aten::zzz"))
    m = _json(bad)["methods"][0]
    assert m["operators"] == [{"name": "aten::zzz.out", "calls": 1, "available": False}]
    rc, out, _ = run_fvp("inspect", bad)
    assert rc == 0 and "operators: 1, 1 missing here" in out and "aten::zzz.out  x1  MISSING" in out


def test_bad_files_are_one_line_exit_2(tmp_path):
    text = tmp_path / "notes.pte"
    text.write_text("not a program at all\n")
    trunc = tmp_path / "trunc.bpte"
    trunc.write_bytes(MOBILENET.read_bytes()[:4000])
    for path in (text, trunc, tmp_path / "absent.pte"):
        rc, out, err = run_fvp("inspect", path, "--json")
        assert rc == 2 and out == "", (path, out)
        assert len(err.splitlines()) == 1 and err.startswith("fvp: error: "), err


def test_readme_sample_is_what_fvp_inspect_prints():
    """The README's sample: every line printed by `fvp inspect`, in order (it leaves some compile specs out)."""
    from testutil import ROOT

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("`fvp inspect` reads a program")
    block = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M).search(text, start).group(1).splitlines()
    assert len(block) >= 10
    rc, out, err = run_fvp("inspect", MOBILENET)
    assert rc == 0, err
    got = out.splitlines()
    pos = 0
    for line in block:
        assert line in got[pos:], f"README's fvp inspect sample drifted: {line!r} is not printed (in order)"
        pos = got.index(line, pos) + 1
