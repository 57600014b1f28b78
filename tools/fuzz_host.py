"""Fuzz targets for the host's own files (issue 27): outputs that are devices, FIFOs or links; NUL bytes in
file names; planted disk-cache entries (pickle gadgets, forged weights, swapped, cut or stray files) and
symbolic links inside the cache directory.

Besides ending cleanly, a case must touch nothing but its named outputs: a device stays a device, a FIFO a
FIFO, a link a link; a canary directory beside the case keeps every byte; a planted gadget runs nothing; a
cache entry the user's key did not write never changes an output (``touched``, ``code_ran`` and ``silent``
findings otherwise).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import pickle
import random
import shutil
import stat
import struct
import tempfile
import threading
from pathlib import Path

from fuzz_core import BAD_MARKERS, CORPUS, Outcome, call, run_image

_HEADER_SIZE = 44  # an entry's header (diskcache._HEADER): magic, length, MAC
ADD_Q = CORPUS / "add_q.pte"
BPTE = CORPUS / "add_u55-128.bpte"
_ROOT = Path(tempfile.mkdtemp(prefix="fvp-fuzz-host-"))
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)


def _canary(d: Path) -> dict:
    c = d / "canary"
    c.mkdir(exist_ok=True)
    for name, data in (("keep.txt", b"the user's file"), ("ab" * 20, b"entry-like name")):
        (c / name).write_bytes(data)
    return _snapshot(c)


def _snapshot(d: Path) -> dict:
    out = {}
    for p in sorted(d.rglob("*")):
        st = os.lstat(p)
        out[str(p.relative_to(d))] = (stat.S_IFMT(st.st_mode), p.read_bytes() if stat.S_ISREG(st.st_mode) else b"")
    return out


def _case_dir() -> Path:
    return Path(tempfile.mkdtemp(dir=_ROOT))


# ------------------------------------------------------------------------------------------ outputs
OUTPUT_KINDS = ["null", "full", "fifo", "loop", "link", "dangling", "dir", "socket"]
OUTPUT_PLACES = ["trace", "etdump", "run -o", "elf -o", "compare --json", "compare --csv", "uart -C",
                 "dropin --pmu-trace", "semihosting -o", "dropin uart"]


def _output_target(d: Path, kind: str) -> tuple[str, object]:
    """Make the output ``d/out-0.bin`` of ``kind``; returns (path, FIFO reader thread or socket or None)."""
    t = d / "out-0.bin"
    if kind in ("null", "full"):
        try:
            os.mknod(t, stat.S_IFCHR | 0o666, os.makedev(1, 3 if kind == "null" else 7))
        except OSError:
            os.symlink(f"/dev/{kind}", t)  # not root: through a link to the machine's (it cannot be replaced)
        return str(t), None
    if kind == "fifo":
        os.mkfifo(t)
        got = []
        th = threading.Thread(target=lambda: got.append(open(t, "rb").read()), daemon=True)
        th.start()
        return str(t), (th, got)
    if kind == "loop":
        os.symlink(d / "loop2", t)
        os.symlink(t, d / "loop2")
    elif kind == "link":
        (d / "real").write_bytes(b"old")
        os.symlink(d / "real", t)
    elif kind == "dangling":
        os.symlink(d / "made", t)
    elif kind == "dir":
        t.mkdir()
    elif kind == "socket":
        import socket

        s = socket.socket(socket.AF_UNIX)
        s.bind(str(t))
        return str(t), s
    return str(t), None


def _unblock(path: str, extra) -> None:
    if isinstance(extra, tuple):
        th, got = extra
        if not got:  # the command never opened it: open the write end once so the reader ends
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        th.join(5)
    elif extra is not None:
        extra.close()


def _kept(path: str, kind: str, before: int) -> bool:
    """Whether the target is still what it was (never replaced by a regular file, a link kept as a link)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if kind in ("loop", "link", "dangling") or (kind in ("null", "full") and before == stat.S_IFLNK):
        return stat.S_ISLNK(st.st_mode)
    return stat.S_IFMT(st.st_mode) == before


