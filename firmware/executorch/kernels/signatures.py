"""The kernels' argument types, and the unboxing check ExecuTorch's generated kernel wrappers make.

A registered ExecuTorch kernel is the codegen's unboxing wrapper (``RegisterCodegenUnboxedKernels.cpp``): it
turns each ``EValue*`` of the instruction into the C++ type the operator schema names, with the accessors of
``runtime/core/evalue.h`` (``toTensor``, ``toInt``, ``toDouble``, ``toBool``, ``toScalar``, ``toIntList``,
``toOptional<T>``, ...), each of which ``ET_CHECK_MSG``s the EValue's tag (``EValue is not a Double.``) and
aborts the program when it is wrong. So a program whose Double EValue was retyped as an Int aborts at its first
call of a kernel that reads a ``float``; it never computes with the Int's bits.

``SIGNATURES`` gives, per operator, the types of its non-``out`` arguments in schema order (the ``out``
tensors and returned values that follow are checked by the kernels themselves): ``T`` Tensor, ``i`` int (also
ScalarType, MemoryFormat, SymInt), ``f`` float (a C++ ``double``), ``b`` bool, ``s`` Scalar (an Int, Double or
Bool EValue), ``S`` str, ``I`` int[], ``F`` float[], ``L`` Tensor[], ``O`` Tensor?[]; a trailing ``?`` also
accepts None. The types are those of the operator schemas (PyTorch's ``native_functions.yaml``, ExecuTorch's
``quantized.yaml`` and ``backends/cortex_m/ops/operators.yaml``), checked against the argument tags of every
program the real toolchain produced for the tests.

``unboxed(kernels)`` wraps a kernel registry: each call first checks the arguments' tags, then calls the
kernel. A wrong tag logs the accessor's fatal line and aborts the run (exit status 1), as on the target.
Python keeps the tag in the value's type: RtTensor (Tensor), None (None), bool (Bool), int (Int), float
(Double), str (String), ``("IntList"|"TensorList"|"OptionalTensorList", [value indices])``, a list of bools or
floats (BoolList, DoubleList).
"""

from __future__ import annotations

from .. import log
from ..method import RtTensor

_UNARY = "T"

