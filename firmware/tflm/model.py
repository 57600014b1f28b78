"""Reading a ``.tflite`` flatbuffer with the flatbuffers runtime and the generated TFLite schema classes.

The classes are those of the PyPI package ``tflite`` (Apache-2.0; the TFLite schema compiled by ``flatc`` for
Python, one module per table); nothing here parses flatbuffer bytes by hand. ``load_model`` turns the root
table into plain records (tensors with their quantization and where their constant data is, operators with
their builtin options) and checks what TFLite Micro's ``GetModel``/``MicroInterpreter`` checks: the file
identifier space, the schema version (``TFLITE_SCHEMA_VERSION`` 3), one subgraph's operator and tensor indices
in range, buffers inside the file. Each operator's builtin options are read whole here (``Options``), the
member its parser reads or, for another member or none, that member's defaults (as TFLite Micro's
``builtin_options_as_X()`` returns null): nothing is read lazily from the file later. Any problem is a
``ModelError`` with one line.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

TFLITE_SCHEMA_VERSION = 3

# TensorType codes (schema.fbs) -> (name as TfLiteTypeGetName prints it, numpy dtype)
TENSOR_TYPES = {
    0: ("FLOAT32", np.float32), 1: ("FLOAT16", np.float16), 2: ("INT32", np.int32), 3: ("UINT8", np.uint8),
    4: ("INT64", np.int64), 6: ("BOOL", np.bool_), 7: ("INT16", np.int16), 9: ("INT8", np.int8),
    10: ("FLOAT64", np.float64), 12: ("UINT64", np.uint64), 15: ("UINT32", np.uint32), 16: ("UINT16", np.uint16),
}


class ModelError(Exception):
    """A .tflite file that cannot be used (one line)."""

    @property
    def message(self) -> str:
        """The one line (the host takes an exception with a ``message`` as this image's verdict on a file)."""
        return str(self)


@dataclass
class Tensor:
    index: int
    name: str
    shape: tuple
    type: int
    buffer: int
    is_variable: bool
    scale: np.ndarray  # float32 scales (empty: not quantized)
    zero_point: np.ndarray  # int64
    quantized_dimension: int
    data_offset: int | None = None  # offset of the constant data in the model file
    data_size: int = 0

    @property
    def type_name(self) -> str:
        return TENSOR_TYPES.get(self.type, (f"type {self.type}", None))[0]

    @property
    def dtype(self):
        return TENSOR_TYPES.get(self.type, (None, None))[1]

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= int(d)
        return n

    @property
    def nbytes(self) -> int:
        dt = self.dtype
        return self.numel * (np.dtype(dt).itemsize if dt is not None else 0)

    @property
    def is_constant(self) -> bool:
        return self.data_offset is not None

    @property
    def params_scale(self) -> float:
        """``TfLiteTensor.params.scale`` (the first scale, float32), 0 when not quantized."""
        return float(self.scale[0]) if self.scale.size else 0.0

    @property
    def params_zero_point(self) -> int:
        return int(self.zero_point[0]) if self.zero_point.size else 0


@dataclass
class Operator:
    index: int
    opcode_index: int
    builtin_code: int
    op_name: str  # EnumNameBuiltinOperator, or the custom code for CUSTOM
    custom_code: str | None
    inputs: list  # tensor indices (-1 = optional input absent)
    outputs: list
    options: object  # the builtin options its parser reads, read whole at load (``Options``), or None
    custom_options: bytes
    intermediates: list = field(default_factory=list)  # tensor indices (the converter's LSTM calibration tensors)


@dataclass
class Model:
    data: bytes
    version: int
    description: str
    tensors: list
    operators: list
    inputs: list
    outputs: list
    n_subgraphs: int
    offline_offsets: list | None = None  # OfflineMemoryAllocation metadata: arena offset per tensor, -1 online
    opcodes: list = field(default_factory=list)  # (builtin_code, custom_code)


def builtin_names() -> dict:
    from tflite.BuiltinOperator import BuiltinOperator

    return {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_") and isinstance(v, int)}


@functools.lru_cache(maxsize=1)
def _options_names() -> dict:
    from tflite.BuiltinOptions import BuiltinOptions

    return {v: k for k, v in vars(BuiltinOptions).items() if not k.startswith("_") and isinstance(v, int)}


@functools.lru_cache(maxsize=None)
def _options_class_named(name: str | None):
    import importlib

    if not name or name == "NONE":
        return None
    try:
        return getattr(importlib.import_module(f"tflite.{name}"), name)
    except (ImportError, AttributeError):
        return None


#: the BuiltinOptions member of the operators whose name does not spell it (TFLite's schema): the others read
#: ``<OperatorName>Options`` (CONV_2D: Conv2DOptions) or none
_OPTIONS_OF = {"AVERAGE_POOL_2D": "Pool2DOptions", "MAX_POOL_2D": "Pool2DOptions", "L2_POOL_2D": "Pool2DOptions",
               "MEAN": "ReducerOptions", "SUM": "ReducerOptions", "REDUCE_MAX": "ReducerOptions",
               "REDUCE_MIN": "ReducerOptions", "REDUCE_PROD": "ReducerOptions", "REDUCE_ANY": "ReducerOptions",
               "REDUCE_ALL": "ReducerOptions", "L2_NORMALIZATION": "L2NormOptions",
               "MAXIMUM": "MaximumMinimumOptions", "MINIMUM": "MaximumMinimumOptions",
               "UNIDIRECTIONAL_SEQUENCE_RNN": "SequenceRNNOptions", "RANDOM_UNIFORM": "RandomOptions",
               "RANDOM_STANDARD_NORMAL": "RandomOptions", "MULTINOMIAL": "RandomOptions"}


def expected_options(op_name: str) -> str | None:
    """The BuiltinOptions member an operator's parser reads (``builtin_options_as_<it>()`` in TFLite Micro)."""
    if op_name in _OPTIONS_OF:
        return _OPTIONS_OF[op_name]
    return _spelled_options().get(op_name.replace("_", "").lower() + "options")


@functools.lru_cache(maxsize=1)
def _spelled_options() -> dict:
    return {k.lower(): k for k in _options_names().values()}


class Options:
    """A builtin options table read whole when the model is loaded: every getter of its generated class called
    once (a bad offset fails the load, not a kernel later) and answered from what it read. A vector field's
    element getter (``SqueezeDims(j)``) indexes the array its ``...AsNumpy()`` read. ``type_name`` is the table's
    class."""

    def __init__(self, cls, buf, pos: int):
        table = cls()
        table.Init(buf, pos)
        self.type_name = cls.__name__
        self._values = {}
        for name in dir(cls):
            fn = getattr(cls, name)
            if name.startswith(("_", "GetRootAs")) or name == "Init" or name.endswith("BufferHasIdentifier") \
                    or not callable(fn):
                continue
            code = getattr(fn, "__code__", None)
            if code is None or code.co_argcount != 1:
                continue
            value = getattr(table, name)()
            if hasattr(value, "_tab"):  # a nested table: not read by any kernel; refused rather than kept lazy
                raise ModelError(f"{cls.__name__}.{name}: a nested table in builtin options is not supported")
            self._values[name] = value.copy() if isinstance(value, np.ndarray) else value

    def __getattr__(self, name):
        values = self.__dict__.get("_values", {})
        if name in values:
            value = values[name]
            return lambda: value
        if f"{name}AsNumpy" in values:
            arr = values[f"{name}AsNumpy"]
            return lambda j: arr[j]
        raise AttributeError(f"{self.__dict__.get('type_name', 'options')} has no field {name}")


#: options fields that are a size of the operation's window: 0 or less makes no operation (a kernel would
#: divide by it); the schema's default is 0 for strides and filter sizes
_POSITIVE_FIELDS = ("StrideW", "StrideH", "StrideD", "FilterWidth", "FilterHeight", "DilationWFactor",
                    "DilationHFactor", "DilationDFactor")


def check_options(index: int, op_name: str, opt) -> None:
    """The options' window sizes are at least 1 (``ModelError`` naming the operator and field otherwise)."""
    if opt is None:
        return
    for name in _POSITIVE_FIELDS:
        value = opt._values.get(name)
        if value is not None and int(value) < 1:
            raise ModelError(f"operator {index} ({op_name}): {opt.type_name}.{name} is {int(value)}; it must be "
                             f"at least 1")


def _empty_table() -> tuple:
    """(buffer, position) of a table with no fields: every getter of any class answers its schema default."""
    import flatbuffers

    b = flatbuffers.Builder(16)
    b.StartObject(0)
    t = b.EndObject()
    b.Finish(t)
    buf = b.Output()
    return buf, int.from_bytes(buf[0:4], "little")


def read_options(op, op_name: str, names: dict):
    """The operator's builtin options as its parser sees them (``Options``), read and checked whole: the
    table of the member its operator reads, or, when the operator has none or another member (TFLite Micro's
    ``builtin_options_as_X()`` is then null and the parser keeps its defaults), an empty one of that member
    (every field its default). Operators that read no options keep None."""
    want = expected_options(op_name)
    given = names.get(int(op.BuiltinOptionsType()))
    if want is None or _options_class_named(want) is None:
        return None
    table = op.BuiltinOptions() if given == want else None
    if table is None:
        buf, pos = _empty_table()
    else:
        buf, pos = table.Bytes, table.Pos
    return Options(_options_class_named(want), buf, pos)


def load_model(data: bytes) -> Model:
    try:
        return _load(data)
    except ModelError:
        raise
    except Exception as e:  # noqa: BLE001 - the generated readers raise struct/index errors on bad offsets
        raise ModelError(f"not a valid TFLite flatbuffer ({type(e).__name__}: {e})") from None


def _check_offset(data: bytes, what: str, pos: int, size: int = 4) -> None:
    if pos < 0 or pos + size > len(data):
        raise ModelError(f"{what} lies outside the file (offset {pos}, file size {len(data)})")


def _load(data: bytes) -> Model:
    from tflite.Model import Model as FbModel

    if len(data) < 8:
        raise ModelError(f"file too short for a TFLite flatbuffer ({len(data)} bytes)")
    if data[4:8] != b"TFL3":
        raise ModelError(f"not a TFLite model: file identifier {data[4:8]!r}, expected b'TFL3'")
    root = int.from_bytes(data[0:4], "little")
    _check_offset(data, "the root table", root)
    m = FbModel.GetRootAs(data, 0)
    version = m.Version()
    if version != TFLITE_SCHEMA_VERSION:
        raise ModelError(f"Model provided is schema version {version} not equal to supported version "
                         f"{TFLITE_SCHEMA_VERSION}.")
    names = builtin_names()
    options_names = _options_names()
    n_sub = m.SubgraphsLength()
    if n_sub < 1:
        raise ModelError("the model has no subgraph")
    opcodes = []
    for i in range(m.OperatorCodesLength()):
        oc = m.OperatorCodes(i)
        code = max(int(oc.BuiltinCode()), int(oc.DeprecatedBuiltinCode()))  # GetBuiltinCode
        cc = oc.CustomCode()
        opcodes.append((code, cc.decode("utf-8", "replace") if cc is not None else None))
    n_buffers = m.BuffersLength()

    def buffer_location(bi: int) -> tuple[int | None, int]:
        if bi <= 0 or bi >= n_buffers:
            return None, 0
        b = m.Buffers(bi)
        n = b.DataLength()
        if n:
            pos = b._tab.Vector(b._tab.Offset(4))  # field 0 (data): position of the vector's first byte
            _check_offset(data, f"buffer {bi}", pos, n)
            return pos, n
        off, size = int(b.Offset()), int(b.Size())
        if off > 1 and size:
            _check_offset(data, f"buffer {bi}", off, size)
            return off, size
        return None, 0

    sg = m.Subgraphs(0)
    tensors = []
    for t in range(sg.TensorsLength()):
        T = sg.Tensors(t)
        shape = tuple(int(d) for d in T.ShapeAsNumpy()) if T.ShapeLength() else ()
        if any(d < 0 for d in shape):
            raise ModelError(f"tensor {t}: dynamic or negative dimension {list(shape)} (TFLite Micro needs "
                             f"static shapes)")
        q = T.Quantization()
        scale = np.zeros(0, np.float32)
        zp = np.zeros(0, np.int64)
        qdim = 0
        if q is not None:
            if q.ScaleLength():
                scale = np.asarray(q.ScaleAsNumpy(), dtype=np.float32)
            if q.ZeroPointLength():
                zp = np.asarray(q.ZeroPointAsNumpy(), dtype=np.int64)
            qdim = int(q.QuantizedDimension())
        off, size = buffer_location(int(T.Buffer()))
        name = T.Name()
        tensors.append(Tensor(index=t, name=name.decode("utf-8", "replace") if name else "", shape=shape,
                              type=int(T.Type()), buffer=int(T.Buffer()), is_variable=bool(T.IsVariable()),
                              scale=scale, zero_point=zp, quantized_dimension=qdim, data_offset=off,
                              data_size=size))
        if off is not None and tensors[-1].dtype is not None and size < tensors[-1].nbytes:
            raise ModelError(f"tensor {t} ({tensors[-1].name}): {size} bytes of data for a "
                             f"{tensors[-1].type_name}{list(shape)} tensor")

    def indices(vec, what):
        out = [int(v) for v in vec]
        for v in out:
            if v < -1 or v >= len(tensors):
                raise ModelError(f"{what}: tensor index {v} out of range (0..{len(tensors) - 1})")
        return out

    ops = []
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        oi = int(op.OpcodeIndex())
        if oi >= len(opcodes):
            raise ModelError(f"Missing registration for opcode_index {oi}")
        code, cc = opcodes[oi]
        if code == 32 and cc is None:  # CUSTOM
            raise ModelError("Operator with CUSTOM builtin_code has no custom_code.")
        op_name = cc if code == 32 else names.get(code, f"builtin {code}")
        try:
            opt = read_options(op, op_name, options_names)
        except ModelError:
            raise
        except Exception as e:  # noqa: BLE001 - the generated readers fail on offsets outside the file
            raise ModelError(f"operator {i} ({op_name}): its builtin options lie outside the file "
                             f"({type(e).__name__}: {e})") from None
        check_options(i, op_name, opt)
        custom = op.CustomOptionsAsNumpy().tobytes() if op.CustomOptionsLength() else b""
        ops.append(Operator(index=i, opcode_index=oi, builtin_code=code,
                            op_name=op_name, custom_code=cc,
                            inputs=indices(op.InputsAsNumpy() if op.InputsLength() else [], f"operator {i} inputs"),
                            outputs=indices(op.OutputsAsNumpy() if op.OutputsLength() else [],
                                            f"operator {i} outputs"),
                            options=opt, custom_options=custom,
                            intermediates=indices(op.IntermediatesAsNumpy() if op.IntermediatesLength() else [],
                                                  f"operator {i} intermediates")))
    model = Model(data=data, version=version,
                  description=(m.Description() or b"").decode("utf-8", "replace"), tensors=tensors, operators=ops,
                  inputs=indices(sg.InputsAsNumpy() if sg.InputsLength() else [], "subgraph inputs"),
                  outputs=indices(sg.OutputsAsNumpy() if sg.OutputsLength() else [], "subgraph outputs"),
                  n_subgraphs=n_sub, opcodes=opcodes)
    model.offline_offsets = _offline_offsets(m, data, n_buffers, len(tensors))
    return model


def _offline_offsets(m, data: bytes, n_buffers: int, n_tensors: int):
    """``GetOfflinePlannedOffsets``: the ``OfflineMemoryAllocation`` metadata ([version, subgraphs, n,
    offset...]), or None."""
    for i in range(m.MetadataLength()):
        md = m.Metadata(i)
        if md.Name() != b"OfflineMemoryAllocation":
            continue
        bi = int(md.Buffer())
        if bi >= n_buffers:
            raise ModelError(f"OfflineMemoryAllocation metadata: buffer {bi} out of range")
        b = m.Buffers(bi)
        raw = b.DataAsNumpy() if b.DataLength() else None
        if raw is None or raw.size < 12:
            raise ModelError("OfflineMemoryAllocation metadata: buffer too short")
        words = np.frombuffer(raw.tobytes()[: raw.size // 4 * 4], dtype="<i4")
        n = int(words[2])
        if n != n_tensors:
            raise ModelError(f"Nbr of offline buffer offsets ({n}) in metadata not equal nbr tensors ({n_tensors})")
        if words.size < 3 + n:
            raise ModelError("OfflineMemoryAllocation metadata: fewer offsets than tensors")
        return [int(v) for v in words[3:3 + n]]
    return None
