"""Invalid register values are a diagnosis, not a crash: each product family translates every enumerated field it
reads into a named code once, and a value its ISA table (``hwdesc.ethosu``, ``hwdesc.ethosu85``) does not define
is an ``NpuFault("cmd_parse_error")`` that says the command stream is invalid and names the command, the field and
the value.

The loop goes over the hwdesc tables, not hand-picked cases: for both ISAs, every enumerated field of every command
and each of its undefined values, set in the register state of real operations (the first of each kind and mode in
programs Vela compiled) or in an operation's own parameter. Each such value must be refused by an operation that
reads the field, and no value of any field may make the decoder raise anything but an ``NpuFault``. End to end
(``fvp run``): one line, exit status 1, no traceback (tests/machine/test_faults.py)."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest

from hwdesc import ethosu, ethosu85

from fvp.errors import NpuFault
from fvp.machine.npu.arch import get_arch
from fvp.machine.npu.command_stream import RegisterState, iter_commands
from fvp.machine.npu.execute import execute_stream
from fvp.machine.npu.operations import build_operation
from machine.npu.helpers import FakeMemory, extract_vela_blobs
from testutil import CORPUS, DATA

#: programs whose operations stand for every kind and mode a field can be read by
PROGRAMS = {
    "hwdesc.ethosu": [CORPUS / "mv2_full_u55-128.bpte", CORPUS / "softmax_u55-128.bpte",
                      CORPUS / "add_mul_u55-128.bpte", CORPUS / "resnet8_u65-512.bpte",
                      DATA / "oracle_extra" / "upsample_u55-128" / "upsample_u55-128.bpte",
                      DATA / "oracle_extra" / "pools_u55-64" / "pools_u55-64.bpte"],
    "hwdesc.ethosu85": [DATA / "oracle_u85" / n / f"{n}.bpte" for n in (
        "convs_u85-128", "pools_u85-128", "softmax_u85-128", "upsample_u85-128", "add_u85-128", "luts_u85-128",
        "mul_u85-128", "r3_shifts_u85-256")] + [DATA / "u85" / "gatherish_u85-256.bpte"],
}
#: enumerated fields with undefined values that no operation of the model reads: (ISA, command, field) -> why
NOT_READ = {}


@functools.cache
def _operations(isa_name):
    """(configuration, register state, command) of the first operation of each kind and mode in the programs."""
    out, seen = [], set()
    for path in PROGRAMS[isa_name]:
        for blob in extract_vela_blobs(path.read_bytes()):
            arch = next(a for a in (get_arch(n) for n in ethosu.NPU_VARIANTS) if a.config_word == blob.config_word)
            assert arch.family.isa.__name__ == isa_name
            state = RegisterState(arch)
            for cmd in iter_commands(blob.stream, arch):
                if not cmd.is_operation:
                    state.apply(cmd)
                    continue
                key = (arch.name, cmd.name, cmd.param & 0x3F)
                if key not in seen:
                    seen.add(key)
                    out.append((arch, state.copy(), cmd))
    return out


def _enumerated_fields(isa):
    """(command definition, field, payload field?, undefined values) of every enumerated field with gaps."""
    for cdef in isa.COMMANDS.values():
        for in_param, fields in ((not cdef.has_payload, cdef.fields), (True, cdef.param_fields)):
            for f in fields:
                if f.enum is not None:
                    bad = [v for v in range(1 << f.width) if v not in f.enum]
                    if bad:
                        yield cdef, f, in_param, bad


def _with_value(state, cdef, f, in_param, value):
    """A copy of ``state`` with the register's field ``f`` set to ``value``."""
    s = state.copy()
    raw = s.values.get(cdef.code, 0)
    shift = 32 if cdef.has_payload and in_param else 0
    s.values[cdef.code] = (raw & ~(f.put(-1) << shift)) | (f.put(value) << shift)
    return s


def _cases():
    for isa in (ethosu, ethosu85):
        for cdef, f, in_param, bad in _enumerated_fields(isa):
            yield pytest.param(isa, cdef, f, in_param, bad, id=f"{isa.__name__.split('.')[1]}-{cdef.name}.{f.name}")


