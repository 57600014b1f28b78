"""What ExecuTorch's Arm scripts fix per target: defaults, FVP binary, and the runner's pools per memory mode.

``examples/arm/run.sh`` compiles the model and builds ``arm_executor_runner`` for one target, system config and
memory mode; ``backends/arm/scripts/run_fvp.sh`` then picks the FVP binary and ``ethosu.num_macs`` from the
target: ``FVP_Corstone_SSE-300_Ethos-U55``/``-U65`` for the Ethos-U55/U65, ``FVP_Corstone_SSE-320`` (with the
``mps4_board.*`` parameter names, ``mps4_board.subsystem.ethosu.num_macs``) for the Ethos-U85. The memory mode
also changes the runner's linker layout (corstone_utils.cmake, Corstone-300.ld and Corstone-320.ld alike: the
pool sizes below are the CMake's for both):

- ``Shared_Sram`` / ``Sram_Only``: the temp pool (``.bss.tensor_arena``, 2 MiB) in SRAM (``ETHOSU_ARENA=0``);
- ``Dedicated_Sram``: the temp pool in DDR (64 MiB) plus a 384 KiB fast scratch (``dedicated_sram``, region 2
  of the NPU) in SRAM; ``Dedicated_Sram_<N>KB`` / ``_<N>MB`` set the fast scratch to that size.

``board_overrides`` turns a (target, system config, memory mode) into the board name and the ``-C`` overrides
that give this simulator the same setup (research: executorch.md sections 1.6 and 5).

Cortex-M-only targets (``--target=cortex-m55``: no delegate, the quantized layers run as ``cortex_m::*``
CMSIS-NN kernels) run on the same Corstone-300 FVP with the NPU unused. run.sh builds one semihosting runner for
them (``backends/cortex_m/test/build_test_runner.sh``: ``--pte=semihosting --bundleio``, ``ET_ATOL=5.0``,
``ET_RTOL=1.0``, temp pool size 0) and ``run_fvp.sh --bundle`` loads the ``.bpte`` through semihosting; only the
Cortex-M55 is modelled here (the kernels follow CMSIS-NN's MVE code paths).
"""

from __future__ import annotations

import re

from ... import units
from ...boards import ConfigProblems, board_for_target, load_board

CORSTONE300_TARGETS = ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256",
                       "ethos-u65-256", "ethos-u65-512")
CORSTONE320_TARGETS = ("ethos-u85-128", "ethos-u85-256", "ethos-u85-512", "ethos-u85-1024", "ethos-u85-2048")
CORTEX_M_TARGETS = ("cortex-m55",)
CORTEX_M_BOARD = "default"           # the default Corstone-300 board; the NPU is there but unused
CORTEX_M_RUNNER_OVERRIDES = [        # build_test_runner.sh: -DET_ATOL=5.0 -DET_RTOL=1.0 and no temp pool
    "firmware.options.atol=5.0", "firmware.options.rtol=1.0", "firmware.pools.temp.size=0"]

TEMP_POOL_SRAM = "2MiB"          # ET_ARM_BAREMETAL_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE 0x200000
TEMP_POOL_DDR = "64MiB"          # 0x4000000 for Dedicated_Sram*
# the semihosting runner's input_file_allocation_pool (ET_ARM_BAREMETAL_INPUT_FILE_ALLOCATOR_POOL_SIZE), in DDR: the
# program and input files it reads from the host (-m, -i); 60 MiB in setup_testing.sh's runners (docs/runner-elf.md)
INPUT_FILE_POOL = "60MiB"

MODEL_ADDRESS = 0x7000_0000      # network_model_sec -> .ddr.rodata, the first section in DDR


def check_target(target: str) -> None:
    """Raise ``ConfigProblems`` for a target this simulator does not model (one line, with the allowed ones)."""
    if target in CORSTONE300_TARGETS or target in CORSTONE320_TARGETS or target in CORTEX_M_TARGETS:
        return
    if target.startswith("cortex-m"):
        why = ("only the Corstone-300's Cortex-M55 is modelled (its cortex_m kernels follow CMSIS-NN's MVE code "
               "paths)")
    else:
        why = "unknown target"
    allowed = CORSTONE300_TARGETS + CORSTONE320_TARGETS + CORTEX_M_TARGETS
    raise ConfigProblems([f"--target={target}: {why}; allowed: {', '.join(allowed)}"])


def is_cortex_m(target: str) -> bool:
    """A Cortex-M-only target (no NPU delegate): the program runs on the semihosting runner."""
    return target.startswith("cortex-m")


def is_u85(target: str) -> bool:
    """An Ethos-U85 target: it runs on the Corstone-320 (run_fvp.sh: ``FVP_Corstone_SSE-320``)."""
    return target.startswith("ethos-u85")


def default_system_config(target: str) -> str:
    """run.sh's defaults: Ethos_U55_High_End_Embedded, Ethos_U65_High_End, Ethos_U85_SYS_DRAM_Mid."""
    if is_u85(target):
        return "Ethos_U85_SYS_DRAM_Mid"
    return "Ethos_U65_High_End" if target.startswith("ethos-u65") else "Ethos_U55_High_End_Embedded"


def default_memory_mode(target: str) -> str:
    """run.sh's defaults: Shared_Sram for Ethos-U55, Sram_Only for Ethos-U65, Dedicated_Sram_384KB for Ethos-U85
    (run.sh passes them to aot_arm_compiler and to the runner build)."""
    if is_u85(target):
        return "Dedicated_Sram_384KB"
    return "Sram_Only" if target.startswith("ethos-u65") else "Shared_Sram"


