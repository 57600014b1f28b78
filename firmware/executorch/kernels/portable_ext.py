"""More portable ``aten::*.out`` kernels: the operators float (``--no_quantize``) programs and the CPU islands
between delegates of quantized programs use beyond the basic set of :mod:`.portable` / :mod:`.portable_nn`.

Elementwise math, scalar and comparison variants, reductions (``amax``/``amin``/``argmax``/``argmin``/``any``/
``all``/``var``/``cumsum``), normalisations (``native_layer_norm``, ``native_group_norm``), creation ops
(``full``/``full_like``/``arange``/``scalar_tensor``), indexing (``index``/``index_select``/``gather``/
``embedding``/``where``/``masked_fill``) and data movement (``repeat``/``flip``/``roll``/``pixel_shuffle``/
``transpose``/``*_scatter``/reflection and replication padding/``topk``/``sort``).

Float arithmetic is float32 like the C++ kernels (``CTYPE`` float): results agree with ExecuTorch's portable
library up to the last bits of transcendental functions and summation order, inside the runner's BundleIO
tolerance. Integer and boolean results are exact. Argument lists are the instruction's values (``out`` last;
schema arguments first, in order).
"""

from __future__ import annotations

import math

import numpy as np

from ..error import Error, RuntimeFailure
from ..method import RtTensor
from ._util import dim_index as _dim
from ._util import out_tensor, tensor, write_out
from ._util import tensor_list as _tensor_list
from .portable import _arr, _scalar


def _fdt(out: RtTensor):
    """The compute type for an output: float32 for float outputs, the out type otherwise."""
    if out.dtype is None:
        raise RuntimeFailure(Error.NotSupported, f"ScalarType {out.type_name} is not supported")
    return np.float32 if out.dtype.kind == "f" else out.dtype


def _val(ctx, v, dtype=None):
    """A tensor or scalar operand as an array (``dtype`` applied when given)."""
    if isinstance(v, RtTensor):
        a = v.array(ctx.bus)
    else:
        a = np.asarray(_scalar(v))
        if a.dtype == np.float64:
            a = a.astype(np.float32)
    return a.astype(dtype, copy=False) if dtype is not None else a


def _common(a: np.ndarray, b: np.ndarray):
    """PyTorch type promotion for two operands (tensors before scalars, float32 for floats)."""
    fa, fb = a.dtype.kind == "f", b.dtype.kind == "f"
    if fa or fb:
        return np.float32
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        return np.bool_
    if a.ndim == 0 and b.ndim > 0:
        return b.dtype
    if b.ndim == 0 and a.ndim > 0:
        return a.dtype
    return np.promote_types(a.dtype, b.dtype)


def _dims(ctx, v, ndim: int, what: str) -> tuple:
    """An optional ``int[]`` of dimensions (None or empty: all)."""
    ds = ctx.int_list(v) if v is not None else []
    if not ds:
        return tuple(range(ndim))
    return tuple(sorted({_dim(d, ndim, what) for d in ds}))


def _store(ctx, out: RtTensor, values, kernel: str) -> RtTensor:
    values = np.asarray(values)
    if values.size == out.numel and values.shape != tuple(out.sizes):
        values = values.reshape(out.sizes)
    elif values.shape != tuple(out.sizes):
        values = np.broadcast_to(values, out.sizes)
    write_out(ctx, out, values, kernel)
    return out


# ================================================================================== elementwise
def _unary(name, fn, float_only=True):
    def kernel(ctx, args):
        out = out_tensor(args)
        x = _arr(ctx, args[0])
        if float_only or x.dtype.kind == "f":
            x = x.astype(np.float32, copy=False)
        return _store(ctx, out, fn(x), name)
    return kernel


def _erf(x: np.ndarray) -> np.ndarray:
    f = np.frompyfunc(math.erf, 1, 1)
    return f(x.astype(np.float64)).astype(np.float64)


def gelu(ctx, args):
    """``gelu.out(self, approximate="none")``: ``0.5 x (1 + erf(x / sqrt 2))`` or the tanh approximation."""
    out = out_tensor(args)
    x = _arr(ctx, args[0]).astype(np.float32, copy=False)
    approx = args[1] if len(args) > 2 and isinstance(args[1], str) else "none"
    if approx == "tanh":
        k = np.float32(math.sqrt(2.0 / math.pi))
        inner = (k * (x + np.float32(0.044715) * x * x * x)).astype(np.float32)
        r = np.float32(0.5) * x * (np.float32(1) + np.tanh(inner))
    elif approx == "none":
        r = np.float32(0.5) * x * (np.float32(1) + _erf(x * np.float32(math.sqrt(0.5))).astype(np.float32))
    else:
        raise RuntimeFailure(Error.InvalidArgument, f"gelu: approximate={approx!r}")
    return _store(ctx, out, r.astype(np.float32), "gelu")


