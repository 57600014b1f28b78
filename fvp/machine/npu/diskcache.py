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
* bounded: ``FVP_CACHE_MAX_BYTES`` (default 512 MiB) for the whole directory; a hit refreshes the entry's time,
  and when a process's writes take the total above the bound the least recently used entries go first (those
  of older versions, never read again, before any current one).

Namespaces: ``weights`` (decoded weight arrays, ``weights.WeightCache``), ``streams`` (a command stream's decoded
operations, ``execute.py``) and ``timing`` (its timing for one configuration, ``device.py``); the last two are
pickles of the NPU model's own records, read back with an unpickler that refuses any other class.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import re
import struct
import tempfile
from pathlib import Path

from ...safe_write import discard_temporary

FORMAT_VERSION = 1
DEFAULT_MAX_BYTES = 512 << 20
_MAGIC = b"FVPC"
_HEADER = struct.Struct("<4sQ16s")  # magic, payload length, BLAKE2b-128 of the payload


_VERSION_DIR = re.compile(r"v\d+-[0-9A-Za-z_.-]+")
_SHARD_DIR = re.compile(r"[0-9a-f]{2}")
_ENTRY_NAME = re.compile(r"[0-9a-f]{40}")


def _subdirs(path, pattern):
    try:
        return [e.path for e in os.scandir(path) if e.is_dir(follow_symlinks=False)
                and (pattern is None or pattern.fullmatch(e.name))]
    except OSError:
        return []


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
        if root is None:
            try:
                root = cache_root()
            except (RuntimeError, KeyError, OSError):  # no home directory to put it in: run without it
                root, self.enabled = Path(os.devnull), False
        self.root = Path(root)
        self.dir = self.root / f"v{FORMAT_VERSION}-{version}" / namespace
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
            discard_temporary(tmp)
        self._total += len(blob)
        if self._total > self.max_bytes:
            self.evict()

    def _entries(self):
        """(mtime, size, path) of every entry under the cache root: all namespaces and versions share the
        bound, so the entries of an old version (never read again) are the first to go. Only files of the
        cache's own layout (``v<N>-<version>/<namespace>/<2 hex>/<40 hex>``) are ever listed, whatever else the
        directory holds."""
        out = []
        for vdir in _subdirs(self.root, _VERSION_DIR):
            for ns in _subdirs(vdir, None):
                for sub in _subdirs(ns, _SHARD_DIR):
                    try:
                        files = list(os.scandir(sub))
                    except OSError:
                        continue
                    for e in files:
                        if _ENTRY_NAME.fullmatch(e.name):
                            try:
                                st = e.stat()
                            except OSError:
                                continue
                            out.append((st.st_mtime, st.st_size, e.path))
        return out

    def _scan_total(self) -> int:
        return sum(size for _, size, _ in self._entries())

    def evict(self, target: int | None = None) -> None:
        """Remove the least recently used entries until the cache holds at most ``target`` bytes (default:
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
                continue
            for parent in (os.path.dirname(path), os.path.dirname(os.path.dirname(path))):
                try:
                    os.rmdir(parent)  # only when empty
                except OSError:
                    break
        self._total = total


# ------------------------------------------------------------------------------------------- pickled objects

#: what a pickled entry may name: the NPU model's own records and their plain fields. A cache directory is
#: trusted like the user's other files, but an entry that names anything else is refused all the same.
_PICKLE_MODULES = ("fvp.machine.npu.", "hwdesc.")
_PICKLE_BUILTINS = {"tuple", "list", "dict", "set", "frozenset", "int", "float", "complex", "bool", "str", "bytes",
                    "bytearray", "slice", "range"}
_PICKLE_OTHER = {("copyreg", "_reconstructor"), ("copyreg", "__newobj__"), ("collections", "OrderedDict"),
                 ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
                 ("numpy._core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "scalar"),
                 ("numpy", "ndarray"), ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer")}


class _Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if ((module == "builtins" and name in _PICKLE_BUILTINS) or (module, name) in _PICKLE_OTHER
                or any(module.startswith(p) for p in _PICKLE_MODULES)):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a cache entry")


class ObjectCache(DiskCache):
    """A namespace of pickled objects of the NPU model (decoded streams, their timing). ``get_obj`` returns
    None for a missing, corrupt or unreadable entry (the caller then computes the object and ``put_obj`` s it)."""

    def get_obj(self, key: bytes):
        payload = self.get(key)
        if payload is None:
            return None
        try:
            return _Unpickler(io.BytesIO(payload)).load()
        except Exception:  # noqa: BLE001 - an entry of an older layout or a refused class: recompute it
            self.corrupt += 1
            return None

    def put_obj(self, key: bytes, obj) -> None:
        if not self.enabled:
            return
        try:
            payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - not picklable: keep it in memory only
            return
        self.put(key, payload)


_OBJECT_CACHES: dict = {}


def object_cache(namespace: str, *sources) -> ObjectCache:
    """The process's :class:`ObjectCache` for ``namespace``, versioned by the given source files (the code
    that computes its objects; every module of the NPU model is a safe choice)."""
    c = _OBJECT_CACHES.get(namespace)
    if c is None:
        c = _OBJECT_CACHES[namespace] = ObjectCache(namespace, source_hash(*sources))
    return c


def npu_sources() -> list:
    """The source files of the NPU model and its interface tables: what decoded streams and timings derive
    from (a change to any of them starts a new cache version)."""
    here = Path(__file__).resolve().parent
    files = sorted(here.glob("*.py")) + sorted((here / "timing").glob("*.py"))
    try:
        import hwdesc

        files += sorted(Path(hwdesc.__file__).resolve().parent.glob("*.py"))
    except ImportError:
        pass
    return files
