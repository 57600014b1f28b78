"""What ExecuTorch's Arm scripts fix per target: defaults, FVP binary, and the runner's pools per memory mode.

``examples/arm/run.sh`` compiles the model and builds ``arm_executor_runner`` for one target, system config and
memory mode; ``backends/arm/scripts/run_fvp.sh`` then picks the FVP binary and ``ethosu.num_macs`` from the
target. The memory mode also changes the runner's linker layout (corstone_utils.cmake, Corstone-300.ld):

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

from ..boards import ConfigProblems, board_for_target, load_board

CORSTONE300_TARGETS = ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256",
                       "ethos-u65-256", "ethos-u65-512")
CORTEX_M_TARGETS = ("cortex-m55",)
CORTEX_M_BOARD = "default"           # the default Corstone-300 board; the NPU is there but unused
CORTEX_M_RUNNER_OVERRIDES = [        # build_test_runner.sh: -DET_ATOL=5.0 -DET_RTOL=1.0 and no temp pool
    "firmware.options.atol=5.0", "firmware.options.rtol=1.0", "firmware.pools.temp.size=0"]

TEMP_POOL_SRAM = "2MiB"          # ET_ARM_BAREMETAL_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE 0x200000
TEMP_POOL_DDR = "64MiB"          # 0x4000000 for Dedicated_Sram*
FAST_SCRATCH_DEFAULT = "384KiB"  # 0x60000 for Dedicated_Sram

MODEL_ADDRESS = 0x7000_0000      # network_model_sec -> .ddr.rodata, the first section in DDR


def check_target(target: str) -> None:
    """Raise ``ConfigProblems`` for a target this simulator does not model (one line, with the allowed ones)."""
    if target in CORSTONE300_TARGETS or target in CORTEX_M_TARGETS:
        return
    if target.startswith("ethos-u85"):
        why = "Ethos-U85 runs on Corstone-320, which this simulator does not model"
    elif target.startswith("cortex-m"):
        why = ("only the Corstone-300's Cortex-M55 is modelled (its cortex_m kernels follow CMSIS-NN's MVE code "
               "paths)")
    else:
        why = "unknown target"
    raise ConfigProblems([f"--target={target}: {why}; allowed: {', '.join(CORSTONE300_TARGETS + CORTEX_M_TARGETS)}"])


def is_cortex_m(target: str) -> bool:
    """A Cortex-M-only target (no NPU delegate): the program runs on the semihosting runner."""
    return target.startswith("cortex-m")


def default_system_config(target: str) -> str:
    return "Ethos_U65_High_End" if target.startswith("ethos-u65") else "Ethos_U55_High_End_Embedded"


def default_memory_mode(target: str) -> str:
    """run.sh / aot_arm_compiler defaults: Shared_Sram for Ethos-U55, Sram_Only for Ethos-U65."""
    return "Sram_Only" if target.startswith("ethos-u65") else "Shared_Sram"


def fvp_binary(target: str) -> str:
    return "FVP_Corstone_SSE-300_Ethos-U65" if target.startswith("ethos-u65") else "FVP_Corstone_SSE-300_Ethos-U55"


def flavour(target: str) -> str:
    return "u65" if target.startswith("ethos-u65") else "u55"


def num_macs(target: str) -> int:
    """The third ``-`` field of the target, as run_fvp.sh computes it (128 for anything without one, and for the
    Cortex-M targets, whose NPU is unused)."""
    parts = target.split("-")
    return int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else 128


def fast_scratch_size(memory_mode: str) -> str | None:
    """The fast scratch a memory mode needs (``None``: none); ``Dedicated_Sram_512KB`` -> ``512KiB``."""
    if not memory_mode.startswith("Dedicated_Sram"):
        return None
    m = re.fullmatch(r"Dedicated_Sram_(\d+)(KB|MB)", memory_mode)
    if m:
        return f"{m.group(1)}{'KiB' if m.group(2) == 'KB' else 'MiB'}"
    return FAST_SCRATCH_DEFAULT


def pool_overrides(memory_mode: str, has_fast_scratch: bool) -> list[str]:
    """``-C`` overrides placing the temp pool and the fast scratch as the runner's build does for ``memory_mode``.

    ``has_fast_scratch`` says whether the base board already declares ``firmware.pools.fast_scratch`` (a board
    without one gets it created; a board with one gets its size set to 0 when the mode has none).
    """
    fast = fast_scratch_size(memory_mode)
    if fast is None:
        out = ["firmware.pools.temp.region=SRAM", f"firmware.pools.temp.size={TEMP_POOL_SRAM}"]
        if has_fast_scratch:
            out.append("firmware.pools.fast_scratch.size=0")
        return out
    return ["firmware.pools.temp.region=DDR", f"firmware.pools.temp.size={TEMP_POOL_DDR}",
            "firmware.pools.fast_scratch.region=SRAM", f"firmware.pools.fast_scratch.size={fast}",
            "firmware.pools.fast_scratch.align=16", "firmware.pools.fast_scratch.npu=true"]


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
