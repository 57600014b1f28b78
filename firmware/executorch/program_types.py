"""What a loaded ExecuTorch program is made of (``schema/program.fbs``), as plain data: the format's constants
(identifier, extended header, value and instruction kinds, allocation and data locations), the scalar types, the
checks a program's and a bundled program's values share (``read_scalar_type``, ``read_sizes``, ``check_sizes``,
``check_dim_order``), and the frozen records the reader (``program.py``) builds: ``Tensor``, ``EValue``,
``Operator``, ``BackendDelegate``, ``Instruction``, ``Chain``, ``ExecutionPlan``, ``Program``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from firmware.executorch.error import Error, RuntimeFailure
from firmware.executorch.flatbuf import Table, as_memoryview, fail, required

PROGRAM_IDENTIFIER = b"ET12"

# schema/extended_header.h
EXTENDED_HEADER_OFFSET = 8
EXTENDED_HEADER_MAGIC = b"eh00"
EXTENDED_HEADER_MIN_LENGTH = 24  # magic(4) + length(4) + program_size(8) + segment_base_offset(8)
NUM_HEAD_BYTES = 64  # Program::load first loads this many bytes (kNumHeadBytes)

TENSOR_DIMENSION_LIMIT = 16  # runtime/core/exec_aten/util/tensor_dimension_limit.h (kTensorDimensionLimit)
SIZE_T_MAX = 2**32 - 1  # the target is 32-bit: a tensor's nbytes must fit in size_t

# ScalarType (c10 numbering, runtime/core/portable_type/scalar_type.h): id -> (name, element size, numpy dtype)
SCALAR_TYPES: dict[int, tuple[str, int, "np.dtype | None"]] = {
    0: ("Byte", 1, np.dtype(np.uint8)),
    1: ("Char", 1, np.dtype(np.int8)),
    2: ("Short", 2, np.dtype("<i2")),
    3: ("Int", 4, np.dtype("<i4")),
    4: ("Long", 8, np.dtype("<i8")),
    5: ("Half", 2, np.dtype("<f2")),
    6: ("Float", 4, np.dtype("<f4")),
    7: ("Double", 8, np.dtype("<f8")),
    8: ("ComplexHalf", 4, None),
    9: ("ComplexFloat", 8, np.dtype("<c8")),
    10: ("ComplexDouble", 16, np.dtype("<c16")),
    11: ("Bool", 1, np.dtype(np.bool_)),
    12: ("QInt8", 1, np.dtype(np.int8)),
    13: ("QUInt8", 1, np.dtype(np.uint8)),
    14: ("QInt32", 4, np.dtype("<i4")),
    15: ("BFloat16", 2, None),
    16: ("QUInt4x2", 1, None),
    17: ("QUInt2x4", 1, None),
    18: ("Bits1x8", 1, None),
    19: ("Bits2x4", 1, None),
    20: ("Bits4x2", 1, None),
    21: ("Bits8", 1, None),
    22: ("Bits16", 2, None),
    23: ("Float8_e5m2", 1, None),
    24: ("Float8_e4m3fn", 1, None),
    25: ("Float8_e5m2fnuz", 1, None),
    26: ("Float8_e4m3fnuz", 1, None),
    27: ("UInt16", 2, np.dtype("<u2")),
    28: ("UInt32", 4, np.dtype("<u4")),
    29: ("UInt64", 8, np.dtype("<u8")),
}
SCALAR_TYPE_IDS = {name: sid for sid, (name, _, _) in SCALAR_TYPES.items()}

# union KernelTypes (tag -> EValue.kind)
EVALUE_KINDS = ("None", "Null", "Int", "Bool", "Double", "Tensor", "String", "IntList", "DoubleList",
                "BoolList", "TensorList", "OptionalTensorList")
# union InstructionArguments
INSTRUCTION_KINDS = ("NONE", "KernelCall", "DelegateCall", "MoveCall", "JumpFalseCall", "FreeCall")

# enum DataLocation
INLINE = 0
SEGMENT = 1
# enum TensorShapeDynamism
STATIC = 0
DYNAMIC_BOUND = 1
DYNAMIC_UNBOUND = 2
# enum TensorDataLocation
CONSTANT_SEGMENT = 0
EXTERNAL = 1


def _ident_str(raw: bytes) -> str:
    """``%.4s`` of an identifier: stop at NUL; non-printable bytes escaped so the message stays one line."""
    raw = raw.split(b"\0", 1)[0]
    return "".join(chr(b) if 32 <= b < 127 else f"\\x{b:02x}" for b in raw)


def _program_fail(message: str) -> RuntimeFailure:
    return fail(message, Error.InvalidProgram)


# ----------------------------------------------------------------------------------------------------------
# What a program's and a bundled program's values share (the same tables in program.fbs and
# bundled_program_schema.fbs)
# ----------------------------------------------------------------------------------------------------------

# the scalar values: kind -> its table's one field
SCALAR_VALUES = {"Int": lambda t: t.scalar(0, "q", 0, "int_val"),
                 "Bool": lambda t: t.boolean(0, False, "bool_val"),
                 "Double": lambda t: t.scalar(0, "d", 0.0, "double_val")}


def read_scalar_type(t: Table, fid: int, what: str) -> int:
    """A tensor's ``scalar_type`` field, one of ``SCALAR_TYPES``."""
    scalar_type = t.scalar(fid, "b", 0, "scalar_type")
    if scalar_type not in SCALAR_TYPES:
        raise _program_fail(f"{what}: Invalid or unsupported ScalarType {scalar_type}")
    return scalar_type