def output_case(kind: str, place: str) -> Outcome:
    from fvp.host.cli import main as cli_main
    from fvp.host.dropin.command import main as dropin_main

    d = _case_dir()
    canary = _canary(d)
    target, extra = _output_target(d, kind)
    before = stat.S_IFMT(os.lstat(target).st_mode)
    base = str(d / "out")
    argv, entry = {
        "trace": (["run", str(BPTE), "--trace", target], cli_main),
        "etdump": (["run", str(ADD_Q), "--etdump", target], cli_main),
        "run -o": (["run", str(ADD_Q), "-o", base], cli_main),
        "elf -o": (["elf", str(ADD_Q), "-o", target], cli_main),
        "compare --json": (["compare", str(BPTE), "-c", "default", "--json", target], cli_main),
        "compare --csv": (["compare", str(BPTE), "-c", "default", "--csv", target], cli_main),
        "uart -C": (["run", str(ADD_Q), "-C", f"devices.uart0.out_file={target}"], cli_main),
        "dropin --pmu-trace": (["--data", f"{BPTE}@0x70000000", "-C", f"ethosu.extra_args=--pmu-trace {target}"],
                               dropin_main),
        "semihosting -o": (["-C", f"cpu0.semihosting-cmd_line=executor_runner -m {ADD_Q} -o {base}"], dropin_main),
        "dropin uart": (["--data", f"{ADD_Q}@0x70000000", "-C", f"mps3_board.uart0.out_file={target}"],
                        dropin_main),
    }[place]
    try:
        res = call(lambda: entry(argv), argv)
    finally:
        _unblock(target, extra)
    label = f"{place} -> {kind}"
    if isinstance(res, Outcome):
        res.detail = f"{label}: {res.detail}"
        return res
    rc, out, err, seconds = res
    if any(m in out + err for m in BAD_MARKERS):
        return Outcome("crash", f"{label}: {(out + err)[-200:]}", seconds)
    if not _kept(target, kind, before) or _snapshot(d / "canary") != canary:
        return Outcome("touched", f"{label}: the target or the canary changed (exit {rc})", seconds)
    stray = {p.name for p in d.iterdir()} - {"canary", "out-0.bin", "loop2", "real", "made"}
    if stray:
        return Outcome("touched", f"{label}: left {sorted(stray)}", seconds)
    if kind == "full" and rc == 0:
        return Outcome("silent", f"{label}: exit 0 on a full device", seconds)
    if rc not in (0, 1, 2):
        return Outcome("crash", f"{label}: exit status {rc}", seconds)
    return Outcome("ok" if rc == 0 else "clean_failure", f"{label}: exit {rc}", seconds)


def run_output_target(rng: random.Random) -> Outcome:
    return output_case(rng.choice(OUTPUT_KINDS), rng.choice(OUTPUT_PLACES))


# ------------------------------------------------------------------------------------------ NUL bytes in names
def run_nul_name(rng: random.Random) -> Outcome:
    """A NUL byte in a file name at a place that names one: the board file's ``out_file``, ``-C``, a drop-in
    ``-f`` file (UART, semihosting ``-o``, ``-m``, ``-i``), and the options an API caller may pass."""
    from fvp.host.cli import main as cli_main
    from fvp.host.dropin.command import main as dropin_main

    d = _case_dir()
    canary = _canary(d)
    name = rng.choice(["a\0b", "\0", "out\0/../x", "a" * rng.randint(1, 40) + "\0"])
    esc = name.replace("\0", "\\0")
    place = rng.choice(["board", "-C", "-f uart", "-f semi -o", "-f semi -m", "-f semi -i", "--trace", "-o",
                        "--etdump", "elf -o", "compare --json", "-i", "run MODEL"])
    if place == "board":
        (d / "b.yaml").write_text(f'extends: default\ndevices:\n  uart0:\n    out_file: "{esc}"\n')
        argv, entry = ["run", str(ADD_Q), "-c", str(d / "b.yaml")], cli_main
    elif place == "-C":
        argv, entry = ["run", str(ADD_Q), "-C", f'devices.uart0.out_file="{esc}"'], cli_main
    elif place.startswith("-f"):
        line = {"-f uart": f"mps3_board.uart0.out_file={name}",
                "-f semi -o": f"cpu0.semihosting-cmd_line=executor_runner -m {ADD_Q} -o {name}",
                "-f semi -m": f"cpu0.semihosting-cmd_line=executor_runner -m {name}",
                "-f semi -i": f"cpu0.semihosting-cmd_line=executor_runner -m {ADD_Q} -i {name}"}[place]
        (d / "p.txt").write_bytes(line.encode() + b"\n")
        argv = (["--data", f"{ADD_Q}@0x70000000"] if place == "-f uart" else []) + ["-f", str(d / "p.txt")]
        entry = dropin_main
    else:
        target = str(d / name)
        argv, entry = {"--trace": (["run", str(BPTE), "--trace", target], cli_main),
                       "-o": (["run", str(ADD_Q), "-o", target], cli_main),
                       "--etdump": (["run", str(ADD_Q), "--etdump", target], cli_main),
                       "elf -o": (["elf", str(ADD_Q), "-o", target], cli_main),
                       "compare --json": (["compare", str(BPTE), "-c", "default", "--json", target], cli_main),
                       "-i": (["run", str(ADD_Q), "-i", target, "-i", target], cli_main),
                       "run MODEL": (["run", target], cli_main)}[place]
    cwd = os.getcwd()
    os.chdir(d)
    try:
        res = call(lambda: entry(argv), argv)
    finally:
        os.chdir(cwd)
    label = f"NUL in {place} ({name!r})"
    if isinstance(res, Outcome):
        res.detail = f"{label}: {res.detail}"
        return res
    rc, out, err, seconds = res
    if any(m in out + err for m in BAD_MARKERS) or "\0" in err:
        return Outcome("crash", f"{label}: {(out + err)[-200:]!r}", seconds)
    stray = {p.name for p in d.iterdir()} - {"canary", "b.yaml", "p.txt"}
    if stray or _snapshot(d / "canary") != canary:
        return Outcome("touched", f"{label}: made {sorted(stray)}", seconds)
    if rc not in (1, 2):
        return Outcome("crash", f"{label}: exit status {rc}", seconds)
    return Outcome("clean_failure", f"{label}: exit {rc}", seconds)


