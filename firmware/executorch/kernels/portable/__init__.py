"""ExecuTorch's portable kernels (``kernels/portable/cpu/op_*.cpp``): the ``aten::*.out`` and ``dim_order_ops::``
operators that float (``--no_quantize``) programs and the CPU islands between delegates of quantized programs
leave on the Cortex-M55, one module per operator family.

Arithmetic is float32 where the C++ computes in ``float`` (``CTYPE``), double for double tensors where the C++
instantiates it; sums run in the C++ loop order where that order decides the last bits, and integer and boolean
results are exact. Results agree with ExecuTorch's portable library up to the last bits of transcendental
functions and some summation orders, inside the runner's BundleIO tolerance. Argument lists are the instruction's
values: the schema arguments in order, then the out tensors (``.out`` variants list them twice: as the kwargs
and as the returned values).

Work reported to the cost model (``kernel.<name>`` x units): multiply-accumulates for convolution, linear and
matrix products; window elements read for pooling; elements for everything else.
"""

from . import activation, binary, conv, creation, indexing, linalg, norm, pooling, reduction, resample, shape, unary

__all__ = ["activation", "binary", "conv", "creation", "indexing", "linalg", "norm", "pooling", "reduction",
           "resample", "shape", "unary"]
