"""``tools/run.sh``: ExecuTorch's run.sh flow (compile or zoo, run, check the log) on this simulator."""

import numpy as np
import pytest
from testutil import CORPUS, ROOT, RUN_SH, executorch_python, run_fvp


def run_sh(*args, cwd, env_extra=None, timeout=600, shell=False):
    """``tools/run.sh ARGS`` without ExecuTorch (unless ``env_extra`` names one): the script's Python in this process
    (testutil.run_fvp; the simulator it calls is still a new process, as run_fvp.sh's FVP is), or through bash
    with ``shell=True``."""
    return run_fvp(*args, cwd=cwd, prog="tools/run.sh", env_extra={"EXECUTORCH_PYTHON": None, **(env_extra or {})},
                   timeout=timeout, new_process=shell)


def last_lines(out, n=1):
    return out.rstrip("\n").splitlines()[-n:]


def test_tutorial_add(tmp_path):
    """The README's command, through bash as a user runs it."""
    rc, out, err = run_sh("--model_name=add", "--target=ethos-u55-128", cwd=tmp_path, shell=True)
    assert rc == 0, out + err
    assert last_lines(out, 3) == [f"[{RUN_SH}] Simulation complete, 0", "Checking for problems in log:",
                                  "No problems found!"]
    assert "Running arm_test/add_arm_delegate_ethos-u55-128/add_arm_delegate_ethos-u55-128.pte for ethos-u55-128 " \
           "run with FVP:FVP_Corstone_SSE-300_Ethos-U55 num_macs:128 timeout:600" in out
    assert "Output[0][0]: (float) 2.000000" in out
    out_dir = tmp_path / "arm_test" / "add_arm_delegate_ethos-u55-128"
    pte = out_dir / "add_arm_delegate_ethos-u55-128.pte"
    assert pte.read_bytes()[4:8] == b"ET12"
    log = (out_dir / "add_arm_delegate_ethos-u55-128_fvp.log").read_text()
    assert "Program complete, exiting." in log and "Simulation complete" not in log


def test_etdump_writes_what_run_fvp_sh_extracts(tmp_path):
    """--etdump: the runner built with ETDump and intermediate outputs; the #[RUN THIS] block's files land in the
    output folder, as run_fvp.sh writes them, and parse with the ETDump schema."""
    from firmware.executorch.etdump import read_etdump

    rc, out, err = run_sh("--model_name=add", "--target=ethos-u55-128", "--etdump", cwd=tmp_path)
    assert rc == 0 and "has no effect" not in out, out + err
    assert "-C firmware.options.etdump=true -C firmware.options.etdump_debug=intermediate" in out
    out_dir = tmp_path / "arm_test" / "add_arm_delegate_ethos-u55-128"
    et = read_etdump((out_dir / "etdump.bin").read_bytes())
    names = {et.RunData(i).Events(j).ProfileEvent().Name().decode() for i in range(et.RunDataLength())
             for j in range(et.RunData(i).EventsLength()) if et.RunData(i).Events(j).ProfileEvent() is not None}
    assert {"Method::execute", "DELEGATE_CALL", "EthosUBackend::execute()"} <= names
    assert (out_dir / "debug_buffer.bin").stat().st_size > 0
    assert f"etdump.bin: {out_dir.relative_to(tmp_path)}/etdump.bin" in out


def test_existing_program_by_path(tmp_path):
    rc, out, err = run_sh(f"--model_name={CORPUS / 'mv2_full_u55-128.bpte'}", cwd=tmp_path)
    assert rc == 0, out + err
    assert "Test_result: PASS" in out and last_lines(out) == ["No problems found!"]
    # --pte, with the target/system config/memory mode taken from the program (compiled for U65, Dedicated_Sram)
    rc, out, err = run_sh("--pte", CORPUS / "mobilenet_v1_025_u65-256.bpte", "--output", tmp_path / "o", cwd=tmp_path)
    assert rc == 0, out + err
    assert "FVP:FVP_Corstone_SSE-300_Ethos-U65 num_macs:256" in out
    assert "-C firmware.pools.fast_scratch.size=384KiB" in out
    assert (tmp_path / "o" / "mobilenet_v1_025_u65-256_fvp.log").is_file()


