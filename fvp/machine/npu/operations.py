"""Operations built from the decoder's register state: the product family of the configuration translates the
register state at each ``NPU_OP_*`` into the product-neutral descriptors of ``descriptors.py`` (``u55/operations.py``,
``u85/operations.py``).

:func:`build_operation` does it for one command, :func:`iter_operations` for every operation of a stream.
"""

from __future__ import annotations

from .arch import get_arch
from .command_stream import Command, RegisterState, iter_commands
from .descriptors import NpuOperation


def build_operation(state: RegisterState, cmd: Command, arch=None) -> NpuOperation:
    """Decode the operation ``cmd`` (an ``NPU_OP_*`` command) against the current register state."""
    arch = state.arch if arch is None else get_arch(arch)
    return arch.family.build_operation(state, cmd, arch)


def iter_operations(words, arch):
    """Yield ``(command, NpuOperation)`` for every ``NPU_OP_*`` of a stream (register writes applied)."""
    arch = get_arch(arch)
    state = RegisterState(arch)
    for c in iter_commands(words, arch):
        if c.is_operation:
            yield c, build_operation(state, c, arch)
        else:
            state.apply(c)
