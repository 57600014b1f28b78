"""Compiling a ``.tflite`` with Vela for a board's NPU (``fvp run model.tflite --vela``): the one place that runs Vela.

Vela (PyPI ``ethos-u-vela``, the optional extra ``vela``) is run as a separate process, ``python -m ethosu.vela``
of this interpreter, with the flags MLEK's build passes for its NPU configuration: ``--accelerator-config`` (the
board's ``npu.variant``), ``--system-config`` and ``--memory-mode`` (the board's ``npu.system_config`` and
``npu.memory_mode``, whose names are those of Vela's ``vela.ini``), ``--config`` (the ``vela.ini`` shipped in the
Vela package) and ``--output-dir`` (a temporary directory, never the user's). The user's extra flags go after
them; the four the board decides are refused there (they would compile for another NPU than the one that runs).

The compiled bytes are kept in the on-disk cache (``fvp.machine.npu.diskcache``, namespace ``vela``, ``FVP_CACHE=0``
turns it off), keyed by the source bytes, every flag, the Vela version and the ``vela.ini`` bytes; a run with a
user ``--config`` file is not cached.

Errors are one line each (``ConfigError``, exit status 2: nothing ran): Vela not installed; Vela failed (its last
output line: Vela reports errors as a Python exception, whose last line is the message); Vela wrote no model.
``tools/tflite_npu.py`` compiles through ``compile_tflite`` too.

Whether a ``.tflite`` already holds an ``ethos-u`` operator is read from its operator codes (the TFLite schema
classes of the ``tflite`` package, as the firmware reads the model).
"""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...errors import ConfigError

VELA_HINT = "pip install 'fvp-corstone300[vela]' (ethos-u-vela>=5.1)"

# the flags the board decides (and the option that names where Vela writes): refused among the user's
BOARD_FLAGS = {"--accelerator-config": "--target NPU (or -c BOARD, -C npu.variant=...)",
               "--system-config": "-C npu.system_config=NAME", "--memory-mode": "-C npu.memory_mode=NAME",
               "--output-dir": "nothing (the compiled model goes to a temporary directory)",
               "--output-format": "nothing (the runner takes the tflite format)"}

ETHOSU_CUSTOM_CODE = b"ethos-u"  # the custom code Vela gives its operator


class VelaError(ConfigError):
    """Vela is missing, refused the flags or failed: one line, exit status 2."""


@dataclass
class Compiled:
    path: Path  # the compiled .tflite
    summary: Path  # Vela's summary CSV (may not exist)
    version: str


def available() -> bool:
    try:
        return importlib.util.find_spec("ethosu.vela") is not None
    except (ImportError, ValueError):
        return False


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("ethos-u-vela")
    except PackageNotFoundError:
        return "unknown"


def vela_ini() -> Path:
    """The ``vela.ini`` shipped with ethos-u-vela (Arm's system configs and memory modes)."""
    if not available():
        raise VelaError(f"--vela: ethos-u-vela is not installed: {VELA_HINT}")
    import ethosu

    for base in ethosu.__path__:
        p = Path(base) / "config_files" / "Arm" / "vela.ini"
        if p.is_file():
            return p
    raise VelaError("--vela: the vela.ini shipped with ethos-u-vela was not found")


def has_ethosu_operator(data: bytes) -> bool:
    """Whether a ``.tflite`` has an operator code for the ``ethos-u`` custom operator (is already Vela-compiled);
    False for bytes that do not parse as a model (Vela then says what is wrong with them)."""
    from tflite.Model import Model

    try:
        m = Model.GetRootAs(data, 0)
        return any(m.OperatorCodes(i).CustomCode() == ETHOSU_CUSTOM_CODE for i in range(m.OperatorCodesLength()))
    except Exception:  # noqa: BLE001 - a corrupt flatbuffer raises struct/index errors from the generated reader
        return False


def check_extra_args(args) -> None:
    for a in args:
        name = a.split("=", 1)[0]
        if name in BOARD_FLAGS:
            raise VelaError(f"--vela-args: {name} is set from the board; use {BOARD_FLAGS[name]}")


def last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1][:400] if lines else ""


