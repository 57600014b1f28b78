"""The parts of the Python ``arm_executor_runner`` (``examples/arm/executor_runner/`` in ExecuTorch): the runner's
main flow (``runner``), its inputs (``inputs``: files, semihosting argv, bundled test inputs), its outputs and
statistics (``outputs``: printed tensors, output files, the ETDump, the memory statistics), the BundleIO check
(``bundle_check``) and the options a board may set (``options``). The image the board names is
``firmware.arm_executor_runner``."""