# ------------------------------------------------------------------------------------------ the disk cache
_CACHE_SEEDS = ["add_u55-128.bpte", "conv1d_u55-128.bpte"]  # streams and timing; and weights (conv1d)
_POPULATED: dict = {}  # seed -> a populated cache directory (and its key file) to copy for each case
MARKER = _ROOT / "PWNED"


_CACHE_ENV = ("FVP_CACHE_DIR", "FVP_CACHE_KEY_FILE")


def _fresh_caches(root: Path | None, key_file: Path | None, env: dict | None = None) -> None:
    """Point this process's disk caches at ``root`` with ``key_file`` (None: back to ``env``, the variables as
    they were), every in-memory cache in front of them emptied (as in a new process)."""
    from fvp.machine.npu import device, diskcache, execute

    if root is not None:
        os.environ["FVP_CACHE_DIR"] = str(root)
        os.environ["FVP_CACHE_KEY_FILE"] = str(key_file)
    else:
        for k in _CACHE_ENV:
            if (env or {}).get(k) is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = env[k]
    diskcache._OBJECT_CACHES.clear()
    diskcache._SECRETS.clear()
    device._WEIGHT_CACHE = None
    device._TIMING_CACHE.clear()
    execute._DECODED.clear()


def _populated(seed: str) -> tuple[Path, Path]:
    if seed not in _POPULATED:
        d = Path(tempfile.mkdtemp(dir=_ROOT))
        key = d / "config" / "cache-key"
        env = {k: os.environ.get(k) for k in _CACHE_ENV}
        _fresh_caches(d / "cache", key)
        try:
            o = run_image((CORPUS / seed).read_bytes(), name=seed)
        finally:
            _fresh_caches(None, None, env)
        assert o.kind == "ok", (seed, o.kind, o.detail)
        _POPULATED[seed] = (d / "cache", key)
    return _POPULATED[seed]


def _gadget() -> bytes:
    cmd = f"touch {MARKER}".encode()
    mod, name = b"fvp.machine.npu.diskcache", b"os.system"
    dotted = (b"\x80\x04\x8c" + bytes([len(mod)]) + mod + b"\x8c" + bytes([len(name)]) + name + b"\x93\x8c"
              + bytes([len(cmd)]) + cmd + b"\x85R.")
    return random.choice([dotted, pickle.dumps(_Reduce())])


class _Reduce:
    def __reduce__(self):
        return (os.system, (f"touch {MARKER}",))


def _entries(root: Path) -> list:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


def _forge(rng: random.Random, path: Path, key_file: Path, payload: bytes) -> None:
    """Write ``payload`` at ``path`` as an entry: its header's MAC under another key, unkeyed (the old format),
    or under the user's own key (a leaked key: then only code execution is checked, not the output)."""
    from fvp.machine.npu import diskcache

    how = rng.choice(["other key", "unkeyed", "own key"])
    ns = path.parents[1].name
    version = path.parents[2].name.split("-", 1)[1]
    if how == "unkeyed":
        path.write_bytes(struct.pack("<4sQ16s", b"FVPC", len(payload), hashlib.blake2b(payload, digest_size=16)
                                     .digest()) + payload)
        return
    secret = key_file.read_bytes() if how == "own key" else os.urandom(32)
    c = diskcache.DiskCache(ns, version, root=path.parents[3], secret=secret)
    path.write_bytes(diskcache._HEADER.pack(diskcache._MAGIC, len(payload), c._mac(path.name, payload)) + payload)
    if how == "own key":
        _forge.leaked = True


