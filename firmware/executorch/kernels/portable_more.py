"""The rest of ExecuTorch's portable ``aten::*.out`` operators that exported PyTorch models leave on the CPU,
beyond :mod:`.portable`, :mod:`.portable_nn` and :mod:`.portable_ext`.

Float math (``acosh``/``asinh``/``atanh``, ``logit``, ``glu``), reductions (``var.out``, ``var_mean``,
``max``/``min`` over everything, ``mean.dtype_out``), creation (``ones``/``zeros``/``empty``/``fill.Tensor``),
copies and views (``copy``/``copy_``, ``detach_copy``, ``lift_fresh_copy``, ``narrow_copy``, ``diagonal_copy``,
``unfold_copy``, ``as_strided_copy``, ``tril``, ``view_as_real_copy``, ``_conj_physical``), scatters and masks
(``scatter.src``/``scatter.value``/``scatter_add``, ``index_put``/``index_put_``, ``masked_scatter``,
``masked_select``, ``nonzero``, ``repeat_interleave.Tensor``), ``native_dropout``, distances (``_cdist_forward``,
``_pdist_forward``) and resampling (``_adaptive_avg_pool2d``, ``grid_sampler_2d``, ``_upsample_bilinear2d_aa``).

Each kernel follows its ``kernels/portable/cpu/op_*.cpp``: the dtypes it accepts, its argument checks (failing
with InvalidArgument like ``ET_KERNEL_CHECK``) and its arithmetic: float32 (``float`` CTYPE) where the C++
computes in float, sequential float32 sums in the C++ loop order (``np.cumsum`` is strictly sequential), element
order of scatters (the last write wins, ``scatter_add``/``index_put(accumulate)`` add in index order).

Outputs are written with ``resize_tensor`` semantics: a static out tensor must already have the result's sizes;
a ``DYNAMIC_BOUND`` out (``nonzero``, ``masked_select`` with an upper bound) is resized in place when the
result's rank matches and it fits the planned capacity.
"""

from __future__ import annotations

import math

import numpy as np

from ..error import Error, RuntimeFailure
from ..method import RtTensor
from ._util import dim_index as _dim
from ._util import out_tensor, tensor
from ._util import tensor_list as _tensor_list
from .portable import _scalar

_STATIC, _DYNAMIC_BOUND = 0, 1


# ================================================================================== helpers
def _fail(msg: str):
    raise RuntimeFailure(Error.InvalidArgument, msg)


def _check(cond, msg: str) -> None:
    if not cond:
        _fail(msg)


def _is_float(t: RtTensor) -> bool:
    return t.dtype is not None and t.dtype.kind == "f"


def _ftype(dtype) -> type:
    """The C++ compute type for a float tensor type: double for Double, float for Float/Half."""
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


def _default_order(t: RtTensor) -> bool:
    return tuple(t.dim_order) == tuple(range(len(t.sizes)))


def _dynamism(ctx, out: RtTensor):
    """(shape dynamism, planned element capacity) of ``out`` from the program, STATIC when unknown."""
    method = ctx.method
    plan = getattr(method, "plan", None)
    if plan is None:
        return _STATIC, out.numel
    for i, v in enumerate(method.values):
        if v is out:
            meta = plan.values[i].value
            return getattr(meta, "shape_dynamism", _STATIC), math.prod(meta.sizes)
    return _STATIC, out.numel


def _resize(ctx, out: RtTensor, shape, what: str) -> None:
    """``resize_tensor(out, shape)``: a static tensor must have these sizes already; a bounded dynamic one takes
    them if the rank matches and the elements fit its planned capacity."""
    shape = tuple(int(s) for s in shape)
    if shape == tuple(out.sizes):
        return
    dyn, cap = _dynamism(ctx, out)
    if dyn == _STATIC or len(shape) != len(out.sizes) or (dyn == _DYNAMIC_BOUND and math.prod(shape) > cap):
        _fail(f"{what}: cannot resize out {list(out.sizes)} to {list(shape)}")
    out.sizes = shape
    out.numel = math.prod(shape)
    out.nbytes = out.numel * out.elem_size


def _emit(ctx, out: RtTensor, values, kernel: str, work: int | None = None) -> RtTensor:
    """Resize ``out`` to ``values``' shape, store them in out's type and charge the work."""
    values = np.asarray(values)
    _resize(ctx, out, values.shape, kernel)
    dst = out.array(ctx.bus)
    dst[...] = values.astype(dst.dtype, copy=False)
    ctx.bus.work(f"kernel.{kernel}", out.numel if work is None else work)
    return out


def _seqsum(x: np.ndarray, dt) -> np.ndarray:
    """Sum over the last axis one element after another in ``dt`` (the C++ accumulation loop)."""
    if x.shape[-1] == 0:
        return np.zeros(x.shape[:-1], dt)
    return np.cumsum(x.astype(dt, copy=False), axis=-1, dtype=dt)[..., -1]


def _reduce_layout(x: np.ndarray, dims: tuple):
    """``x`` with the reduced dims moved last and merged (row-major over them), and the kept shape."""
    kept = [i for i in range(x.ndim) if i not in dims]
    n = math.prod(x.shape[d] for d in dims)
    xm = np.transpose(x, kept + list(dims)).reshape([x.shape[i] for i in kept] + [n])
    return xm, n


def _dim_list(ctx, v, ndim: int, what: str) -> tuple:
    """An ``int[]?`` dim list as check_dim_list_is_valid takes it (None or empty: every dim)."""
    ds = ctx.int_list(v) if v is not None else []
    if not ds:
        return tuple(range(ndim))
    norm = [_dim(d, ndim, what) for d in ds]
    _check(len(set(norm)) == len(norm), f"{what}: dim list {ds} has duplicates")
    return tuple(sorted(norm)) if ndim else ()


def _reduced_shape(shape, dims, keep):
    if keep:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _fits(value, dtype) -> bool:
    """``check_overflow_scalar_cast``: does the scalar convert to ``dtype`` without overflow (c10::overflows)?"""
    dt = np.dtype(dtype)
    if dt == np.bool_ or isinstance(value, bool):
        return True
    if dt.kind == "f":
        v = float(value)
        return math.isinf(v) or math.isnan(v) or abs(v) <= float(np.finfo(dt).max)
    info = np.iinfo(dt)
    if isinstance(value, float):
        return not math.isnan(value) and info.min <= value <= info.max
    v = int(value)
    if dt.kind == "u" and v < 0:  # negative values wrap into unsigned types (two's complement)
        return -v <= info.max
    return info.min <= v <= info.max


def _can_cast(src, dst) -> bool:
    """c10::canCast: no float to integral/bool, no non-bool to bool, no complex to non-complex."""
    s, d = np.dtype(src), np.dtype(dst)
    if s.kind == "c" and d.kind != "c":
        return False
    if s.kind == "f" and d.kind in "iub":
        return False
    return not (s.kind != "b" and d.kind == "b")