@pytest.mark.parametrize("isa,cdef,field,in_param,bad", list(_cases()))
def test_every_undefined_value_of_every_enumerated_field_is_an_invalid_command_stream(isa, cdef, field, in_param, bad):
    refused = set()
    for arch, state, cmd in _operations(isa.__name__):
        for value in bad:
            if cdef.kind == "op":
                if cmd.code != cdef.code:
                    continue
                args = (state, dataclasses.replace(cmd, param=(cmd.param & ~field.put(-1)) | field.put(value)), arch)
            else:
                args = (_with_value(state, cdef, field, in_param, value), cmd, arch)
            try:
                build_operation(*args)
            except NpuFault as f:
                if f"{cdef.name} {field.name} = {value}," in str(f):
                    assert f.kind == "cmd_parse_error" and str(f).startswith("invalid command stream: "), str(f)
                    assert f.offset == cmd.offset
                    refused.add(value)
            # anything else (AttributeError, IndexError, KeyError ...) fails the test: a crash, not a diagnosis
    if (isa.__name__, cdef.name, field.name) in NOT_READ:
        assert not refused
    else:
        assert refused == set(bad), f"{cdef.name}.{field.name}: not refused by any operation: {set(bad) - refused}"


def test_every_kind_of_operation_is_among_the_templates():
    kinds = {isa: {cmd.name for _, _, cmd in _operations(isa)} for isa in PROGRAMS}
    assert kinds["hwdesc.ethosu"] >= {"NPU_OP_CONV", "NPU_OP_DEPTHWISE", "NPU_OP_POOL", "NPU_OP_ELEMENTWISE",
                                      "NPU_OP_DMA_START"}
    assert kinds["hwdesc.ethosu85"] >= {"NPU_OP_CONV", "NPU_OP_DEPTHWISE", "NPU_OP_POOL", "NPU_OP_ELEMENTWISE",
                                        "NPU_OP_RESIZE", "NPU_OP_DMA_START"}


@pytest.mark.parametrize("arch_name,command,field,value", [
    ("ethos-u55-128", "NPU_SET_IFM_PRECISION", "scale_mode", 3),   # was: AttributeError ('NoneType' ... multiplier)
    ("ethos-u55-128", "NPU_SET_ACTIVATION", "activation_clip_range", 1),  # was: IndexError in the LUT lookup
    ("ethos-u85-256", "NPU_SET_ACC_FORMAT", "microblock", 7),     # was: taken silently as U1X1
])
def test_a_stream_with_an_invalid_value_stops_with_a_parse_error_not_an_internal_error(arch_name, command, field,
                                                                                      value):
    """The stream executes up to the operation that reads the value, then stops with the diagnosis (the device's
    STATUS.cmd_parse_error), never an ``internal_error``."""
    arch = get_arch(arch_name)
    isa = arch.family.isa
    ops = [(s, c) for a, s, c in _operations(isa.__name__) if a is arch and c.name == "NPU_OP_ELEMENTWISE"]
    state, cmd = ops[0]
    cdef = isa.BY_NAME[command]
    (f,) = [f for f in (*cdef.fields, *cdef.param_fields) if f.name == field]
    bad = _with_value(state, cdef, f, not cdef.has_payload or f in cdef.param_fields, value)
    words = []
    for code, raw in sorted(bad.values.items()):
        d = isa.COMMANDS[code]
        if d.has_payload:
            words += [(((raw >> 32) & 0xFFFF) << 16) | code, raw & 0xFFFFFFFF]
        else:
            words.append(((raw & 0xFFFF) << 16) | code)
    words += [(cmd.param << 16) | cmd.code, isa.CODE.NPU_OP_STOP]
    res = execute_stream(words, arch=arch, base_pointers=[0] * 8, memory=FakeMemory(),
                         shram=np.zeros(arch.shram_bytes, np.uint8))
    assert not res.ok and res.fault.kind == "cmd_parse_error"
    assert f"{command} {field} = {value}," in str(res.fault)
