"""ETDumpGen: the runtime's event tracer writing an ETDump (``devtools/etdump/etdump_flatcc.cpp``).

What the C++ records and how, as far as this runner's events go:

* run-data blocks: ``create_event_block(name)`` starts one; ``Program::load_method`` makes ``"Default"`` (method
  load and ``Method::init``), every ``Method::execute`` an ``"Execute"`` block;
* profiling events (``start_profiling``/``end_profiling``): name, chain index and instruction id (the current
  chain and debug handle when the event is not an operator's own: ``EXECUTORCH_PROF_SCOPE`` inside a delegate
  takes the delegate call's instruction), start and end time in the platform's ticks (``et_pal_current_ticks``:
  the Cortex-M cycle counter); an event is written when it ends, so an event nested in another comes first;
* the operator events ``OPERATOR_CALL`` (holding the kernel wrapper's ``native_call_<op>``, ``codegen/gen.py``) and
  ``DELEGATE_CALL`` (``Method::execute_instruction``), ``Method::execute``,
  ``Method::init``, ``Program::load_method``, and the Ethos-U backend's ``EthosUBackend::execute()``;
* the result: a size-prefixed flatbuffer with file identifier ``ED00`` and version 0 (``ETDUMP_VERSION``).

Debug events (``log_evalue``, when the runner sets a debug buffer and a debug level: ``ET_DUMP_OUTPUTS`` gives
``kProgramOutputs``, ``ET_DUMP_INTERMEDIATE_OUTPUTS`` ``kIntermediateOutputs``, which includes the outputs):

* a debug event carries the current chain index (``chain_index``, a ``ulong``: the unset chain -1 is written as
  2**64-1) and instruction (``instruction_id``; the unset debug handle is 0), and one ``Value``: a ``Tensor``
  (``scalar_type``, ``sizes``, ``strides``, ``offset`` of its bytes in the debug buffer), a ``TensorList`` of
  them, an ``Int``, ``Double`` or ``Bool``; a program output's value has ``output = true``; no name and no
  delegate debug id (those are the delegate's own ``log_intermediate_output_delegate``, which the Ethos-U
  backend does not call);
* the tensor bytes go to the ``BufferDataSink`` (``data_sinks/buffer_data_sink.cpp``): each blob starts at the
  next address aligned to 64 (the alignment is of the absolute address: the runner's buffer is only 16-aligned),
  the gap is zeroed; a tensor of no bytes is not written and gets offset -1 (``(size_t)-1``); a blob that does
  not fit logs ``Ran out of space to store intermediate outputs.`` and the ``ET_CHECK_MSG`` aborts the run;
* a scalar type ``get_flatbuffer_scalar_type`` does not know (Half, the quantized types, ...) fails the event
  after its bytes were written (``This ScalarType = N is not yet supported in ETDump``); here the event is
  dropped (flatcc's builder would be left inside the open table);
* an EValue of another tag (None, the lists but Tensor[]) aborts (``This EValue type = N is not yet supported
  for logging``).

Written with the flatbuffers runtime and the generated schema classes (``etdump_schema``); the debug buffer's
bytes live in simulated memory (the runner allocates it from the method allocator), so its copies are the
runner's work. Simplified: no allocation events (the runner tracks no allocator).
"""

from __future__ import annotations

import contextlib

import flatbuffers

from . import etdump_schema as S

ETDUMP_VERSION = 0

# EventTracerDebugLogLevel (runtime/core/event_tracer.h)
NO_LOGGING, PROGRAM_OUTPUTS, INTERMEDIATE_OUTPUTS = 0, 1, 2
DATA_SINK_ALIGNMENT = 64  # BufferDataSink::create's default alignment (buffer_data_sink.h)
UNSET_CHAIN_ID, UNSET_DEBUG_HANDLE = -1, 0  # kUnsetChainId, kUnsetDebugHandle (event_tracer.h)
# get_flatbuffer_scalar_type (etdump_flatcc.cpp): Byte, Char, Short, Int, Long, Float, Double, Bool, Bits16, UInt16
ETDUMP_SCALAR_TYPES = frozenset((0, 1, 2, 3, 4, 6, 7, 11, 22, 27))
# EValue tags (runtime/core/tag.h), for the abort message of an EValue log_evalue cannot log
_TAGS = {"None": 0, "Tensor": 1, "String": 2, "Double": 3, "Int": 4, "Bool": 5, "BoolList": 6, "DoubleList": 7,
         "List": 7, "IntList": 8, "TensorList": 9, "OptionalTensorList": 11}


