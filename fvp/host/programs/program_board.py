"""Which board a program runs on: the NPU configuration its Ethos-U compile specs name, unless the user sets it.

A program compiled by ExecuTorch's Arm backend records Vela's flags in every Ethos-U delegate's compile specs
(``--accelerator-config=ethos-u55-128 --system-config=... --memory-mode=...``). On hardware these are not free
choices of the run: the command stream only runs on the MAC configuration it was built for (the Ethos-U driver
compares the stream's optimizer config with the NPU's CONFIG register and refuses a mismatch), and the memory
mode and system config are fixed by the runner build that goes with the program (run.sh builds the runner for
the same memory mode: where the temp pool and the fast scratch live, the REGIONCFG the driver programs, the
timing adapters' settings). So every front end (``fvp run``, ``fvp compare``, ``fvp bench``, the drop-in,
``tools/validate_cycles.py``) resolves the board here, with one rule:

- the user's explicit choices win: ``-c BOARD`` or ``--target`` fixes the NPU variant, ``-C npu.variant`` /
  ``ethosu.num_macs`` / ``npu.memory_mode`` / ``npu.system_config`` fix those keys;
- what the user left open comes from the program: with neither ``-c`` nor ``--target`` the board is the
  default board of the program's target, and the memory mode (with the pools the runner's build uses for it)
  and the system config are the program's unless given with ``-C``;
- where the user's board or ``-C`` disagrees with the program, one ``fvp: note:`` line says what differs and
  what was used; a variant that cannot run the stream is said in words (``Resolution.cannot_run``);
- a ``.tflite`` (TFLite Micro) follows the same rule with the facts its ``ethos-u`` operators record
  (``tflm_board.py``): the TFLite Micro board of its NPU's family unless ``-c`` names another.

The compile specs are read by the firmware image that runs the program (its ``ethosu_configurations``: the
runtime's own program reader), never by a second reader here; a program that reader refuses records nothing, and
the run says why. Programs whose delegates disagree use the first delegate's values and say so.
"""

from __future__ import annotations

from ...boards import ConfigProblems, Layer, board_for_target, load_board
from .et_build import pool_settings
from .kind import ProgramKind, is_tflite, program_kind
from .resolution import _PLURAL, ProgramConfig, Resolution, program_notes, reconcile, user_keys


def program_config(image: bytes) -> ProgramConfig:
    """The Vela configuration of every Ethos-U delegate of a program, as the firmware image that runs it reads it
    (``ethosu_configurations``); empty for a program that records none, that the image cannot read, or whose
    image has no such reader."""
    from .firmware_image import load

    kind = program_kind(image)
    reader = getattr(load(kind.image).module, "ethosu_configurations", None) if kind is not None else None
    if reader is None:
        return ProgramConfig()
    try:
        delegates = reader(image)
    except Exception as e:
        if not hasattr(e, "message"):  # not the reader's verdict on the file (a RuntimeFailure): a bug
            raise
        return ProgramConfig()  # the run reads the program again and says what is wrong with it
    if kind is ProgramKind.TFLITE:  # the image reports the stream's CONFIG word; the variant is the machine's
        from .tflm_board import with_targets

        delegates = with_targets(delegates)
    return ProgramConfig(*(tuple(d[what] for d in delegates if d.get(what)) for what in _PLURAL))


def resolve(image: bytes, board: str | None = None, target: str | None = None, overrides=(),
            model_name: str = "the program", fvp_flavour: str = "") -> Resolution:
    """Resolve the board for ``image`` (see the module docstring for the rule).

    ``board`` is ``-c``, ``target`` is ``--target`` (at most one of them), ``overrides`` the user's ``-C``
    list; ``fvp_flavour`` is the drop-in's binary (``u55``/``u65``/``u85``), whose ``ethosu.num_macs`` (or
    ``mps4_board.subsystem.ethosu.num_macs``) sets the variant.
    Raises ``ConfigProblems`` for a board that does not load.
    """
    overrides = list(overrides)
    origin = f"program {model_name}"  # what set the program's keys, in an error or fvp config
    if is_tflite(image):
        from .tflm_board import resolve_tflite

        return resolve_tflite(image, board, target, overrides, model_name, fvp_flavour)
    prog = program_config(image)
    user = user_keys(overrides)
    chosen_board = board is not None or target is not None
    if target is not None:
        board = board_for_target(target)
    res = Resolution(board=board, program=prog)
    if not prog.has_npu:
        res.overrides = overrides
        return res
    want = prog.as_flags()
    if not chosen_board and "npu.variant" not in user and want.get("target"):
        try:
            res.board = board_for_target(want["target"])
        except ConfigProblems:  # a target without a board here: the default board's run says why
            res.board = None
    base = load_board(res.board, overrides, fvp_flavour=fvp_flavour)  # the board as the user has it
    have = {"target": base.npu.variant, "system_config": base.npu.system_config.name,
            "memory_mode": base.npu.memory_mode.name} if base.npu is not None else {}
    program_keys = reconcile(res, want, have, user, chosen_board, target, board,
                             lambda mode: pool_settings(mode, "fast_scratch" in base.firmware.pools))
    res.program_layer = Layer(origin, program_keys)
    res.overrides = overrides
    if not program_keys and not fvp_flavour:
        res.loaded = base
    program_notes(res, want, have, model_name)
    return res
