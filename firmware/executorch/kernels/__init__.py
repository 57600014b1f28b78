"""CPU kernels the runner links in, keyed by operator name (``name.overload``), like the kernel registry.

``KERNELS`` maps an operator name to ``fn(ctx, args)`` where ``args`` are the runtime values of the
instruction (the ``out`` tensor last) and ``ctx`` gives the bus (views of simulated memory, the cost model).
Kernels report their work as ``kernel.<short name>`` x elements to the CPU cost model.
"""

from .cortex_m import CORTEX_M_KERNELS
from .portable import PORTABLE_KERNELS
from .portable_ext import PORTABLE_EXT_KERNELS
from .portable_more import PORTABLE_MORE_KERNELS
from .portable_nn import PORTABLE_NN_KERNELS
from .quantized import QUANTIZED_KERNELS

KERNELS = {**PORTABLE_MORE_KERNELS, **PORTABLE_EXT_KERNELS, **PORTABLE_NN_KERNELS, **PORTABLE_KERNELS,
           **QUANTIZED_KERNELS, **CORTEX_M_KERNELS}

__all__ = ["KERNELS"]