def run_cache_entry(rng: random.Random) -> Outcome:
    """A populated cache (a real run's), then its entries planted over: pickle gadgets in the record
    namespaces, other weights, swapped, cut or flipped entries, stray files with entry names. The run must pass
    its bundled check (no entry it could not verify changed an output) and run no code."""
    seed = rng.choice(_CACHE_SEEDS)
    src, key = _populated(seed)
    d = _case_dir()
    canary = _canary(d)
    root = d / "cache"
    shutil.copytree(src, root, symlinks=True)
    entries = _entries(root)
    kind = rng.choice(["gadget", "weights", "swap", "cut", "flip", "stray", "garbage"])
    _forge.leaked = False
    for p in rng.sample(entries, min(len(entries), rng.randint(1, 4))):
        ns = p.parents[1].name
        if kind == "gadget":
            _forge(rng, p, key, _gadget())
        elif kind == "weights" and ns == "weights":
            orig = p.read_bytes()
            fake = bytearray(orig[_HEADER_SIZE:])  # rank, shape, int16 values
            fake[-2:] = b"\x7f\x00" if fake[-2:] != b"\x7f\x00" else b"\x80\xff"
            _forge(rng, p, key, bytes(fake))
            if _forge.leaked:  # the user's own key signed other weights: outside the trust model, put it back
                p.write_bytes(orig)
        elif kind == "swap" and len(entries) > 1:
            other = rng.choice([e for e in entries if e != p])
            a, b = p.read_bytes(), other.read_bytes()
            p.write_bytes(b)
            other.write_bytes(a)
        elif kind == "cut":
            p.write_bytes(p.read_bytes()[:rng.randrange(max(1, p.stat().st_size))])
        elif kind == "flip":
            data = bytearray(p.read_bytes())
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            p.write_bytes(data)
        elif kind == "stray":
            (p.parent / ("%040x" % rng.getrandbits(160))).write_bytes(os.urandom(rng.randint(0, 200)))
        else:
            p.write_bytes(os.urandom(rng.randint(0, 300)))
    return _cached_run(seed, root, key, d, canary, f"cache {kind}")


def run_cache_links(rng: random.Random) -> Outcome:
    """A populated cache with a version, namespace, shard directory or an entry replaced by a symbolic link
    into a canary directory (holding entry-like files): nothing in the canary is read, written or removed."""
    seed = rng.choice(_CACHE_SEEDS)
    src, key = _populated(seed)
    d = _case_dir()
    root = d / "cache"
    shutil.copytree(src, root, symlinks=True)
    entries = _entries(root)
    p = rng.choice(entries)
    level = rng.choice(["version", "namespace", "shard", "entry"])
    victim = {"version": p.parents[2], "namespace": p.parents[1], "shard": p.parent, "entry": p}[level]
    outside = d / "canary"
    outside.mkdir()
    if victim.is_dir():
        shutil.copytree(victim, outside / victim.name)  # entries with the right names, to be reached by the link
        shutil.rmtree(victim)
        os.symlink(outside / victim.name, victim)
    else:
        shutil.copy(victim, outside / victim.name)
        victim.unlink()
        os.symlink(outside / victim.name, victim)
    canary = _snapshot(outside)
    return _cached_run(seed, root, key, d, canary, f"cache link at the {level}")


def _cached_run(seed: str, root: Path, key: Path, d: Path, canary: dict, label: str) -> Outcome:
    env = {k: os.environ.get(k) for k in _CACHE_ENV}
    _fresh_caches(root, key)
    if MARKER.exists():
        MARKER.unlink()
    try:
        o = run_image((CORPUS / seed).read_bytes(), name=seed)
    finally:
        _fresh_caches(None, None, env)
    if MARKER.exists():
        return Outcome("code_ran", f"{label}: a planted entry ran code ({seed})", o.seconds)
    if _snapshot(d / "canary") != canary:
        return Outcome("touched", f"{label}: the canary directory changed ({seed})", o.seconds)
    if o.kind == "clean_failure":  # the seeds pass: a failure is an output an unverified entry changed
        return Outcome("silent", f"{label}: {seed} failed with the planted cache: {o.detail}", o.seconds)
    o.detail = f"{label}: {o.detail}"
    return o


TARGETS = {
    "output_target": run_output_target,
    "nul_name": run_nul_name,
    "cache_entry": run_cache_entry,
    "cache_links": run_cache_links,
}