# ================================================================================== float elementwise
def _float_unary(name, fn):
    """unary_ufunc_realhbbf16_to_floathbf16: any real or bool input, a float out, ``fn`` in float (double for
    double inputs)."""
    def kernel(ctx, args):
        out = out_tensor(args)
        t = tensor(args[0], "self")
        _check(_is_float(out), f"{name}: out must be a float tensor, got {out.type_name}")
        _check(t.dtype is not None and t.dtype.kind in "fiub", f"{name}: unsupported input {t.type_name}")
        x = t.array(ctx.bus)
        ct = np.float64 if x.dtype == np.float64 else np.float32
        with np.errstate(all="ignore"):
            r = fn(x.astype(ct)).astype(ct)
        return _emit(ctx, out, r, name)
    return kernel


def logit(ctx, args):
    """``logit.out(self, eps?)``: the value cast to the out type, clamped to ``[eps, 1 - eps]`` (compared in double),
    ``log(x / (1 - x))`` in the out type."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    _check(_is_float(out), f"logit: out must be a float tensor, got {out.type_name}")
    _check(t.dtype is not None and t.dtype.kind in "fiub", f"logit: unsupported input {t.type_name}")
    eps = args[1] if len(args) > 2 else None
    ct = _ftype(out.dtype)
    x = t.array(ctx.bus).astype(ct)
    if eps is not None:
        e = float(eps)
        xd = x.astype(np.float64)
        x = np.where(xd < e, ct(e), np.where(xd > 1 - e, ct(1 - e), x)).astype(ct)
    with np.errstate(all="ignore"):
        r = np.log((x / (ct(1) - x)).astype(ct)).astype(ct)
    return _emit(ctx, out, r, "logit")


def glu(ctx, args):
    """``glu.out(self, dim)``: ``a * (1 / (1 + exp(-b)))`` of the two halves along ``dim``, in the input's float
    type (float for Half)."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    d = _dim(args[1], len(t.sizes), "glu")
    _check(_is_float(t) and _is_float(out), "glu: input and out must be float tensors")
    x = t.array(ctx.bus)
    _check(x.ndim > 0 and x.shape[d] % 2 == 0, f"glu: halving dimension {d} must be even")
    ct = _ftype(x.dtype)
    h = x.shape[d] // 2
    a = np.take(x, np.arange(h), axis=d).astype(ct)
    b = np.take(x, np.arange(h, 2 * h), axis=d).astype(ct)
    want = x.shape[:d] + (h,) + x.shape[d + 1:]
    _check(len(out.sizes) == x.ndim, f"glu: out has rank {len(out.sizes)}, the input {x.ndim}")
    with np.errstate(all="ignore"):
        r = (a * (ct(1) / (ct(1) + np.exp(-b)))).astype(ct)
    return _emit(ctx, out, r.reshape(want), "glu")


# ================================================================================== reductions
def _variance(ctx, name, x_t, out_t, dims_v, denom_fn, keep, mean_t=None):
    x = x_t.array(ctx.bus)
    dims = _dim_list(ctx, dims_v, x.ndim, name)
    shape = _reduced_shape(x.shape, dims, keep)
    ct = _ftype(out_t.dtype)
    xm, n = _reduce_layout(x, dims) if x.ndim else (x.reshape(1, 1), 1)
    den = denom_fn(n)
    if n == 0 or den <= 0:
        var = np.full(xm.shape[:-1], np.nan, ct)
        mean = np.full(xm.shape[:-1], np.nan, ct)
    else:
        xf = xm.astype(ct)
        mean = (_seqsum(xf, ct) / ct(n)).astype(ct)
        dev = (xf - mean[..., None]).astype(ct)
        s2 = _seqsum((dev * dev).astype(ct), ct)
        var = (s2.astype(np.float64) / float(den)).astype(ct)
    _emit(ctx, out_t, var.reshape(shape), name, x.size)
    if mean_t is not None:
        _emit(ctx, mean_t, mean.reshape(shape), name, 0)


def var_out(ctx, args):
    """``var.out(self, dim[]?, unbiased, keepdim)``: float input and out only; ``N - 1`` or ``N``."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    _check(_is_float(t) and _is_float(out), "var: input and out must be float tensors")
    unbiased = bool(args[2])
    _variance(ctx, "var", t, out, args[1], lambda n: n - 1 if unbiased else n, bool(args[3]))
    return out


def var_mean_correction(ctx, args):
    """``var_mean.correction_out(self, dim[]?, *, correction?, keepdim, out0, out1)``: the variance (``N -
    correction``, NaN when that is not positive) in out0 and the mean in out1."""
    t = tensor(args[0], "self")
    out0, out1 = tensor(args[4], "out0"), tensor(args[5], "out1")
    _check(_is_float(t) and _is_float(out0) and _is_float(out1), "var_mean: float tensors expected")
    corr = float(_scalar(args[2], 1)) if args[2] is not None else 1.0
    _variance(ctx, "var_mean", t, out0, args[1], lambda n: n - corr, bool(args[3]), mean_t=out1)
    return None


def _extreme_all(name, is_max):
    """``max.unary_out`` / ``min.unary_out(self)``: a 0-d out; values cast to the out type, the first NaN wins,
    an empty input gives -inf/+inf (lowest/highest for integers)."""
    def kernel(ctx, args):
        out = out_tensor(args)
        t = tensor(args[0], "self")
        _check(t.dtype is not None and out.dtype is not None and t.dtype.kind in "fiub" and out.dtype.kind in "fiub",
               f"{name}: unsupported types")
        _check(_can_cast(t.dtype, out.dtype), f"{name}: cannot cast {t.type_name} to {out.type_name}")
        v = t.array(ctx.bus).astype(out.dtype).reshape(-1)
        if v.dtype.kind == "f":
            if np.isnan(v).any():
                return _emit(ctx, out, np.asarray(np.nan, out.dtype), name, t.numel)
            init = -np.inf if is_max else np.inf
        elif v.dtype == np.bool_:
            init = False if is_max else True
        else:
            info = np.iinfo(v.dtype)
            init = info.min if is_max else info.max
        r = (np.max if is_max else np.min)(v, initial=init)
        return _emit(ctx, out, np.asarray(r, out.dtype), name, t.numel)
    return kernel


def mean_dtype(ctx, args):
    """``mean.dtype_out(self, *, dtype?)``: the mean of every element, summed in float in row-major order and
    divided by ``(float)N``."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    dtype = args[1] if len(args) > 2 else None
    if dtype is not None:
        _check(int(dtype) == out.scalar_type and _is_float(out), f"mean: dtype {dtype} and out {out.type_name}")
    else:
        _check(_is_float(t) and _is_float(out), "mean: input and out must be float tensors")
    ct = _ftype(out.dtype)
    x = t.array(ctx.bus).reshape(-1)
    s = _seqsum(x.astype(ct), ct)
    r = (s / np.float32(x.size)).astype(ct) if x.size else np.asarray(np.nan, ct)
    return _emit(ctx, out, np.asarray(r), "mean", x.size)


# ================================================================================== creation and plain copies
def _fill_const(name, value):
    def kernel(ctx, args):
        out = out_tensor(args)
        shape = ctx.int_list(args[0])
        _resize(ctx, out, shape, name)
        _check(out.dtype is not None, f"{name}: unsupported out type {out.type_name}")
        return _emit(ctx, out, np.full(shape, value).astype(out.dtype), name)
    return kernel


def empty(ctx, args):
    """``empty.out(size, *, memory_format?)`` / ``_empty_dim_order.out(size, *, dim_order?)``: only the resize."""
    out = out_tensor(args)
    _resize(ctx, out, ctx.int_list(args[0]), "empty")
    return out


