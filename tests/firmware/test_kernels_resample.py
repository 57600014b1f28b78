"""The resampling kernels (``kernels/portable/resample.py``) against PyTorch's outputs and numpy references."""

import math

import numpy as np
import pytest

from kernels_common import Harness, close, f32, fails, ref, run, want


@pytest.mark.parametrize("name,size,align,factors", [
    ("bilinear_x2", None, False, [2.0, 2.0]),
    ("bilinear_size_ac", (9, 4), True, None),
    ("bilinear_size", (11, 13), False, None),
])
def test_upsample_bilinear2d(name, size, align, factors):
    h = Harness()
    w = want(name)
    out = h.like(w)
    h.call("aten::upsample_bilinear2d.vec_out",
           [h.tensor(ref(name, 0)), h.ints(size) if size else None, align, factors, out, out])
    close(out.array(h.bus), w)


@pytest.mark.parametrize("name,size,factors", [("nearest_x2", None, [2.0, 2.0]), ("nearest_size", (8, 10), None)])
def test_upsample_nearest2d(name, size, factors):
    h = Harness()
    w = want(name)
    out = h.like(w)
    h.call("aten::upsample_nearest2d.vec_out", [h.tensor(ref(name, 0)), h.ints(size) if size else None, factors,
                                                out, out])
    np.testing.assert_array_equal(out.array(h.bus), w)


def ref_grid_sample(x, g, mode, pad, align):
    """A per-pixel float64 reference of PyTorch's grid_sample (bilinear/nearest/bicubic)."""
    n, c, hh, ww = x.shape
    _, ho, wo, _ = g.shape
    out = np.zeros((n, c, ho, wo))

    def unnorm(v, size):
        return (v + 1) / 2 * (size - 1) if align else ((v + 1) * size - 1) / 2

    def reflect(v, lo2, hi2):
        if lo2 == hi2:
            return 0.0
        lo, span = lo2 / 2, (hi2 - lo2) / 2
        v = abs(v - lo)
        extra = math.fmod(v, span)
        return extra + lo if int(math.floor(v / span)) % 2 == 0 else span - extra + lo

    def src(v, size):
        v = unnorm(v, size)
        if pad == 1:
            v = min(size - 1, max(v, 0))
        elif pad == 2:
            v = reflect(v, 0, 2 * (size - 1)) if align else reflect(v, -1, 2 * size - 1)
            v = min(size - 1, max(v, 0))
        return v

    def get(b, yy, xx):
        if pad == 0:
            return x[b, :, yy, xx] if 0 <= yy < hh and 0 <= xx < ww else np.zeros(c)
        if pad == 2 and mode == 2:
            fy = reflect(yy, 0, 2 * (hh - 1)) if align else reflect(yy, -1, 2 * hh - 1)
            fx = reflect(xx, 0, 2 * (ww - 1)) if align else reflect(xx, -1, 2 * ww - 1)
            return x[b, :, int(min(hh - 1, max(fy, 0))), int(min(ww - 1, max(fx, 0)))]
        return x[b, :, min(hh - 1, max(yy, 0)), min(ww - 1, max(xx, 0))]

    def cubic(p, t):
        a = -0.75

        def c1(v):
            return ((a + 2) * v - (a + 3)) * v * v + 1

        def c2(v):
            return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a
        return p[0] * c2(t + 1) + p[1] * c1(t) + p[2] * c1(1 - t) + p[3] * c2(2 - t)

    for b in range(n):
        for i in range(ho):
            for j in range(wo):
                gx, gy = float(g[b, i, j, 0]), float(g[b, i, j, 1])
                if mode == 2:
                    ix, iy = unnorm(gx, ww), unnorm(gy, hh)
                    x0, y0 = math.floor(ix), math.floor(iy)
                    rows = [cubic([get(b, y0 + dy, x0 + dx) for dx in (-1, 0, 1, 2)], ix - x0) for dy in (-1, 0, 1, 2)]
                    out[b, :, i, j] = cubic(rows, iy - y0)
                    continue
                ix, iy = src(gx, ww), src(gy, hh)
                if mode == 1:
                    out[b, :, i, j] = get(b, int(np.rint(iy)), int(np.rint(ix)))
                    continue
                x0, y0 = math.floor(ix), math.floor(iy)
                tx, ty = ix - x0, iy - y0
                out[b, :, i, j] = (get(b, y0, x0) * (1 - tx) * (1 - ty) + get(b, y0, x0 + 1) * tx * (1 - ty)
                                   + get(b, y0 + 1, x0) * (1 - tx) * ty + get(b, y0 + 1, x0 + 1) * tx * ty)
    return out


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("pad", [0, 1, 2])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sampler_2d(mode, pad, align):
    h = Harness()
    x = f32(2, 3, 5, 6)
    g = f32(2, 4, 3, 2, lo=-1.3, hi=1.3)
    (o,) = run(h, "aten::grid_sampler_2d.out", [h.tensor(x), h.tensor(g), mode, pad, align],
               [h.tensor(shape=(2, 3, 4, 3))])
    np.testing.assert_allclose(o, ref_grid_sample(x.astype(np.float64), g, mode, pad, align), rtol=1e-4, atol=1e-5)
    if mode == 0 and pad == 0 and not align:
        fails(h, "aten::grid_sampler_2d.out", [h.tensor(x), h.tensor(g), 3, pad, align], [h.tensor(shape=(2, 3, 4, 3))])
        fails(h, "aten::grid_sampler_2d.out", [h.tensor(x), h.tensor(g[:1]), 0, 0, False],
              [h.tensor(shape=(2, 3, 4, 3))])


def ref_aa(x, oh, ow, align):
    """PyTorch's separable anti-aliased bilinear weights (interp_size 2), in float64."""
    def weights(n_in, n_out):
        scale = (n_in - 1) / (n_out - 1) if align and n_out > 1 else (0.0 if align else n_in / n_out)
        support = scale if scale >= 1 else 1.0
        inv = 1 / scale if scale >= 1 else 1.0
        w = np.zeros((n_out, n_in))
        for o in range(n_out):
            center = scale * (o + 0.5)
            lo, hi = max(int(center - support + 0.5), 0), min(int(center + support + 0.5), n_in)
            ks = [max(0.0, 1 - abs((i - center + 0.5) * inv)) for i in range(lo, hi)]
            w[o, lo:hi] = np.array(ks) / sum(ks)
        return w
    wh, ww = weights(x.shape[2], oh), weights(x.shape[3], ow)
    return np.einsum("oh,nchw,pw->ncop", wh, x.astype(np.float64), ww)


@pytest.mark.parametrize("oh,ow,align", [(3, 4, False), (9, 2, False), (4, 3, True)])
def test_upsample_bilinear2d_aa(oh, ow, align):
    h = Harness()
    x = f32(1, 2, 8, 7)
    (o,) = run(h, "aten::_upsample_bilinear2d_aa.out", [h.tensor(x), h.ints([oh, ow]), align, None, None],
               [h.tensor(shape=(1, 2, oh, ow))])
    np.testing.assert_allclose(o, ref_aa(x, oh, ow, align), rtol=1e-5, atol=1e-5)
    fails(h, "aten::_upsample_bilinear2d_aa.out", [h.tensor(x), h.ints([oh, ow]), align, None, None],
          [h.tensor(shape=(1, 2, oh + 1, ow))])
