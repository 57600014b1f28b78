"""Runtime profiles: the facts that differ between ExecuTorch versions of the runner, as data.

A profile gives:

* ``struct_sizes``: sizes and alignments of the runtime's structs on a 32-bit Cortex-M55 (what the method
  allocator is charged for each object ``Method::init`` allocates), measured with ``arm-none-eabi-g++ 12.2
  -mcpu=cortex-m55`` on the headers of each version (``runtime/core/evalue.h``, ``tensor_impl.h``,
  ``runtime/executor/method.h``, ``runtime/backend/interface.h``);
* ``accounting``: how ``ArmMemoryAllocator`` counts ``used`` (``formula`` in PR #12353 .. v1.3, true pointer
  offsets from v1.4: ``examples/arm/executor_runner/arm_memory_allocator.cpp``);
* switches for the allocation sequence (``runtime/executor/method.cpp``: input-set list, boxed lists, where
  kernel ``TensorMeta`` comes from, the Ethos-U execution handle of ``backends/arm/runtime/EthosUBackend.cpp``,
  how ``prepare_input_tensors`` allocates, alignments);
* ``messages``: every log format string of the runner, its perf monitor and the Ethos-U delegate (Python
  ``str.format`` fields); a message that is ``None`` is not printed by that version;
* ``pmu_events``: the Ethos-U PMU events the perf monitor counts, per NPU family (``u55`` for the U55/U65,
  ``u85``), from ``arm_perf_monitor.cpp``;
* ``after_run``: the order of the runner's steps after the inferences (the PR-era runner printed memory
  statistics before the outputs, later runners after);
* for ``executorch-main-cff6f4dd`` also the build variants run_fvp.sh and the test harness use: the semihosting
  runner (``semihosting``: its argv echo, input and program files read in ``main()`` and counted from 1, the
  file pool's statistics line, output files instead of element lines, ``_exit(0)`` instead of the EOT byte)
  and the runner built with ``ET_MODEL_PTE_ADDR`` (``pte_addr_span``: the program given with ``--data``).

Profiles: ``executorch-1.5`` (ExecuTorch 1.5.x, the default for user programs), ``executorch-pr12353`` (the
runner of PR #12353, whose log the original tutorial shows) and ``executorch-main-cff6f4dd`` (ExecuTorch main at
commit cff6f4dd32e6, 2026-08-22: the runner as of #21913, the perf monitor as of #21911). Sources: the files
named above in https://github.com/pytorch/executorch at those commits (PR #12353 is commit 8f3eb3eb51).
"""

from __future__ import annotations

import string

