"""The firmware image named in the board YAML, loaded by name (the FVP's ``-a app.axf``).

``fvp`` never imports ``firmware`` statically: the board names a registered image (``fvp.boards.firmware_registry``), and the
module may also provide ``default_image(variant)`` (the program baked into the image for the board's NPU
configuration, used when no model is given)
and ``check_config(boot_info)`` (problems with its own configuration).
"""

from __future__ import annotations

from ..errors import ConfigError


def firmware_module(spec):
    """The module of the registered firmware image the board names (never an arbitrary import path)."""
    from ..boards.firmware_registry import load_module

    return load_module(spec.firmware.entry)


def default_image(spec) -> tuple[bytes, str]:
    mod = firmware_module(spec)
    fn = getattr(mod, "default_image", None)
    if fn is None:
        raise ConfigError(f"firmware.entry: {spec.firmware.entry!r} has no built-in program; give a MODEL")
    return fn(spec.npu.variant if spec.npu is not None else None)
