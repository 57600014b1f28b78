"""Planned buffer mem_id 3 lives in the FAST_MEMORY_REGION pool (executorch-1.5 runner), a synthetic program."""

import re

from test_program_synthetic import T, build, ev, ev_tensor, kernel
from testutil import run_fvp


def _program(tmp_path):
    values = [
        ev_tensor(6, [2], mem=(1, 0)),  # 0 input in mem_id 1
        ev_tensor(6, [2], mem=(3, 0)),  # 1 output in mem_id 3 (fast memory)
        ev(2, T((0, "i64", 1))),  # 2 alpha
    ]
    plan = T((0, "str", "forward"), (2, "tables", values), (3, "vi32", [0]), (4, "vi32", [1]),
             (5, "tables", [T((0, "vi32", [0]), (1, "vi32", [1]), (2, "tables", [kernel(0, [0, 0, 2, 1, 1])]))]),
             (6, "tables", [T((0, "str", "aten::add"), (1, "str", "out"))]), (7, "tables", []),
             (8, "vi64", [0, 16, 0, 16]))
    root = T((0, "u32", 0), (1, "tables", [plan]), (4, "tables", [T((0, "u64", 0), (1, "u64", 0))]),
             (5, "table", T((0, "u32", 0), (1, "vu64", [0]))))
    p = tmp_path / "fast.pte"
    p.write_bytes(build(root, b"ET12"))
    return p


def test_fast_memory_pool_serves_mem_id_3(tmp_path):
    p = _program(tmp_path)
    rc, out, err = run_fvp("run", p, "-C", "firmware.pools.temp.size=1MiB", "-C", "firmware.pools.planned_fast.region=SRAM",
                           "-C", "firmware.pools.planned_fast.size=64KiB")
    assert rc == 0, out + err
    assert "Setup planned FAST_MEMORY_REGION pool. Size: 65536 bytes." in out
    assert "Setting up planned buffer with mem_id=3, size 16." in out
    assert re.search(r"planned_fast_allocator:    16 / 65536 free: 65520 \( used: 0 % \) $", out, re.M)
    assert "planned_fast_used:         16 bytes" in out
    assert "method_allocator_planned:  16 bytes" in out  # only mem_id 1 came from the method pool
    assert "Output[0][0]: (float) 2.000000" in out and "Output[0][1]: (float) 2.000000" in out


def test_fast_memory_buffer_without_a_pool_is_fatal(tmp_path):
    rc, out, err = run_fvp("run", _program(tmp_path))
    assert rc == 1
    fatal = [l for l in out.splitlines() if l.startswith("F [executorch:")]
    assert len(fatal) == 1 and fatal[0].endswith(
        "Planned buffer 2 uses mem_id=3/FAST_MEMORY_REGION, but ET_ARM_BAREMETAL_PLANNED_FAST_MEMORY_SIZE is not set")
