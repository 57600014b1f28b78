"""Synthetic programs for what the corpus does not exercise: the extended header and segments, the constant
segment and the legacy constant_buffer, SEGMENT delegates, every EValue kind and instruction kind, and the
cross-reference checks (each broken on purpose). Programs are written with the ``flatbuffers`` Builder from a
small declarative spec, so each test states the one thing it changes."""

from __future__ import annotations

import struct

import flatbuffers
import numpy as np
import pytest

from firmware.executorch.bundled import is_bundled, load_bundled
from firmware.executorch.error import Error, RuntimeFailure
from firmware.executorch.program import load_program
from firmware.executorch.program_types import INLINE, SEGMENT
from firmware.executorch.vela_bin import parse_vela_bin
from testutil import python_lines

# ---------------------------------------------------------------------------------------------------------
# A tiny FlatBuffer writer: T(fields) with fields (id, kind, value).
#   scalar kinds: u8 i8 bool u32 i32 i64 u64 f64     offset kinds: str, table (a T), tables (list of T)
#   vector kinds: vi32 vi64 vu64 vf64 vbool vu8 (bytes; align given as value (data, align))
# ---------------------------------------------------------------------------------------------------------

_SCALAR = {"u8": ("Uint8", 1), "i8": ("Int8", 1), "bool": ("Bool", 1), "u32": ("Uint32", 4), "i32": ("Int32", 4),
           "i64": ("Int64", 8), "u64": ("Uint64", 8), "f64": ("Float64", 8)}
_VEC = {"vi32": ("Int32", 4), "vi64": ("Int64", 8), "vu64": ("Uint64", 8), "vf64": ("Float64", 8),
        "vbool": ("Bool", 1), "vu8": ("Uint8", 1)}


class T:
    def __init__(self, *fields):
        self.fields = [f for f in fields if f is not None]


class Shared:
    """The same already-built offset referenced again (for shared-data tests)."""

    def __init__(self, spec: T, times: int):
        self.spec, self.times = spec, times


def _encode(b: flatbuffers.Builder, spec: T) -> int:
    prepared = []
    for fid, kind, val in spec.fields:
        off = None
        if kind == "str":
            off = b.CreateString(val)
        elif kind == "table":
            off = _encode(b, val)
        elif kind == "tables":
            if isinstance(val, Shared):
                one = _encode(b, val.spec)
                offs = [one] * val.times
            else:
                offs = [_encode(b, v) for v in val]
            b.StartVector(4, len(offs), 4)
            for o in reversed(offs):
                b.PrependUOffsetTRelative(o)
            off = b.EndVector()
        elif kind in _VEC:
            name, size = _VEC[kind]
            data, align = (val if kind == "vu8" and isinstance(val, tuple) else (val, size))
            b.StartVector(size, len(data), align)
            for x in reversed(list(data)):
                getattr(b, "Prepend" + name)(x)
            off = b.EndVector()
        prepared.append((fid, kind, val, off))
    b.StartObject(max((f[0] for f in prepared), default=-1) + 1)
    for fid, kind, val, off in prepared:
        if off is not None:
            b.PrependUOffsetTRelativeSlot(fid, off, 0)
        else:
            getattr(b, f"Prepend{_SCALAR[kind][0]}Slot")(fid, val, 0)
    return b.EndObject()


def build(spec: T, ident: bytes) -> bytes:
    b = flatbuffers.Builder(1024)
    b.ForceDefaults(True)
    b.Finish(_encode(b, spec), file_identifier=ident)
    return bytes(b.Output())


