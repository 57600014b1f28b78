"""Reader for ExecuTorch bundled programs (``.bpte``, FlatBuffer identifier ``BP08``).

Schema: ``devtools/bundled_program/schema/bundled_program_schema.fbs`` (namespace ``bundled_program_flatbuffer``)::

    BundledProgram       0 version:uint  1 method_test_suites:[BundledMethodTestSuite]  2 program:[ubyte] (align 32)
    BundledMethodTestSuite  0 method_name:string  1 test_cases:[BundledMethodTestCase]
    BundledMethodTestCase   0 inputs:[Value]  1 expected_outputs:[Value]
    Value                0 val_type:ubyte  1 val:ValueUnion {NONE 0, Tensor 1, Int 2, Bool 3, Double 4}
    Tensor               0 scalar_type:byte  1 sizes:[int]  2 data:[ubyte] (align 16)  3 dim_order:[ubyte]

Nothing is copied: the embedded ``.pte`` and every test tensor are ``(offset, size)`` ranges inside the bundled
buffer; ``BundledValue.array(buf)`` gives a numpy view. Errors raise ``RuntimeFailure`` (``InvalidProgram``)
with a one-line message.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from firmware.executorch.error import Error, RuntimeFailure
from firmware.executorch.flatbuf import FlatBuffer, Table, as_memoryview, fail, required
from firmware.executorch.program import load_program
from firmware.executorch.program_types import (SCALAR_TYPES, SCALAR_VALUES, SIZE_T_MAX, Program, _ident_str,
                                               check_dim_order, check_sizes, read_scalar_type, read_sizes,
                                               tensor_view)

BUNDLED_IDENTIFIER = b"BP08"
VALUE_KINDS = ("None", "Tensor", "Int", "Bool", "Double")


@dataclass(frozen=True)
class BundledValue:
    """A test-case value. Tensor: ``scalar_type``, ``sizes``, ``dim_order``, and ``data_offset``/``data_size``
    (bytes inside the bundled buffer). Int/Bool/Double: ``value``. None: nothing."""
    kind: str
    value: object = None
    scalar_type: int | None = None
    sizes: tuple = ()
    dim_order: tuple = ()
    data_offset: int = 0
    data_size: int = 0

    @property
    def numel(self) -> int:
        return math.prod(self.sizes)

    @property
    def nbytes(self) -> int:
        """Bytes the tensor's sizes need (``data_size`` may be larger, never smaller)."""
        return self.numel * SCALAR_TYPES[self.scalar_type][1] if self.kind == "Tensor" else 0

    @property
    def dtype(self):
        return SCALAR_TYPES[self.scalar_type][2] if self.kind == "Tensor" else None

    def array(self, buf) -> np.ndarray:
        """Zero-copy numpy view of a Tensor value's data in ``buf`` (the bundled buffer), logical shape."""
        if self.kind != "Tensor":
            raise RuntimeFailure(Error.InvalidType, f"bundled value is {self.kind}, not a Tensor")
        return tensor_view(buf, self.data_offset, self.scalar_type, self.sizes, self.dim_order)

    def data(self, buf) -> memoryview:
        """The tensor's ``nbytes`` raw bytes in ``buf``, what ``set_input`` copies."""
        mv = as_memoryview(buf)
        return mv[self.data_offset:self.data_offset + self.nbytes]


@dataclass(frozen=True)
class TestCase:
    inputs: list
    expected_outputs: list

    __test__ = False  # not a pytest class


@dataclass(frozen=True)
class MethodTestSuite:
    method_name: str
    test_cases: list


