"""ExecuTorch memory: the allocators the runner can use, the hierarchical (planned) allocator, the manager.

Allocators hand out *simulated addresses* inside pools that the board YAML places in memory regions, so where
a pool lives is where the tensors and the NPU scratch live. They are chosen by name (``firmware.allocator``)
from ``ALLOCATORS``:

* ``arm`` - the runner's ``ArmMemoryAllocator``: bump allocation with alignment, no ownership, ``reset()``,
  and used/free/peak statistics. Its accounting follows the runtime profile: ``true_offset`` (v1.4+: used =
  cur - base, padding included) or ``formula`` (PR #12353 .. v1.3: ``used_ += size`` when the size is aligned,
  else ``used_ = (used_ | (align-1)) + 1 + size``; ``reset()`` keeps the peak).
* ``minimal`` - the plain ``executorch::runtime::MemoryAllocator``: the same bump allocation, no statistics.

Failure logs the runtime's message ``Memory allocation failed: <n>B requested (adjusted for alignment),
<m>B available`` and returns ``None``, as the C++ returns ``nullptr``.
"""

from __future__ import annotations

from . import log
from .error import Error, RuntimeFailure


class MemoryAllocator:
    """``executorch::runtime::MemoryAllocator``: bump allocation over ``[base, base + size)``."""

    name = "minimal"
    has_statistics = False

    def __init__(self, pool: str, base: int, size: int, bus=None, accounting: str = "true_offset"):
        self.pool = pool
        self.base = base
        self._size = size
        self.bus = bus
        self.cur = base
        self.allocations = 0

    def size(self) -> int:
        return self._size

    def allocate(self, size: int, alignment: int = 4):
        """The address of ``size`` bytes aligned to ``alignment``, or ``None`` (logged) when the pool is full."""
        if self.bus is not None:
            self.bus.work("alloc")
        if alignment <= 0 or alignment & (alignment - 1):
            log.error(f"Alignment {alignment} is not a power of 2")
            return None
        start = -(-self.cur // alignment) * alignment
        end = self.base + self._size
        if start + size > end:
            log.error(f"Memory allocation failed: {size + (start - self.cur)}B requested (adjusted for alignment), "
                      f"{end - self.cur}B available")
            return None
        self.cur = start + size
        self.allocations += 1
        self._account(size, alignment)
        return start

    def _account(self, size: int, alignment: int) -> None:
        pass

    def reset(self) -> None:
        self.cur = self.base


class ArmMemoryAllocator(MemoryAllocator):
    """The runner's allocator with statistics (``arm_memory_allocator.cpp``)."""

    name = "arm"
    has_statistics = True

    def __init__(self, pool: str, base: int, size: int, bus=None, accounting: str = "true_offset"):
        super().__init__(pool, base, size, bus)
        if accounting not in ("true_offset", "formula"):
            raise ValueError(f"unknown accounting {accounting!r}")
        self.accounting = accounting
        self._used = 0
        self._peak = 0

    def _account(self, size: int, alignment: int) -> None:
        if self.accounting == "formula":
            if size & (alignment - 1) == 0:
                self._used += size
            else:
                self._used = (self._used | (alignment - 1)) + 1 + size
        else:
            self._used = self.cur - self.base
        self._peak = max(self._peak, self._used)

    def used_size(self) -> int:
        return self._used

    def free_size(self) -> int:
        return self._size - self._used

    def peak_used(self) -> int:
        return self._peak

    def reset(self) -> None:
        super().reset()
        self._used = 0  # the peak is kept, as in the C++


ALLOCATORS = {"arm": ArmMemoryAllocator, "minimal": MemoryAllocator}


def make_allocator(kind: str, pool: str, base: int, size: int, bus=None, accounting: str = "true_offset"):
    try:
        cls = ALLOCATORS[kind]
    except KeyError:
        raise RuntimeFailure(Error.InvalidArgument, f"unknown allocator {kind!r}; available: {', '.join(ALLOCATORS)}")
    return cls(pool, base, size, bus, accounting)


class HierarchicalAllocator:
    """Planned memory: buffer ``mem_id - 1`` holds the tensors of ``allocation_info.memory_id == mem_id``."""

    def __init__(self, buffers: list[tuple[int, int]]):
        self.buffers = buffers  # (address, size) per planned buffer, index = mem_id - 1

    def get_offset_address(self, memory_id: int, offset: int, size: int) -> int:
        idx = memory_id - 1
        if not 0 <= idx < len(self.buffers):
            raise RuntimeFailure(Error.InvalidArgument,
                                 f"id {memory_id} >= {len(self.buffers) + 1} planned buffers")
        addr, bsize = self.buffers[idx]
        if offset + size > bsize:
            raise RuntimeFailure(Error.MemoryAllocationFailed,
                                 f"offset {offset} + size {size} > size {bsize} of planned buffer {memory_id}")
        return addr + offset


class MemoryManager:
    def __init__(self, method_allocator, planned_memory: HierarchicalAllocator, temp_allocator):
        self.method_allocator = method_allocator
        self.planned_memory = planned_memory
        self.temp_allocator = temp_allocator
