"""Loading board descriptions: YAML files, ``extends:`` layering, ``-C`` overrides, validation, typed spec.

Layering: a board file may ``extends:`` one or more files (paths relative to itself, or names of files in the
config directory); those are merged first, in order, then the file itself on top. Mappings merge key by key,
anything else is replaced. Then come the layers the run's inputs add (``Layer``: what a program's compile specs
fix, what an application ELF's build placed), each a mapping of dotted keys to values with its own origin, and
last the ``-C dotted.key=value`` overrides (values are YAML scalars; the FVP's own parameter spellings,
``ethosu.num_macs=256``, ``mps3_board.uart0.out_file=-``, ..., are translated to board keys first). Every leaf
remembers where it was set, so an error names what set the bad value: ``fvp/boards/x.yaml: memory.SRAM.size:
'2XB' ...``, ``program add.pte: ...``, ``-C ...: ...``.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from ..bounded_read import read_text
from ..errors import ConfigProblems
from . import schema as S
from .build import build_spec
from . import yaml_safe
from .fvp_params import translate_fvp_param

CONFIG_DIR = Path(__file__).resolve().parent  # the board files live beside the code that reads them
DEFAULT_BOARD = "default"


@dataclass(frozen=True)
class Layer:
    """Board keys set by something other than a file or ``-C``, applied between them: ``values`` maps dotted
    keys to values (already typed, not YAML text), ``origin`` is what set them (``program add.pte``), the
    provenance errors and ``fvp config`` name."""
    origin: str
    values: Mapping = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.values)


def available_boards() -> list[str]:
    """Names accepted by ``-c NAME``: the board files in the config directory (not the shared tables)."""
    out = []
    for p in sorted(CONFIG_DIR.glob("*.yaml")):
        try:
            data = yaml_safe.load(p.read_text()) or {}
        except yaml.YAMLError:
            continue
        if isinstance(data, dict) and ("board" in data or "extends" in data) and not p.stem.startswith("_"):
            out.append(p.stem)
    return out


def find_board(name_or_path: str | os.PathLike | None) -> Path:
    """A path to an existing file, or the name of a board in the config directory."""
    if name_or_path is None:
        name_or_path = DEFAULT_BOARD
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists() or os.sep in str(name_or_path):
        if p.is_file():
            return p
        raise ConfigProblems([f"{name_or_path}: board file not found"])
    cand = CONFIG_DIR / f"{name_or_path}.yaml"
    if cand.is_file():
        return cand
    raise ConfigProblems([f"unknown board {str(name_or_path)!r}; available: {', '.join(available_boards())} "
                          f"(or give a path to a .yaml file)"])


# the Corstone each NPU family comes on: the Ethos-U55/U65 on the Corstone-300, the Ethos-U85 on the Corstone-320
# (ExecuTorch's run_fvp.sh picks FVP_Corstone_SSE-300_Ethos-U55/U65 or FVP_Corstone_SSE-320 the same way)
TARGET_PLATFORMS = {"ethos-u55": "corstone-300", "ethos-u65": "corstone-300", "ethos-u85": "corstone-320"}


def board_for_target(target: str) -> str:
    """The default board for an NPU target name (``ethos-u55-256`` -> ``corstone-300-ethos-u55-256``,
    ``ethos-u85-256`` -> ``corstone-320-ethos-u85-256``)."""
    family = str(target).rsplit("-", 1)[0]
    platform = TARGET_PLATFORMS.get(family)
    name = f"{platform}-{target}"
    if platform is None or not (CONFIG_DIR / f"{name}.yaml").is_file():
        prefixes = tuple(f"{p}-{f}" for f, p in TARGET_PLATFORMS.items())
        targets = sorted((b.split("-", 2)[2] for b in available_boards() if b.startswith(prefixes)),
                         key=lambda t: (t.rsplit("-", 1)[0], int(t.rsplit("-", 1)[1])))
        raise ConfigProblems([f"--target: unknown target {target!r}; allowed: {', '.join(targets)}"])
    return name


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _read_yaml(path: Path) -> dict:
    # bounded (read_text): a board file is text, not a stream without end

    try:
        text = read_text(path, label=_display(path), kind="board file").decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigProblems([f"{_display(path)}: not a YAML board file (byte 0x{e.object[e.start]:02x} at offset "
                              f"{e.start} is not UTF-8 text)"]) from None
    try:
        data = yaml_safe.load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigProblems([f"{_display(path)}{where}: invalid YAML: {problem}"]) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigProblems([f"{_display(path)}: a board file must be a mapping of keys, got {type(data).__name__}"])
    return data


def _merge(dst: dict, src: dict, origin: str, prov: dict, prefix: str = "") -> None:
    for key, value in src.items():
        if not isinstance(key, str):
            key = str(key)
        path = f"{prefix}{key}"
        if isinstance(value, dict) and isinstance(dst.get(key), dict):
            _merge(dst[key], value, origin, prov, path + ".")
        else:
            dst[key] = copy.deepcopy(value)
            # forget provenance of the replaced subtree, then record this one
            for k in [k for k in prov if k == path or k.startswith(path + ".")]:
                del prov[k]
            _record(value, origin, prov, path)


def _record(value: Any, origin: str, prov: dict, path: str) -> None:
    prov[path] = origin
    if isinstance(value, dict):
        for k, v in value.items():
            _record(v, origin, prov, f"{path}.{k}")


def load_layers(path: Path, prov: dict, _stack: tuple = ()) -> dict:
    """Read ``path`` and everything it extends, merged; fills ``prov`` with leaf origins."""
    path = path.resolve()
    if path in _stack:
        chain = " -> ".join(_display(p) for p in _stack + (path,))
        raise ConfigProblems([f"{_display(path)}: extends: circular chain {chain}"])
    data = _read_yaml(path)
    merged: dict = {}
    parents = data.get("extends", [])
    if isinstance(parents, str):
        parents = [parents]
    if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
        raise ConfigProblems([f"{_display(path)}: extends: expected a file name or a list of file names, got {parents!r}"])
    for parent in parents:
        ppath = (path.parent / parent)
        if not ppath.is_file():
            ppath = CONFIG_DIR / parent
            if not ppath.suffix:
                ppath = ppath.with_suffix(".yaml")
        if not ppath.is_file():
            raise ConfigProblems([f"{_display(path)}: extends: file {parent!r} not found"])
        _merge(merged, load_layers(ppath, prov, _stack + (path,)), None, {}, "")
        # provenance of the parent chain was recorded by the recursive call itself
    own = {k: v for k, v in data.items() if k != "extends"}
    _merge(merged, own, _display(path), prov)
    return merged


def _parse_override_value(text: str):
    try:
        value = yaml_safe.load(text)
    except yaml_safe.StructureError as e:  # too deep, duplicate keys, alias bombs: an error, not a string
        raise ValueError(f"invalid value: {e.problem}") from None
    except yaml.YAMLError:
        return text
    return text if isinstance(value, (dict, list)) and not text.strip().startswith(("[", "{")) else value


def _set_key(merged: dict, key: str, value, origin: str, prov: dict) -> str | None:
    """Set the dotted ``key`` in ``merged`` (creating mappings on the way) and record ``origin`` as its
    provenance; the problem when a key on the way is not a mapping."""
    parts = key.split(".")
    node = merged
    for i, part in enumerate(parts[:-1]):
        nxt = node.get(part)
        if nxt is None:
            nxt = node[part] = {}
        if not isinstance(nxt, dict):
            return f"{'.'.join(parts[:i + 1])} is not a mapping, cannot set {key}"
        node = nxt
    node[parts[-1]] = value
    for k in [k for k in prov if k == key or k.startswith(key + ".")]:
        del prov[k]
    _record(value, origin, prov, key)
    return None


def apply_layer(merged: dict, layer: Layer, prov: dict) -> None:
    problems = [f"{layer.origin}: {p}" for key, value in layer.values.items()
                if (p := _set_key(merged, key, copy.deepcopy(value), layer.origin, prov)) is not None]
    if problems:
        raise ConfigProblems(problems)


def apply_overrides(merged: dict, overrides: Iterable[str], prov: dict, fvp_flavour: str = "") -> list[str]:
    """Apply ``key=value`` overrides in place; returns notes about accepted no-op FVP parameters."""
    notes = []
    problems = []
    for item in overrides:
        if "=" not in item:
            problems.append(f"-C {item}: expected NAME=VALUE (e.g. -C firmware.allocator=minimal)")
            continue
        key, _, text = item.partition("=")
        key = key.strip()
        try:
            value = _parse_override_value(text.strip())
        except ValueError as e:
            problems.append(f"-C {item}: {e}")
            continue
        try:
            translated = translate_fvp_param(key, value, merged, fvp_flavour)
        except ValueError as e:
            problems.append(f"-C {item}: {e}")
            continue
        if translated is None:
            notes.append(f"-C {key}: accepted (no effect in this simulator)")
            continue
        for tkey, tvalue in translated:
            problem = _set_key(merged, tkey, tvalue, f"-C {item}", prov)
            if problem is not None:
                problems.append(f"-C {item}: {problem}")
    if problems:
        raise ConfigProblems(problems)
    return notes


# --------------------------------------------------------------------------------------------------------
# Schema check


def _where(prov: dict, path: str) -> str:
    p = path
    while p:
        if p in prov and prov[p]:
            return prov[p]
        p = p.rpartition(".")[0]
    return "<board>"


def check_schema(node: Any, spec: Any, path: str, prov: dict, problems: list[str]) -> Any:
    """Returns the parsed value; appends one line per problem to ``problems``."""
    if spec is S.Free:
        return node
    if isinstance(spec, S.Section):
        spec = spec.schema
    if isinstance(spec, S.Tagged):
        if not isinstance(node, dict):
            problems.append(f"{_where(prov, path)}: {path}: expected a mapping, got {node!r}")
            return {}
        tag = node.get(spec.tag)
        tag_path = f"{path}.{spec.tag}"
        if not isinstance(tag, str) or tag not in spec.variants:
            allowed = ", ".join(spec.variants)
            what = "required key is missing" if tag is None else f"{tag!r} is not allowed"
            problems.append(f"{_where(prov, tag_path)}: {tag_path}: {what}; allowed: {allowed}")
            return {}
        origin = prov.get(tag_path) or ""
        if origin.startswith("-C "):
            # the keys are judged by the type an override chose: the override is what caused any problem
            sub_prov = {k: origin for k in prov if k == path or k.startswith(path + ".")}
            return check_schema(node, spec.variants[tag], path, {**prov, **sub_prov}, problems)
        return check_schema(node, spec.variants[tag], path, prov, problems)
    if isinstance(spec, dict):
        if not isinstance(node, dict):
            problems.append(f"{_where(prov, path)}: {path or '<top>'}: expected a mapping, got {node!r}")
            return {}
        out = {}
        for key, value in node.items():
            sub = f"{path}.{key}" if path else str(key)
            if key not in spec:
                allowed = ", ".join(k for k in spec if k != "extends")
                problems.append(f"{_where(prov, sub)}: {sub}: unknown key; allowed here: {allowed}")
                continue
            out[key] = check_schema(value, spec[key], sub, prov, problems)
        return out
    if isinstance(spec, S.MapOf):
        if node is None:
            return {}
        if not isinstance(node, dict):
            problems.append(f"{_where(prov, path)}: {path}: expected a mapping of names, got {node!r}")
            return {}
        out = {}
        for key, value in node.items():
            sub = f"{path}.{key}"
            if spec.key_check is not None:
                try:
                    spec.key_check(key)
                except ValueError as e:
                    problems.append(f"{_where(prov, sub)}: {sub}: bad name: {e}")
                    continue
            out[key] = check_schema(value, spec.item, sub, prov, problems)
        return out
    try:
        return spec(node)
    except ValueError as e:
        problems.append(f"{_where(prov, path)}: {path}: {node!r}: {e}")
        return None


# --------------------------------------------------------------------------------------------------------
# Entry points


def load_board(name_or_path=None, overrides: Iterable[str] = (), fvp_flavour: str = "",
               layers: Iterable[Layer] = ()) -> S.BoardSpec:
    """Load, layer, override and validate a board; raises ``ConfigProblems`` (one line per problem).

    ``layers`` go on the files in order, then the ``-C`` ``overrides``. A problem that the overrides caused but
    that a cross check reports at a key the board file set (``-C memory.ISRAM0.size=64KiB`` leaves
    ``firmware.memory.SRAM`` unbacked) names the override that causes it."""
    overrides = list(overrides)
    layers = [layer for layer in layers if layer]
    try:
        return _load_board(name_or_path, overrides, fvp_flavour, layers)
    except ConfigProblems as e:
        if not overrides:
            raise
        raise ConfigProblems(_blame_overrides(e.problems, name_or_path, overrides, fvp_flavour, layers)) from None


def _problems_of(name_or_path, overrides, fvp_flavour, layers) -> set:
    try:
        _load_board(name_or_path, overrides, fvp_flavour, layers)
    except ConfigProblems as e:
        return set(e.problems)
    return set()


def _blame_overrides(problems: list[str], name_or_path, overrides: list[str], fvp_flavour: str,
                     layers: list) -> list[str]:
    unexplained = [p for p in problems if not p.startswith("-C ")]
    if not unexplained:
        return problems
    base = _problems_of(name_or_path, [], fvp_flavour, layers)
    blamed = {}
    for p in unexplained:
        if p in base:
            continue
        culprits = [o for o in overrides if p in _problems_of(name_or_path, [o], fvp_flavour, layers)]
        blamed[p] = ("-C " + ", -C ".join(culprits)) if culprits else "the -C overrides together"
    # "<board file>: key: ..." -> "-C override: key: ...": the override is the cause, the file only set the key
    return [f"{blamed[p]}: {p.partition(': ')[2] or p}" if p in blamed else p for p in problems]


def _load_board(name_or_path, overrides: list, fvp_flavour: str, layers: list = ()) -> S.BoardSpec:
    path = find_board(name_or_path)
    prov: dict = {}
    merged = load_layers(path, prov)
    for layer in layers:
        apply_layer(merged, layer, prov)
    notes = apply_overrides(merged, list(overrides), prov, fvp_flavour)
    problems: list[str] = []
    checked = check_schema(merged, S.SCHEMA, "", prov, problems)
    if problems:
        raise ConfigProblems(problems)
    spec = build_spec(checked, prov, files=(_display(path),), where=lambda p: _where(prov, p))
    spec.raw["_notes"] = notes
    return spec
