"""The C library's single-precision ``expf`` and ``tanhf``, element by element, as TFLite Micro's float reference
kernels reach them (``std::exp``/``std::tanh`` on a float call the C library's float functions).

The last bit of these functions belongs to the C library, not to the formula: glibc 2.36's ``tanhf`` differs from
tanh computed in double and rounded to float32 in about 18 % of standard-normal arguments, its ``expf`` in about 6
in 10,000, and an LSTM carries each such ulp through every later time step. So the functions are the C library's
own, called through ``ctypes`` (the library ``ctypes.util.find_library("m")`` names, as TFLite Micro's Python
interpreter links it); where no C math library can be loaded, exp and tanh in double rounded once to float32 (then
the last place may differ). What this simplifies: the firmware on a real Cortex-M55 calls its toolchain's C library
(newlib's or Arm's), whose last bits may differ from the host's; the oracle the project is measured against
(PyPI ``tflite-micro``) calls the host's.
"""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np


def _load(name: str):
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        fn = getattr(lib, name)
    except (OSError, AttributeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
    return np.frompyfunc(fn, 1, 1)


_EXPF, _TANHF = _load("expf"), _load("tanhf")


def _apply(ufunc, fallback, x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if ufunc is None:
        with np.errstate(over="ignore"):
            return np.asarray(fallback(x.astype(np.float64)), dtype=np.float32)
    return np.asarray(ufunc(x), dtype=np.float32).reshape(x.shape)


def expf(x) -> np.ndarray:
    """``expf`` of each float32 element (float32 array of x's shape)."""
    return _apply(_EXPF, np.exp, x)


def tanhf(x) -> np.ndarray:
    """``tanhf`` of each float32 element (float32 array of x's shape)."""
    return _apply(_TANHF, np.tanh, x)