def read_sizes(t: Table, fid: int, what: str) -> tuple:
    """A tensor's ``sizes`` field: present, of at most ``TENSOR_DIMENSION_LIMIT`` dimensions."""
    n = required(t.vector_len(fid, 4, "sizes"), f"{what}: Missing sizes field")
    if n > TENSOR_DIMENSION_LIMIT:
        raise _program_fail(f"{what}: Tensor rank too large {n} > {TENSOR_DIMENSION_LIMIT}")
    return t.scalars(fid, "i", "sizes")


def check_sizes(sizes, what: str) -> None:
    for d, s in enumerate(sizes):
        if s < 0:
            raise _program_fail(f"{what}: Negative size[{d}] {s}")


def check_dim_order(dim_order, n: int, what: str) -> None:
    if len(dim_order) != n or sorted(dim_order) != list(range(n)):
        raise _program_fail(f"{what}: dim_order {list(dim_order)} is not a permutation of 0..{n - 1}")


# ----------------------------------------------------------------------------------------------------------
# Data model
# ----------------------------------------------------------------------------------------------------------

class AllocationInfo(NamedTuple):
    """``AllocationDetails``: planned buffer ``memory_id`` (1-based; runtime uses ``memory_id - 1``) and the
    64-bit byte offset ``memory_offset_low | memory_offset_high << 32``."""
    memory_id: int
    memory_offset: int

    @property
    def memory_offset_high(self) -> int:
        return self.memory_offset >> 32


class ExtraTensorInfo(NamedTuple):
    mutable_data_segments_idx: int
    fully_qualified_name: str | None
    location: int  # CONSTANT_SEGMENT (0) or EXTERNAL (1)
    device_type: int = 0
    device_index: int = 0


class ExtendedHeader(NamedTuple):
    header_length: int
    program_size: int
    segment_base_offset: int
    segment_data_size: int | None


class SubsegmentOffsets(NamedTuple):
    segment_index: int
    offsets: list


class NamedData(NamedTuple):
    key: str
    segment_index: int


class CompileSpec(NamedTuple):
    key: str
    value: bytes


