"""The decoded-weight cache both products' weight decoders share: a stream's decoded ``W`` array once per (bytes,
unpack parameters), handed out read-only, LRU-bounded by bytes; the decoded weights and scales of an operation
object kept beside it for replayed streams; and, behind both, the on-disk cache of decoded weights.

What a weight stream decodes to is the product's business (``u55/weights.py``, ``u85/weights.py``): each gives
:meth:`WeightCache.get_decoded` its key and a function that decodes.
"""

from __future__ import annotations

import struct

import numpy as np

from .memo import BoundedCache


def disk_cache(**kwargs):
    """The on-disk cache of decoded weights (:mod:`fvp.machine.npu.diskcache`), versioned by the source of the
    decoder and of the products' weight orderings."""
    from . import diskcache, mlw
    from .arch import family_sources

    return diskcache.DiskCache("weights", diskcache.source_hash(mlw.__file__, __file__, *family_sources()),
                               **kwargs)


def _to_disk(w: np.ndarray) -> bytes:
    """A decoded weight array as bytes: rank, shape, int16 values (decoded weights are 9-bit)."""
    return struct.pack(f"<B{w.ndim}I", w.ndim, *w.shape) + w.astype("<i2").tobytes()


def _from_disk(payload: bytes) -> np.ndarray | None:
    try:
        ndim = payload[0]
        shape = struct.unpack_from(f"<{ndim}I", payload, 1)
        values = np.frombuffer(payload, "<i2", offset=1 + 4 * ndim)
        return values.reshape(shape).astype(np.int32)
    except (IndexError, struct.error, ValueError):
        return None


#: operations whose decoded weights and scales a :class:`WeightCache` keeps by the operation object (in front of
#: the content-keyed entries; about 2 x the stream bytes each)
OPERATION_MEMO = 4096


class WeightCache:
    """Decoded-weight cache keyed by the stream's bytes and the unpack parameters, LRU-bounded by total bytes.

    ``get_decoded`` returns a read-only ``W`` array; the same object is returned for the same key. ``hits`` and
    ``misses`` count lookups. With ``disk`` (a :class:`~fvp.machine.npu.diskcache.DiskCache`, e.g.
    :func:`disk_cache`) a miss first looks on disk, and what it decodes is written there: another process then
    decodes nothing (``disk_hits`` counts those reads).
    """

    def __init__(self, max_bytes: int = 256 << 20, disk=None):
        self.max_bytes = int(max_bytes)
        self._entries = BoundedCache(max_bytes=self.max_bytes, lru=True)  # (stream, params) -> W
        self.hits = 0
        self.misses = 0
        self.disk = disk
        self.disk_hits = 0
        # id(operation) -> (operation, arch, (stream copies, decoded result)), sized by the stream copies
        self._by_op = BoundedCache(max_entries=OPERATION_MEMO, max_bytes=self.max_bytes)

    @property
    def total_bytes(self) -> int:
        return self._entries.total_bytes

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self._by_op.clear()

    def by_operation(self, op, arch: str):
        """What :meth:`remember_operation` kept for this very operation object on ``arch``: ``(stream copies,
        result)``, or None. The caller compares the copies with the streams' bytes now before using it."""
        hit = self._by_op.get(id(op))
        if hit is None or hit[0] is not op or hit[1] != arch:
            return None
        return hit[2]

    def remember_operation(self, op, arch: str, value) -> None:
        """Keep ``value`` for the operation object ``op`` (a decoded stream's, replayed by later inferences);
        at most :data:`OPERATION_MEMO` operations and ``max_bytes`` of stream copies, the oldest dropped first."""
        self._by_op.put(id(op), (op, arch, value), sum(len(b) for b in value[0]))

    def get_decoded(self, stream: bytes, params: tuple, decode) -> np.ndarray:
        """The cached ``W`` for ``(stream, params)``, or ``decode()``'s result stored under that key (also used
        for the Ethos-U85's streams, whose decoder is ``u85/weights.py``)."""
        key = (stream, params)
        entry = self._entries.get(key)
        if entry is not None:
            self.hits += 1
            return entry
        self.misses += 1
        w = None
        disk_key = None
        if self.disk is not None:
            disk_key = stream + repr(key[1]).encode()
            payload = self.disk.get(disk_key)
            if payload is not None:
                w = _from_disk(payload)
                if w is not None:
                    self.disk_hits += 1
        if w is None:
            w = decode()
            if disk_key is not None:
                self.disk.put(disk_key, _to_disk(w))
        w.flags.writeable = False
        self._entries.put(key, w, len(stream) + w.nbytes)
        return w
