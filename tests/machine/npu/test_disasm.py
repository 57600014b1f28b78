"""Disassembler and operation summary."""

import os
import re

import numpy as np

from fvp.machine.npu.command_stream import decode_commands
from fvp.machine.npu.disasm import disassemble, summarize_operations

from .helpers import extract_vela_blobs

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "data", "corpus")
LINE = re.compile(r"^0x[0-9a-f]{4,}  [0-9a-f]{8}( [0-9a-f]{8}|         )  (NPU_\w+|<invalid>)")


def _stream(name):
    return extract_vela_blobs(open(os.path.join(DATA, name), "rb").read())[0].stream


def test_add_q_disassembly_lists_five_elementwise_ops_then_stop():
    s = _stream("add_q.pte")
    lines = disassemble(s, "ethos-u55-128")
    assert len(lines) == len(decode_commands(s, "ethos-u55-128"))
    assert all(LINE.match(l) for l in lines), [l for l in lines if not LINE.match(l)]
    ops = [l for l in lines if "NPU_OP_" in l]
    assert [l.split()[-1] for l in ops] == ["ADD", "MUL", "ADD", "MUL", "ADD", "mask=65535"]
    assert ops[0] == "0x0108  00010006           NPU_OP_ELEMENTWISE        ADD"
    assert lines[0] == "0x0000  00004025 00000001  NPU_SET_OPA_SCALE         scale=1 shift=0"
    assert "NPU_SET_IFM_ZERO_POINT    -128" in "\n".join(lines)
    assert ops[-1].startswith("0x0294  ffff0000           NPU_OP_STOP")
    summary = summarize_operations(s, "ethos-u55-128")
    assert [l.split()[1:3] for l in summary] == [["ELEMENTWISE", "ADD"], ["ELEMENTWISE", "MUL"],
                                                 ["ELEMENTWISE", "ADD"], ["ELEMENTWISE", "MUL"],
                                                 ["ELEMENTWISE", "ADD"], ["STOP", "mask=0xffff"]]
    assert "ifm 1x1x1 int8 NHWC r1@0x50 zp=-128" in summary[0] and "ofm 1x1x1 int32 NHCWB16" in summary[0]
    assert "scale 1>>20 NATURAL" in summary[4]


def test_summary_of_a_convolution_program():
    s = _stream("conv1d_u55-128.bpte")
    summary = summarize_operations(s, "ethos-u55-128")
    conv = [l for l in summary if " CONV " in l]
    assert len(conv) == 1
    assert "kernel 1x3 stride 1x1 pad t0 l1 b0 r1 part-kernel" in conv[0]
    assert "weights r0@0xa0+256" in conv[0] and "PER_CHANNEL NATURAL" in conv[0]
    assert "strides(y=1,x=3)" in summary[0]  # the transposing 1x1 average pool


def test_invalid_words_are_shown_and_skipped():
    words = np.array([0x0001010F, 0x00000007, 0xFFFF0000], np.uint32)
    lines = disassemble(words, "ethos-u55-128")
    assert lines[0].startswith("0x0000  0001010f           NPU_SET_IFM_REGION")
    assert lines[1].startswith("0x0004  00000007           <invalid>") and "unknown CMD0 opcode" in lines[1]
    assert lines[2].startswith("0x0008  ffff0000           NPU_OP_STOP")
    assert "<invalid>" in summarize_operations(words, "ethos-u55-128")[0]


def test_summary_names_every_round_mode_and_the_double_round_shift():
    """The U85's own round modes are named (TRUNCATE_TO_LOWER, SYMMETRIC, DOUBLE_ASYMMETRIC), as are the modes it
    shares with the U55/U65 (DBL, TRUNCATE, NATURAL); an operand scale's double-round shift is shown."""
    import dataclasses

    from fvp.machine.npu.descriptors import (Activation, Broadcast, FeatureMap, IfmScaleMode, NpuOperation,
                                             RoundMode, Scale)
    from fvp.machine.npu.disasm import describe_operation

    fm = FeatureMap(name="x", region=1, bases=(0, 0, 0, 0), height=2, width=3, depth=4, height0=2, height1=2,
                    width0=3, stride_x=4, stride_y=12, stride_c=1, bits=8, signed=True, format="NHWC", zero_point=0)
    op = NpuOperation(kind="ELEMENTWISE", offset=0, param=0, sub_op="ADD", ifm=fm, ifm2=fm, ofm=fm,
                      ofm_scale_mode="GLOBAL", ofm_round_mode=RoundMode.DBL, ifm_scale_mode=IfmScaleMode.PER_OPERAND,
                      ifm_round_mode=RoundMode.DBL, ofm_scale=Scale(3, 9), opa_scale=Scale(5, 20, 20),
                      ifm2_scale=Scale(7, 21), ifm2_round_mode=RoundMode.DBL, activation=Activation(0, 0, -128, 127),
                      broadcast=Broadcast(False, False, False, False, False, 0), ofm_block=(2, 3, 16))
    for mode in RoundMode:
        text = describe_operation(dataclasses.replace(op, ofm_round_mode=mode))
        assert f"scale 3>>9 {mode.name} |" in text and "?" not in text
    assert "ifm 5>>20 dbl_rnd 20 ifm2 7>>21 |" in describe_operation(op)