def test_failed_verification_is_found(tmp_path):
    from firmware.executorch.bundled import load_bundled

    data = bytearray((CORPUS / "add_u55-128.bpte").read_bytes())
    b = load_bundled(np.frombuffer(bytes(data), np.uint8))
    exp = b.test_suite("forward").test_cases[0].expected_outputs[0]
    data[exp.data_offset:exp.data_offset + 4] = np.float32(5.0).tobytes()  # the model gives 2.0
    bad = tmp_path / "add_wrong_expectation.bpte"
    bad.write_bytes(bytes(data))
    rc, out, err = run_sh("--pte", bad, cwd=tmp_path)
    assert rc == 1, out + err
    tail = out[out.index("Checking for problems in log:"):].splitlines()
    assert tail[-1] == "Found ERROR"
    assert any(ln.startswith("E ") and "Test_result: FAIL" in ln for ln in tail)
    assert any(ln.startswith("F ") for ln in tail)
    assert f"[{RUN_SH}] the simulator exited with status 1" in tail


@pytest.mark.parametrize("args", [
    ["--model_name=softmax", "--target=ethos-u55-64", "--bundleio"],
    ["--model_name=resnet8", "--target=ethos-u55-256", "--bundleio"],
    ["--model_name=ds_cnn", "--target=ethos-u65-256", "--bundleio"],
    ["--model_name=mobilenet_v1_025", "--target=ethos-u55-128", "--no_quantize", "--bundleio"],
    ["--model_name=lstm", "--target=ethos-u65-256", "--no_quantize", "--bundleio"],
    ["--model_name=mv2", "--target=ethos-u55-128", "--bundleio"],  # the tutorial's MobileNetV2
])
def test_zoo_models(tmp_path, args):
    rc, out, err = run_sh(*args, "--zoo", cwd=tmp_path)
    assert rc == 0, out + err
    assert "Test_result: PASS" in out and last_lines(out) == ["No problems found!"]
    if "ethos-u65-256" in args[1]:
        assert "Sram_Only" in out and "Creating Ethos-U65 with config H256" in out


@pytest.mark.parametrize("args,name", [
    (["--model_name=add", "--target=cortex-m55"], "add_arm_cortex-m55"),
    (["--model_name=ds_cnn", "--target=cortex-m55", "--bundleio"], "ds_cnn_arm_cortex-m55"),
])
def test_cortex_m55_zoo_models(tmp_path, args, name):
    """run.sh's Cortex-M flow: no delegate, the bundled program on the semihosting runner, the bundled verdict."""
    rc, out, err = run_sh(*args, "--zoo", cwd=tmp_path)
    assert rc == 0, out + err
    assert last_lines(out, 4) == [f"[{RUN_SH}] Simulation complete, 0",
                                  f"[{RUN_SH}] Bundled I/O check PASSED for {name}.bpte",
                                  "Checking for problems in log:", "No problems found!"]
    assert ("requires --bundleio" in out) == ("--bundleio" not in args)
    assert "--delegate" not in out.split("using the model zoo's")[1].splitlines()[0]
    assert f"cpu0.semihosting-cmd_line=executor_runner -m {name}.bpte -i fvp_dummy_input.bin -o out" in out
    assert "-C firmware.options.atol=5.0 -C firmware.options.rtol=1.0 -C firmware.pools.temp.size=0" in out
    assert "Test_result: PASS" in out and "Running arm_test/" in out and "for cortex-m55 run with " \
           "FVP:FVP_Corstone_SSE-300_Ethos-U55 num_macs:128" in out
    out_dir = tmp_path / "arm_test" / name
    assert (out_dir / "out-0.bin").is_file() and (out_dir / "fvp_dummy_input.bin").stat().st_size == 4


