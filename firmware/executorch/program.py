"""Reader for ExecuTorch programs (``.pte``, FlatBuffer identifier ``ET12``; ``schema/program.fbs``).

``load_program(buf)`` mirrors ``Program::load`` (``runtime/executor/program.cpp``): optional extended header
``eh00`` at offset 8, the identifier check, the constant segment. It then parses every execution plan into
plain frozen dataclasses and validates every cross reference that later code follows (value, operator,
delegate and segment indices, planned-memory ranges, constant-data ranges, tensor ranks and dim orders),
so the method loader and the kernels can trust what they get. Anything wrong raises
``RuntimeFailure(code, "<one line>")``; the runtime's own message is used where it has one.

The records it builds are in ``program_types.py``. The image is never copied: ``Program.buffer`` is a memoryview of ``buf``, and data (constants, delegate blobs)
is handed out as ``(offset, size)`` ranges inside it, or as numpy views (``constant_array``).

Where the C++ runtime checks a thing only at ``Program::load_method``/``Method::init`` time, this reader
checks it at load time instead (a corrupt program fails earlier here). Things the runtime rejects with
``NotSupported`` and that are not memory-safety issues (non-zero ``storage_offset``, ``DYNAMIC_UNBOUND``
tensors, ``memory_offset_high != 0`` on a 32-bit target) are kept as data for the method loader to refuse.
"""

from __future__ import annotations

from firmware.executorch.error import Error, RuntimeFailure
from firmware.executorch.flatbuf import FlatBuffer, Table, as_memoryview, fail, required
from firmware.executorch.program_types import (
    AllocationInfo, BackendDelegate, Chain, CompileSpec, DYNAMIC_BOUND, DYNAMIC_UNBOUND, EVALUE_KINDS, EValue,
    EXTENDED_HEADER_MAGIC, EXTENDED_HEADER_MIN_LENGTH, EXTENDED_HEADER_OFFSET, ExecutionPlan, ExtendedHeader,
    ExtraTensorInfo, INLINE, INSTRUCTION_KINDS, Instruction, NUM_HEAD_BYTES, NamedData, Operator,
    PROGRAM_IDENTIFIER, Program, SCALAR_VALUES, SEGMENT, SIZE_T_MAX, STATIC, SubsegmentOffsets, Tensor,
    _ident_str, _program_fail, check_dim_order, check_sizes, read_scalar_type, read_sizes)

# ----------------------------------------------------------------------------------------------------------
# Parsing
# ----------------------------------------------------------------------------------------------------------

def _parse_extended_header(mv: memoryview) -> ExtendedHeader | None:
    h = EXTENDED_HEADER_OFFSET
    if bytes(mv[h:h + 4]) != EXTENDED_HEADER_MAGIC:
        return None
    header_length = int.from_bytes(mv[h + 4:h + 8], "little")
    if header_length < EXTENDED_HEADER_MIN_LENGTH:
        raise _program_fail(f"Extended header length {header_length} < {EXTENDED_HEADER_MIN_LENGTH}")
    program_size = int.from_bytes(mv[h + 8:h + 16], "little")
    segment_base_offset = int.from_bytes(mv[h + 16:h + 24], "little")
    segment_data_size = None
    if header_length >= 32:
        segment_data_size = int.from_bytes(mv[h + 24:h + 32], "little")
    return ExtendedHeader(header_length, program_size, segment_base_offset, segment_data_size)


def load_program(buf) -> Program:
    """Parse and validate a ``.pte`` image held in ``buf`` (bytes, memoryview or numpy uint8 array)."""
    mv = as_memoryview(buf)
    file_size = len(mv)
    if file_size < NUM_HEAD_BYTES:
        # Program::load first loads kNumHeadBytes through the DataLoader, which fails on a shorter buffer.
        raise RuntimeFailure(Error.InvalidArgument,
                             f"offset 0 + size {NUM_HEAD_BYTES} > size_ {file_size}: program buffer too short")
    eh = _parse_extended_header(mv)
    if eh is not None:
        program_size, segment_base_offset = eh.program_size, eh.segment_base_offset
        if program_size > file_size:
            raise RuntimeFailure(Error.InvalidArgument,
                                 f"offset 0 + size {program_size} > size_ {file_size}: extended header program_size "
                                 f"exceeds the buffer")
        if segment_base_offset > file_size:
            raise _program_fail(f"Extended header segment_base_offset {segment_base_offset} is past the end of the "
                                f"{file_size}-byte buffer")
    else:
        program_size, segment_base_offset = file_size, 0

    ident = bytes(mv[4:8]) if program_size >= 8 else bytes(mv[4:max(program_size, 4)])
    if ident != PROGRAM_IDENTIFIER:
        raise _program_fail(f"Program identifier '{_ident_str(ident)}' != expected 'ET12'")

    fb = FlatBuffer(mv[:program_size], "program")
    root = fb.root("Program")
    return _parse_program(root, mv, program_size, segment_base_offset, eh)


