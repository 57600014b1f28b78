"""Values derived from objects, kept beside them: what a replayed stream (the same decoded operations, feature
maps and weight arrays, inference after inference) would otherwise compute again.

An entry is keyed by the objects' identities and by whatever else the value depends on, and it holds the
objects themselves: while the entry lives no other object can take their ids, so a key that matches is the
same objects. Bounded: when full, the oldest entry goes. Nothing here knows what the values are; each user says
what its value depends on (its ``key``) and keeps the value a pure function of that and of the objects.
"""

from __future__ import annotations

MISS = object()  # what get() returns for nothing kept (a kept value may be None)


class IdentityMemo:
    __slots__ = ("_entries", "_max")

    def __init__(self, max_entries: int = 4096):
        self._entries: dict = {}
        self._max = max_entries

    def get(self, objs: tuple, key: tuple = ()):
        """The value put for these very objects and ``key``, or :data:`MISS`."""
        hit = self._entries.get(_ids(objs) + key)
        return MISS if hit is None else hit[1]

    def put(self, objs: tuple, value, key: tuple = ()) -> None:
        k = _ids(objs) + key
        if k not in self._entries and len(self._entries) >= self._max:
            del self._entries[next(iter(self._entries))]  # the oldest
        self._entries[k] = (objs, value)

    def __contains__(self, objs: tuple) -> bool:  # for tests: anything kept for these objects, any key
        ids = _ids(objs)
        return any(k[:len(ids)] == ids for k in self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()


def _ids(objs: tuple) -> tuple:
    return (id(objs[0]),) if len(objs) == 1 else tuple(map(id, objs))  # per operation and tile: the short way
