"""Reading the host files a command line names, never more than they can hold.

Every file the simulator reads on the user's behalf goes through ``read_input(path, limit, ...)``
(``fvp.bounded_read``, shared by the rooms); this module holds the bounds that depend on the board: a program
(``fvp run MODEL``, the drop-in's ``--data`` and semihosting ``-m``, ``fvp compare``, ``fvp disasm``), a data
file placed in memory (``--data FILE@ADDRESS``), an input tensor (``-i``, read by the firmware through
semihosting), a parameter file (``-f``) or a board file. The bound is what the file can be:

- a program must fit the memory region the board places it in (``firmware.model.region``, less the pools
  the runner's linker script puts after it there): ``program_limit(spec)``;
- a data file or an input tensor must fit the memory it is copied into: ``memory_limit(spec, address)``
  (from ADDRESS to the end of that memory) or the board's largest memory;
- text (board YAML, ``-f`` parameter files): ``TEXT_LIMIT``.

The host's ``-i`` files are read here before the machine is built (``preload_inputs``); ``-i`` with a bundled
program is refused (``refuse_inputs_for_bundled``).
"""

from __future__ import annotations

import functools
import os
import re

from ..bounded_read import InputTooLarge, read_input
from ..errors import ConfigProblems

def preload_inputs(paths, cwd: str | None, limit: int) -> dict:
    """Host path -> bytes of the input files (``-i``) a command line names, each bounded by ``limit`` (the
    board's largest memory). One that is larger is refused (``InputTooLarge``); one that cannot be read is left
    out, for the firmware's semihosting read to fail on, as on the FVP."""
    out = {}
    for path in paths:
        hp = path if os.path.isabs(path) else os.path.join(cwd or os.getcwd(), path)
        try:
            out[hp] = read_input(hp, limit, label=f"-i {path}", kind="input file",
                                 why="no memory of the board can hold it")
        except InputTooLarge:
            raise
        except ConfigProblems:
            pass
    return out


def refuse_inputs_for_bundled(model: bytes | None, inputs) -> None:
    """``-i`` with a bundled program (``.bpte``) is an error: the runner loads the bundle's own test inputs and
    checks the outputs against the bundle's expected outputs, so input files would be silently ignored."""
    if inputs and model is not None and len(model) >= 8 and re.fullmatch(rb"BP\d\d", model[4:8]):
        raise ConfigProblems([f"-i {inputs[0]}: the program is a bundled program (.bpte), which runs its own "
                              f"test inputs and checks its outputs against the bundled expected outputs; input "
                              f"files would be ignored: run the plain program (.pte) with -i, or the .bpte "
                              f"without -i"])


# ------------------------------------------------------------------------------------------------ bounds
def _groups(spec):
    """(base, size) of each contiguous memory of the board, both windows (adjacent banks with the same
    masters join, as the platform builds them)."""
    regions = sorted(spec.memory.values(), key=lambda m: m.base)
    out = []
    for secure in (False, True):
        cur = None
        for m in regions:
            base = m.secure_base if secure else m.base
            if base is None:
                continue
            if cur is not None and cur[0] + cur[1] == base and cur[2] == m.masters:
                cur = (cur[0], cur[1] + m.size, m.masters)
            else:
                if cur is not None:
                    out.append(cur[:2])
                cur = (base, m.size, m.masters)
        if cur is not None:
            out.append(cur[:2])
    return out


def largest_memory(spec) -> int:
    """The size of the board's largest contiguous memory: nothing placed in memory can be larger."""
    return max((s for _, s in _groups(spec)), default=0)


def memory_limit(spec, address: int | None = None) -> int:
    """Bytes from ``address`` to the end of the memory holding it (the largest memory without an address, or
    when nothing is mapped there: the platform reports that address itself)."""
    if address is not None:
        for base, size in _groups(spec):
            if base <= address < base + size:
                return base + size - address
    return largest_memory(spec)


def program_limit(spec=None) -> tuple[int, str]:
    """(bound, reason) for a program: the room in the region where the board places it (the region's size
    less the pools placed after the program there). Without a board: the default board's."""
    if spec is None:
        spec = _default_spec()
    fw = spec.firmware
    region = fw.model.region
    _, rsize = fw.link_regions[region]
    if fw.model.address is not None:
        rbase = fw.link_regions[region][0]
        rsize = max(0, rbase + rsize - fw.model.address)
    pools = sum(p.size or 0 for p in fw.pools.values() if p.region == region and p.address is None)
    room = max(0, rsize - pools)
    return room, f"a program must fit the room the board leaves for it in region {region}"


@functools.lru_cache(maxsize=1)
def _default_spec():
    from ..boards import load_board

    return load_board(None)


def read_program(path, spec=None, *, label: str | None = None, kind: str = "model file") -> bytes:
    """A program file, bounded by ``program_limit(spec)``."""
    limit, why = program_limit(spec)
    return read_input(path, limit, label=label, kind=kind, why=why)

