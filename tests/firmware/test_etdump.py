"""The runner's ETDump (issue 21): ``fvp run --etdump FILE``, and the base64 ``#[RUN THIS]`` block that
``run_fvp.sh`` extracts when the runner is built with the event tracer (``firmware.options.etdump``); its debug
events and debug buffer (``firmware.options.etdump_debug``: ET_DUMP_OUTPUTS / ET_DUMP_INTERMEDIATE_OUTPUTS).

The file is read back with the generated ETDump schema classes (``firmware/executorch/etdump_schema``); the
ExecuTorch-marked test opens it in ExecuTorch's own deserializer and Inspector (optional extra)."""

from __future__ import annotations

import base64
import re
import subprocess
import sys

import numpy as np
import pytest
from testutil import CORPUS, DATA, executorch_python, run_fvp

from firmware.executorch.etdump import read_etdump

PROGRAMS = [CORPUS / "mobilenet_v1_025_u55-128.bpte", DATA / "oracle_u85" / "resnet8_u85-128" / "resnet8_u85-128.bpte"]
# debug events: a delegated program (3 quantize, the Ethos-U delegate, dequantize) and a CPU-only one
DEBUG_PROGRAMS = [CORPUS / "add_mul_u55-128.bpte", DATA / "cpu_programs" / "cpu4_math.bpte"]
ELEM = {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 6: 4, 7: 8, 11: 1, 22: 2, 27: 2}  # ETDump scalar type -> element bytes


def _blocks(et, event):
    """[(run data block's name, [event(e) for each of its events])] of a read ETDump."""
    blocks = []
    for i in range(et.RunDataLength()):
        rd = et.RunData(i)
        blocks.append((rd.Name().decode(), [event(rd.Events(j)) for j in range(rd.EventsLength())]))
    return blocks


def _profile_event(ev):
    pe = ev.ProfileEvent()
    return pe.Name().decode(), pe.InstructionId(), pe.ChainIndex(), pe.StartTime(), pe.EndTime()


def _events(path):
    et = read_etdump(path.read_bytes())
    return et.Version(), _blocks(et, _profile_event)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_etdump_file_has_the_runtimes_events(tmp_path, program):
    f = tmp_path / "etdump.bin"
    rc, out, err = run_fvp("run", program, "--etdump", f)
    assert rc == 0, err
    assert "Setting up ETDump" in out and f"Writing etdump to file: {f}" in out
    version, blocks = _events(f)
    assert version == 0 and [b[0] for b in blocks] == ["Default", "Execute"]
    default = [e[0] for e in blocks[0][1]]
    assert default == ["Method::init", "Program::load_method"]  # written as they end: the nested one first
    ex = blocks[1][1]
    names = [e[0] for e in ex]
    assert names[-1] == "Method::execute" and "DELEGATE_CALL" in names and "EthosUBackend::execute()" in names
    assert all(s <= e for _, _, _, s, e in ex)
    top = ex[-1]
    # outside an instruction the tracer's chain and debug handle are unset: kUnsetChainId -1, kUnsetDebugHandle 0
    assert (top[1], top[2]) == (0, -1) and all((e[1], e[2]) == (0, -1) for e in blocks[0][1])
    for name, inst, chain, s, e in ex[:-1]:
        assert top[3] <= s <= e <= top[4] and chain == 0
        if name in ("OPERATOR_CALL", "DELEGATE_CALL"):
            assert inst >= 0
    # the backend's event sits inside its DELEGATE_CALL and carries that call's instruction
    i = names.index("EthosUBackend::execute()")
    backend, call = ex[i], ex[i + 1]
    assert call[0] == "DELEGATE_CALL" and backend[1] == call[1] and call[3] <= backend[3] <= backend[4] <= call[4]