class ETDumpGen:
    """Collects profiling events; ``get_etdump_data()`` returns the ETDump bytes."""

    def __init__(self, ticks):
        self.ticks = ticks  # () -> int: the platform's current ticks
        self.blocks: list = []  # [(name, [event dict])]
        self.chain_id = UNSET_CHAIN_ID  # EventTracer's chain_id_ / debug_handle_ (event_tracer.h)
        self.debug_handle = UNSET_DEBUG_HANDLE
        self.debug_level = NO_LOGGING  # set_event_tracer_debug_level
        self.debug_buffer = None  # (address, size) of the BufferDataSink's span (set_debug_buffer)
        self.debug_used = 0  # BufferDataSink::get_used_bytes
        self.bus = None

    def set_debug_buffer(self, bus, address: int, size: int) -> None:
        """``set_debug_buffer(Span)``: tensor bytes of debug events go to ``size`` bytes at ``address``."""
        self.bus, self.debug_buffer, self.debug_used = bus, (address, size), 0

    def set_event_tracer_debug_level(self, level: int) -> None:
        self.debug_level = level

    def debug_buffer_data(self) -> bytes:
        """The used part of the debug buffer (what the runner writes out as debug_buffer.bin)."""
        if self.debug_buffer is None or not self.debug_used:
            return b""
        return self.bus.view(self.debug_buffer[0], self.debug_used).tobytes()

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

    # ------------------------------------------------------------------ debug events
    @property
    def logs_intermediate(self) -> bool:
        """Whether the debug level asks for every operator's outputs (``kIntermediateOutputs``)."""
        return self.debug_level >= INTERMEDIATE_OUTPUTS

    def log_intermediate(self, value, values) -> None:
        """``event_tracer_log_evalue``: log ``value`` at ``kIntermediateOutputs``."""
        if self.debug_level >= INTERMEDIATE_OUTPUTS:
            self.log_evalue(value, values, output=False)

    def log_output(self, value, values) -> None:
        """``event_tracer_log_evalue_output``: log a program output at ``kProgramOutputs`` and above."""
        if self.debug_level >= PROGRAM_OUTPUTS:
            self.log_evalue(value, values, output=True)

    def log_evalue(self, value, values, output: bool) -> None:
        """``ETDumpGen::log_evalue``: a debug event for one runtime value (``values`` resolves list items)."""
        from .kernels.signatures import tag_of  # the EValue tag a runtime value carries

        tag = tag_of(value)
        if tag == "Tensor":
            t = self._tensor_entry(value)
            if t is None:
                return
            entry = ("tensor", t)
        elif tag == "TensorList":
            ts = []
            for i in value[1]:
                t = self._tensor_entry(values[i])
                if t is None:
                    return
                ts.append(t)
            entry = ("tensor_list", ts)
        elif tag in ("Int", "Double", "Bool"):
            entry = (tag.lower(), value)
            output = False  # only Tensor and Tensor[] values get the output flag
        else:
            self._fatal("log_evalue", "0",
                        f"This EValue type = {_TAGS.get(tag, -1)} is not yet supported for logging\n")
        if not self.blocks:
            self.create_event_block("Default")
        # outside an instruction the tracer's chain and debug handle are the unset ones (-1, 0)
        self.blocks[-1][1].append({"debug": entry, "output": output, "chain": self.chain_id,
                                   "instruction": self.debug_handle})

    def _tensor_entry(self, t):
        """``write_tensor_or_return_error`` + ``add_tensor_entry``: (scalar type, sizes, strides, offset)."""
        offset = -1  # an empty tensor: (size_t)-1, not written
        if t.nbytes:
            offset = self._write(t.raw(self.bus))
        if t.scalar_type not in ETDUMP_SCALAR_TYPES:
            from . import log

            log.error(f"This ScalarType = {t.scalar_type} is not yet supported in ETDump")
            return None
        return t.scalar_type, t.sizes, t.strides, offset

    def _write(self, data) -> int:
        """``BufferDataSink::write``: the blob at the next 64-aligned address of the buffer; its offset."""
        if self.debug_buffer is None:  # no data sink: Error::InvalidArgument, the ET_CHECK_MSG aborts
            self._fatal("log_evalue", "offset.ok()",
                        "write_tensor_or_return_error() failed to write tensor to debug buffer")
        base, size = self.debug_buffer
        last = base + self.debug_used
        begin = -(-last // DATA_SINK_ALIGNMENT) * DATA_SINK_ALIGNMENT
        if begin + len(data) > base + size:
            from . import log

            log.error("Ran out of space to store intermediate outputs.")
            self._fatal("log_evalue", "offset.ok()",
                        "write_tensor_or_return_error() failed to write tensor to debug buffer")
        if begin > last:
            self.bus.view(last, begin - last)[:] = 0
        self.bus.view(begin, len(data))[:] = data
        self.bus.work("memcpy_byte", len(data) + begin - last)
        self.debug_used = begin + len(data) - base
        return begin - base

    def _fatal(self, func: str, cond: str, message: str):
        from . import log

        log.fatal(f"In function {func}(), assert failed ({cond}): {message}")
        self.bus.abort(f"ETDump: {message.strip()}")

    # ------------------------------------------------------------------ the flatbuffer
    def _debug_event(self, b, e):
        def tensor(t):
            scalar_type, sizes, strides, offset = t
            sz = _vector(b, S.TensorStartSizesVector, sizes, b.PrependInt64)
            st = _vector(b, S.TensorStartStridesVector, strides, b.PrependInt64)
            S.TensorStart(b)
            S.TensorAddScalarType(b, scalar_type)
            S.TensorAddSizes(b, sz)
            S.TensorAddStrides(b, st)
            S.TensorAddOffset(b, offset)
            return S.TensorEnd(b)

        kind, v = e["debug"]
        out = None
        if kind == "tensor":
            ref = tensor(v)
        elif kind == "tensor_list":
            refs = [tensor(t) for t in v]
            vec = _vector(b, S.TensorListStartTensorsVector, refs, b.PrependUOffsetTRelative)
            S.TensorListStart(b)
            S.TensorListAddTensors(b, vec)
            ref = S.TensorListEnd(b)
        else:
            start, add, end = {"int": (S.IntStart, S.IntAddIntVal, S.IntEnd),
                               "double": (S.DoubleStart, S.DoubleAddDoubleVal, S.DoubleEnd),
                               "bool": (S.BoolStart, S.BoolAddBoolVal, S.BoolEnd)}[kind]
            start(b)
            add(b, v)
            ref = end(b)
        if e["output"]:
            S.BoolStart(b)
            S.BoolAddBoolVal(b, True)
            out = S.BoolEnd(b)
        # the Value union's type of each kind, and the field that holds it
        value_type, add_value = {"tensor": (S.ValueType.Tensor, S.ValueAddTensor),
                                 "tensor_list": (S.ValueType.TensorList, S.ValueAddTensorList),
                                 "int": (S.ValueType.Int, S.ValueAddIntValue),
                                 "double": (S.ValueType.Double, S.ValueAddDoubleValue),
                                 "bool": (S.ValueType.Bool, S.ValueAddBoolValue)}[kind]
        S.ValueStart(b)
        S.ValueAddVal(b, value_type)
        add_value(b, ref)
        if out is not None:
            S.ValueAddOutput(b, out)
        value = S.ValueEnd(b)
        S.DebugEventStart(b)
        S.DebugEventAddChainIndex(b, e["chain"] & 0xFFFFFFFFFFFFFFFF)
        S.DebugEventAddInstructionId(b, e["instruction"])
        S.DebugEventAddDebugEntry(b, value)
        de = S.DebugEventEnd(b)
        S.EventStart(b)
        S.EventAddDebugEvent(b, de)
        return S.EventEnd(b)

    def get_etdump_data(self) -> bytes:
        b = flatbuffers.Builder(1024)
        runs = []
        for name, events in self.blocks:
            refs = []
            for e in events:
                if "debug" in e:
                    refs.append(self._debug_event(b, e))
                    continue
                n = b.CreateString(e["name"])
                S.ProfileEventStart(b)
                S.ProfileEventAddName(b, n)
                S.ProfileEventAddChainIndex(b, e["chain"])  # -1 outside an instruction, as etdump_flatcc writes
                S.ProfileEventAddInstructionId(b, e["instruction"])
                S.ProfileEventAddStartTime(b, e["start"] & 0xFFFFFFFFFFFFFFFF)
                S.ProfileEventAddEndTime(b, e["end"] & 0xFFFFFFFFFFFFFFFF)
                pe = S.ProfileEventEnd(b)
                S.EventStart(b)
                S.EventAddProfileEvent(b, pe)
                refs.append(S.EventEnd(b))
            ev = _vector(b, S.RunDataStartEventsVector, refs, b.PrependUOffsetTRelative)
            rn = b.CreateString(name)
            S.RunDataStart(b)
            S.RunDataAddName(b, rn)
            S.RunDataAddEvents(b, ev)
            runs.append(S.RunDataEnd(b))
        rd = _vector(b, S.ETDumpStartRunDataVector, runs, b.PrependUOffsetTRelative)
        S.ETDumpStart(b)
        S.ETDumpAddVersion(b, ETDUMP_VERSION)
        S.ETDumpAddRunData(b, rd)
        root = S.ETDumpEnd(b)
        b.FinishSizePrefixed(root, S.FILE_IDENTIFIER)
        return bytes(b.Output())


def _vector(b, start, items, prepend):
    """A flatbuffer vector of ``items`` (built back to front, as the builder requires); its offset."""
    start(b, len(items))
    for v in reversed(items):
        prepend(v)
    return b.EndVector()


def read_etdump(data: bytes):
    """The ``ETDump`` table of size-prefixed ETDump bytes (generated reader), or ``ValueError``."""
    if len(data) < 12 or data[8:12] != S.FILE_IDENTIFIER:
        raise ValueError("not an ETDump (no size prefix and ED00 identifier)")
    return S.ETDump.GetRootAs(data, 4)
