"""Tiny .tflite files without TensorFlow: the flatbuffers builder and the generated TFLite schema classes (the
``tflite`` package); the TFLM tests and tests/tools/test_tflite_npu.py build their models with it."""

from __future__ import annotations

from dataclasses import dataclass, field

import flatbuffers
import numpy as np

TYPES = {"float32": 0, "float16": 1, "int32": 2, "uint8": 3, "int64": 4, "int16": 7, "int8": 9, "bool": 6}
NP = {"float32": np.float32, "float16": np.float16, "int32": np.int32, "uint8": np.uint8, "int64": np.int64,
      "int16": np.int16, "int8": np.int8, "bool": np.bool_}


@dataclass
class T:
    name: str
    shape: list
    dtype: str
    data: object = None  # numpy array for constants
    scale: list = field(default_factory=list)
    zero_point: list = field(default_factory=list)
    qdim: int = 0
    variable: bool = False  # a variable tensor (the state of LSTM/SVDF)


@dataclass
class Op:
    opcode: str  # BuiltinOperator name, or "CUSTOM:<code>"
    inputs: list
    outputs: list
    options: tuple | None = None  # (OptionsName, {Field: value})
    custom_options: bytes = b""


def _vec(b, start, values, kind):
    start(b, len(values))
    for v in reversed(values):
        getattr(b, {"int32": "PrependInt32", "int64": "PrependInt64", "float32": "PrependFloat32"}[kind])(v)
    return b.EndVector()


def _offsets(b, start, items):
    start(b, len(items))
    for it in reversed(items):
        b.PrependUOffsetTRelative(it)
    return b.EndVector()


def build(tensors: list[T], ops: list[Op], inputs: list, outputs: list, version: int = 3,
          description: str = "test model") -> bytes:
    import importlib

    mods = {n: importlib.import_module(f"tflite.{n}") for n in (
        "Buffer", "Model", "Operator", "OperatorCode", "QuantizationParameters", "SubGraph", "Tensor")}
    Buffer, Model, Operator, OperatorCode = mods["Buffer"], mods["Model"], mods["Operator"], mods["OperatorCode"]
    QuantizationParameters, SubGraph, Tensor = mods["QuantizationParameters"], mods["SubGraph"], mods["Tensor"]
    from tflite.BuiltinOperator import BuiltinOperator
    from tflite.BuiltinOptions import BuiltinOptions

    b = flatbuffers.Builder(1 << 16)
    names = {t.name: i for i, t in enumerate(tensors)}
    buffers = []

    def buffer(arr):
        vec = None
        if arr is not None:
            b.StartVector(1, arr.nbytes, 16)  # 16-byte aligned data, as TFLite's converter writes it
            b.head = b.head - arr.nbytes
            b.Bytes[b.head:b.head + arr.nbytes] = arr.tobytes()
            vec = b.EndVector()
        Buffer.Start(b)
        if vec is not None:
            Buffer.AddData(b, vec)
        return Buffer.End(b)

    buffers.append(buffer(None))
    t_offs = []
    for t in tensors:
        bi = 0
        if t.data is not None:
            buffers.append(buffer(np.ascontiguousarray(np.asarray(t.data, dtype=NP[t.dtype]))))
            bi = len(buffers) - 1
        q = None
        if t.scale:
            s = _vec(b, QuantizationParameters.StartScaleVector, [float(x) for x in t.scale], "float32")
            z = _vec(b, QuantizationParameters.StartZeroPointVector, [int(x) for x in t.zero_point], "int64")
            QuantizationParameters.Start(b)
            QuantizationParameters.AddScale(b, s)
            QuantizationParameters.AddZeroPoint(b, z)
            QuantizationParameters.AddQuantizedDimension(b, t.qdim)
            q = QuantizationParameters.End(b)
        n = b.CreateString(t.name)
        sh = _vec(b, Tensor.StartShapeVector, list(t.shape), "int32")
        Tensor.Start(b)
        Tensor.AddShape(b, sh)
        Tensor.AddType(b, TYPES[t.dtype])
        Tensor.AddBuffer(b, bi)
        Tensor.AddName(b, n)
        if q is not None:
            Tensor.AddQuantization(b, q)
        if t.variable:
            Tensor.AddIsVariable(b, True)
        t_offs.append(Tensor.End(b))
    codes: list = []
    op_offs = []
    for op in ops:
        key = op.opcode
        if key not in codes:
            codes.append(key)
        opt_off, opt_type = None, 0
        if op.options is not None:
            oname, fields = op.options
            mod = importlib.import_module(f"tflite.{oname}")
            getattr(mod, "Start")(b)
            for f, v in fields.items():
                getattr(mod, f"Add{f}")(b, v)
            opt_off = getattr(mod, "End")(b)
            opt_type = getattr(BuiltinOptions, oname)
        custom = None
        if op.custom_options:
            custom = b.CreateByteVector(op.custom_options)
        ins = _vec(b, Operator.StartInputsVector, [names[x] if isinstance(x, str) else x for x in op.inputs], "int32")
        outs = _vec(b, Operator.StartOutputsVector, [names[x] for x in op.outputs], "int32")
        Operator.Start(b)
        Operator.AddOpcodeIndex(b, codes.index(key))
        Operator.AddInputs(b, ins)
        Operator.AddOutputs(b, outs)
        if opt_off is not None:
            Operator.AddBuiltinOptionsType(b, opt_type)
            Operator.AddBuiltinOptions(b, opt_off)
        if custom is not None:
            Operator.AddCustomOptions(b, custom)
        op_offs.append(Operator.End(b))
    tv = _offsets(b, SubGraph.StartTensorsVector, t_offs)
    ov = _offsets(b, SubGraph.StartOperatorsVector, op_offs)
    si = _vec(b, SubGraph.StartInputsVector, [names[x] for x in inputs], "int32")
    so = _vec(b, SubGraph.StartOutputsVector, [names[x] for x in outputs], "int32")
    sname = b.CreateString("main")
    SubGraph.Start(b)
    SubGraph.AddTensors(b, tv)
    SubGraph.AddInputs(b, si)
    SubGraph.AddOutputs(b, so)
    SubGraph.AddOperators(b, ov)
    SubGraph.AddName(b, sname)
    sg = SubGraph.End(b)
    oc_offs = []
    for key in codes:
        cc = None
        if key.startswith("CUSTOM:"):
            cc = b.CreateString(key.split(":", 1)[1])
            code = BuiltinOperator.CUSTOM
        else:
            code = getattr(BuiltinOperator, key)
        OperatorCode.Start(b)
        OperatorCode.AddDeprecatedBuiltinCode(b, min(code, 127))
        OperatorCode.AddBuiltinCode(b, code)
        OperatorCode.AddVersion(b, 1)
        if cc is not None:
            OperatorCode.AddCustomCode(b, cc)
        oc_offs.append(OperatorCode.End(b))
    ocv = _offsets(b, Model.StartOperatorCodesVector, oc_offs)
    sgv = _offsets(b, Model.StartSubgraphsVector, [sg])
    bv = _offsets(b, Model.StartBuffersVector, buffers)
    desc = b.CreateString(description)
    Model.Start(b)
    Model.AddVersion(b, version)
    Model.AddOperatorCodes(b, ocv)
    Model.AddSubgraphs(b, sgv)
    Model.AddDescription(b, desc)
    Model.AddBuffers(b, bv)
    b.Finish(Model.End(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def _end_vector_takes_len() -> bool:
    import inspect

    return len(inspect.signature(flatbuffers.Builder.EndVector).parameters) > 1
