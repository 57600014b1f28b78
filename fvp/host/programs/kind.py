"""What kind of program a file is, from its flatbuffer file identifier (bytes 4..8): the one sniffer of the host.

- ``PTE``: an ExecuTorch program (``ET`` and two digits: ``ET12``), run by the ``arm_executor_runner`` image;
- ``BPTE``: a bundled ExecuTorch program (``BP`` and two digits: ``BP08``), the program plus its test cases;
- ``TFLITE``: a TFLite model (``TFL3``), run by the TFLite Micro image (``tflm_inference_runner``).

Anything else is ``None``: not a program this simulator runs (the caller says so in its own terms).
"""

from __future__ import annotations

import enum
import re

_IDENTIFIER = re.compile(rb"(ET|BP)\d\d|TFL3")


class ProgramKind(enum.Enum):
    PTE = "ExecuTorch program (.pte)"
    BPTE = "bundled ExecuTorch program (.bpte)"
    TFLITE = "TFLite model (.tflite)"

    @property
    def image(self) -> str:
        """The registered firmware image that reads and runs this kind of program."""
        return "tflm_inference_runner" if self is ProgramKind.TFLITE else "arm_executor_runner"

    @property
    def executorch(self) -> bool:
        return self is not ProgramKind.TFLITE


def identifier(data) -> bytes:
    """The four bytes where a flatbuffer keeps its file identifier (shorter for a shorter file)."""
    return bytes(data[4:8])


def program_kind(data) -> ProgramKind | None:
    ident = identifier(data)
    if len(ident) < 4 or not _IDENTIFIER.fullmatch(ident):
        return None
    return {b"ET": ProgramKind.PTE, b"BP": ProgramKind.BPTE}.get(ident[:2], ProgramKind.TFLITE)


def is_tflite(data) -> bool:
    return program_kind(data) is ProgramKind.TFLITE


def is_executorch(data) -> bool:
    kind = program_kind(data)
    return kind is not None and kind.executorch
