"""The .pte / .bpte readers on the real programs of the corpus (expected values from the oracle fixtures and the
research notes), and their robustness against truncated and corrupted files."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firmware.executorch import flatbuf
from firmware.executorch.bundled import is_bundled, load_bundled
from firmware.executorch.error import Error, RuntimeFailure
from firmware.executorch.program import load_program
from firmware.executorch.program_types import INLINE, SCALAR_TYPES
from firmware.executorch.vela_bin import parse_vela_bin
from testutil import python_lines

DATA = Path(__file__).resolve().parents[1] / "data"
CORPUS = DATA / "corpus"
ORACLE = DATA / "oracle"
PTES = sorted(p.name for p in CORPUS.glob("*.pte"))
BPTES = sorted(p.name for p in CORPUS.glob("*.bpte"))
ORACLE_NAMES = sorted(p.name for p in ORACLE.iterdir() if (p / "meta.json").exists())

ADD_Q = (CORPUS / "add_q.pte").read_bytes()
ADDINT = (CORPUS / "addint_u55.pte").read_bytes()
ADD_BPTE = (CORPUS / "add_u55-128.bpte").read_bytes()


def _load_any(raw):
    if is_bundled(raw):
        bp = load_bundled(raw)
        return bp, bp.load_program()
    return None, load_program(raw)


# ---------------------------------------------------------------------------------------------------------
# Corpus
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", PTES + BPTES)
def test_every_corpus_file_loads(name):
    raw = (CORPUS / name).read_bytes()
    bp, prog = _load_any(raw)
    assert is_bundled(raw) == name.endswith(".bpte")
    assert prog.version == 0 and len(prog.execution_plans) == 1
    plan = prog.execution_plans[0]
    assert plan.name == "forward" and plan.chains and plan.chains[0].instructions
    for d in plan.delegates:
        assert d.id == "EthosUBackend" and d.location == INLINE
        off, size = prog.delegate_data(d)
        assert off % 16 == 0  # force_align 16
        vb = parse_vela_bin(prog.view(off, size), blob_address=off)
        assert vb.cmd_data[1] > 0
    if bp is not None:
        assert bp.program_offset % 32 == 0 and bp.program_offset + bp.program_size <= len(raw)
        assert bp.program_data.obj is raw  # zero-copy


def _meta(name):
    return json.loads((ORACLE / name / "meta.json").read_text())


@pytest.mark.parametrize("name", ORACLE_NAMES)
def test_bundled_programs_match_oracle_meta(name):
    meta = _meta(name)
    raw = (CORPUS / f"{name}.bpte").read_bytes()
    assert len(raw) == meta["bpte_size"]
    bp = load_bundled(raw)
    prog = bp.load_program()
    plan = prog.execution_plans[0]
    assert bp.program_size == meta["program_size"] == prog.program_size
    assert len(plan.delegates) == meta["n_delegates"]
    assert [op.full_name for op in plan.operators] == meta["operators"]
    assert plan.inputs == meta["plan_inputs"] and plan.outputs == meta["plan_outputs"]
    assert plan.non_const_buffer_sizes == meta["non_const_buffer_sizes"]
    assert len(meta["delegates"]) == len(plan.delegates)
    for d, md in zip(plan.delegates, meta["delegates"]):
        off, size = prog.delegate_data(d)
        vb = parse_vela_bin(prog.view(off, size), blob_address=bp.program_offset + off)
        assert size == md["blob_size"]
        assert vb.scratch_size == md["scratch_size"]
        assert vb.cmd_data[1] == md["cmd_data_size"]
        assert vb.weight_data[1] == md["weight_data_size"]
        assert vb.block_order == md["block_order"]
        assert [[list(io.shape), io.elem_size, io.offset, io.region] for io in vb.inputs] == \
            [[io["shape"], io["elem_size"], io["offset"], io["region"]] for io in md["vela_inputs"]]
        assert [[list(io.shape), io.elem_size, io.offset, io.region] for io in vb.outputs] == \
            [[io["shape"], io["elem_size"], io["offset"], io["region"]] for io in md["vela_outputs"]]
    # delegate call arguments: instruction index and value indices as the oracle mapped them
    dcalls = [(k, i) for c in plan.chains for k, i in enumerate(c.instructions) if i.kind == "DelegateCall"]
    for io in meta["delegate_io"]:
        k, instr = dcalls[[d for d, _ in dcalls].index(io["instruction"])]
        assert instr.delegate_index == io["delegate"]
        assert instr.args == [a["value"] for a in io["args"]]
        for a in io["args"]:
            t = plan.values[a["value"]].value
            assert list(t.sizes) == a["et_sizes"] and list(t.dim_order) == a["et_dim_order"]
            assert t.dtype == np.dtype(a["et_dtype"])


@pytest.mark.parametrize("name", ORACLE_NAMES)
def test_bundled_test_case_decodes_to_oracle_arrays(name):
    raw = np.fromfile(CORPUS / f"{name}.bpte", dtype=np.uint8)
    bp = load_bundled(raw)
    (suite,) = bp.method_test_suites
    assert suite.method_name == "forward" and len(suite.test_cases) == 1
    case = suite.test_cases[0]
    with np.load(ORACLE / name / "oracle.npz") as z:
        n_in = len([k for k in z.files if k.startswith("in0_")])
        n_exp = len([k for k in z.files if k.startswith("exp_")])
        assert len(case.inputs) == n_in and len(case.expected_outputs) == n_exp
        for i, v in enumerate(case.inputs):
            a = v.array(raw)
            assert v.kind == "Tensor" and a.dtype == z[f"in0_{i}"].dtype
            assert a.shape == z[f"in0_{i}"].shape and np.array_equal(a, z[f"in0_{i}"])
            assert np.shares_memory(a, raw)
            assert v.data_size == v.nbytes
        for j, v in enumerate(case.expected_outputs):
            a = v.array(raw)
            assert a.shape == z[f"exp_{j}"].shape and np.array_equal(a, z[f"exp_{j}"])
    # the bundled inputs match the program's inputs in type and shape
    plan = bp.load_program().execution_plans[0]
    for v, idx in zip(case.inputs, plan.inputs):
        t = plan.values[idx].value
        assert (v.scalar_type, v.sizes) == (t.scalar_type, t.sizes)


def test_add_q_pte():
    prog = load_program(ADD_Q)
    assert prog.extended_header is None and prog.program_size == len(ADD_Q) == 3712
    assert prog.segments == [(0, 0)] and prog.constant_segment == (0, [0]) and not prog.constant_segment_loaded
    assert prog.backend_delegate_data == [(112, 1104)]
    plan = prog.execution_plans[0]
    assert len(plan.values) == 21
    assert plan.non_const_buffer_sizes == [0, 48]
    ins = plan.chains[0].instructions
    assert [i.kind for i in ins] == ["KernelCall", "KernelCall", "DelegateCall", "KernelCall"]
    assert ins[2].args == [2, 8, 14] and ins[2].delegate_index == 0
    assert ins[0].args == [0, 3, 4, 5, 6, 7, 2, 2] and ins[0].op_index == 0 and ins[3].op_index == 1
    # quantize args: input, scale (Double), zero_point, quant_min, quant_max, dtype (Int, 1 = Char), out
    assert [plan.values[a].kind for a in ins[0].args[:6]] == ["Tensor", "Double", "Int", "Int", "Int", "Int"]
    assert [plan.values[a].value for a in ins[0].args[2:6]] == [-128, -128, 127, 1]
    assert plan.values[3].value == pytest.approx(1 / 255)
    d = plan.delegates[0]
    assert prog.delegate_data(d) == (112, 1104)
    assert [k for k, _ in d.compile_specs] == ["tosa_spec", "compile_flags", "output_format",
                                               "transform_pipeline_config", "preserve_io_quantization", "target"]
    assert dict(d.compile_specs)["output_format"] == b"vela"
    # planned tensors in buffer 1: inputs float at 0 and 16, quantized at 32/0/16 (outputs reuse offsets)
    t = [plan.values[i].value for i in (0, 1, 2, 8, 14, 15)]
    assert [x.allocation_info for x in t] == [(1, 0), (1, 16), (1, 32), (1, 0), (1, 16), (1, 0)]
    assert [SCALAR_TYPES[x.scalar_type][0] for x in t] == ["Float", "Float", "Char", "Char", "Char", "Float"]
    vb = parse_vela_bin(prog.view(112, 1104), blob_address=112)
    assert (vb.cmd_data[1], vb.weight_data[1], vb.scratch_size) == (696, 32, 144)
    assert [io.offset for io in vb.inputs] == [64, 80] and [io.offset for io in vb.outputs] == [64]


def test_addint_u55_pte():
    prog = load_program(ADDINT)
    plan = prog.execution_plans[0]
    assert len(plan.values) == 2 and plan.inputs == [0] and plan.outputs == [1]
    assert len(plan.delegates) == 1 and len(plan.delegates[0].compile_specs) == 6
    assert plan.non_const_buffer_sizes == [0, 64] and plan.operators == []
    assert plan.values[0].value.sizes == (5,) and plan.values[0].value.scalar_type == 3
    vb = parse_vela_bin(prog.view(*prog.delegate_data(plan.delegates[0])))
    assert vb.scratch_size == 64


def test_cpu_only_programs():
    for name, op in (("add_fp_cpu.pte", "aten::add.out"), ("mul_fp_cpu.pte", "aten::mul.out"),
                     ("softmax_fp_cpu.pte", "aten::_softmax.out")):
        plan = load_program((CORPUS / name).read_bytes()).execution_plans[0]
        assert [o.full_name for o in plan.operators] == [op] and plan.delegates == []
        assert [i.kind for i in plan.chains[0].instructions] == ["KernelCall"]


def test_int_list_values_are_value_indices():
    """ds_cnn's avg_pool2d: IntList items index Int EValues (the runtime boxes them)."""
    prog = load_bundled((CORPUS / "ds_cnn_u55-128.bpte").read_bytes()).load_program()
    plan = prog.execution_plans[0]
    pool = next(i for i in plan.chains[0].instructions if i.kind == "KernelCall"
                and plan.operators[i.op_index].full_name == "aten::avg_pool2d.out")
    kernel, stride, padding = (plan.int_list(a) for a in pool.args[1:4])
    assert plan.values[pool.args[1]].kind == "IntList"
    assert kernel == [24, 5] and stride == [24, 5] and padding == [0, 0]