def fvp_binary(target: str) -> str:
    if is_u85(target):
        return "FVP_Corstone_SSE-320"
    return "FVP_Corstone_SSE-300_Ethos-U65" if target.startswith("ethos-u65") else "FVP_Corstone_SSE-300_Ethos-U55"


def flavour(target: str) -> str:
    """The drop-in's flavour (``python -m fvp.host.dropin --flavour=...``) that stands for ``fvp_binary``."""
    if is_u85(target):
        return "u85"
    return "u65" if target.startswith("ethos-u65") else "u55"


def fvp_params(target: str) -> list[str]:
    """run_fvp.sh's ``-C`` parameters for a target (without semihosting and extra args): the NPU size, no
    visualisation or telnet windows, UART0 to stdout, stop on EOT."""
    if is_u85(target):
        return [f"mps4_board.subsystem.ethosu.num_macs={num_macs(target)}",
                "mps4_board.visualisation.disable-visualisation=1",
                "vis_hdlcd.disable_visualisation=1",
                "mps4_board.telnetterminal0.start_telnet=0",
                "mps4_board.uart0.out_file=-",
                "mps4_board.uart0.unbuffered_output=1",
                "mps4_board.uart0.shutdown_on_eot=1"]
    return [f"ethosu.num_macs={num_macs(target)}",
            "mps3_board.visualisation.disable-visualisation=1",
            "mps3_board.telnetterminal0.start_telnet=0",
            "mps3_board.uart0.out_file=-",
            "mps3_board.uart0.shutdown_on_eot=1"]


def num_macs(target: str) -> int:
    """The third ``-`` field of the target, as run_fvp.sh computes it (128 for anything without one, and for the
    Cortex-M targets, whose NPU is unused)."""
    parts = target.split("-")
    return int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else 128


def fast_scratch_size(memory_mode: str) -> str | None:
    """The fast scratch a memory mode needs (``None``: none): the arena cache Vela's memory mode compiles for
    (``arena_cache_size`` in the boards' ``vela.yaml``: 384 KiB for Dedicated_Sram, the CMake's 0x60000 too);
    a ``Dedicated_Sram_<N>KB``/``_<N>MB`` that table lacks has the size its name says, as the CMake reads it."""
    if not memory_mode.startswith("Dedicated_Sram"):
        return None
    mode = (load_board(None).raw.get("memory_modes") or {}).get(memory_mode) or {}
    if mode.get("arena_cache_size"):
        return units.format_size(mode["arena_cache_size"])
    m = re.fullmatch(r"Dedicated_Sram_(\d+)(KB|MB)", memory_mode)
    if m:
        return f"{m.group(1)}{'KiB' if m.group(2) == 'KB' else 'MiB'}"
    raise ConfigProblems([f"npu.memory_mode: {memory_mode}: no arena cache size (memory_modes.{memory_mode}."
                          f"arena_cache_size) and none in its name (Dedicated_Sram_<N>KB)"])


def pool_settings(memory_mode: str, has_fast_scratch: bool) -> dict:
    """The board keys placing the temp pool and the fast scratch as the runner's build does for ``memory_mode``.

    ``has_fast_scratch`` says whether the base board already declares ``firmware.pools.fast_scratch`` (a board
    without one gets it created; a board with one gets its size set to 0 when the mode has none).
    """
    fast = fast_scratch_size(memory_mode)
    if fast is None:
        out = {"firmware.pools.temp.region": "SRAM", "firmware.pools.temp.size": TEMP_POOL_SRAM}
        if has_fast_scratch:
            out["firmware.pools.fast_scratch.size"] = 0
        return out
    return {"firmware.pools.temp.region": "DDR", "firmware.pools.temp.size": TEMP_POOL_DDR,
            "firmware.pools.fast_scratch.region": "SRAM", "firmware.pools.fast_scratch.size": fast,
            "firmware.pools.fast_scratch.align": 16, "firmware.pools.fast_scratch.npu": True}


def as_overrides(settings: dict) -> list[str]:
    """Board keys as the ``-C`` overrides that set them (for a command line: run.sh's, a sweep point's)."""
    return [f"{key}={str(value).lower() if isinstance(value, bool) else value}" for key, value in settings.items()]


def pool_overrides(memory_mode: str, has_fast_scratch: bool) -> list[str]:
    """``pool_settings`` as ``-C`` overrides."""
    return as_overrides(pool_settings(memory_mode, has_fast_scratch))


def board_has_pool(board: str, pool: str) -> bool:
    spec = load_board(board)
    return pool in spec.firmware.pools


def board_overrides(target: str, system_config: str | None = None, memory_mode: str | None = None,
                    board: str | None = None) -> tuple[str, list[str]]:
    """The board and ``-C`` overrides for a run.sh configuration (defaults filled in from the target).

    A Cortex-M target gets the default board with the semihosting runner's build settings (the system config and
    memory mode are Vela's and play no part)."""
    check_target(target)
    if is_cortex_m(target):
        return board or CORTEX_M_BOARD, list(CORTEX_M_RUNNER_OVERRIDES)
    board = board or board_for_target(target)
    sc = system_config or default_system_config(target)
    mm = memory_mode or default_memory_mode(target)
    overrides = [f"npu.variant={target}", f"npu.system_config={sc}", f"npu.memory_mode={mm}"]
    overrides += pool_overrides(mm, board_has_pool(board, "fast_scratch"))
    return board, overrides