_COMMON_MESSAGES = {
    "model_loaded": "PTE Model data loaded. Size: {size} bytes.",
    "program_load_failed": "Program loading failed @ 0x{addr:x}: 0x{status:x}",
    "methods": "Model buffer loaded, has {n} methods",
    "no_methods": "Program has no methods",
    "running_method": "Running method {name}",
    "method_meta_failed": "Failed to get method_meta for {name}: 0x{status:x}",
    "method_pool": "Setup Method allocator pool. Size: {size} bytes.",
    "load_failed": "Loading of method {name} failed with status 0x{status:x}",
    "method_loaded": "Method '{name}' loaded.",
    "preparing_inputs": "Preparing inputs...",
    "bundled_input": "Input testset[{index}] from bundled bpte",
    "input_prepared": "Input prepared.",
    "reading_input": "Reading input tensor {index} from file {path}",
    "reading_input_failed": "Reading input tensor {index} from file {path} failed.",
    "input_size_mismatch": "input size ({got}) and tensor size ({want}) mismatch!",
    "exec_failed": "Execution of method {name} failed with status 0x{status:x}",
    "outputs": "{n} outputs: ",
    "writing_output": "Writing output to file: {path}",
    "output_open_failed": "Could not open output file {path} (errno: {errno})",
    "error_stats": "=== Error stats for testset {index} ===",
    "mean_abs": " mean_absolute_error: {v:f}",
    "max_abs": " max_absolute_error:  {v:f}",
    "mean_rel": " mean_relative_error: {v:f}",
    "max_rel": " max_relative_error:  {v:f}",
    "error_stats_failed": "=== Error calculating stats for testset {index} ERROR:{status} ===",
    "bundle_match": "Model output match expected BundleIO bpte ref data.",
    "bundle_pass": "TEST: BundleIO index[{index}] Test_result: PASS",
    "bundle_mismatch": "Model output don't match expected BundleIO bpte ref data. rtol={rtol:f} atol={atol:f}",
    "bundle_fail": "TEST: BundleIO index[{index}] Test_result: FAIL",
    "bundle_failed_status": "Bundle verification failed with status 0x{status:x}",
    "pte_program_size": "model_pte_program_size:     {size} bytes.",
    "pte_loaded_size": "model_pte_loaded_size:      {size} bytes.",
    "method_used": "method_allocator_used:     {used} / {size}  free: {free} ( used: {pct} % ) ",
    "method_planned": "method_allocator_planned:  {n} bytes",
    "method_loaded_stat": "method_allocator_loaded:   {n} bytes",
    "method_input": "method_allocator_input:    {n} bytes",
    "method_executor": "method_allocator_executor: {n} bytes",
    "stats_unavailable": "{pool}_allocator: statistics unavailable (allocator '{kind}' keeps no statistics)",
    "complete": "Program complete, exiting.",
    "eot": "\x04",
    "problem": "Problem running model",
    # EthosUBackend
    "ethosu_data": "data:0x{addr:x}",
    "ethosu_scratch_failed": "Failed to allocate scratch buffer of {size} bytes from temp_allocator",
    "ethosu_invoke_failed": "Ethos-U invocation failed error ({code})",
    "ethosu_input_type": "Input {index} expected Integer (4 byte), Char (1 byte) or Bool (1 byte) integer inputs, got ScalarType id {stype} size {size}",
    "ethosu_input_sizes": "Input tensor sizes do not match",
    "ethosu_elements": "Program expects {want} elements but got {got}",
    "ethosu_output_sizes": "Total output tensor sizes do not match",
    "ethosu_output_bytes": "Program expects {want} bytes but got {got}",
    "delegate_failed": "CALL_DELEGATE execute failed at instruction {index}: 0x{status:x}",
    "kernel_failed": "KernelCall failed at instruction {chain}:{index} in operator {op}: 0x{status:x}",
    "missing_operator": "Missing operator: [{index}] {name}",
    "op_not_found": "Kernel not found for operator {name}",
    "backend_not_found": "Backend {name} is not registered.",
    # perf monitor; its event list line is "Ethos-U PMU Events:[ETHOSU_PMU_<name>, ...]" of the profile's pmu_events
    "perf_note": "NOTE: CPU cycle values and ratio calculations require FPGA and identical CPU/NPU frequency",
    "cpu_ratio_unknown": "Inference CPU ratio: ?.?? %",
    "npu_ratio_unknown": "Inference NPU ratio: ?.?? %",
    "cpu_ratio": "Inference CPU ratio: {v:.2f} %",
    "npu_ratio": "Inference NPU ratio: {v:.2f} %",
    "pmu_report": "Ethos-U PMU report:",
    "profiler_report": "Profiler report, CPU cycles per operator:",
    # perf monitor lines of StopMeasurements (n: the count, per: the value per inference)
    "perf_inferences": "NPU Inferences : {n}",
    "perf_delegations": "NPU delegations: {n} ({per:.2f} per inference)",
    "perf_backend": "ethos-u : cycle_cnt : {n} cycles ({per:.2f} per inference)",
    "perf_operators": "Operator(s) total: {n} CPU cycles ({per:.2f} per inference)",
    "perf_runtime": "Inference runtime: {n} CPU cycles total ({per:.2f} per inference)",
    "perf_wait": "cpu_wait_for_npu_cntr : {n} CPU cycles ({per:.2f} per inference)",
    "perf_pmu_cycles": "ethosu_pmu_cycle_cntr : {n} ({per:.2f} per inference)",
    "perf_pmu_counter": "ethosu_pmu_cntr{i} : {n} ({per:.2f} per inference)",
    "perf_pmu_events": "Ethos-U PMU Events:[{events}]",   # events: "ETHOSU_PMU_<name>, ..." of pmu_events
    # runner: the model check, ETDump, printf'd element lines ({label}: Input or Output)
    "model_not_initialized": "Model data is not initialized",
    "etdump_setup": "Setting up ETDump",
    "etdump_file": "Writing etdump to file: {path}",
    "etdump_open_failed": "Could not open etdump file {path} (errno: {errno})",
    "etdump_base64_size": "[base64] buffer size: {n}",
    "etdump_block": ("#[RUN THIS]\n", "# Writing etdump.bin [base64]\n", 'echo "{data}" | base64 -d >etdump.bin\n',
                     "# Generate cpu cycle table with:\n",
                     "python3 -m devtools.inspector.inspector_cli --etdump_path etdump.bin {flag} --source_time_scale "
                     "cycles --target_time_scale cycles\n", "#[END]\n"),
    # ET_DUMP_OUTPUTS / ET_DUMP_INTERMEDIATE_OUTPUTS: the debug buffer (addr: printed with "0x%p", newlib's %p
    # has its own 0x); its base64 lines follow "#[RUN THIS]", the flag goes into the inspector_cli line
    "etdump_debug_intermediate": "ETDump: Allocated intermediate output buffer size: {size} at 0x0x{addr:x}",
    "etdump_debug_outputs": "ETDump: Allocated output buffer size: {size} at 0x0x{addr:x}",
    "etdump_debug_alloc_failed": "ETDump: Could not allocate memory for output buffer size {size}",
    "etdump_debug_stat": "ETDump_outputs_buffer:     {used} / {size} free: {free} ( used: {pct} % ) ",
    "etdump_debug_empty": "No ETDump output buffers saved in the data area",
    "etdump_debug_block": ("# Writing debug_buffer.bin [base64]\n", 'echo "{data}" | base64 -d >debug_buffer.bin\n'),
    "etdump_debug_file": "Writing etdump debug_buffer to file: {path}",
    "etdump_debug_open_failed": "Could not open etdump debug buffer file {path} (errno: {errno})",
    "write_partial": "Failed to write whole output file {path}, wrote {written} of {size} bytes",
    "element_float": "{label}[{i}][{j}]: (float) {v:f}\n",
    "element_int": "{label}[{i}][{j}]: (int) {v}\n",
    "element_char": "{label}[{i}][{j}]: (char) {v}\n",
    "element_bool": "{label}[{i}][{j}]: (bool) {text} (0x{v:x})\n",
    "not_tensor": "{label}[{i}]: Not Tensor\n",
}