def test_wrong_identifier():
    bad = bytearray(ADD_Q)
    bad[4:8] = b"ET11"
    with pytest.raises(RuntimeFailure) as ei:
        load_program(bytes(bad))
    assert ei.value.code == Error.InvalidProgram
    assert ei.value.message == "Program identifier 'ET11' != expected 'ET12'"
    with pytest.raises(RuntimeFailure, match=r"Program identifier 'BP08' != expected 'ET12'"):
        load_program(ADD_BPTE)
    bad[4:8] = b"E\nT\0"
    with pytest.raises(RuntimeFailure, match=r"Program identifier 'E\\x0aT' != expected 'ET12'"):
        load_program(bytes(bad))
    with pytest.raises(RuntimeFailure, match="Bundled program identifier 'ET12' != expected 'BP08'"):
        load_bundled(ADD_Q)


# ---------------------------------------------------------------------------------------------------------
# Robustness: every corrupted file loads or raises a one-line RuntimeFailure; nothing else, and fast.
# ---------------------------------------------------------------------------------------------------------

def _exercise(raw: bytes):
    """Load like the runner would and touch every range the result hands out."""
    bp, prog = _load_any(raw)
    if bp is not None:
        for suite in bp.method_test_suites:
            for case in suite.test_cases:
                for v in case.inputs + case.expected_outputs:
                    if v.kind == "Tensor" and v.dtype is not None:
                        v.array(raw)
    for plan in prog.execution_plans:
        for d in plan.delegates:
            blob = prog.view(*prog.delegate_data(d))
            try:
                parse_vela_bin(blob)
            except RuntimeFailure as exc:
                assert exc.message and "\n" not in exc.message
        for v in plan.values:
            if v.kind == "Tensor" and v.value.is_constant and v.value.dtype is not None:
                prog.constant_array(v.value)
    return prog