def test_base64_block_is_what_run_fvp_sh_extracts(tmp_path):
    program = PROGRAMS[0]
    f = tmp_path / "direct.bin"
    run_fvp("run", program, "--etdump", f)
    rc, out, err = run_fvp("run", program, "-C", "firmware.options.etdump=true")
    assert rc == 0, err
    block = re.search(r"^#\[RUN THIS\]\n(.*?)^#\[END\]$", out, re.M | re.S)
    assert block, out[-2000:]
    line = [x for x in block.group(1).splitlines() if ">etdump.bin" in x][0]
    # run_fvp.sh: grep ">etdump.bin" | cut -d\" -f2- | cut -d\" -f1 | base64 -d
    data = base64.b64decode(line.split('"', 1)[1].split('"', 1)[0])
    assert data == f.read_bytes()
    assert re.search(r"\[base64\] buffer size: \d+", out)


def test_etdump_bad_path_and_option_value(tmp_path):
    rc, out, err = run_fvp("run", PROGRAMS[0], "--etdump", tmp_path / "missing" / "e.bin")
    assert rc == 2 and "--etdump" in err and "Traceback" not in err
    rc, out, err = run_fvp("run", PROGRAMS[0], "-C", "firmware.options.etdump=maybe")
    assert rc == 2 and "firmware.options.etdump" in err


def _debug_run(tmp_path, program, level="intermediate", *extra):
    e, d = tmp_path / "etdump.bin", tmp_path / "debug_buffer.bin"
    rc, out, err = run_fvp("run", program, "--etdump", e, "--etdump-debug-buffer", d, "-o", tmp_path / "out",
                           "-C", f"firmware.options.etdump_debug={level}", *extra)
    assert rc == 0, err + out[-3000:]
    return e, d, out


def _any_event(ev):
    pe, de = ev.ProfileEvent(), ev.DebugEvent()
    assert (pe is None) != (de is None)
    if pe is not None:
        return "P", pe.Name().decode(), pe.InstructionId(), pe.ChainIndex()
    assert de.Name() is None and de.DelegateDebugIdInt() == -1 and de.DelegateDebugIdStr() is None
    return "D", de.InstructionId(), de.ChainIndex(), de.DebugEntry()


def _all_events(etdump_path):
    """Per block: (kind, ...) with kind P (name, instruction, chain) or D (instruction, chain, value)."""
    return _blocks(read_etdump(etdump_path.read_bytes()), _any_event)


def _tensor(value, buf):
    """(scalar type, sizes, strides, offset, bytes) of a debug event's Tensor value, its bytes from ``buf``."""
    from firmware.executorch.etdump_schema import ValueType

    assert value.Val() == ValueType.Tensor
    return _parse(value.Tensor(), buf)


def _tensors(value, buf):
    """The tensors of a Tensor or TensorList value."""
    from firmware.executorch.etdump_schema import ValueType

    if value.Val() == ValueType.TensorList:
        tl = value.TensorList()
        return [_parse(tl.Tensors(i), buf) for i in range(tl.TensorsLength())]
    return [_tensor(value, buf)]


def _parse(t, buf):
    sizes, strides = t.SizesAsNumpy().tolist(), t.StridesAsNumpy().tolist()
    n = int(np.prod(sizes)) * ELEM[t.ScalarType()]
    return t.ScalarType(), sizes, strides, t.Offset(), buf[t.Offset():t.Offset() + n]


def _check_data_sink(out, buf, values):
    """BufferDataSink: each blob at the next 64-aligned address (of the buffer's address, which the runner's
    allocation aligns to 16 only), in logging order, the gaps zeroed, nothing after the last; the strides
    those of a contiguous tensor."""
    base = int(re.search(r"output buffer size: \d+ at 0x0x([0-9a-f]+)", out).group(1), 16)
    assert base % 16 == 0
    end = 0
    for value in values:
        for st, sizes, strides, off, data in _tensors(value, buf):
            assert (base + off) % 64 == 0 and end <= off < end + 64 and not any(buf[end:off])
            end = off + len(data)
            assert strides == [int(np.prod(sizes[k + 1:])) for k in range(len(sizes))]
    assert end == len(buf)


