"""Which board a ``.tflite`` runs on: the TFLite Micro image on the NPU its ``ethos-u`` operators were compiled for.

The rule is ``program_board``'s, with the facts a Vela-compiled ``.tflite`` records, read by the TFLite Micro image
itself (``firmware.tflm``'s ``ethosu_configurations``: per ``ethos-u`` operator the CONFIG word of its command
stream, Dedicated_Sram when its fast scratch is a tensor of its own, that fast scratch's size); the CONFIG word
names the variant through the machine's table (``arch_from_config_word``):

- the user's explicit choices win: ``-c BOARD``, ``--target``, ``-C npu.variant``/``ethosu.num_macs``, the
  drop-in binary's NPU (its ``num_macs``), ``-C npu.memory_mode``, ``-C npu.system_config``, pools placed with
  ``-C firmware.pools.arena.*``/``fast_scratch.*``;
- what the user left open comes from the program: the TFLite Micro board of the variant's family
  (``corstone-300-tflm`` for Ethos-U55/U65, ``corstone-320-tflm`` for Ethos-U85) with ``npu.variant`` and that
  family's default system config (Vela's: Ethos_U55_High_End_Embedded, Ethos_U65_High_End,
  Ethos_U85_SYS_DRAM_Mid; the file does not record it), and the memory mode;
- Dedicated_Sram gets the layout MLEK builds for it (``ethosu_mem_config.h``: the tensor arena
  ``activation_buf_dram`` in DDR, the NPU cache ``cache_arena`` of ``ETHOS_U_NPU_CACHE_SIZE`` 0x60000 = 384 KiB in
  SRAM) unless the user places the pools: a fast scratch the program needs beyond 384 KiB is given its size;
- a variant other than the program's (chosen by the user) cannot run the stream: the note says so, and the
  Ethos-U driver refuses it as on the FVP (``NPU config mismatch``).

A ``.tflite`` without an ``ethos-u`` operator (not Vela-compiled, e.g. before ``--vela``) records nothing: the
TFLite Micro board of ``--target``'s (or the drop-in binary's) family, else ``corstone-300-tflm`` as it is.
"""

from __future__ import annotations

from ...boards import ConfigProblems, Layer, load_board
from .resolution import VARIANT_KEYS, ProgramConfig, Resolution, program_notes, reconcile, user_keys

TFLM_IMAGE = "tflm_inference_runner"
TFLM_BOARDS = {"ethos-u55": "corstone-300-tflm", "ethos-u65": "corstone-300-tflm", "ethos-u85": "corstone-320-tflm"}
# the FVP binaries' own NPU (their num_macs defaults); FVP_Corstone_SSE-300_Ethos-U55 takes the board's (128)
FLAVOUR_FAMILY = {"u55": "ethos-u55", "u65": "ethos-u65", "u85": "ethos-u85"}
FLAVOUR_VARIANT = {"u65": "ethos-u65-512", "u85": "ethos-u85-256"}
MLEK_NPU_CACHE = 384 * 1024  # MLEK ETHOS_U_NPU_CACHE_SIZE 0x60000 (Dedicated_Sram)
_POOL_KEYS = ("firmware.pools.arena.", "firmware.pools.fast_scratch.")


def variant_of_config_word(word) -> str | None:
    """The NPU variant whose CONFIG register image a command stream was compiled for (None: no such variant)."""
    from ...errors import ConfigError
    from ...machine.npu.arch import arch_from_config_word

    if word is None:
        return None
    try:
        return arch_from_config_word(int(word)).name
    except ConfigError:
        return None


def with_targets(operators: list[dict]) -> list[dict]:
    """The TFLite Micro image's per-operator records with ``target``: the variant of each one's CONFIG word."""
    return [dict(d, target=variant_of_config_word(d.get("config_word"))) for d in operators]


def tflite_configurations(image: bytes) -> list[dict]:
    """Per ``ethos-u`` operator of ``image``: ``target``, ``memory_mode``, ``fast_scratch`` (bytes), as the TFLite
    Micro image reads the file; empty for a file it refuses (the run says why)."""
    from .firmware_image import load

    try:
        operators = load(TFLM_IMAGE).module.ethosu_configurations(image)
    except Exception as e:
        if not hasattr(e, "message"):  # not the reader's verdict on the file: a bug
            raise
        return []
    return with_targets(operators)


def family(variant: str) -> str:
    return str(variant).rsplit("-", 1)[0]


def tflm_board(variant: str) -> str:
    """The TFLite Micro board of an NPU variant's family."""
    try:
        return TFLM_BOARDS[family(variant)]
    except KeyError:
        from .et_build import check_target

        check_target(variant)  # says what the allowed targets are
        raise ConfigProblems([f"--target {variant}: no TFLite Micro board runs it (Ethos-U55, U65 or U85 "
                              f"only)"]) from None


