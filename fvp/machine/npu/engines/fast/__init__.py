"""The fast engine: the same arithmetic as :mod:`fvp.machine.npu.engines.reference`, with numba kernels and BLAS.

* Convolutions: im2col + GEMM (numpy BLAS).  Operands are integers and every partial sum is bounded by
  ``K * max|x - zp| * max|w|``: float32 GEMM over reduction chunks that keep that bound below 2**24 (exact),
  float64 when below 2**53, an int64 numba loop otherwise.
* Depthwise, pooling: int64 numpy over kernel taps (exact).
* Output stage and 32-bit operand scaling: numba kernels that compute ``(v * M + R) >> S`` exactly with a
  96-bit intermediate (two int64 halves), saturating results beyond +-2**62 (far outside every OFM type).

Every public function has the reference engine's signature; the tests compare the two on random cases.

One module per part, as the reference engine's sections: ``paths`` (numpy or numba for an operation's arrays),
``scaling`` (exact scaling and the output stage), ``operands`` (the padded IFM, the forms of a weight array the
kernels take), ``convolution`` (CONV and DEPTHWISE sums), ``pooling``, ``copies`` (the 1x1 pools that give back
their IFM, Vela's transpositions), ``elementwise``, ``fused`` (the sums and the output stage in one numba pass for
large operations); this module is the entry point.
"""

from __future__ import annotations

import numpy as np

from .. import reference as ref
from .convolution import conv_acc, depthwise_acc
from .copies import copies as _copies
from .elementwise import elementwise_value, fused_elementwise
from .fused import fused_conv, fused_depthwise
from .paths import long_run, numpy_path, small
from .pooling import avg_div_call, avg_div_np, pool_value
from .scaling import output_stage

__all__ = ["run_kernel_op", "output_stage", "is_copy", "long_run"]


def run_kernel_op(op, ifm, ifm2=None, weights=None, bias_scale=None, lut=None) -> np.ndarray:
    """Same contract as :func:`reference.run_kernel_op`."""
    kind = op.kind
    if kind == "CONV" and ifm2 is not None:  # U85 weights from IFM2: the reference's einsum, this output stage
        return output_stage(ref.dynamic_conv_acc(ifm, ifm2, op), op.ofm_scale.multiplier, op.ofm_scale.shift, op,
                            lut)
    if kind in ("CONV", "DEPTHWISE"):
        if not numpy_path(op.ofm.height * op.ofm.width * weights.shape[0], count=False):
            out = (fused_conv if kind == "CONV" else fused_depthwise)(op, ifm, weights, bias_scale, lut)
            if out is not None:
                return out
        bias = bias_scale[0]
        value = (conv_acc if kind == "CONV" else depthwise_acc)(ifm, weights, bias, op)
        m, s = ref.ofm_scales(op, bias_scale)
        return output_stage(value, m, s, op, lut)
    if kind == "POOL":
        if bias_scale is None and lut is None and _copies(op, _pool):
            return ifm  # the IFM as read (a new array): the operation gives back every input unchanged
        return _pool(op, ifm, bias_scale, lut)
    if kind == "ELEMENTWISE":
        if not numpy_path(ifm.size, count=False):
            out = fused_elementwise(op, ifm, ifm2)
            if out is not None:
                return out
        value = elementwise_value(ifm, ifm2, op)
        m, s = ref.ofm_scales(op)
        return output_stage(value, m, s, op, lut)
    if kind == "RESIZE":  # the reference's vectorised gather; the output stage is this engine's
        return output_stage(ref.resize_value(ifm, op), op.ofm_scale.multiplier, op.ofm_scale.shift, op, lut)
    raise ValueError(f"not a kernel operation: {kind}")


def is_copy(op) -> bool:
    """Whether the kernel operation ``op`` gives back its IFM unchanged for every input (:mod:`.copies`); the
    executor runs consecutive ones of a replayed stream as one copy (``npu/copy_runs.py``)."""
    return op.kind == "POOL" and _copies(op, _pool)


def _pool(op, ifm, bias_scale=None, lut=None) -> np.ndarray:
    """A POOL's sums (or MAX/MIN), the AVERAGE's division by the valid count and the output stage."""
    value, cnt = pool_value(ifm, op)
    if cnt is not None:
        value = np.ascontiguousarray(value, np.int64)
        q = avg_div_np(value, cnt) if small(value) else avg_div_call(value, cnt)
        m, s = ref.ofm_scales(op)
        return output_stage(q, m, s, op, lut)
    if bias_scale is not None:  # a U85 pool with a scale stream: bias and scale per channel
        value = value + np.asarray(bias_scale[0], np.int64)
    m, s = ref.ofm_scales(op, bias_scale)
    return output_stage(value, m, s, op, lut)
