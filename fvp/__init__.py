"""fvp: an open model of Arm's Corstone-300 FVP (Cortex-M55 + Ethos-U55/U65).

The hardware half of the simulator. It never imports ``firmware``: the firmware named in the board
YAML is loaded by name and sees the machine only through the bus handle the platform gives it.
"""

__version__ = "0.1.0"