def _user_value(overrides: list, keys) -> tuple[str, str] | None:
    """(key, value) of the last user override among ``keys``, or None."""
    for o in reversed(overrides):
        k, _, v = str(o).partition("=")
        if k.strip() in keys:
            return k.strip(), v.strip()
    return None


def _user_variant(overrides: list, fvp_flavour: str) -> str | None:
    """The variant the user's ``-C npu.variant``/``num_macs`` names (the last one wins), or None."""
    found = _user_value(overrides, VARIANT_KEYS)
    if found is None:
        return None
    key, value = found
    if key == "npu.variant":
        return value
    if key.startswith("mps4_board."):
        return f"ethos-u85-{value}"
    return f"{FLAVOUR_FAMILY.get(fvp_flavour, 'ethos-u55')}-{value}"


def mlek_pools(memory_mode: str, fast_needed: int, base=None) -> dict:
    """The pools of MLEK's build for ``memory_mode`` on a TFLite Micro board: for Dedicated_Sram the arena in DDR
    and a fast scratch (the NPU cache) in SRAM of 384 KiB, or the program's need if larger; for another mode no
    fast scratch (``base``: the board, to clear one it declares)."""
    if not memory_mode.startswith("Dedicated_Sram"):
        fs = base.firmware.pools.get("fast_scratch") if base is not None else None
        return {"firmware.pools.fast_scratch.size": 0} if fs is not None and fs.size else {}
    return {"firmware.pools.arena.region": "DDR", "firmware.pools.fast_scratch.region": "SRAM",
            "firmware.pools.fast_scratch.size": max(MLEK_NPU_CACHE, -(-fast_needed // 16) * 16),
            "firmware.pools.fast_scratch.align": 16, "firmware.pools.fast_scratch.npu": True}


def resolve_tflite(image: bytes, board, target, overrides: list, model_name: str, fvp_flavour: str) -> Resolution:
    """``program_board.resolve`` for a ``.tflite`` (see the module docstring)."""
    operators = tflite_configurations(image)
    prog = ProgramConfig(targets=tuple(d["target"] for d in operators if d.get("target")),
                         memory_modes=tuple(d["memory_mode"] for d in operators))
    fast_needed = max((d.get("fast_scratch", 0) for d in operators), default=0)
    origin = f"program {model_name}"
    user = user_keys(overrides)
    want = prog.as_flags()
    user_variant = _user_variant(overrides, fvp_flavour)
    if target is not None:
        tflm_board(target)
    placed = any(str(o).split("=", 1)[0].strip().startswith(_POOL_KEYS) for o in overrides)
    keys: dict = {}
    board_name = board
    if board is None:
        if target is not None or (user_variant is not None and not fvp_flavour):
            fam = family(target or user_variant)
        elif fvp_flavour:
            fam = FLAVOUR_FAMILY.get(fvp_flavour, "ethos-u55")
        else:
            fam = family(want.get("target") or "ethos-u55-128")
        board_name = TFLM_BOARDS.get(fam) or tflm_board(fam + "-0")
        # the NPU, when the user did not choose it: --target's, else the drop-in binary's, else the program's
        variant = target if target is not None else (
            None if user_variant is not None else FLAVOUR_VARIANT.get(fvp_flavour) or (
                None if fvp_flavour else want.get("target")))
        if variant is not None:
            keys["npu.variant"] = variant
        family_variant = variant or user_variant or want.get("target")
        if family_variant is not None and "npu.system_config" not in user:  # the family's default (Vela's)
            from .et_build import default_system_config

            keys["npu.system_config"] = default_system_config(family_variant)
    user_mode = _user_value(overrides, ("npu.memory_mode",))
    if user_mode is not None and not placed:  # the user's mode, laid out as MLEK builds it
        keys.update(mlek_pools(user_mode[1], fast_needed))
    chosen = board is not None or target is not None or user_variant is not None or bool(fvp_flavour)
    res = Resolution(board=board_name, program=prog, overrides=overrides)
    base = load_board(board_name, overrides, fvp_flavour=fvp_flavour, layers=[Layer(origin, keys)])
    if base.npu is None or not prog.has_npu:
        res.program_layer = Layer(origin, keys)
        return res
    have = {"target": base.npu.variant, "memory_mode": base.npu.memory_mode.name}
    program_keys = reconcile(res, want, have, user, chosen, target, board,
                             lambda mode: {} if placed else mlek_pools(mode, fast_needed, base))
    for what, (value, src) in list(res.used.items()):  # what the board already had is not news from the program
        if src == "program" and have.get(what) == value:
            res.used[what] = (value, "board")
    res.program_layer = Layer(origin, {**keys, **program_keys})
    program_notes(res, want, have, model_name, parts="ethos-u operators")
    return res
