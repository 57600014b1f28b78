"""Elementwise unary math (``op_abs.cpp``, ``op_exp.cpp``, ... ``op_logit.cpp``): ``aten::<fn>.out(self)``.

Three kernel shapes, as the C++ kernels differ: ``unary_out_dtype`` computes in the out's type (float32 for a
float out), ``_unary_math`` in float32 (rounding and tests in the input's type with ``float_only=False``), and
``_unary_real_to_float`` (``unary_ufunc_realhbbf16_to_floathbf16``) takes any real or bool input into a float out,
in double for a double input, with the C++ dtype checks. Transcendentals use numpy's float32 functions, which may
differ from newlib's ``expf`` in the last bit.
"""

from __future__ import annotations

import numpy as np

from .._util import arr, check, emit, erf, float_ctype, is_float, out_tensor, store, tensor, unary_out_dtype
from ..registry import kernel, register


def _unary_math(name, fn, float_only=True):
    def kernel(ctx, args):
        out = out_tensor(args)
        x = arr(ctx, args[0])
        if float_only or x.dtype.kind == "f":
            x = x.astype(np.float32, copy=False)
        return store(ctx, out, fn(x), name)
    return kernel


def _round_half_even(x):
    return np.rint(x)


@kernel("aten::logical_not.out", "T")
def logical_not(ctx, args):
    out = out_tensor(args)
    return store(ctx, out, np.logical_not(arr(ctx, args[0]).astype(bool)), "logical_not")


@kernel("aten::bitwise_not.out", "T")
def bitwise_not(ctx, args):
    out = out_tensor(args)
    x = arr(ctx, args[0])
    return store(ctx, out, np.logical_not(x) if x.dtype == np.bool_ else np.invert(x), "bitwise_not")


def _f(fn):
    return lambda x: fn(x).astype(x.dtype)


def _unary_real_to_float(name, fn):
    """unary_ufunc_realhbbf16_to_floathbf16: any real or bool input, a float out, ``fn`` in float (double for
    double inputs)."""
    def kernel(ctx, args):
        out = out_tensor(args)
        t = tensor(args[0], "self")
        check(is_float(out), f"{name}: out must be a float tensor, got {out.type_name}")
        check(t.dtype is not None and t.dtype.kind in "fiub", f"{name}: unsupported input {t.type_name}")
        x = t.array(ctx.bus)
        ct = np.float64 if x.dtype == np.float64 else np.float32
        with np.errstate(all="ignore"):
            r = fn(x.astype(ct)).astype(ct)
        return emit(ctx, out, r, name)
    return kernel


@kernel("aten::logit.out", "T,f?")
def logit(ctx, args):
    """``logit.out(self, eps?)``: the value cast to the out type, clamped to ``[eps, 1 - eps]`` (compared in double),
    ``log(x / (1 - x))`` in the out type."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    check(is_float(out), f"logit: out must be a float tensor, got {out.type_name}")
    check(t.dtype is not None and t.dtype.kind in "fiub", f"logit: unsupported input {t.type_name}")
    eps = args[1] if len(args) > 2 else None
    ct = float_ctype(out.dtype)
    x = t.array(ctx.bus).astype(ct)
    if eps is not None:
        e = float(eps)
        xd = x.astype(np.float64)
        x = np.where(xd < e, ct(e), np.where(xd > 1 - e, ct(1 - e), x)).astype(ct)
    with np.errstate(all="ignore"):
        r = np.log((x / (ct(1) - x)).astype(ct)).astype(ct)
    return emit(ctx, out, r, "logit")


register(
    ("aten::tanh.out", "T", unary_out_dtype("tanh", np.tanh)),
    ("aten::exp.out", "T", unary_out_dtype("exp", np.exp)),
    ("aten::neg.out", "T", unary_out_dtype("neg", np.negative)),
    ("aten::abs.out", "T", unary_out_dtype("abs", np.abs)),
    ("aten::sqrt.out", "T", unary_out_dtype("sqrt", np.sqrt)),
    ("aten::rsqrt.out", "T", unary_out_dtype("rsqrt", lambda x: (np.float32(1) / np.sqrt(x)).astype(x.dtype))),
    ("aten::reciprocal.out", "T", _unary_math("reciprocal", lambda x: (np.float32(1) / x).astype(np.float32))),
    ("aten::log.out", "T", _unary_math("log", _f(np.log))),
    ("aten::log1p.out", "T", _unary_math("log", _f(np.log1p))),
    ("aten::log2.out", "T", _unary_math("log", _f(np.log2))),
    ("aten::log10.out", "T", _unary_math("log", _f(np.log10))),
    ("aten::expm1.out", "T", _unary_math("exp", _f(np.expm1))),
    ("aten::erf.out", "T", _unary_math("erf", lambda x: erf(x).astype(np.float32))),
    ("aten::sin.out", "T", _unary_math("sin", _f(np.sin))),
    ("aten::cos.out", "T", _unary_math("cos", _f(np.cos))),
    ("aten::tan.out", "T", _unary_math("tan", _f(np.tan))),
    ("aten::asin.out", "T", _unary_math("asin", _f(np.arcsin))),
    ("aten::acos.out", "T", _unary_math("acos", _f(np.arccos))),
    ("aten::atan.out", "T", _unary_math("atan", _f(np.arctan))),
    ("aten::sinh.out", "T", _unary_math("sinh", _f(np.sinh))),
    ("aten::cosh.out", "T", _unary_math("cosh", _f(np.cosh))),
    ("aten::floor.out", "T", _unary_math("floor", np.floor, float_only=False)),
    ("aten::ceil.out", "T", _unary_math("ceil", np.ceil, float_only=False)),
    ("aten::round.out", "T", _unary_math("round", _round_half_even, float_only=False)),
    ("aten::trunc.out", "T", _unary_math("trunc", np.trunc, float_only=False)),
    ("aten::sign.out", "T", _unary_math("sign", np.sign, float_only=False)),
    ("aten::isnan.out", "T", _unary_math("isnan", np.isnan, float_only=False)),
    ("aten::isinf.out", "T", _unary_math("isinf", np.isinf, float_only=False)),
    ("aten::acosh.out", "T", _unary_real_to_float("acosh", np.arccosh)),
    ("aten::asinh.out", "T", _unary_real_to_float("asinh", np.arcsinh)),
    ("aten::atanh.out", "T", _unary_real_to_float("atanh", np.arctanh)),
)
