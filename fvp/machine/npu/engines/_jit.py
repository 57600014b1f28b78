"""The one place where numba JIT options are set for every NPU kernel.

``cache=True`` keeps compiled kernels on disk between runs; ``nogil`` lets the host use threads; fastmath is
never enabled: the NPU's integer arithmetic must be bit-exact.
"""

import numba

JIT_OPTIONS = dict(cache=True, nogil=True, fastmath=False, error_model="numpy")


def njit(*args, **kwargs):
    """``numba.njit`` with the project's options; use as ``@njit`` or ``@njit(signature)``."""
    opts = dict(JIT_OPTIONS)
    opts.update(kwargs)
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return numba.njit(**opts)(args[0])
    return numba.njit(*args, **opts)