def _parse_subsegment(t: Table) -> SubsegmentOffsets:
    return SubsegmentOffsets(t.scalar(0, "I", 0, "segment_index"), list(t.scalars(1, "Q", "offsets") or ()))


def _parse_program(root: Table, mv: memoryview, program_size: int, segment_base_offset: int,
                   eh: ExtendedHeader | None) -> Program:
    file_size = len(mv)
    version = root.scalar(0, "I", 0, "version")

    constant_buffers = []
    for i, t in enumerate(root.tables(2, "Buffer", "constant_buffer") or ()):
        r = t.bytes_range(0, "storage")
        constant_buffers.append(r if r is not None else (0, 0))

    backend_delegate_data = []
    for i, t in enumerate(root.tables(3, "BackendDelegateInlineData", "backend_delegate_data") or ()):
        r = t.bytes_range(0, "data")
        if r is None:
            raise _program_fail(f"backend_delegate_data[{i}] has no data")
        backend_delegate_data.append(r)

    segments = []
    for i, t in enumerate(root.tables(4, "DataSegment", "segments") or ()):
        off = t.scalar(0, "Q", 0, "offset")
        size = t.scalar(1, "Q", 0, "size")
        if segment_base_offset + off + size > file_size:
            raise _program_fail(f"Segment {i} (offset {off}, size {size}, base {segment_base_offset}) runs past the "
                                f"end of the {file_size}-byte buffer")
        segments.append((off, size))

    cs_table = root.table(5, "SubsegmentOffsets", "constant_segment")
    constant_segment = _parse_subsegment(cs_table) if cs_table is not None else None
    if constant_segment is not None and len(constant_segment.offsets) > 1:
        if constant_buffers:
            raise _program_fail(f"constant_buffer contains {len(constant_buffers)} items, constant_segment.offsets "
                                f"contains {len(constant_segment.offsets)} items. Only one should be used.")
        if root.vector(4, 4, "segments") is None:
            raise _program_fail("No segments in program")
        if constant_segment.segment_index >= len(segments):
            raise _program_fail(f"Constant segment index {constant_segment.segment_index} invalid for program "
                                f"segments range {len(segments)}")

    mutable_data_segments = list(
        _parse_subsegment(t)
        for t in (root.tables(6, "SubsegmentOffsets", "mutable_data_segments") or ()))
    for i, sub in enumerate(mutable_data_segments):
        if sub.segment_index >= len(segments):
            raise _program_fail(f"mutable_data_segments[{i}].segment_index {sub.segment_index} out of range "
                                f"(>= {len(segments)})")

    named_data = []
    for i, t in enumerate(root.tables(7, "NamedData", "named_data") or ()):
        key = t.string(0, "key")
        seg = t.scalar(1, "I", 0, "segment_index")
        if key is None:
            raise _program_fail(f"named_data[{i}] has no key")
        if seg >= len(segments):
            raise _program_fail(f"named_data[{i}] '{key}' segment index {seg} out of range (>= {len(segments)})")
        named_data.append(NamedData(key, seg))

    program = Program(
        version=version,
        execution_plans=[],
        constant_buffers=constant_buffers,
        backend_delegate_data=backend_delegate_data,
        segments=segments,
        segment_base_offset=segment_base_offset,
        constant_segment=constant_segment,
        mutable_data_segments=mutable_data_segments,
        named_data=named_data,
        program_size=program_size,
        extended_header=eh,
        buffer=mv,
    )
    program.execution_plans.extend(
        _parse_plan(t, program, i) for i, t in enumerate(root.tables(1, "ExecutionPlan", "execution_plan") or ()))
    return program


def _check_index(idx: int, n: int, what: str) -> None:
    if not 0 <= idx < n:
        raise _program_fail(f"{what}: index {idx} negative or >= {n}")


