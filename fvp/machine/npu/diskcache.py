"""Derived data kept on disk between processes: a content-addressed, versioned, bounded, authenticated cache.

A new ``fvp run`` of a program it has run before decodes nothing: the decoded weights of each weight stream are
read back instead of decoded (the in-process caches stay in front of this one). Where and how:

* directory: ``$FVP_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/fvp`` (``~/.cache/fvp``); below it one directory
  per format version and per source hash of the code that derives the data (``v2-<hash>/weights/``), so a change
  to the decoder never reads an old entry;
* off: ``FVP_CACHE=0`` (also ``off``/``no``/``false``), or ``DiskCache(..., enabled=False)``; an unwritable
  directory, or no usable key (below), turns it off for the process, silently (it is an optimisation, never a
  reason to fail);
* trusted only from this user: every entry carries a keyed BLAKE2b MAC of its namespace, version, key and
  payload under a per-user secret kept *outside* the cache directory (``$FVP_CACHE_KEY_FILE``, else
  ``$XDG_CONFIG_HOME/fvp/cache-key``, ``~/.config/fvp/cache-key``: 32 random bytes made at first use, mode 0600,
  refused when it is a link, another user's or readable by others). An entry someone else wrote (a shared
  ``FVP_CACHE_DIR``, a CI cache restored from another job, a cache in a tarball), changed, or moved to another
  key's name, fails the MAC and is ignored and removed: it is recomputed. Entry names are keyed too, so another
  key's entries are never even read;
* no code: an entry is bytes (``weights``, ``vela``) or the NPU model's records in the schema-checked format of
  ``cachecodec`` (``streams``, ``timing``), never a pickle; a valid MAC does not make anything executable;
* no links: below the root, every directory is opened with ``O_NOFOLLOW`` relative to its parent's descriptor
  and every entry likewise; a version, namespace or shard directory that is a symbolic link (or anything but a
  directory) is never followed, read or written through (``put`` writes nothing outside the cache). The root
  itself may be a link: the user chose it;
* concurrent writers: an entry is written to a temporary file in its directory and renamed over the name, so a
  reader sees a whole entry or none; two writers of one key write the same bytes;
* corrupt entries: a bad magic, length or MAC is ignored, removed, and rewritten by the caller's next ``put``;
* bounded: ``FVP_CACHE_MAX_BYTES`` (default 512 MiB) for the whole directory; a hit refreshes the entry's time,
  and when a process's writes take the total above the bound the least recently used entries go first (those
  of older versions, never read again, before any current one).

Namespaces: ``weights`` (decoded weight arrays, ``weights.WeightCache``), ``streams`` (a command stream's decoded
operations, ``execute.py``), ``timing`` (its timing for one configuration, ``device.py``) and ``vela`` (compiled
``.tflite`` files, ``fvp.host.programs.vela``).
"""

from __future__ import annotations

import errno
import functools
import hashlib
import hmac
import os
import re
import stat
import struct
from pathlib import Path

from . import cachecodec

FORMAT_VERSION = 2
DEFAULT_MAX_BYTES = 512 << 20
KEY_BYTES = 32
_MAGIC = b"FVP2"
_HEADER = struct.Struct("<4sQ32s")  # magic, payload length, keyed BLAKE2b-256 of (namespace, version, key, payload)

