"""Derived data kept on disk between processes: a content-addressed, versioned, bounded cache.

A new ``fvp run`` of a program it has run before decodes nothing: the decoded weights of each weight stream are
read back instead of decoded (the in-process caches stay in front of this one). Where and how:

* directory: ``$FVP_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/fvp`` (``~/.cache/fvp``); below it one directory
  per format version and per source hash of the code that derives the data (``v1-<hash>/weights/``), so a change
  to the decoder never reads an old entry;
* off: ``FVP_CACHE=0`` (also ``off``/``no``/``false``), or ``DiskCache(..., enabled=False)``; an unwritable
  directory turns it off for the process, silently (it is an optimisation, never a reason to fail);
* concurrent writers: an entry is written to a temporary file in its directory and renamed over the name, so a
  reader sees a whole entry or none; two writers of one key write the same bytes;
* corrupt entries: each entry carries a magic, its length and a BLAKE2b digest of its payload; a bad entry is
  ignored, removed, and rewritten by the caller's next ``put``;
* bounded: ``FVP_CACHE_MAX_BYTES`` (default 512 MiB) per namespace; a hit refreshes the entry's time, and when
  a process's writes take the total above the bound the least recently used entries go first.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from pathlib import Path

FORMAT_VERSION = 1
DEFAULT_MAX_BYTES = 512 << 20
_MAGIC = b"FVPC"
_HEADER = struct.Struct("<4sQ16s")  # magic, payload length, BLAKE2b-128 of the payload


def cache_root() -> Path:
    env = os.environ.get("FVP_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "fvp"


def enabled_by_env() -> bool:
    return os.environ.get("FVP_CACHE", "1").strip().lower() not in ("0", "off", "no", "false")


def _max_bytes() -> int:
    try:
        return int(os.environ.get("FVP_CACHE_MAX_BYTES", DEFAULT_MAX_BYTES))
    except ValueError:
        return DEFAULT_MAX_BYTES


def source_hash(*files) -> str:
    """A short digest of source files (the code whose output a namespace holds)."""
    h = hashlib.blake2b(digest_size=6)
    for f in files:
        try:
            h.update(Path(f).read_bytes())
        except OSError:
            h.update(str(f).encode())
    return h.hexdigest()


class DiskCache:
    """One namespace of the on-disk cache: ``get(key) -> bytes | None`` and ``put(key, payload)``, where
    ``key`` is any bytes (hashed) and ``payload`` the bytes to keep. ``hits``, ``misses``, ``corrupt`` count."""

    def __init__(self, namespace: str, version: str, *, root: Path | None = None, max_bytes: int | None = None,
                 enabled: bool | None = None):
        self.enabled = enabled_by_env() if enabled is None else bool(enabled)
        self.dir = Path(root if root is not None else cache_root()) / f"v{FORMAT_VERSION}-{version}" / namespace
        self.max_bytes = _max_bytes() if max_bytes is None else int(max_bytes)
        self.hits = self.misses = self.corrupt = 0
        self._total = None  # bytes in the namespace, counted at the first write of this process

    def _path(self, key: bytes) -> Path:
        name = hashlib.blake2b(key, digest_size=20).hexdigest()
        return self.dir / name[:2] / name

    def get(self, key: bytes) -> bytes | None:
        if not self.enabled:
            return None
        path = self._path(key)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            self.misses += 1
            return None
        payload = self._check(data)
        if payload is None:
            self.corrupt += 1
            self.misses += 1
            try:
                path.unlink()
            except OSError:
                pass
            return None
        self.hits += 1
        try:
            os.utime(path)  # least recently used goes first
        except OSError:
            pass
        return payload

    @staticmethod
    def _check(data: bytes) -> bytes | None:
        if len(data) < _HEADER.size:
            return None
        magic, n, digest = _HEADER.unpack_from(data)
        payload = data[_HEADER.size:]
        if magic != _MAGIC or n != len(payload) or hashlib.blake2b(payload, digest_size=16).digest() != digest:
            return None
        return payload

    def put(self, key: bytes, payload: bytes) -> None:
        if not self.enabled:
            return
        path = self._path(key)
        blob = _HEADER.pack(_MAGIC, len(payload), hashlib.blake2b(payload, digest_size=16).digest()) + payload
        if self._total is None:
            self._total = self._scan_total()
        tmp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, path)
            tmp = None
        except OSError:
            self.enabled = False  # read-only or full: run on without it
            return
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
        self._total += len(blob)
        if self._total > self.max_bytes:
            self.evict()

    def _entries(self):
        out = []
        try:
            for sub in os.scandir(self.dir):
                if not sub.is_dir():
                    continue
                for e in os.scandir(sub.path):
                    if e.is_file() and not e.name.startswith(".tmp-"):
                        st = e.stat()
                        out.append((st.st_mtime, st.st_size, e.path))
        except OSError:
            pass
        return out

    def _scan_total(self) -> int:
        return sum(size for _, size, _ in self._entries())

    def evict(self, target: int | None = None) -> None:
        """Remove the least recently used entries until the namespace holds at most ``target`` bytes (default:
        80 % of the bound)."""
        target = int(self.max_bytes * 0.8) if target is None else int(target)
        entries = sorted(self._entries())
        total = sum(size for _, size, _ in entries)
        for _, size, path in entries:
            if total <= target:
                break
            try:
                os.unlink(path)
                total -= size
            except OSError:
                pass
        self._total = total
