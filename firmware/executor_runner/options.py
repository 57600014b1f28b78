"""The runner's build options a board sets under ``firmware.options`` (the CMake definitions ``run.sh`` passes:
``ET_NUM_INFERENCES``, ``ET_LOG_DUMP_OUTPUT``, ``ET_ATOL``, ``ET_EVENT_TRACER_ENABLED``, ...), and the check of the
board's whole ``firmware`` section for this image (runtime profile, allocator, the pools it needs, each option's
type and range).
"""

from __future__ import annotations

from hwdesc.boot import BootInfo

from ..executorch.etdump import INTERMEDIATE_OUTPUTS, PROGRAM_OUTPUTS
from ..executorch.memory import ALLOCATORS
from ..executorch.profiles import PROFILES

OPTIONS = {
    "inferences": "number of inferences (ET_NUM_INFERENCES), an integer from 1 to 100000",
    "log_outputs": "print every output element (ET_LOG_DUMP_OUTPUT), true/false",
    "log_inputs": "print every input element (ET_LOG_DUMP_INPUT), true/false",
    "atol": "absolute tolerance of the BundleIO check (ET_ATOL), a number",
    "rtol": "relative tolerance of the BundleIO check (ET_RTOL), a number",
    "etdump": "built with the ETDump event tracer (ET_EVENT_TRACER_ENABLED): the ETDump is printed base64 in a "
              "#[RUN THIS] block at the end (the semihosting runner of executorch-main-*: written to etdump.bin), "
              "true/false",
    "etdump_debug": "the ETDump's debug events (needs the ETDump): none, outputs (ET_DUMP_OUTPUTS: the program "
                    "outputs) or intermediate (ET_DUMP_INTERMEDIATE_OUTPUTS, what run.sh --etdump builds: every "
                    "operator's and delegate call's outputs and the program outputs); the tensor data goes to the "
                    "debug buffer (printed base64 as debug_buffer.bin in the #[RUN THIS] block, or written to "
                    "debug_buffer.bin / fvp run --etdump-debug-buffer FILE)",
    "etdump_debug_buffer_size": "the debug buffer's size in bytes (ET_DEBUG_BUFFER_SIZE, default 2097152), taken "
                                "from the method allocator pool",
}

# firmware.options.etdump_debug -> EventTracerDebugLogLevel; ET_DEBUG_BUFFER_SIZE's default (CMakeLists.txt)
ETDUMP_DEBUG_LEVELS = {"none": 0, "outputs": PROGRAM_OUTPUTS, "intermediate": INTERMEDIATE_OUTPUTS}
DEBUG_BUFFER_SIZE = 2 * 1024 * 1024


def check_config(boot: BootInfo) -> list[str]:
    """Problems with the board's ``firmware`` section, one line each (the platform reports them, exit 2)."""
    problems = []
    runtime = boot.runtime
    if runtime != "auto" and runtime not in PROFILES:
        problems.append(f"firmware.runtime: unknown runtime profile {runtime!r}; allowed: auto, {', '.join(PROFILES)}")
    allocator = boot.allocator
    if allocator not in ALLOCATORS:
        problems.append(f"firmware.allocator: unknown allocator {allocator!r}; allowed: {', '.join(ALLOCATORS)}")
    for name in ("method", "temp"):
        if name not in boot.pools:
            problems.append(f"firmware.pools.{name}: required by arm_executor_runner (method allocator pool / temp pool)")
    for key, value in boot.options.items():
        if key not in OPTIONS:
            problems.append(f"firmware.options.{key}: unknown option; allowed: {', '.join(OPTIONS)}")
        elif key == "inferences" and not (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 100000):
            problems.append(f"firmware.options.inferences: {value!r}: expected {OPTIONS[key]}")
        elif key in ("log_outputs", "log_inputs", "etdump") and not isinstance(value, bool):
            problems.append(f"firmware.options.{key}: {value!r}: expected true or false")
        elif key == "etdump_debug" and value not in ETDUMP_DEBUG_LEVELS:
            problems.append(f"firmware.options.etdump_debug: {value!r}: expected none, outputs or intermediate")
        elif key == "etdump_debug_buffer_size" and not (isinstance(value, int) and not isinstance(value, bool)
                                                         and 1 <= value < 1 << 32):
            problems.append(f"firmware.options.etdump_debug_buffer_size: {value!r}: expected a size in bytes "
                            "from 1 to 4294967295")
        elif key in ("atol", "rtol") and not (isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0):
            problems.append(f"firmware.options.{key}: {value!r}: expected a non-negative number")
    return problems