_VERSION_DIR = re.compile(r"v\d+-[0-9A-Za-z_.-]+")
_NAME_DIR = re.compile(r"[0-9A-Za-z_.-]+")
_SHARD_DIR = re.compile(r"[0-9a-f]{2}")
_ENTRY_NAME = re.compile(r"[0-9a-f]{40}")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def cache_root() -> Path:
    env = os.environ.get("FVP_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "fvp"


def key_file() -> Path:
    """Where the per-user secret that authenticates entries is kept (never inside the cache directory)."""
    env = os.environ.get("FVP_CACHE_KEY_FILE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return (Path(xdg) if xdg else Path.home() / ".config") / "fvp" / "cache-key"


def enabled_by_env() -> bool:
    return os.environ.get("FVP_CACHE", "1").strip().lower() not in ("0", "off", "no", "false")


def _max_bytes() -> int:
    try:
        return int(os.environ.get("FVP_CACHE_MAX_BYTES", DEFAULT_MAX_BYTES))
    except ValueError:
        return DEFAULT_MAX_BYTES


@functools.lru_cache(maxsize=16)
def source_hash(*files) -> str:
    """A short digest of source files (the code whose output a namespace holds), once per process."""
    h = hashlib.blake2b(digest_size=6)
    for f in files:
        try:
            h.update(Path(f).read_bytes())
        except OSError:
            h.update(str(f).encode())
    return h.hexdigest()


# ------------------------------------------------------------------------------------------------ the key
_SECRETS: dict = {}  # key file -> secret (or None: unusable), read once per process


def _read_secret(path: str) -> bytes:
    """The secret in ``path``: a regular file (not a link) of this user's, not readable or writable by others,
    of exactly ``KEY_BYTES`` bytes; ``OSError`` otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise OSError(errno.EPERM, f"{path}: not a private file of this user's (mode 0600)")
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != KEY_BYTES:
        raise OSError(errno.EINVAL, f"{path}: not a cache key")
    return data


def _make_secret(path: str) -> None:
    """Create ``path`` with a new random secret, atomically (``link`` fails if another process made it first)."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(KEY_BYTES))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def cache_secret(root: Path | None = None) -> bytes | None:
    """This user's cache key (made at first use), or None when there is none to be had: no home, an unusable
    key file, or a key file inside the cache directory ``root`` (whoever can write the cache could read it)."""
    try:
        path = os.path.abspath(key_file())
    except (RuntimeError, KeyError, OSError):
        return None
    if root is not None:
        real_root = os.path.realpath(root)
        if os.path.commonpath([os.path.realpath(path), real_root]) == real_root:
            return None
    if path not in _SECRETS:
        secret = None
        try:
            try:
                secret = _read_secret(path)
            except FileNotFoundError:
                _make_secret(path)
                secret = _read_secret(path)
        except (OSError, ValueError):
            secret = None
        _SECRETS[path] = secret
    return _SECRETS[path]


def seal(label: str, data: bytes, root: Path | None = None) -> bytes | None:
    """A keyed BLAKE2b-256 of ``(label, data)`` under this user's cache key, for a file kept in the cache
    directory ``root`` by another writer (``fvp sweep``'s compiles): a file whose seal does not match was not
    written by this user and is not used. None when there is no usable key."""
    try:
        secret = cache_secret(cache_root() if root is None else root)
    except (RuntimeError, KeyError, OSError):
        return None
    if secret is None:
        return None
    h = hashlib.blake2b(digest_size=32, key=secret, person=b"fvp-cache-file")
    h.update(label.encode() + b"\0")
    h.update(data)
    return h.digest()


# ------------------------------------------------------------------------------------------------ directories
def _open_dir(parent_fd: int, name: str, create: bool) -> int:
    """A descriptor of the directory ``name`` inside ``parent_fd``, never through a symbolic link (``ELOOP``;
    anything but a directory: ``ENOTDIR``); made (mode 0777 less the umask) when ``create`` and missing."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        if not create:
            raise
    try:
        os.mkdir(name, dir_fd=parent_fd)
    except FileExistsError:
        pass
    return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)


def _walk_entries(fd: int, levels: tuple, path: tuple):
    """``(path, name, stat)`` of every entry file below the directory ``fd``: one directory level per pattern of
    ``levels`` (each opened from its parent's descriptor, never through a link, closed after its walk), then the
    entry files of the last. A directory or file that cannot be opened or read is passed over."""
    if not levels:
        for name in _scan(fd, _ENTRY_NAME, False):
            try:
                yield path, name, os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
        return
    for sub in _scan(fd, levels[0], True):
        try:
            sub_fd = _open_dir(fd, sub, False)
        except OSError:
            continue
        try:
            yield from _walk_entries(sub_fd, levels[1:], path + (sub,))
        finally:
            os.close(sub_fd)


def _scan(fd: int, pattern, dirs: bool) -> list:
    """Names in the directory ``fd`` that match ``pattern`` and are directories (``dirs``) or regular files,
    as they are (a symbolic link is neither)."""
    out = []
    try:
        with os.scandir(fd) as it:
            for e in it:
                if pattern.fullmatch(e.name):
                    try:
                        ok = e.is_dir(follow_symlinks=False) if dirs else e.is_file(follow_symlinks=False)
                    except OSError:
                        continue
                    if ok:
                        out.append(e.name)
    except OSError:
        pass
    return out


class _Dirs:
    """The descriptors of a chain of directories, closed on exit."""

    def __init__(self, root: Path, parts, create: bool):
        self.fds = []
        try:
            if create:
                os.makedirs(root, exist_ok=True)
            self.fds.append(os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))  # the root may be a link
            for part in parts:
                self.fds.append(_open_dir(self.fds[-1], part, create))
        except BaseException:
            self.close()
            raise

    @property
    def fd(self) -> int:
        return self.fds[-1]

    def close(self):
        for fd in reversed(self.fds):
            os.close(fd)
        self.fds = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class DiskCache:
    """One namespace of the on-disk cache: ``get(key) -> bytes | None`` and ``put(key, payload)``, where
    ``key`` is any bytes (hashed) and ``payload`` the bytes to keep. ``hits``, ``misses``, ``corrupt`` count.
    ``secret``: the key that authenticates entries (default: this user's, :func:`cache_secret`)."""

    def __init__(self, namespace: str, version: str, *, root: Path | None = None, max_bytes: int | None = None,
                 enabled: bool | None = None, secret: bytes | None = None):
        if not _NAME_DIR.fullmatch(namespace) or not _NAME_DIR.fullmatch(version):
            raise ValueError(f"cache namespace {namespace!r} and version {version!r}: letters, digits, _ . - only")
        self.enabled = enabled_by_env() if enabled is None else bool(enabled)
        if root is None:
            try:
                root = cache_root()
            except (RuntimeError, KeyError, OSError):  # no home directory to put it in: run without it
                root, self.enabled = Path(os.devnull), False
        self.root = Path(root)
        self.namespace = namespace
        self.version_dir = f"v{FORMAT_VERSION}-{version}"
        self.dir = self.root / self.version_dir / namespace
        self.max_bytes = _max_bytes() if max_bytes is None else int(max_bytes)
        self.hits = self.misses = self.corrupt = 0
        self._total = None  # bytes in the namespace, counted at the first write of this process
        self._secret = secret

    @property
    def secret(self) -> bytes | None:
        if self._secret is None and self.enabled:
            self._secret = cache_secret(self.root)
            if self._secret is None:
                self.enabled = False  # no key, no trust: run without the cache
        return self._secret

    def _name(self, key: bytes) -> str:
        return hashlib.blake2b(key, digest_size=20, key=self.secret, person=b"fvp-cache-name").hexdigest()

    def _path(self, key: bytes) -> Path:
        name = self._name(key)
        return self.dir / name[:2] / name

    def _mac(self, name: str, payload) -> bytes:
        h = hashlib.blake2b(digest_size=32, key=self.secret, person=b"fvp-cache-entry")
        h.update(f"{self.version_dir}/{self.namespace}/{name}\0".encode())
        h.update(payload)
        return h.digest()

    def get(self, key: bytes) -> bytes | None:
        if not self.enabled or self.secret is None:
            return None
        name = self._name(key)
        try:
            with _Dirs(self.root, (self.version_dir, self.namespace, name[:2]), create=False) as d:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=d.fd)
                try:
                    st = os.fstat(fd)
                    if not stat.S_ISREG(st.st_mode) or st.st_size > self.max_bytes + _HEADER.size:
                        data = b""
                    else:
                        with os.fdopen(fd, "rb", closefd=False) as f:
                            data = f.read()
                    payload = self._check(name, data)
                    if payload is None:
                        self.corrupt += 1
                        self.misses += 1
                        try:
                            os.unlink(name, dir_fd=d.fd)
                        except OSError:
                            pass
                        return None
                    try:
                        os.utime(fd)  # least recently used goes first
                    except OSError:
                        pass
                finally:
                    os.close(fd)
        except OSError:
            self.misses += 1
            return None
        self.hits += 1
        return payload

    def _check(self, name: str, data: bytes) -> bytes | None:
        if len(data) < _HEADER.size:
            return None
        magic, n, mac = _HEADER.unpack_from(data)
        payload = memoryview(data)[_HEADER.size:]
        if magic != _MAGIC or n != len(payload) or not hmac.compare_digest(self._mac(name, payload), mac):
            return None
        return bytes(payload)

    def put(self, key: bytes, payload: bytes) -> None:
        if not self.enabled or self.secret is None:
            return
        name = self._name(key)
        blob = _HEADER.pack(_MAGIC, len(payload), self._mac(name, payload)) + payload
        if self._total is None:
            self._total = self._scan_total()
        try:
            with _Dirs(self.root, (self.version_dir, self.namespace, name[:2]), create=True) as d:
                tmp = f".tmp-{os.getpid()}-{os.urandom(6).hex()}"
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666,
                             dir_fd=d.fd)
                try:
                    try:
                        with os.fdopen(fd, "wb") as f:
                            f.write(blob)
                    except BaseException:
                        os.unlink(tmp, dir_fd=d.fd)
                        raise
                    os.replace(tmp, name, src_dir_fd=d.fd, dst_dir_fd=d.fd)
                except OSError:
                    try:
                        os.unlink(tmp, dir_fd=d.fd)
                    except OSError:
                        pass
                    raise
        except OSError:
            self.enabled = False  # read-only, full, or a link where a directory belongs: run on without it
            return
        self._total += len(blob)
        if self._total > self.max_bytes:
            self.evict()

    def _entries(self):
        """(mtime, size, (version, namespace, shard, name)) of every entry under the cache root: all namespaces
        and versions share the bound, so the entries of an old version (never read again) are the first to go.
        Only regular files of the cache's own layout (``v<N>-<version>/<namespace>/<2 hex>/<40 hex>``) are ever
        listed, whatever else the directory holds, and no link is followed."""
        try:
            root = _Dirs(self.root, (), create=False)
        except OSError:
            return []
        with root:
            return [(st.st_mtime, st.st_size, (*path, name))
                    for path, name, st in _walk_entries(root.fd, (_VERSION_DIR, _NAME_DIR, _SHARD_DIR), ())]

    def _scan_total(self) -> int:
        return sum(size for _, size, _ in self._entries())

    def evict(self, target: int | None = None) -> None:
        """Remove the least recently used entries until the cache holds at most ``target`` bytes (default:
        80 % of the bound)."""
        target = int(self.max_bytes * 0.8) if target is None else int(target)
        entries = sorted(self._entries())
        total = sum(size for _, size, _ in entries)
        for _, size, (v, ns, shard, name) in entries:
            if total <= target:
                break
            try:
                with _Dirs(self.root, (v, ns, shard), create=False) as d:
                    os.unlink(name, dir_fd=d.fd)
                    total -= size
                    parents = d.fds[:-1]
                    for parent_fd, child in ((parents[-1], shard), (parents[-2], ns)):
                        os.rmdir(child, dir_fd=parent_fd)  # only when empty (else OSError: stop)
            except OSError:
                continue
        self._total = total


# ------------------------------------------------------------------------------------------- records
class ObjectCache(DiskCache):
    """A namespace of the NPU model's records (decoded streams, their timing) in the format of
    :mod:`cachecodec`: only the dataclasses of ``schema`` (a :class:`cachecodec.Schema`) and plain values are
    written or read back. ``get_obj`` returns None for a missing, corrupt or unreadable entry (the caller then
    computes the object and ``put_obj`` s it)."""

    def __init__(self, namespace: str, version: str, schema: cachecodec.Schema, **kwargs):
        super().__init__(namespace, version, **kwargs)
        self.schema = schema

    def get_obj(self, key: bytes):
        payload = self.get(key)
        if payload is None:
            return None
        try:
            return cachecodec.decode(payload, self.schema)
        except cachecodec.CodecError:  # an entry of another layout: recompute it
            self.corrupt += 1
            return None

    def put_obj(self, key: bytes, obj) -> None:
        if not self.enabled:
            return
        try:
            payload = cachecodec.encode(obj, self.schema)
        except cachecodec.CodecError:  # a value the format does not hold: keep it in memory only
            return
        self.put(key, payload)


_OBJECT_CACHES: dict = {}


def object_cache(namespace: str, *sources, types=()) -> ObjectCache:
    """The process's :class:`ObjectCache` for ``namespace``, versioned by the given source files (the code
    that computes its objects; every module of the NPU model is a safe choice), holding records of the
    dataclasses ``types`` (and those their fields name, :class:`cachecodec.Schema`)."""
    c = _OBJECT_CACHES.get(namespace)
    if c is None:
        c = _OBJECT_CACHES[namespace] = ObjectCache(namespace, source_hash(*sources), cachecodec.Schema(*types))
    return c


@functools.lru_cache(maxsize=1)
def npu_sources() -> tuple:
    """The source files of the NPU model (this package and its subpackages) and its interface tables: what
    decoded streams and timings derive from (a change to any of them starts a new cache version)."""
    files = []
    for top in (os.path.dirname(os.path.abspath(__file__)), _hwdesc_dir()):
        for d, subdirs, names in os.walk(top) if top else ():
            subdirs[:] = sorted(s for s in subdirs if not s.startswith((".", "__")))
            files += sorted(os.path.join(d, n) for n in names if n.endswith(".py"))
    return tuple(files)


def _hwdesc_dir() -> str | None:
    try:
        import hwdesc
    except ImportError:
        return None
    return os.path.dirname(os.path.abspath(hwdesc.__file__))