def fill_tensor(ctx, args):
    """``fill.Tensor_out(self, value)``: ``value`` must be a one-element tensor; out has self's type."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    v = tensor(args[1], "value")
    _check(v.numel == 1, "fill: value must be a scalar tensor")
    _check(t.scalar_type == out.scalar_type, "fill: self and out types differ")
    val = v.array(ctx.bus).reshape(-1)[0]
    return _emit(ctx, out, np.full(t.sizes, val).astype(out.dtype), "fill")


def _same_copy(name):
    """``detach_copy.out`` / ``lift_fresh_copy.out``: a byte copy into an out of the same type."""
    def kernel(ctx, args):
        out = out_tensor(args)
        t = tensor(args[0], "self")
        _check(t.scalar_type == out.scalar_type, f"{name}: self is {t.type_name}, out {out.type_name}")
        return _emit(ctx, out, t.array(ctx.bus), "copy")
    return kernel


def copy_out(ctx, args):
    """``copy.out(self, src, non_blocking)``: ``src`` broadcast to self's shape, converted to self's type."""
    out = out_tensor(args)
    t, src = tensor(args[0], "self"), tensor(args[1], "src")
    _check(not args[2], "copy: non_blocking copies are not supported")
    _check(t.scalar_type == out.scalar_type, "copy: self and out types differ")
    try:
        s = np.broadcast_to(src.array(ctx.bus), t.sizes)
    except ValueError:
        _fail(f"copy: src {list(src.sizes)} does not broadcast to {list(t.sizes)}")
    return _emit(ctx, out, s.astype(t.dtype), "copy")


def copy_inplace(ctx, args):
    """``copy_(self, src, non_blocking)``: the same, into ``self``."""
    t, src = tensor(args[0], "self"), tensor(args[1], "src")
    _check(not args[2], "copy_: non_blocking copies are not supported")
    try:
        s = np.broadcast_to(src.array(ctx.bus), t.sizes)
    except ValueError:
        _fail(f"copy_: src {list(src.sizes)} does not broadcast to {list(t.sizes)}")
    _emit(ctx, t, s.astype(t.dtype), "copy")
    return t


def conj_physical(ctx, args):
    """``_conj_physical.out(self)``: complex tensors only."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    _check(t.dtype is not None and t.dtype.kind == "c" and t.scalar_type == out.scalar_type,
           "_conj_physical: complex self and out of the same type expected")
    return _emit(ctx, out, np.conj(t.array(ctx.bus)), "copy")


def view_as_real_copy(ctx, args):
    """``view_as_real_copy.out(self)``: a complex tensor as (..., 2) real and imaginary parts."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    _check(t.dtype is not None and t.dtype.kind == "c", "view_as_real_copy: the input must be complex")
    _check(_is_float(out), "view_as_real_copy: out must be a float tensor")
    x = t.array(ctx.bus)
    return _emit(ctx, out, np.stack([x.real, x.imag], axis=-1), "copy")


# ================================================================================== views as copies
def narrow_copy(ctx, args):
    """``narrow_copy.out(self, dim, start, length)``. check_narrow_copy_args accepts ``-size <= start <= size``
    but the slice copy (compute_slice) is given the start unnormalised, so a negative start fails there."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    x = t.array(ctx.bus)
    _check(x.ndim > 0, "narrow_copy: self must have at least one dimension")
    _check(t.scalar_type == out.scalar_type, "narrow_copy: self and out types differ")
    d = _dim(args[1], x.ndim, "narrow_copy")
    start, length = int(args[2]), int(args[3])
    n = x.shape[d]
    _check(length >= 0, f"narrow_copy: length {length} must be non-negative")
    _check(-n <= start <= n, f"narrow_copy: start {start} out of range for size {n}")
    _check((start + n if start < 0 else start) + length <= n, "narrow_copy: start + length exceeds the size")
    _resize(ctx, out, x.shape[:d] + (length,) + x.shape[d + 1:], "narrow_copy")
    if length > 0:
        _check(start >= 0, "narrow_copy: Input args should be >= 0 (compute_slice)")
        _emit(ctx, out, np.take(x, np.arange(start, start + length), axis=d), "copy")
    return out


def diagonal_copy(ctx, args):
    """``diagonal_copy.out(self, offset, dim1, dim2)``: the diagonal as the last dimension."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    x = t.array(ctx.bus)
    _check(t.scalar_type == out.scalar_type, "diagonal_copy: self and out types differ")
    _check(x.ndim >= 2, "diagonal_copy: self must have at least 2 dimensions")
    d1, d2 = _dim(args[2], x.ndim, "diagonal_copy"), _dim(args[3], x.ndim, "diagonal_copy")
    _check(d1 != d2, "diagonal_copy: dim1 and dim2 must differ")
    _check(_default_order(t), "diagonal_copy: self must have the default dim order")
    return _emit(ctx, out, np.diagonal(x, int(args[1]), d1, d2), "copy")


def unfold_copy(ctx, args):
    """``unfold_copy.out(self, dimension, size, step)``: windows of ``size`` every ``step`` along ``dimension``
    as a new last dimension (converted to the out type)."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    x = t.array(ctx.bus)
    _check(x.ndim > 0, "unfold_copy: 0-d inputs are not supported")
    d = _dim(args[1], x.ndim, "unfold_copy")
    size, step = int(args[2]), int(args[3])
    _check(0 <= size <= x.shape[d], f"unfold_copy: size {size} for dimension of {x.shape[d]}")
    _check(step > 0, f"unfold_copy: step {step} must be > 0")
    _check(out.dtype is not None and out.dtype.kind in "fiub", f"unfold_copy: unsupported out {out.type_name}")
    count = (x.shape[d] - size + step) // step
    idx = np.arange(count)[:, None] * step + np.arange(size)[None, :]          # count, size
    w = np.take(x, idx, axis=d)                                                 # ..., count, size, ...
    w = np.moveaxis(w, d + 1, -1)
    return _emit(ctx, out, w, "copy")


def as_strided_copy(ctx, args):
    """``as_strided_copy.out(self, size, stride, storage_offset?)``: elements of self's contiguous storage at
    ``offset + sum(i_k * stride_k)``; non-negative strides and offset, inside the storage."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    size, stride = ctx.int_list(args[1]), ctx.int_list(args[2])
    off = int(args[3]) if len(args) > 4 and args[3] is not None else 0
    _check(t.scalar_type == out.scalar_type, "as_strided_copy: self and out types differ")
    _check(len(size) == len(stride), "as_strided_copy: size and stride lengths differ")
    _check(all(s >= 0 for s in stride), "as_strided: Negative strides are not supported at the moment")
    _check(off >= 0, "as_strided_copy: negative storage offset")
    _check(_default_order(t), "as_strided_copy: self must have the default dim order")
    if all(s > 0 for s in size):
        need = 1 + sum(st * (s - 1) for s, st in zip(size, stride))
        _check(need + off <= t.numel, f"as_strided_copy: storage of {need + off} elements, self has {t.numel}")
    _resize(ctx, out, size, "as_strided_copy")
    if t.numel == 0 or out.numel == 0:
        return out
    flat = t.raw(ctx.bus).view(t.dtype)
    pos = np.full(tuple(size), off, np.int64)
    for k, (s, st) in enumerate(zip(size, stride)):
        shp = [1] * len(size)
        shp[k] = s
        pos = pos + (np.arange(s, dtype=np.int64) * st).reshape(shp)
    return _emit(ctx, out, flat[pos], "copy")


def tril(ctx, args):
    """``tril.out(self, diagonal)``: elements with ``col <= row + diagonal`` kept, the rest zero."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    _check(t.scalar_type == out.scalar_type, "tril: self and out types differ")
    x = t.array(ctx.bus)
    _check(x.ndim >= 2, "tril: self must have at least 2 dimensions")
    _check(_default_order(t), "tril: self must have the default dim order")
    rows, cols = x.shape[-2:]
    keep = np.arange(cols)[None, :] <= np.arange(rows)[:, None] + int(args[1])
    return _emit(ctx, out, np.where(keep, x, np.zeros((), x.dtype)), "copy")


