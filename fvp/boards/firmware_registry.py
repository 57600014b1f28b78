"""The firmware images a board may name: a registry, not an import path.

``firmware.entry`` in a board file (or ``-C``, or the drop-in's ``-f``) names a firmware image; it is never an
arbitrary ``module:function``. The names are the project's own (``arm_executor_runner``) and those installed
plugins register through the package entry-point group ``fvp.firmware``::

    [project.entry-points."fvp.firmware"]
    my_runner = "my_package.runner:main"

Only the module a registered name points at is ever imported (by ``fvp.host.programs.firmware_image``, the one loader);
this module only knows the names, so that a board is checked without importing anything. The historical spelling of the shipped board,
``firmware.arm_executor_runner:main``, is accepted as a synonym of ``arm_executor_runner`` because it is that
registered image's own target; no other ``module:function`` is.
"""

from __future__ import annotations

GROUP = "fvp.firmware"
BUILTIN = {"arm_executor_runner": "firmware.arm_executor_runner:main",
           "tflm_inference_runner": "firmware.tflm.runner:main"}

_plugins: dict | None = None


def _plugin_images() -> dict:
    global _plugins
    if _plugins is None:
        found = {}
        try:
            from importlib.metadata import entry_points

            for ep in entry_points(group=GROUP):
                if ep.name not in BUILTIN:
                    found[ep.name] = ep.value
        except Exception:  # noqa: BLE001 - broken metadata of some other distribution: no plugins
            found = {}
        _plugins = found
    return _plugins


def registered() -> dict:
    """Name -> ``module:function`` of every firmware image that may be named."""
    return {**BUILTIN, **_plugin_images()}


def resolve(name) -> tuple[str, str]:
    """The registered name for ``name`` and its ``module:function`` target; ``ValueError`` (what is allowed)
    for anything else."""
    if not isinstance(name, str):
        raise ValueError(f"expected the name of a firmware image, got {name!r}")
    images = BUILTIN if name in BUILTIN else registered()
    if name in images:
        return name, images[name]
    for key, target in images.items():  # the target spelled out: the same registered image
        if name == target or (name + ":main") == target:
            return key, target
    raise ValueError(f"{name!r} is not a registered firmware image; allowed: {', '.join(sorted(registered()))} "
                     f"(images are chosen by name; a plugin registers one in the {GROUP!r} entry-point group)")


def check_name(value) -> str:
    """Schema checker for ``firmware.entry``: returns the registered name."""
    return resolve(value)[0]
