"""Arm Ethos-U55/U65/U85 NPU model: the MMIO device, the command-stream decoder, the functional engines, the timing
model and the PMU, shared by every product, and one folder per product family (``u55/``: the Ethos-U55 and U65,
``u85/``: the Ethos-U85) with what only that product does; ``arch.py`` is the one module that names the families
(docs/architecture.md)."""
