"""The Python arm_executor_runner on the platform: memory figures, profiles, allocators, outputs, failures."""

import re

import pytest

from testutil import CORPUS, run_fvp


def _stat(out, name):
    m = re.search(rf"{name}:\s+(\d+)", out)
    return int(m.group(1)) if m else None


def _line(out, text):
    return [l for l in out.splitlines() if text in l]


def test_add_q_memory_figures_executorch_1_5():
    rc, out, err = run_fvp("run", CORPUS / "add_q.pte")
    assert rc == 0, out + err
    assert _line(out, "method_allocator_used:")[0].endswith(
        "method_allocator_used:     928 / 62914560  free: 62913632 ( used: 0 % ) ")
    assert _stat(out, "method_allocator_planned") == 48
    assert _stat(out, "method_allocator_loaded") == 844
    assert _stat(out, "method_allocator_input") == 36
    assert _stat(out, "method_allocator_executor") == 0
    assert _line(out, "temp_allocator:")[0].endswith("temp_allocator:            2097152")
    assert "Output[0][0]: (float) 2.000000" in out
    assert _line(out, "PTE @ ")[0].endswith("PTE @ 0x70000000 [----ET12]")
    assert _line(out, "Setting up planned buffer")[0].endswith("Setting up planned buffer with mem_id=1, size 48.")
    assert _line(out, "data:")[0].endswith("data:0x70000070")


def test_addint_memory_figures_pr12353():
    rc, out, err = run_fvp("run", CORPUS / "addint_u55.pte", "-C", "firmware.runtime=executorch-pr12353")
    assert rc == 0, out + err
    assert _line(out, "method_allocator_used:")[0].endswith(
        "method_allocator_used:     344 / 62914560  free: 62914216 ( used: 0 % ) ")
    assert (_stat(out, "method_allocator_planned"), _stat(out, "method_allocator_loaded"),
            _stat(out, "method_allocator_input"), _stat(out, "method_allocator_executor")) == (64, 256, 24, 0)
    assert _line(out, "peak_temp_allocator:")[0].endswith(
        "peak_temp_allocator:       64 / 2097152 free: 2097152 ( used: 0 % ) ")
    assert out.count("Output[0][") == 5 and "Output[0][4]: (int) 2" in out


def test_embedded_default_prints_the_tutorial_log():
    rc, out, err = run_fvp("run")
    assert rc == 0, out + err
    prefix = re.compile(r"^I \[executorch:[\w.]+:\d+ \w+\(\)\] ")
    msgs = [prefix.sub("", l) for l in out.splitlines() if prefix.match(l)]
    expected_order = [
        "PTE in 0x70000000 $ Size: 2160 bytes",
        "PTE Model data loaded. Size: 2160 bytes.",
        "Model buffer loaded, has 1 methods",
        "Running method forward",
        "Setup Method allocator pool. Size: 62914560 bytes.",
        "Setting up planned buffer 0, size 64.",
        "data:0x70000070",
        "Method 'forward' loaded.",
        "Preparing inputs...",
        "Input prepared.",
        "Starting the model execution...",
        "NPU Inferences : 1",
        "Model executed successfully.",
        "model_pte_program_size:     2160 bytes.",
        "model_pte_loaded_size:      2160 bytes.",
        "method_allocator_used:     344 / 62914560  free: 62914216 ( used: 0 % ) ",
        "method_allocator_planned:  64 bytes",
        "method_allocator_loaded:   256 bytes",
        "method_allocator_input:    24 bytes",
        "method_allocator_executor: 0 bytes",
        "peak_temp_allocator:       64 / 2097152 free: 2097152 ( used: 0 % ) ",
        "1 outputs: ",
        "Program complete, exiting.",
        "\x04",
    ]
    pos = [msgs.index(m) for m in expected_order]
    assert pos == sorted(pos)
    lines = out.splitlines()
    assert [l for l in lines if l.startswith("Output[")] == [f"Output[0][{j}]: (int) 2" for j in range(5)]
    assert lines[-2] == "Info: /OSCI/SystemC: Simulation stopped by user."
    assert re.fullmatch(r"\[warning \]\[main@0\]\[\d+ ns\] Simulation stopped by user", lines[-1])


@pytest.mark.parametrize("model,values", [
    ("add_fp_cpu.pte", ["(float) 2.000000"]),
    ("mul_fp_cpu.pte", ["(float) 1.000000"] * 6),
    ("softmax_fp_cpu.pte", ["(float) 0.500000"] * 4),
])
def test_cpu_only_programs(model, values):
    rc, out, err = run_fvp("run", CORPUS / model)
    assert rc == 0, out + err
    got = [l.split(": ", 1)[1] for l in out.splitlines() if l.startswith("Output[0][")]
    assert got == values


def test_minimal_allocator_has_no_statistics():
    rc, out, err = run_fvp("run", CORPUS / "add_q.pte", "-C", "firmware.allocator=minimal")
    assert rc == 0, out + err
    assert "method_allocator_used" not in out
    assert _line(out, "method_allocator: statistics unavailable (allocator 'minimal' keeps no statistics)")
    assert "Output[0][0]: (float) 2.000000" in out


