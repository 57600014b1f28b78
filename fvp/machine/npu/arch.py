"""The Ethos-U variant table, and the one place that names the product families.

Every configuration Vela knows, ``ethos-u55-32/64/128/256``, ``ethos-u65-256/512`` and
``ethos-u85-128/256/512/1024/2048``, as a frozen :class:`~fvp.machine.npu.variant.NpuArch` built by its product
family (``u55/``: the Ethos-U55 and U65; ``u85/``: the Ethos-U85). Each configuration names its family
(``arch.family``), the object the shared model calls for everything product-specific (``family.py``): the product
is chosen here, once, from the configuration a board or a driver payload names, and nowhere else. A new product is
a new folder listed in :data:`FAMILIES`.
"""

from __future__ import annotations

from hwdesc.ethosu import NPU_VARIANTS

from ...errors import ConfigError
from . import u55, u85
from .variant import NpuArch

#: the product families, in the order of their configurations in hwdesc.ethosu.NPU_VARIANTS
FAMILIES = (u55.FAMILY, u85.FAMILY)

ARCHS = {a.name: a for family in FAMILIES for a in family.variants}

assert tuple(ARCHS) == NPU_VARIANTS  # the names a board may give (hwdesc), each with its microarchitecture


def get_arch(name) -> NpuArch:
    """Look up a variant by name (``ethos-u55-128``; case, ``_`` and an ``Ethos_U55_128`` spelling accepted).

    An :class:`NpuArch` is returned unchanged.
    """
    if isinstance(name, NpuArch):
        return name
    key = str(name).strip().lower().replace("_", "-")
    if key in ARCHS:
        return ARCHS[key]
    raise ConfigError(f"unknown NPU variant {name!r}; expected one of {', '.join(ARCHS)}")


def arch_from_config_word(config_word: int) -> NpuArch:
    """The variant whose CONFIG register image equals ``config_word`` (as in a COP1 header)."""
    for a in ARCHS.values():
        if a.config_word == config_word:
            return a
    raise ConfigError(f"no NPU variant has CONFIG word 0x{config_word:08x}")


def family_sources() -> list:
    """The source files of every product family (with ``diskcache.npu_sources()``: what decoded streams and
    timings derive from)."""
    return [f for family in FAMILIES for f in family.sources()]