@pytest.mark.parametrize("program", DEBUG_PROGRAMS, ids=lambda p: p.name)
def test_debug_events_hold_the_outputs_byte_for_byte(tmp_path, program):
    e, d, out = _debug_run(tmp_path, program)
    buf = d.read_bytes()
    assert re.search(r"ETDump: Allocated intermediate output buffer size: 2097152 at 0x0x[0-9a-f]+\n", out)
    assert f"ETDump_outputs_buffer:     {len(buf)} / 2097152 free: {2097152 - len(buf)} " in out
    assert out.index("Writing etdump debug_buffer to file") < out.index("Writing etdump to file")
    blocks = _all_events(e)
    assert [b[0] for b in blocks] == ["Default", "Execute"] and all(ev[0] == "P" for ev in blocks[0][1])
    ex = blocks[1][1]
    # the program outputs (Method::log_outputs) come after the Method::execute event, flagged output, with the
    # unset chain (-1 as a ulong) and debug handle (0); each equals the runner's output file byte for byte
    top = [i for i, ev in enumerate(ex) if ev[0] == "P" and ev[1] == "Method::execute"]
    assert len(top) == 1
    outputs = ex[top[0] + 1:]
    files = sorted(tmp_path.glob("out-*.bin"))
    assert len(outputs) == len(files) >= 1
    for ev, f in zip(outputs, files):
        assert ev[0] == "D" and ev[1] == 0 and ev[2] == (1 << 64) - 1
        assert ev[3].Output() is not None and ev[3].Output().BoolVal()
        assert _tensor(ev[3], buf)[4] == f.read_bytes()
    # every instruction's debug events come before its own profile event and carry its chain and instruction
    # (a kernel's debug events sit inside its wrapper's native_call_<op> event, which ends just before the
    # OPERATOR_CALL around it, with the same chain and instruction)
    pending = []
    logged = {}
    native = None
    for ev in ex[:top[0]]:
        if ev[0] == "D":
            pending.append(ev)
            continue
        if ev[1].startswith("native_call_"):
            assert native is None and ev[3] == 0, ev
            native = ev
            continue
        if ev[1] == "OPERATOR_CALL":
            assert native is not None and native[2] == ev[2], (native, ev)
            native = None
        for dv in pending:
            assert ev[1] in ("OPERATOR_CALL", "DELEGATE_CALL") and (dv[1], dv[2]) == (ev[2], ev[3]) == (dv[1], 0)
            assert dv[3].Output() is None
        if ev[1] in ("OPERATOR_CALL", "DELEGATE_CALL"):
            assert pending, f"{ev[1]} {ev[2]} logged no output"
            logged[ev[2]] = (ev[1], pending)
        pending = []
    assert not pending
    # the last operator's output is the program's (last) output
    last = logged[max(logged)]
    assert _tensor(last[1][-1][3], buf)[4] == files[-1].read_bytes()
    _check_data_sink(out, buf, [dv[3] for _, (_, evs) in sorted(logged.items()) for dv in evs]
                     + [ev[3] for ev in outputs])
    if "cpu" not in program.name:  # the delegate call logs every argument: its inputs, then its output
        (call,) = [v for v in logged.values() if v[0] == "DELEGATE_CALL"]
        assert len(call[1]) == 4


def test_outputs_only_and_base64_block(tmp_path):
    program = DEBUG_PROGRAMS[1]
    e, d, out = _debug_run(tmp_path, program, "outputs")
    assert "ETDump: Allocated output buffer size: 2097152 at 0x0x" in out
    ex = _all_events(e)[1][1]
    debug = [ev for ev in ex if ev[0] == "D"]
    assert ex[-len(debug) - 1][1] == "Method::execute" and all(ev[3].Output().BoolVal() for ev in debug)
    assert _tensor(debug[0][3], d.read_bytes())[3] == 0
    # the non-semihosting build prints both buffers base64: debug_buffer.bin first, then etdump.bin, and the
    # inspector_cli line gets --debug_buffer_path (run_fvp.sh: grep ">debug_buffer.bin" | cut | base64 -d)
    rc, out2, err = run_fvp("run", program, "-C", "firmware.options.etdump=true",
                            "-C", "firmware.options.etdump_debug=outputs")
    assert rc == 0, err
    block = re.search(r"^#\[RUN THIS\]\n(.*?)^#\[END\]$", out2, re.MULTILINE | re.DOTALL).group(1).splitlines()
    assert block[0] == "# Writing debug_buffer.bin [base64]" and block[2] == "# Writing etdump.bin [base64]"

    def grab(marker):
        return base64.b64decode(next(x for x in block if marker in x).split('"')[1])

    assert grab(">debug_buffer.bin") == d.read_bytes() and grab(">etdump.bin") == e.read_bytes()
    assert ("python3 -m devtools.inspector.inspector_cli --etdump_path etdump.bin --debug_buffer_path "
            "debug_buffer.bin --source_time_scale cycles --target_time_scale cycles") in block
    n = max(len(base64.b64encode(d.read_bytes())), len(base64.b64encode(e.read_bytes())))
    assert f"[base64] buffer size: {n}\n" in out2


