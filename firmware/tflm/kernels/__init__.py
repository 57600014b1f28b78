"""TFLite Micro's reference kernels for the operators Vela leaves on the CPU, in Python.

``REGISTRY`` maps a builtin operator name (``EnumNameBuiltinOperator``) to its ``prepare(ctx, op)``, which
checks the operator as the TFLM kernel's Prepare does (a ``PrepareError`` otherwise) and returns the
operator's evaluation: a callable ``run(inputs, outputs)`` over numpy arrays in logical shape (inputs read,
outputs written in place) and the CPU work to report. Each kernel module cites the TFLite / TFLM sources
whose arithmetic it reproduces; ``tests/firmware/tflm`` checks every kernel against a plain numpy formulation
and, where LiteRT is installed, against TFLite's reference-kernel interpreter.
"""

from __future__ import annotations

from .common import PrepareError, Prepared  # noqa: F401

REGISTRY: dict = {}


def register(*names):
    def deco(fn):
        for n in names:
            REGISTRY[n] = fn
        return fn
    return deco


# the kernel modules register themselves
from . import (activations, div, elementwise, indexing, logic_ops, lstm, math_ops, matmul, nn,  # noqa: E402,F401
               resize, shape, softmax, strided_slice, svdf, transpose_conv)