# ================================================================================== scatter, masks, indices
def _scatter_targets(ctx, name, self_t, d, index_t, src_t=None):
    """The flat out positions (index order) and, with ``src``, the source values of a scatter; the checks of
    check_scatter_add_args (with ``src``) or check_gather_args."""
    _check(index_t.scalar_type == 4, f"{name}: index must be int64, got {index_t.type_name}")
    x = self_t.array(ctx.bus)
    xs = x.shape if x.ndim else (1,)
    d = _dim(d, x.ndim, name)
    idx = index_t.array(ctx.bus)
    if idx.size == 0:
        return d, np.zeros(0, np.int64), (None if src_t is None else np.zeros(0, x.dtype))
    ishape = idx.shape if idx.ndim else (1,)
    idx = idx.reshape(ishape)
    _check(len(ishape) == len(xs), f"{name}: self and index dimensionality differ")
    if src_t is not None:
        src = src_t.array(ctx.bus)
        ss = src.shape if src.ndim else (1,)
        _check(len(ss) == len(xs), f"{name}: self and src dimensionality differ")
        src = src.reshape(ss)
        for k in range(len(xs)):
            _check(ishape[k] <= ss[k], f"{name}: index dimension {k} is larger than src's")
    for k in range(len(xs)):
        if k != d:
            _check(ishape[k] <= xs[k], f"{name}: index dimension {k} is larger than self's")
    _check(bool(np.all((idx >= 0) & (idx < xs[d]))), f"{name}: index out of bounds for dimension {d} "
                                                     f"with size {xs[d]}")
    coords = list(np.indices(ishape, dtype=np.int64))
    coords[d] = idx
    flat = np.ravel_multi_index(tuple(coords), xs).reshape(-1)
    vals = None
    if src_t is not None:
        vals = src[tuple(slice(0, s) for s in ishape)].reshape(-1)
    return d, flat, vals


def _last_wins(flat, vals):
    """Positions and values of a sequential scatter where a later write replaces an earlier one."""
    _, first_rev = np.unique(flat[::-1], return_index=True)
    keep = np.sort(flat.size - 1 - first_rev)
    return flat[keep], (vals[keep] if isinstance(vals, np.ndarray) and vals.ndim else vals)


def scatter_src(ctx, args):
    """``scatter.src_out(self, dim, index, src)``: ``out[..index[i]..] = src[i]`` in index order."""
    out = out_tensor(args)
    t, index_t, src_t = tensor(args[0], "self"), tensor(args[2], "index"), tensor(args[3], "src")
    _check(t.scalar_type == out.scalar_type == src_t.scalar_type, "scatter: self, src and out types differ")
    _, flat, vals = _scatter_targets(ctx, "scatter", t, args[1], index_t, src_t)
    r = t.array(ctx.bus).copy().reshape(-1)
    if flat.size:
        pos, v = _last_wins(flat, vals)
        r[pos] = v
    return _emit(ctx, out, r.reshape(t.sizes), "scatter")


def scatter_value(ctx, args):
    """``scatter.value_out(self, dim, index, value)``: the value must fit self's type."""
    out = out_tensor(args)
    t, index_t = tensor(args[0], "self"), tensor(args[2], "index")
    _check(t.scalar_type == out.scalar_type, "scatter: self and out types differ")
    value = _scalar(args[3])
    _, flat, _ = _scatter_targets(ctx, "scatter", t, args[1], index_t)
    _check(_fits(value, t.dtype), f"scatter: value {value} overflows {t.type_name}")
    r = t.array(ctx.bus).copy().reshape(-1)
    r[flat] = np.asarray(value).astype(t.dtype)
    return _emit(ctx, out, r.reshape(t.sizes), "scatter")


def scatter_add(ctx, args):
    """``scatter_add.out(self, dim, index, src)``: ``out[..index[i]..] += src[i]`` one after another in index
    order (in self's type); a 0-d self gets ``numel(index) * src[0]`` added."""
    out = out_tensor(args)
    t, index_t, src_t = tensor(args[0], "self"), tensor(args[2], "index"), tensor(args[3], "src")
    _check(t.scalar_type == out.scalar_type == src_t.scalar_type, "scatter_add: self, src and out types differ")
    _check(_default_order(index_t), "scatter_add: index must have the default dim order")
    _, flat, vals = _scatter_targets(ctx, "scatter_add", t, args[1], index_t, src_t)
    x = t.array(ctx.bus)
    r = x.copy().reshape(-1)
    if flat.size:
        if x.ndim == 0:
            n = index_t.sizes[0] if index_t.sizes else 1
            r[0] = r[0] + np.asarray(n).astype(x.dtype) * src_t.array(ctx.bus).reshape(-1)[0]
        else:
            np.add.at(r, flat, vals)
    return _emit(ctx, out, r.reshape(t.sizes), "scatter")


def _index_positions(ctx, x: np.ndarray, indices: list, name: str) -> np.ndarray:
    """The flat positions of ``x[indices]`` (advanced indexing; Bool/Byte tensors are masks), checking dtypes,
    mask shapes and bounds like check_index_args and get_in_coord (negative indices count from the end)."""
    _check(len(indices) <= x.ndim, f"{name}: indexing too many dimensions")
    sel, k = [], 0
    for t in indices:
        if t is None:
            sel.append(slice(None))
            k += 1
            continue
        _check(t.scalar_type in (0, 3, 4, 11), f"{name}: index tensors must be Long, Int, Byte or Bool, "
                                               f"got {t.type_name}")
        a = t.array(ctx.bus)
        if t.scalar_type in (0, 11):
            _check(a.shape == x.shape[k:k + a.ndim], f"{name}: mask {list(a.shape)} does not match the input")
            sel.append(a.astype(bool))
            k += a.ndim
        else:
            n = x.shape[k]
            a = a.astype(np.int64)
            a = np.where(a < 0, a + n, a)
            _check(bool(np.all((a >= 0) & (a < n))), f"{name}: index out of bounds for dimension {k} with size {n}")
            sel.append(a)
            k += 1
    try:
        return np.arange(x.size, dtype=np.int64).reshape(x.shape)[tuple(sel)]
    except IndexError as e:
        _fail(f"{name}: indices do not broadcast ({e})")


