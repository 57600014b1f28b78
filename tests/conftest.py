import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


# The quick subset (README: ``python3 -m pytest -q -m "not slow"``, under a minute on a 2-core host) leaves out
# these whole modules and tests: end-to-end runs of whole programs in new processes, the corpus and oracle
# sweeps, the fuzz smoke run, the Dask cluster, each of them 0.7 s or more (measured with --durations=0). The
# full run (no -m) runs everything; a test in a new module is quick unless it is marked ``@pytest.mark.slow``.
SLOW_MODULES = {
    "tests/test_oracle_extra.py",
    "tests/test_fuzz.py",
    "tests/test_corpus_end_to_end.py",
    "tests/tools/test_run_sh.py",
    "tests/host/test_sweep.py",
}
SLOW_TESTS = {
    "tests/boards/test_config.py::test_cli_config_errors_exit_2_without_traceback",
    "tests/boards/test_config.py::test_embedded_program_follows_the_npu_override",
    "tests/boards/test_config.py::test_every_board_runs_the_embedded_program",
    "tests/firmware/test_cortex_m_zoo.py::test_cortex_m55_program",
    "tests/firmware/test_cpu_programs.py::test_cpu_program_passes_its_bundled_check",
    "tests/firmware/test_dim_order.py::test_npy_input_is_laid_out_in_the_tensor_dim_order",
    "tests/firmware/test_program.py::test_absurd_lengths_offsets_and_vtables",
    "tests/firmware/test_program.py::test_every_byte_corrupted",
    "tests/firmware/test_runner.py::test_bundled_memory_figures_match_the_computed_sequence",
    "tests/firmware/test_runner.py::test_corrupt_programs_fail_cleanly",
    "tests/firmware/test_runner.py::test_cpu_only_programs",
    "tests/firmware/test_runner.py::test_kernel_call_memory_figures_match_the_computed_sequence",
    "tests/firmware/test_runner.py::test_output_files_and_input_files",
    "tests/firmware/test_silent_wrong_answers.py::test_tampered_vela_output_record_fails",
    "tests/firmware/tflm/test_tflm.py::test_fvp_run_and_the_dropin_pick_the_tflm_image_for_a_tflite",
    "tests/host/test_dropin.py::test_bad_command_lines_give_one_line",
    "tests/host/test_dropin.py::test_config_file_limits_and_stat",
    "tests/host/test_hostile_inputs.py::test_schema_refuses_with_one_line_naming_the_override",
    "tests/host/test_profile.py::test_compare_boards",
    "tests/host/test_profile.py::test_compare_several_programs_each_on_its_board",
    "tests/host/test_profile.py::test_pmu_block_has_cycles_and_beats",
    "tests/host/test_profile.py::test_profile_and_trace",
    "tests/host/test_program_board.py::test_fvp_run_takes_the_compile_specs_and_notes_a_mismatch",
    "tests/host/test_program_board.py::test_plain_run_uses_the_programs_configuration",
    "tests/host/test_startup.py::test_fast_exit_keeps_outputs_and_statuses",
    "tests/machine/npu/test_checker.py::test_corpus_runs_clean",
    "tests/machine/npu/test_execute_corpus.py::test_mv2_full_bit_exact_and_engines_agree_op_by_op",
    "tests/machine/test_bounds.py::test_cli_exit_status_3_for_a_long_operation",
    "tests/machine/test_bounds.py::test_long_operation_interrupted_by_timelimit",
    "tests/machine/test_bounds.py::test_operations_per_stream_bounded",
    "tests/machine/test_platform.py::test_disasm_add_q",
    "tests/shared/test_safe_write.py::test_output_write_failure_is_exit_1_with_the_real_errno",
}


def pytest_collection_modifyitems(config, items):
    import pytest

    root = Path(__file__).resolve().parent.parent
    for item in items:
        try:
            rel = Path(item.path).resolve().relative_to(root).as_posix()
        except ValueError:
            continue
        name = item.originalname or item.name
        if rel in SLOW_MODULES or f"{rel}::{name}" in SLOW_TESTS:
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