def elu(ctx, args):
    """``elu.out(self, alpha, scale, input_scale)``: ``x > 0 ? x * scale : expm1(x * input_scale) * alpha * scale``."""
    out = out_tensor(args)
    x = _arr(ctx, args[0]).astype(np.float32, copy=False)
    alpha = np.float32(_scalar(args[1], 1.0))
    scale = np.float32(_scalar(args[2], 1.0)) if len(args) > 4 else np.float32(1)
    iscale = np.float32(_scalar(args[3], 1.0)) if len(args) > 5 else np.float32(1)
    neg = (np.expm1(x * iscale) * (alpha * scale)).astype(np.float32)
    return _store(ctx, out, np.where(x > 0, x * scale, neg).astype(np.float32), "elu")


def hardsigmoid(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0]).astype(np.float32, copy=False)
    r = np.minimum(np.maximum(x + np.float32(3), np.float32(0)), np.float32(6)) / np.float32(6)
    return _store(ctx, out, r.astype(np.float32), "hardsigmoid")


def silu(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0]).astype(np.float32, copy=False)
    return _store(ctx, out, (x / (np.float32(1) + np.exp(-x))).astype(np.float32), "silu")


def softplus(ctx, args):
    """``softplus.out(self, beta, threshold)``."""
    out = out_tensor(args)
    x = _arr(ctx, args[0]).astype(np.float32, copy=False)
    beta = np.float32(_scalar(args[1], 1.0))
    th = np.float32(_scalar(args[2], 20.0))
    bx = x * beta
    r = np.where(bx > th, x, np.log1p(np.exp(bx)) / beta)
    return _store(ctx, out, r.astype(np.float32), "softplus")


def _round_half_even(x):
    return np.rint(x)


def _binary(name, fn, alpha_at=None, reverse=False, float_result=False):
    """A binary ``self op other`` kernel (tensor or scalar operands, broadcasting)."""
    def kernel(ctx, args):
        out = out_tensor(args)
        a = _val(ctx, args[0])
        b = _val(ctx, args[1])
        dt = np.float32 if float_result else _common(a, b)
        if out.dtype is not None and out.dtype.kind == "f":
            dt = np.float32
        a = a.astype(dt, copy=False)
        b = b.astype(dt, copy=False)
        if alpha_at is not None and len(args) > alpha_at + 1:
            alpha = _scalar(args[alpha_at], 1)
            if alpha != 1:
                b = (np.asarray(alpha).astype(dt) * b).astype(dt)
        r = fn(b, a) if reverse else fn(a, b)
        return _store(ctx, out, np.asarray(r), name)
    return kernel


def rsub(ctx, args):
    """``rsub.Scalar_out(self, other, alpha)``: ``other - alpha * self``."""
    out = out_tensor(args)
    a = _val(ctx, args[0])
    b = _val(ctx, args[1])
    dt = np.float32 if out.dtype.kind == "f" else _common(a, b)
    a = a.astype(dt, copy=False)
    alpha = _scalar(args[2], 1) if len(args) > 3 else 1
    if alpha != 1:
        a = (np.asarray(alpha).astype(dt) * a).astype(dt)
    return _store(ctx, out, b.astype(dt) - a, "sub")


def _py_remainder(a, b):
    if a.dtype.kind == "f":
        return (a - np.floor(a / b) * b).astype(a.dtype)
    return np.remainder(a, b)


def _floor_divide(a, b):
    if a.dtype.kind == "f":
        return np.floor(a / b).astype(a.dtype)
    return np.floor_divide(a, b)


def div_mode(ctx, args):
    """``div.out_mode`` / ``div.Scalar_mode_out(self, other, *, rounding_mode)``: true division in float32,
    then ``trunc`` / ``floor``; integer outputs for integer operands with a rounding mode."""
    out = out_tensor(args)
    a = _val(ctx, args[0])
    b = _val(ctx, args[1])
    mode = args[2] if len(args) > 3 else None
    if mode is None:
        r = a.astype(np.float32) / b.astype(np.float32)
    elif a.dtype.kind == "f" or b.dtype.kind == "f" or out.dtype.kind == "f":
        q = a.astype(np.float32) / b.astype(np.float32)
        r = np.trunc(q) if mode == "trunc" else np.floor(q)
    else:
        ai, bi = a.astype(np.int64), b.astype(np.int64)
        if np.any(bi == 0):
            raise RuntimeFailure(Error.InvalidArgument, "div: integer division by zero")
        r = np.floor_divide(ai, bi) if mode == "floor" else np.trunc(ai / bi).astype(np.int64)
    return _store(ctx, out, r, "div")


def _compare(name, fn):
    def kernel(ctx, args):
        out = out_tensor(args)
        a = _val(ctx, args[0])
        b = _val(ctx, args[1])
        dt = _common(a, b)
        return _store(ctx, out, fn(a.astype(dt, copy=False), b.astype(dt, copy=False)), name)
    return kernel


