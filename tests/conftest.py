"""How the test suite stays cheap (issue 30: the README's command under 150 CPU seconds, the quick subset under
30), and the mechanisms a new test should reuse:

- **Commands run in this process.** ``testutil.run_fvp("run", model, ...)`` (and ``prog="fvp.host.dropin"`` for the
  FVP drop-in, ``prog="tools/run.sh"`` for the tutorial flow) calls the command's ``main(argv)`` with stdout and
  stderr captured, the working directory and environment set for the call: the run's own CPU, not a new
  interpreter's 0.3-0.5 s (more with ``PYTHONDONTWRITEBYTECODE``, which recompiles every module per process).
  ``testutil.fvp_process(...)`` gives the same as a ``subprocess.CompletedProcess``. Only what a new process alone
  shows (start-up, imports, exit, signals, console scripts, environment read at import) takes
  ``new_process=True``; ``testutil.remarks(err)`` is stderr less the two lines every ``fvp run`` prints.
- **One run, several checks.** A run that several tests check is a module- or session-scoped fixture (e.g.
  ``tests/host/test_where_time_goes.py``'s ``mv1_profile``, ``test_sweep.py``'s ``local_sweep``); the stream checker
  rides on the corpus and oracle end-to-end runs (``--check-stream warn``) instead of running them again.
- **No clock.** No test asserts wall-clock time: Hypothesis's deadline is off (below); a bound on work is counted
  (``testutil.python_lines``); ``--timelimit`` runs on ``testutil.FakeSimClock``, which advances only at the NPU
  engines' interruption points.
- **Slow and quick.** ``SLOW_MODULES`` / ``SLOW_TESTS`` below are left out of the quick subset (``-m "not slow"``;
  the slow modules are then not even collected): whole programs in new processes, the corpus and oracle sweeps,
  the fuzz smoke run, Hypothesis campaigns of hundreds of examples, the Dask cluster, each 0.3 s or more (measured
  per test with a CPU-time hook, not wall time). A new test over 0.4 s CPU goes on the list, and shares a run
  with others where it can. The long fuzz campaign is ``tools/fuzz.py --cases 10000`` (README).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# No test asserts wall-clock time (a loaded host would make it fail): Hypothesis's per-example deadline is off
# for every test, and a test that checks a bound on work counts it (testutil.python_lines), never times it.
try:
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("fvp", deadline=None)
    _hypothesis_settings.load_profile("fvp")
except ImportError:  # the test extra brings it; a module that uses it says so when it is missing
    pass


def pytest_configure(config):
    """Under ``PYTHONDONTWRITEBYTECODE`` no process keeps compiled modules, so every process a test starts (an xdist
    worker, an ``fvp`` command, the drop-in under bash) compiled every module it imports again, 0.3-0.6 s each: the
    processes of this run share their bytecode in a folder of their own instead, removed at the end (nothing is
    written beside the sources; a ``PYTHONPYCACHEPREFIX`` the user set is left alone)."""
    import os
    import tempfile

    if hasattr(config, "workerinput") or not os.environ.get("PYTHONDONTWRITEBYTECODE") \
            or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    config._fvp_bytecode = tempfile.mkdtemp(prefix="fvp-tests-bytecode-")
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = config._fvp_bytecode


def pytest_unconfigure(config):
    import shutil

    if getattr(config, "_fvp_bytecode", None):
        shutil.rmtree(config._fvp_bytecode, ignore_errors=True)


# The quick subset (README: ``python3 -m pytest -q -m "not slow"``) leaves out these whole modules and tests (see
# the docstring). The full run (no -m) runs everything; a test in a new module is quick unless it is marked
# ``@pytest.mark.slow`` or listed here.
SLOW_MODULES = {
    "tests/host/test_fullsystem.py",  # QEMU runs: about 0.5-1.5 s of CPU each (QEMU's own included)
    "tests/host/test_fullsystem_firmware.py",  # a cross-compile of the test firmware
    "tests/test_oracle_extra.py",
    "tests/test_fuzz.py",
    "tests/test_corpus_end_to_end.py",
    "tests/tools/test_run_sh.py",
    "tests/host/test_sweep.py",
    "tests/host/test_run_fvp_sh.py",  # ExecuTorch's unchanged run_fvp.sh: bash, and the drop-in binaries it calls
    "tests/host/test_runner_elf.py",  # the cross-compiled runner ELFs through run_fvp.sh and the harness's lines
    "tests/host/test_startup.py",  # what a new process does: start-up, imports, exit
    "tests/host/test_tflm_entry.py",  # fvp run --vela: Vela compiles in its own process
    "tests/tools/test_validate_per_op.py",  # tools/validate_cycles.py as a script
    "tests/tools/test_tflite_npu.py",  # Vela in its own process
    "tests/host/test_server_mode.py",
}
SLOW_TESTS = {
    "tests/machine/npu/test_u85_programs.py::test_every_bundled_case_is_exact",
    "tests/machine/npu/test_u85_programs.py::test_a_session_takes_each_inference_s_branch",
    "tests/tools/test_validate_same_file.py::test_same_file_before_and_after_the_timing_adapters",
    "tests/machine/test_faults.py::test_an_invalid_register_value_is_one_line_and_exit_1",
    "tests/boards/test_config.py::test_cli_config_errors_exit_2_without_traceback",
    "tests/boards/test_config.py::test_embedded_program_follows_the_npu_override",
    "tests/boards/test_config.py::test_every_board_loads",
    "tests/boards/test_config.py::test_every_board_runs_the_embedded_program",
    "tests/boards/test_corstone320.py::test_fvp_boards_and_config_list_them",
    "tests/firmware/test_cortex_m_zoo.py::test_cortex_m55_program",
    "tests/firmware/test_cpu_programs.py::test_cpu_program_passes_its_bundled_check",
    "tests/firmware/test_dim_order.py::test_npy_input_is_laid_out_in_the_tensor_dim_order",
    "tests/firmware/test_etdump.py::test_base64_block_is_what_run_fvp_sh_extracts",
    "tests/firmware/test_etdump.py::test_etdump_bad_path_and_option_value",
    "tests/firmware/test_etdump.py::test_outputs_only_and_base64_block",
    "tests/firmware/test_program.py::test_absurd_lengths_offsets_and_vtables",
    "tests/firmware/test_program.py::test_every_byte_corrupted",
    "tests/firmware/test_runner.py::test_bundled_memory_figures_match_the_computed_sequence",
    "tests/firmware/test_runner.py::test_corrupt_programs_fail_cleanly",
    "tests/firmware/test_runner.py::test_cpu_only_programs",
    "tests/firmware/test_runner.py::test_kernel_call_memory_figures_match_the_computed_sequence",
    "tests/firmware/test_runner.py::test_output_files_and_input_files",
    "tests/firmware/test_silent_wrong_answers.py::test_tampered_vela_output_record_fails",
    "tests/firmware/tflm/test_tflm_image.py::test_fvp_run_and_the_dropin_pick_the_tflm_image_for_a_tflite",
    "tests/host/test_bench.py::test_bench_reports_a_failed_run_as_a_failure",
    "tests/host/test_bench.py::test_bench_smoke",
    "tests/host/test_digits.py::test_fvp_run_inputs_prints_the_accuracy",
    "tests/host/test_digits.py::test_the_npu_computes_what_the_quantized_reference_computes",
    "tests/host/test_dropin.py::test_bad_command_lines_give_one_line",
    "tests/host/test_dropin.py::test_config_file_limits_and_stat",
    "tests/host/test_dropin.py::test_elf_with_embedded_program_runs",
    "tests/host/test_dropin.py::test_elf_without_program_takes_data_pte",
    "tests/host/test_dropin.py::test_linked_elf_program_found_by_symbol",
    "tests/host/test_dropin.py::test_run_fvp_sh_command_line_and_elf_pools",
    "tests/host/test_dropin.py::test_u65_flavour_infers_memory_mode",
    "tests/host/test_dropin.py::test_unknown_fvp_parameter_warns_and_runs_on",
    "tests/host/test_dropin_exit_status.py::test_application_exit_status_is_lost_without_exit_extended",
    "tests/host/test_dropin_exit_status.py::test_limit_and_abort_exit_zero_usage_stays_two",
    "tests/host/test_dropin_exit_status.py::test_success_is_zero_either_way",
    "tests/host/test_dropin_sse320.py::test_a_program_for_the_other_fvp_says_which_binary_runs_it",
    "tests/host/test_dropin_sse320.py::test_corstone300_names_warn_and_are_ignored",
    "tests/host/test_dropin_sse320.py::test_fvp_run_target_and_program_pick_the_corstone320",
    "tests/host/test_dropin_sse320.py::test_run_fvp_sh_command_line_runs_a_u85_program",
    "tests/host/test_dropin_sse320.py::test_run_sh_flow_on_the_sse320",
    "tests/host/test_dropin_sse320.py::test_runner_utils_semihosting_command_line",
    "tests/host/test_elf.py::test_bad_inputs_are_one_line_exit_2",
    "tests/host/test_elf.py::test_round_trip_through_the_dropin",
    "tests/host/test_hostile_inputs.py::test_full_disk_under_stdout_and_the_uart_file_is_exit_1",
    "tests/host/test_hostile_inputs.py::test_schema_refuses_with_one_line_naming_the_override",
    "tests/host/test_inspect.py::test_bad_files_are_one_line_exit_2",
    "tests/host/test_inspect.py::test_cpu_program_and_two_delegates",
    "tests/host/test_inspect.py::test_missing_operator_is_named",
    "tests/host/test_inspect.py::test_planned_memory_is_what_the_runner_plans",
    "tests/host/test_pmu_trace.py::test_unknown_option_and_unwritable_file_are_refused",
    "tests/host/test_profile.py::test_compare_boards",
    "tests/host/test_profile.py::test_compare_several_programs_each_on_its_board",
    "tests/host/test_profile.py::test_pmu_block_has_cycles_and_beats",
    "tests/host/test_profile.py::test_profile_and_trace",
    "tests/host/test_profile.py::test_validate_cycles_fast",
    "tests/host/test_profile_executorch_main.py::test_data_mode_of_an_elf_built_with_ET_MODEL_PTE_ADDR",
    "tests/host/test_profile_executorch_main.py::test_semihosting_bundle_run_of_run_fvp_sh",
    "tests/host/test_profile_executorch_main.py::test_semihosting_run_of_the_test_harness",
    "tests/host/test_program_board.py::test_fvp_run_takes_the_compile_specs_and_notes_a_mismatch",
    "tests/host/test_program_board.py::test_plain_run_uses_the_programs_configuration",
    "tests/host/test_runner_elf.py::test_a_dedicated_sram_program_in_a_runner_built_without_fast_scratch",
    "tests/host/test_runner_elf.py::test_run_fvp_sh_data_on_the_pte_at_address_runner",
    "tests/host/test_runner_elf.py::test_run_fvp_sh_on_the_dedicated_sram_runner_with_planned_fast_memory",
    "tests/host/test_runner_elf.py::test_run_fvp_sh_on_the_etdump_runner",
    "tests/host/test_runner_elf.py::test_run_fvp_sh_on_the_u55_runner",
    "tests/host/test_runner_elf.py::test_run_fvp_sh_trace_file_on_the_u55_runner",
    "tests/host/test_runner_elf.py::test_runner_utils_command_line_on_the_semihosting_runner",
    "tests/host/test_runner_elf.py::test_runner_utils_with_a_network_read_from_the_host",
    "tests/host/test_readme_session.py::test_readme_session_example_prints_what_the_readme_shows",
    "tests/host/test_run_inputs.py::test_labels_that_do_not_match",
    "tests/host/test_run_inputs.py::test_npz_with_labels_writes_outputs_figures_and_accuracy",
    "tests/host/test_run_inputs.py::test_two_inputs_from_named_files_and_sub_folders",
    "tests/host/test_session_api.py::test_data_set_on_processes_and_a_dask_cluster_equals_the_local_one",
    "tests/host/test_session_api.py::test_import_fvp_stays_cheap",
    "tests/host/test_session_api.py::test_inputs_and_outputs_are_described",
    "tests/host/test_session_api.py::test_integer_inputs_take_exact_values_only",
    "tests/host/test_session_api.py::test_outputs_are_those_of_fvp_run_and_figures_do_not_depend_on_history",
    "tests/host/test_startup.py::test_a_short_run_never_imports_numba",
    "tests/host/test_startup.py::test_fast_exit_keeps_outputs_and_statuses",
    "tests/host/test_tflm_entry.py::test_a_dedicated_sram_elf_runs_in_that_memory_mode",
    "tests/host/test_tflm_entry.py::test_elfs_without_a_usable_model_are_refused",
    "tests/host/test_tflm_entry.py::test_fvp_elf_round_trip_through_the_dropin",
    "tests/host/test_tflm_entry.py::test_the_dropin_takes_the_arena_from_the_elf",
    "tests/host/test_tflm_entry.py::test_vela_compiles_for_the_board_and_runs",
    "tests/host/test_tflm_entry.py::test_vela_follows_the_target_and_the_memory_mode",
    "tests/host/test_tflm_entry.py::test_vela_refuses_what_it_cannot_compile",
    "tests/machine/npu/test_builtin_activations.py::test_every_int16_input_gives_tflites_int16_result",
    "tests/machine/npu/test_builtin_activations.py::test_fast_equals_reference_with_builtin_activations",
    "tests/machine/npu/test_checker.py::test_corpus_runs_clean",
    "tests/machine/npu/test_copy_runs.py::test_corpus_streams_are_the_same_with_and_without_the_runs",
    "tests/machine/npu/test_copy_runs.py::test_16_bit_copies_and_two_regions",
    "tests/machine/npu/test_engine_long_runs.py::test_every_size_takes_the_kernels_after_the_threshold",
    "tests/machine/npu/test_engine_long_runs.py::test_transposition_pools_copy_and_equal_the_reference",
    "tests/machine/npu/test_engine_long_runs.py::test_a_long_runs_paths_leave_every_inference_as_it_was",
    "tests/machine/npu/test_engine_long_runs.py::test_fused_elementwise_equals_the_reference",
    "tests/machine/npu/test_engines.py::test_fast_conv_paths_match_reference",
    "tests/machine/npu/test_execute_corpus.py::test_mv2_full_bit_exact_and_engines_agree_op_by_op",
    "tests/machine/test_bounds.py::test_cli_exit_status_3_for_a_long_operation",
    "tests/machine/test_bounds.py::test_long_operation_interrupted_by_timelimit",
    "tests/machine/test_bounds.py::test_operations_per_stream_bounded",
    "tests/machine/test_platform.py::test_disasm_add_q",
    "tests/shared/test_safe_write.py::test_output_write_failure_is_exit_1_with_the_real_errno",
    "tests/tools/test_validate_u85.py::test_u85_cycles_fall_with_the_mac_count",
    # Hypothesis campaigns of hundreds of examples (the readers' and the MLW decoder's bit flips and garbage)
    "tests/firmware/test_vela_bin.py::test_random_bit_flips",
    "tests/firmware/test_program.py::test_random_bit_flips_pte",
    "tests/firmware/test_program.py::test_random_bit_flips_bpte",
    "tests/machine/npu/test_mlw.py::test_bit_flipped_streams",
    "tests/machine/npu/test_mlw.py::test_valid_header_random_body",
    "tests/machine/npu/test_mlw.py::test_numba_matches_reference_on_generated_encodings",
    "tests/machine/npu/test_mlw.py::test_random_bytes_never_crash",
    # whole runs, new processes, rendering
    "tests/machine/npu/test_checker.py::test_u85_gate_fixture_vela_defect_flagged_as_overlapping_tiles",
    "tests/machine/npu/test_diskcache.py::test_concurrent_writers_leave_whole_entries",
    # Vela compiles of every case for every U85 size (the quick subset compiles them for the first size only)
    "tests/machine/npu/test_weights_u85.py::test_vela_cases_cover_every_format",
    "tests/host/test_dropin_sse320.py::test_the_binary_name_is_a_console_script",
    "tests/host/test_profile.py::test_compare_plot_reads_at_a_glance",
    "tests/host/test_profile.py::test_bigger_npu_is_faster",
    "tests/firmware/tflm/test_tflm_image.py::test_vela_model_runs_npu_and_cpu_parts_bit_exact",
    "tests/host/test_profile_executorch_main.py::test_formats_file_is_read_from_main_sources",
}


# Random campaigns parametrized by a seed (or over every accelerator): the quick subset runs the first seeds (or the
# first accelerator), the full run all of them; the test's name -> (parameter, how many of its values stay quick)
QUICK_SHARE = {
    "tests/machine/npu/test_weights.py::test_ordering_matches_vela_random": ("seed", 1),
    "tests/machine/npu/test_weights_u85.py::test_weights_round_trip_vela": ("accelerator", 1),
    "tests/machine/npu/test_execute_vela_api.py::test_vela_api_stream_matches_independent_computation": ("seed", 2),
    "tests/machine/npu/test_engines.py::test_fast_equals_reference_random_ops": ("seed", 100),
    "tests/machine/npu/test_startup_paths.py::test_fast_paths_equal_reference": ("seed", 40),
    "tests/machine/npu/test_weights_u85.py::test_scales_vela": ("accelerator", 1),
    "tests/machine/npu/test_weights_u85.py::test_numba_traversal_matches_numpy": ("seed", 1),
    # every int16 input through each fixture: the fast engine in the quick subset, the reference engine too in the full
    "tests/firmware/tflm/test_toolchain_fixtures.py::test_int16_sigmoid_tanh_fixture_on_the_npu_model": ("engine", 1),
}


def _quick(config) -> bool:
    return (config.getoption("markexpr") or "").strip() == "not slow"


_ROOT = Path(__file__).resolve().parent.parent
_SLOW_NAMES = {m.rpartition("/")[2] for m in SLOW_MODULES}


_RELATIVE: dict = {}  # path -> what _relative gives


def _relative(path) -> str | None:
    """``path`` relative to the checkout (posix), None outside it; one ``resolve`` per path (the items of a
    module share theirs: a resolve per item was a second of the quick subset's collection)."""
    key = str(path)
    if key not in _RELATIVE:
        try:
            _RELATIVE[key] = Path(path).resolve().relative_to(_ROOT).as_posix()
        except ValueError:
            _RELATIVE[key] = None
    return _RELATIVE[key]


def pytest_ignore_collect(collection_path, config):
    """The quick subset does not even import the slow modules (their collection is a good part of its cost)."""
    if not _quick(config) or Path(collection_path).name not in _SLOW_NAMES:
        return None
    return True if _relative(collection_path) in SLOW_MODULES else None


def _qemu_problem() -> str | None:
    """Why the full-system tests cannot run here (None: QEMU is usable)."""
    from fvp.machine.qemu.process import QemuUnavailable, check_qemu

    try:
        check_qemu()
    except QemuUnavailable as e:
        return str(e)
    return None


_QEMU_SKIPPED: list = []


def pytest_collection_modifyitems(config, items):
    import os

    import pytest

    # tests of the full-system mode (marker qemu) need QEMU: without it they are skipped and the session summary
    # says so in a line of its own; where it must be there (CI: FVP_REQUIRE_QEMU=1) they fail instead
    marked = [i for i in items if i.get_closest_marker("qemu") is not None]
    problem = _qemu_problem() if marked else None
    if problem:
        required = os.environ.get("FVP_REQUIRE_QEMU") == "1"
        for item in marked:
            if required:
                item.add_marker(pytest.mark.usefixtures("_qemu_required"))
            else:
                item.add_marker(pytest.mark.skip(reason=f"full-system test needs QEMU: {problem}"))
        _QEMU_SKIPPED[:] = [len(marked), problem, required]

    seen: dict = {}  # test -> the values of its QUICK_SHARE parameter, in collection order
    for item in items:
        rel = _relative(item.path)
        if rel is None:
            continue
        name = item.originalname or item.name
        if rel in SLOW_MODULES or f"{rel}::{name}" in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
        share = QUICK_SHARE.get(f"{rel}::{name}")
        if share is not None and getattr(item, "callspec", None) is not None:
            values = seen.setdefault(f"{rel}::{name}", [])
            value = repr(item.callspec.params.get(share[0]))
            if value not in values:
                values.append(value)
            if values.index(value) >= share[1]:
                item.add_marker(pytest.mark.slow)
    # tests of the optional ExecuTorch toolchain run where it is installed (or EXECUTORCH_PYTHON names one) and
    # are deselected, not skipped, elsewhere: `-m executorch` asks for them explicitly
    if not _executorch_available() and "executorch" not in (config.getoption("markexpr") or ""):
        keep = [i for i in items if i.get_closest_marker("executorch") is None]
        if len(keep) != len(items):
            config.hook.pytest_deselected(items=[i for i in items if i.get_closest_marker("executorch")])
            items[:] = keep


    # tests of ExecuTorch's unchanged run_fvp.sh need the script (an ExecuTorch checkout or git directory):
    # deselected, not skipped, without it
    if "run_fvp_sh" not in (config.getoption("markexpr") or "") and any(
            i.get_closest_marker("run_fvp_sh") for i in items):
        from testutil import run_fvp_sh_source

        if run_fvp_sh_source() is None:
            config.hook.pytest_deselected(items=[i for i in items if i.get_closest_marker("run_fvp_sh")])
            items[:] = [i for i in items if i.get_closest_marker("run_fvp_sh") is None]


def _executorch_available() -> bool:
    import importlib.util
    import os

    return bool(os.environ.get("EXECUTORCH_PYTHON")) or importlib.util.find_spec("executorch") is not None


import pytest  # noqa: E402


@pytest.fixture
def _qemu_required():
    pytest.fail(f"FVP_REQUIRE_QEMU=1 but the full-system tests cannot run: {_QEMU_SKIPPED[1]}")


def pytest_terminal_summary(terminalreporter):
    if _QEMU_SKIPPED:
        n, problem, required = _QEMU_SKIPPED
        verb = "FAILED (FVP_REQUIRE_QEMU=1)" if required else "NOT RUN"
        terminalreporter.write_line(f"full-system tests {verb}: {n} tests need QEMU: {problem}", yellow=True,
                                    bold=True)