SIGNATURES: dict[str, str] = {
    # ---- aten, unary and copies: (Tensor self)
    **{f"aten::{n}.out": _UNARY for n in (
        "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "bitwise_not", "ceil", "cos", "cosh", "erf",
        "exp", "expm1", "floor", "isinf", "isnan", "log", "log10", "log1p", "log2", "logical_not", "neg",
        "reciprocal", "relu", "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
        "detach_copy", "alias_copy", "lift_fresh_copy", "_conj_physical", "hardsigmoid", "hardswish", "silu",
        "nonzero", "t_copy", "view_as_real_copy")},
    "aten::max.unary_out": "T", "aten::min.unary_out": "T",
    # ---- binary: (Tensor self, Tensor other) and (Tensor self, Scalar other)
    **{f"aten::{n}.Tensor_out": "T,T" for n in (
        "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "eq", "ne", "ge",
        "gt", "le", "lt", "fmod", "remainder")},
    **{f"aten::{n}.Scalar_out": "T,s" for n in (
        "bitwise_and", "bitwise_or", "bitwise_xor", "eq", "ne", "ge", "gt", "le", "lt", "fmod", "remainder",
        "mul", "div")},
    **{f"aten::{n}.Tensor_Scalar_out": "T,s" for n in ("bitwise_left_shift", "bitwise_right_shift", "pow")},
    **{f"aten::{n}.out": "T,T" for n in (
        "mul", "div", "maximum", "minimum", "atan2", "bmm", "mm", "floor_divide", "logical_and", "logical_or",
        "logical_xor", "masked_select")},
    "aten::add.out": "T,T,s", "aten::sub.out": "T,T,s",
    "aten::add.Scalar_out": "T,s,s", "aten::sub.Scalar_out": "T,s,s", "aten::rsub.Scalar_out": "T,s,s",
    "aten::div.out_mode": "T,T,S?", "aten::div.Scalar_mode_out": "T,s,S?",
    "aten::pow.Scalar_out": "s,T", "aten::pow.Tensor_Tensor_out": "T,T",
    "aten::addmm.out": "T,T,T,s,s",
    # ---- activations and elementwise with parameters
    "aten::_softmax.out": "T,i,b", "aten::_log_softmax.out": "T,i,b",
    "aten::clamp.out": "T,s?,s?", "aten::clamp.Tensor_out": "T,T?,T?",
    "aten::hardtanh.out": "T,s,s", "aten::leaky_relu.out": "T,s", "aten::elu.out": "T,s,s,s",
    "aten::softplus.out": "T,s,s", "aten::gelu.out": "T,S", "aten::glu.out": "T,i", "aten::logit.out": "T,f?",
    "aten::where.self_out": "T,T,T", "aten::masked_fill.Scalar_out": "T,T,s", "aten::masked_scatter.out": "T,T,T",
    "aten::fill.Scalar_out": "T,s", "aten::fill.Tensor_out": "T,T",
    # ---- reductions
    "aten::all.all_out": "T", "aten::any.all_out": "T",
    "aten::all.dims_out": "T,I?,b", "aten::any.dims_out": "T,I?,b",
    "aten::all.out": "T,i,b", "aten::any.out": "T,i,b",
    "aten::amax.out": "T,I,b", "aten::amin.out": "T,I,b",
    "aten::argmax.out": "T,i?,b", "aten::argmin.out": "T,i?,b",
    "aten::max.dim_max": "T,i,b", "aten::min.dim_min": "T,i,b",
    "aten::mean.out": "T,I?,b,i?", "aten::mean.dtype_out": "T,i?",
    "aten::sum.IntList_out": "T,I?,b,i?",
    "aten::prod.out": "T,i?", "aten::prod.int_out": "T,i,b,i?",
    "aten::cumsum.out": "T,i,i?",
    "aten::var.out": "T,I?,b,b", "aten::var.correction_out": "T,I?,s?,b", "aten::var_mean.correction_out": "T,I?,s?,b",
    "aten::sort.values": "T,i,b", "aten::topk.values": "T,i,i,b,b",
    # ---- shapes, copies, indexing
    "aten::view_copy.out": "T,I", "aten::_unsafe_view.out": "T,I", "aten::expand_copy.out": "T,I,b",
    "aten::permute_copy.out": "T,I", "aten::squeeze_copy.dims_out": "T,I", "aten::squeeze_copy.dim_out": "T,i",
    "aten::unsqueeze_copy.out": "T,i", "aten::transpose_copy.int_out": "T,i,i",
    "aten::clone.out": "T,i?", "aten::_to_copy.out": "T,b,i?", "aten::copy.out": "T,T,b", "aten::copy_": "T,T,b",
    "aten::cat.out": "L,i", "aten::stack.out": "L,i",
    "aten::split_copy.Tensor_out": "T,i,i", "aten::split_with_sizes_copy.out": "T,I,i",
    "aten::unbind_copy.int_out": "T,i",
    "aten::select_copy.int_out": "T,i,i", "aten::select_scatter.out": "T,T,i,i",
    "aten::slice_copy.Tensor_out": "T,i,i?,i?,i", "aten::slice_scatter.out": "T,T,i,i?,i?,i",
    "aten::narrow_copy.out": "T,i,i,i", "aten::diagonal_copy.out": "T,i,i,i",
    "aten::as_strided_copy.out": "T,I,I,i?", "aten::unfold_copy.out": "T,i,i,i",
    "aten::flip.out": "T,I", "aten::roll.out": "T,I,I", "aten::repeat.out": "T,I",
    "aten::repeat_interleave.Tensor_out": "T,i?", "aten::tril.out": "T,i",
    "aten::pixel_shuffle.out": "T,i", "aten::pixel_unshuffle.out": "T,i",
    "aten::gather.out": "T,i,T,b", "aten::index.Tensor_out": "T,O", "aten::index_select.out": "T,i,T",
    "aten::index_put.out": "T,O,T,b", "aten::index_put_": "T,O,T,b",
    "aten::scatter.src_out": "T,i,T,T", "aten::scatter.value_out": "T,i,T,s", "aten::scatter_add.out": "T,i,T,T",
    "aten::embedding.out": "T,T,i,b,b",
    "aten::constant_pad_nd.out": "T,I,s",
    **{f"aten::{k}_pad{d}d.out": "T,I" for k in ("reflection", "replication") for d in (1, 2, 3)},
    # ---- factories
    "aten::full.out": "I,s", "aten::full_like.out": "T,s,i?", "aten::ones.out": "I", "aten::zeros.out": "I",
    "aten::empty.out": "I,i?", "aten::scalar_tensor.out": "s",
    "aten::arange.out": "s", "aten::arange.start_out": "s,s,s",
    # ---- nn
    "aten::convolution.out": "T,T,T?,I,I,I,b,I,i",
    "aten::linear.out": "T,T,T?",
    "aten::avg_pool2d.out": "T,I,I,I,b,b,i?",
    "aten::max_pool2d_with_indices.out": "T,I,I,I,I,b",
    "aten::_adaptive_avg_pool2d.out": "T,I",
    "aten::upsample_bilinear2d.vec_out": "T,I?,b,F?", "aten::upsample_nearest2d.vec_out": "T,I?,F?",
    "aten::_upsample_bilinear2d_aa.out": "T,I,b,f?,f?",
    "aten::grid_sampler_2d.out": "T,T,i,i,b",
    "aten::native_layer_norm.out": "T,I,T?,T?,f",
    "aten::native_group_norm.out": "T,T?,T?,i,i,i,i,f",
    "aten::_native_batch_norm_legit_no_training.out": "T,T?,T?,T,T,f,f",
    "aten::_native_batch_norm_legit.out": "T,T?,T?,T,T,b,f,f",
    "aten::_native_batch_norm_legit.no_stats_out": "T,T?,T?,b,f,f",
    "aten::native_dropout.out": "T,f,b?",
    "aten::_cdist_forward.out": "T,T,f,i?", "aten::_pdist_forward.out": "T,f",
    # ---- dim order ops
    "dim_order_ops::_clone_dim_order.out": "T,b,I?", "dim_order_ops::_to_dim_order_copy.out": "T,b,I?",
    "dim_order_ops::_empty_dim_order.out": "I,I?",
    # ---- quantized_decomposed (kernels/quantized/quantized.yaml)
    "quantized_decomposed::quantize_per_tensor.out": "T,f,i,i,i,i",
    "quantized_decomposed::dequantize_per_tensor.out": "T,f,i,i,i,i,i?",
    "quantized_decomposed::dequantize_per_channel.out": "T,T,T?,i,i,i,i,i?",
    # ---- cortex_m (backends/cortex_m/ops/operators.yaml)
    "cortex_m::quantize_per_tensor.out": "T,f,i,i,i,i",
    "cortex_m::dequantize_per_tensor.out": "T,f,i,i,i,i",
    "cortex_m::quantized_add.out": "T,i,i,i,T,i,i,i,i,i,i,i,i",
    "cortex_m::quantized_mul.out": "T,i,T,i,i,i,i",
    "cortex_m::quantized_div.out": "T,i,T,i,i,f",
    "cortex_m::quantized_activation.out": "T,T",
    "cortex_m::minimum.out": "T,T", "cortex_m::maximum.out": "T,T",
    "cortex_m::quantized_linear.out": "T,T,T?,T?,i,i,i,I,I,i,i",
    "cortex_m::softmax.out": "T,i,i,i,i,i,i",
    "cortex_m::transpose.out": "T,I",
    "cortex_m::pad.out": "T,I,I,i",
    **{f"cortex_m::quantized_conv2d{v}.out": "T,T,T?,I,I,I,i,i,T,T,i,i,T" for v in ("", "_nhwc")},
    **{f"cortex_m::quantized_depthwise_conv2d{v}.out": "T,T,T?,I,I,I,i,i,i,T,T,i,i,T" for v in ("", "_nhwc")},
    **{f"cortex_m::quantized_transpose_conv2d{v}.out": "T,T,T?,I,I,I,I,i,i,T,T,i,i,T,T" for v in ("", "_nhwc")},
    **{f"cortex_m::quantized_avg_pool2d{v}.out": "T,I,I,I,b,i,i,i,T" for v in ("", "_nhwc")},
    **{f"cortex_m::quantized_max_pool2d{v}.out": "T,I,I,I,I,b,i,i,i,i" for v in ("", "_nhwc")},
    "cortex_m::quantized_batch_matmul.out": "T,i,T,i,i,i,i,T",
}

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


def check_arguments(op: str, args: list, values: list) -> tuple[int, str, str] | None:
    """The first argument whose tag the operator's accessor refuses, as ``(index, code, tag)``; None when
    all are right (or the operator has no signature). ``values`` resolves list items (``toIntList`` unboxes
    every item with ``toInt``)."""
    sig = SIGNATURES.get(op)
    if not sig:
        return None
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


def unboxed(kernels: dict) -> dict:
    """The registry as the runtime registers it: every kernel behind its unboxing check."""
    return {op: _wrap(op, fn) for op, fn in kernels.items()}


def _wrap(op: str, fn):
    def kernel(ctx, args):
        bad = check_arguments(op, args, ctx.method.values)
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
