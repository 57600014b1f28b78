"""The fast engine's operands: the IFM minus its zero point, upscaled and padded (the reference engine's section
"operands"), the largest magnitude of an operand, and the forms of a decoded weight array the kernels take (its
GEMM operand per dtype, its depthwise layout), kept per array object."""

from __future__ import annotations

import numpy as np

from ...jit import njit
from ...memo import BoundedCache
from .paths import long_run

GEMM_WEIGHT_CACHE_BYTES = 128 << 20  # GEMM forms of recently used decoded weights kept at most


def padded_ifm(ifm, op, fill=0, dtype=np.int64):
    """As :func:`reference.padded_ifm`, in ``dtype``."""
    k = op.kernel
    fm = op.ifm
    oh, ow = op.ofm.height, op.ofm.width
    ph = (oh - 1) * k.stride_y + k.dilated_height
    pw = (ow - 1) * k.stride_x + k.dilated_width
    ih, iw = fm.height, fm.width
    C = ifm.shape[2]
    y0, x0 = k.pad_top, k.pad_left
    hh = max(0, min(ih, ph - y0))
    ww = max(0, min(iw, pw - x0))
    if (k.upscale == "NONE" and y0 == 0 and x0 == 0 and hh == ph and ww == pw and ifm.shape[0] >= ph
            and ifm.shape[1] >= pw):
        x = ifm[:ph, :pw].astype(dtype)  # no padding: the IFM itself, in dtype, minus its zero point
        x -= fm.zero_point
        return x
    P = np.full((ph, pw, C), fill, dtype=dtype)
    if hh <= 0 or ww <= 0:
        return P
    rows, cols = (hh, ww) if k.upscale == "NONE" else ((hh + 1) // 2, (ww + 1) // 2)
    x = ifm[:rows, :cols].astype(dtype)  # only what is placed (an operation may read part of its IFM)
    x -= fm.zero_point
    dst = P[y0:y0 + hh, x0:x0 + ww]
    if k.upscale == "NEAREST":
        for dy in range(2):
            for dx in range(2):
                sub = x[: (hh - dy + 1) // 2, : (ww - dx + 1) // 2]
                dst[dy::2, dx::2] = sub
    elif k.upscale == "ZEROS":
        dst[...] = 0
        sub = x[: (hh + 1) // 2, : (ww + 1) // 2]
        dst[0::2, 0::2] = sub
    else:
        dst[...] = x[:hh, :ww]
    return P


@njit
def _min_max(x):
    """(min, max) of a C-contiguous array, in one pass."""
    f = x.reshape(-1)
    lo = hi = f[0]
    for i in range(1, f.shape[0]):
        v = f[i]
        lo = min(lo, v)
        hi = max(hi, v)
    return lo, hi


#: In a long run, an operand of at least this many elements takes :func:`_min_max` (one pass instead of two).
KERNEL_MIN_MAX_ELEMENTS = 4096


def abs_max(x: np.ndarray, zp: int) -> int:
    """``max(|x - zp|)`` over ``x`` (0 for an empty array), exact."""
    if x.size == 0:
        return 0
    if x.size >= KERNEL_MIN_MAX_ELEMENTS and x.flags.c_contiguous and long_run():
        lo, hi = _min_max(x)
    else:
        lo, hi = x.min(), x.max()
    return int(max(int(hi) - zp, zp - int(lo), 0))


# id(weights) -> (weights, {"amax": int, dtype: K x O matrix, "dw": depthwise layout}); least recently used
# first, at most GEMM_WEIGHT_CACHE_BYTES of arrays (the weights and their forms), the newest always kept
_weight_forms = BoundedCache(max_bytes=GEMM_WEIGHT_CACHE_BYTES, lru=True, keep_oversized=True)


def weights_entry(weights: np.ndarray) -> dict:
    """What the GEMM path derives from a decoded weight array, computed once per array. Vela splits a large
    operation into stripes that all use one weight stream, whose decoded array (from the weight cache) is then
    the same object: its largest magnitude and its K x O operand are not recomputed per stripe. A small LRU,
    bounded in bytes; an entry is used only for the very array object it was made from."""
    hit = _weight_forms.get(id(weights))
    if hit is not None and hit[0] is weights:
        return hit[1]
    entry = {"amax": abs_max(weights, 0)}
    _weight_forms.put(id(weights), (weights, entry), weights.nbytes)
    return entry


def add_form(weights: np.ndarray, key, form: np.ndarray) -> None:
    """Keep ``form`` (derived from ``weights``) under ``key`` in its entry, its bytes counted in the bound."""
    entry = weights_entry(weights)
    entry[key] = form
    if id(weights) in _weight_forms:
        _weight_forms.grow(id(weights), form.nbytes)


def gemm_weights(weights: np.ndarray, dtype) -> np.ndarray:
    """``weights`` (O, KH, KW, I) as the K x O right-hand GEMM operand in ``dtype`` (read-only, cached)."""
    entry = weights_entry(weights)
    key = np.dtype(dtype).str
    wm = entry.get(key)
    if wm is None:
        wm = np.ascontiguousarray(weights.reshape(weights.shape[0], -1).T, dtype=dtype)
        wm.flags.writeable = False
        add_form(weights, key, wm)
    return wm
