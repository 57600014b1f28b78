"""ETDumpGen: the runtime's event tracer writing an ETDump (``devtools/etdump/etdump_flatcc.cpp``).

What the C++ records and how, as far as this runner's events go:

* run-data blocks: ``create_event_block(name)`` starts one; ``Program::load_method`` makes ``"Default"`` (method
  load and ``Method::init``), every ``Method::execute`` an ``"Execute"`` block;
* profiling events (``start_profiling``/``end_profiling``): name, chain index and instruction id (the current
  chain and debug handle when the event is not an operator's own: ``EXECUTORCH_PROF_SCOPE`` inside a delegate
  takes the delegate call's instruction), start and end time in the platform's ticks (``et_pal_current_ticks``:
  the Cortex-M cycle counter); an event is written when it ends, so an event nested in another comes first;
* the operator events ``OPERATOR_CALL`` and ``DELEGATE_CALL`` (``Method::execute_instruction``), ``Method::execute``,
  ``Method::init``, ``Program::load_method``, and the Ethos-U backend's ``EthosUBackend::execute()``;
* the result: a size-prefixed flatbuffer with file identifier ``ED00`` and version 0 (``ETDUMP_VERSION``).

Written with the flatbuffers runtime and the generated schema classes (``etdump_schema``). Simplified: no
allocation events (the runner tracks no allocator), no debug events (intermediate outputs, ``ET_DUMP_OUTPUTS``).
"""

from __future__ import annotations

import contextlib

import flatbuffers

from . import etdump_schema as S

ETDUMP_VERSION = 0


class ETDumpGen:
    """Collects profiling events; ``get_etdump_data()`` returns the ETDump bytes."""

    def __init__(self, ticks):
        self.ticks = ticks  # () -> int: the platform's current ticks
        self.blocks: list = []  # [(name, [event dict])]
        self.chain_id = -1
        self.debug_handle = -1

    def create_event_block(self, name: str) -> None:
        self.blocks.append((name, []))

    def start_profiling(self, name: str, chain_id: int = -1, debug_handle: int = -1) -> dict:
        if chain_id == -1:
            chain_id, debug_handle = self.chain_id, self.debug_handle
        return {"name": name, "chain": chain_id, "instruction": debug_handle, "start": self.ticks()}

    def end_profiling(self, entry: dict) -> None:
        if not self.blocks:
            self.create_event_block("Default")
        entry["end"] = self.ticks()
        self.blocks[-1][1].append(entry)

    @contextlib.contextmanager
    def profile(self, name: str, chain_id: int = -1, debug_handle: int = -1):
        """A profiling scope (``EXECUTORCH_PROF_SCOPE`` / ``EventTracerProfileScope``)."""
        entry = self.start_profiling(name, chain_id, debug_handle)
        try:
            yield
        finally:
            self.end_profiling(entry)

    @contextlib.contextmanager
    def instruction(self, name: str, chain_id: int, index: int):
        """An operator's scope (``EventTracerProfileOpScope``): its events carry its chain and instruction."""
        saved = self.chain_id, self.debug_handle
        self.chain_id, self.debug_handle = chain_id, index
        try:
            with self.profile(name, chain_id, index):
                yield
        finally:
            self.chain_id, self.debug_handle = saved

    # ------------------------------------------------------------------ the flatbuffer
    def get_etdump_data(self) -> bytes:
        b = flatbuffers.Builder(1024)
        runs = []
        for name, events in self.blocks:
            refs = []
            for e in events:
                n = b.CreateString(e["name"])
                S.ProfileEventStart(b)
                S.ProfileEventAddName(b, n)
                S.ProfileEventAddChainIndex(b, max(e["chain"], 0))
                S.ProfileEventAddInstructionId(b, e["instruction"])
                S.ProfileEventAddStartTime(b, e["start"] & 0xFFFFFFFFFFFFFFFF)
                S.ProfileEventAddEndTime(b, e["end"] & 0xFFFFFFFFFFFFFFFF)
                pe = S.ProfileEventEnd(b)
                S.EventStart(b)
                S.EventAddProfileEvent(b, pe)
                refs.append(S.EventEnd(b))
            S.RunDataStartEventsVector(b, len(refs))
            for r in reversed(refs):
                b.PrependUOffsetTRelative(r)
            ev = b.EndVector()
            rn = b.CreateString(name)
            S.RunDataStart(b)
            S.RunDataAddName(b, rn)
            S.RunDataAddEvents(b, ev)
            runs.append(S.RunDataEnd(b))
        S.ETDumpStartRunDataVector(b, len(runs))
        for r in reversed(runs):
            b.PrependUOffsetTRelative(r)
        rd = b.EndVector()
        S.ETDumpStart(b)
        S.ETDumpAddVersion(b, ETDUMP_VERSION)
        S.ETDumpAddRunData(b, rd)
        root = S.ETDumpEnd(b)
        b.FinishSizePrefixed(root, S.FILE_IDENTIFIER)
        return bytes(b.Output())


def read_etdump(data: bytes):
    """The ``ETDump`` table of size-prefixed ETDump bytes (generated reader), or ``ValueError``."""
    if len(data) < 12 or data[8:12] != S.FILE_IDENTIFIER:
        raise ValueError("not an ETDump (no size prefix and ED00 identifier)")
    return S.ETDump.GetRootAs(data, 4)