def test_semihosting_runner_writes_debug_buffer_bin(tmp_path):
    # the semihosting build fwrites debug_buffer.bin, then etdump.bin, in its cwd; here the buffer is not
    # 64-aligned (0x...50), so the first blob starts past offset 0
    sys.path.insert(0, str(DATA.parent / "host"))
    from test_profile_executorch_main import harness_run, unmatched

    (tmp_path / "program.pte").write_bytes((CORPUS / "add_fp_cpu.pte").read_bytes())
    np.array([0.25], np.float32).tofile(tmp_path / "i0.bin")
    np.array([0.5], np.float32).tofile(tmp_path / "i1.bin")
    rc, out, err = harness_run(tmp_path, "executor_runner -m program.pte -o out -i i0.bin -i i1.bin",
                               "-C", "firmware.options.etdump=true", "-C", "firmware.options.etdump_debug=intermediate")
    assert rc == 0, err + out
    assert unmatched(out) == []  # every line, the new ones too, is a format of main's runner
    assert out.index("Writing etdump debug_buffer to file: debug_buffer.bin") < out.index(
        "Writing etdump to file: etdump.bin")
    buf = (tmp_path / "debug_buffer.bin").read_bytes()
    ex = _all_events(tmp_path / "etdump.bin")[1][1]
    debug = [ev[3] for ev in ex if ev[0] == "D"]
    assert len(debug) == 2 and debug[1].Output().BoolVal()  # the add's out, then the program output
    _check_data_sink(out, buf, debug)
    assert _tensor(debug[0], buf)[3] > 0
    assert _tensor(debug[0], buf)[4] == _tensor(debug[1], buf)[4] == (tmp_path / "out-0.bin").read_bytes()
    assert np.frombuffer(_tensor(debug[1], buf)[4], np.float32)[0] == 0.75


def test_debug_buffer_too_small_aborts(tmp_path):
    # BufferDataSink::write: "Ran out of space ...", then log_evalue's ET_CHECK_MSG aborts the run
    rc, out, _ = run_fvp("run", DEBUG_PROGRAMS[1], "-C", "firmware.options.etdump=true",
                           "-C", "firmware.options.etdump_debug=intermediate",
                           "-C", "firmware.options.etdump_debug_buffer_size=100")
    assert rc != 0
    assert "Ran out of space to store intermediate outputs." in out
    assert ("In function log_evalue(), assert failed (offset.ok()): write_tensor_or_return_error() failed to write "
            "tensor to debug buffer") in out
    assert "#[RUN THIS]" not in out


def test_debug_buffer_too_big_for_the_method_pool(tmp_path):
    # the allocation fails: an error line, and the run goes on with profiling events only
    rc, out, err = run_fvp("run", DEBUG_PROGRAMS[1], "--etdump", tmp_path / "e.bin", "--etdump-debug-buffer",
                           tmp_path / "d.bin", "-C", "firmware.options.etdump_debug=outputs",
                           "-C", "firmware.options.etdump_debug_buffer_size=4000000000")
    assert rc == 0, err
    assert "ETDump: Could not allocate memory for output buffer size 4000000000" in out
    assert not (tmp_path / "d.bin").exists() and "ETDump_outputs_buffer" not in out
    assert all(ev[0] == "P" for b in _all_events(tmp_path / "e.bin") for ev in b[1])


