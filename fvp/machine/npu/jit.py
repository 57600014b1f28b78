"""The one place where numba JIT options are set for every NPU kernel (engines, weight decoders, feature-map
addressing), and where numba is imported.

``cache=True`` keeps compiled kernels on disk between runs; ``nogil`` lets the host use threads; fastmath is
never enabled: the NPU's integer arithmetic must be bit-exact.

Kernels are lazy: ``@njit`` returns a stand-in that imports numba and builds the real dispatcher the first time
the kernel is called (from Python or from another kernel). Importing a module full of kernels costs nothing, and
a program whose operations all take numpy paths never imports numba (0.15 s) nor initialises its compiler
(0.25 s more at the first call).
"""

from __future__ import annotations

import sys

JIT_OPTIONS = dict(cache=True, nogil=True, fastmath=False, error_model="numpy")


class LazyKernel:
    """A numba kernel compiled (or loaded from numba's disk cache) on first use."""

    def __init__(self, fn, args, kwargs):
        self.py_func = fn
        self._args = args
        self._kwargs = kwargs
        self._dispatcher = None
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn

    def dispatcher(self):
        """The real numba dispatcher. The kernels this one calls (names of its module's globals that its code
        uses and that are still stand-ins) are made real first and replace their stand-ins there, so that
        numba's typing sees them."""
        d = self._dispatcher
        if d is None:
            import numba

            self._building = True
            g = self.py_func.__globals__
            for name in self.py_func.__code__.co_names:
                value = g.get(name)
                if isinstance(value, LazyKernel) and not getattr(value, "_building", False):
                    g[name] = value.dispatcher()
            opts = dict(JIT_OPTIONS)
            opts.update(self._kwargs)
            d = self._dispatcher = numba.njit(*self._args, **opts)(self.py_func)
            self._building = False
            if g.get(self.__name__) is self:
                g[self.__name__] = d
        return d

    def __call__(self, *args):
        return self.dispatcher()(*args)

    @property
    def signatures(self):
        return [] if self._dispatcher is None else self._dispatcher.signatures

    @property
    def overloads(self):
        return {} if self._dispatcher is None else self._dispatcher.overloads


def njit(*args, **kwargs):
    """Lazy ``numba.njit`` with the project's options; use as ``@njit``, ``@njit(signature)`` or
    ``@njit(inline="always")``."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return LazyKernel(args[0], (), {})
    return lambda fn: LazyKernel(fn, args, kwargs)


def numba_loaded() -> bool:
    """Whether numba has been imported in this process (by a kernel or by anyone else)."""
    return "numba" in sys.modules