def _check_io_indices(inputs, outputs, n: int, where: str) -> None:
    """Every input and output value index of a plan or chain inside the value table."""
    for kind, values in (("input", inputs), ("output", outputs)):
        for i, v in enumerate(values):
            _check_index(v, n, f"{where} {kind} {i}")


def _parse_plan(t: Table, program: Program, plan_index: int) -> ExecutionPlan:
    name = required(t.string(0, "name"), f"execution_plan[{plan_index}]: Missing name field")
    where = f"method '{name}'"
    meta = t.table(1, "ContainerMetadata", "container_meta_type")
    enc_in = enc_out = None
    if meta is not None:
        enc_in, enc_out = meta.string(0, "encoded_inp_str"), meta.string(1, "encoded_out_str")

    value_tables = required(t.tables(2, "EValue", "values"), f"{where}: Missing values")
    n_values = len(value_tables)

    inputs = required(t.scalars(3, "i", "inputs"), f"{where}: Missing inputs field")
    outputs = required(t.scalars(4, "i", "outputs"), f"{where}: Missing outputs field")
    _check_io_indices(inputs, outputs, n_values, where)

    ncbs = required(t.scalars(8, "q", "non_const_buffer_sizes"), f"{where}: Missing non_const_buffer_sizes field")
    for i, s in enumerate(ncbs):
        if s < 0:
            raise _program_fail(f"{where}: non_const_buffer_sizes[{i}] = {s} is negative")

    operators = []
    for i, ot in enumerate(t.tables(6, "Operator", "operators") or ()):
        op_name = required(ot.string(0, "name"), f"{where} operator {i}: Missing operator name")
        operators.append(Operator(op_name, ot.string(1, "overload") or ""))

    delegate_tables = required(t.tables(7, "BackendDelegate", "delegates"), f"{where}: Missing delegates field")
    delegates = list(_parse_delegate(dt, program, f"{where} delegate {i}") for i, dt in enumerate(delegate_tables))

    values = list(_parse_value(vt, i, n_values, program, ncbs, where) for i, vt in enumerate(value_tables))

    chain_tables = t.tables(5, "Chain", "chains")
    if not chain_tables:
        raise _program_fail(f"{where}: No chains")
    chains = list(_parse_chain(ct, i, n_values, len(operators), len(delegates), where)
                   for i, ct in enumerate(chain_tables))

    return ExecutionPlan(name=name, values=values, inputs=list(inputs), outputs=list(outputs), chains=chains,
                         operators=operators, delegates=delegates, non_const_buffer_sizes=list(ncbs),
                         encoded_inp_str=enc_in, encoded_out_str=enc_out)


def _parse_delegate(t: Table, program: Program, where: str) -> BackendDelegate:
    did = required(t.string(0, "id"), f"{where}: Missing backend id")
    ref = required(t.table(1, "BackendDelegateDataReference", "processed"),
                   f"{where} ({did}): Missing processed data reference")
    location = ref.scalar(0, "b", 0, "location")
    index = ref.scalar(1, "I", 0, "index")
    if location == INLINE:
        if index >= len(program.backend_delegate_data):
            raise _program_fail(f"{where} ({did}): inline data index {index} >= list size "
                                f"{len(program.backend_delegate_data)}")
    elif location == SEGMENT:
        if program.segment_base_offset == 0:
            raise _program_fail(f"{where} ({did}): No segments in program: requested index {index}")
        if index >= len(program.segments):
            raise _program_fail(f"{where} ({did}): Segment index {index} out of range (>= {len(program.segments)})")
    else:
        raise _program_fail(f"{where} ({did}): Unknown data location {location & 0xFF}")
    specs = []
    for i, st in enumerate(t.tables(2, "CompileSpec", "compile_specs") or ()):
        key = required(st.string(0, "key"), f"{where} ({did}): compile spec {i} has no key")
        r = st.bytes_range(1, "value")
        value = bytes(program.buffer[r[0]:r[0] + r[1]]) if r is not None else b""
        specs.append(CompileSpec(key, value))
    return BackendDelegate(id=did, location=location, index=index, compile_specs=specs)


