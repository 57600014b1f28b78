"""CPU kernels the runner links in, keyed by operator name (``namespace::op.overload``), like the kernel registry.

Each kernel is declared once, in the module of its operator family, with its argument types
(``@kernel("aten::add.out", "T,T,s")``, :mod:`.registry`):

* :mod:`.portable`: ExecuTorch's portable ``aten::`` kernels (``unary``, ``binary``, ``activation``,
  ``reduction``, ``shape``, ``indexing``, ``creation``, ``conv``, ``pooling``, ``resample``, ``norm``,
  ``linalg``);
* :mod:`.quantized`: quantize/dequantize (``quantized_decomposed::``, ``cortex_m::``);
* :mod:`.cortex_m`: the Cortex-M backend's CMSIS-NN kernels.

``REGISTRY`` (also ``KERNELS``) maps an operator name to ``fn(ctx, args)`` where ``args`` are the runtime values of
the instruction (the ``out`` tensor last) and ``ctx`` gives the bus (views of simulated memory, the cost model);
``REGISTRY.unboxed()`` is the table the runtime registers (each kernel behind its unboxing check),
``SIGNATURES`` the argument types by name. Kernels report their work as ``kernel.<short name>`` x elements to the
CPU cost model.
"""

from . import cortex_m, portable, quantized  # noqa: F401  (importing a family module registers its kernels)
from .registry import REGISTRY

KERNELS = REGISTRY
SIGNATURES = REGISTRY.signatures
check_arguments = REGISTRY.check_arguments

__all__ = ["KERNELS", "REGISTRY", "SIGNATURES", "check_arguments"]
