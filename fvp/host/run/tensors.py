"""A program's input and output tensors as the host sees them, and the bytes the firmware exchanges for them.

``TensorSpec`` describes one input or output of a program (what the firmware's session entry reports: dtype,
logical shape, dim order, bytes, name, quantization). ``to_bytes(spec, value)`` turns what a user gives for an
input (a numpy array in the logical shape, anything ``numpy.asarray`` takes, or raw bytes in memory order)
into the bytes ``set_input`` copies, or raises ``InputError`` naming what does not fit; ``from_bytes(spec,
data)`` turns an output's bytes back into an array in the logical shape. Conversions are exact: an array of
another dtype is converted only when every value survives the conversion, except float64/float16 to float32
(the float inputs' usual source, rounded as numpy rounds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


class InputError(ValueError):
    """An input that does not fit the program's input tensor (shape, dtype, size, count); one line."""


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of the program. ``dtype`` is the numpy dtype of its data (None for a non-tensor
    value), ``type_name`` the runtime's name of it (``Float``, ``Char``, ``int8`` ...), ``shape`` the logical
    shape, ``dim_order`` the order of the dimensions in memory, ``quantization`` the (de)quantization the
    program applies to it (``scale``, ``zero_point`` ...) or None."""

    index: int
    kind: str
    name: str | None
    dtype: np.dtype | None
    type_name: str | None
    shape: tuple
    dim_order: tuple
    nbytes: int
    quantization: dict | None

    @classmethod
    def from_info(cls, info: dict, index: int) -> "TensorSpec":
        kind = info.get("kind", "Tensor")
        dt = info.get("numpy_dtype")
        shape = tuple(int(d) for d in info.get("shape") or ())
        return cls(index=index, kind=kind, name=info.get("name"), dtype=np.dtype(dt) if dt else None,
                   type_name=info.get("dtype"), shape=shape,
                   dim_order=tuple(info.get("dim_order") or range(len(shape))), nbytes=int(info.get("nbytes") or 0),
                   quantization=info.get("quantization"))

    @property
    def is_tensor(self) -> bool:
        return self.kind == "Tensor" and self.dtype is not None

    def describe(self) -> str:
        """``Float[1, 1, 49, 10]``: the dtype and logical shape, for messages."""
        return f"{self.type_name}{list(self.shape)}" if self.kind == "Tensor" else self.kind

    def __repr__(self) -> str:
        q = ""
        if self.quantization:
            q = f", quantization(scale={self.quantization.get('scale')}, zero_point={self.quantization.get('zero_point')})"
        name = f" {self.name!r}" if self.name else ""
        dt = self.dtype.name if self.dtype is not None else self.kind
        return f"<{'tensor' if self.is_tensor else 'value'} {self.index}{name}: {dt}{list(self.shape)}{q}>"


def _strip_ones(shape) -> tuple:
    shape = tuple(shape)
    i = 0
    while i < len(shape) - 1 and shape[i] == 1:
        i += 1
    return shape[i:]


def _exact_cast(arr: np.ndarray, dtype: np.dtype, where: str, spec: TensorSpec) -> np.ndarray:
    if arr.dtype == dtype:
        return arr
    if arr.dtype.kind == "f" and dtype.kind == "f":
        return arr.astype(dtype)
    if arr.dtype.kind in "biuf" and dtype.kind in "biu" + "f":
        with np.errstate(all="ignore"):
            out = arr.astype(dtype)
            back = out.astype(arr.dtype)
        if np.array_equal(back, arr, equal_nan=arr.dtype.kind == "f"):
            return out
        raise InputError(f"{where}: {arr.dtype} values that {dtype} cannot hold exactly; the program's input "
                         f"{spec.index} is {spec.describe()} ({dtype})")
    raise InputError(f"{where}: an array of {arr.dtype}; the program's input {spec.index} is {spec.describe()} "
                     f"({dtype})")


def to_bytes(spec: TensorSpec, value, where: str = "") -> bytes | None:
    """The bytes ``set_input`` copies for input ``spec`` (memory order), or None for a non-tensor input left as
    it is. ``where`` names the value in messages (``sample 12 input 0``)."""
    where = where or f"input {spec.index}"
    if not spec.is_tensor:
        if value is None:
            return None
        raise InputError(f"{where}: the program's input {spec.index} is a {spec.kind}, not a tensor: give None")
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if len(data) != spec.nbytes:
            raise InputError(f"{where}: {len(data)} bytes; the program's input {spec.index} is {spec.describe()}, "
                             f"{spec.nbytes} bytes")
        return data
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as e:
        raise InputError(f"{where}: not an array: {e}") from None
    if arr.dtype == object:
        raise InputError(f"{where}: not a numeric array (dtype object)")
    arr = _exact_cast(arr, spec.dtype, where, spec)
    if arr.shape != spec.shape:
        if arr.size == math.prod(spec.shape) and _strip_ones(arr.shape) == _strip_ones(spec.shape):
            arr = arr.reshape(spec.shape)
        else:
            raise InputError(f"{where}: an array of shape {list(arr.shape)}; the program's input {spec.index} is "
                             f"{spec.describe()}")
    if spec.dim_order != tuple(range(len(spec.shape))):
        arr = arr.transpose(spec.dim_order)
    return np.ascontiguousarray(arr).tobytes()


def from_bytes(spec: TensorSpec, data: bytes | None):
    """Output ``spec``'s bytes as an array in its logical shape (its own copy), or None for a non-tensor."""
    if data is None or not spec.is_tensor:
        return None
    physical = tuple(spec.shape[d] for d in spec.dim_order)
    arr = np.frombuffer(data, dtype=spec.dtype).reshape(physical)
    if spec.dim_order != tuple(range(len(spec.shape))):
        arr = arr.transpose(np.argsort(spec.dim_order))
    return np.array(arr)