def _parse_value(vt: Table, i: int, n_values: int, program: Program, ncbs: tuple, where: str) -> EValue:
    tag, pos = vt.union(0, "val")
    if tag == 1:  # Null: the table may be absent
        return EValue("Null", None)
    if not pos:
        raise _program_fail(f"{where}: Null value at index {i}")
    if not 1 <= tag < len(EVALUE_KINDS):
        raise _program_fail(f"{where}: Unknown KernelTypes value {(tag - 1) & 0xFFFFFFFF} at index {i}")
    kind = EVALUE_KINDS[tag]
    t = Table(vt.fb, pos, kind)
    if kind in SCALAR_VALUES:
        return EValue(kind, SCALAR_VALUES[kind](t))
    if kind == "String":
        return EValue(kind, required(t.string(0, "string_val"), f"{where}: Missing string at index {i}"))
    if kind == "Tensor":
        return EValue(kind, _parse_tensor(t, i, program, ncbs, where))
    fmt = {"IntList": "q", "DoubleList": "d", "BoolList": "?", "TensorList": "i", "OptionalTensorList": "i"}[kind]
    items = required(t.scalars(0, fmt, "items"), f"{where}: Missing list at index {i}")
    if kind in ("IntList", "TensorList"):
        for j, v in enumerate(items):
            if not 0 <= v < n_values:
                raise _program_fail(f"{where}: Invalid value index {v} for {kind} {i} index {j}")
    elif kind == "OptionalTensorList":
        for j, v in enumerate(items):
            if not -1 <= v < n_values:
                raise _program_fail(f"{where}: Invalid value index {v} for {kind} {i} index {j}")
    return EValue(kind, list(items))


def _parse_tensor(t: Table, i: int, program: Program, ncbs: tuple, where: str) -> Tensor:
    what = f"{where}: tensor at index {i}"
    scalar_type = read_scalar_type(t, 0, what)
    storage_offset = t.scalar(1, "i", 0, "storage_offset")
    sizes = read_sizes(t, 2, what)
    nsizes = len(sizes)
    dim_order = required(t.scalars(3, "B", "dim_order"), f"{what}: Missing dim_order field")
    if len(dim_order) != nsizes:
        raise _program_fail(f"{what}: dim_order size {len(dim_order)} != dim {nsizes}")
    check_sizes(sizes, what)
    check_dim_order(dim_order, nsizes, what)
    requires_grad = t.boolean(4, False, "requires_grad")
    data_buffer_idx = t.scalar(5, "I", 0, "data_buffer_idx")
    alloc_t = t.table(6, "AllocationDetails", "allocation_info")
    allocation_info = None
    if alloc_t is not None:
        low = alloc_t.scalar(1, "I", 0, "memory_offset_low")
        high = alloc_t.scalar(2, "I", 0, "memory_offset_high")
        allocation_info = AllocationInfo(alloc_t.scalar(0, "I", 0, "memory_id"), low | (high << 32))
    layout = t.scalar(7, "b", 0, "layout")
    shape_dynamism = t.scalar(8, "b", 0, "shape_dynamism")
    if shape_dynamism not in (STATIC, DYNAMIC_BOUND, DYNAMIC_UNBOUND):
        raise _program_fail(f"{what}: Unknown TensorShapeDynamism {shape_dynamism}")
    extra_t = t.table(9, "ExtraTensorInfo", "extra_tensor_info")
    extra = None
    if extra_t is not None:
        extra = ExtraTensorInfo(
            mutable_data_segments_idx=extra_t.scalar(0, "Q", 0, "mutable_data_segments_idx"),
            fully_qualified_name=extra_t.string(1, "fully_qualified_name"),
            location=extra_t.scalar(2, "b", 0, "location"),
            device_type=extra_t.scalar(3, "b", 0, "device_type"),
            device_index=extra_t.scalar(4, "b", 0, "device_index"),
        )
    tensor = Tensor(scalar_type=scalar_type, sizes=tuple(sizes), dim_order=tuple(dim_order),
                    storage_offset=storage_offset, requires_grad=requires_grad, data_buffer_idx=data_buffer_idx,
                    allocation_info=allocation_info, layout=layout, shape_dynamism=shape_dynamism,
                    extra_tensor_info=extra)

    nbytes = tensor.nbytes
    if nbytes > SIZE_T_MAX:
        raise _program_fail(f"{what}: {nbytes} bytes ({tensor.scalar_type_name} {list(sizes)}) do not fit a 32-bit "
                            f"size_t")
    if tensor.is_external:
        if extra.fully_qualified_name is None:
            raise fail(f"{what}: Fully qualified name of external tensor is null at index {i}",
                       Error.InvalidExternalData)
    if allocation_info is not None:
        mem_id, mem_off = allocation_info
        if not 1 <= mem_id < len(ncbs):
            raise _program_fail(f"{what}: memory_id {mem_id} out of range for {len(ncbs) - 1} planned buffer(s) "
                                f"(non_const_buffer_sizes has {len(ncbs)} entries, [0] reserved)")
        if mem_off + nbytes > ncbs[mem_id]:
            raise _program_fail(f"{what}: offset_bytes ({mem_off}) + size_bytes ({nbytes}) > planned buffer size "
                                f"({ncbs[mem_id]}) for memory_id {mem_id}")
        if tensor.has_initial_state:
            seg_idx = extra.mutable_data_segments_idx if extra is not None else 0
            try:
                program.mutable_data(seg_idx, data_buffer_idx, nbytes)
            except RuntimeFailure as exc:
                raise _program_fail(f"{what}: initial state: {exc.message}") from None
    elif tensor.is_constant:
        try:
            program.constant_data(data_buffer_idx, nbytes)
        except RuntimeFailure as exc:
            raise _program_fail(f"{what}: {exc.message}") from None
    return tensor