def with_extended_header(fb: bytes, segments: list[bytes], *, seg_align: int = 128) -> tuple[bytes, int]:
    """Insert an ``eh00`` header at offset 8 (root offset moved) and append segments like EXIR does.
    Returns (file, segment_base_offset)."""
    hdr_len = 32
    body = bytearray(fb[:8]) + bytes(hdr_len) + fb[8:]
    struct.pack_into("<I", body, 0, struct.unpack_from("<I", fb, 0)[0] + hdr_len)
    program_size = len(body)
    base = -(-program_size // seg_align) * seg_align
    seg_blob = bytearray()
    for i, s in enumerate(segments):
        seg_blob += s
        if i + 1 < len(segments):
            seg_blob += bytes(-len(seg_blob) % seg_align)
    struct.pack_into("<4sIQQQ", body, 8, b"eh00", hdr_len, program_size, base, len(seg_blob))
    return bytes(body) + bytes(base - program_size) + bytes(seg_blob), base


# ----- schema helpers --------------------------------------------------------------------------------------

def tensor(st, sizes, dim_order=None, *, buf_idx=0, mem=None, dyn=0, extra=None):
    return T((0, "i8", st), (2, "vi32", sizes),
             (3, "vu8", list(dim_order) if dim_order is not None else list(range(len(sizes)))),
             (5, "u32", buf_idx),
             (6, "table", T((0, "u32", mem[0]), (1, "u32", mem[1] & 0xFFFFFFFF), (2, "u32", mem[1] >> 32)))
             if mem else None,
             (8, "i8", dyn), (9, "table", extra) if extra else None)


def ev(tag, spec=None):
    return T((0, "u8", tag), (1, "table", spec) if spec is not None else None)


def ev_tensor(*a, **k):
    return ev(5, tensor(*a, **k))


def kernel(op, args):
    return T((0, "u8", 1), (1, "table", T((0, "i32", op), (1, "vi32", args))))


def delegate_call(idx, args):
    return T((0, "u8", 2), (1, "table", T((0, "i32", idx), (1, "vi32", args))))


def move(a, b):
    return T((0, "u8", 3), (1, "table", T((0, "i32", a), (1, "i32", b))))


def jump_false(cond, dest):
    return T((0, "u8", 4), (1, "table", T((0, "i32", cond), (1, "i32", dest))))


def free(v):
    return T((0, "u8", 5), (1, "table", T((0, "i32", v))))


def vela_blob(*, io_record=36, scratch=96, cmd=b"COP1" + bytes(12), weights=b"\x01\x02\x03"):
    def block(name, payload):
        return struct.pack("<16sIB11s", name.encode(), len(payload), 0, bytes(11)) + payload + bytes(-len(payload) % 16)

    def ios(recs):
        out = struct.pack("<i", len(recs))
        for shape, es, off in recs:
            if io_record == 36:
                out += struct.pack("<9i", *((1,) * (6 - len(shape)) + tuple(shape)), es, off, 1)
            else:
                out += struct.pack("<7i", *(tuple(shape) + (0,) * (4 - len(shape))), es, off, 1)
        return out

    return b"".join([block("vela_bin_stream", b""), block("cmd_data", cmd), block("weight_data", weights),
                     block("scratch_size", struct.pack("<I", scratch)),
                     block("inputs", ios([((2, 3), 4, 0)])), block("outputs", ios([((2, 3), 4, 32)])),
                     block("vela_end_stream", b"")])


CONST_F = np.arange(6, dtype=np.float32).reshape(3, 2)  # stored in memory order (dim_order (1, 0) of a [2, 3])
CONST_C = np.array([-1, 2, -3, 4], dtype=np.int8)


def plan_spec(**over):
    values = over.pop("values", None) or [
        ev_tensor(6, [2, 3], mem=(1, 0)),  # 0 input
        ev_tensor(6, [2, 3], (1, 0), buf_idx=1),  # 1 constant, channels-last-like order
        ev_tensor(6, [2, 3], mem=(1, 32)),  # 2 output
        ev(2, T((0, "i64", 7))),  # 3 Int
        ev(3, T((0, "bool", True))),  # 4 Bool
        ev(4, T((0, "f64", 1.5))),  # 5 Double
        ev(6, T((0, "str", "hello"))),  # 6 String
        ev(7, T((0, "vi64", [3, 3]))),  # 7 IntList (value indices)
        ev(8, T((0, "vf64", [0.5, 2.0]))),  # 8 DoubleList
        ev(9, T((0, "vbool", [True, False, True]))),  # 9 BoolList
        ev(10, T((0, "vi32", [0, 2]))),  # 10 TensorList
        ev(11, T((0, "vi32", [0, -1, 12]))),  # 11 OptionalTensorList
        ev(1, T()),  # 12 Null
        ev_tensor(1, [4], buf_idx=2),  # 13 Char constant
    ]
    instrs = over.pop("instructions", None) or [kernel(0, [0, 1, 2]), delegate_call(0, [0, 2]), move(2, 0),
                                                jump_false(4, 5), free(0)]
    delegate = over.pop("delegate", None) or T(
        (0, "str", "EthosUBackend"), (1, "table", T((0, "i8", SEGMENT), (1, "u32", 1))),
        (2, "tables", [T((0, "str", "k"), (1, "vu8", b"\x00\x01")),
                       T((0, "str", "output_format"), (1, "vu8", b"vela"))]))
    fields = {
        0: (0, "str", over.pop("name", "forward")),
        2: (2, "tables", values),
        3: (3, "vi32", over.pop("inputs", [0])),
        4: (4, "vi32", over.pop("outputs", [2])),
        5: (5, "tables", [T((0, "vi32", [0]), (1, "vi32", [2]), (2, "tables", instrs))]),
        6: (6, "tables", over.pop("operators", None) or [T((0, "str", "aten::add"), (1, "str", "out")),
                                                        T((0, "str", "aten::foo"))]),
        7: (7, "tables", [delegate]),
        8: (8, "vi64", over.pop("ncbs", [0, 64])),
    }
    for fid in over.pop("drop", ()):
        fields.pop(fid)
    assert not over, over
    return T(*fields.values())


def segmented_program(*, plan=None, blob=None, offsets=(0, 0, 32), extra_root=()):
    """eh00 + segment 0 (constants) + segment 1 (delegate blob)."""
    consts = CONST_F.tobytes() + bytes(8) + CONST_C.tobytes()
    blob = blob if blob is not None else vela_blob(io_record=28)
    root = T((0, "u32", 0), (1, "tables", [plan or plan_spec()]),
             (4, "tables", [T((0, "u64", 0), (1, "u64", len(consts))), T((0, "u64", 128), (1, "u64", len(blob)))]),
             (5, "table", T((0, "u32", 0), (1, "vu64", list(offsets)))), *extra_root)
    data, base = with_extended_header(build(root, b"ET12"), [consts, blob])
    return data, base, consts, blob


def legacy_program(*, plan=None, storages=None):
    """No extended header: constants in Program.constant_buffer, delegate inline."""
    storages = storages if storages is not None else [b"", CONST_F.tobytes(), CONST_C.tobytes()]
    blob = vela_blob()
    inline = T((0, "str", "EthosUBackend"), (1, "table", T((0, "i8", INLINE), (1, "u32", 0))))
    root = T((0, "u32", 0), (1, "tables", [plan or plan_spec(delegate=inline)]),
             (2, "tables", [T((0, "vu8", (s, 16))) if s is not None else T() for s in storages]),
             (3, "tables", [T((0, "vu8", (blob, 16)))]),
             (4, "tables", [T((0, "u64", 0), (1, "u64", 0))]),
             (5, "table", T((0, "u32", 0), (1, "vu64", [0]))))
    return build(root, b"ET12"), blob


def fails(buf, code=Error.InvalidProgram, match=None):
    with pytest.raises(RuntimeFailure) as ei:
        load_program(buf)
    assert ei.value.code == code, ei.value.message
    assert "\n" not in ei.value.message
    if match:
        assert match in ei.value.message, ei.value.message
    return ei.value.message


# ---------------------------------------------------------------------------------------------------------
# Well-formed programs
# ---------------------------------------------------------------------------------------------------------

def test_segmented_program_header_segments_and_constants():
    data, base, consts, blob = segmented_program()
    p = load_program(data)
    assert p.extended_header is not None
    assert p.extended_header.program_size == p.program_size and p.segment_base_offset == base
    assert p.extended_header.segment_data_size == len(data) - base
    assert p.segments == [(0, len(consts)), (128, len(blob))]
    assert p.constant_segment_loaded and p.constant_segment.offsets == [0, 0, 32]
    plan = p.method("forward")
    t1, t13 = plan.values[1].value, plan.values[13].value
    assert p.constant_data(1, t1.nbytes) == (base, 24)
    assert p.constant_data(2, t13.nbytes) == (base + 32, 4)
    arr = p.constant_array(t1)
    assert arr.shape == (2, 3) and np.array_equal(arr, CONST_F.T)  # dim_order (1, 0) -> logical view
    assert np.shares_memory(arr, np.frombuffer(p.buffer, np.uint8))
    assert np.array_equal(p.constant_array(t13), CONST_C)
    # SEGMENT delegate -> segment 1, and the blob there has old 28-byte IO records
    d = plan.delegates[0]
    assert (d.location, d.index) == (SEGMENT, 1)
    assert d.compile_specs == [("k", b"\x00\x01"), ("output_format", b"vela")]
    off, size = p.delegate_data(d)
    assert (off, size) == (base + 128, len(blob)) and bytes(p.view(off, size)) == blob
    vb = parse_vela_bin(p.view(off, size), blob_address=off)
    assert vb.io_record_size == 28
    assert vb.inputs[0].shape == (1, 1, 1, 1, 2, 3) and vb.inputs[0].raw_shape == (2, 3, 0, 0)
    assert vb.outputs[0].offset == 32 and vb.scratch_size == 96 and vb.weight_data[1] == 3


def test_every_value_and_instruction_kind():
    data, *_ = segmented_program()
    plan = load_program(data).execution_plans[0]
    kinds = [v.kind for v in plan.values]
    assert kinds == ["Tensor", "Tensor", "Tensor", "Int", "Bool", "Double", "String", "IntList", "DoubleList",
                     "BoolList", "TensorList", "OptionalTensorList", "Null", "Tensor"]
    vals = [v.value for v in plan.values[3:13]]
    assert vals == [7, True, 1.5, "hello", [3, 3], [0.5, 2.0], [True, False, True], [0, 2], [0, -1, 12], None]
    t0 = plan.values[0].value
    assert t0.allocation_info == (1, 0) and t0.is_memory_planned and not t0.is_constant
    assert t0.nbytes == 24 and t0.dtype == np.float32 and t0.scalar_type_name == "Float"
    assert plan.values[1].value.dim_order == (1, 0)
    ins = plan.chains[0].instructions
    assert [i.kind for i in ins] == ["KernelCall", "DelegateCall", "MoveCall", "JumpFalseCall", "FreeCall"]
    assert (ins[0].op_index, ins[0].args) == (0, [0, 1, 2])
    assert (ins[1].delegate_index, ins[1].args) == (0, [0, 2])
    assert (ins[2].move_from, ins[2].move_to) == (2, 0)
    assert (ins[3].cond_value_index, ins[3].destination_instruction) == (4, 5)
    assert ins[4].value_index == 0
    assert [o.full_name for o in plan.operators] == ["aten::add.out", "aten::foo"]
    assert plan.num_memory_planned_buffers == 1 and plan.memory_planned_buffer_sizes == [64]


def test_legacy_constant_buffer_and_inline_delegate():
    data, blob = legacy_program()
    p = load_program(data)
    assert p.extended_header is None and p.segment_base_offset == 0 and not p.constant_segment_loaded
    plan = p.execution_plans[0]
    off, n = p.constant_data(1, 24)
    assert off % 16 == 0 and n == 24 and off == p.constant_buffers[1][0]
    assert np.array_equal(p.constant_array(plan.values[1].value), CONST_F.T)
    d = plan.delegates[0]
    assert d.location == INLINE and d.compile_specs == []
    off, size = p.delegate_data(d)
    assert bytes(p.view(off, size)) == blob and off % 16 == 0
    # the runtime's legacy check: storage larger than the tensor is an error (InvalidArgument)
    with pytest.raises(RuntimeFailure) as ei:
        p.constant_data(1, 8)
    assert ei.value.code == Error.InvalidArgument
    assert "Constant buffer size 24 larger than allocated nbytes 8" == ei.value.message
    with pytest.raises(RuntimeFailure, match="Constant buffer index 3 invalid for program constant buffer range 3"):
        p.constant_data(3, 4)
    # a storage smaller than the tensor passes the runtime's check (it reads on, inside the image)...
    short, _ = legacy_program(storages=[b"", CONST_F.tobytes()[:8], CONST_C.tobytes()])
    p = load_program(short)
    assert p.constant_data(1, 24) == (p.constant_buffers[1][0], 24)
    # ... a Buffer without storage does not
    fails(legacy_program(storages=[b"", None, CONST_C.tobytes()])[0], match="Constant buffer 1 has no storage")


def test_zero_copy_inputs():
    data, *_ = segmented_program()
    arr = np.frombuffer(data, dtype=np.uint8).copy()
    p = load_program(arr)
    c = p.constant_array(p.execution_plans[0].values[1].value)
    assert np.shares_memory(c, arr)
    p2 = load_program(memoryview(data))
    assert p2.buffer.obj is data


def test_bundled_synthetic_roundtrip():
    prog, _ = legacy_program()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    val = T((0, "u8", 1), (1, "table", T((0, "i8", 6), (1, "vi32", [2, 3]), (2, "vu8", (x.tobytes(), 16)),
                                         (3, "vu8", [0, 1]))))
    ints = [T((0, "u8", 2), (1, "table", T((0, "i64", -5)))), T((0, "u8", 3), (1, "table", T((0, "bool", True)))),
            T((0, "u8", 4), (1, "table", T((0, "f64", 0.25)))), T((0, "u8", 0))]
    root = T((0, "u32", 2), (1, "tables", [T((0, "str", "forward"), (1, "tables", [T((0, "tables", [val] + ints),
                                                                                    (1, "tables", [val]))]))]),
             (2, "vu8", (prog, 32)))
    data = build(root, b"BP08")
    assert is_bundled(data) and not is_bundled(prog)
    bp = load_bundled(data)
    assert bp.version == 2 and bp.program_offset % 32 == 0 and bytes(bp.program_data) == prog
    case = bp.test_suite("forward").test_cases[0]
    assert [v.kind for v in case.inputs] == ["Tensor", "Int", "Bool", "Double", "None"]
    assert [v.value for v in case.inputs[1:]] == [-5, True, 0.25, None]
    assert np.array_equal(case.inputs[0].array(data), x) and np.array_equal(case.expected_outputs[0].array(data), x)
    assert bytes(case.inputs[0].data(data)) == x.tobytes()
    assert bp.load_program().execution_plans[0].name == "forward"
    with pytest.raises(RuntimeFailure, match="Bundled program identifier 'ET12' != expected 'BP08'"):
        load_bundled(prog)


# ---------------------------------------------------------------------------------------------------------
# Broken on purpose: each must raise RuntimeFailure with a specific one-line message
# ---------------------------------------------------------------------------------------------------------

def _bad_plan(**over):
    data, *_ = segmented_program(plan=plan_spec(**over))
    return data


def _values_with(index, value):
    spec = plan_spec()
    values = list(spec.fields[1][2])
    values[index] = value
    return values


@pytest.mark.parametrize("over, match", [
    (dict(inputs=[99]), "input 0: index 99 negative or >= 14"),
    (dict(outputs=[-1]), "output 0: index -1 negative or >= 14"),
    (dict(ncbs=[0]), "memory_id 1 out of range for 0 planned buffer(s)"),
    (dict(ncbs=[0, 40]), "offset_bytes (32) + size_bytes (24) > planned buffer size (40) for memory_id 1"),
    (dict(ncbs=[0, -64]), "non_const_buffer_sizes[1] = -64 is negative"),
    (dict(instructions=[kernel(2, [0])]), "Op index 2 out of range (2 operators)"),
    (dict(instructions=[kernel(0, [0, 14])]), "Arg index 14 >= 14"),
    (dict(instructions=[delegate_call(1, [0])]), "Delegate index 1 out of range (1 delegates)"),
    (dict(instructions=[move(0, 20)]), "MoveCall move_to: index 20 negative or >= 14"),
    (dict(instructions=[jump_false(4, 7)]), "JumpFalseCall destination_instruction 7 outside the chain of 1"),
    (dict(instructions=[free(-3)]), "FreeCall value_index: index -3 negative or >= 14"),
    (dict(instructions=[T((0, "u8", 9), (1, "table", T((0, "i32", 0))))]), "Invalid instruction type 9"),
    (dict(instructions=[T((0, "u8", 1))]), "Null instruction at index 0"),
    (dict(drop=[0]), "Missing name field"),
    (dict(drop=[2]), "Missing values"),
    (dict(drop=[3]), "Missing inputs field"),
    (dict(drop=[8]), "Missing non_const_buffer_sizes field"),
    (dict(drop=[7]), "Missing delegates field"),
    (dict(drop=[5]), "No chains"),
    (dict(operators=[T((1, "str", "out"))]), "Missing operator name"),
    (dict(values=_values_with(0, ev_tensor(6, [2, 3], mem=(0, 0)))), "memory_id 0 out of range"),
    (dict(values=_values_with(0, ev_tensor(6, [2, -3], mem=(1, 0)))), "Negative size[1] -3"),
    (dict(values=_values_with(0, ev_tensor(6, [1] * 17, mem=(1, 0)))), "Tensor rank too large 17 > 16"),
    (dict(values=_values_with(0, ev_tensor(6, [2, 3], [0, 0], mem=(1, 0)))), "is not a permutation"),
    (dict(values=_values_with(0, ev_tensor(6, [2, 3], [0], mem=(1, 0)))), "dim_order size 1 != dim 2"),
    (dict(values=_values_with(0, ev_tensor(30, [2, 3], mem=(1, 0)))), "Invalid or unsupported ScalarType 30"),
    (dict(values=_values_with(0, ev_tensor(6, [2, 3], mem=(1, 0), dyn=5))), "Unknown TensorShapeDynamism 5"),
    (dict(values=_values_with(0, ev_tensor(6, [65536, 65536], mem=(1, 0)))), "do not fit a 32-bit size_t"),
    (dict(values=_values_with(1, ev_tensor(6, [2, 3], buf_idx=3))),
     "Constant segment buffer index 3 invalid for program constant segment range 3"),
    (dict(values=_values_with(1, ev_tensor(6, [4, 3], buf_idx=2))),
     "Constant segment offset 32 + size_bytes 48 invalid for program constant segment size 36"),
    (dict(values=_values_with(3, ev(12, T((0, "i64", 1))))), "Unknown KernelTypes value 11 at index 3"),
    (dict(values=_values_with(3, ev(0, T()))), "Unknown KernelTypes value 4294967295 at index 3"),
    (dict(values=_values_with(3, ev(2))), "Null value at index 3"),
    (dict(values=_values_with(7, ev(7, T((0, "vi64", [3, 14]))))), "Invalid value index 14 for IntList 7 index 1"),
    (dict(values=_values_with(10, ev(10, T()))), "Missing list at index 10"),
    (dict(values=_values_with(11, ev(11, T((0, "vi32", [-2]))))), "Invalid value index -2 for OptionalTensorList"),
    (dict(values=_values_with(6, ev(6, T()))), "Missing string at index 6"),
    (dict(delegate=T((1, "table", T((0, "i8", 0), (1, "u32", 0))))), "Missing backend id"),
    (dict(delegate=T((0, "str", "X"), (1, "table", T((0, "i8", 0), (1, "u32", 0))))),
     "inline data index 0 >= list size 0"),
    (dict(delegate=T((0, "str", "X"), (1, "table", T((0, "i8", 1), (1, "u32", 2))))), "Segment index 2 out of range"),
    (dict(delegate=T((0, "str", "X"), (1, "table", T((0, "i8", 3), (1, "u32", 0))))), "Unknown data location 3"),
    (dict(delegate=T((0, "str", "X"))), "Missing processed data reference"),
])
def test_broken_cross_references(over, match):
    fails(_bad_plan(**over), match=match)


def test_broken_program_level():
    fails(segmented_program(offsets=(0,) * 3, extra_root=[(2, "tables", [T((0, "vu8", b"x"))])])[0],
          match="constant_buffer contains 1 items, constant_segment.offsets contains 3 items. Only one should be used.")
    data, *_ = segmented_program()
    bad = bytearray(data)
    struct.pack_into("<I", bad, 12, 16)
    fails(bytes(bad), match="Extended header length 16 < 24")
    bad = bytearray(data)
    struct.pack_into("<Q", bad, 16, len(data) + 1)
    fails(bytes(bad), Error.InvalidArgument, match=f"offset 0 + size {len(data) + 1} > size_ {len(data)}")
    fails(data[:-1], match="Segment 1 (offset 128, size")  # the last segment is cut short
    fails(b"\0" * 63, Error.InvalidArgument, match="offset 0 + size 64 > size_ 63")
    bad = bytearray(data)
    bad[4:8] = b"ET11"
    assert fails(bytes(bad)) == "Program identifier 'ET11' != expected 'ET12'"
    # no segments at all while a SEGMENT delegate is used
    legacy, _ = legacy_program(plan=plan_spec())
    fails(legacy, match="No segments in program: requested index 1")
    # an unknown method
    with pytest.raises(RuntimeFailure) as ei:
        load_program(data).method("nope")
    assert ei.value.code == Error.InvalidArgument and ei.value.message == "No method named 'nope' in program"


def test_shared_data_cannot_make_the_reader_spin():
    """n values all pointing at one IntList of n indices: n**2 element visits if decoded naively (4e8 for 20000).
    The reader's budget refuses it after work proportional to the file; the work is counted in Python lines
    (for n = 2000, where a naive reader would take 4e6 visits), never timed."""
    for n in (20000, 2000):
        shared = ev(7, T((0, "vi64", [0] * n)))
        plan = T((0, "str", "forward"), (2, "tables", Shared(shared, n)), (3, "vi32", []), (4, "vi32", []),
                 (5, "tables", [T((2, "tables", []))]), (7, "tables", []), (8, "vi64", [0]))
        data = build(T((0, "u32", 0), (1, "tables", [plan])), b"ET12")
        if n > 2000:
            fails(data, match="too many references to shared data")
            continue
        msg, lines = python_lines(fails, data, match="too many references to shared data")
        assert lines < min(n * n, 50 * len(data)), (lines, len(data), msg)
