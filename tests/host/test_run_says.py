"""``fvp run`` says what it ran and why it failed, on stderr (issue 30): one line naming the program, the board, its
NPU, system config and memory mode and where each came from (the program's compile specs, --target, -c, -C or
the board's own), and, when the run fails, its reason, also when stdout goes to a file."""

import pytest

from testutil import CORPUS, DATA, run_fvp


def _config(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("fvp: running ")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("args, want", [
    (["run"], "fvp: running the embedded program (the tutorial's x + x) on default: ethos-u55-128, "
              "Ethos_U55_High_End_Embedded, Shared_Sram (the board's)"),
    (["run", CORPUS / "add_u55-128.bpte"], "fvp: running add_u55-128.bpte on corstone-300-ethos-u55-128: "
                                           "ethos-u55-128, Ethos_U55_High_End_Embedded, Shared_Sram "
                                           "(the program's compile specs)"),
    (["run", CORPUS / "mobilenet_v1_025_u65-256.bpte", "-C", "npu.memory_mode=Sram_Only", "-C",
      "firmware.allocator=minimal"],
     "fvp: running mobilenet_v1_025_u65-256.bpte on corstone-300-ethos-u65-256: ethos-u65-256, Ethos_U65_High_End "
     "(the program's compile specs), Sram_Only (-C npu.memory_mode); with -C firmware.allocator=minimal"),
    (["run", CORPUS / "add_u55-128.bpte", "--target", "ethos-u55-256"],
     "on corstone-300-ethos-u55-256: ethos-u55-256 (--target ethos-u55-256), Ethos_U55_High_End_Embedded, "
     "Shared_Sram (the program's compile specs)"),
    (["run", "-c", "corstone-300-ethos-u65-256"],
     "on corstone-300-ethos-u65-256: ethos-u65-256, Ethos_U65_High_End, Dedicated_Sram "
     "(-c corstone-300-ethos-u65-256)"),
    (["run", DATA / "cpu_programs" / "cpu4_dist.bpte"],
     "(the board's; the program has no Ethos-U delegate)"),
])
def test_the_configuration_is_one_stderr_line(args, want):
    rc, out, err = run_fvp(*args)
    assert want in _config(err), err
    assert "fvp: running" not in out  # the log on stdout is the runner's alone
    rc, out, err = run_fvp(*args, "-q")
    assert "fvp: running" not in err


def test_a_failure_says_why_on_stderr(tmp_path):
    truncated = tmp_path / "cut.pte"
    truncated.write_bytes((CORPUS / "add_q.pte").read_bytes()[:3000])
    missing = tmp_path / "renamed.pte"
    missing.write_bytes((CORPUS / "add_fp_cpu.pte").read_bytes().replace(b"aten::add", b"aten::adz"))
    cases = [([truncated], 2, "cut.pte: program: "),  # refused before the run (the loader's check)
             ([missing], 1, "the application aborted"),
             ([CORPUS / "mv2_full_u55-128.bpte", "-C", "firmware.pools.temp.size=256KiB"], 1,
              "the application aborted: Execution of method forward failed"),
             ([CORPUS / "add_u55-128.bpte", "--cyclelimit", "10"], 3, "Cycle limit has been exceeded (exit status 3)")]
    for args, status, want in cases:
        rc, out, err = run_fvp("run", *args, "-q")
        last = err.strip().splitlines()[-1]
        assert rc == status and last.startswith("fvp: error: ") and want in last, err
        if rc != 2:  # a run that failed names its exit status; a refusal before the run is the usage error line
            assert last.endswith(f"(exit status {rc})"), last
    rc, out, err = run_fvp("run", CORPUS / "add_u55-128.bpte")
    assert rc == 0 and "fvp: error" not in err
