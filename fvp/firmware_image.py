"""The firmware image named in the board YAML, loaded by name (the FVP's ``-a app.axf``).

``fvp`` never imports ``firmware`` statically: the entry ``module:function`` comes from the board, and the
module may also provide ``default_image(variant)`` (the program baked into the image for the board's NPU
configuration, used when no model is given)
and ``check_config(boot_info)`` (problems with its own configuration).
"""

from __future__ import annotations

import importlib

from .errors import ConfigError


def firmware_module(spec):
    entry = spec.firmware.entry
    name = entry.partition(":")[0]
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise ConfigError(f"firmware.entry: cannot load {entry!r}: {e}") from None


def default_image(spec) -> tuple[bytes, str]:
    mod = firmware_module(spec)
    fn = getattr(mod, "default_image", None)
    if fn is None:
        raise ConfigError(f"firmware.entry: {spec.firmware.entry!r} has no built-in program; give a MODEL")
    return fn(spec.npu.variant if spec.npu is not None else None)
