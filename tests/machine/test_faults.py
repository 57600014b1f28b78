"""Faults as the hardware and the runtime report them: exact messages and exit statuses."""

import re
import struct

import pytest

from testutil import CORPUS, DATA, run_fvp

BLOB = 0x70  # the Vela blob of add_q.pte (inline delegate data)
PAYLOAD = BLOB + 32 + 32  # after the empty vela_bin_stream block and the cmd_data block header
STREAM = PAYLOAD + 32  # COP1 + OPTIMIZER_CONFIG (3 words) + 3 NOPs + the COMMAND_STREAM header


def _patched(tmp_path, word_index, value):
    data = bytearray((CORPUS / "add_q.pte").read_bytes())
    assert struct.unpack_from("<I", data, PAYLOAD)[0] == 0x31504F43  # COP1
    assert struct.unpack_from("<I", data, STREAM - 4)[0] & 0xFF == 2  # COMMAND_STREAM
    struct.pack_into("<I", data, STREAM + 4 * word_index, value)
    p = tmp_path / "patched.pte"
    p.write_bytes(bytes(data))
    return p


def _fatal(out):
    return [l for l in out.splitlines() if l.startswith("F [executorch:")]


def test_invalid_opcode_is_a_cmd_parse_error(tmp_path):
    rc, out, err = run_fvp("run", _patched(tmp_path, 0, 0x0000_03FF))
    assert rc == 1, out
    assert re.search(r"^\[warning \]\[ethosu@0\]\[\d+ ns\] NPU command stream parse error at command stream offset 0x0: ",
                     out, re.M)
    assert re.search(r"^E: NPU fault: status=0x[0-9a-f]{8} \(cmd_parse_error\), qread=\d+ \(ethosu\.py:\d+\)$", out, re.M)
    assert re.search(r"^E \[executorch:ethosu_backend\.py:\d+ _execute\(\)\] Ethos-U invocation failed error \(-1\)$", out, re.M)
    (fatal,) = _fatal(out)
    assert fatal.endswith("Execution of method forward failed with status 0x23")
    assert "Program complete" not in out and "Traceback" not in out + err


def test_region_in_dtcm_is_a_bus_fault(tmp_path):
    rc, out, err = run_fvp("run", CORPUS / "add_q.pte", "-C", "firmware.pools.temp.region=DTCM",
                           "-C", "firmware.pools.temp.npu=false", "-C", "firmware.pools.temp.size=64KiB")
    assert rc == 1, out
    warn = [l for l in out.splitlines() if "NPU bus fault" in l]
    assert warn and "region 1" in warn[0] and "DTCM" in warn[0] and "cannot reach" in warn[0]
    assert re.search(r"^E: NPU fault: status=0x[0-9a-f]{8} \(bus_status\)", out, re.M)
    assert "Ethos-U invocation failed error (-1)" in out
    assert _fatal(out)[0].endswith("Execution of method forward failed with status 0x23")


def test_unaligned_base_address_is_rejected_by_the_driver():
    # PR-era runtimes allocate the scratch with 4-byte alignment: a pool at ...04 gives an unaligned region 1
    rc, out, err = run_fvp("run", CORPUS / "addint_u55.pte", "-C", "firmware.runtime=executorch-pr12353",
                           "-C", "firmware.pools.temp.address=0x3100_0004", "-C", "firmware.pools.temp.size=1MiB")
    assert rc == 1, out
    assert re.search(r"^E: Base addr 1: 0x31000004 not aligned to 16 bytes \(ethosu\.py:\d+\)$", out, re.M)
    assert "Ethos-U invocation failed error (-1)" in out


def test_strict_mode_turns_guest_errors_into_failures():
    # writing the NPU's read-only STATUS register is a guest error: a warning normally, a failure in strict mode
    from fvp.boards import load_board
    from fvp.host.run import session
    from fvp.machine.platform import Platform
    import io

    def firmware(bus, boot):
        bus.write32(boot.npu.base + 0x004, 1)
        bus.write_repeated(boot.console_base + 0x008, b"\x01")
        return 0

    for strict, code, reason in ((False, 1, "exit"), (True, 1, "guest_error")):
        p = Platform(load_board("default"), model=b"\0" * 16, strict=strict)
        p.out = io.StringIO()
        r = session.run(p, firmware)
        assert r.reason == reason and "read-only register STATUS" in r.guest_errors[0]
        if strict:
            assert "[critical] guest error (strict mode)" in p.out.getvalue()
        else:
            assert "guest error: ethosu: write of 0x1 to read-only register STATUS" in p.out.getvalue()


def _with_param(tmp_path, src, arch_name, command, param, name):
    """``src`` with the param of the first ``command`` of its Ethos-U command stream set to ``param``."""
    from fvp.machine.npu.arch import get_arch
    from fvp.machine.npu.command_stream import iter_commands, parse_driver_payload

    data = bytearray(src.read_bytes())
    at = data.find(b"COP1")  # the driver payload: the stream's words are 4-byte aligned from here
    payload = parse_driver_payload(bytes(data[at:at + (len(data) - at) // 4 * 4]))
    cmd = next(c for c in iter_commands(payload.stream, get_arch(arch_name)) if c.name == command)
    struct.pack_into("<H", data, at + payload.stream_offset + cmd.offset + 2, param)
    p = tmp_path / name
    p.write_bytes(bytes(data))
    return p


@pytest.mark.parametrize("src,arch_name,command,param,field,value", [
    # the security issue's cases: U55 IFM_PRECISION 0x1b02 (scale_mode 3; was an AttributeError inside the NPU model) and
    # ACTIVATION 0x1336 in a .tflite (clip range 1; was an IndexError); a U85 ACTIVATION function no LUT kind has
    (CORPUS / "add_u55-128.bpte", "ethos-u55-128", "NPU_SET_IFM_PRECISION", 0x1B02, "scale_mode", 3),
    (DATA / "tflm" / "kws_micronet_m_u55-128_vela.tflite", "ethos-u55-128", "NPU_SET_ACTIVATION", 0x1336,
     "activation_clip_range", 1),
    (DATA / "oracle_u85" / "add_u85-128" / "add_u85-128.bpte", "ethos-u85-128", "NPU_SET_ACTIVATION", 0x0002,
     "activation_function", 2),
], ids=["u55-bpte", "u55-tflite", "u85-bpte"])
def test_an_invalid_register_value_is_one_line_and_exit_1(tmp_path, src, arch_name, command, param, field, value):
    """An enumerated field with a value the product does not define: the NPU stops the stream with a parse error
    whose one line names the command, the field and the value; the driver sees the fault, the runner fails (exit
    status 1); no traceback, no "simulator error"."""
    rc, out, err = run_fvp("run", _with_param(tmp_path, src, arch_name, command, param, "bad" + src.suffix))
    assert rc == 1, out[-2000:] + err[-2000:]
    lines = [line for line in out.splitlines() if "invalid command stream" in line]
    assert len(lines) == 1, out[-3000:]
    assert re.search(rf"NPU command stream parse error at command stream offset 0x[0-9a-f]+: invalid command "
                     rf"stream: {command} {field} = {value}, ", lines[0]), lines[0]
    assert "(cmd_parse_error)" in out
    assert "Traceback" not in out + err and "[critical]" not in out and "simulator error" not in out