# arm_perf_monitor.cpp of PR #12353: no delegation count, no per-inference figures
_PR12353_PERF = {
    "perf_delegations": None,
    "perf_backend": "ethos-u : cycle_cnt : {n} cycles",
    "perf_operators": "Operator(s) total: {n} CPU cycles",
    "perf_runtime": "Inference runtime: {n} CPU cycles total",
    "perf_wait": "cpu_wait_for_npu_cntr : {n} CPU cycles",
    "perf_pmu_cycles": "ethosu_pmu_cycle_cntr : {n}",
    "perf_pmu_counter": "ethosu_pmu_cntr{i} : {n}",
}

# the events the perf monitor counts (ethosu_pmuEventCounts[i] is PMEVTYPER i's event), per NPU family: U55/U65
# (ETHOSU55 || ETHOSU65) four counters in every version; U85 five until e37062e0ac (2025-11-24), then seven
_PMU_EVENTS_U55 = ("AXI0_RD_DATA_BEAT_RECEIVED", "AXI1_RD_DATA_BEAT_RECEIVED", "AXI0_WR_DATA_BEAT_WRITTEN", "NPU_IDLE")
_PMU_EVENTS_U85_5 = ("SRAM_RD_DATA_BEAT_RECEIVED", "SRAM_WR_DATA_BEAT_WRITTEN", "EXT_RD_DATA_BEAT_RECEIVED",
                     "EXT_WR_DATA_BEAT_WRITTEN", "NPU_IDLE")
_PMU_EVENTS_U85_7 = _PMU_EVENTS_U85_5 + ("MAC_ACTIVE", "WD_ACTIVE")

_SIZES_V11 = {
    # name: (size, alignment) on a 32-bit Cortex-M55 (arm-none-eabi-g++ 12.2 on the v1.1+ headers)
    "EValue": (16, 8), "TensorImpl": (32, 4), "BackendDelegate": (40, 8), "CompileSpec": (12, 4),
    "Chain": (16, 4), "OpFunction": (4, 4), "EValuePtr": (4, 4), "InstructionArgs": (8, 4),
    "TensorMeta": (12, 4), "BoxedEvalueList": (12, 4), "ArrayRef": (8, 4), "Tensor": (4, 4),
    "OptionalTensor": (8, 4), "SizesType": (4, 4), "DimOrderType": (1, 1), "StridesType": (4, 4),
    "int64": (8, 8), "bool": (1, 1), "double": (8, 8), "voidptr": (4, 4),
}

