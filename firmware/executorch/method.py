"""``Program::load_method`` and ``Method::execute``: values, tensors, kernels, delegates, chains.

Loading charges the method allocator exactly as ``Method::init`` does on a 32-bit Cortex-M55, in the same
order (``runtime/executor/method.cpp``), with the struct sizes of the selected runtime profile: the ``values_``
list (and the ``input_set_`` list), per tensor its sizes/dim-order (dynamic shapes only), strides and
``TensorImpl``, per list value its pointer/data arrays (and box), the delegate list, per delegate its compile
specs and backend ``init``, the chain list, per chain the kernel and argument arrays, per instruction its
argument pointers, and per kernel call its ``TensorMeta`` list (one per argument) and dim orders (from the
method allocator in PR-era profiles, the temp allocator later). Tensor data lives in simulated memory:
constants inside the program image, planned tensors in the planned buffers, so every kernel and delegate works
on views of the machine's RAM.
"""

from __future__ import annotations

import contextlib

import math

import numpy as np

from . import log
from .error import Error, RuntimeFailure
from .program_types import DYNAMIC_UNBOUND, SCALAR_TYPE_IDS, SCALAR_TYPES, STATIC, Program

BOOL_TYPE = 11


def dense_strides(sizes, dim_order) -> tuple:
    """``dim_order_to_stride``: element strides of a dense tensor of ``sizes`` laid out in ``dim_order``."""
    strides = [0] * len(sizes)
    step = 1
    for d in reversed(tuple(dim_order)):
        strides[d] = step
        step *= sizes[d]
    return tuple(strides)


class RtTensor:
    """A runtime tensor: metadata plus the simulated address of its data."""

    __slots__ = ("scalar_type", "sizes", "dim_order", "address", "elem_size", "dtype", "nbytes", "numel")

    def __init__(self, scalar_type: int, sizes, dim_order, address: int | None):
        self.scalar_type = scalar_type
        self.sizes = tuple(int(s) for s in sizes)
        self.dim_order = tuple(dim_order) if dim_order else tuple(range(len(self.sizes)))
        self.address = address
        name, self.elem_size, self.dtype = SCALAR_TYPES[scalar_type]
        self.numel = math.prod(self.sizes)
        self.nbytes = self.numel * self.elem_size

    @property
    def strides(self) -> tuple:
        """``dim_order_to_stride``: element strides of the dense tensor laid out in ``dim_order``."""
        return dense_strides(self.sizes, self.dim_order)

    @property
    def type_name(self) -> str:
        return SCALAR_TYPES[self.scalar_type][0]

    def raw(self, bus) -> np.ndarray:
        """The tensor's bytes in simulated memory (uint8 view)."""
        if self.address is None:
            raise RuntimeFailure(Error.InvalidState, "tensor has no data")
        return bus.view(self.address, self.nbytes)

    def array(self, bus) -> np.ndarray:
        """A view of the data in logical shape (honouring ``dim_order``); writes go to simulated memory."""
        if self.dtype is None:
            raise RuntimeFailure(Error.NotSupported, f"ScalarType {self.type_name} is not supported by this kernel")
        flat = self.raw(bus).view(self.dtype)
        physical = tuple(self.sizes[d] for d in self.dim_order)
        arr = flat.reshape(physical)
        if self.dim_order != tuple(range(len(self.sizes))):
            arr = arr.transpose(np.argsort(self.dim_order))
        return arr


_NO_EVENT = contextlib.nullcontext()  # no event tracer: the runner built without ET_EVENT_TRACER_ENABLED

# the arrays Method::init allocates for each element of a list value (program.fbs' IntList, TensorList,
# OptionalTensorList), per element and in this order, before the boxed list itself
_LIST_ARRAYS = {"IntList": ("EValuePtr", "int64"), "TensorList": ("Tensor", "EValuePtr"),
                "OptionalTensorList": ("EValuePtr", "OptionalTensor")}


