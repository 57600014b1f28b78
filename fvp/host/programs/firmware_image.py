"""The firmware image named in the board YAML, loaded by name (the FVP's ``-a app.axf``): the one loader.

``fvp`` never imports ``firmware`` statically: the board names a registered image (``fvp.boards.firmware_registry``:
the names a board may use), and this module imports the module that name points at, once per process, and
hands out what the host needs of it: ``main(bus, boot_info)`` (the entry the machine runs), and optionally
``session(bus, boot_info)`` (the runner kept alive between inferences: ``fvp.Session``, ``fvp.machine.resident``),
``check_config(boot_info)`` (problems with its own configuration), ``default_image(variant)`` (the program baked
into the image for the board's NPU configuration, used when no model is given) and
``ethosu_command_streams(image)`` (the firmware's program reader, for ``fvp disasm``) and
``inspect_program(image)`` (what a program holds, as a dict, for ``fvp inspect``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from ...boards.firmware_registry import resolve
from ...errors import ConfigError


@dataclass(frozen=True)
class FirmwareImage:
    name: str  # the registered name
    target: str  # ``module:function``
    module: object

    @property
    def main(self):
        """The entry function (``main(bus, boot_info)``)."""
        func = self.target.partition(":")[2] or "main"
        fn = getattr(self.module, func, None)
        if not callable(fn):
            raise ConfigError(f"firmware.entry: firmware image {self.name!r} ({self.target}) has no function {func!r}")
        return fn

    @property
    def session(self):
        """The session entry (``session(bus, boot_info)``, a generator: ``fvp.machine.resident``'s protocol), or
        None when the image has none."""
        fn = getattr(self.module, "session", None)
        return fn if callable(fn) else None

    def check_config(self, boot_info) -> list[str]:
        """The image's own verdict on its configuration (allocator, runtime, options): problems, one line each."""
        check = getattr(self.module, "check_config", None)
        return list(check(boot_info)) if check else []


_loaded: dict[str, FirmwareImage] = {}


def load(name: str) -> FirmwareImage:
    """The registered firmware image ``name``, its module imported once per process."""
    try:
        key, target = resolve(name)
    except ValueError as e:
        raise ConfigError(f"firmware.entry: {e}") from None
    image = _loaded.get(key)
    if image is None:
        mod_name = target.partition(":")[0]
        try:
            module = importlib.import_module(mod_name)
        except ImportError as e:
            raise ConfigError(f"firmware.entry: cannot load firmware image {name!r} ({target}): {e}") from None
        image = _loaded[key] = FirmwareImage(key, target, module)
    return image


def firmware_image(spec) -> FirmwareImage:
    """The image the board ``spec`` names."""
    return load(spec.firmware.entry)


def firmware_module(spec):
    """The module of the registered firmware image the board names (never an arbitrary import path)."""
    return firmware_image(spec).module


def default_image(spec) -> tuple[bytes, str]:
    mod = firmware_module(spec)
    fn = getattr(mod, "default_image", None)
    if fn is None:
        raise ConfigError(f"firmware.entry: {spec.firmware.entry!r} has no built-in program; give a MODEL")
    return fn(spec.npu.variant if spec.npu is not None else None)


def check_program(spec, image: bytes, name: str, inputs: int = 0) -> None:
    """``ConfigError`` (one line naming ``name``, exit status 2) when the loader of the firmware image the board
    ``spec`` names refuses ``image`` (its ``check_program``; also more ``inputs`` files than the program takes),
    before anything runs; nothing when it takes it or the image cannot say."""
    fn = getattr(firmware_module(spec), "check_program", None)
    why = fn(image, inputs) if fn is not None else None
    if why:
        raise ConfigError(f"{name}: {why}")


def inspect_program(spec, image: bytes, name: str) -> dict:
    """What the firmware image the board ``spec`` names reads in ``image`` (its ``inspect_program``); a file it
    refuses is a ``ConfigError`` of one line naming ``name``."""
    fn = getattr(firmware_module(spec), "inspect_program", None)
    if fn is None:
        raise ConfigError(f"firmware.entry: {spec.firmware.entry!r} cannot describe programs")
    try:
        return fn(image)
    except Exception as e:
        if not hasattr(e, "message"):  # not the reader's verdict on the file (a RuntimeFailure): a bug, not exit 2
            raise
        msg = str(e.message).splitlines() or [type(e).__name__]
        raise ConfigError(f"{name}: {msg[0]}") from None
