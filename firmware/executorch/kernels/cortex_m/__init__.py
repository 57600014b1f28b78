"""ExecuTorch's Cortex-M backend kernels (``cortex_m::*``): the CMSIS-NN operators of ``--target=cortex-m55``.

Programs compiled by ``aot_arm_compiler --target=cortex-m55 --quantize`` run every quantized layer on the CPU as
a ``cortex_m::*`` kernel (ExecuTorch ``backends/cortex_m/ops/op_*.cpp``), most of them thin wrappers around a
CMSIS-NN function. These are those kernels, written from the C sources' arithmetic (CMSIS-NN at the commit
ExecuTorch 1.5.1 pins, built for a Cortex-M55 with MVE, so the ``ARM_MATH_MVEI`` paths), in integer numpy, one
module per kind of operator:

* :mod:`.fixed_point`: requantization and the other fixed-point helpers every kernel uses;
* :mod:`.elementwise`: add, mul, div, the LUT activation, minimum, maximum;
* :mod:`.linear`: fully connected and batch matmul; :mod:`.softmax`;
* :mod:`.conv`: convolution, depthwise and transposed convolution; :mod:`.pooling`: average and max pool;
* :mod:`.movement`: transpose and pad.

``cortex_m::quantize_per_tensor`` / ``dequantize_per_tensor`` are in :mod:`..quantized`, with the portable
quantize/dequantize kernels they share their formulas with.

Where ExecuTorch's Python reference implementations (``backends/cortex_m/ops/operators.py``, used at export
time) compute differently, these kernels follow the C: softmax (the reference uses float softmax and
``torch.round``), average pool (float average and round-half-to-even), div (round-half-to-even), batch matmul
(float32 sums), requantization of values whose left shift overflows 32 bits, and the 1xN convolution quirk.

Kernels take the raw memory of their tensors as the C++ kernels do (the layout checks are those of the C++
code; a channels-last ``NCHW`` tensor is the ``NHWC`` array in memory). Failures: see :mod:`._common`.

Work reported to the CPU cost model: multiply-accumulates for convolutions, linear and batch matmul; window
elements read for pooling; output elements for everything else.
"""

from . import conv, elementwise, fixed_point, linear, movement, pooling, softmax

__all__ = ["conv", "elementwise", "fixed_point", "linear", "movement", "pooling", "softmax"]