class Method:
    def __init__(self, program: Program, plan_index: int, memory_manager, profile: dict, bus, image_address: int,
                 kernels: dict, backends: dict, kernel_signature=None):
        self.program = program
        self.plan = program.execution_plans[plan_index]
        self.name = self.plan.name
        self.mm = memory_manager
        self.profile = profile
        self.sizes = profile["struct_sizes"]
        self.bus = bus
        self.image_address = image_address  # simulated address of the program image (offsets are relative to it)
        self.kernel_registry = kernels
        # operator name -> its signature's non-out type codes (kernels.registry.REGISTRY.signature), for the
        # ETDump's intermediate outputs; given by the runner, so the method does not import the kernels
        self.kernel_signature = kernel_signature or (lambda name: None)
        self.backend_registry = backends
        self.values: list = []
        self.delegates: list = []  # (backend, handle)
        self.chains: list = []  # per chain: list of resolved instruction entries
        self.inputs_set = [False] * len(self.plan.inputs)

    # ------------------------------------------------------------------------------------------ allocation
    def _alloc(self, what: str, count: int = 1, allocator=None):
        size, align = self.sizes[what]
        alloc = allocator or self.mm.method_allocator
        addr = alloc.allocate(size * count, align)
        if addr is None:
            raise RuntimeFailure(Error.MemoryAllocationFailed, f"cannot allocate {count} x {what}")
        return addr

    # ------------------------------------------------------------------------------------------ load
    def load(self) -> None:
        plan = self.plan
        bus = self.bus
        bus.work("call")
        n_values = len(plan.values)
        self._alloc("EValue", n_values)
        if self.profile["input_set_list"]:
            self._alloc("bool", len(plan.inputs))
        boxed = self.profile["boxed_lists"]
        for i, ev in enumerate(plan.values):
            k = ev.kind
            if k == "Tensor":
                t = ev.value
                if t.shape_dynamism == DYNAMIC_UNBOUND:
                    raise RuntimeFailure(Error.NotSupported, f"value {i}: DYNAMIC_UNBOUND tensors are not supported")
                if t.storage_offset != 0:
                    raise RuntimeFailure(Error.NotSupported, f"value {i}: non-zero storage_offset")
                if t.shape_dynamism != STATIC:
                    self._alloc("SizesType", t.dim)
                    self._alloc("DimOrderType", t.dim)
                self._alloc("StridesType", t.dim)
                self._alloc("TensorImpl")
                self.values.append(self._make_tensor(i, t))
            elif k in _LIST_ARRAYS:
                for what in _LIST_ARRAYS[k]:  # in the runtime's order: it decides the allocator's figures
                    self._alloc(what, len(ev.value))
                if boxed:
                    self._alloc("BoxedEvalueList")
                self.values.append((k, list(ev.value)))
            elif k in ("BoolList", "DoubleList", "String"):
                if boxed:
                    self._alloc("ArrayRef")
                self.values.append(ev.value)
            else:  # None, Null, Int, Bool, Double: inline in the EValue
                self.values.append(ev.value)
        bus.work("parse_byte", 64 * n_values)

        # delegates
        if plan.delegates:
            self._alloc("BackendDelegate", len(plan.delegates))
        for di, d in enumerate(plan.delegates):
            self._alloc("CompileSpec", len(d.compile_specs))
            backend = self.backend_registry.get(d.id)
            if backend is None:
                log.error(self.profile["messages"]["backend_not_found"].format(name=d.id))
                raise RuntimeFailure(Error.NotFound, f"backend {d.id} is not registered")
            offset, size = self.program.delegate_data(d)
            handle = backend.init(self, self.image_address + offset, size, d.compile_specs)
            self.delegates.append((backend, handle))

        # chains
        if plan.chains:
            self._alloc("Chain", len(plan.chains))
        msgs = self.profile["messages"]
        for ci, chain in enumerate(plan.chains):
            n = len(chain.instructions)
            self._alloc("OpFunction", n)
            self._alloc("InstructionArgs", n)
            entries = []
            for ii, ins in enumerate(chain.instructions):
                if ins.kind in ("KernelCall", "DelegateCall"):
                    self._alloc("EValuePtr", len(ins.args))
                if ins.kind == "KernelCall":
                    op = plan.operators[ins.op_index]
                    self._alloc_kernel_meta(ins.args)
                    fn = self.kernel_registry.get(op.full_name)
                    if fn is None:
                        log.error(msgs["missing_operator"].format(index=ins.op_index, name=op.full_name))
                        raise RuntimeFailure(Error.OperatorMissing, f"missing operator {op.full_name}")
                    entries.append(("KernelCall", fn, list(ins.args), op.full_name))
                elif ins.kind == "DelegateCall":
                    entries.append(("DelegateCall", ins.delegate_index, list(ins.args), None))
                elif ins.kind == "MoveCall":
                    entries.append(("MoveCall", ins.move_from, ins.move_to, None))
                elif ins.kind == "JumpFalseCall":
                    entries.append(("JumpFalseCall", ins.cond_value_index, ins.destination_instruction, None))
                elif ins.kind == "FreeCall":
                    entries.append(("FreeCall", ins.value_index, None, None))
                else:
                    raise RuntimeFailure(Error.InvalidProgram, f"chain {ci} instruction {ii}: unknown kind {ins.kind}")
                bus.work("call")
            self.chains.append(entries)

    def _alloc_kernel_meta(self, args: list) -> None:
        """``Method::resolve_operator``: ``TensorMeta[n_args]``, then a dim-order array per tensor argument.

        The ``TensorMeta`` list has one entry per *argument*, not per tensor argument: the runtime allocates
        ``allocateList<TensorMeta>(n_args)`` and fills only the first ``count`` entries (the tensors), which it
        hands to the kernel registry as ``{meta, count}`` (``runtime/executor/method.cpp`` at PR #12353's merge
        8f3eb3eb51, lines 694-729; the same ``n_args`` in release/1.4). Each tensor argument then gets
        ``allocateList<DimOrderType>(tensor.dim())`` from the same allocator, one per argument position, so
        a tensor passed twice (``out`` and the return value) is counted twice.
        """
        where = self.profile["kernel_meta_allocator"]
        alloc = self.mm.temp_allocator if where == "temp" and self.mm.temp_allocator.size() > 0 else self.mm.method_allocator
        self._alloc("TensorMeta", len(args), alloc)
        for a in args:
            t = self.values[a]
            if isinstance(t, RtTensor):
                self._alloc("DimOrderType", len(t.sizes), alloc)
        if alloc is self.mm.temp_allocator:
            alloc.reset()

    def _make_tensor(self, index: int, t) -> RtTensor:
        if t.is_external:
            raise RuntimeFailure(Error.NotSupported, f"value {index}: external tensor data (.ptd) is not supported")
        address = None
        if t.is_constant:
            off, _ = self.program.constant_data(t.data_buffer_idx, t.nbytes)
            address = self.image_address + off
        elif t.allocation_info is not None:
            if t.allocation_info.memory_offset_high:
                raise RuntimeFailure(Error.NotSupported, f"value {index}: 64-bit memory offset on a 32-bit target")
            address = self.mm.planned_memory.get_offset_address(t.allocation_info.memory_id,
                                                                t.allocation_info.memory_offset, t.nbytes)
            if t.has_initial_state:
                raise RuntimeFailure(Error.NotSupported, f"value {index}: mutable buffers are not supported")
        return RtTensor(t.scalar_type, t.sizes, t.dim_order, address)

    # ------------------------------------------------------------------------------------------ I/O
    def input_tensor(self, i: int) -> RtTensor | None:
        if not 0 <= i < len(self.plan.inputs):
            raise RuntimeFailure(Error.InvalidArgument, f"input index {i} >= {len(self.plan.inputs)} inputs")
        v = self.values[self.plan.inputs[i]]
        return v if isinstance(v, RtTensor) else None

    def output_values(self) -> list:
        return [self.values[i] for i in self.plan.outputs]

    def set_input_bytes(self, i: int, data) -> None:
        """``set_input``: copy ``data`` into input ``i``'s memory (sizes must match)."""
        t = self.input_tensor(i)
        if t is None:
            raise RuntimeFailure(Error.InvalidArgument, f"input {i} is not a tensor")
        buf = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) else data.view(np.uint8).reshape(-1)
        if buf.size != t.nbytes:
            raise RuntimeFailure(Error.InvalidArgument, f"input {i}: {buf.size} bytes given, the tensor has {t.nbytes}")
        t.raw(self.bus)[:] = buf
        self.bus.work("memcpy_byte", t.nbytes)
        self.inputs_set[i] = True

    # ------------------------------------------------------------------------------------------ execute
    def execute(self) -> None:
        tracer = getattr(self, "event_tracer", None)
        if tracer is None:
            return self._execute(None)
        tracer.create_event_block("Execute")  # Method::execute: its block and its event
        with tracer.profile("Method::execute"):
            self._execute(tracer)
        for v in self.output_values():  # Method::log_outputs, after the Method::execute event
            tracer.log_output(v, self.values)

    def _out_args(self, opname: str, indices: list) -> list:
        """The value indices the codegen's kernel wrapper logs after the call (``gen.py``:
        ``event_tracer_log_evalue(..., *stack[output_id])``): an out variant's ``out`` arguments, a functional
        operator's returned value. The emitter lists an instruction's arguments as the schema's other arguments
        (the kernel's signature), then the ``out`` arguments, then the returned values, which are the same
        values as the ``out`` arguments."""
        sig = self.kernel_signature(opname)
        rest = list(indices[len(sig.split(",")) if sig else 0:])
        k = len(rest) // 2
        if k and len(rest) == 2 * k and rest[:k] == rest[k:]:
            return rest[:k]
        return rest

    def _execute(self, tracer) -> None:
        bus = self.bus
        msgs = self.profile["messages"]
        temp = self.mm.temp_allocator
        for entries in self.chains[:1]:
            pc = 0
            steps = 0
            limit = 100 * max(len(entries), 1) + 1000
            while pc < len(entries):
                steps += 1
                if steps > limit:
                    raise RuntimeFailure(Error.Internal, "chain does not terminate (JumpFalseCall loop)")
                kind, a, b, opname = entries[pc]
                bus.work("instruction")
                if kind == "KernelCall":
                    bus.trace("B", "cpu", opname)
                    try:
                        with tracer.instruction("OPERATOR_CALL", 0, pc) if tracer else _NO_EVENT:
                            args = [self.values[i] for i in b]
                            # the codegen'd kernel wrapper's own scope (codegen/gen.py: EventTracerProfileOpScope
                            # "native_call_<schema name>" around the call and its output logging)
                            with tracer.profile(f"native_call_{opname.split('::', 1)[-1]}") if tracer else _NO_EVENT:
                                _call_kernel(a, KernelContext(self, temp), args, opname)
                                if tracer and tracer.logs_intermediate:
                                    for i in self._out_args(opname, b):  # event_tracer_log_evalue per out arg
                                        tracer.log_intermediate(self.values[i], self.values)
                    except RuntimeFailure as e:
                        log.error(msgs["kernel_failed"].format(chain=0, index=pc, op=opname, status=int(e.code)))
                        raise
                    finally:
                        bus.trace("E", "cpu", opname)
                elif kind == "DelegateCall":
                    backend, handle = self.delegates[a]
                    name = f"{backend.name}[{a}]"
                    bus.trace("B", "delegate", name)
                    try:
                        with tracer.instruction("DELEGATE_CALL", 0, pc) if tracer else _NO_EVENT:
                            args = [self.values[i] for i in b]
                            backend.execute(self, handle, args)
                            if tracer and tracer.logs_intermediate:
                                for v in args:  # every argument, inputs too (method.cpp cannot tell them apart)
                                    tracer.log_intermediate(v, self.values)
                    except RuntimeFailure as e:
                        log.error(msgs["delegate_failed"].format(index=pc, status=int(e.code)))
                        raise
                    finally:
                        bus.trace("E", "delegate", name)
                elif kind == "MoveCall":
                    self._move(a, b)
                elif kind == "JumpFalseCall":
                    if not self._cond_value(a):
                        pc = b
                        temp.reset()
                        continue
                # FreeCall: the planned memory is reused by later tensors; nothing to do
                temp.reset()
                pc += 1

    def _cond_value(self, index: int) -> bool:
        """``parse_cond_value`` (``method.cpp``): a Bool tensor is true when every element is; a Bool scalar is
        itself; any other value (a tensor of another dtype, an Int, a list) is ``InvalidProgram``."""
        cond = self.values[index]
        if isinstance(cond, RtTensor):
            if cond.scalar_type != SCALAR_TYPE_IDS["Bool"]:
                log.error(f"Check failed (executorch::aten::ScalarType::Bool == cond_val.scalar_type()): "
                          f"Expected dtype of {SCALAR_TYPE_IDS['Bool']} got {cond.scalar_type}")
                raise RuntimeFailure(Error.InvalidProgram, f"JumpFalseCall condition (value {index}) is a "
                                                           f"{cond.type_name} tensor, not Bool")
            return bool(np.all(cond.array(self.bus)))
        if isinstance(cond, bool):
            return cond
        log.error(f"Unsupported JF EValue type (value {index}: {type(cond).__name__})")
        raise RuntimeFailure(Error.InvalidProgram, f"JumpFalseCall condition (value {index}) is not a Bool")

    def _move(self, src: int, dst: int) -> None:
        v = self.values[src]
        d = self.values[dst]
        if isinstance(v, RtTensor) and isinstance(d, RtTensor):
            if v.nbytes != d.nbytes:
                raise RuntimeFailure(Error.InvalidArgument, f"MoveCall between tensors of {v.nbytes} and {d.nbytes} bytes")
            if v.address != d.address:
                d.raw(self.bus)[:] = v.raw(self.bus)
                self.bus.work("memcpy_byte", v.nbytes)
        else:
            self.values[dst] = v