def _parse_chain(t: Table, ci: int, n_values: int, n_ops: int, n_delegates: int, where: str) -> Chain:
    cw = f"{where} chain {ci}"
    inputs = t.scalars(0, "i", "inputs") or ()
    outputs = t.scalars(1, "i", "outputs") or ()
    _check_io_indices(inputs, outputs, n_values, cw)
    instr_tables = required(t.tables(2, "Instruction", "instructions"),
                            f"{where}: Missing instructions in chain {ci}")
    n_instr = len(instr_tables)
    instructions = []
    for k, it in enumerate(instr_tables):
        tag, pos = it.union(0, "instr_args")
        iw = f"{cw} instruction {k}"
        if not pos:
            raise _program_fail(f"{cw}: Null instruction at index {k}")
        if not 1 <= tag < len(INSTRUCTION_KINDS):
            raise _program_fail(f"{cw}: Invalid instruction type {tag}")
        kind = INSTRUCTION_KINDS[tag]
        a = Table(it.fb, pos, kind)
        if kind in ("KernelCall", "DelegateCall"):
            index = a.scalar(0, "i", 0, "op_index" if kind == "KernelCall" else "delegate_index")
            args = required(a.scalars(1, "i", "args"), f"{iw}: {kind} args missing")
            for v in args:
                if not 0 <= v < n_values:
                    raise _program_fail(f"{iw}: Arg index {v} >= {n_values}")
            if kind == "KernelCall":
                if not 0 <= index < n_ops:
                    raise _program_fail(f"{iw}: Op index {index} out of range ({n_ops} operators)")
                instructions.append(Instruction(kind, op_index=index, args=list(args)))
            else:
                if not 0 <= index < n_delegates:
                    raise _program_fail(f"{iw}: Delegate index {index} out of range ({n_delegates} delegates)")
                instructions.append(Instruction(kind, delegate_index=index, args=list(args)))
        elif kind == "MoveCall":
            src, dst = a.scalar(0, "i", 0, "move_from"), a.scalar(1, "i", 0, "move_to")
            _check_index(src, n_values, f"{iw} MoveCall move_from")
            _check_index(dst, n_values, f"{iw} MoveCall move_to")
            instructions.append(Instruction(kind, move_from=src, move_to=dst))
        elif kind == "JumpFalseCall":
            cond, dest = a.scalar(0, "i", 0, "cond_value_index"), a.scalar(1, "i", 0, "destination_instruction")
            _check_index(cond, n_values, f"{iw} JumpFalseCall cond_value_index")
            if not 0 <= dest <= n_instr:
                raise _program_fail(f"{iw}: JumpFalseCall destination_instruction {dest} outside the chain "
                                    f"of {n_instr} instructions")
            instructions.append(Instruction(kind, cond_value_index=cond, destination_instruction=dest))
        else:  # FreeCall
            v = a.scalar(0, "i", 0, "value_index")
            _check_index(v, n_values, f"{iw} FreeCall value_index")
            instructions.append(Instruction(kind, value_index=v))
    return Chain(inputs=list(inputs), outputs=list(outputs), instructions=instructions)
