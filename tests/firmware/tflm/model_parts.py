"""The pieces every kernel test model is built from: a quantized tensor (int8, int16), a seeded generator and a
one-operator unary model."""

from __future__ import annotations

import numpy as np

from tflite_builder import Op, T, build


def _q(name, shape, scale, zp, dtype="int8"):
    return T(name, shape, dtype, scale=[scale], zero_point=[zp])


def _q16(name, shape, scale, zp=0):
    return _q(name, shape, scale, zp, "int16")


def _rng(seed):
    return np.random.default_rng(seed)


def _unary(opcode, x, y, options=None):
    return build([x, y], [Op(opcode, [x.name], ["y"], options)], [x.name], ["y"])
