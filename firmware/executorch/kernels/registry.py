"""The operator registry: every CPU kernel the runner links in, under its operator name, with its argument types.

ExecuTorch registers each kernel under its operator's name (``namespace::op.overload``, e.g. ``aten::add.out``)
and the method loader looks every instruction's operator up there (``Missing operator`` when it is absent).
Here a kernel module declares each kernel once, where the kernel is written, with the types of its schema's
non-``out`` arguments (the codes of :mod:`.signatures`)::

    @kernel("aten::hardtanh.out", "T,s,s")
    def hardtanh(ctx, args): ...

    register(("aten::exp.out", "T", unary_out_dtype("exp", np.exp)),   # kernels made by a factory
             ...)

A function may be registered under several names (one ``@kernel`` line each). A name is registered once; a
second registration, a malformed name or an unknown type code is an error at import time.

``REGISTRY`` maps a name to its kernel ``fn(ctx, args)``; ``REGISTRY.unboxed()`` is the table the runtime
uses: each kernel behind the unboxing check of its argument tags (:func:`.signatures.unboxing`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from .signatures import check_signature, parse_signature, unboxing

_NAME = re.compile(r"[A-Za-z_]\w*::\w+(\.\w+)?")


class Registry(Mapping):
    """Operator name -> kernel, and operator name -> argument types."""

    def __init__(self):
        self._fns: dict = {}
        self._sigs: dict[str, str] = {}

    def add(self, name: str, sig: str, fn) -> None:
        if not _NAME.fullmatch(name):
            raise ValueError(f"kernel name {name!r} is not namespace::op[.overload]")
        if name in self._fns:
            raise ValueError(f"{name} is registered twice ({self._fns[name].__module__}, {fn.__module__})")
        parse_signature(sig)
        self._fns[name] = fn
        self._sigs[name] = sig

    def kernel(self, name: str, sig: str):
        """Decorator: register the function under ``name`` with argument types ``sig``."""
        def decorate(fn):
            self.add(name, sig, fn)
            return fn
        return decorate

    def register(self, *entries) -> None:
        """Register ``(name, sig, fn)`` entries (kernels built by factories)."""
        for name, sig, fn in entries:
            self.add(name, sig, fn)

    def __getitem__(self, name: str):
        return self._fns[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fns)

    def __len__(self) -> int:
        return len(self._fns)

    def signature(self, name: str) -> str | None:
        return self._sigs.get(name)

    @property
    def signatures(self) -> dict[str, str]:
        """Operator name -> the type codes of its non-``out`` arguments (a copy)."""
        return dict(self._sigs)

    def check_arguments(self, name: str, args: list, values: list):
        """The first argument whose tag the operator's accessor refuses, as ``(index, code, tag)``; None when all
        are right or the operator is unknown."""
        sig = self._sigs.get(name)
        return check_signature(sig, args, values) if sig else None

    def unboxed(self) -> dict:
        """The registry as the runtime registers it: every kernel behind its unboxing check."""
        return {name: unboxing(name, self._sigs[name], fn) for name, fn in self._fns.items()}


REGISTRY = Registry()
kernel = REGISTRY.kernel
register = REGISTRY.register