@pytest.mark.parametrize("args, message", [
    (("-C", "firmware.options.etdump_debug=all"), "firmware.options.etdump_debug"),
    (("-C", "firmware.options.etdump_debug=outputs"), "needs the ETDump"),
    (("--etdump", "E", "-C", "firmware.options.etdump_debug=outputs"), "--etdump-debug-buffer"),
    (("--etdump", "E", "--etdump-debug-buffer", "D"), "--etdump-debug-buffer needs"),
    (("-C", "firmware.options.etdump=true", "-C", "firmware.options.etdump_debug_buffer_size=0"),
     "etdump_debug_buffer_size"),
])
def test_debug_option_errors(tmp_path, args, message):
    args = [str(tmp_path / a) if a in ("E", "D") else a for a in args]
    rc, _, err = run_fvp("run", DEBUG_PROGRAMS[1], *args)
    assert rc == 2 and message in err and "Traceback" not in err, err


ETDUMP_ELF = DATA / "runner_elf" / "u55-128_add_bundled_etdump.elf"


@pytest.mark.skipif(not ETDUMP_ELF.is_file(), reason="the runner ELF fixtures are not there")
def test_the_real_etdump_runner_elf_was_built_with_intermediate_outputs():
    # run.sh --etdump builds with -DET_DUMP_INTERMEDIATE_OUTPUTS=ON: its "Allocated intermediate output" string
    from fvp.host.dropin.elf_image import read_elf

    assert read_elf(str(ETDUMP_ELF)).etdump_debug == "intermediate"
    assert read_elf(str(DATA / "runner_elf" / "u55-128_add_bundled.elf")).etdump_debug == "none"


_executorch_python = executorch_python


@pytest.mark.executorch
@pytest.mark.skipif(_executorch_python() is None, reason="ExecuTorch is not installed (pip install '.[executorch]' "
                                                         "or set EXECUTORCH_PYTHON)")
def test_executorch_inspector_reads_it(tmp_path):
    f = tmp_path / "etdump.bin"
    run_fvp("run", PROGRAMS[0], "--etdump", f)
    code = ("import sys\n"
            "from executorch.devtools import Inspector\n"
            "ins = Inspector(etdump_path=sys.argv[1])\n"
            "names = [e.name for b in ins.event_blocks for e in b.events]\n"
            "assert 'Method::execute' in names and 'DELEGATE_CALL' in names, names\n"
            "print('OK', len(names))\n")
    p = subprocess.run([_executorch_python(), "-c", code, str(f)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0 and "OK" in p.stdout, p.stdout + p.stderr


@pytest.mark.executorch
@pytest.mark.skipif(_executorch_python() is None, reason="ExecuTorch is not installed (pip install '.[executorch]' "
                                                         "or set EXECUTORCH_PYTHON)")
@pytest.mark.parametrize("program", DEBUG_PROGRAMS, ids=lambda p: p.name)
def test_executorch_inspector_reads_the_debug_buffer(tmp_path, program):
    e, d, _ = _debug_run(tmp_path, program)
    outs = [str(f) for f in sorted(tmp_path.glob("out-*.bin"))]
    code = ("import sys, warnings\n"
            "warnings.simplefilter('ignore')\n"
            "from executorch.devtools import Inspector\n"
            "ins = Inspector(etdump_path=sys.argv[1], debug_buffer_path=sys.argv[2])\n"
            "(block,) = [b for b in ins.event_blocks if b.name == 'Execute']\n"
            "outs = [open(f, 'rb').read() for f in sys.argv[3:]]\n"
            "got = [t.contiguous().numpy().tobytes() for t in block.run_output]\n"
            "assert got == outs, (len(got), len(outs))\n"
            "calls = [ev for ev in block.events if ev.name in ('OPERATOR_CALL', 'DELEGATE_CALL')]\n"
            "assert calls and all(ev.debug_data for ev in calls), [(ev.name, ev.debug_data) for ev in calls]\n"
            "assert calls[-1].debug_data[-1].contiguous().numpy().tobytes() == outs[-1]\n"
            "print('OK', len(calls), sum(len(ev.debug_data) for ev in calls))\n")
    p = subprocess.run([_executorch_python(), "-c", code, str(e), str(d), *outs], capture_output=True, text=True,
                       timeout=600, check=False)
    assert p.returncode == 0 and "OK" in p.stdout, p.stdout + p.stderr
