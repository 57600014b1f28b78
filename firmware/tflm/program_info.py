"""What a Vela-compiled ``.tflite`` records about the NPU it was built for, read as this image reads the model
(``model.load_model``), for the host: ``ethosu_configurations`` (the board a ``.tflite`` runs on,
``fvp/host/programs/tflm_board.py``).

Per ``ethos-u`` operator:

- ``config_word``: the CONFIG register image the command stream was compiled for, the first OPTIMIZER_CONFIG
  action of its ``COP1`` payload (input 0) (the Ethos-U driver refuses the stream on an NPU with another one);
  ``None`` when the payload has none;
- ``memory_mode``: Vela gives the operator its arena scratch (input 2) and its fast scratch (input 3). In
  Shared_Sram and Sram_Only they are one tensor (Vela 5) or two of the same size (Vela's older core, which plans
  both at the same arena offset, e.g. TFLite Micro's ``person_detect_vela.tflite``); in Dedicated_Sram (U65/U85)
  the fast scratch is a tensor of its own whose size is the NPU cache the stream needs (TFLM's ``ethosu.cc``
  passes it as base address 2, which the driver points at the board's fast memory). A Dedicated_Sram cache
  exactly as large as the arena scratch would be taken for Shared_Sram; Sram_Only is not told from Shared_Sram
  (the weights' place changes only Vela's timing estimate);
- ``fast_scratch``: that cache's size in bytes (0 without one).

A file this image refuses raises ``ModelError`` (one line, its ``message``).
"""

from __future__ import annotations

from hwdesc.ethosu import COP1_FOURCC, DRIVER_ACTION, driver_action

from .model import load_model

OPTIMIZER_CONFIG = DRIVER_ACTION.value("OPTIMIZER_CONFIG")


def optimizer_config_word(payload: bytes) -> int | None:
    """The CONFIG word of the first OPTIMIZER_CONFIG action of a ``COP1`` payload (None when there is none)."""
    if len(payload) < 16 or int.from_bytes(payload[:4], "little") != COP1_FOURCC:
        return None
    pos = 4
    while pos + 4 <= len(payload):
        if driver_action(int.from_bytes(payload[pos:pos + 4], "little")) == OPTIMIZER_CONFIG:
            return int.from_bytes(payload[pos + 4:pos + 8], "little") if pos + 8 <= len(payload) else None
        pos += 4
    return None


def ethosu_configurations(image: bytes) -> list[dict]:
    """Per ``ethos-u`` operator of the model ``image``: ``config_word``, ``memory_mode``, ``fast_scratch``."""
    model = load_model(bytes(image))
    out = []
    for op in model.operators:
        if op.custom_code != "ethos-u" or not op.inputs or op.inputs[0] < 0:
            continue
        cms = model.tensors[op.inputs[0]]
        payload = model.data[cms.data_offset:cms.data_offset + cms.data_size] if cms.data_offset is not None else b""
        fast = 0
        if len(op.inputs) > 3 and min(op.inputs[2:4]) >= 0 and op.inputs[3] != op.inputs[2]:
            scratch, scratch_fast = model.tensors[op.inputs[2]].nbytes, model.tensors[op.inputs[3]].nbytes
            fast = scratch_fast if scratch_fast != scratch else 0
        out.append({"config_word": optimizer_config_word(payload),
                    "memory_mode": "Dedicated_Sram" if fast else "Shared_Sram", "fast_scratch": fast})
    return out