def test_cortex_m55_failed_check(tmp_path):
    from firmware.executorch.bundled import load_bundled

    data = bytearray((ROOT / "fvp" / "host" / "programs" / "zoo" / "programs" / "add_q_cortex-m55.bpte").read_bytes())
    b = load_bundled(np.frombuffer(bytes(data), np.uint8))
    exp = b.test_suite("forward").test_cases[0].expected_outputs[0]
    data[exp.data_offset:exp.data_offset + 4] = np.float32(np.nan).tobytes()  # no tolerance accepts NaN vs 2.0
    bad = tmp_path / "add_nan.bpte"
    bad.write_bytes(bytes(data))
    rc, out, err = run_sh("--pte", bad, "--target=cortex-m55", cwd=tmp_path)
    assert rc == 1, out + err
    lines = out.splitlines()
    assert f"[{RUN_SH}] Bundled I/O check FAILED for add_nan.bpte" in lines
    assert lines[-1] == "Found ERROR" and "Checking for problems in log:" in lines


def test_build_only_and_placement(tmp_path):
    rc, out, err = run_sh("--model_name=linear", "--build_only", "--bundleio", "--output", "lin", cwd=tmp_path)
    assert rc == 0, out + err
    assert (tmp_path / "lin" / "linear_arm_delegate_ethos-u55-128.bpte").is_file()
    assert "Running" not in out
    rc, out, err = run_sh("--pte", tmp_path / "lin" / "linear_arm_delegate_ethos-u55-128.bpte",
                          "--pte_placement=0x78000000", cwd=tmp_path)
    assert rc == 0, out + err
    assert "PTE @ 0x78000000" in out


def test_time_limit_is_an_error(tmp_path):
    rc, out, err = run_sh("--model_name=mobilenet_v1_025", "--no_quantize", "--timeout=0.01", "--zoo", cwd=tmp_path)
    assert rc == 1, out + err
    assert "Info: Simulation is stopping. Reason: CPU time has been exceeded." in out.split("Checking")[1]
    assert last_lines(out) == ["Found ERROR"]


@pytest.mark.parametrize("args,needle", [
    (["--model_name=my_model.py"], "pip install '.[executorch]'"),
    (["--model_name=add", "--memory_mode=Dedicated_Sram"], "pip install '.[executorch]'"),
    (["--model_name=add", "--target=ethos-u85-256"], "the model zoo has no add for --target=ethos-u85-256"),
    (["--model_name=add", "--target=cortex-m4"], "only the Corstone-300's Cortex-M55 is modelled"),
    (["--pte", CORPUS / "add_q.pte", "--target=cortex-m55"], "runs a bundled program (.bpte)"),
    (["--model_name=add", "--bogus"], "unrecognized arguments"),
    ([], "--model_name"),
    (["--pte", "/nonexistent.pte"], "not found"),
])
def test_usage_errors(tmp_path, args, needle):
    rc, out, err = run_sh(*args, "--zoo", cwd=tmp_path)
    assert rc == 2, out + err
    assert needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


_executorch_python = executorch_python


@pytest.mark.executorch
@pytest.mark.skipif(_executorch_python() is None, reason="ExecuTorch is not installed (pip install '.[executorch]' "
                                                         "or set EXECUTORCH_PYTHON)")
def test_compile_and_run_with_executorch(tmp_path):
    rc, out, err = run_sh("--model_name=add", "--no_quantize", "--target=ethos-u55-128", cwd=tmp_path,
                          env_extra={"EXECUTORCH_PYTHON": _executorch_python()})
    assert rc == 0, out + err
    assert "CALL " in out and "aot_arm_compiler --model_name=add --target=ethos-u55-128 --delegate" in out
    assert "--quantize" not in out.split("CALL ")[1].splitlines()[0]
    assert last_lines(out) == ["No problems found!"]
