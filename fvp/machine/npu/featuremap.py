"""Feature-map addressing and gather/scatter between simulated memory and dense ``(H, W, C)`` arrays.

Research notes ethosu.md section 1.5.  For a coordinate ``(y, x, c)`` of a feature map's area:

* tile: ``x >= WIDTH0`` -> tile 1 (``x -= WIDTH0``), and if also ``y >= HEIGHT1`` tile 3 (``y -= HEIGHT1``);
  else ``y >= HEIGHT0`` -> tile 2 (``y -= HEIGHT0``); else tile 0;
* NHWC: ``BASE[t] + y*STRIDE_Y + x*STRIDE_X + c*elem`` (STRIDE_C ignored);
* NHCWB16: ``BASE[t] + y*STRIDE_Y + (c//16)*STRIDE_C + x*16*elem + (c%16)*elem`` (STRIDE_X ignored).

Strides are signed.  Bus addresses are ``BASEP[region] + offset`` truncated to 32 bits (U55) or 40 bits (U65).

Access pattern: :func:`extent` computes the byte range a tensor touches, the caller obtains ONE memory view
covering it (``memory.view(address, length, write)``) and the numba kernels gather/scatter relative to it.
"""

from __future__ import annotations

import functools

import numpy as np

from .jit import njit
from .memo import MISS, IdentityMemo


def _tile_boxes(height: int, width: int, h0: int, h1: int, w0: int):
    """(tile, y_count, x_count) for every non-empty tile of a ``height x width`` area."""
    boxes = []
    wl = min(width, w0)
    wr = width - wl
    if wl > 0:
        boxes.append((0, min(height, h0), wl))
        if height > h0:
            boxes.append((2, height - h0, wl))
    if wr > 0:
        boxes.append((1, min(height, h1), wr))
        if height > h1:
            boxes.append((3, height - h1, wr))
    return [b for b in boxes if b[1] > 0 and b[2] > 0]


