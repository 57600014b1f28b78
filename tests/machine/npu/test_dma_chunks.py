"""Issue 27, item 5: a long DMA copies in chunks, checking the time limit before each, with no temporary of its
whole size, and copies as if its source were read whole first also when source and destination overlap."""

import numpy as np
import pytest

from fvp.machine.npu import dma_copy


@pytest.mark.parametrize("src_at, dst_at", [(0, 100), (100, 0), (0, 37), (37, 0), (0, 500), (500, 0), (10, 10)])
def test_chunked_copy_is_a_copy_of_the_source_as_it_was(monkeypatch, src_at, dst_at):
    checks = []
    monkeypatch.setattr(dma_copy, "DMA_CHUNK", 16)
    monkeypatch.setattr(dma_copy, "interruption_point", lambda: checks.append(1))
    mem = np.arange(1000, dtype=np.int64).astype(np.uint8)
    want = mem.copy()
    want[dst_at:dst_at + 300] = mem[src_at:src_at + 300].copy()
    dma_copy.copy_chunked(mem[dst_at:dst_at + 300], mem[src_at:src_at + 300])
    np.testing.assert_array_equal(mem, want)
    assert len(checks) == -(-300 // 16)  # a time-limit check before every chunk


def test_two_memories_and_a_short_copy(monkeypatch):
    monkeypatch.setattr(dma_copy, "interruption_point", lambda: pytest.fail("no check for one chunk"))
    a, b = np.arange(64, dtype=np.uint8), np.zeros(64, np.uint8)
    dma_copy.copy_chunked(b[8:40], a[0:32])
    assert b[8:40].tolist() == list(range(32)) and not b[:8].any() and not b[40:].any()
