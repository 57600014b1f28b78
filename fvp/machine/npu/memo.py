"""The NPU model's bounded in-process caches: one bounded map, and values kept beside the objects they derive from.

* :class:`BoundedCache` -- a map bounded by its number of entries and/or by the bytes its values hold; when over a
  bound the oldest entries go first (insertion order, or least recently used with ``lru=True``), the newest
  never. The decoded streams (``execute.py``), their timings (``device.py``), the decoded weights
  (``weight_cache.py``) and the fast engine's GEMM forms of weight arrays keep what they derived in one.
* :class:`IdentityMemo` -- values derived from objects, kept beside them: what a replayed stream (the same decoded
  operations, feature maps and weight arrays, inference after inference) would otherwise compute again. An entry
  is keyed by the objects' identities and by whatever else the value depends on, and it holds the objects
  themselves: while the entry lives no other object can take their ids, so a key that matches is the same
  objects. Nothing here knows what the values are; each user says what its value depends on (its ``key``) and
  keeps the value a pure function of that and of the objects.
"""

from __future__ import annotations

MISS = object()  # what get() returns for nothing kept (a kept value may be None)


class BoundedCache:
    """``key -> value`` with at most ``max_entries`` entries and ``max_bytes`` bytes (each entry's size given by
    its ``put``, grown by :meth:`grow`); ``None`` leaves a bound off. An entry larger than ``max_bytes`` on its
    own is not kept, unless ``keep_oversized`` (then it is kept alone). A hit makes its entry the newest when
    ``lru`` is set."""

    __slots__ = ("_entries", "max_entries", "max_bytes", "lru", "keep_oversized", "total_bytes")

    def __init__(self, max_entries: int | None = None, max_bytes: int | None = None, lru: bool = False,
                 keep_oversized: bool = False):
        self._entries: dict = {}  # key -> (value, size), oldest first
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.lru = lru
        self.keep_oversized = keep_oversized
        self.total_bytes = 0

    def get(self, key, default=None):
        """The value kept for ``key``, or ``default``."""
        hit = self._entries.get(key)
        if hit is None:
            return default
        if self.lru:
            del self._entries[key]
            self._entries[key] = hit
        return hit[0]

    def put(self, key, value, size: int = 0) -> bool:
        """Keep ``value`` for ``key`` as the newest entry (replacing one kept for the key), then drop the oldest
        entries while a bound is exceeded; False when the entry alone exceeds ``max_bytes`` and is not kept."""
        self.pop(key)
        if self.max_bytes is not None and size > self.max_bytes and not self.keep_oversized:
            return False
        self._entries[key] = (value, size)
        self.total_bytes += size
        self._evict()
        return True

    def grow(self, key, size: int) -> None:
        """The value kept for ``key`` now holds ``size`` bytes more (something was added to it)."""
        value, old = self._entries[key]
        self._entries[key] = (value, old + size)
        self.total_bytes += size
        self._evict()

    def pop(self, key, default=None):
        hit = self._entries.pop(key, None)
        if hit is None:
            return default
        self.total_bytes -= hit[1]
        return hit[0]

    def _evict(self) -> None:
        entries = self._entries
        while len(entries) > 1 and ((self.max_entries is not None and len(entries) > self.max_entries)
                                    or (self.max_bytes is not None and self.total_bytes > self.max_bytes)):
            self.total_bytes -= entries.pop(next(iter(entries)))[1]

    def __contains__(self, key) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def keys(self):
        return self._entries.keys()

    def clear(self) -> None:
        self._entries.clear()
        self.total_bytes = 0


class IdentityMemo:
    """Values per tuple of objects (by identity) and key, at most ``max_entries`` of them (the oldest go)."""

    __slots__ = ("_cache",)

    def __init__(self, max_entries: int = 4096):
        self._cache = BoundedCache(max_entries=max_entries)

    def get(self, objs: tuple, key: tuple = ()):
        """The value put for these very objects and ``key``, or :data:`MISS`."""
        hit = self._cache.get(_ids(objs) + key)
        return MISS if hit is None else hit[1]

    def put(self, objs: tuple, value, key: tuple = ()) -> None:
        self._cache.put(_ids(objs) + key, (objs, value))

    def __contains__(self, objs: tuple) -> bool:  # for tests: anything kept for these objects, any key
        ids = _ids(objs)
        return any(k[:len(ids)] == ids for k in self._cache.keys())

    def __len__(self) -> int:
        return len(self._cache)

    def clear(self) -> None:
        self._cache.clear()


def _ids(objs: tuple) -> tuple:
    return (id(objs[0]),) if len(objs) == 1 else tuple(map(id, objs))  # per operation and tile: the short way
