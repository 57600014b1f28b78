"""Arm Ethos-U55/U65 NPU model: MMIO device, command-stream decoder, functional engines, timing, PMU."""