PROFILES = {
    "executorch-1.5": {
        "description": "ExecuTorch 1.5 arm_executor_runner (true-offset accounting, HEAD log format)",
        "struct_sizes": dict(_SIZES_V11),
        "accounting": "true_offset",
        "default_alignment": 4,            # alignof(void*)
        "planned_alignment": 16,
        "scratch_alignment": 16,
        "input_set_list": True,            # bool[n_inputs] after values_ (since 2025-08)
        "boxed_lists": True,               # BoxedEvalueList / ArrayRef instances (since 2025-10)
        "kernel_meta_allocator": "temp",   # TensorMeta + dim orders from the temp allocator (since 2025-08)
        "ethosu_handle": None,             # ExecutionHandle on the heap (since v1.2)
        "prepare_inputs": "evalue_list",   # allocateList<EValue>(n), inputs filled in place
        "planned_fast_index": 2,           # planned buffer mem_id 3 lives in the FAST_MEMORY_REGION pool (2026-08)
        "fill_all_dtypes": True,
        "temp_line": "size",               # `temp_allocator:            <pool size>`
        "nopt_inference_count": "num_inferences",
        "pte_line": "PTE @ 0x{addr:x} [----{magic}]",
        "planned_line": "Setting up planned buffer with mem_id={mem_id}, size {size}.",
        "after_run": ["inferences_finished", "outputs", "verify", "model_run_run", "model_run_main", "mem_status",
                      "complete", "eot"],
        "run_lines": {"starting": "Starting running {n} inferences...", "finished": "{n} inferences finished",
                      "model_run": "Model run: {ok}"},
        "perf": "head",
        "cycle_bits": 32,                  # CPU cycle differences modulo 2^32 (the 32-bit CCNTR)
        "stop_count": "requested",         # StopMeasurements(num_inferences)
        "input_index_base": 0,             # "Reading input tensor 0 ..."
        "semihosting": None,               # the semihosting build is not modelled: -i files read in prepare
        "pte_addr_span": None,             # nor the ET_MODEL_PTE_ADDR build
        "pmu_events": {"u55": _PMU_EVENTS_U55, "u85": _PMU_EVENTS_U85_7},
        "messages": dict(
            _COMMON_MESSAGES, temp_size="temp_allocator:            {size}",
            planned_fast_pool="Setup planned FAST_MEMORY_REGION pool. Size: {size} bytes.",
            planned_fast_missing=("Planned buffer {index} uses mem_id={mem_id}/FAST_MEMORY_REGION, but "
                                  "ET_ARM_BAREMETAL_PLANNED_FAST_MEMORY_SIZE is not set"),
            planned_fast_stat="planned_fast_allocator:    {used} / {size} free: {free} ( used: {pct} % ) ",
            planned_fast_used="planned_fast_used:         {n} bytes"),
    },
    "executorch-pr12353": {
        "description": "The runner of ExecuTorch PR #12353 (July 2025), whose log the original tutorial shows",
        "struct_sizes": dict(_SIZES_V11, EValue=(24, 8), BackendDelegate=(24, 4), ExecutionHandle=(4, 4)),
        "accounting": "formula",
        "default_alignment": 4,
        "planned_alignment": 4,
        "scratch_alignment": 4,
        "input_set_list": False,
        "boxed_lists": False,
        "kernel_meta_allocator": "method",
        "ethosu_handle": "ExecutionHandle",
        "prepare_inputs": "pointer_array_and_buffers",
        "planned_fast_index": None,
        "fill_all_dtypes": False,          # only Int, Float, Char inputs are filled with ones
        "temp_line": "peak",
        "nopt_inference_count": "npu_invocations",
        "pte_line": "PTE in 0x{addr:x} {first} Size: {size} bytes",
        "planned_line": "Setting up planned buffer {index}, size {size}.",
        "after_run": ["model_executed", "mem_status", "outputs", "verify", "complete", "eot"],
        "run_lines": {"starting": "Starting the model execution...", "executed": "Model executed successfully."},
        "perf": "pr12353",
        "cycle_bits": 32,
        "stop_count": "requested",
        "input_index_base": 0,
        "semihosting": None,
        "pte_addr_span": None,
        "pmu_events": {"u55": _PMU_EVENTS_U55, "u85": _PMU_EVENTS_U85_5},
        "messages": dict(_COMMON_MESSAGES, **_PR12353_PERF,
                         peak_temp="peak_temp_allocator:       {peak} / {size} free: {free} ( used: {pct} % ) "),
    },
}