@dataclass(frozen=True)
class Tensor:
    scalar_type: int
    sizes: tuple
    dim_order: tuple
    storage_offset: int = 0
    requires_grad: bool = False
    data_buffer_idx: int = 0
    allocation_info: AllocationInfo | None = None
    layout: int = 0
    shape_dynamism: int = STATIC
    extra_tensor_info: ExtraTensorInfo | None = None

    @property
    def dim(self) -> int:
        return len(self.sizes)

    @property
    def numel(self) -> int:
        return math.prod(self.sizes)

    @property
    def elem_size(self) -> int:
        return SCALAR_TYPES[self.scalar_type][1]

    @property
    def nbytes(self) -> int:
        return self.numel * self.elem_size

    @property
    def dtype(self):
        """numpy dtype (None for types numpy lacks, e.g. BFloat16)."""
        return SCALAR_TYPES[self.scalar_type][2]

    @property
    def scalar_type_name(self) -> str:
        return SCALAR_TYPES[self.scalar_type][0]

    @property
    def is_external(self) -> bool:
        return self.extra_tensor_info is not None and self.extra_tensor_info.location == EXTERNAL

    @property
    def is_constant(self) -> bool:
        """Data in the program (constant segment / legacy constant_buffer)."""
        return not self.is_external and self.data_buffer_idx > 0 and self.allocation_info is None

    @property
    def is_memory_planned(self) -> bool:
        return self.allocation_info is not None

    @property
    def has_initial_state(self) -> bool:
        """Planned and initialised from ``mutable_data_segments``."""
        return self.allocation_info is not None and self.data_buffer_idx > 0 and not self.is_external


@dataclass(frozen=True)
class EValue:
    """``kind`` is one of ``EVALUE_KINDS``. ``value``: None (None/Null), int, bool, float, ``Tensor``, str,
    or a list: IntList -> value indices of the Int EValues (the runtime boxes them), DoubleList -> floats,
    BoolList -> bools, TensorList -> value indices, OptionalTensorList -> value indices (-1 = None)."""
    kind: str
    value: object = None


class Operator(NamedTuple):
    name: str
    overload: str

    @property
    def full_name(self) -> str:
        """``name.overload`` (no dot when the overload is empty), as the kernel registry keys it."""
        return f"{self.name}.{self.overload}" if self.overload else self.name


@dataclass(frozen=True)
class BackendDelegate:
    id: str
    location: int  # INLINE (0) -> Program.backend_delegate_data, SEGMENT (1) -> Program.segments
    index: int
    compile_specs: list  # of CompileSpec(key, value)


@dataclass(frozen=True)
class Instruction:
    kind: str  # KernelCall, DelegateCall, MoveCall, JumpFalseCall, FreeCall
    op_index: int | None = None  # KernelCall
    delegate_index: int | None = None  # DelegateCall
    args: list = field(default_factory=list)  # KernelCall / DelegateCall value indices
    move_from: int | None = None  # MoveCall
    move_to: int | None = None
    cond_value_index: int | None = None  # JumpFalseCall
    destination_instruction: int | None = None
    value_index: int | None = None  # FreeCall


@dataclass(frozen=True)
class Chain:
    inputs: list
    outputs: list
    instructions: list  # of Instruction


@dataclass(frozen=True)
class ExecutionPlan:
    name: str
    values: list  # of EValue
    inputs: list
    outputs: list
    chains: list  # of Chain
    operators: list  # of Operator
    delegates: list  # of BackendDelegate
    non_const_buffer_sizes: list  # [0] is reserved; planned buffer i is entry i + 1
    encoded_inp_str: str | None = None
    encoded_out_str: str | None = None

    @property
    def num_memory_planned_buffers(self) -> int:
        return max(len(self.non_const_buffer_sizes) - 1, 0)

    @property
    def memory_planned_buffer_sizes(self) -> list:
        return list(self.non_const_buffer_sizes[1:])

    def int_list(self, value_index: int) -> list:
        """The ints of an IntList value (its items are indices of Int EValues, boxed like the runtime does)."""
        v = self.values[value_index]
        if v.kind != "IntList":
            raise RuntimeFailure(Error.InvalidType, f"value {value_index} is {v.kind}, not IntList")
        out = []
        for j in v.value:
            item = self.values[j]
            if item.kind != "Int":
                raise RuntimeFailure(Error.InvalidType, f"IntList {value_index} item {j} is {item.kind}, not Int")
            out.append(item.value)
        return out