@pytest.mark.parametrize("model,size", [("add_q.pte", "512B"), ("conv1d_u55-128.bpte", "1KiB")])
def test_method_pool_exhaustion(model, size):
    rc, out, err = run_fvp("run", CORPUS / model, "-C", f"firmware.pools.method.size={size}")
    assert rc == 1
    fail = _line(out, "Memory allocation failed:")
    assert fail and fail[0].startswith("E [executorch:")
    assert re.search(r"Memory allocation failed: \d+B requested \(adjusted for alignment\), \d+B available", fail[0])
    assert len([l for l in out.splitlines() if l.startswith("F [executorch:")]) == 1
    assert "Program complete" not in out and "Traceback" not in out + err


@pytest.mark.parametrize("mutate, says", [("truncate", "truncated"), ("identifier", "not an ExecuTorch program"),
                                           ("bitflip", "")])
def test_corrupt_programs_fail_cleanly(tmp_path, mutate, says):
    data = bytearray((CORPUS / "add_q.pte").read_bytes())
    if mutate == "truncate":
        data = data[:700]
    elif mutate == "identifier":
        data[4:8] = b"XY12"
    else:
        data[0] ^= 0x40  # the root table offset
    p = tmp_path / "bad.pte"
    p.write_bytes(bytes(data))
    # fvp run refuses a file the runner's loader refuses before anything runs: a bad model file, exit 2
    rc, out, err = run_fvp("run", p)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1 and says in err, err
    if mutate == "identifier":
        return  # the drop-in finds no program to run in it
    # the runner itself (here through the FVP drop-in, which runs what it is given) fails with one F line
    rc, out, err = run_fvp("--data", f"{p}@0x70000000", prog="fvp.host.dropin")
    assert rc == 1
    fatal = [l for l in out.splitlines() if l.startswith("F [executorch:")]
    assert len(fatal) == 1
    if mutate != "bitflip":
        assert "Program loading failed" in fatal[0]


def test_output_files_and_input_files(tmp_path):
    import numpy as np

    inp = tmp_path / "in.bin"
    np.array([1, 2, 3, 4, 5], dtype=np.int32).tofile(inp)
    rc, out, err = run_fvp("run", CORPUS / "addint_u55.pte", "-i", inp, "-o", tmp_path / "out")
    assert rc == 0, out + err
    got = np.fromfile(tmp_path / "out-0.bin", dtype=np.int32)
    assert got.tolist() == [2, 4, 6, 8, 10]
    np.save(tmp_path / "in.npy", np.array([7, 7, 7, 7, 7], dtype=np.int32))
    rc, out, err = run_fvp("run", CORPUS / "addint_u55.pte", "-i", tmp_path / "in.npy")
    assert rc == 0 and "Output[0][0]: (int) 14" in out
    (tmp_path / "short.bin").write_bytes(b"\x01\x00")
    rc, out, err = run_fvp("run", CORPUS / "addint_u55.pte", "-i", tmp_path / "short.bin")
    assert rc == 1 and "input size (2) and tensor size (20) mismatch!" in out


def test_program_for_another_npu_fails_in_the_driver_check_with_a_hint():
    rc, out, err = run_fvp("run", CORPUS / "resnet8_u65-512.bpte", "--target", "ethos-u55-128",
                           "-C", "firmware.options.log_outputs=false")
    assert rc == 1
    assert "E: NPU config mismatch: npu.macs_per_cc=7 optimizer.macs_per_cc=9" in out
    assert "compiled for ethos-u65-512" in err and "--target ethos-u65-512" in err


@pytest.mark.parametrize("model,planned,loaded", [
    # figures computed from Method::init's allocations (runtime/executor/method.cpp at ExecuTorch HEAD cff6f4dd)
    # with the 32-bit struct sizes, for the plain .pte files (6 compile specs): add_q 48/844,
    # mul_q 80/868, add_mul_q 64/1108; the corpus .bpte carry a 7th spec (debug_artifact_path, 12 bytes on
    # Cortex-M55) and BundleIO inputs (no input allocation)
    ("add_u55-128.bpte", 48, 844 + 12),
    ("mul_u55-128.bpte", 80, 868 + 12),
    ("add_mul_u55-128.bpte", 64, 1108 + 12),
])
def test_bundled_memory_figures_match_the_computed_sequence(model, planned, loaded):
    rc, out, err = run_fvp("run", CORPUS / model, "-C", "firmware.options.log_outputs=false")
    assert rc == 0
    assert (_stat(out, "method_allocator_planned"), _stat(out, "method_allocator_loaded"),
            _stat(out, "method_allocator_input")) == (planned, loaded, 0)