def channel_offsets(depth: int, elem: int, nhcwb16: bool, stride_c: int) -> np.ndarray:
    c = np.arange(depth, dtype=np.int64)
    if nhcwb16:
        return (c // 16) * stride_c + (c % 16) * elem
    return c * elem


def extent(fm, height: int | None = None, width: int | None = None, depth: int | None = None):
    """``(lo, hi)``: byte offsets (relative to the region base, ``hi`` exclusive) of every element of ``fm``'s
    ``height x width x depth`` area (defaults: ``fm.height/width/depth``).  ``None`` if the area is empty.
    Remembered per feature map and area (a program's streams meet the same ones at every inference)."""
    return _extent(fm, height, width, depth)


@functools.lru_cache(maxsize=4096)
def _extent(fm, height, width, depth):
    h = fm.height if height is None else height
    w = fm.width if width is None else width
    d = fm.depth if depth is None else depth
    if h <= 0 or w <= 0 or d <= 0:
        return None
    elem = fm.bits // 8
    nhcwb16 = fm.format == "NHCWB16"
    sx = 16 * elem if nhcwb16 else fm.stride_x
    co = channel_offsets(d, elem, nhcwb16, fm.stride_c)
    cmin, cmax = int(co.min()), int(co.max())
    lo = hi = None
    for t, ny, nx in _tile_boxes(h, w, fm.height0, fm.height1, fm.width0):
        ys = (0, (ny - 1) * fm.stride_y)
        xs = (0, (nx - 1) * sx)
        tlo = fm.bases[t] + min(ys) + min(xs) + cmin
        thi = fm.bases[t] + max(ys) + max(xs) + cmax + elem
        lo = tlo if lo is None else min(lo, tlo)
        hi = thi if hi is None else max(hi, thi)
    return lo, hi


def tile_offsets(fm, lo: int) -> np.ndarray:
    """The four tile bases relative to ``lo`` (the start of the memory view), int64."""
    return np.array([b - lo for b in fm.bases], dtype=np.int64)


def storage_bytes(fm, height=None, width=None, depth=None) -> int:
    """Bytes the hardware moves for the area (depth rounded up to 16 for NHCWB16)."""
    h = fm.height if height is None else height
    w = fm.width if width is None else width
    d = fm.depth if depth is None else depth
    if fm.format == "NHCWB16":
        d = -(-d // 16) * 16
    return max(h, 0) * max(w, 0) * max(d, 0) * (fm.bits // 8)


# ------------------------------------------------------------------------------------------------ kernels


@njit
def _read(mem, a, esz, signed):
    if esz == 1:
        v = np.int64(mem[a])
        if signed and v >= 128:
            v -= 256
    elif esz == 2:
        v = np.int64(mem[a]) | (np.int64(mem[a + 1]) << 8)
        if signed and v >= 32768:
            v -= 65536
    elif esz == 4:
        v = (np.int64(mem[a]) | (np.int64(mem[a + 1]) << 8) | (np.int64(mem[a + 2]) << 16)
             | (np.int64(mem[a + 3]) << 24))
        if signed and v >= 2147483648:
            v -= 4294967296
    else:
        v = np.int64(0)
        for k in range(8):
            v |= np.int64(mem[a + k]) << (8 * k)
    return v


@njit(inline="always")
def _tile(y, x, h0, h1, w0):
    """Tile of OFM/IFM coordinate (y, x) and the coordinate inside it (Vela's ``register_command_stream_util.py``):
    right of WIDTH0 is tile 1 (tile 3 below HEIGHT1), else below HEIGHT0 is tile 2, else tile 0."""
    if x >= w0:
        if y >= h1:
            return 3, y - h1, x - w0
        return 1, y, x - w0
    if y >= h0:
        return 2, y - h0, x
    return 0, y, x


@njit
def gather_kernel(mem, out, tb, h0, h1, w0, sy, sx, sc, esz, signed, brick):
    """Fill ``out[H, W, C]`` from the uint8 view ``mem``; ``tb`` = tile bases relative to the view."""
    H, W, C = out.shape
    for y in range(H):
        for x in range(W):
            t, ly, lx = _tile(y, x, h0, h1, w0)
            if brick:
                row = tb[t] + ly * sy + lx * 16 * esz
                if esz == 1:
                    for cb in range(0, C, 16):
                        a = row + (cb // 16) * sc
                        n = min(16, C - cb)
                        for j in range(n):
                            v = np.int64(mem[a + j])
                            if signed and v >= 128:
                                v -= 256
                            out[y, x, cb + j] = v
                else:
                    for c in range(C):
                        a = row + (c // 16) * sc + (c % 16) * esz
                        out[y, x, c] = _read(mem, a, esz, signed)
            else:
                row = tb[t] + ly * sy + lx * sx
                if esz == 1:
                    if signed:
                        for c in range(C):
                            v = np.int64(mem[row + c])
                            out[y, x, c] = v - 256 if v >= 128 else v
                    else:
                        for c in range(C):
                            out[y, x, c] = mem[row + c]
                else:
                    for c in range(C):
                        out[y, x, c] = _read(mem, row + c * esz, esz, signed)


@njit
def scatter_kernel(mem, vals, tb, h0, h1, w0, sy, sx, sc, esz, brick):
    """Write ``vals[H, W, C]`` (already in the element type's range) into the uint8 view ``mem``."""
    H, W, C = vals.shape
    for y in range(H):
        for x in range(W):
            t, ly, lx = _tile(y, x, h0, h1, w0)
            if brick:
                row = tb[t] + ly * sy + lx * 16 * esz
            else:
                row = tb[t] + ly * sy + lx * sx
            for c in range(C):
                if brick:
                    a = row + (c // 16) * sc + (c % 16) * esz
                else:
                    a = row + c * esz
                v = np.int64(vals[y, x, c])
                for k in range(esz):
                    mem[a + k] = np.uint8((v >> (8 * k)) & 0xFF)


@njit
def _copy3(src, dst):
    """``dst[...] = src`` for 3-D arrays of any layouts, each element converted as ``np.copyto(casting="unsafe")``
    does (integer values in the destination's range: the same values)."""
    a, b, c = src.shape
    for i in range(a):
        for j in range(b):
            for k in range(c):
                dst[i, j, k] = src[i, j, k]


@njit
def _copy4(src, dst):
    """:func:`_copy3` for 4-D arrays (NHCWB16 bricks)."""
    a, b, c, e = src.shape
    for i in range(a):
        for j in range(b):
            for k in range(c):
                for m in range(e):
                    dst[i, j, k, m] = src[i, j, k, m]


#: In a long run (``kernels``: the engine's kernels take every size), a piece of at least this many elements is
#: copied by :func:`_copy3`/:func:`_copy4` (about 2x numpy's strided copy of 16-element rows with a conversion);
#: smaller ones by numpy (the call costs more than the copy).
KERNEL_COPY_MIN_ELEMENTS = 2048


def _copy(dst: np.ndarray, src: np.ndarray, kernels: bool) -> None:
    if kernels and src.size >= KERNEL_COPY_MIN_ELEMENTS:
        (_copy4 if src.ndim == 4 else _copy3)(src, dst)
    else:
        np.copyto(dst, src, casting="unsafe")


_READ_DTYPES = {(1, True): "i1", (1, False): "u1", (2, True): "<i2", (2, False): "<u2", (4, True): "<i4",
                (4, False): "<u4", (8, True): "<i8", (8, False): "<i8"}
_WRITE_DTYPES = {1: "u1", 2: "<u2", 4: "<u4", 8: "<u8"}


def _strided(view: np.ndarray, start: int, dtype: str, shape: tuple, strides: tuple) -> np.ndarray:
    """The bytes of ``view`` as ``dtype`` elements at ``start + sum(index * stride)`` (signed byte strides,
    unaligned elements allowed). Every element lies inside ``view``: the callers ask only for elements of a
    feature map's extent, which is what the view covers."""
    # numpy checks that every element lies inside the view (a ValueError otherwise, never a stray read)
    return np.ndarray(shape, dtype, buffer=view, offset=start, strides=strides)


_LAYOUTS = IdentityMemo(8192)  # (fm; lo, h, w, d) -> _layout's list


def _parts(fm, view: np.ndarray, lo: int, h: int, w: int, d: int, dtype: str) -> list:
    """``(rows, cols, channels, array)`` for the pieces of the ``h x w x d`` area: per non-empty tile, the NHWC
    block, or the NHCWB16 full bricks (a 4-D view) and the partial last brick; each a strided view of memory.
    The layout is computed once per feature-map object and area (a replayed stream meets the same ones)."""
    area = (lo, h, w, d)
    layout = _LAYOUTS.get((fm,), area)
    if layout is MISS:
        layout = _layout(fm, lo, h, w, d)
        _LAYOUTS.put((fm,), layout, area)
    return [(rows, cols, chans, _strided(view, base, dtype, shape, strides))
            for rows, cols, chans, base, shape, strides in layout]


def _layout(fm, lo: int, h: int, w: int, d: int) -> list:
    """:func:`_parts` as ``(rows, cols, channels, byte offset, shape, strides)``."""
    esz = fm.bits // 8
    origin = {0: (0, 0), 1: (0, fm.width0), 2: (fm.height0, 0), 3: (fm.height1, fm.width0)}
    out = []
    for t, ny, nx in _tile_boxes(h, w, fm.height0, fm.height1, fm.width0):
        y0, x0 = origin[t]
        base = fm.bases[t] - lo
        rows, cols = slice(y0, y0 + ny), slice(x0, x0 + nx)
        if fm.format != "NHCWB16":
            out.append((rows, cols, slice(0, d), base, (ny, nx, d), (fm.stride_y, fm.stride_x, esz)))
            continue
        full = d // 16
        if full:
            out.append((rows, cols, slice(0, full * 16), base, (ny, nx, full, 16),
                        (fm.stride_y, 16 * esz, fm.stride_c, esz)))
        if d > full * 16:
            out.append((rows, cols, slice(full * 16, d), base + full * fm.stride_c, (ny, nx, d - full * 16),
                        (fm.stride_y, 16 * esz, esz)))
    return out


@functools.lru_cache(maxsize=4096)
def _distinct(fm, h: int, w: int, d: int) -> bool:
    """Whether every element of the area has its own bytes (no two elements, in a tile or across tiles,
    share one): then a scatter's result does not depend on the order of its writes. A sufficient test: each
    axis's stride, smallest first, steps over the span of the smaller ones; tiles' byte ranges disjoint."""
    esz = fm.bits // 8
    ranges = []
    for t, ny, nx in _tile_boxes(h, w, fm.height0, fm.height1, fm.width0):
        if fm.format == "NHCWB16":
            axes = [(fm.stride_y, ny), (16 * esz, nx), (fm.stride_c, -(-d // 16)), (esz, min(d, 16))]
        else:
            axes = [(fm.stride_y, ny), (fm.stride_x, nx), (esz, d)]
        span = esz
        lo = hi = fm.bases[t]
        for stride, n in sorted(((abs(s), n) for s, n in axes if n > 1)):
            if stride < span:
                return False
            span += stride * (n - 1)
        for s, n in axes:
            step = s * (n - 1)
            lo, hi = lo + min(step, 0), hi + max(step, 0)
        ranges.append((lo, hi + esz))
    ranges.sort()
    return all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:]))


def gather(fm, view: np.ndarray, lo: int, height=None, width=None, depth=None, kernels: bool = False) -> np.ndarray:
    """Read ``fm``'s area into a dense array (int32, or int64 for 32/64-bit unsigned/64-bit types).

    ``view`` is a uint8 array covering the tensor's extent, starting at region offset ``lo``. Strided copies per
    tile, by numpy or (``kernels``, large pieces) a numba loop (``gather_kernel`` is the same read, one element
    at a time, and the tests compare them).
    """
    h = fm.height if height is None else height
    w = fm.width if width is None else width
    d = fm.depth if depth is None else depth
    dt = np.int32 if fm.bits < 32 or (fm.bits == 32 and fm.signed) else np.int64
    out = np.empty((max(h, 0), max(w, 0), max(d, 0)), dtype=dt)
    if out.size == 0:
        return out
    src_dtype = _READ_DTYPES[(fm.bits // 8, bool(fm.signed))]
    for rows, cols, chans, part in _parts(fm, view, lo, h, w, d, src_dtype):
        dst = out[rows, cols, chans]
        if part.ndim == 4:
            dst = dst.reshape(part.shape)
        _copy(dst, part, kernels)
    return out


def scatter(fm, view: np.ndarray, lo: int, values: np.ndarray, kernels: bool = False) -> None:
    """Write dense ``values[H, W, C]`` (in the element type's range) into ``fm``'s area: each element's low
    bytes, little-endian. Strided copies (as :func:`gather`'s) when no two elements share bytes, else
    ``scatter_kernel`` (one element at a time, in order, so that a later element's write wins as on the
    hardware)."""
    if values.size == 0:
        return
    h, w, d = values.shape
    esz = fm.bits // 8
    if not _distinct(fm, h, w, d):
        scatter_kernel(view, values, tile_offsets(fm, lo), fm.height0, fm.height1, fm.width0, fm.stride_y,
                       fm.stride_x, fm.stride_c, esz, fm.format == "NHCWB16")
        return
    for rows, cols, chans, part in _parts(fm, view, lo, h, w, d, _WRITE_DTYPES[esz]):
        src = values[rows, cols, chans]
        if part.ndim == 4:
            src = src.reshape(part.shape)
        _copy(part, src, kernels)


def gather_reference(fm, view: np.ndarray, lo: int, height=None, width=None, depth=None) -> np.ndarray:
    """:func:`gather` one element at a time (the numba kernel): the tests' second opinion."""
    h = fm.height if height is None else height
    w = fm.width if width is None else width
    d = fm.depth if depth is None else depth
    dt = np.int32 if fm.bits < 32 or (fm.bits == 32 and fm.signed) else np.int64
    out = np.empty((max(h, 0), max(w, 0), max(d, 0)), dtype=dt)
    if out.size:
        gather_kernel(view, out, tile_offsets(fm, lo), fm.height0, fm.height1, fm.width0, fm.stride_y,
                      fm.stride_x, fm.stride_c, fm.bits // 8, bool(fm.signed), fm.format == "NHCWB16")
    return out


def scatter_reference(fm, view: np.ndarray, lo: int, values: np.ndarray) -> None:
    """:func:`scatter` one element at a time, in order (the numba kernel)."""
    if values.size:
        scatter_kernel(view, values, tile_offsets(fm, lo), fm.height0, fm.height1, fm.width0, fm.stride_y,
                       fm.stride_x, fm.stride_c, fm.bits // 8, fm.format == "NHCWB16")


def element_offsets(fm, h: int, w: int, d: int) -> np.ndarray:
    """The region offset of the first byte of every element of the ``h x w x d`` area, as an ``(h, w, d)`` int64
    array (the addresses :func:`gather` reads and :func:`scatter` writes)."""
    out = np.empty((max(h, 0), max(w, 0), max(d, 0)), np.int64)
    for rows, cols, chans, base, shape, strides in _layout(fm, 0, h, w, d):
        grid = base + sum(np.arange(n, dtype=np.int64).reshape([-1 if k == j else 1 for k in range(len(shape))]) * s
                          for j, (n, s) in enumerate(zip(shape, strides)))
        dst = out[rows, cols, chans]
        dst[...] = grid.reshape(dst.shape)
    return out


def element_address(fm, y: int, x: int, c: int) -> int:
    """Region offset of one element (slow; for tests and tools)."""
    t = 0
    if x >= fm.width0:
        x -= fm.width0
        t = 1
        if y >= fm.height1:
            y -= fm.height1
            t = 3
    elif y >= fm.height0:
        y -= fm.height0
        t = 2
    elem = fm.bits // 8
    if fm.format == "NHCWB16":
        return fm.bases[t] + y * fm.stride_y + (c // 16) * fm.stride_c + x * 16 * elem + (c % 16) * elem
    return fm.bases[t] + y * fm.stride_y + x * fm.stride_x + c * elem
