"""A Python counterpart of TFLite Micro's ``MicroInterpreter`` over simulated memory.

``AllocateTensors`` in TFLM's order: resolve every operator's registration (a missing builtin fails with
``Didn't find op for builtin opcode '<NAME>'``), Prepare each kernel (which may request scratch buffers),
plan the arena's head (``planner.py``: the greedy planner by default; offline offsets honoured), then the
persistent tail; an arena too small fails with the allocator's ``Failed to resize buffer`` line. Tensors live
where the plan puts them in the arena (the board's ``firmware.pools.arena``); constant tensors are read in
place from the model in memory. ``invoke`` runs the operators in order: CPU kernels (``kernels/``) over numpy
views of simulated memory, the ``ethos-u`` custom operator through the Ethos-U driver (``ethosu_op.py``).

Variable tensors (the state of UNIDIRECTIONAL_SEQUENCE_LSTM, SVDF and of Vela's NPU lowering of them) are
TFLM's: one with an offline-planned offset is planned in the head at that offset (``needs_allocating``), any
other is a persistent buffer of the tail (``AllocateVariables``, 16-byte aligned, below the rest of the tail);
AllocateTensors resets each (``ResetVariableTensors``: the zero point's byte for an int8 tensor, 0 otherwise)
and ``invoke`` leaves them as the last invocation wrote them, so state carries from one invocation to the next.

The arena's persistent part (TfLiteEvalTensors, node and registration records, kernel op data, the interpreter
objects) is an estimate from 32-bit struct sizes (``TAIL_*`` below); the planned head and the variable tensors'
bytes are exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kernels import REGISTRY, PrepareError
from .kernels.common import TYPE_INT8
from .kernels.softmax import KernelCheckFailed
from .model import Model
from .planner import ALIGNMENT, ONLINE, PLANNERS, Buffer, align_up, lifetimes

# Persistent-tail estimate, 32-bit Cortex-M (bytes): allocator, interpreter and planner objects; per tensor a
# TfLiteEvalTensor; per operator a NodeAndRegistration + builtin data; per model input/output a TfLiteTensor
TAIL_FIXED = 512
TAIL_PER_TENSOR = 12
TAIL_PER_OPERATOR = 64
TAIL_PER_IO_TENSOR = 64
TAIL_PER_SCRATCH = 4


class InterpreterError(Exception):
    """AllocateTensors or Invoke failed; ``lines`` are what TFLM prints (MicroPrintf), ``status`` a short
    reason; ``reason`` the line the run's stop reason gives (the first, unless another names the cause better)."""

    def __init__(self, lines, status: str, reason: str | None = None):
        super().__init__(lines[-1] if lines else status)
        self.lines = list(lines)
        self.status = status
        self.reason = reason or (self.lines[0] if self.lines else status)


@dataclass
class Node:
    op: object  # model.Operator
    name: str
    prepared: object  # kernels.Prepared or ethosu_op.EthosUKernel
    scratch: list  # arena offsets of the scratch buffers


