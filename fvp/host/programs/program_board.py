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
- a ``.tflite`` (TFLite Micro) runs on the TFLM board unless ``-c`` names another; ``--target`` sets its NPU.

The compile specs are read by the firmware image that runs the program (its ``ethosu_configurations``: the
runtime's own program reader), never by a second reader here; a program that reader refuses records nothing, and
the run says why. Programs whose delegates disagree use the first delegate's values and say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...boards import ConfigProblems, Layer, board_for_target, load_board
from .et_build import pool_settings
from .kind import is_tflite, program_kind

_KEY_OF = {"target": "npu.variant", "system_config": "npu.system_config", "memory_mode": "npu.memory_mode"}
_WHAT = {"target": "NPU", "system_config": "system config", "memory_mode": "memory mode"}
# command-line spellings that set the NPU variant (the FVP's parameter, this simulator's board key)
_VARIANT_KEYS = ("npu.variant", "ethosu.num_macs", "mps4_board.subsystem.ethosu.num_macs")


@dataclass(frozen=True)
class ProgramConfig:
    """The Vela configuration of every Ethos-U delegate of a program, in file order."""

    targets: tuple = ()
    system_configs: tuple = ()
    memory_modes: tuple = ()

    @property
    def has_npu(self) -> bool:
        return bool(self.targets or self.system_configs or self.memory_modes)

    def value(self, what: str) -> str | None:
        """The first delegate's value of ``target``/``system_config``/``memory_mode`` (``None``: not recorded)."""
        vals = getattr(self, _PLURAL[what])
        return vals[0] if vals else None

    def as_flags(self) -> dict:
        return {k: v for k in _PLURAL if (v := self.value(k)) is not None}

    def disagreements(self) -> list:
        """``[(what, distinct values)]`` where the delegates were compiled differently."""
        out = []
        for what, plural in _PLURAL.items():
            distinct = list(dict.fromkeys(getattr(self, plural)))
            if len(distinct) > 1:
                out.append((what, distinct))
        return out


_PLURAL = {"target": "targets", "system_config": "system_configs", "memory_mode": "memory_modes"}


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
    return ProgramConfig(*(tuple(d[what] for d in delegates if d.get(what)) for what in _PLURAL))


@dataclass
class Resolution:
    """The board to load for a program, the overrides to load it with, and what to tell the user."""

    board: str | None
    overrides: list = field(default_factory=list)  # the user's -C
    program_layer: Layer = field(default_factory=lambda: Layer("program"))  # the board keys the program fixes
    notes: list = field(default_factory=list)  # text after "fvp: note: "
    cannot_run: str = ""  # why the stream cannot run on this board's NPU ("" when it can)
    program: ProgramConfig = field(default_factory=ProgramConfig)
    used: dict = field(default_factory=dict)  # what -> (value, source): "program", "board", "-C"
    loaded: object = field(default=None, repr=False)  # the spec resolve() loaded, when the program changed nothing

    def load(self, extra=(), fvp_flavour: str = ""):
        """The board spec: the board, the program's layer, the user's ``-C`` (``extra`` overrides go last, e.g. a
        captured UART); the one ``resolve`` already loaded when nothing is added to it."""
        if self.loaded is not None and not extra and not fvp_flavour and not self.program_layer:
            spec, self.loaded = self.loaded, None
            return spec
        return load_board(self.board, list(self.overrides) + list(extra), fvp_flavour=fvp_flavour,
                          layers=[self.program_layer])


def _user_keys(overrides) -> set:
    keys = set()
    for o in overrides:
        name = str(o).split("=", 1)[0].strip()
        if name in _VARIANT_KEYS:
            keys.add("npu.variant")
        else:
            keys.add(name)
    return keys


TFLM_BOARD = "corstone-300-tflm"  # the TFLite Micro inference runner's board (fvp/boards/corstone-300-tflm.yaml)


def _resolve_tflite(board, target, overrides, fvp_flavour, origin) -> Resolution:
    """A ``.tflite`` runs on the TFLite Micro image: the user's board as given, else the TFLM board; ``--target``
    (or the drop-in's U65 binary) sets its NPU and that family's default system config (a Vela-compiled
    ``.tflite`` records neither; Vela's own defaults)."""
    if board is not None:
        return Resolution(board=board, overrides=overrides)
    keys = {}
    variant = target or ("ethos-u65-512" if fvp_flavour == "u65" else None)
    if fvp_flavour == "u85" or (variant or "").startswith("ethos-u85"):
        raise ConfigProblems([f"{'--target ' + target if target else 'FVP_Corstone_SSE-320'}: the TFLite Micro image "
                              f"runs on the Corstone-300 board ({TFLM_BOARD}: Ethos-U55/U65); there is no Corstone-320 "
                              f"TFLite Micro board"])
    if variant is not None:
        from .et_build import check_target, default_system_config

        check_target(variant)
        keys = {"npu.variant": variant, "npu.system_config": default_system_config(variant)}
    return Resolution(board=TFLM_BOARD, overrides=overrides, program_layer=Layer(origin, keys))


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
        return _resolve_tflite(board, target, overrides, fvp_flavour, origin)
    prog = program_config(image)
    user = _user_keys(overrides)
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
    program_keys: dict = {}
    differences: list = []
    for what in ("target", "system_config", "memory_mode"):
        p, h = want.get(what), have.get(what)
        if p is None or h is None:
            continue
        set_by_user = _KEY_OF[what] in user or (what == "target" and chosen_board)
        if p == h:
            res.used[what] = (h, "program")
            continue
        if set_by_user:
            src = (f"-C {_KEY_OF[what]}" if _KEY_OF[what] in user
                   else f"--target {target}" if target else f"-c {board}")
            res.used[what] = (h, src)
            differences.append(f"{_WHAT[what]} {h} ({src}), not the program's {p}")
            if what == "target":
                res.cannot_run = f"a stream for {p} cannot run on {h}"
            continue
        res.used[what] = (p, "program")
        if what == "memory_mode":
            has_fast = "fast_scratch" in base.firmware.pools
            program_keys.update({"npu.memory_mode": p, **pool_settings(p, has_fast)})
        elif what == "system_config":
            program_keys["npu.system_config"] = p
        if chosen_board:
            differences.append(f"{_WHAT[what]} {p}, the program's (the board has {h}: "
                               f"-C {_KEY_OF[what]}={h} to use it)")
    res.program_layer = Layer(origin, program_keys)
    res.overrides = overrides
    if not program_keys and not fvp_flavour:
        res.loaded = base
    if differences:
        note = (f"{model_name} was compiled for "
                + ", ".join(want[w] for w in ("target", "system_config", "memory_mode") if w in want)
                + "; running with " + "; ".join(differences))
        if res.cannot_run:
            note += (f": the stream cannot run on {have['target']} (the Ethos-U driver refuses a command stream "
                     f"built for another MAC configuration); use --target {want['target']}")
        res.notes.append(note)
    for what, values in prog.disagreements():
        res.notes.append(f"{model_name}: its Ethos-U delegates were compiled for different {_WHAT[what]}s "
                         f"({', '.join(values)}); using {values[0]}")
    return res
