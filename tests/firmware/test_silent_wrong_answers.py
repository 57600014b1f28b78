"""Issue 16 item 4: one-byte changes to real programs that used to give a wrong answer with exit status 0.

Each test copies a corpus program into its tmp dir, changes the byte that matters (found by parsing the
program, ``tools/tamper.py``) and runs it: the run must fail (exit status 1) with a one-line diagnosis, never
print ``Test_result: PASS`` or computed garbage.
"""

import shutil
import sys

import pytest

from testutil import CORPUS, ROOT, run_fvp

sys.path.insert(0, str(ROOT / "tools"))

import tamper  # noqa: E402


def _copy(tmp_path, name):
    dst = tmp_path / name
    shutil.copy(CORPUS / name, dst)
    return dst, bytearray(dst.read_bytes())


def _run(path):
    rc, out, err = run_fvp("run", path, "-C", "firmware.options.log_outputs=false")
    assert "Traceback" not in out + err
    return rc, out, err


# ------------------------------------------------------------------------------------- bundled checks
def test_bundled_program_with_zero_outputs_fails(tmp_path):
    path, data = _copy(tmp_path, "add_u55-128.bpte")
    pos, count = tamper.outputs_count(bytes(data))
    assert count == 1
    data[pos] = 0  # the method's outputs vector now has length 0
    path.write_bytes(data)
    rc, out, _ = _run(path)
    assert rc == 1
    assert "0 outputs" in out
    assert "the method has no outputs: the BundleIO check compares nothing" in out
    assert "Test_result: FAIL" in out and "Test_result: PASS" not in out


def test_bundled_expected_outputs_count_must_match(tmp_path):
    path, data = _copy(tmp_path, "lstm_u55-128.bpte")
    pos, count = tamper.outputs_count(bytes(data))
    assert count == 3
    data[pos] = 2  # the method keeps 2 of its 3 outputs; the test case still expects 3
    path.write_bytes(data)
    rc, out, _ = _run(path)
    assert rc == 1
    assert "bundled test case 0 has 3 expected outputs, the method 2 outputs" in out
    assert "Test_result: PASS" not in out


def test_bundled_expected_output_dtype_must_match(tmp_path):
    path, data = _copy(tmp_path, "add_u55-128.bpte")
    pos = tamper.bundled_expected_scalar_types(bytes(data))[0]
    assert data[pos] == 6  # Float
    data[pos] = 3  # Int: same element size, so only the dtype differs
    path.write_bytes(data)
    rc, out, _ = _run(path)
    assert rc == 1
    assert "expected output 0 is Int[" in out and "the method's output 0 is Float[" in out
    assert "Test_result: FAIL" in out and "Test_result: PASS" not in out


# ------------------------------------------------------------------------------------- EValue tags
def test_double_evalue_retyped_as_int_aborts_at_the_kernel(tmp_path):
    path, data = _copy(tmp_path, "add_u55-128.bpte")
    img = bytes(data)
    scale = tamper.double_used_as_float(img)[0]  # a quantize/dequantize scale
    pos = {i: p for i, _, p in tamper.evalue_tags(img)}[scale]
    assert data[pos] == 4  # KernelTypes.Double
    data[pos] = 2  # KernelTypes.Int: the double's 8 bytes now read as an int64
    path.write_bytes(data)
    rc, out, _ = _run(path)
    assert rc == 1
    assert "In function toDouble(), assert failed (isDouble()): EValue is not a Double." in out
    assert "argument 1 is an Int EValue; the kernel reads it with toDouble()" in out
    assert "Output[0]" not in out and "Test_result" not in out