class Interpreter:
    def __init__(self, bus, model: Model, model_address: int, arena_address: int, arena_size: int,
                 planner: str = "greedy", ethosu=None):
        self.bus = bus
        self.model = model
        self.model_address = model_address
        self.arena_raw = arena_address
        self.arena_address = align_up(arena_address, ALIGNMENT)
        self.arena_size = arena_size - (self.arena_address - arena_address)
        self.planner = planner
        self.ethosu = ethosu  # factory: (interpreter, op) -> kernel, or None (no NPU)
        self.nodes: list[Node] = []
        self.addresses: dict[int, int] = {}
        self.head = 0
        self.tail = 0
        self.buffers: list[Buffer] = []

    # ------------------------------------------------------------------ tensors
    def tensor(self, index: int):
        return self.model.tensors[index]

    def const(self, index: int):
        """The constant data of tensor ``index`` as a read-only array in logical shape, or None."""
        if index < 0:
            return None
        t = self.model.tensors[index]
        if t.data_offset is None or t.dtype is None:
            return None
        raw = self.bus.view(self.model_address + t.data_offset, t.nbytes)
        a = raw.view(t.dtype).reshape(t.shape)
        a.flags.writeable = False
        return a

    def address(self, index: int) -> int:
        t = self.model.tensors[index]
        if t.data_offset is not None:
            return self.model_address + t.data_offset
        if index not in self.addresses and t.nbytes == 0:  # an empty tensor (Vela's read_only of a program
            return 0  # without weights) has no arena bytes: a null data pointer
        return self.addresses[index]

    def array(self, index: int) -> np.ndarray:
        t = self.model.tensors[index]
        if t.data_offset is not None:
            return self.const(index)
        if index not in self.addresses and t.nbytes == 0:  # an empty tensor has no arena bytes
            return np.zeros(t.shape, t.dtype)
        return self.bus.view(self.addresses[index], t.nbytes).view(t.dtype).reshape(t.shape)

    # ------------------------------------------------------------------ allocation
    def allocate_tensors(self) -> None:
        model = self.model
        if model.n_subgraphs != 1:
            raise InterpreterError([f"the model has {model.n_subgraphs} subgraphs; this runner supports one "
                                    f"(no IF/WHILE/CALL_ONCE)"], "subgraphs")
        registrations = []
        for op in model.operators:
            if op.builtin_code == 32:  # CUSTOM
                if op.custom_code == "ethos-u" and self.ethosu is not None:
                    registrations.append("ethos-u")
                    continue
                # TFLM: an unresolved custom operator is reported when preparing
                named = (f"Didn't find op for custom opcode '{op.custom_code}'"
                         + ("" if op.custom_code != "ethos-u" else " (the board has no Ethos-U)"))
                raise InterpreterError(["Failed to get registration from op code CUSTOM", named],
                                       f"missing operator {op.custom_code}", reason=named)  # the stop names it
            if op.op_name not in REGISTRY:
                raise InterpreterError([f"Didn't find op for builtin opcode '{op.op_name}'",
                                        f"Failed to get registration from op code {op.op_name}"],
                                       f"missing operator {op.op_name}")
            registrations.append(op.op_name)
        for op, reg in zip(model.operators, registrations):
            for t in list(op.inputs) + list(op.outputs):
                if t >= 0 and model.tensors[t].dtype is None:
                    raise InterpreterError([f"Node {reg} (number {op.index}): tensor {t} has the unsupported "
                                            f"type {model.tensors[t].type_name}"], "tensor type")
            try:
                prepared = self.ethosu(self, op) if reg == "ethos-u" else REGISTRY[reg](self, op)
            except (PrepareError, ValueError) as e:
                raise InterpreterError([str(e), f"Node {reg} (number {op.index}) failed to prepare with status 1"],
                                       f"{reg} failed to prepare") from None
            self.nodes.append(Node(op=op, name=reg, prepared=prepared, scratch=[]))

        offline = model.offline_offsets
        for op in model.operators:  # AllocationInfoBuilder::ValidateSubgraph
            for t in op.intermediates:
                if model.tensors[t].nbytes:
                    raise InterpreterError([f"Does not support intermediate tensor with non-zero size: "
                                            f"{model.tensors[t].nbytes}"], "intermediate tensor")

        def needs(t):
            if t.is_variable:  # planned in the head only with an offline offset
                return offline is not None and offline[t.index] != ONLINE and t.nbytes > 0
            return t.data_offset is None and t.nbytes > 0

        tail_variables = [t for t in model.tensors if t.is_variable and not needs(t) and t.nbytes > 0]
        buffers = lifetimes(model, needs)
        n_scratch = 0
        for i, node in enumerate(self.nodes):
            for size in getattr(node.prepared, "scratch", []) or []:
                buffers.append(Buffer(tensor=-1 - n_scratch, size=align_up(size), first=i + 1, last=i + 1))
                n_scratch += 1
        self.tail = (TAIL_FIXED + TAIL_PER_TENSOR * len(model.tensors) + TAIL_PER_OPERATOR * len(model.operators)
                     + TAIL_PER_IO_TENSOR * (len(model.inputs) + len(model.outputs)) + TAIL_PER_SCRATCH * n_scratch
                     + sum(getattr(n.prepared, "persistent", 0) for n in self.nodes))
        if self.planner != "greedy" and any(b.offline_offset != ONLINE for b in buffers):
            # MicroMemoryPlanner::AddBuffer(..., offline_offset) fails for every planner but the greedy one
            raise InterpreterError([f"the {self.planner} memory planner cannot place offline-planned buffers (the "
                                    f"model has an OfflineMemoryAllocation plan, e.g. Vela's): use "
                                    f"firmware.allocator: greedy"], "offline plan")
        self.head = PLANNERS[self.planner](buffers)
        self.buffers = buffers
        for t in tail_variables:  # AllocateVariables: persistent buffers below the rest of the tail
            self.tail = align_up(self.tail) + align_up(t.nbytes)
            self.addresses[t.index] = self.arena_address + self.arena_size - self.tail
        available = self.arena_size - align_up(self.tail)
        if self.head > available:
            raise InterpreterError([f"Failed to resize buffer. Requested: {self.head}, available "
                                    f"{max(available, 0)}, missing: {self.head - max(available, 0)}"],
                                   "arena too small")
        for b in buffers:
            if b.tensor >= 0:
                self.addresses[b.tensor] = self.arena_address + b.offset
        self.reset_variables()
        scratch = {-1 - b.tensor: self.arena_address + b.offset for b in buffers if b.tensor < 0}
        k = 0
        for node in self.nodes:
            for _ in getattr(node.prepared, "scratch", []) or []:
                node.scratch.append(scratch[k])
                k += 1

    def reset_variables(self) -> None:
        """``ResetVariableTensors``: every variable tensor to its zero point's byte (int8) or 0."""
        for t in self.model.tensors:
            if t.is_variable and t.index in self.addresses and t.nbytes:
                value = t.params_zero_point & 0xFF if t.type == TYPE_INT8 and t.zero_point.size else 0
                self.bus.view(self.addresses[t.index], t.nbytes)[:] = value
                self.bus.work("memset_byte", t.nbytes)

    @property
    def arena_used_bytes(self) -> int:
        return self.head + self.tail

    # ------------------------------------------------------------------ invoke
    def invoke(self) -> None:
        bus = self.bus
        for node in self.nodes:
            op = node.op
            bus.work("call")
            bus.trace("B", "tflm", f"{node.name} {op.index}")
            if node.name == "ethos-u":
                node.prepared.invoke(node)
            else:
                ins = [self.array(i) if i >= 0 else None for i in op.inputs]
                outs = [self.array(i) for i in op.outputs]
                try:
                    node.prepared.run(ins, outs)
                except KernelCheckFailed as e:
                    raise InterpreterError([str(e)], f"{node.name} aborted") from None
                kind, amount = node.prepared.work
                if amount:
                    bus.work(kind, amount)
            bus.trace("E", "tflm", f"{node.name} {op.index}")