def test_scratch_larger_than_the_temp_pool_fails_with_a_hint():
    rc, out, err = run_fvp("run", CORPUS / "mobilenet_v1_025_u55-128.bpte", "-C", "firmware.pools.temp.size=4KiB",
                           "-C", "firmware.options.log_outputs=false")
    assert rc == 1
    assert "Failed to allocate scratch buffer of " in out and "CALL_DELEGATE execute failed" in out
    assert "fvp: note: this program's Ethos-U scratch needs " in err
    assert "-C firmware.pools.temp.size=1MiB" in err and "Traceback" not in out + err


# The PR #12353 runtime (executorch 8f3eb3eb51) on programs with kernel calls, computed by hand from that
# commit's runtime/executor/method.cpp with the PR's ArmMemoryAllocator formula (every size below is a
# multiple of its alignment, so `used` is the plain sum). Cortex-M55 sizes: EValue 24, TensorImpl 32,
# strides 4/dim, EValue* 4, int64 8, BackendDelegate 24, CompileSpec 12 (7 in these .bpte), ExecutionHandle 4,
# Chain 16, OpFunction 4, InstructionArgs 8, TensorMeta 12 (int8 dtype + Span{ptr, size_t}), DimOrderType 1.
# Per KernelCall, Method::resolve_operator allocates TensorMeta[n_args] (every argument, not only tensors;
# method.cpp:695) and DimOrderType[dim] per tensor argument (method.cpp:707-708); the cortex_m quantize and
# dequantize calls have 8 arguments of which 3 are tensors (input, out, out again as the return value).
#  add_u55-128: values 21*24=504; 6 tensors of dim 1: 6*(4+32)=216; delegate 24 + specs 84 + handle 4 = 112;
#    chain 16 + 4 instr * (4+8) = 64; 3 kernel calls * (8*4 + 8*12 + 3*1) = 393; delegate call 3*4 = 12 -> 1301
#  softmax_u55-128: values 14*24=336; 4 tensors of dim 2: 4*(8+32)=160; delegate 112; chain 16 + 3*12 = 52;
#    2 kernel calls * (32 + 96 + 3*2) = 268; delegate call 2*4 = 8 -> 936
#  mobilenet_v1_025_u55-128: values 336; tensors dims 4,4,2,2: 16+16+8+8 + 4*32 = 176; delegate 112; chain 52;
#    quantize 32 + 96 + 3*4 = 140, dequantize 32 + 96 + 3*2 = 134; delegate call 8 -> 958
#  ds_cnn_u55-128: values 40*24=960; 8 tensors (6 of dim 4, 2 of dim 2): 6*16 + 2*8 + 8*32 = 368;
#    3 IntLists of 2: 3*(8+16) = 72; 2 delegates 48 + 2*(84+4) = 176; chain 16 + 7*12 = 100;
#    quantize/dequantize on dim 4: 3*140, avg_pool2d (9 args, 3 tensors of dim 4): 36 + 108 + 12 = 156,
#    dequantize on dim 2: 134; 2 delegate calls 16 -> 2450
# The executorch-1.5 figures take TensorMeta from the temp allocator and are the same as before this fix.
@pytest.mark.parametrize("model,planned,loaded_pr12353,loaded_1_5", [
    ("add_u55-128.bpte", 48, 1301, 856),
    ("softmax_u55-128.bpte", 32, 936, 640),
    ("mobilenet_v1_025_u55-128.bpte", 138240, 958, 656),
    ("ds_cnn_u55-128.bpte", 40000, 2450, 1664),
])
def test_kernel_call_memory_figures_match_the_computed_sequence(model, planned, loaded_pr12353, loaded_1_5):
    for runtime, loaded in (("executorch-pr12353", loaded_pr12353), ("executorch-1.5", loaded_1_5)):
        rc, out, err = run_fvp("run", CORPUS / model, "-C", f"firmware.runtime={runtime}",
                               "-C", "firmware.options.log_outputs=false")
        assert rc == 0, out + err
        assert (_stat(out, "method_allocator_planned"), _stat(out, "method_allocator_loaded"),
                _stat(out, "method_allocator_input"), _stat(out, "method_allocator_used")) == \
            (planned, loaded, 0, planned + loaded), runtime


def test_bind_formats_the_fields_it_is_given_and_keeps_the_others():
    """profiles.bind: a line template with the tensor's label and index bound once formats like the template
    (format specs, conversions, escaped braces, nested specs, braces in a bound value)."""
    from firmware.executorch.profiles import PROFILES, bind

    templates = [t for p in PROFILES.values() for k, t in p["messages"].items() if k.startswith("element_")]
    templates += ["{{x}} {label!r:>10} {i:03d} {j} {v}", "{v:{w}} {i} }}"]
    assert len(templates) > 4
    for t in templates:
        for label, i in [("Output", 0), ("In{p}ut", 12)]:
            kw = dict(j=5, v=3, text="true", w=4)
            assert bind(t, label=label, i=i).format(**kw) == t.format(label=label, i=i, **kw), t
    assert bind("{label}[{i}]", label="Output", i=3) == "Output[3]"