def test_int_list_item_retyped_aborts(tmp_path):
    """``toIntList`` unboxes every item with ``toInt``: an item that is a Double aborts."""
    path, data = _copy(tmp_path, "ds_cnn_u55-128.bpte")
    img = bytes(data)
    from firmware.executorch.bundled import load_bundled

    plan = load_bundled(img).load_program().execution_plans[0]
    tags = {i: (k, p) for i, k, p in tamper.evalue_tags(img)}
    pool = next(args for op, args in tamper.kernel_uses(img) if op == "aten::avg_pool2d.out")
    item = plan.values[pool[1]].value[0]  # the first item of kernel_size
    assert tags[item][0] == "Int"
    data[tags[item][1]] = 4  # Double
    path.write_bytes(data)
    rc, out, _ = _run(path)
    assert rc == 1
    assert "EValue is not an int." in out
    assert "aten::avg_pool2d.out argument 1 is a Double (item of an Int List) EValue" in out


def test_every_kernel_has_a_signature_and_the_corpus_fits_them():
    from firmware.executorch.bundled import is_bundled, load_bundled
    from firmware.executorch.kernels import KERNELS
    from firmware.executorch.kernels import SIGNATURES, check_arguments
    from firmware.executorch.method import RtTensor
    from firmware.executorch.program import load_program

    assert set(SIGNATURES) == set(KERNELS)
    for f in sorted(CORPUS.glob("*.*pte")):
        img = f.read_bytes()
        plan = (load_bundled(img).load_program() if is_bundled(img) else load_program(img)).execution_plans[0]
        values = []
        for ev in plan.values:  # the runtime's value shapes (tensors need no data for a tag check)
            if ev.kind == "Tensor":
                values.append(RtTensor(ev.value.scalar_type, ev.value.sizes, ev.value.dim_order, None))
            elif ev.kind in ("IntList", "TensorList", "OptionalTensorList"):
                values.append((ev.kind, list(ev.value)))
            else:
                values.append(ev.value)
        for op, args in tamper.kernel_uses(img):
            assert check_arguments(op, [values[a] for a in args], values) is None, (f.name, op)


# ------------------------------------------------------------------------------------- Vela output records
@pytest.mark.parametrize("field, value, message", [
    ("elem_size", 8, "Ethos-U output 0: Vela record elem_size 8 does not match the Char output tensor"),
    ("elem_size", 0, "Ethos-U output 0: Vela record elem_size 0 does not match the Char output tensor"),
    ("offset", 0xF0, "Ethos-U output 0: Vela record bytes [240, 241) lie outside the 144-byte scratch buffer"),
    ("shape", 2, "Ethos-U output 0: tensor shape [1] does not match the Vela output shape"),
])
def test_tampered_vela_output_record_fails(tmp_path, field, value, message):
    path, data = _copy(tmp_path, "add_u55-128.bpte")
    rec = tamper.vela_output_records(bytes(data))[0]
    assert rec["io"].elem_size == 1 and rec["scratch_size"] == 144
    pos = rec[field] if field != "shape" else rec["shape"][0]
    data[pos] = value
    path.write_bytes(data)
    rc, out, _ = _run(path)
    assert rc == 1
    assert message in out
    assert "Test_result: PASS" not in out


# ------------------------------------------------------------------------------------- instructions
@pytest.mark.slow
def test_delegate_call_retyped_as_jump_false_on_a_float_tensor_is_invalid_program(tmp_path):
    """The DelegateCall's table read as a JumpFalseCall: its delegate index 0 becomes the condition, value 0,
    the program's Float input. ExecuTorch's ``parse_cond_value`` takes only Bool tensors and Bool scalars
    (``InvalidProgram`` otherwise); the run used to jump on the float's first byte and exit 0."""
    path, data = _copy(tmp_path, "add_u55-128.bpte")
    kinds = tamper.instruction_types(bytes(data))
    pos = next(p for _, kind, p in kinds if kind == "DelegateCall")
    data[pos] = 4  # InstructionArguments.JumpFalseCall
    path.write_bytes(data)
    rc, out, _ = _run(path)
    assert rc == 1
    assert "Expected dtype of 11 got 6" in out
    assert "Test_result: PASS" not in out