_KERNEL_ARG_ERRORS = (ValueError, IndexError, TypeError, OverflowError, ZeroDivisionError, KeyError,
                      FloatingPointError, MemoryError)


def _call_kernel(fn, ctx, args: list, opname: str) -> None:
    """Call a CPU kernel. Arguments a kernel cannot use (wrong count, types, shapes) fail the call with
    ``InvalidArgument``, as the C++ kernels' ``ET_KERNEL_CHECK``s do, instead of escaping as exceptions."""
    try:
        with np.errstate(all="ignore"):
            fn(ctx, args)
    except _KERNEL_ARG_ERRORS as e:
        raise RuntimeFailure(Error.InvalidArgument, f"{opname}: invalid arguments ({type(e).__name__}: {e})") from None


class KernelContext:
    """What a kernel gets besides its arguments: the bus (for views and the cost model), the temp allocator."""

    __slots__ = ("method", "bus", "temp_allocator")

    def __init__(self, method: Method, temp_allocator):
        self.method = method
        self.bus = method.bus
        self.temp_allocator = temp_allocator

    def int_list(self, value) -> list:
        if isinstance(value, tuple) and value and value[0] == "IntList":
            return [int(self.method.values[i]) for i in value[1]]
        if value is None:
            return []
        raise RuntimeFailure(Error.InvalidArgument, f"expected an int list, got {type(value).__name__}")