def index_put(ctx, args):
    """``index_put.out(self, indices: Tensor?[], values, accumulate)``: ``out[indices] = values`` (broadcast to
    the indexed shape), or ``+=`` one element after another with ``accumulate``; a later write wins."""
    out = out_tensor(args)
    t, v_t = tensor(args[0], "self"), tensor(args[2], "values")
    _check(t.scalar_type == out.scalar_type, "index_put: self and out types differ")
    _check(t.scalar_type == v_t.scalar_type, "index_put: self and values types differ")
    _check(_default_order(t), "index_put: self must have the default dim order")
    accumulate = bool(args[3])
    x = t.array(ctx.bus)
    indices = _tensor_list(ctx, args[1], "indices")
    pos = _index_positions(ctx, x, indices, "index_put")
    vals = v_t.array(ctx.bus)
    try:
        vals = np.broadcast_to(vals, pos.shape)
    except ValueError:
        _fail(f"index_put: values {list(vals.shape)} do not broadcast to {list(pos.shape)}")
    r = x.copy().reshape(-1)
    pos, vals = pos.reshape(-1), vals.reshape(-1)
    if accumulate:
        np.add.at(r, pos, vals)
    elif pos.size:
        p, v = _last_wins(pos, vals)
        r[p] = v
    return _emit(ctx, out, r.reshape(t.sizes), "index_put")


def index_put_inplace(ctx, args):
    """``index_put_(self, indices, values, accumulate)``: the portable special case: no accumulate, exactly one
    1-d Long/Int index (in range, not negative) and ``values`` shaped like self with that dim's length replaced."""
    t, v_t = tensor(args[0], "self"), tensor(args[2], "values")
    _check(t.scalar_type == v_t.scalar_type, "index_put_: self and values types differ")
    _check(not args[3], "Special case in-place index_put does not support accumulate")
    indices = _tensor_list(ctx, args[1], "indices")
    x = t.array(ctx.bus)
    _check(len(indices) <= x.ndim, "index_put_: indexing too many dimensions")
    given = [i for i, v in enumerate(indices) if v is not None]
    _check(len(given) == 1, "Special case in-place index_put needs exactly one non-null index tensor")
    d = given[0]
    it = indices[d]
    _check(it.scalar_type in (3, 4) and len(it.sizes) == 1, "index_put_: the index must be a 1-d Long/Int tensor")
    idx = it.array(ctx.bus).astype(np.int64)
    _check(bool(np.all((idx >= 0) & (idx < x.shape[d]))), "index_put_: index out of range")
    vals = v_t.array(ctx.bus)
    want = x.shape[:d] + (idx.size,) + x.shape[d + 1:]
    _check(vals.shape == want, f"index_put_: values {list(vals.shape)}, expected {list(want)}")
    r = x.copy()
    if idx.size:
        _, first_rev = np.unique(idx[::-1], return_index=True)
        keep = np.sort(idx.size - 1 - first_rev)
        sl = [slice(None)] * x.ndim
        sl[d] = idx[keep]
        r[tuple(sl)] = np.take(vals, keep, axis=d)
    _emit(ctx, t, r, "index_put")
    return t


def _mask_args(name, t, mask_t, out):
    _check(t.dtype is not None and t.dtype.kind in "fiub", f"{name}: unsupported input {t.type_name}")
    _check(mask_t.scalar_type == 11, f"{name}: mask must be Bool, got {mask_t.type_name}")
    _check(out.scalar_type == t.scalar_type, f"{name}: out type {out.type_name} differs from {t.type_name}")


def masked_scatter(ctx, args):
    """``masked_scatter.out(self, mask, source)``: in the broadcast shape of self and mask, positions where
    the mask is true take source's elements in order; too few source elements fail."""
    out = out_tensor(args)
    t, m_t, s_t = tensor(args[0], "self"), tensor(args[1], "mask"), tensor(args[2], "source")
    _mask_args("masked_scatter", t, m_t, out)
    _check(s_t.scalar_type == t.scalar_type, "masked_scatter: source type differs")
    try:
        x, m = np.broadcast_arrays(t.array(ctx.bus), m_t.array(ctx.bus))
    except ValueError:
        _fail("masked_scatter: self and mask do not broadcast")
    src = s_t.array(ctx.bus).reshape(-1)
    n = int(np.count_nonzero(m))
    _check(n <= src.size, "masked_scatter: src doesn't have enough elements")
    r = x.copy()
    r[m] = src[:n]
    return _emit(ctx, out, r, "masked_scatter")


def masked_select(ctx, args):
    """``masked_select.out(self, mask)``: a 1-d out of self's elements where the (broadcast) mask is true, in
    row-major order of the broadcast shape."""
    out = out_tensor(args)
    t, m_t = tensor(args[0], "self"), tensor(args[1], "mask")
    _mask_args("masked_select", t, m_t, out)
    try:
        x, m = np.broadcast_arrays(t.array(ctx.bus), m_t.array(ctx.bus))
    except ValueError:
        _fail("masked_select: self and mask do not broadcast")
    if t.numel == 0 or m_t.numel == 0:
        return _emit(ctx, out, np.zeros(0, t.dtype), "masked_select")
    return _emit(ctx, out, x[m], "masked_select", x.size)