# ExecuTorch main at cff6f4dd32e6 (2026-08-22). Its runner (last changed by #21913) logs what executorch-1.5 logs
# for a program baked into the ELF; what this profile adds are the two builds run_fvp.sh and the pytest harness
# use, and the perf monitor of #21833 (CPU cycles from the PMU wherever __PMU_PRESENT, so a Cortex-M55 build
# reports them) and #21911 (64-bit cycle arithmetic printed as unsigned 64-bit values).
MAIN_COMMIT = "cff6f4dd32e630945b7188512c1f2b4f102b05ad"
PROFILES["executorch-main-cff6f4dd"] = dict(
    PROFILES["executorch-1.5"],
    description=f"ExecuTorch main at {MAIN_COMMIT[:12]} (2026-08-22): the semihosting and ET_MODEL_PTE_ADDR "
                f"builds, the perf monitor of #21833/#21911",
    commit=MAIN_COMMIT,
    struct_sizes=dict(_SIZES_V11),
    cycle_bits=64,                         # uint64_t cycle_count = arm_pmu_cycles() - start (#21911)
    stop_count="executed",                 # StopMeasurements(n): the inferences that ran (a failed one stops the loop)
    input_index_base=1,                    # nbr_inputs = input_buffers.size() + 1
    semihosting={                          # SEMIHOSTING: main() reads argv (cpu0.semihosting-cmd_line)
        "argc_min_model_file": 7,          # -m model.pte -i input.bin -o out
        "argc_min_compiled": 5,            # ET_COMPILED_PTE: -i input.bin -o out
        "file_pool_size": 60 * 1024 * 1024,  # ET_ARM_BAREMETAL_SEMIHOSTING_FILE_ALLOCATOR_POOL_SIZE default
        "file_alignment": 4,               # allocate(file_size): MemoryAllocator::kDefaultAlignment, alignof(void*)
        "etdump_path": "etdump.bin",       # write_etdump: fopen("etdump.bin") in the semihosting cwd
        "debug_buffer_path": "debug_buffer.bin",  # and fopen("debug_buffer.bin") for the debug buffer, first
    },
    pte_addr_span=0x10000000,              # ET_MODEL_PTE_ADDR: model_size = 0x10000000 (the size is not known)
    messages=dict(
        PROFILES["executorch-1.5"]["messages"],
        semi_params="Running executor with parameter:",
        semi_arg0="   {a}",
        semi_arg_pair="   {a} {b}",
        semi_argc_model=("Not right number of parameters!",
                         "app -m model.pte -i input.bin [-i input2.bin] -o output_basename", "Exiting!"),
        semi_argc_compiled=("Not right number of parameters!", "app -o output_basename -i input.bin [-i input2.bin]",
                            "Exiting!"),
        file_open_failed="Could not open file {path} (errno: {errno}) for reading, exiting!",
        file_alloc_failed="Failed to allocate input file size:{size}",
        reading_pte="Reading pte model from file {path}",
        reading_pte_failed="Reading pte model from file {path} failed.",
        missing_output="Missing required -o output_basename",
        # --server_mode (run_model_server, #21913): the loop that runs one inference per line read from stdin
        server_mode_missing="--server_mode requires true or false",
        server_mode_invalid="Invalid --server_mode value: {value}",
        server_mode="Running in semihosting server mode.",
        server_reload_failed="Could not reload inputs: 0x{status:x}",
        server_done="SERVER_INFERENCE_DONE {n}",
        wrong_inputs="Wrong number of inputs allocated compared to method",
        input_file_stat="input_file_allocator_used: {used} / {size} free: {free} ( used: {pct} % ) ",
        pte_program_size_addr="model_pte_program_size:     {size} bytes. (pte size unknown when not baked into elf)",
        pte_loaded_size_addr="model_pte_loaded_size:      {size} bytes. (pte size unknown when not baked into elf)",
    ),
)

# write_etdump's debug_buffer_flag when it printed the debug buffer: the %s of the inspector_cli line (a value,
# not a log format)
ETDUMP_DEBUG_FLAG = "--debug_buffer_path debug_buffer.bin"

DEFAULT_PROFILE = "executorch-1.5"
TUTORIAL_PROFILE = "executorch-pr12353"
# ``auto`` for a runner started with a semihosting command line (cpu0.semihosting-cmd_line): the one profile that
# models the semihosting build (argv, the input file pool, --server_mode, _exit(0))
SEMIHOSTING_PROFILE = "executorch-main-cff6f4dd"


def get_profile(name: str) -> dict:
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown runtime profile {name!r}; available: {', '.join(PROFILES)}") from None


def bind(template: str, **known) -> str:
    """``template`` with the fields named in ``known`` formatted in place (their format spec and conversion
    applied) and every other field kept, so that ``bind(t, **a).format(**b) == t.format(**a, **b)``: a line
    printed once per element formats only what changes."""
    out = []
    for text, field, spec, conv in string.Formatter().parse(template):
        out.append(text.replace("{", "{{").replace("}", "}}"))
        if field is None:
            continue
        if field in known and "{" not in spec:
            out.append(("{0" + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}").format(known[field])
                       .replace("{", "{{").replace("}", "}}"))
        else:
            out.append("{" + field + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}")
    return "".join(out)
