"""What a Vela ``.tflite`` records about its NPU, as the TFLite Micro image reads it (``firmware/tflm/program_info.py``)
and the host maps it (``fvp/host/programs/tflm_board.py``): the CONFIG word of the command stream's OPTIMIZER_CONFIG
action, the memory mode from the fast scratch tensor; a one-line refusal of bytes that are no model."""

from __future__ import annotations

import struct

import pytest

from testutil import ROOT

from firmware.tflm.model import ModelError
from firmware.tflm.program_info import ethosu_configurations, optimizer_config_word
from fvp.host.programs.tflm_board import tflite_configurations, variant_of_config_word
from fvp.machine.npu.arch import get_arch
from hwdesc.ethosu import COP1_FOURCC

REAL = ROOT / "tests" / "data" / "tflm" / "real"


def _payload(*words):
    return struct.pack(f"<{len(words)}I", *words)


def test_the_config_word_of_a_cop1_payload():
    cfg = get_arch("ethos-u65-256").config_word
    assert optimizer_config_word(_payload(COP1_FOURCC, 1, cfg, 0x1234, 2)) == cfg
    assert optimizer_config_word(_payload(COP1_FOURCC, 5, 1, cfg, 0x1234)) == cfg  # after a NOP
    assert optimizer_config_word(_payload(0x31504F44, 1, cfg, 0)) is None  # not COP1
    assert optimizer_config_word(_payload(COP1_FOURCC, 1)) is None  # truncated
    assert optimizer_config_word(b"") is None


def test_every_variant_is_named_by_its_config_word():
    for name in ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256", "ethos-u65-256",
                 "ethos-u65-512", "ethos-u85-128", "ethos-u85-256", "ethos-u85-2048"):
        assert variant_of_config_word(get_arch(name).config_word) == name
    assert variant_of_config_word(0xDEADBEEF) is None and variant_of_config_word(None) is None


def test_real_models_record_their_npu_and_memory_mode():
    (op,) = tflite_configurations((REAL / "tiny_int8_u65-512.tflite").read_bytes())
    assert op["target"] == "ethos-u65-512" and op["memory_mode"] == "Dedicated_Sram"
    assert 0 < op["fast_scratch"] < 384 << 10
    # Vela's older core gives Shared_Sram programs a fast scratch tensor of the scratch's own size
    (legacy,) = tflite_configurations((REAL / "softmax_int8_u55-128-legacy.tflite").read_bytes())
    assert (legacy["target"], legacy["memory_mode"], legacy["fast_scratch"]) == ("ethos-u55-128", "Shared_Sram", 0)
    ops = tflite_configurations((REAL / "svdf_int8_u55-128.tflite").read_bytes())
    assert [o["target"] for o in ops] == ["ethos-u55-128"] * 3  # one per NPU part between the SVDFs
    assert ethosu_configurations((REAL / "lstm_int8.tflite").read_bytes()) == []  # not Vela-compiled


def test_bytes_that_are_no_model_are_refused_in_one_line():
    with pytest.raises(ModelError) as e:
        ethosu_configurations(b"\x18\0\0\0TFL3" + bytes(64))
    assert "\n" not in e.value.message
    assert tflite_configurations(b"\x18\0\0\0TFL3" + bytes(64)) == []  # the host: nothing recorded, the run says why