def nonzero(ctx, args):
    """``nonzero.out(self)``: an int64 (count, ndim) out of the coordinates of non-zero elements (NaN counts)."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    _check(out.scalar_type == 4, f"nonzero: out must be Long, got {out.type_name}")
    _check(len(out.sizes) == 2, f"nonzero: out must be 2-d, got {len(out.sizes)}-d")
    _check(t.dtype is not None and t.dtype.kind in "fiub", f"nonzero: unsupported input {t.type_name}")
    x = t.array(ctx.bus)
    r = np.argwhere(x != 0).astype(np.int64) if x.ndim else np.zeros((int(x != 0), 0), np.int64)
    return _emit(ctx, out, r, "nonzero", x.size)


def repeat_interleave(ctx, args):
    """``repeat_interleave.Tensor_out(repeats, *, output_size?)``: ``i`` repeated ``repeats[i]`` times; repeats
    is a 1-d Int/Long tensor of non-negative counts, out has its type."""
    out = out_tensor(args)
    r_t = tensor(args[0], "repeats")
    _check(r_t.scalar_type in (3, 4), f"repeat_interleave: repeats must be Int or Long, got {r_t.type_name}")
    reps = r_t.array(ctx.bus).astype(np.int64)
    total = int(reps.sum())
    size = int(args[1]) if len(args) > 2 and args[1] is not None else total
    _check(len(r_t.sizes) == 1, "repeat_interleave: repeats must be 1-D")
    _check(size == total, f"repeat_interleave: output_size {size} != sum(repeats) {total}")
    _check(out.scalar_type == r_t.scalar_type, "repeat_interleave: out type differs from repeats'")
    _check(bool(np.all(reps >= 0)), "repeat_interleave: repeats cannot be negative")
    return _emit(ctx, out, np.repeat(np.arange(reps.size, dtype=np.int64), reps), "repeat_interleave")


def native_dropout(ctx, args):
    """``native_dropout.out(input, p, train?, out0, out1)``: with ``train`` false (or ``p == 0``) a copy and an
    all-true mask. Training mode (``train`` true or None) draws a random mask (``u >= p``) as the C++ does (from
    std::random_device there; here from a generator seeded with the simulated CPU cycle count, so that a run is
    reproducible); kept values are not rescaled."""
    t = tensor(args[0], "input")
    out, mask = tensor(args[3], "out"), tensor(args[4], "mask")
    p = float(args[1])
    train = args[2]
    _check(t.scalar_type == out.scalar_type, "native_dropout: input and out types differ")
    _check(mask.scalar_type == 11, "native_dropout: mask must be Bool")
    _check(0 <= p <= 1, f"dropout probability has to be between 0 and 1 but got {p}")
    x = t.array(ctx.bus)
    if (train is None or bool(train)) and p != 0:
        _check(_is_float(t), "native_dropout: training mode needs a float input")
        keep = np.random.default_rng(ctx.bus.cpu_cycles()).random(x.shape) >= p
        _emit(ctx, mask, keep, "dropout")
        _emit(ctx, out, np.where(keep, x, np.zeros((), x.dtype)), "dropout")
    else:
        _resize(ctx, mask, x.shape, "native_dropout")
        _emit(ctx, out, x, "copy")
        _emit(ctx, mask, np.ones(x.shape, bool), "copy")
    return None


# ================================================================================== distances
def _distance(diff_fn, m: int, p: float, ct):
    """Norm over the last axis of ``diff_fn(k)`` (|a - b| for component k), accumulated component by component
    like distance_util.h: L0 count, L1 sum, L2 sqrt of the sum of squares, Linf max, Lp ``pow(sum pow(d, p),
    1.0 / p)``."""
    agg = None
    pf = ct(p)
    for k in range(m):
        d = diff_fn(k)
        if p == 0.0:
            up = (d != 0).astype(ct)
        elif p == 2.0:
            up = (d * d).astype(ct)
        elif p in (1.0, math.inf):
            up = d
        else:
            up = np.power(d, pf).astype(ct)
        if agg is None:
            agg = np.zeros_like(up)
        # Linf: std::max(agg, up) keeps agg unless agg < up (a NaN component is skipped)
        agg = (np.where(agg < up, up, agg) if p == math.inf else (agg + up)).astype(ct)
    if p == 2.0:
        agg = np.sqrt(agg).astype(ct)
    elif p not in (0.0, 1.0, math.inf):
        agg = np.power(agg.astype(np.float64), 1.0 / float(pf)).astype(ct)
    return agg


def cdist_forward(ctx, args):
    """``_cdist_forward.out(x1, x2, p, compute_mode?)``: p-norm distances between the rows of x1 (.., P, M) and
    x2 (.., R, M) with broadcast batch dims; float tensors of one type."""
    out = out_tensor(args)
    a_t, b_t = tensor(args[0], "x1"), tensor(args[1], "x2")
    p = float(args[2])
    mode = args[3] if len(args) > 4 else None
    _check(a_t.scalar_type == b_t.scalar_type == out.scalar_type, "cdist: x1, x2 and out types differ")
    _check(_is_float(out), "cdist: float tensors expected")
    _check(len(a_t.sizes) >= 2 and len(b_t.sizes) >= 2, "cdist: x1 and x2 need at least 2 dimensions")
    _check(a_t.sizes[-1] == b_t.sizes[-1], "cdist: x1 and x2 differ in the last dimension")
    _check(p >= 0, f"cdist only supports non-negative p values; p = {p}")
    _check(mode is None or 0 <= int(mode) <= 2, f"possible modes: 0, 1, 2, but was: {mode}")
    a, b = a_t.array(ctx.bus), b_t.array(ctx.bus)
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        _fail("cdist: batch dimensions do not broadcast")
    ct = _ftype(out.dtype)
    pn, rn, m = a.shape[-2], b.shape[-2], a.shape[-1]
    shape = batch + (pn, rn)
    if m == 0 or math.prod(shape) == 0:
        return _emit(ctx, out, np.zeros(shape, ct), "cdist")
    a = np.broadcast_to(a, batch + a.shape[-2:]).astype(ct)
    b = np.broadcast_to(b, batch + b.shape[-2:]).astype(ct)
    r = _distance(lambda k: np.abs(a[..., :, None, k] - b[..., None, :, k]).astype(ct), m, p, ct)
    return _emit(ctx, out, r, "cdist", math.prod(shape) * m)


def pdist_forward(ctx, args):
    """``_pdist_forward.out(self, p)``: distances between the rows ``i < j`` of a 2-d self, in that order."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    p = float(args[1])
    _check(t.scalar_type == out.scalar_type and _is_float(t), "pdist: float self and out of one type expected")
    _check(len(t.sizes) == 2, "pdist: self must be 2-d")
    _check(p >= 0, f"pdist only supports non-negative p values; p = {p}")
    x = t.array(ctx.bus)
    ct = _ftype(t.dtype)
    n, m = x.shape
    i, j = np.triu_indices(n, 1)
    if i.size == 0 or m == 0:
        return _emit(ctx, out, np.zeros(i.size, ct), "pdist")
    xf = x.astype(ct)
    r = _distance(lambda k: np.abs(xf[i, k] - xf[j, k]).astype(ct), m, p, ct)
    return _emit(ctx, out, r, "pdist", i.size * m)


