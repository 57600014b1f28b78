"""The kernels' argument type codes, and the unboxing check ExecuTorch's generated kernel wrappers make.

A registered ExecuTorch kernel is the codegen's unboxing wrapper (``RegisterCodegenUnboxedKernels.cpp``): it
turns each ``EValue*`` of the instruction into the C++ type the operator schema names, with the accessors of
``runtime/core/evalue.h`` (``toTensor``, ``toInt``, ``toDouble``, ``toBool``, ``toScalar``, ``toIntList``,
``toOptional<T>``, ...), each of which ``ET_CHECK_MSG``s the EValue's tag (``EValue is not a Double.``) and
aborts the program when it is wrong. So a program whose Double EValue was retyped as an Int aborts at its first
call of a kernel that reads a ``float``; it never computes with the Int's bits.

A kernel's signature gives the types of its non-``out`` arguments in schema order (the ``out`` tensors and
returned values that follow are checked by the kernels themselves), declared with the kernel (``@kernel(name,
sig)``, :mod:`.registry`): ``T`` Tensor, ``i`` int (also ScalarType, MemoryFormat, SymInt), ``f`` float (a C++
``double``), ``b`` bool, ``s`` Scalar (an Int, Double or Bool EValue), ``S`` str, ``I`` int[], ``F`` float[],
``L`` Tensor[], ``O`` Tensor?[]; a trailing ``?`` also accepts None. The types are those of the operator
schemas (PyTorch's ``native_functions.yaml``, ExecuTorch's ``quantized.yaml`` and
``backends/cortex_m/ops/operators.yaml``), checked against the argument tags of every program the real
toolchain produced for the tests.

``unboxing(op, sig, fn)`` wraps a kernel: each call first checks the arguments' tags, then calls the kernel.
A wrong tag logs the accessor's fatal line and aborts the run (exit status 1), as on the target. Python keeps
the tag in the value's type: RtTensor (Tensor), None (None), bool (Bool), int (Int), float (Double), str
(String), ``("IntList"|"TensorList"|"OptionalTensorList", [value indices])``, a list of bools or floats
(BoolList, DoubleList).
"""

from __future__ import annotations

from .. import log
from ..method import RtTensor

# type code -> (the evalue.h accessor, its ET_CHECK condition, its message)
_ACCESSORS = {
    "T": ("toTensor", "isTensor()", "EValue is not a Tensor."),
    "i": ("toInt", "isInt()", "EValue is not an int."),
    "f": ("toDouble", "isDouble()", "EValue is not a Double."),
    "b": ("toBool", "isBool()", "EValue is not a Bool."),
    "s": ("toScalar", "false", "EValue is not a Scalar."),
    "S": ("toString", "isString()", "EValue is not a String."),
    "I": ("toIntList", "isIntList()", "EValue is not an Int List."),
    "F": ("toDoubleList", "isDoubleList()", "EValue is not a Double List."),
    "L": ("toTensorList", "isTensorList()", "EValue is not a Tensor List."),
    "O": ("toListOptionalTensor", "isListOptionalTensor()", "EValue is not a List Optional Tensor."),
}


def tag_of(value) -> str:
    """The EValue tag a runtime value carries (``Tensor``, ``Int``, ``Double``, ...)."""
    if isinstance(value, RtTensor):
        return "Tensor"
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "Bool"
    if isinstance(value, int):
        return "Int"
    if isinstance(value, float):
        return "Double"
    if isinstance(value, str):
        return "String"
    if isinstance(value, tuple) and value and value[0] in ("IntList", "TensorList", "OptionalTensorList"):
        return value[0]
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, bool) for v in value):
            return "BoolList" if value else "List"
        return "DoubleList"
    return type(value).__name__


_ACCEPTS = {"T": ("Tensor",), "i": ("Int",), "f": ("Double",), "b": ("Bool",), "s": ("Int", "Double", "Bool"),
            "S": ("String",), "I": ("IntList",), "F": ("DoubleList", "List"), "L": ("TensorList",),
            "O": ("OptionalTensorList",)}


def parse_signature(sig: str) -> list[str]:
    """The type codes of a signature (``"T,s?,I"``); ValueError for an unknown code."""
    codes = sig.split(",")
    for code in codes:
        if code.rstrip("?") not in _ACCEPTS or len(code) > 2:
            raise ValueError(f"signature {sig!r}: unknown type code {code!r}")
    return codes


def check_signature(sig: str, args: list, values: list) -> tuple[int, str, str] | None:
    """The first argument whose tag the signature's accessor refuses, as ``(index, code, tag)``; None when
    all are right. ``values`` resolves list items (``toIntList`` unboxes every item with ``toInt``)."""
    for k, code in enumerate(sig.split(",")):
        if k >= len(args):
            break  # a short argument list is the kernel's own InvalidArgument
        v = args[k]
        base, optional = code[0], code.endswith("?")
        tag = tag_of(v)
        if optional and tag == "None":
            continue
        if tag not in _ACCEPTS[base]:
            return k, base, tag
        if base == "I":
            for j in v[1]:
                item = tag_of(values[j]) if 0 <= j < len(values) else "missing"
                if item != "Int":
                    return k, "i", f"{item} (item of an Int List)"
    return None


def unboxing(op: str, sig: str, fn):
    """``fn`` behind the codegen's unboxing wrapper for operator ``op`` with argument types ``sig``."""
    def kernel(ctx, args):
        bad = check_signature(sig, args, ctx.method.values)
        if bad is not None:
            k, code, tag = bad
            func, cond, message = _ACCESSORS[code]
            log.fatal(f"In function {func}(), assert failed ({cond}): {message}")
            article = "an" if tag[0] in "AEIOU" else "a"
            ctx.bus.abort(f"{op} argument {k} is {article} {tag} EValue; the kernel reads it with {func}()")
        return fn(ctx, args)

    kernel.__name__ = getattr(fn, "__name__", "kernel")
    kernel.__wrapped__ = fn
    return kernel
