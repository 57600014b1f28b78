"""fvp.Session, the public Python API: one program on one machine that stays up between inferences."""

import subprocess
import sys

import numpy as np
import pytest

import fvp
from testutil import CORPUS, DATA, ROOT

DS_CNN = CORPUS / "ds_cnn_u55-128.bpte"
RESNET8 = CORPUS / "resnet8_u55-128.bpte"
ADD_Q = CORPUS / "add_q.pte"  # two float inputs, quantized to int8 for the NPU
KWS = DATA / "tflm" / "kws_micronet_m_u55-128_vela.tflite"


def plain_program(bpte, tmp_path):
    """The .pte inside a .bpte (what `fvp run -i` takes)."""
    from fvp.host.programs.zoo import bundled_program_range

    data = bpte.read_bytes()
    off, size = bundled_program_range(data)
    path = tmp_path / (bpte.stem + ".pte")
    path.write_bytes(data[off:off + size])
    return path


def fvp_run_outputs(program, inputs, tmp_path, tag="ref"):
    """`fvp run PROGRAM -i in0.npy ... -o base` in this process; the raw bytes of each output."""
    from fvp.host.cli import main as cli_main

    args = ["run", str(program)]
    for k, x in enumerate(inputs):
        np.save(tmp_path / f"{tag}-in{k}.npy", x)
        args += ["-i", str(tmp_path / f"{tag}-in{k}.npy")]
    base = tmp_path / tag
    assert cli_main(args + ["-o", str(base), "-C", "devices.uart0.out_file=/dev/null"]) == 0
    return [p.read_bytes() for p in sorted(tmp_path.glob(f"{tag}-[0-9]*.bin"))]


@pytest.fixture(scope="module")
def resnet():
    with fvp.Session(RESNET8) as s:
        yield s


def test_import_fvp_stays_cheap():
    code = ("import sys, fvp; print('numpy' in sys.modules, 'fvp.host.run.api' in sys.modules, "
            "fvp.Session.__module__, 'Session' in dir(fvp))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.split() == ["False", "False", "fvp.host.run.api", "True"]
    with pytest.raises(AttributeError):
        fvp.NoSuchThing  # noqa: B018


def test_inputs_and_outputs_are_described(resnet):
    (i,), (o,) = resnet.inputs, resnet.outputs
    assert i.dtype == np.float32 and i.shape == (1, 3, 32, 32) and i.dim_order == (0, 1, 2, 3)
    assert i.nbytes == 4 * 3 * 32 * 32 and i.quantization["zero_point"] == 0
    assert o.dtype == np.float32 and o.shape == (1, 10) and o.quantization["scale"] > 0
    assert "float32[1, 3, 32, 32]" in repr(i) and "running" in repr(resnet)


def test_outputs_are_those_of_fvp_run_and_figures_do_not_depend_on_history(resnet, tmp_path):
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((1, 3, 32, 32)).astype(np.float32) for _ in range(3)]
    first = [resnet.run([x]) for x in xs]
    again = resnet.run([xs[0]])  # after other inferences: the same outputs and figures
    assert again.raw_outputs == first[0].raw_outputs
    assert (again.npu_cycles, again.cpu_cycles, again.pmu) == (first[0].npu_cycles, first[0].cpu_cycles, first[0].pmu)
    assert first[0].raw_outputs != first[1].raw_outputs  # the inputs matter for this network
    pte = plain_program(RESNET8, tmp_path)
    for k, (x, r) in enumerate(zip(xs, first)):
        assert fvp_run_outputs(pte, [x], tmp_path, f"s{k}") == r.raw_outputs
    r = first[0]
    assert r.outputs[0].shape == (1, 10) and r.outputs[0].dtype == np.float32
    assert r.outputs[0].tobytes() == r.raw_outputs[0]
    assert r.npu_cycles > 0 and r.cpu_cycles > 0 and set(r.pmu) == {
        "AXI0_RD_DATA_BEAT_RECEIVED", "AXI1_RD_DATA_BEAT_RECEIVED", "AXI0_WR_DATA_BEAT_WRITTEN", "NPU_IDLE"}
    assert f"ethosu_pmu_cycle_cntr : {r.npu_cycles} " in r.log and "1 outputs:" in r.log
    assert sum(s.npu_cycles for s in r.npu_streams) > 0


def test_inputs_are_converted_only_when_exact_and_bad_ones_leave_the_session_running(resnet):
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32))
    ref = resnet.run([x.astype(np.float32)])
    assert resnet.run(x).raw_outputs == ref.raw_outputs  # float64, one array for one input
    assert resnet.run({0: x[0]}).raw_outputs == ref.raw_outputs  # leading 1 left out, by index
    assert resnet.run([x.astype(np.float32).tobytes()]).raw_outputs == ref.raw_outputs  # raw bytes
    bad = [([np.zeros((1, 3, 32, 31))], "shape [1, 3, 32, 31]"),
           ([b"\0" * 12], "12 bytes"),
           ([x, x], "2 inputs given"),
           ([np.array(["a"] * 3072).reshape(1, 3, 32, 32)], "array of <U1"),
           ({"nope": x}, "no such input")]
    for value, what in bad:
        with pytest.raises(fvp.InputError, match=what.replace("[", r"\[")):
            resnet.run(value, where="sample 9")
    assert resnet.alive and resnet.run([x]).raw_outputs == ref.raw_outputs