def _load_or_fail(raw: bytes) -> bool:
    """Load (or refuse) ``raw``; the work is bounded by the reader's budget (``flatbuf.FlatBuffer.charge``: about
    two elements per byte), which ``test_program_synthetic`` checks by the work it counts, never by a clock."""
    try:
        _exercise(raw)
        ok = True
    except RuntimeFailure as exc:
        assert exc.message and "\n" not in exc.message
        assert exc.code in (Error.InvalidProgram, Error.InvalidArgument, Error.InvalidExternalData), exc
        ok = False
    return ok


@pytest.mark.parametrize("raw, step", [(ADD_Q, 1), (ADDINT, 1), (ADD_BPTE, 3)], ids=["add_q", "addint", "add_bpte"])
def test_every_truncation(raw, step):
    loaded = [n for n in range(0, len(raw), step) if _load_or_fail(raw[:n])]
    # a plain .pte has no size field: a cut that only drops trailing bytes nobody references can still load,
    # but never one that cuts into the root table or the data
    assert all(n > len(raw) // 2 for n in loaded)


def test_every_byte_corrupted():
    for pos in range(len(ADD_Q)):
        for v in (0xFF, ADD_Q[pos] ^ 0x80):
            bad = bytearray(ADD_Q)
            bad[pos] = v
            _load_or_fail(bytes(bad))


def _recorded_positions(raw: bytes, monkeypatch):
    """Positions of every vector length word, table and uoffset the reader follows on a clean load."""
    seen = {"vector": set(), "table": set(), "offset": set()}
    orig_vec, orig_follow, orig_init = flatbuf.FlatBuffer.vector_at, flatbuf.FlatBuffer.follow, flatbuf.Table.__init__

    def vec(self, pos, *a):
        seen["vector"].add(pos)
        return orig_vec(self, pos, *a)

    def follow(self, pos, *a):
        seen["offset"].add(pos)
        return orig_follow(self, pos, *a)

    def init(self, fb, pos, name):
        seen["table"].add(pos)
        return orig_init(self, fb, pos, name)

    with monkeypatch.context() as m:
        m.setattr(flatbuf.FlatBuffer, "vector_at", vec)
        m.setattr(flatbuf.FlatBuffer, "follow", follow)
        m.setattr(flatbuf.Table, "__init__", init)
        _exercise(raw)
    return {k: sorted(v) for k, v in seen.items()}


@pytest.mark.parametrize("raw", [ADD_Q, ADD_BPTE], ids=["add_q", "add_bpte"])
def test_absurd_lengths_offsets_and_vtables(raw, monkeypatch):
    pos = _recorded_positions(raw, monkeypatch)
    assert len(pos["vector"]) > 20 and len(pos["table"]) > 20
    inner = load_bundled(raw).program_offset if is_bundled(raw) else 0
    # (positions inside the embedded program are relative to it; both frames are tried, misses are harmless)
    cases = []
    for p in pos["vector"]:
        for v in (0xFFFFFFFF, 0x7FFFFFFF, 0x40000000, len(raw), len(raw) // 4):
            cases += [(p, v), (p + inner, v)]
    for p in pos["offset"]:
        for v in (0, 1, 0xFFFFFFFF, 0x80000000, len(raw)):
            cases += [(p, v), (p + inner, v)]
    for p in pos["table"]:
        for v in (0, 4, -4, 0x7FFFFFFF, -0x80000000, -len(raw)):
            cases += [(p, v & 0xFFFFFFFF), (p + inner, v & 0xFFFFFFFF)]
    for p, v in cases:
        if p + 4 <= len(raw):
            bad = bytearray(raw)
            struct.pack_into("<I", bad, p, v)
            _load_or_fail(bytes(bad))


_FLIPS = st.lists(st.tuples(st.integers(0, 2**31), st.integers(0, 7)), min_size=1, max_size=10)


def _flipped(raw: bytes, flips) -> bytes:
    """``raw`` with each (position, bit) of ``flips`` inverted (positions wrap around)."""
    bad = bytearray(raw)
    for pos, bit in flips:
        bad[pos % len(bad)] ^= 1 << bit
    return bytes(bad)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_FLIPS)
def test_random_bit_flips_pte(flips):
    _load_or_fail(_flipped(ADD_Q, flips))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_FLIPS)
def test_random_bit_flips_bpte(flips):
    _load_or_fail(_flipped(ADD_BPTE, flips))


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=0, max_size=256), st.sampled_from([b"ET12", b"BP08"]))
def test_random_garbage_with_identifier(body, ident):
    raw = body[:4].ljust(4, b"\0") + ident + body[4:]
    _load_or_fail(raw + bytes(max(0, 64 - len(raw))))


def test_large_program_loads_without_copying_its_data():
    """MobileNetV2's 3.4 MB delegate is a view of the file's bytes (a copy per load was the cost), and the load
    does work per table, not per byte (Python lines counted, not seconds)."""
    raw = (CORPUS / "mv2_full_u55-128.bpte").read_bytes()
    bp, lines = python_lines(load_bundled, raw)
    prog, more = python_lines(bp.load_program)
    assert lines + more < len(raw) // 100, (lines, more)
    (d,) = prog.execution_plans[0].delegates
    off, size = prog.delegate_data(d)
    assert size > 3_000_000 and prog.view(off, size).obj is raw
