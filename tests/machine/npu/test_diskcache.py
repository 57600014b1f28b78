"""The on-disk cache of derived data (fvp/machine/npu/diskcache.py) and the decoded weights kept in it."""

import os
import subprocess
import sys

import numpy as np

from fvp.machine.npu import diskcache, weight_cache
from fvp.machine.npu.u55 import weights as weights_mod
from fvp.machine.npu.u55.weights import cached_weights
from fvp.machine.npu.diskcache import DiskCache
from fvp.machine.npu.weight_cache import WeightCache

from .test_weights import _stream_and_params


def test_round_trip_corruption_and_off(tmp_path, monkeypatch):
    c = DiskCache("ns", "x", root=tmp_path)
    assert c.get(b"k") is None and c.misses == 1
    c.put(b"k", b"payload")
    assert c.get(b"k") == b"payload" and c.hits == 1
    # a corrupt entry (one flipped byte, or a truncated file) is ignored, removed, and rewritten by the next put
    path = c._path(b"k")
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    assert c.get(b"k") is None and c.corrupt == 1 and not path.exists()
    c.put(b"k", b"payload")
    path.write_bytes(path.read_bytes()[:10])
    assert c.get(b"k") is None and c.corrupt == 2
    c.put(b"k", b"payload")
    assert c.get(b"k") == b"payload"
    # versions do not share entries; FVP_CACHE=0 turns the cache off
    assert DiskCache("ns", "y", root=tmp_path).get(b"k") is None
    monkeypatch.setenv("FVP_CACHE", "0")
    off = DiskCache("ns", "x", root=tmp_path)
    assert not off.enabled and off.get(b"k") is None
    monkeypatch.setenv("FVP_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert diskcache.cache_root() == tmp_path / "elsewhere"


def test_bounded_least_recently_used_first(tmp_path):
    c = DiskCache("ns", "x", root=tmp_path, max_bytes=5000)
    for i in range(4):
        c.put(b"k%d" % i, bytes(1000))
        os.utime(c._path(b"k%d" % i), (i, i))  # k0 oldest
    c.get(b"k0")  # a hit makes k0 the most recent
    c.put(b"k4", bytes(1000))  # above 5000 bytes: evict down to 80 %
    left = {i for i in range(5) if c._path(b"k%d" % i).exists()}
    assert 0 in left and 4 in left and 1 not in left
    assert sum(c._path(b"k%d" % i).stat().st_size for i in left) <= 4000


def test_unwritable_directory_turns_the_cache_off(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    c = DiskCache("ns", "x", root=blocker)
    c.put(b"k", b"v")  # no exception
    assert not c.enabled and c.get(b"k") is None


def test_concurrent_writers_leave_whole_entries(tmp_path):
    code = ("import sys; from fvp.machine.npu.diskcache import DiskCache; c = DiskCache('ns', 'x', root=sys.argv[1])\n"
            "for i in range(200): c.put(b'same', bytes([i % 7]) * 50000)\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)]) for _ in range(3)]
    c = DiskCache("ns", "x", root=tmp_path)
    seen = 0
    while any(p.poll() is None for p in procs):
        v = c.get(b"same")
        if v is not None:
            assert len(v) == 50000 and len(set(v)) == 1
            seen += 1
    assert all(p.wait() == 0 for p in procs)
    assert c.corrupt == 0 and c.get(b"same") is not None
    assert not [p for p in (tmp_path).rglob(".tmp-*")]


def test_weight_cache_reads_back_what_another_process_decoded(tmp_path, monkeypatch):
    w, stream, params = _stream_and_params()
    first = WeightCache(disk=weight_cache.disk_cache(root=tmp_path))
    np.testing.assert_array_equal(cached_weights(first, stream, **params), w)
    assert first.disk_hits == 0
    calls = []
    real = weights_mod.decode_mlw
    monkeypatch.setattr(weights_mod, "decode_mlw", lambda *a, **k: calls.append(1) or real(*a, **k))
    second = WeightCache(disk=weight_cache.disk_cache(root=tmp_path))  # a new process: nothing in memory
    got = cached_weights(second, stream, **params)
    np.testing.assert_array_equal(got, w)
    assert got.dtype == np.int32 and not got.flags.writeable
    assert second.disk_hits == 1 and not calls
    # other parameters are another entry
    cached_weights(second, stream, **{**params, "ofm_ublock_depth": 4})
    assert calls == [1] and second.disk_hits == 1


def test_eviction_spans_versions_and_touches_nothing_else(tmp_path):
    old = DiskCache("ns", "0ld", root=tmp_path, max_bytes=3000)
    old.put(b"a", bytes(1000))
    old.put(b"b", bytes(1000))
    for k in (b"a", b"b"):
        os.utime(old._path(k), (1, 1))
    (tmp_path / "notes.txt").write_bytes(bytes(5000))  # not the cache's: never counted, never removed
    (tmp_path / "v1-abc" / "ns" / "zz").mkdir(parents=True)
    (tmp_path / "v1-abc" / "ns" / "zz" / "x").write_bytes(bytes(5000))
    new = DiskCache("ns", "aaa", root=tmp_path, max_bytes=3000)
    new.put(b"c", bytes(1000))
    new.put(b"d", bytes(1000))  # 4 entries > 3000 bytes: the old version's go first
    assert not old._path(b"a").exists() and new._path(b"c").exists() and new._path(b"d").exists()
    assert (tmp_path / "notes.txt").exists() and (tmp_path / "v1-abc" / "ns" / "zz" / "x").exists()


def test_no_home_directory_runs_without_the_cache(monkeypatch):
    monkeypatch.delenv("FVP_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    def no_home():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(diskcache.Path, "home", staticmethod(no_home))
    c = DiskCache("ns", "x")
    assert not c.enabled
    c.put(b"k", b"v")
    assert c.get(b"k") is None
