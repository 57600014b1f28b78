"""Ethos-U55/U65/U85 timing model: how many NPU cycles one command stream takes, where they go, and the PMU
counts. The MAC and output-stage cycles of each product's blocks are its family's (``u55/performance.py``,
``u85/performance.py``, with the Ethos-U85's AXI channel limits in ``u85/channels.py``); the rest is shared
(docs/timing.md 1.6).

What it models (docs/timing.md has the full description, the parameters and the validation):

* **Kernel operations** (CONV, DEPTHWISE, POOL, ELEMENTWISE) are walked block by block, with the OFM block the
  stream itself programs (``NPU_SET_OFM_BLK_*``).  Per block: the MAC array's cycles (micro-blocks of the
  variant, sub-kernels of at most 8x8, depth-first vs part-kernel traversal, IFM block depth, the weight-buffer
  floor of 32 cycles per 8 OFM channels, the accumulator delay for single-micro-block work), the output/
  activation stage's cycles (the per-element tables of ``arch.py``; at least the block's scale fetch), and a
  command-issue floor from the block's own memory transfers.  MAC and AO stages form a two-stage pipeline.
* **Memory traffic** starts from the bytes the functional engine measured (``OpRecord``), scaled by what the
  block traversal re-fetches: the IFM halo between blocks, the IFM once per OFM depth block (convolution),
  the weights and scales once per spatial OFM block.  Each region goes to the AXI port its REGIONCFG field
  selects (0/1 -> AXI0, 2/3 -> AXI1), each port to the memory the system config names (``axi0_port``/
  ``axi1_port``), with that memory's bandwidth (``clock_scale`` x AXI width), read/write latency and burst
  length (a transfer whose contiguous run is shorter than ``burst_length`` costs a whole burst).  The command
  stream is fetched through the port QCONFIG selects.
* **Concurrency**: an event-driven simulation of the command processor (one command word per
  ``cmd_word_cycles``, no faster than its port delivers 4 bytes), the kernel pipeline and the DMA engine.
  DMAs run alongside kernels (weight prefetch under the previous operation); ``DMA_WAIT``/``KERNEL_WAIT``
  stall the command processor; at most ``max_outstanding_kernels`` kernels and ``max_outstanding_dma`` DMAs
  are in flight; ``BLOCKDEP`` > 0 with an unchanged SHRAM layout lets an operation's start-up overlap the
  previous one's drain.  Jobs that run at the same time share each port's bandwidth (max-min fair).
* **PMU**: AXI beats (bytes / AXI width, per tensor transfer) and transactions per port and direction,
  MAC/AO/WD active cycles, cycles stalled on BLOCKDEP or a SHRAM reconfiguration; time-based events (CYCLE,
  NPU_ACTIVE, NPU_IDLE) are the PMU's own business (``pmu.py``).

Sources (facts only), Vela 5.1 (https://gitlab.arm.com/artificial-intelligence/ethos-u/ethos-u-vela): the
configurations, cycle tables and block fitting of Regor's ``architecture/ethosu55/ethos_u55.cpp`` (and
``ethos_u65.cpp``) and the Python ``architecture_features.py``; the estimator (per-block MAC cycles, AO cost, burst
efficiency, memory terms, DMA/weight prefetch) of Regor's ``ethos_u55_performance.cpp`` and the Python
``npu_performance.py``; the memories of ``config_files/Arm/vela.ini``; the PMU events, beats per AXI width and
REGIONCFG of the Ethos-U core driver's ``ethosu55_interface.h`` and ``pmu_ethosu.h``
(https://github.com/zephyrproject-rtos/hal_ethos_u).

Simplified: fixed costs per operation/DMA/stream are board parameters (``npu.timing_params``) with no public
figures behind them; no SHRAM bank conflicts; the Corstone-300 FVP's timing adapters and the AXI limits as
sustained rates (``adapter``), not the phase of the adapter's pulse; reads and writes of a port share one bandwidth budget (as in Vela); the command fetch does not
compete with other traffic; the weight decoder is the MAC formula's weight-buffer floor, not a decode rate; a
port's latency is paid once at the start (reads) and end (writes) of an operation, double buffering hides the
rest.

The package, one job per module: ``records`` (``OpTiming``, ``StreamTiming``), ``geometry`` (blocks, fetched
rows, IFM block depth), ``pipeline`` (the MAC/AO pipeline both products' compute models run), ``model``
(``TimingModel``: ports, REGIONCFG, each operation's job), ``adapter`` (the FVP's timing adapters as a port's
bandwidth and latencies), ``schedule`` (the event simulation, bandwidth sharing,
attribution), ``counters`` (the PMU events). It imports neither the weight decoders nor the engines.
"""

from .geometry import contiguous_run, ifm_block_depth, kernel_geometry  # noqa: F401
from .model import PARAM_NAMES, TimingModel  # noqa: F401
from .records import KERNEL_KINDS, OpTiming, StreamTiming  # noqa: F401