@dataclass(frozen=True, eq=False)
class BundledProgram:
    version: int
    method_test_suites: list
    program_offset: int  # the embedded .pte inside the bundled buffer
    program_size: int
    buffer: memoryview = field(repr=False)

    @property
    def program_data(self) -> memoryview:
        """Zero-copy view of the embedded ``.pte`` image."""
        return self.buffer[self.program_offset:self.program_offset + self.program_size]

    def load_program(self) -> Program:
        """``load_program`` on the embedded ``.pte`` (offsets in the result are relative to ``program_offset``)."""
        return load_program(self.program_data)

    def test_suite(self, method_name: str) -> MethodTestSuite:
        for suite in self.method_test_suites:
            if suite.method_name == method_name:
                return suite
        raise RuntimeFailure(Error.NotFound, f"No method named '{method_name}' in bundled program test suites")


def is_bundled(buf) -> bool:
    """True when ``buf`` carries the ``BP08`` identifier (``is_bundled_program``)."""
    mv = as_memoryview(buf)
    return len(mv) >= 8 and bytes(mv[4:8]) == BUNDLED_IDENTIFIER


def load_bundled(buf) -> BundledProgram:
    """Parse a ``.bpte`` image held in ``buf`` (bytes, memoryview or numpy uint8 array)."""
    mv = as_memoryview(buf)
    if len(mv) < 8 or bytes(mv[4:8]) != BUNDLED_IDENTIFIER:
        raise fail(f"Bundled program identifier '{_ident_str(bytes(mv[4:8]))}' != expected 'BP08'")
    fb = FlatBuffer(mv, "bundled program")
    root = fb.root("BundledProgram")
    version = root.scalar(0, "I", 0, "version")
    prog = required(root.bytes_range(2, "program"), "bundled program has no embedded program")
    suites = []
    for si, st in enumerate(root.tables(1, "BundledMethodTestSuite", "method_test_suites") or ()):
        name = required(st.string(0, "method_name"), f"bundled method test suite {si} has no method_name")
        cases = []
        for ci, ct in enumerate(st.tables(1, "BundledMethodTestCase", "test_cases") or ()):
            where = f"test suite '{name}' case {ci}"
            ins = [_parse_value(vt, f"{where} input {k}")
                   for k, vt in enumerate(ct.tables(0, "Value", "inputs") or ())]
            outs = [_parse_value(vt, f"{where} expected output {k}")
                    for k, vt in enumerate(ct.tables(1, "Value", "expected_outputs") or ())]
            cases.append(TestCase(inputs=ins, expected_outputs=outs))
        suites.append(MethodTestSuite(method_name=name, test_cases=cases))
    return BundledProgram(version=version, method_test_suites=suites, program_offset=prog[0],
                          program_size=prog[1], buffer=mv)


def _parse_value(vt: Table, where: str) -> BundledValue:
    tag, pos = vt.union(0, "val")
    if tag == 0:
        return BundledValue("None")
    if tag >= len(VALUE_KINDS):
        raise fail(f"{where}: unknown ValueUnion type {tag}")
    kind = VALUE_KINDS[tag]
    if not pos:
        raise fail(f"{where}: {kind} value missing")
    t = Table(vt.fb, pos, kind)
    if kind in SCALAR_VALUES:
        return BundledValue(kind, SCALAR_VALUES[kind](t))
    # Tensor
    scalar_type = read_scalar_type(t, 0, where)
    sizes = read_sizes(t, 1, where)
    n = len(sizes)
    check_sizes(sizes, where)
    dim_order = t.scalars(3, "B", "dim_order")
    if dim_order is None:
        dim_order = tuple(range(n))
    check_dim_order(dim_order, n, where)
    data = t.bytes_range(2, "data") or (0, 0)
    nbytes = math.prod(sizes) * SCALAR_TYPES[scalar_type][1]
    if nbytes > SIZE_T_MAX:
        raise fail(f"{where}: {nbytes} bytes do not fit a 32-bit size_t")
    if data[1] < nbytes:
        raise fail(f"{where}: tensor data has {data[1]} bytes, its sizes {list(sizes)} need {nbytes}")
    return BundledValue(kind, None, scalar_type=scalar_type, sizes=tuple(sizes), dim_order=tuple(dim_order),
                        data_offset=data[0], data_size=data[1])
