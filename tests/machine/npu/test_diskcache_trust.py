"""Issue 27, item 1: what a disk cache someone else can write may do (docs/security.md, "The disk cache").

An entry runs no code (no pickle is ever read), an entry not written with this user's key is never used (a
forged ``weights`` entry cannot change an output), a symbolic link inside the cache is never followed, and the
key is kept outside the cache, private to the user."""

import os
import pickle
import stat

import numpy as np
import pytest

from fvp.machine.npu import cachecodec, diskcache, weight_cache
from fvp.machine.npu.diskcache import DiskCache, ObjectCache
from fvp.machine.npu.timing.records import StreamTiming
from fvp.machine.npu.u55 import weights as weights_mod
from fvp.machine.npu.u55.weights import cached_weights
from fvp.machine.npu.weight_cache import WeightCache

from .test_weights import _stream_and_params

KEY_A, KEY_B = bytes(range(32)), bytes(range(1, 33))


class _Gadget:
    """What an attacker plants: unpickling it runs a command."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _dotted_name_gadget(marker) -> bytes:
    """The issue's gadget: protocol 4 resolves ('fvp.machine.npu.diskcache', 'os.system') through the module's
    globals, which an allow-list by module prefix let through."""
    cmd = f"touch {marker}".encode()
    mod, name = b"fvp.machine.npu.diskcache", b"os.system"
    return (b"\x80\x04" + b"\x8c" + bytes([len(mod)]) + mod + b"\x8c" + bytes([len(name)]) + name + b"\x93"
            + b"\x8c" + bytes([len(cmd)]) + cmd + b"\x85R.")


@pytest.mark.parametrize("gadget", ["reduce", "dotted_name"])
def test_a_pickle_in_an_entry_runs_nothing_even_with_a_valid_mac(tmp_path, gadget):
    marker = tmp_path / "PWNED"
    payload = pickle.dumps(_Gadget(marker)) if gadget == "reduce" else _dotted_name_gadget(marker)
    c = ObjectCache("timing", "x", cachecodec.Schema(StreamTiming), root=tmp_path / "cache", secret=KEY_A)
    c.put(b"k", payload)  # as if the user's own key had signed it
    assert c.get(b"k") == payload  # the entry is authentic ...
    assert c.get_obj(b"k") is None and c.corrupt == 1  # ... and still only data that is not a record
    assert not marker.exists()


def test_an_entry_written_with_another_key_is_never_used(tmp_path):
    root = tmp_path / "shared"
    mallory = DiskCache("weights", "x", root=root, secret=KEY_B)
    mallory.put(b"k", b"forged")
    alice = DiskCache("weights", "x", root=root, secret=KEY_A)
    assert alice.get(b"k") is None  # another key's names are not even this key's
    # the forged file placed at the name alice would read fails her MAC, and is removed
    forged = mallory._path(b"k")
    target = alice._path(b"k")
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(forged, target)
    assert alice.get(b"k") is None and alice.corrupt == 1 and not target.exists()
    alice.put(b"k", b"real")
    assert alice.get(b"k") == b"real"


def test_an_entry_moved_to_another_keys_name_fails(tmp_path):
    c = DiskCache("weights", "x", root=tmp_path, secret=KEY_A)
    c.put(b"one", b"1" * 100)
    c.put(b"two", b"2" * 100)
    a, b = c._path(b"one"), c._path(b"two")
    data_a = a.read_bytes()
    a.write_bytes(b.read_bytes())
    b.write_bytes(data_a)
    assert c.get(b"one") is None and c.get(b"two") is None and c.corrupt == 2
    # nor across namespaces or versions
    c.put(b"one", b"1" * 100)
    other = DiskCache("vela", "x", root=tmp_path, secret=KEY_A)
    dst = other._path(b"one")
    dst.parent.mkdir(parents=True)
    dst.write_bytes(c._path(b"one").read_bytes())
    assert other.get(b"one") is None


def test_a_forged_weights_entry_does_not_change_the_weights(tmp_path, monkeypatch):
    w, stream, params = _stream_and_params()
    root = tmp_path / "cache"
    cached_weights(WeightCache(disk=weight_cache.disk_cache(root=root, secret=KEY_A)), stream, **params)
    # an attacker with write access rewrites every entry: same layout, other weights, a MAC under another key
    forger = weight_cache.disk_cache(root=root, secret=KEY_B)
    for entry in [p for p in root.rglob("*") if p.is_file()]:
        name = entry.name
        payload = weight_cache._to_disk(np.zeros_like(w))
        entry.write_bytes(diskcache._HEADER.pack(diskcache._MAGIC, len(payload), forger._mac(name, payload)) + payload)
    calls = []
    real = weights_mod.decode_mlw
    monkeypatch.setattr(weights_mod, "decode_mlw", lambda *a, **k: calls.append(1) or real(*a, **k))
    cache = WeightCache(disk=weight_cache.disk_cache(root=root, secret=KEY_A))
    np.testing.assert_array_equal(cached_weights(cache, stream, **params), w)
    assert calls == [1] and cache.disk_hits == 0  # decoded again: the forged entry was refused


@pytest.mark.parametrize("level", ["version", "namespace", "shard", "entry"])
def test_a_symbolic_link_inside_the_cache_is_never_followed(tmp_path, level):
    root, outside = tmp_path / "cache", tmp_path / "outside"
    outside.mkdir()
    good = DiskCache("weights", "x", root=tmp_path / "elsewhere", secret=KEY_A)
    good.put(b"k", b"entry")  # a valid entry, to be reached through a link
    c = DiskCache("weights", "x", root=root, secret=KEY_A)
    path = c._path(b"k")
    levels = {"version": path.parents[2], "namespace": path.parents[1], "shard": path.parent, "entry": path}
    link = levels[level]
    link.parent.mkdir(parents=True, exist_ok=True)
    twin = good._path(b"k")
    target = {"version": twin.parents[2], "namespace": twin.parents[1], "shard": twin.parent, "entry": twin}[level]
    os.symlink(target, link)
    assert c.get(b"k") is None  # not read through the link
    before = sorted((p, p.stat().st_mtime) for p in (tmp_path / "elsewhere").rglob("*"))
    c.put(b"k", b"new")  # writes nothing through it (a directory link turns the cache off; an entry link is
    assert sorted((p, p.stat().st_mtime) for p in (tmp_path / "elsewhere").rglob("*")) == before  # replaced)
    assert good.get(b"k") == b"entry"
    assert os.path.islink(link) != (level == "entry")
    c2 = DiskCache("weights", "x", root=root, secret=KEY_A, max_bytes=0)
    c2.evict(0)  # eviction removes nothing through it either
    assert good.get(b"k") == b"entry"


def test_a_symbolic_link_as_the_root_is_the_users_choice(tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    c = DiskCache("weights", "x", root=tmp_path / "link", secret=KEY_A)
    c.put(b"k", b"v")
    assert c.get(b"k") == b"v" and list((tmp_path / "real").rglob("*" * 1))


def _key_env(monkeypatch, path):
    monkeypatch.setenv("FVP_CACHE_KEY_FILE", str(path))
    monkeypatch.setattr(diskcache, "_SECRETS", {})


def test_the_key_is_made_private_outside_the_cache(tmp_path, monkeypatch):
    key = tmp_path / "config" / "fvp" / "cache-key"
    _key_env(monkeypatch, key)
    c = DiskCache("weights", "x", root=tmp_path / "cache")
    c.put(b"k", b"v")
    assert c.get(b"k") == b"v"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and key.stat().st_size == 32
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    monkeypatch.setattr(diskcache, "_SECRETS", {})
    assert DiskCache("weights", "x", root=tmp_path / "cache").get(b"k") == b"v"  # the same key next time


@pytest.mark.parametrize("problem", ["readable", "link", "short", "inside"])
def test_an_unusable_key_turns_the_cache_off(tmp_path, monkeypatch, problem):
    key = tmp_path / "cache-key"
    key.write_bytes(os.urandom(32))
    key.chmod(0o600)
    root = tmp_path / "cache"
    if problem == "readable":
        key.chmod(0o644)
    elif problem == "link":
        real = tmp_path / "real-key"
        key.rename(real)
        key.symlink_to(real)
    elif problem == "short":
        key.write_bytes(b"x" * 5)
    else:
        root = tmp_path  # the key file would be inside the cache directory
    _key_env(monkeypatch, key)
    c = DiskCache("weights", "x", root=root)
    c.put(b"k", b"v")
    assert c.get(b"k") is None and not c.enabled
    assert not list(root.rglob("v2-*"))
