"""firmware: the software that runs on the simulated Corstone-300.

A Python counterpart of ExecuTorch's ``arm_executor_runner`` and the Ethos-U driver. It never imports
``fvp``: it sees the machine only through the bus handle and the boot-info record the platform passes to
its entry point, exactly as real firmware sees memory-mapped hardware.
"""
