"""Written-out formulations and checks the TFLite Micro kernel tests share: MultiplyByQuantizedMultiplier on
Python ints, a model's weights read back from its buffers, and the one-line Prepare failure."""

from __future__ import annotations

import numpy as np
import pytest
from harness import run_cpu

from firmware.tflm.interpreter import InterpreterError
from firmware.tflm.model import load_model


def mbqm(x: int, m: int, s: int) -> int:
    """MultiplyByQuantizedMultiplier on Python ints, written out."""
    x = x * (1 << max(s, 0))
    ab = x * m
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    hi = int((ab + nudge) / (1 << 31)) if abs(ab + nudge) < (1 << 52) else (ab + nudge) // (1 << 31) if ab + nudge >= 0 else -((-(ab + nudge)) // (1 << 31))
    r = max(-s, 0)
    if r == 0:
        return hi
    q = hi >> r
    rem = hi - (q << r)
    thr = ((1 << r) - 1) >> 1
    thr += 1 if hi < 0 else 0
    return q + (1 if rem > thr else 0)


def tensor(m, name):
    return next(t for t in m.tensors if t.name == name)


def weighted(data, bias_dtype=np.int32):
    """A model's weights ``w`` (int8) and bias ``b`` as int arrays from its buffers, and its ``w``, ``x`` and
    ``y`` tensors (scales, zero points, shapes)."""
    m = load_model(data)
    tw, tb, ti, to = (tensor(m, n) for n in ("w", "b", "x", "y"))
    w = np.frombuffer(data, np.int8, tw.numel, tw.data_offset).reshape(tw.shape).astype(int)
    b = np.frombuffer(data, np.dtype(bias_dtype), tb.numel, tb.data_offset).astype(int)
    return w, b, tw, ti, to


def prepare_error(data, x):
    with pytest.raises(InterpreterError) as e:
        run_cpu(data, [x])
    return e.value.lines


def fails_at_prepare_with_one_line(data, x, start):
    """The model's first operator fails Prepare: one line starting ``start``, then TFLM's node line."""
    lines = prepare_error(data, x)
    op = start.split(":")[0]
    assert lines[0].startswith(start) and "\n" not in lines[0], lines
    assert lines[1] == f"Node {op} (number 0) failed to prepare with status 1"