def test_integer_inputs_take_exact_values_only():
    with fvp.Session(KWS) as s:
        (i,) = s.inputs
        assert i.dtype == np.int8 and i.shape == (1, 49, 10, 1) and i.name and i.quantization["zero_point"] == -3
        x = np.random.default_rng(3).integers(-128, 128, i.shape)
        r = s.run(x)  # int64 values that int8 holds
        assert r.raw_outputs == s.run(x.astype(np.int8)).raw_outputs
        with pytest.raises(fvp.InputError, match="cannot hold exactly"):
            s.run(x * 3)
        with pytest.raises(fvp.InputError, match="cannot hold exactly"):
            s.run(x + 0.5)
        assert "NPU TOTAL cycles" in r.log and r.npu_cycles > 0 and r.pmu["NPU_IDLE"] >= 0
    assert "Inference completed." in s.final_log and s.end.reason == "user"


def test_a_failed_inference_stops_the_machine_and_restart_boots_a_new_one():
    s = fvp.Session(ADD_Q, overrides={"npu.max_commands": 3})  # the NPU's watchdog fires in the first stream
    try:
        with pytest.raises(fvp.InferenceError) as e:
            s.run()
        assert "inference 0 failed" in str(e.value) and e.value.reason == "abort" and not s.alive
        with pytest.raises(fvp.SessionError, match="restart"):
            s.run()
        s.restart()
        assert s.alive and s.count == 0
    finally:
        s.close()
    assert s.end.reason == "user"  # the restarted machine ended as the runner ends


def test_two_sessions_interleaved_keep_their_own_logs():
    with fvp.Session(ADD_Q) as a, fvp.Session(RESNET8) as b:
        x, y = np.float32([0.25]), np.float32([0.5])
        ra = a.run([x, y])
        rb = b.run()
        ra2 = a.run([y, y])
        assert abs(float(ra.outputs[0][0]) - 0.75) < 2 / 255 and abs(float(ra2.outputs[0][0]) - 1.0) < 2 / 255
        assert "Output[0][0]" in ra.log and ra.log.count("Output[") == 1 and rb.log.count("Output[") == 10
    assert "Program complete, exiting." in a.final_log and "Program complete, exiting." in b.final_log


def test_options_and_bad_configurations():
    with pytest.raises(fvp.ConfigError, match="not both"):
        fvp.Session(ADD_Q, board="default", target="ethos-u55-128")
    with pytest.raises(fvp.ConfigError, match="check_stream"):
        fvp.Session(ADD_Q, check_stream="loud")
    with pytest.raises(fvp.ConfigError):
        fvp.Session(ADD_Q, overrides=["npu.no_such_key=1"])
    with pytest.raises(fvp.SessionError, match="before its first inference: abort: Program loading failed") as e:
        fvp.Session(b"not a program at all")
    assert "\n" not in str(e.value)
    with fvp.Session(ADD_Q.read_bytes(), target="ethos-u55-128", check_stream="warn", name="add") as s:
        assert s.name == "add" and s.run([np.float32([1]), np.float32([1])]).outputs[0].shape == (1,)


def test_run_many_in_this_process_keeps_order_and_errors():
    with fvp.Session(ADD_Q) as s:
        samples = [[np.float32([k / 8]), np.float32([0.25])] for k in range(4)]
        samples.insert(2, [np.float32([1, 2]), np.float32([0])])
        seen = []
        rs = s.run_many(samples, on_error="keep", progress=seen.append)
        assert isinstance(rs[2], fvp.InputError) and "sample 2 input 0" in str(rs[2])
        assert [round(float(r.outputs[0][0]) * 8) for k, r in enumerate(rs) if k != 2] == [2, 3, 4, 5]
        assert sorted(seen) == [0, 1, 2, 3, 4]
        with pytest.raises(fvp.InputError):
            s.run_many(samples)


def test_data_set_on_processes_and_a_dask_cluster_equals_the_local_one():
    distributed = pytest.importorskip("distributed", reason="needs Dask distributed (pip install '.[cluster]')")
    rng = np.random.default_rng(11)
    samples = [[rng.uniform(0, 0.5, 1).astype(np.float32), rng.uniform(0, 0.5, 1).astype(np.float32)]
               for _ in range(5)]
    with fvp.Session(ADD_Q) as s:
        local = s.run_many(samples)
        pool = s.run_many(samples, jobs=2)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                      dashboard_address=None, silence_logs=40) as cluster:
            dask = s.run_many(samples, cluster=cluster)
    assert len({r.raw_outputs[0] for r in local}) == 5
    for other in (pool, dask):
        for a, b in zip(local, other):
            assert a.raw_outputs == b.raw_outputs
            assert (a.npu_cycles, a.cpu_cycles, a.pmu) == (b.npu_cycles, b.cpu_cycles, b.pmu)