@dataclass(frozen=True, eq=False)
class Program:
    version: int
    execution_plans: list  # of ExecutionPlan
    constant_buffers: list  # (offset, size) in the image of each legacy constant_buffer[i].storage; (0, 0): none
    backend_delegate_data: list  # (offset, size) in the image
    segments: list  # (offset, size) relative to segment_base_offset
    segment_base_offset: int
    constant_segment: SubsegmentOffsets | None
    mutable_data_segments: list  # of SubsegmentOffsets
    named_data: list  # of NamedData
    program_size: int  # bytes of the flatbuffer part (whole buffer when there is no extended header)
    extended_header: ExtendedHeader | None
    buffer: memoryview  # the whole image

    # --- methods ---------------------------------------------------------------------------------------
    @property
    def num_methods(self) -> int:
        return len(self.execution_plans)

    def get_method_name(self, index: int) -> str:
        if not 0 <= index < len(self.execution_plans):
            raise RuntimeFailure(Error.InvalidArgument, f"Method index {index} out of range")
        return self.execution_plans[index].name

    def method(self, name: str) -> ExecutionPlan:
        for plan in self.execution_plans:
            if plan.name == name:
                return plan
        raise RuntimeFailure(Error.InvalidArgument, f"No method named '{name}' in program")

    # --- data -------------------------------------------------------------------------------------------
    @property
    def constant_segment_loaded(self) -> bool:
        """True when constants live in the constant segment (``constant_segment.offsets`` has > 1 entry)."""
        return self.constant_segment is not None and len(self.constant_segment.offsets) > 1

    def segment_range(self, index: int) -> tuple[int, int]:
        """(offset in the image, size) of ``segments[index]``."""
        if not 0 <= index < len(self.segments):
            raise RuntimeFailure(Error.NotFound, f"Segment index {index} out of range (>= {len(self.segments)})")
        off, size = self.segments[index]
        return self.segment_base_offset + off, size

    def constant_data(self, data_buffer_idx: int, nbytes: int) -> tuple[int, int]:
        """(offset in the image, nbytes) of constant buffer ``data_buffer_idx`` (``get_constant_buffer_data``).

        Constant segment if it was loaded, else the legacy ``constant_buffer`` list; index 0 is the reserved
        placeholder. Errors are the runtime's (``InvalidArgument``)."""
        if self.constant_segment_loaded:
            offsets = self.constant_segment.offsets
            if not 0 <= data_buffer_idx < len(offsets):
                raise RuntimeFailure(
                    Error.InvalidArgument,
                    f"Constant segment buffer index {data_buffer_idx} invalid for program constant segment "
                    f"range {len(offsets)}")
            seg_off, seg_size = self.segment_range(self.constant_segment.segment_index)
            offset = offsets[data_buffer_idx]
            if offset + nbytes > seg_size:
                raise RuntimeFailure(
                    Error.InvalidArgument,
                    f"Constant segment offset {offset} + size_bytes {nbytes} invalid for program constant "
                    f"segment size {seg_size}")
            return seg_off + offset, nbytes
        if not 0 <= data_buffer_idx < len(self.constant_buffers):
            raise RuntimeFailure(
                Error.InvalidArgument,
                f"Constant buffer index {data_buffer_idx} invalid for program constant buffer range "
                f"{len(self.constant_buffers)}")
        off, storage_size = self.constant_buffers[data_buffer_idx]
        if off == 0 and nbytes > 0:  # (0, 0) marks a Buffer without storage: the runtime would read NULL
            raise RuntimeFailure(Error.InvalidArgument, f"Constant buffer {data_buffer_idx} has no storage")
        # The runtime's check (storage must not be larger than the tensor)...
        if storage_size > nbytes:
            raise RuntimeFailure(Error.InvalidArgument,
                                 f"Constant buffer size {storage_size} larger than allocated nbytes {nbytes}")
        # ... and ours: the bytes the tensor will read must be inside the image.
        if off + nbytes > len(self.buffer):
            raise RuntimeFailure(Error.InvalidArgument,
                                 f"Constant buffer {data_buffer_idx} of {nbytes} bytes at offset {off} runs past "
                                 f"the program end {len(self.buffer)}")
        return off, nbytes

    def mutable_data(self, mutable_data_segments_index: int, offset_index: int, nbytes: int) -> tuple[int, int]:
        """(offset in the image, nbytes) of a planned tensor's initial state (``load_mutable_subsegment_into``)."""
        if not 0 <= mutable_data_segments_index < len(self.mutable_data_segments):
            raise RuntimeFailure(Error.NotFound,
                                 f"mutable_data_segments index {mutable_data_segments_index} out of range "
                                 f"(>= {len(self.mutable_data_segments)})")
        sub = self.mutable_data_segments[mutable_data_segments_index]
        if not 0 <= offset_index < len(sub.offsets):
            raise RuntimeFailure(Error.NotFound,
                                 f"offset index {offset_index} out of range (>= {len(sub.offsets)}) for "
                                 f"mutable data segment {mutable_data_segments_index}")
        seg_off, seg_size = self.segment_range(sub.segment_index)
        offset = sub.offsets[offset_index]
        if offset + nbytes > seg_size:
            raise RuntimeFailure(Error.InvalidArgument,
                                 f"Mutable data offset {offset} + size {nbytes} > segment size {seg_size}")
        return seg_off + offset, nbytes

    def delegate_data(self, delegate: BackendDelegate) -> tuple[int, int]:
        """(offset in the image, size) of a delegate's processed blob."""
        if delegate.location == INLINE:
            if not 0 <= delegate.index < len(self.backend_delegate_data):
                raise RuntimeFailure(Error.NotFound, f"index {delegate.index} >= list size "
                                                     f"{len(self.backend_delegate_data)}")
            return self.backend_delegate_data[delegate.index]
        if delegate.location == SEGMENT:
            if self.segment_base_offset == 0:
                raise RuntimeFailure(Error.NotFound, f"No segments in program: requested index {delegate.index}")
            return self.segment_range(delegate.index)
        raise RuntimeFailure(Error.Internal, f"Unknown data location {delegate.location}")

    def view(self, offset: int, size: int) -> memoryview:
        """Zero-copy view of ``size`` bytes at ``offset`` of the image."""
        if offset < 0 or size < 0 or offset + size > len(self.buffer):
            raise RuntimeFailure(Error.InvalidArgument,
                                 f"range {offset}+{size} is outside the program of {len(self.buffer)} bytes")
        return self.buffer[offset:offset + size]

    def constant_array(self, tensor: Tensor) -> np.ndarray:
        """A numpy view (no copy) of a constant tensor's data, in logical shape (honours ``dim_order``)."""
        if not tensor.is_constant:
            raise RuntimeFailure(Error.InvalidArgument, "tensor is not a program constant")
        off, nbytes = self.constant_data(tensor.data_buffer_idx, tensor.nbytes)
        return tensor_view(self.buffer, off, tensor.scalar_type, tensor.sizes, tensor.dim_order)


def tensor_view(buf, offset: int, scalar_type: int, sizes, dim_order=None) -> np.ndarray:
    """A numpy view of a dense tensor stored at ``buf[offset:]`` in ``dim_order`` memory order, returned in
    logical (``sizes``) shape. No copy: writable iff ``buf`` is."""
    name, esize, dtype = SCALAR_TYPES[scalar_type]
    if dtype is None:
        raise RuntimeFailure(Error.NotSupported, f"ScalarType {name} has no numpy dtype")
    sizes = tuple(sizes)
    order = tuple(dim_order) if dim_order is not None else tuple(range(len(sizes)))
    count = math.prod(sizes)
    mv = as_memoryview(buf)
    if offset < 0 or offset + count * esize > len(mv):
        raise RuntimeFailure(Error.InvalidArgument,
                             f"tensor of {count * esize} bytes at offset {offset} is outside the buffer of {len(mv)}")
    flat = np.frombuffer(mv, dtype=dtype, count=count, offset=offset)
    physical = tuple(sizes[d] for d in order)
    arr = flat.reshape(physical)
    if order != tuple(range(len(sizes))):
        arr = arr.transpose(tuple(int(i) for i in np.argsort(order)))
    return arr
