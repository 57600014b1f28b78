"""fvp: an open model of Arm's Corstone-300 FVP (Cortex-M55 + Ethos-U55/U65).

The hardware half of the simulator, in three rooms: ``fvp.machine`` (the simulated machine), ``fvp.boards``
(the board files and the code that loads them) and ``fvp.host`` (the command-line tools around the machine);
``errors`` and ``units`` are shared by all three. It never imports ``firmware``: the firmware named in the
board YAML is loaded by name and sees the machine only through the bus handle the platform gives it.
"""

import os

# The NPU engines run many small matrix products (one per convolution block); multi-threaded BLAS costs more
# in thread hand-off than it gains at these sizes (measured: MobileNetV2 0.41 s with one thread, 0.82 s with
# two, on a 2-core host). Set before numpy is imported; an explicit setting by the user wins.
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

__version__ = "0.1.0"
