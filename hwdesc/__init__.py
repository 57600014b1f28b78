"""Hardware interface descriptions: the register maps, bit-fields, reset values, command codes and event
numbers of the simulated devices, declared once as data.

The simulated machine (``fvp``) and the firmware (``firmware``) both read these tables, the way a real
driver and a real RTL share one generated register header; this package imports neither of them.

* :mod:`hwdesc.regs` -- the vocabulary: :class:`~hwdesc.regs.Field`, :class:`~hwdesc.regs.Register`,
  :class:`~hwdesc.regs.RegisterMap` and :class:`~hwdesc.regs.Codes` (named numeric codes).
* :mod:`hwdesc.ethosu` -- the Ethos-U55/U65: MMIO and PMU registers, PMU event numbers, the command-stream
  ISA (opcodes, TSU registers and their fields) and its codes (activation, rounding, data types).
* :mod:`hwdesc.ethosu85` -- the Ethos-U85: the same tables for its register file, PMU and command set.
* :mod:`hwdesc.sigmoid` -- the int16 TANH/SIGMOID table (TFLite's, the Ethos-U's built-in one, Vela's U85 LUT).
* :mod:`hwdesc.cmsdk_uart` -- the CMSDK APB UART.
* :mod:`hwdesc.cortex_m55` -- the Cortex-M55 system registers the simulator models (DWT, PMU, NVIC, SCB, DCB).
* :mod:`hwdesc.boot` -- the boot-info record the platform gives a firmware image at reset (``BootInfo``, ``Pool``,
  ``NpuInfo``, ``Memory``).
"""
