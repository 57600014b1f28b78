"""The runner kept alive between inferences: ExecuTorch main's semihosting server mode, and the host's session.

``run_model_server(runner)`` is ``run_model_server`` of ExecuTorch main's ``arm_executor_runner.cpp`` (added
with the Ethos-U85 KV-cache export, #21913, for step-wise decoding on the FVP; the semihosting build started
with ``--server_mode true``): after ``runner_init`` it logs ``Running in semihosting server mode.`` and, for
every ``fgets(line, 16, stdin)`` that reads something from the semihosting terminal, resets the input file
pool, reads the ``-i`` files again (the host rewrites them between requests; ``Could not reload inputs``
when one cannot be read), prepares the inputs with their EValue list from the temp allocator, runs one
inference between ``StartMeasurements`` and ``StopMeasurements(1)`` (the perf monitor's block after every
inference), writes ``<-o>-<i>.bin`` (``print_outputs``), resets the temp allocator and logs
``SERVER_INFERENCE_DONE <n>`` (counted from 0), which is what ExecuTorch's session tooling waits for
(``examples/arm/smollm2_example_ethos_u/generate_sampled.py``: ``FvpRunnerSession`` writes ``go`` and reads
``<out>-0.bin`` after that line). At the end of the input it verifies a bundled program (against the last
inference's outputs), logs ``Model run: <ok>`` and returns to ``main()``, which ends as after ``run_model``.

``serve(runner)`` is the session entry's loop (``fvp.machine.resident``'s protocol) on the same steps, for a
runner of any build: the inputs come with each request and the outputs go back with the reply, in memory,
instead of through files; the program and its inputs as ``set_input`` sees them (each tensor's bytes in
memory order); the perf monitor measures each inference on its own, as in the server mode, and its block is
printed after each. At the end: ``Model run: 1``, the memory statistics, the ETDump, ``Program complete,
exiting.`` and EOT (no BundleIO verification: the inputs were the host's).
"""

from __future__ import annotations

import numpy as np

from .executorch import log
from .executorch.error import Error, RuntimeFailure
from .executorch.method import RtTensor
from .executorch.program_info import io_description

FGETS_SIZE = 16  # char line[16] of run_model_server


def run_model_server(runner) -> bool:
    msgs, bus = runner.msgs, runner.bus
    log.info(msgs["server_mode"])
    count = 0
    while bus.host_read_line(FGETS_SIZE) is not None:
        alloc = runner.file_alloc
        alloc.reset()
        status = Error.Ok
        files = []
        for i, (path, _) in enumerate(runner.input_files):
            data = runner.read_host_file(path)
            if data is None:
                log.error(msgs["reading_input_failed"].format(index=i + 1, path=path))
                status = Error.AccessFailed
                break
            files.append((path, data))
        runner.check(status == Error.Ok, "status == Error::Ok", msgs["server_reload_failed"].format(status=int(status)))
        runner.input_files = files
        try:
            runner.set_input_buffers(runner.temp_alloc)
        except RuntimeFailure as e:
            runner.check(False, "status == Error::Ok", f"Failed to prepare inputs 0x{int(e.code):x}")
        _execute(runner)
        runner.print_outputs()
        runner.temp_alloc.reset()
        log.info(msgs["server_done"].format(n=count))
        count += 1
    model_ok = runner.verify_result() if runner.bundle is not None else True
    log.info(runner.profile["run_lines"]["model_run"].format(ok=int(model_ok)))
    return model_ok


def _execute(runner) -> None:
    """One inference between StartMeasurements and StopMeasurements(1); a failure is the runner's fatal check."""
    prof = runner.profile
    runner.perf.start()
    runner.bus.trace("B", "runner", "inference")
    try:
        runner.method.execute()
    except RuntimeFailure as e:
        runner.perf.stop(0 if prof["stop_count"] == "executed" else 1)
        runner.check(False, "status == Error::Ok",
                     runner.msgs["exec_failed"].format(name=runner.method_name, status=int(e.code)))
    runner.bus.trace("E", "runner", "inference")
    runner.perf.stop(1)


# ---------------------------------------------------------------------------------------- the host's session
def describe(runner) -> dict:
    """The program's inputs and outputs as the host needs them: ``fvp inspect``'s facts (dtype, shape, dim order,
    bytes, name, quantization) and the numpy dtype of each tensor's data."""
    plan = runner.program.execution_plans[0]
    inputs, outputs = io_description(plan)
    for info, vi in zip(inputs + outputs, list(plan.inputs) + list(plan.outputs)):
        value = runner.method.values[vi]
        info["numpy_dtype"] = (np.dtype(value.dtype).str if isinstance(value, RtTensor) and value.dtype is not None
                               else None)
        info["name"] = info.get("name") or None
    return {"image": "arm_executor_runner", "method": runner.method_name, "runtime": runner.profile_name,
            "bundled": runner.bundle is not None, "inputs": inputs, "outputs": outputs}


def _set_inputs(runner, request) -> None:
    m, msgs = runner.method, runner.msgs
    if len(request) != len(m.plan.inputs):
        log.error(msgs["wrong_inputs"])
        runner.check(False, "inputs.ok()", f"Failed to prepare inputs 0x{int(Error.InvalidArgument):x}")
    for i, data in enumerate(request):
        if data is None:  # a non-tensor input, or one the host leaves as it is
            continue
        t = m.input_tensor(i)
        if t is None or len(data) != t.nbytes:
            log.error(msgs["input_size_mismatch"].format(got=len(data), want=t.nbytes if t is not None else 0))
            runner.check(False, "inputs.ok()", f"Failed to prepare inputs 0x{int(Error.InvalidArgument):x}")
        m.set_input_bytes(i, data)


def _infer(runner, request) -> dict:
    _set_inputs(runner, request)
    _execute(runner)
    runner.temp_alloc.reset()
    runner.print_outputs()
    outs = [v.raw(runner.bus).tobytes() if isinstance(v, RtTensor) else None for v in runner.method.output_values()]
    return dict(runner.perf.report, outputs=outs)


def serve(runner):
    """The session entry's generator: boot, describe the program, one inference per request, end on ``None``."""
    runner.main(until_ready=True)
    request = yield describe(runner)
    while request is not None:
        log.install(runner.log)  # another session's runner may have logged in between
        reply = runner.checked(_infer, runner, request)
        request = yield reply
    log.install(runner.log)
    steps = [s for s in runner.profile["after_run"] if s not in ("inferences_finished", "outputs", "verify")]
    runner.checked(runner.after_init, True, steps)
    return 0
