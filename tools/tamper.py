"""Where the bytes that matter are in a real ``.pte``/``.bpte``: found by parsing, for one-byte tampering.

Used by the fuzzer's ``tamper`` target (``tools/fuzz.py``) and by the regression tests of silent wrong answers:

* ``evalue_tags(image)``: per EValue of the first method, ``(index, kind, position of its val_type byte)``;
* ``outputs_count(image)``: ``(position, count)`` of the first method's ``outputs`` vector length;
* ``vela_output_records(image)``: per Ethos-U output record, the positions of its ``elem_size``, ``offset``
  and shape fields;
* ``kernel_uses(image)``: per KernelCall, ``(operator, [value indices])``;
* ``instruction_types(image)``: per instruction of the first chain, ``(index, kind, position of its
  instr_args_type byte)``.

Positions are absolute offsets in the image (a ``.bpte``'s embedded program included).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from firmware.executorch.bundled import is_bundled, load_bundled  # noqa: E402
from firmware.executorch.flatbuf import FlatBuffer  # noqa: E402
from firmware.executorch.program import load_program  # noqa: E402
from firmware.executorch.program_types import EVALUE_KINDS  # noqa: E402
from firmware.executorch.vela_bin import IO_RECORD_SIZE, parse_vela_bin  # noqa: E402


def _program(image: bytes):
    """(offset of the program in the image, its bytes, the parsed Program)."""
    base = load_bundled(image).program_offset if is_bundled(image) else 0
    data = load_bundled(image).program_data if base else memoryview(image)
    return base, data, load_program(data)


def _plan_table(data):
    fb = FlatBuffer(data, "program")
    root = fb.root("Program")
    return root.tables(1, "ExecutionPlan", "execution_plan")[0]


def evalue_tags(image: bytes) -> list[tuple[int, str, int]]:
    base, data, _ = _program(image)
    out = []
    for i, ev in enumerate(_plan_table(data).tables(2, "EValue", "values")):
        pos = ev._field(0, 1, "val_type")
        if pos:
            out.append((i, EVALUE_KINDS[data[pos]] if data[pos] < len(EVALUE_KINDS) else "?", base + pos))
    return out


def instruction_types(image: bytes) -> list[tuple[int, str, int]]:
    from firmware.executorch.program_types import INSTRUCTION_KINDS

    base, data, _ = _program(image)
    chain = _plan_table(data).tables(5, "Chain", "chains")[0]
    out = []
    for i, ins in enumerate(chain.tables(2, "Instruction", "instructions")):
        pos = ins._field(0, 1, "instr_args_type")
        out.append((i, INSTRUCTION_KINDS[data[pos]] if data[pos] < len(INSTRUCTION_KINDS) else "?", base + pos))
    return out


def outputs_count(image: bytes) -> tuple[int, int]:
    base, data, _ = _program(image)
    pos = _plan_table(data)._target(4, "outputs")
    return base + pos, int.from_bytes(bytes(data[pos:pos + 4]), "little")


def kernel_uses(image: bytes) -> list[tuple[str, list]]:
    _, _, program = _program(image)
    plan = program.execution_plans[0]
    return [(plan.operators[ins.op_index].full_name, list(ins.args))
            for chain in plan.chains for ins in chain.instructions if ins.kind == "KernelCall"]


def vela_output_records(image: bytes) -> list[dict]:
    base, _, program = _program(image)
    recs = []
    for d in program.execution_plans[0].delegates:
        if d.id != "EthosUBackend":
            continue
        off, size = program.delegate_data(d)
        vela = parse_vela_bin(program.view(off, size))
        block = [b for b in vela.blocks if b.name == "outputs"][-1]
        ndims = 6 if vela.io_record_size == IO_RECORD_SIZE else 4
        for k, io in enumerate(vela.outputs):
            rec = base + off + block.payload_offset + 4 + k * vela.io_record_size
            recs.append({"io": io, "shape": [rec + 4 * j for j in range(ndims)], "elem_size": rec + 4 * ndims,
                         "offset": rec + 4 * ndims + 4, "scratch_size": vela.scratch_size})
    return recs


def double_used_as_float(image: bytes) -> list[int]:
    """Indices of Double EValues some kernel reads as a ``float`` (toDouble) argument."""
    from firmware.executorch.kernels import SIGNATURES

    kinds = {i: k for i, k, _ in evalue_tags(image)}
    found = []
    for op, args in kernel_uses(image):
        for code, a in zip((SIGNATURES.get(op) or "").split(","), args):
            if code.startswith("f") and kinds.get(a) == "Double" and a not in found:
                found.append(a)
    return found


def bundled_expected_scalar_types(image: bytes) -> list[int]:
    """Positions of the ``scalar_type`` bytes of the first test case's expected output tensors (``.bpte``)."""
    fb = FlatBuffer(image, "bundled program")
    suite = fb.root("BundledProgram").tables(1, "BundledMethodTestSuite", "method_test_suites")[0]
    case = suite.tables(1, "BundledMethodTestCase", "test_cases")[0]
    out = []
    for v in case.tables(1, "Value", "expected_outputs"):
        tag, pos = v.union(0, "val")
        if tag == 1:  # Tensor
            from firmware.executorch.flatbuf import Table

            out.append(Table(fb, pos, "Tensor")._field(0, 1, "scalar_type"))
    return out
