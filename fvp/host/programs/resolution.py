"""The result of resolving a program's board (``Resolution``), the Ethos-U configuration a program records
(``ProgramConfig``), and the rule both kinds of program share (``reconcile``: the program's value unless the user
chose; ``program_notes``: the note that says what differs). ``program_board`` (ExecuTorch programs, from their
compile specs) and ``tflm_board`` (Vela ``.tflite`` files, from their command streams) pick the board."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...boards import Layer, load_board

_KEY_OF = {"target": "npu.variant", "system_config": "npu.system_config", "memory_mode": "npu.memory_mode"}
_WHAT = {"target": "NPU", "system_config": "system config", "memory_mode": "memory mode"}
# command-line spellings that set the NPU variant (the FVP's parameter, this simulator's board key)
VARIANT_KEYS = ("npu.variant", "ethosu.num_macs", "mps4_board.subsystem.ethosu.num_macs")


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
    differences: list = field(default_factory=list)  # what the run uses that is not the program's (the note)
    loaded: object = field(default=None, repr=False)  # the spec resolve() loaded, when the program changed nothing

    def load(self, extra=(), fvp_flavour: str = ""):
        """The board spec: the board, the program's layer, the user's ``-C`` (``extra`` overrides go last, e.g. a
        captured UART); the one ``resolve`` already loaded when nothing is added to it."""
        if self.loaded is not None and not extra and not fvp_flavour and not self.program_layer:
            spec, self.loaded = self.loaded, None
            return spec
        return load_board(self.board, list(self.overrides) + list(extra), fvp_flavour=fvp_flavour,
                          layers=[self.program_layer])


def user_keys(overrides) -> set:
    keys = set()
    for o in overrides:
        name = str(o).split("=", 1)[0].strip()
        if name in VARIANT_KEYS:
            keys.add("npu.variant")
        else:
            keys.add(name)
    return keys


def reconcile(res: Resolution, want: dict, have: dict, user: set, chosen_board: bool, target, board,
              memory_keys) -> dict:
    """What the program sets and what the user's choices keep: fills ``res.used`` (what -> (value, source)) and
    ``res.cannot_run``, records the differences for the note (``res.differences``); returns the board keys the
    program fixes (its system config, its memory mode with ``memory_keys(mode)``: the pools the runner's build has
    in that mode)."""
    program_keys: dict = {}
    res.differences = []
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
                   else f"--target {target}" if target else f"-c {board}" if board else "the FVP binary")
            res.used[what] = (h, src)
            res.differences.append(f"{_WHAT[what]} {h} ({src}), not the program's {p}")
            if what == "target":
                res.cannot_run = f"a stream for {p} cannot run on {h}"
            continue
        res.used[what] = (p, "program")
        if what == "memory_mode":
            program_keys.update({"npu.memory_mode": p, **memory_keys(p)})
        elif what == "system_config":
            program_keys["npu.system_config"] = p
        if chosen_board:
            res.differences.append(f"{_WHAT[what]} {p}, the program's (the board has {h}: "
                                   f"-C {_KEY_OF[what]}={h} to use it)")
    return program_keys


def program_notes(res: Resolution, want: dict, have: dict, model_name: str, parts: str = "Ethos-U delegates"):
    """The ``fvp: note:`` lines: what the run uses that is not the program's, and ``parts`` (the delegates or
    operators) compiled differently."""
    if res.differences:
        note = (f"{model_name} was compiled for "
                + ", ".join(want[w] for w in ("target", "system_config", "memory_mode") if w in want)
                + "; running with " + "; ".join(res.differences))
        if res.cannot_run:
            note += (f": the stream cannot run on {have['target']} (the Ethos-U driver refuses a command stream "
                     f"built for another MAC configuration); use --target {want['target']}")
        res.notes.append(note)
    for what, values in res.program.disagreements():
        res.notes.append(f"{model_name}: its {parts} were compiled for different {_WHAT[what]}s "
                         f"({', '.join(values)}); using {values[0]}")
