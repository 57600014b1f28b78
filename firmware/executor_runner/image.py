"""What the ``arm_executor_runner`` image offers the host besides its entry point: the program baked into it
(``default_image``, per NPU configuration, like ``run.sh --target`` builds the runner for its target), and its
program reader for tools (``ethosu_command_streams`` for ``fvp disasm``, ``inspect_program`` for ``fvp inspect``,
``ethosu_configurations`` for the board a program runs on, ``check_program`` for what ``fvp run`` refuses before
it runs).
``firmware.arm_executor_runner`` re-exports them beside ``main`` and ``check_config``.
"""

from __future__ import annotations

from pathlib import Path

from ..executorch.bundled import is_bundled, load_bundled
from ..executorch.error import RuntimeFailure
from ..executorch.kernels import REGISTRY
from ..executorch.profiles import DEFAULT_PROFILE, get_profile
from ..executorch.program import load_program

MODELS_DIR = Path(__file__).resolve().parents[1] / "models"
# The tutorial's program as compiled for the Ethos-U55-128 (the default board; the tutorial log's figures);
# the other NPU configurations have the same model compiled for them in ``models/addint_<variant>.pte``.
EMBEDDED_NAME = "addint_u55.pte"


def default_image(variant: str | None = None) -> tuple[bytes, str]:
    """The program compiled into this firmware image: the tutorial's delegated ``x + x`` on ``int32[5]``, built
    for ``variant`` (an NPU configuration such as ``ethos-u55-256``) like ``run.sh --target`` builds the runner
    for its target; the Ethos-U55-128 build when the variant has none (or there is no NPU)."""
    name = f"addint_{variant}.pte" if variant else EMBEDDED_NAME
    if not (MODELS_DIR / name).is_file():
        name = EMBEDDED_NAME
    return (MODELS_DIR / name).read_bytes(), name


def ethosu_command_streams(image: bytes) -> list[dict]:
    """The Ethos-U driver payloads of a ``.pte``/``.bpte`` image, for tools (``fvp disasm``).

    One dict per EthosUBackend delegate of the first method: ``delegate`` (index), ``offset`` (of the blob in
    the image), ``cmd_data`` (bytes of the COP1 payload), ``weight_size``, ``scratch_size``, ``inputs`` and
    ``outputs`` (Vela I/O records). Raises ``RuntimeFailure`` with a one-line message for a bad image.
    """
    from ..executorch.vela_bin import parse_vela_bin

    prog_off = 0
    if is_bundled(image):
        b = load_bundled(image)
        prog_off = b.program_offset
        program = b.load_program()
    else:
        program = load_program(image)
    out = []
    for plan in program.execution_plans[:1]:
        for i, d in enumerate(plan.delegates):
            if d.id != "EthosUBackend":
                continue
            off, size = program.delegate_data(d)
            blob = program.view(off, size)
            vela = parse_vela_bin(blob)
            c_off, c_size = vela.cmd_data
            out.append({"delegate": i, "offset": prog_off + off, "cmd_data": bytes(blob[c_off:c_off + c_size]),
                        "weight_size": vela.weight_data[1] if vela.weight_data else 0,
                        "scratch_size": vela.scratch_size, "inputs": list(vela.inputs), "outputs": list(vela.outputs)})
    return out


def ethosu_configurations(image: bytes) -> list[dict]:
    """The NPU configuration each Ethos-U delegate was compiled for (its compile specs' Vela flags), in file order:
    ``[{"target": "ethos-u55-128", "system_config": ..., "memory_mode": ...}]``, None where one is not recorded.
    Raises ``RuntimeFailure`` with a one-line message for a bad image."""
    from ..executorch.program_info import ethosu_configurations as read

    return read(image)


def inspect_program(image: bytes) -> dict:
    """What a ``.pte``/``.bpte`` image holds, for tools (``fvp inspect``): methods, inputs and outputs (dtype,
    shape, dim order, quantization), operators (and whether this runner has each kernel), delegates with their
    compile specs, planned memory per ``mem_id`` and the pool sizes this runner needs for it (its default
    runtime profile). Raises ``RuntimeFailure`` with a one-line message for a bad image."""
    from ..executorch.program_info import describe_image

    return describe_image(image, REGISTRY.unboxed(), get_profile(DEFAULT_PROFILE), DEFAULT_PROFILE)


def check_program(image: bytes, inputs: int = 0) -> str | None:
    """Why this runner's loader refuses ``image`` (a ``.pte`` or ``.bpte``), in one line, or None: what
    ``fvp run`` asks before it runs a program (a file the loader refuses is a bad model file, exit status 2).
    ``Program::load`` and the bundled program's reader check every offset of the FlatBuffer against its end
    (a fraction of a millisecond); a file that ends before the data it describes is said to be truncated.
    ``inputs``: the number of input files (``-i``) given, refused when the method takes fewer (the runner would
    ignore the others)."""
    try:
        program = load_bundled(image).load_program() if is_bundled(image) else load_program(image)
    except RuntimeFailure as e:
        msg = (str(e.message).splitlines() or [type(e).__name__])[0]
        if "past the buffer end" in msg or "exceeds the buffer" in msg or "buffer too short" in msg:
            return f"truncated (or damaged): the file ends before the data it describes ({msg})"
        return msg
    plans = program.execution_plans
    if not plans:
        return "the program has no methods"
    if inputs > len(plans[0].inputs):
        return (f"{inputs} input files (-i) for method {plans[0].name!r}, which takes {len(plans[0].inputs)} "
                f"input{'s' if len(plans[0].inputs) != 1 else ''}: the others would be ignored")
    return None