def _logical(name, fn):
    def kernel(ctx, args):
        out = out_tensor(args)
        a = _val(ctx, args[0]).astype(bool)
        b = _val(ctx, args[1]).astype(bool)
        return _store(ctx, out, fn(a, b), name)
    return kernel


def logical_not(ctx, args):
    out = out_tensor(args)
    return _store(ctx, out, np.logical_not(_arr(ctx, args[0]).astype(bool)), "logical_not")


def bitwise_not(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    return _store(ctx, out, np.logical_not(x) if x.dtype == np.bool_ else np.invert(x), "bitwise_not")


def _shift(name, left: bool):
    """``bitwise_{left,right}_shift.Tensor_out`` / ``.Tensor_Scalar_out`` (pattern/bitwise_op.h):
    ``static_cast<T>(a << b)`` / ``(a >> b)`` in the common integer type ``T`` (arithmetic right shift; types
    narrower than int are shifted as int). Out-of-range amounts are undefined in C++: the Cortex-M register shift
    (the amount's low byte; 32 or more gives 0, or the sign for a right shift) is what the runtime does."""
    def kernel(ctx, args):
        out = out_tensor(args)
        a = _val(ctx, args[0])
        b = _val(ctx, args[1])
        dt = np.dtype(_common(a, b))
        if dt.kind not in "iub":
            raise RuntimeFailure(Error.InvalidArgument, f"{name}: integer or bool operands expected")
        x = a.astype(dt, copy=False).astype(np.int64)
        amt = b.astype(dt, copy=False).astype(np.int64) & 0xFF
        width = 64 if dt.itemsize == 8 else 32
        sh = np.minimum(amt, width - 1)
        if left:
            r = np.where(amt >= width, 0, np.left_shift(x, sh))
            if width == 32:
                r = ((r + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
        else:
            r = np.where(amt >= width, np.where(x < 0, -1, 0), np.right_shift(x, sh))
        return _store(ctx, out, r.astype(dt), name)
    return kernel


def where(ctx, args):
    """``where.self_out(condition, self, other)``."""
    out = out_tensor(args)
    c = _arr(ctx, args[0], "condition").astype(bool)
    a = _val(ctx, args[1])
    b = _val(ctx, args[2])
    dt = _fdt(out)
    return _store(ctx, out, np.where(c, a.astype(dt), b.astype(dt)), "where")


def masked_fill(ctx, args):
    """``masked_fill.Scalar_out(self, mask, value)``."""
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    m = _arr(ctx, args[1], "mask").astype(bool)
    v = np.asarray(_scalar(args[2])).astype(x.dtype)
    return _store(ctx, out, np.where(m, v, x), "masked_fill")


def clamp_tensor(ctx, args):
    """``clamp.Tensor_out(self, min?, max?)``."""
    out = out_tensor(args)
    dt = _fdt(out)
    x = _arr(ctx, args[0]).astype(dt)
    if args[1] is not None:
        x = np.maximum(x, _val(ctx, args[1], dt))
    if args[2] is not None:
        x = np.minimum(x, _val(ctx, args[2], dt))
    return _store(ctx, out, x, "clamp")


# ================================================================================== reductions
def _reduce(name, fn, with_dims=True):
    """``amax.out(self, dim[], keepdim)`` style reductions over a dimension list."""
    def kernel(ctx, args):
        out = out_tensor(args)
        x = _arr(ctx, args[0])
        dims = _dims(ctx, args[1], x.ndim, name) if with_dims else tuple(range(x.ndim))
        keep = bool(args[2]) if with_dims and len(args) > 3 and isinstance(args[2], bool) else False
        if x.ndim == 0:
            return _store(ctx, out, fn(x, None), name)
        r = fn(x, dims)
        if keep:
            r = np.expand_dims(r, dims)
        return _store(ctx, out, r, name)
    return kernel


def _arg_reduce(name, fn):
    """``argmax.out(self, dim?, keepdim)``: the first index of the extreme value (NaN counts as extreme)."""
    def kernel(ctx, args):
        out = out_tensor(args)
        x = _arr(ctx, args[0])
        dim = args[1]
        keep = bool(args[2]) if len(args) > 3 else False
        if dim is None:
            r = np.asarray(fn(x.reshape(-1)), np.int64)
            if keep:
                r = r.reshape((1,) * x.ndim)
        else:
            d = _dim(dim, x.ndim, name)
            r = fn(x, axis=d).astype(np.int64) if x.ndim else np.zeros((), np.int64)
            if keep and x.ndim:
                r = np.expand_dims(r, d)
        return _store(ctx, out, r, name)
    return kernel


def _nan_argmax(x, axis=None):
    if x.dtype.kind == "f" and np.isnan(x).any():
        return np.argmax(np.isnan(x), axis=axis)
    return np.argmax(x, axis=axis)


def _nan_argmin(x, axis=None):
    if x.dtype.kind == "f" and np.isnan(x).any():
        return np.argmax(np.isnan(x), axis=axis)
    return np.argmin(x, axis=axis)


def _max_min_dim(name, vfn, ifn):
    """``max.dim_max(self, dim, keepdim, *, max, max_values)``: values and indices."""
    def kernel(ctx, args):
        x = _arr(ctx, args[0])
        d = _dim(args[1], x.ndim, name)
        keep = bool(args[2])
        vals_t = tensor(args[3], "max")
        idx_t = tensor(args[4], "indices")
        v = vfn(x, axis=d)
        i = ifn(x, axis=d).astype(np.int64)
        if keep:
            v, i = np.expand_dims(v, d), np.expand_dims(i, d)
        _store(ctx, vals_t, v, name)
        _store(ctx, idx_t, i, name)
        return None
    return kernel


def any_all(name, fn):
    """``any.out(self, dim, keepdim)``, ``any.dims_out(self, dim[]?, keepdim)``, ``any.all_out(self)``."""
    def kernel(ctx, args):
        out = out_tensor(args)
        x = _arr(ctx, args[0]).astype(bool)
        if len(args) <= 2:
            return _store(ctx, out, fn(x), name)
        v = args[1]
        if isinstance(v, int) and not isinstance(v, bool):
            dims = (_dim(v, x.ndim, name),)
        else:
            dims = _dims(ctx, v, x.ndim, name)
        keep = bool(args[2]) if len(args) > 3 else False
        r = fn(x, axis=dims) if x.ndim else fn(x)
        if keep and x.ndim:
            r = np.expand_dims(r, dims)
        return _store(ctx, out, r, name)
    return kernel


def var_correction(ctx, args):
    """``var.correction_out(self, dim?, *, correction?, keepdim)``: float32 mean, then the sum of squared
    deviations divided by ``N - correction``."""
    out = out_tensor(args)
    x = _arr(ctx, args[0]).astype(np.float32)
    dims = _dims(ctx, args[1], x.ndim, "var")
    corr = _scalar(args[2], 1) if len(args) > 4 else 1
    keep = bool(args[3]) if len(args) > 4 else False
    n = math.prod(x.shape[d] for d in dims) if x.ndim else 1
    mean = (x.sum(axis=dims, keepdims=True, dtype=np.float32) / np.float32(n)).astype(np.float32)
    ss = ((x - mean) ** 2).sum(axis=dims, keepdims=keep, dtype=np.float32)
    den = max(n - corr, 0)
    r = ss / np.float32(den) if den > 0 else np.full(ss.shape, np.nan, np.float32)
    return _store(ctx, out, r.astype(np.float32), "var")


def cumsum(ctx, args):
    """``cumsum.out(self, dim, *, dtype?)``: sequential running sum in the output type."""
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    d = _dim(args[1], x.ndim, "cumsum") if x.ndim else 0
    dt = _fdt(out) if out.dtype.kind == "f" else np.int64
    if x.ndim == 0:
        return _store(ctx, out, x.astype(dt), "cumsum")
    return _store(ctx, out, np.cumsum(x.astype(dt), axis=d, dtype=dt), "cumsum")


def prod(ctx, args):
    """``prod.int_out(self, dim, keepdim, *, dtype?)`` / ``prod.out(self, *, dtype?)``."""
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    dt = _fdt(out) if out.dtype.kind == "f" else np.int64
    if len(args) > 3 and isinstance(args[1], int) and not isinstance(args[1], bool):
        d = _dim(args[1], x.ndim, "prod")
        r = np.prod(x.astype(dt), axis=d, dtype=dt, keepdims=bool(args[2]))
    else:
        r = np.prod(x.astype(dt), dtype=dt)
    return _store(ctx, out, r, "prod")


# ================================================================================== normalisation
def native_layer_norm(ctx, args):
    """``native_layer_norm.out(input, normalized_shape, weight?, bias?, eps, *, out, mean_out, rstd_out)``:
    per row of the normalised trailing dims, ``mean = sum / n``, ``var = sum(x^2) / n - mean^2``,
    ``y = (x - mean) / sqrt(var + eps) * w + b`` in float32; mean and ``1 / std`` in the other outputs."""
    x = _arr(ctx, args[0], "input").astype(np.float32)
    shape = ctx.int_list(args[1])
    k = len(shape)
    if k == 0 or tuple(x.shape[x.ndim - k:]) != tuple(shape):
        raise RuntimeFailure(Error.InvalidArgument, f"native_layer_norm: normalized_shape {shape} for {x.shape}")
    w = _arr(ctx, args[2], "weight").astype(np.float32) if args[2] is not None else None
    b = _arr(ctx, args[3], "bias").astype(np.float32) if args[3] is not None else None
    eps = np.float32(_scalar(args[4], 1e-5))
    out, mean_t, rstd_t = tensor(args[5], "out"), tensor(args[6], "mean_out"), tensor(args[7], "rstd_out")
    n = math.prod(shape)
    rows = x.reshape(-1, n)
    s = np.zeros(rows.shape[0], np.float32)
    sq = np.zeros(rows.shape[0], np.float32)
    for j in range(n):  # sequential float32 sums, as reduce_add / vec_powerf
        s = (s + rows[:, j]).astype(np.float32)
        sq = (sq + rows[:, j] * rows[:, j]).astype(np.float32)
    mean = (s / np.float32(n)).astype(np.float32)
    var = (sq / np.float32(n) - mean * mean).astype(np.float32)
    std = np.sqrt(var + eps).astype(np.float32)
    y = ((rows - mean[:, None]) / std[:, None]).astype(np.float32)
    if w is not None:
        y = (y * w.reshape(1, n)).astype(np.float32)
    if b is not None:
        y = (y + b.reshape(1, n)).astype(np.float32)
    _store(ctx, out, y.reshape(x.shape), "layer_norm")
    if mean_t.numel == mean.size:
        _store(ctx, mean_t, mean, "layer_norm")
    if rstd_t.numel == std.size:
        _store(ctx, rstd_t, (np.float32(1) / std).astype(np.float32), "layer_norm")
    return None


def native_group_norm(ctx, args):
    """``native_group_norm.out(input, weight?, bias?, N, C, HxW, group, eps, *, out0, out1, out2)``."""
    x = _arr(ctx, args[0], "input").astype(np.float32)
    w = _arr(ctx, args[1], "weight").astype(np.float32) if args[1] is not None else None
    b = _arr(ctx, args[2], "bias").astype(np.float32) if args[2] is not None else None
    n, c, hw, g = int(args[3]), int(args[4]), int(args[5]), int(args[6])
    eps = np.float32(_scalar(args[7], 1e-5))
    out, mean_t, rstd_t = tensor(args[8], "out0"), tensor(args[9], "out1"), tensor(args[10], "out2")
    if g <= 0 or c % g or x.size != n * c * hw:
        raise RuntimeFailure(Error.InvalidArgument, "native_group_norm: bad N/C/HxW/group")
    xg = x.reshape(n, g, (c // g) * hw)
    mean = (xg.sum(axis=2, dtype=np.float32) / np.float32(xg.shape[2])).astype(np.float32)
    var = (((xg - mean[..., None]) ** 2).sum(axis=2, dtype=np.float32) / np.float32(xg.shape[2])).astype(np.float32)
    rstd = (np.float32(1) / np.sqrt(var + eps)).astype(np.float32)
    y = ((xg - mean[..., None]) * rstd[..., None]).reshape(n, c, hw)
    if w is not None:
        y = y * w.reshape(1, c, 1)
    if b is not None:
        y = y + b.reshape(1, c, 1)
    _store(ctx, out, y.astype(np.float32).reshape(x.shape), "group_norm")
    _store(ctx, mean_t, mean, "group_norm")
    _store(ctx, rstd_t, rstd, "group_norm")
    return None


# ================================================================================== creation
def full(ctx, args):
    """``full.out(size, fill_value)``."""
    out = out_tensor(args)
    return _store(ctx, out, np.full(out.sizes, _scalar(args[1])).astype(out.dtype), "fill")


def full_like(ctx, args):
    """``full_like.out(self, fill_value, *, memory_format?)``."""
    out = out_tensor(args)
    return _store(ctx, out, np.full(out.sizes, _scalar(args[1])).astype(out.dtype), "fill")


def fill_scalar(ctx, args):
    """``fill.Scalar_out(self, value)``."""
    out = out_tensor(args)
    return _store(ctx, out, np.full(out.sizes, _scalar(args[1])).astype(out.dtype), "fill")


def scalar_tensor(ctx, args):
    out = out_tensor(args)
    return _store(ctx, out, np.asarray(_scalar(args[0])).astype(out.dtype), "fill")


def arange(ctx, args):
    """``arange.out(end)`` / ``arange.start_out(start, end, step)``: ``start + i * step`` in the out type."""
    out = out_tensor(args)
    if len(args) >= 5:
        start, step = _scalar(args[0], 0), _scalar(args[2], 1)
    else:
        start, step = 0, 1
    i = np.arange(out.numel, dtype=np.float64 if out.dtype.kind == "f" else np.int64)
    r = start + i * step
    return _store(ctx, out, r.astype(out.dtype), "fill")


# ================================================================================== indexing and movement
def index_tensor(ctx, args):
    """``index.Tensor_out(self, indices: Tensor?[])``: advanced indexing with long/int or bool index tensors."""
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    idx = []
    for t in _tensor_list(ctx, args[1], "indices"):
        if t is None:
            idx.append(slice(None))
        else:
            a = t.array(ctx.bus)
            idx.append(a.astype(bool) if a.dtype == np.bool_ else a.astype(np.int64))
    return _store(ctx, out, x[tuple(idx)], "index")


def index_select(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    d = _dim(args[1], x.ndim, "index_select")
    i = _arr(ctx, args[2], "index").astype(np.int64).reshape(-1)
    return _store(ctx, out, np.take(x, i, axis=d), "index")


def gather(ctx, args):
    """``gather.out(self, dim, index, *, sparse_grad)``."""
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    d = _dim(args[1], x.ndim, "gather")
    i = _arr(ctx, args[2], "index").astype(np.int64)
    return _store(ctx, out, np.take_along_axis(x[tuple(slice(0, s) if k != d else slice(None)
                                                        for k, s in enumerate(i.shape))], i, axis=d), "index")


def embedding(ctx, args):
    """``embedding.out(weight, indices, padding_idx, scale_grad_by_freq, sparse)``: rows of ``weight``."""
    out = out_tensor(args)
    w = _arr(ctx, args[0], "weight")
    i = _arr(ctx, args[1], "indices").astype(np.int64)
    if i.size and (i.min() < 0 or i.max() >= w.shape[0]):
        raise RuntimeFailure(Error.InvalidArgument, "embedding: index out of range")
    return _store(ctx, out, w[i], "index")


def repeat(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    reps = ctx.int_list(args[1])
    x = x.reshape((1,) * (len(reps) - x.ndim) + x.shape)
    return _store(ctx, out, np.tile(x, reps), "copy")


def flip(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    return _store(ctx, out, np.flip(x, axis=_dims(ctx, args[1], x.ndim, "flip")), "copy")


def roll(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    shifts = ctx.int_list(args[1])
    dims = ctx.int_list(args[2]) if args[2] is not None else []
    if not dims:
        return _store(ctx, out, np.roll(x.reshape(-1), shifts[0]).reshape(x.shape), "copy")
    return _store(ctx, out, np.roll(x, shifts, axis=[_dim(d, x.ndim, "roll") for d in dims]), "copy")


def pixel_shuffle(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    r = int(args[1])
    *lead, c, h, w = x.shape
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    nl = len(lead)
    y = y.transpose(*range(nl), nl, nl + 3, nl + 1, nl + 4, nl + 2)
    return _store(ctx, out, y.reshape(*lead, c // (r * r), h * r, w * r), "copy")


def pixel_unshuffle(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    r = int(args[1])
    *lead, c, h, w = x.shape
    nl = len(lead)
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    y = y.transpose(*range(nl), nl, nl + 2, nl + 4, nl + 1, nl + 3)
    return _store(ctx, out, y.reshape(*lead, c * r * r, h // r, w // r), "copy")


def transpose_copy(ctx, args):
    """``transpose_copy.int_out(self, dim0, dim1)``."""
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    if x.ndim < 2:
        return _store(ctx, out, x, "copy")
    return _store(ctx, out, np.swapaxes(x, _dim(args[1], x.ndim, "transpose"), _dim(args[2], x.ndim, "transpose")),
                  "copy")


def t_copy(ctx, args):
    out = out_tensor(args)
    x = _arr(ctx, args[0])
    return _store(ctx, out, x.T if x.ndim == 2 else x, "copy")


def alias_copy(ctx, args):
    out = out_tensor(args)
    return _store(ctx, out, _arr(ctx, args[0]), "copy")


def _slice_index(n, start, end, step):
    start = 0 if start is None else int(start)
    end = n if end is None else int(end)
    if start < 0:
        start += n
    if end < 0:
        end += n
    start = min(max(start, 0), n)
    end = min(max(end, start), n)
    return slice(start, end, int(step))


def slice_scatter(ctx, args):
    """``slice_scatter.out(self, src, dim, start?, end?, step)``."""
    out = out_tensor(args)
    x = _arr(ctx, args[0]).copy()
    src = _arr(ctx, args[1], "src")
    d = _dim(args[2], x.ndim, "slice_scatter")
    sl = [slice(None)] * x.ndim
    sl[d] = _slice_index(x.shape[d], args[3], args[4], args[5] if len(args) > 6 else 1)
    x[tuple(sl)] = src
    return _store(ctx, out, x, "copy")


def select_scatter(ctx, args):
    """``select_scatter.out(self, src, dim, index)``."""
    out = out_tensor(args)
    x = _arr(ctx, args[0]).copy()
    src = _arr(ctx, args[1], "src")
    d = _dim(args[2], x.ndim, "select_scatter")
    i = int(args[3])
    i = i + x.shape[d] if i < 0 else i
    sl = [slice(None)] * x.ndim
    sl[d] = i
    x[tuple(sl)] = src
    return _store(ctx, out, x, "copy")


def _pad_kernel(name, mode):
    """``reflection_pad{1,2,3}d.out(self, padding)`` / ``replication_pad*``: pad pairs from the last dim."""
    def kernel(ctx, args):
        out = out_tensor(args)
        x = _arr(ctx, args[0])
        pad = ctx.int_list(args[1])
        widths = [(0, 0)] * x.ndim
        for i in range(len(pad) // 2):
            widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
        return _store(ctx, out, np.pad(x, widths, mode=mode), "copy")
    return kernel


def topk(ctx, args):
    """``topk.values(self, k, dim, largest, sorted, *, values, indices)``: stable order for ties (lowest
    index first)."""
    x = _arr(ctx, args[0])
    k = int(args[1])
    d = _dim(args[2], x.ndim, "topk") if x.ndim else 0
    largest = bool(args[3])
    vals_t, idx_t = tensor(args[5], "values"), tensor(args[6], "indices")
    key = -x if largest and x.dtype.kind != "u" else x
    order = np.argsort(key, axis=d, kind="stable")
    if largest and x.dtype.kind == "u":
        order = np.flip(np.argsort(x, axis=d, kind="stable"), axis=d)
    idx = np.take(order, np.arange(k), axis=d)
    _store(ctx, vals_t, np.take_along_axis(x, idx, axis=d), "topk")
    _store(ctx, idx_t, idx.astype(np.int64), "topk")
    return None


def sort(ctx, args):
    """``sort.values(self, dim, descending, *, values, indices)`` (stable)."""
    x = _arr(ctx, args[0])
    d = _dim(args[1], x.ndim, "sort") if x.ndim else 0
    desc = bool(args[2])
    vals_t, idx_t = tensor(args[3], "values"), tensor(args[4], "indices")
    order = np.argsort(-x if desc and x.dtype.kind in "fi" else x, axis=d, kind="stable")
    _store(ctx, vals_t, np.take_along_axis(x, order, axis=d), "sort")
    _store(ctx, idx_t, order.astype(np.int64), "sort")
    return None


def _f(fn):
    return lambda x: fn(x).astype(x.dtype)


PORTABLE_EXT_KERNELS = {
    # unary math
    "aten::reciprocal.out": _unary("reciprocal", lambda x: (np.float32(1) / x).astype(np.float32)),
    "aten::log.out": _unary("log", _f(np.log)),
    "aten::log1p.out": _unary("log", _f(np.log1p)),
    "aten::log2.out": _unary("log", _f(np.log2)),
    "aten::log10.out": _unary("log", _f(np.log10)),
    "aten::expm1.out": _unary("exp", _f(np.expm1)),
    "aten::erf.out": _unary("erf", lambda x: _erf(x).astype(np.float32)),
    "aten::sin.out": _unary("sin", _f(np.sin)),
    "aten::cos.out": _unary("cos", _f(np.cos)),
    "aten::tan.out": _unary("tan", _f(np.tan)),
    "aten::asin.out": _unary("asin", _f(np.arcsin)),
    "aten::acos.out": _unary("acos", _f(np.arccos)),
    "aten::atan.out": _unary("atan", _f(np.arctan)),
    "aten::sinh.out": _unary("sinh", _f(np.sinh)),
    "aten::cosh.out": _unary("cosh", _f(np.cosh)),
    "aten::floor.out": _unary("floor", np.floor, float_only=False),
    "aten::ceil.out": _unary("ceil", np.ceil, float_only=False),
    "aten::round.out": _unary("round", _round_half_even, float_only=False),
    "aten::trunc.out": _unary("trunc", np.trunc, float_only=False),
    "aten::sign.out": _unary("sign", np.sign, float_only=False),
    "aten::isnan.out": _unary("isnan", np.isnan, float_only=False),
    "aten::isinf.out": _unary("isinf", np.isinf, float_only=False),
    "aten::gelu.out": gelu,
    "aten::elu.out": elu,
    "aten::hardsigmoid.out": hardsigmoid,
    "aten::silu.out": silu,
    "aten::softplus.out": softplus,
    "aten::logical_not.out": logical_not,
    "aten::bitwise_not.out": bitwise_not,
    # binary with scalars / modes
    "aten::add.Scalar_out": _binary("add", np.add, alpha_at=2),
    "aten::sub.Scalar_out": _binary("sub", np.subtract, alpha_at=2),
    "aten::rsub.Scalar_out": rsub,
    "aten::mul.Scalar_out": _binary("mul", np.multiply),
    "aten::div.Scalar_out": _binary("div", np.divide, float_result=True),
    "aten::div.out_mode": div_mode,
    "aten::div.Scalar_mode_out": div_mode,
    "aten::pow.Tensor_Scalar_out": _binary("pow", np.power),
    "aten::pow.Tensor_Tensor_out": _binary("pow", np.power),
    "aten::pow.Scalar_out": _binary("pow", np.power),
    "aten::remainder.Tensor_out": _binary("remainder", _py_remainder),
    "aten::remainder.Scalar_out": _binary("remainder", _py_remainder),
    "aten::fmod.Tensor_out": _binary("fmod", np.fmod),
    "aten::fmod.Scalar_out": _binary("fmod", np.fmod),
    "aten::floor_divide.out": _binary("div", _floor_divide),
    "aten::atan2.out": _binary("atan2", np.arctan2, float_result=True),
    "aten::clamp.Tensor_out": clamp_tensor,
    # comparisons and logic
    "aten::eq.Scalar_out": _compare("eq", np.equal),
    "aten::eq.Tensor_out": _compare("eq", np.equal),
    "aten::ne.Scalar_out": _compare("ne", np.not_equal),
    "aten::ne.Tensor_out": _compare("ne", np.not_equal),
    "aten::lt.Scalar_out": _compare("lt", np.less),
    "aten::lt.Tensor_out": _compare("lt", np.less),
    "aten::le.Scalar_out": _compare("le", np.less_equal),
    "aten::le.Tensor_out": _compare("le", np.less_equal),
    "aten::gt.Scalar_out": _compare("gt", np.greater),
    "aten::gt.Tensor_out": _compare("gt", np.greater),
    "aten::ge.Scalar_out": _compare("ge", np.greater_equal),
    "aten::ge.Tensor_out": _compare("ge", np.greater_equal),
    "aten::logical_and.out": _logical("logical_and", np.logical_and),
    "aten::logical_or.out": _logical("logical_or", np.logical_or),
    "aten::logical_xor.out": _logical("logical_xor", np.logical_xor),
    "aten::bitwise_and.Tensor_out": _compare("bitwise_and", np.bitwise_and),
    "aten::bitwise_or.Tensor_out": _compare("bitwise_or", np.bitwise_or),
    "aten::bitwise_xor.Tensor_out": _compare("bitwise_xor", np.bitwise_xor),
    "aten::bitwise_and.Scalar_out": _compare("bitwise_and", np.bitwise_and),
    "aten::bitwise_or.Scalar_out": _compare("bitwise_or", np.bitwise_or),
    "aten::bitwise_xor.Scalar_out": _compare("bitwise_xor", np.bitwise_xor),
    "aten::bitwise_left_shift.Tensor_out": _shift("bitwise_left_shift", left=True),
    "aten::bitwise_left_shift.Tensor_Scalar_out": _shift("bitwise_left_shift", left=True),
    "aten::bitwise_right_shift.Tensor_out": _shift("bitwise_right_shift", left=False),
    "aten::bitwise_right_shift.Tensor_Scalar_out": _shift("bitwise_right_shift", left=False),
    "aten::where.self_out": where,
    "aten::masked_fill.Scalar_out": masked_fill,
    # reductions
    "aten::amax.out": _reduce("amax", lambda x, d: np.max(x, axis=d)),
    "aten::amin.out": _reduce("amin", lambda x, d: np.min(x, axis=d)),
    "aten::argmax.out": _arg_reduce("argmax", _nan_argmax),
    "aten::argmin.out": _arg_reduce("argmin", _nan_argmin),
    "aten::max.dim_max": _max_min_dim("max", np.max, _nan_argmax),
    "aten::min.dim_min": _max_min_dim("min", np.min, _nan_argmin),
    "aten::any.out": any_all("any", np.any),
    "aten::any.dims_out": any_all("any", np.any),
    "aten::any.all_out": any_all("any", np.any),
    "aten::all.out": any_all("all", np.all),
    "aten::all.dims_out": any_all("all", np.all),
    "aten::all.all_out": any_all("all", np.all),
    "aten::var.correction_out": var_correction,
    "aten::cumsum.out": cumsum,
    "aten::prod.int_out": prod,
    "aten::prod.out": prod,
    # normalisation
    "aten::native_layer_norm.out": native_layer_norm,
    "aten::native_group_norm.out": native_group_norm,
    # creation
    "aten::full.out": full,
    "aten::full_like.out": full_like,
    "aten::fill.Scalar_out": fill_scalar,
    "aten::scalar_tensor.out": scalar_tensor,
    "aten::arange.out": arange,
    "aten::arange.start_out": arange,
    # indexing and data movement
    "aten::index.Tensor_out": index_tensor,
    "aten::index_select.out": index_select,
    "aten::gather.out": gather,
    "aten::embedding.out": embedding,
    "aten::repeat.out": repeat,
    "aten::flip.out": flip,
    "aten::roll.out": roll,
    "aten::pixel_shuffle.out": pixel_shuffle,
    "aten::pixel_unshuffle.out": pixel_unshuffle,
    "aten::transpose_copy.int_out": transpose_copy,
    "aten::t_copy.out": t_copy,
    "aten::alias_copy.out": alias_copy,
    "aten::slice_scatter.out": slice_scatter,
    "aten::select_scatter.out": select_scatter,
    "aten::reflection_pad1d.out": _pad_kernel("reflection_pad", "reflect"),
    "aten::reflection_pad2d.out": _pad_kernel("reflection_pad", "reflect"),
    "aten::reflection_pad3d.out": _pad_kernel("reflection_pad", "reflect"),
    "aten::replication_pad1d.out": _pad_kernel("replication_pad", "edge"),
    "aten::replication_pad2d.out": _pad_kernel("replication_pad", "edge"),
    "aten::replication_pad3d.out": _pad_kernel("replication_pad", "edge"),
    "aten::topk.values": topk,
    "aten::sort.values": sort,
}
