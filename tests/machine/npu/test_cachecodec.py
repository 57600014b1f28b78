"""The disk cache's record format (fvp/machine/npu/cachecodec.py): real decoded streams and timings round trip
exactly, and anything but what the schema holds is refused."""

import json

import pytest

from fvp.machine.npu import cachecodec
from fvp.machine.npu.arch import get_arch
from fvp.machine.npu.command_stream import RegisterState, as_words, decode_command
from fvp.machine.npu.descriptors import FeatureMap, NpuOperation, Scale
from fvp.machine.npu.operations import build_operation
from fvp.machine.npu.timing.records import OpTiming, StreamTiming

from testutil import CORPUS, ROOT
from .helpers import extract_vela_blobs, run_blob
from .test_timing import device, model

STREAMS = cachecodec.Schema(NpuOperation)
TIMING = cachecodec.Schema(StreamTiming)


def _operations(path, arch):
    """Every operation of every command stream of a program, as the decoder builds them (not run)."""
    arch = get_arch(arch)
    ops = []
    for blob in extract_vela_blobs(path.read_bytes()):
        w, state, i = as_words(blob.stream), RegisterState(arch), 0
        while i < len(w):
            cmd = decode_command(w, i, arch)
            i += cmd.length
            if cmd.is_operation:
                ops.append(build_operation(state, cmd, arch))
            else:
                state.apply(cmd)
    return ops


@pytest.mark.parametrize("program, arch", [
    (CORPUS / "mobilenet_v1_025_u65-256.bpte", "ethos-u65-256"),
    (CORPUS / "conv1d_u55-128.bpte", "ethos-u55-128"),
    (ROOT / "tests/data/u85/gatherish_u85-256.bpte", "ethos-u85-256"),
    (ROOT / "tests/data/oracle_u85/convt_u85-128/convt_u85-128.bpte", "ethos-u85-128"),
])
def test_decoded_streams_round_trip(program, arch):
    ops = _operations(program, arch)
    assert len(ops) > 3
    entry = (ops, 123, 4 * len(ops), list(range(len(ops))))  # what execute.py keeps
    back = cachecodec.decode(cachecodec.encode(entry, STREAMS), STREAMS)
    assert back == entry and type(back) is tuple and type(back[0]) is list
    assert all(type(a) is type(b) and vars(a) == vars(b) for a, b in zip(back[0], ops))
    assert [list(map(type, vars(a).values())) for a in back[0]] == [list(map(type, vars(b).values())) for b in ops]
    assert [type(a.weights) for a in back[0]] == [type(b.weights) for b in ops]


def test_timing_round_trips():
    (blob,) = extract_vela_blobs((CORPUS / "add_q.pte").read_bytes())
    res, _ = run_blob(blob, [bytes([1]), bytes([2])])
    timing = model().stream(res.operations, device())
    assert timing.per_op and any(t.memory_cycles for t in timing.per_op) and any(t.transfers for t in timing.per_op)
    timing.per_op[0].mac_utilisation = float("nan")  # not-a-number and infinities are kept as they are
    timing.per_op[0].start = float("inf")
    back = cachecodec.decode(cachecodec.encode(timing, TIMING), TIMING)
    assert repr(back) == repr(timing) and type(back) is StreamTiming and type(back.per_op[0]) is OpTiming
    assert [type(k) for k in back.events] == [type(k) for k in timing.events]


def test_the_schema_is_the_classes_the_code_names():
    assert set(STREAMS.classes) == {"NpuOperation", "FeatureMap", "Kernel", "Scale", "Activation", "AddressRange",
                                    "Broadcast", "Dma", "Resize"}
    assert set(TIMING.classes) == {"StreamTiming", "OpTiming"}
    assert {"RoundMode", "ClipRange"} <= set(STREAMS.enums)  # the enumerations the descriptors' fields use


class NotInTheSchema:
    pass


def _doc(value, classes=()):
    return json.dumps({"format": cachecodec.FORMAT, "classes": list(classes), "enums": [], "tables": [],
                       "value": value}).encode()


def _scale_entry(**change):
    s = Scale(multiplier=5, shift=3)
    doc = json.loads(cachecodec.encode([s, s], STREAMS))
    doc.update(change)
    return doc


@pytest.mark.parametrize("case", ["pickle", "not json", "other format", "unknown class", "other fields",
                                  "wrong type", "table loop", "bad column", "bad index", "short table",
                                  "deep nesting", "dotted class", "unknown enum", "bad member"])
def test_anything_else_is_refused(case):
    doc = _scale_entry()
    if case == "pickle":
        import pickle

        data = pickle.dumps(StreamTiming(total_cycles=1))
    elif case == "not json":
        data = b"\x80\x04K\x01."
    elif case == "other format":
        doc["format"] = 1
    elif case == "unknown class":
        doc["classes"][0][0] = "Popen"
    elif case == "dotted class":
        doc["classes"][0][0] = "os.system"
    elif case == "other fields":
        doc["classes"][0][1] = ["multiplier", "shift", "extra"]
    elif case == "wrong type":
        doc["tables"][0][2] = [0, ["5", "5"]]
    elif case == "table loop":
        doc["tables"][0][2] = [4, [0, 0], 0]
    elif case == "bad column":
        doc["tables"][0][2] = [9, [1, 2]]
    elif case == "bad index":
        doc["value"] = [3, 7]
    elif case == "short table":
        doc["tables"][0] = doc["tables"][0][:3]
    elif case == "unknown enum":
        doc["enums"] = ["Signals"]
        doc["value"] = [6, 0, 2]
    elif case == "bad member":
        doc["enums"] = ["RoundMode"]
        doc["value"] = [6, 0, 99]
    elif case == "deep nesting":
        v = 1
        for _ in range(100):
            v = [0, v]
        doc["value"] = v
    if case not in ("pickle", "not json"):
        data = json.dumps(doc).encode()
    with pytest.raises(cachecodec.CodecError):
        cachecodec.decode(data, STREAMS)


def test_what_the_schema_cannot_hold_is_not_written():
    with pytest.raises(cachecodec.CodecError):
        cachecodec.encode([NotInTheSchema()], STREAMS)
    with pytest.raises(cachecodec.CodecError):
        cachecodec.encode({"a": b"bytes"}, STREAMS)
    fm = FeatureMap.__new__(FeatureMap)
    with pytest.raises((cachecodec.CodecError, AttributeError)):
        cachecodec.encode(fm, STREAMS)
    assert cachecodec.decode(_doc(5), STREAMS) == 5