def compile_tflite(src: Path, out_dir: Path, accelerator: str, system_config: str, memory_mode: str,
                   extra_args=(), vela: str | None = None, label: str | None = None) -> Compiled:
    """Run Vela on the file ``src``, writing into ``out_dir``; ``VelaError`` (one line, naming ``label`` or the
    file) if it fails."""
    ini = vela_ini() if vela is None or available() else None
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = [vela] if vela else [sys.executable, "-m", "ethosu.vela"]
    cmd += [str(src), "--accelerator-config", accelerator, "--system-config", system_config,
            "--memory-mode", memory_mode, "--output-dir", str(out_dir)]
    if ini is not None:
        cmd += ["--config", str(ini)]
    cmd += list(extra_args)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except OSError as e:
        raise VelaError(f"--vela: cannot run {cmd[0]}: {e.strerror}") from None
    if p.returncode != 0:
        why = last_line(p.stderr) or last_line(p.stdout) or "no message"
        raise VelaError(f"--vela: Vela failed on {label or src.name} (exit status {p.returncode}): {why}")
    compiled = out_dir / f"{src.stem}_vela.tflite"
    if not compiled.is_file():
        raise VelaError(f"--vela: Vela wrote no {compiled.name} ({last_line(p.stdout) or 'no message'})")
    ver = version() if vela is None else last_line(subprocess.run([vela, "--version"], capture_output=True,
                                                                  text=True, stdin=subprocess.DEVNULL).stdout)
    return Compiled(compiled, out_dir / f"{src.stem}_summary_{system_config}.csv", ver)


def read_summary(path: Path) -> dict | None:
    """Vela's estimate from its summary CSV: ``npu``, ``total``, ``sram``, ``offchip``, ``dram`` cycles."""
    if not path.is_file():
        return None
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return None
    r = rows[0]

    def num(key):
        try:
            return int(float(r[key]))
        except (KeyError, ValueError):
            return None

    return {"npu": num("cycles_npu"), "total": num("cycles_total"), "sram": num("cycles_sram_access"),
            "offchip": num("cycles_off_chip_flash_access"), "dram": num("cycles_dram_access")}


def board_flags(spec) -> tuple[str, str, str]:
    """(accelerator config, system config, memory mode) of a board's NPU."""
    if spec.npu is None:
        raise VelaError(f"--vela: board {spec.name} has no Ethos-U to compile for")
    return spec.npu.variant, spec.npu.system_config.name, spec.npu.memory_mode.name


def compiled_name(model_name: str) -> str:
    return f"{model_name.removesuffix('.tflite')}_vela.tflite"


def compile_for_board(data: bytes, model_name: str, spec, extra_args=(), cache: bool | None = None) -> bytes:
    """The bytes of ``data`` (a ``.tflite``) compiled by Vela for the board ``spec``'s NPU."""
    check_extra_args(extra_args)
    accel, system_config, memory_mode = board_flags(spec)
    ini = vela_ini()
    flags = [accel, system_config, memory_mode, *extra_args]
    store = None
    if cache is not False and not any(a.split("=", 1)[0] == "--config" for a in extra_args):
        from ...machine.npu.diskcache import DiskCache

        store = DiskCache("vela", re.sub(r"[^0-9A-Za-z_.-]", "_", version()), enabled=cache)
        key = b"\0".join([hashlib.sha256(data).digest(), hashlib.sha256(ini.read_bytes()).digest(),
                          *(f.encode() for f in flags)])
        hit = store.get(key)
        if hit is not None:
            return hit
    with tempfile.TemporaryDirectory(prefix="fvp-vela-") as tmp:
        src = Path(tmp) / "model.tflite"
        src.write_bytes(data)
        out = compile_tflite(src, Path(tmp) / "out", accel, system_config, memory_mode, extra_args, label=model_name)
        compiled = out.path.read_bytes()
    if store is not None:
        store.put(key, compiled)
    return compiled


def split_args(items) -> list[str]:
    """``--vela-args`` values (each one shell-quoted string of Vela flags) as one argument list."""
    import shlex

    out = []
    for item in items:
        try:
            out += shlex.split(item)
        except ValueError as e:
            raise VelaError(f"--vela-args {item!r}: {e}") from None
    return out


def prepare(model: bytes, model_name: str, spec, vela_args=(), note=None) -> tuple[bytes, str]:
    """What ``fvp run MODEL --vela [--vela-args FLAGS]`` runs: ``(bytes, name)`` of MODEL compiled for ``spec``'s
    NPU, or MODEL itself (with a note) when it already holds an ``ethos-u`` operator."""
    from .kind import is_tflite

    if not is_tflite(model):
        raise VelaError(f"--vela: {model_name} is not a .tflite (file identifier TFL3); Vela compiles TFLite "
                        f"models only")
    extra = split_args(vela_args)
    check_extra_args(extra)
    if has_ethosu_operator(model):
        if note is not None:
            note(f"{model_name} already has an ethos-u operator (it is Vela-compiled): --vela runs it as it is")
        return model, model_name
    return compile_for_board(model, model_name, spec, extra), compiled_name(model_name)