# ================================================================================== pooling and resampling
def adaptive_avg_pool2d(ctx, args):
    """``_adaptive_avg_pool2d.out(self, output_size)``: window ``[floor(o * in / out), ceil((o + 1) * in / out))``
    (the quotients in float), summed in float row by row, divided by ``(float)count``."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    osz = ctx.int_list(args[1])
    _check(t.scalar_type == out.scalar_type, "adaptive_avg_pool2d: self and out types differ")
    _check(t.dtype is not None and (t.dtype.kind == "f" or t.scalar_type == 4),
           f"adaptive_avg_pool2d: unsupported type {t.type_name}")
    x = t.array(ctx.bus)
    ok = (x.ndim == 3 and min(x.shape) > 0) or (x.ndim == 4 and min(x.shape[1:]) > 0)
    _check(ok, f"adaptive_avg_pool2d: expected a 3-d or 4-d input, got {list(x.shape)}")
    _check(len(osz) == 2 and osz[0] > 0 and osz[1] > 0, f"adaptive_avg_pool2d: bad output_size {osz}")
    oh, ow = osz
    ih, iw = x.shape[-2:]

    def bounds(o, n_out, n_in):
        i = np.arange(o, dtype=np.int64)
        start = np.floor((i * n_in).astype(np.float32) / np.float32(n_out)).astype(np.int64)
        end = np.ceil(((i + 1) * n_in).astype(np.float32) / np.float32(n_out)).astype(np.int64)
        return start, end

    hs, he = bounds(oh, oh, ih)
    ws, we = bounds(ow, ow, iw)
    xf = x.astype(np.float32)
    acc = np.zeros(x.shape[:-2] + (oh, ow), np.float32)
    for dy in range(int((he - hs).max())):
        yy = hs + dy
        my = yy < he
        for dx in range(int((we - ws).max())):
            xx = ws + dx
            m = my[:, None] & (xx < we)[None, :]
            v = xf[..., np.minimum(yy, ih - 1), :][..., np.minimum(xx, iw - 1)]
            acc = np.where(m, (acc + v).astype(np.float32), acc)
    cnt = ((he - hs)[:, None] * (we - ws)[None, :]).astype(np.float32)
    r = (acc / cnt).astype(np.float32)
    return _emit(ctx, out, r.astype(x.dtype), "adaptive_avg_pool2d", x.size)


def _unnormalize(c, size, align, ct):
    if align:
        return (((c + ct(1)) / ct(2)) * ct(size - 1)).astype(ct)
    return (((c + ct(1)) * ct(size) - ct(1)) / ct(2)).astype(ct)


def _reflect(c, twice_low, twice_high, ct):
    if twice_low == twice_high:
        return np.zeros_like(c)
    lo = ct(twice_low) / ct(2)
    span = ct(twice_high - twice_low) / ct(2)
    c = np.abs(c - lo).astype(ct)
    extra = np.fmod(c, span).astype(ct)
    flips = np.floor(c / span).astype(np.int64)
    return np.where(flips % 2 == 0, extra + lo, span - extra + lo).astype(ct)


def _clip(c, size, ct=None):
    if ct is None:
        return np.minimum(size - 1, np.maximum(c, 0))
    return np.minimum(ct(size - 1), np.maximum(c, ct(0))).astype(ct)


def _source_index(c, size, padding, align, ct):
    c = _unnormalize(c, size, align, ct)
    if padding == 1:
        c = _clip(c, size, ct)
    elif padding == 2:
        c = _reflect(c, 0, 2 * (size - 1), ct) if align else _reflect(c, -1, 2 * size - 1, ct)
        c = _clip(c, size, ct)
    return c


def _cubic_coeffs(t, ct):
    a = ct(-0.75)

    def conv1(x):
        return ((((a + ct(2)) * x - (a + ct(3))) * x) * x + ct(1)).astype(ct)

    def conv2(x):
        return ((((a * x - ct(5) * a) * x + ct(8) * a) * x) - ct(4) * a).astype(ct)

    return conv2(t + ct(1)), conv1(t), conv1(ct(1) - t), conv2((ct(1) - t) + ct(1))


def grid_sampler_2d(ctx, args):
    """``grid_sampler_2d.out(input, grid, interpolation_mode, padding_mode, align_corners)``: modes 0 bilinear,
    1 nearest (``nearbyint``, ties to even), 2 bicubic (A = -0.75); padding 0 zeros, 1 border, 2 reflection.
    Coordinates and weights in float; bilinear with zeros padding adds the in-bounds corners nw, ne, sw, se in
    that order from 0. Float inputs only here (the C++ also instantiates integer types)."""
    out = out_tensor(args)
    x_t, g_t = tensor(args[0], "input"), tensor(args[1], "grid")
    mode, pad, align = int(args[2]), int(args[3]), bool(args[4])
    x, g = x_t.array(ctx.bus), g_t.array(ctx.bus)
    _check(x.ndim == 4, f"grid_sampler_2d: input must be 4-d, got {x.ndim}")
    _check(_default_order(x_t), "grid_sampler_2d: input must be in NCHW format")
    _check(g.ndim == 4 and g.shape[3] == 2, f"grid_sampler_2d: grid must be (N, H, W, 2), got {list(g.shape)}")
    _check(x.shape[0] == g.shape[0], "grid_sampler_2d: input and grid batch sizes differ")
    _check(x_t.scalar_type == g_t.scalar_type == out.scalar_type, "grid_sampler_2d: input, grid and out types differ")
    _resize(ctx, out, (x.shape[0], x.shape[1], g.shape[1], g.shape[2]), "grid_sampler_2d")
    _check(mode in (0, 1, 2), f"grid_sampler_2d: interpolation_mode {mode}")
    _check(pad in (0, 1, 2), f"grid_sampler_2d: padding_mode {pad}")
    _check(_is_float(x_t), f"grid_sampler_2d: {x_t.type_name} inputs are not supported by this kernel")
    ct = _ftype(x.dtype)
    n, c, h, w = x.shape
    xf = x.astype(ct)
    gx, gy = g[..., 0].astype(ct), g[..., 1].astype(ct)          # N, Ho, Wo
    bidx = np.arange(n)[:, None, None]

    def fetch(iy, ix):  # N, Ho, Wo int coords -> N, C, Ho, Wo (coords must be in range)
        return np.moveaxis(xf[bidx, :, iy, ix], -1, 1)

    def inb(iy, ix):
        return (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w)

    if mode == 0:
        ix = _source_index(gx, w, pad, align, ct)
        iy = _source_index(gy, h, pad, align, ct)
        x0, y0 = np.floor(ix).astype(np.int64), np.floor(iy).astype(np.int64)
        x1, y1 = x0 + 1, y0 + 1
        wnw = ((x1.astype(ct) - ix) * (y1.astype(ct) - iy)).astype(ct)
        wne = ((ix - x0.astype(ct)) * (y1.astype(ct) - iy)).astype(ct)
        wsw = ((x1.astype(ct) - ix) * (iy - y0.astype(ct))).astype(ct)
        wse = ((ix - x0.astype(ct)) * (iy - y0.astype(ct))).astype(ct)
        corners = ((y0, x0, wnw), (y0, x1, wne), (y1, x0, wsw), (y1, x1, wse))
        if pad == 0:
            acc = np.zeros((n, c) + gx.shape[1:], ct)
            for yy, xx, wt in corners:
                m = inb(yy, xx)
                v = fetch(np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1))
                acc = np.where(m[:, None], (acc + v * wt[:, None]).astype(ct), acc)
        else:
            terms = [(fetch(_clip(yy, h), _clip(xx, w)) * wt[:, None]).astype(ct) for yy, xx, wt in corners]
            acc = (((terms[0] + terms[1]).astype(ct) + terms[2]).astype(ct) + terms[3]).astype(ct)
        r = acc
    elif mode == 1:
        ix = _source_index(gx, w, pad, align, ct)
        iy = _source_index(gy, h, pad, align, ct)
        xn, yn = np.rint(ix).astype(np.int64), np.rint(iy).astype(np.int64)
        if pad == 0:
            v = fetch(np.clip(yn, 0, h - 1), np.clip(xn, 0, w - 1))
            r = np.where(inb(yn, xn)[:, None], v, ct(0))
        else:
            r = fetch(_clip(yn, h), _clip(xn, w))
    else:
        ix = _unnormalize(gx, w, align, ct)
        iy = _unnormalize(gy, h, align, ct)
        x0, y0 = np.floor(ix).astype(np.int64), np.floor(iy).astype(np.int64)
        tx, ty = (ix - x0.astype(ct)).astype(ct), (iy - y0.astype(ct)).astype(ct)

        def value(yy, xx):
            if pad == 0:
                return np.where(inb(yy, xx)[:, None], fetch(np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)), ct(0))
            if pad == 1:
                return fetch(np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1))
            fy, fx = yy.astype(ct), xx.astype(ct)
            if align:
                fy, fx = _reflect(fy, 0, 2 * (h - 1), ct), _reflect(fx, 0, 2 * (w - 1), ct)
            else:
                fy, fx = _reflect(fy, -1, 2 * h - 1, ct), _reflect(fx, -1, 2 * w - 1, ct)
            return fetch(_clip(fy, h, ct).astype(np.int64), _clip(fx, w, ct).astype(np.int64))

        def interp(p0, p1, p2, p3, t):
            c0, c1, c2, c3 = (k[:, None] for k in _cubic_coeffs(t, ct))
            return ((((p0 * c0).astype(ct) + (p1 * c1)).astype(ct) + (p2 * c2)).astype(ct) + (p3 * c3)).astype(ct)

        rows = [interp(*(value(y0 + dy, x0 + dx) for dx in (-1, 0, 1, 2)), tx) for dy in (-1, 0, 1, 2)]
        r = interp(*rows, ty)
    return _emit(ctx, out, r.astype(x.dtype), "grid_sampler_2d")


def _aa_axis(n_out: int, n_in: int, scale: np.float32):
    """compute_aa_kernel_params for each output index (float): (xmin, contributor count, normalised weights
    [n_out, max count])."""
    f = np.float32
    support = scale * f(1.0) if scale >= f(1.0) else f(1.0)
    invscale = f(1.0) / scale if scale >= f(1.0) else f(1.0)
    xmins, xmaxs, rows = [], [], []
    for o in range(n_out):
        center = f(scale * f(f(o) + f(0.5)))
        xmin = max(int(f(center - support + f(0.5))), 0)
        xmax = min(int(f(center + support + f(0.5))), n_in)
        fallback = None
        ws = []
        if xmax <= xmin:
            fallback = max(0, min(int(center), n_in - 1))
        else:
            total = f(0.0)
            for i in range(xmin, xmax):
                total = f(total + _aa_filter(f((f(i) - center + f(0.5)) * invscale)))
            if total <= f(0.0):
                fallback = max(0, min(int(center), n_in - 1))
            else:
                ws = [f(_aa_filter(f((f(i) - center + f(0.5)) * invscale)) / total) for i in range(xmin, xmax)]
        if fallback is not None:
            xmin, xmax, ws = fallback, fallback + 1, [f(1.0)]
        xmins.append(xmin)
        xmaxs.append(xmax)
        rows.append(ws)
    width = max(len(r) for r in rows)
    wts = np.zeros((n_out, width), np.float32)
    for o, r in enumerate(rows):
        wts[o, :len(r)] = r
    return np.array(xmins), np.array([len(r) for r in rows]), wts


def _aa_filter(x):
    x = abs(x)
    return np.float32(1.0) - x if x < np.float32(1.0) else np.float32(0.0)


def upsample_bilinear2d_aa(ctx, args):
    """``_upsample_bilinear2d_aa.out(self, output_size, align_corners, scales_h?, scales_w?)``: the separable
    triangle filter with support ``max(scale, 1)``; kernel scale ``1 / scale`` (both scales given) or ``1 /
    (out / in)``, ``(in - 1) / (out - 1)`` with align_corners (the centre stays ``scale * (i + 0.5)``); per output
    ``value += in * h_weight * w_weight`` over rows, then columns, in float."""
    out = out_tensor(args)
    t = tensor(args[0], "self")
    osz = ctx.int_list(args[1])
    align = bool(args[2])
    sh = args[3] if len(args) > 5 else None
    sw = args[4] if len(args) > 5 else None
    x = t.array(ctx.bus)
    _check(x.ndim == 4 and len(out.sizes) == 4, "upsample_bilinear2d_aa: 4-d input and out expected")
    _check(t.scalar_type == out.scalar_type, "upsample_bilinear2d_aa: self and out types differ")
    _check(len(osz) == 2 and osz[0] > 0 and osz[1] > 0, f"upsample_bilinear2d_aa: output_size {osz}")
    _check(tuple(out.sizes) == (x.shape[0], x.shape[1], osz[0], osz[1]),
           f"upsample_bilinear2d_aa: out {list(out.sizes)} for output_size {osz}")
    _check(_is_float(t), f"upsample_bilinear2d_aa: {t.type_name} inputs are not supported by this kernel")
    ih, iw = x.shape[2:]
    oh, ow = osz
    if sh is not None and sw is not None:
        fh, fw = float(sh), float(sw)
    else:
        fh, fw = oh / ih, ow / iw

    def kscale(n_in, n_out, s):
        if align:
            return np.float32((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
        return np.float32(1.0 / s)

    hmin, hn, hw = _aa_axis(oh, ih, kscale(ih, oh, fh))
    wmin, wn, ww = _aa_axis(ow, iw, kscale(iw, ow, fw))
    xf = x.astype(np.float32)
    acc = np.zeros(x.shape[:2] + (oh, ow), np.float32)
    for a in range(hw.shape[1]):
        rows = np.minimum(hmin + a, ih - 1)
        wa = hw[:, a]
        for b in range(ww.shape[1]):
            cols = np.minimum(wmin + b, iw - 1)
            wb = ww[:, b]
            m = (a < hn)[:, None] & (b < wn)[None, :]
            v = ((xf[:, :, rows][:, :, :, cols] * wa[:, None]).astype(np.float32) * wb[None, :]).astype(np.float32)
            acc = np.where(m, (acc + v).astype(np.float32), acc)
    return _emit(ctx, out, acc.astype(x.dtype), "upsample_bilinear2d_aa")


PORTABLE_MORE_KERNELS = {
    "aten::acosh.out": _float_unary("acosh", np.arccosh),
    "aten::asinh.out": _float_unary("asinh", np.arcsinh),
    "aten::atanh.out": _float_unary("atanh", np.arctanh),
    "aten::logit.out": logit,
    "aten::glu.out": glu,
    "aten::var.out": var_out,
    "aten::var_mean.correction_out": var_mean_correction,
    "aten::max.unary_out": _extreme_all("max", True),
    "aten::min.unary_out": _extreme_all("min", False),
    "aten::mean.dtype_out": mean_dtype,
    "aten::ones.out": _fill_const("ones", 1),
    "aten::zeros.out": _fill_const("zeros", 0),
    "aten::empty.out": empty,
    "dim_order_ops::_empty_dim_order.out": empty,
    "aten::fill.Tensor_out": fill_tensor,
    "aten::detach_copy.out": _same_copy("detach_copy"),
    "aten::lift_fresh_copy.out": _same_copy("lift_fresh_copy"),
    "aten::copy.out": copy_out,
    "aten::copy_": copy_inplace,
    "aten::_conj_physical.out": conj_physical,
    "aten::view_as_real_copy.out": view_as_real_copy,
    "aten::narrow_copy.out": narrow_copy,
    "aten::diagonal_copy.out": diagonal_copy,
    "aten::unfold_copy.out": unfold_copy,
    "aten::as_strided_copy.out": as_strided_copy,
    "aten::tril.out": tril,
    "aten::scatter.src_out": scatter_src,
    "aten::scatter.value_out": scatter_value,
    "aten::scatter_add.out": scatter_add,
    "aten::index_put.out": index_put,
    "aten::index_put_": index_put_inplace,
    "aten::masked_scatter.out": masked_scatter,
    "aten::masked_select.out": masked_select,
    "aten::nonzero.out": nonzero,
    "aten::repeat_interleave.Tensor_out": repeat_interleave,
    "aten::native_dropout.out": native_dropout,
    "aten::_cdist_forward.out": cdist_forward,
    "aten::_pdist_forward.out": pdist_forward,
    "aten::_adaptive_avg_pool2d.out": adaptive_avg_pool2d,
    "aten::grid_sampler_2d.out": grid_sampler_2d,
    "aten::_upsample_bilinear2d_aa.out": upsample_bilinear2d_aa,
}
