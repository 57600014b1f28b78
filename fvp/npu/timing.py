"""NPU timing model (placeholder during bring-up: one cycle per command; replaced by the analytic model)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class StreamTiming:
    total_cycles: int
    per_op: list = field(default_factory=list)
    events: dict = field(default_factory=dict)


class TimingModel:
    def __init__(self, arch, system_config, memory_mode, enabled: bool = True):
        self.arch = arch
        self.system_config = system_config
        self.memory_mode = memory_mode
        self.enabled = enabled

    def stream(self, operations, device) -> StreamTiming:
        return StreamTiming(total_cycles=max(1, len(operations)))
