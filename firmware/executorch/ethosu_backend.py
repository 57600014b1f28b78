"""``EthosUBackend``: the ExecuTorch delegate that runs Vela-compiled partitions on the Ethos-U.

``init`` logs ``data:%p`` (the blob's address), validates and parses the ``vela_bin_stream`` once (PR-era
runtimes also took a 4-byte ``ExecutionHandle`` from the method allocator). ``execute`` takes the scratch from
the temp allocator (aligned per profile), checks each input's type against the Vela I/O record and copies it
to ``scratch + io.offset``, calls the driver with base pointers {weights (inside the program image), scratch,
fast scratch}, and copies the outputs back with the runtime's size checks (including the chunked copy used
when Vela pads the innermost dimension). Messages are the runtime's own. Stricter than the runtime, every
Vela I/O record is checked against the tensor it feeds before the NPU runs (element size, shape, bytes inside
the scratch): a tampered output record is an error, not other bytes copied back.
"""

from __future__ import annotations

import contextlib

from . import log
from .error import Error, RuntimeFailure
from .method import RtTensor
from .vela_bin import parse_vela_bin

_INT_SIZES = {"Int": 4, "Char": 1, "Byte": 1, "Short": 2, "Bool": 1}


class _Handle:
    __slots__ = ("address", "size", "vela")

    def __init__(self, address, size, vela):
        self.address = address
        self.size = size
        self.vela = vela


def _padded_rows(j: int, io, t) -> tuple:
    """(tensor row length, Vela row length, rows) of an output whose innermost dimension Vela padded; an
    InvalidProgram failure when the two shapes do not map row onto row."""
    inner_t = t.sizes[-1] if t.sizes else 1
    inner_io = io.shape[-1] if io.shape else 1
    rows_t = t.numel // inner_t if inner_t else 0
    rows_io = io.numel // inner_io if inner_io else 0
    if inner_io < inner_t or rows_io != rows_t:
        log.error(f"Ethos-U output {j}: tensor shape {list(t.sizes)} does not match the Vela output shape "
                  f"{list(io.shape)}")
        raise RuntimeFailure(Error.InvalidProgram, "output layout")
    return inner_t, inner_io, rows_t


class EthosUBackend:
    name = "EthosUBackend"

    def __init__(self, driver, perf=None, fast_scratch: tuple | None = None):
        self.driver = driver
        self.perf = perf
        self.fast_scratch = fast_scratch  # (address, size) or None

    def init(self, method, address: int, size: int, compile_specs) -> _Handle:
        msgs = method.profile["messages"]
        log.info(msgs["ethosu_data"].format(addr=address))
        blob = method.bus.view(address, size)
        method.bus.work("parse_byte", min(size, 4096))
        vela = parse_vela_bin(blob, blob_address=address)
        if method.profile.get("ethosu_handle"):
            method._alloc(method.profile["ethosu_handle"])
        return _Handle(address, size, vela)

    def execute(self, method, handle: _Handle, args: list) -> None:
        tracer = getattr(method, "event_tracer", None)  # EXECUTORCH_PROF_SCOPE(event_tracer, "EthosUBackend::execute()")
        scope = tracer.profile("EthosUBackend::execute()") if tracer is not None else contextlib.nullcontext()
        with scope:
            if self.perf is not None:
                self.perf.execute_begin()
            try:
                self._execute(method, handle, args)
            finally:
                if self.perf is not None:
                    self.perf.execute_end()

    def _execute(self, method, handle: _Handle, args: list) -> None:
        bus = method.bus
        msgs = method.profile["messages"]
        vela = handle.vela
        bus.work("call")
        scratch = method.mm.temp_allocator.allocate(vela.scratch_size, method.profile["scratch_alignment"])
        if scratch is None:
            log.error(msgs["ethosu_scratch_failed"].format(size=vela.scratch_size))
            mib = -(-vela.scratch_size // (1 << 20))
            bus.host_note(f"this program's Ethos-U scratch needs {vela.scratch_size} bytes of the temp pool: give it "
                          f"a larger one, e.g. -C firmware.pools.temp.size={mib}MiB, and -C "
                          f"firmware.pools.temp.region=DDR if its region is too small (ExecuTorch's CMake does the "
                          f"same with ET_ARM_BAREMETAL_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE and ETHOSU_ARENA)")
            raise RuntimeFailure(Error.MemoryAllocationFailed, "scratch")
        n_in = len(vela.inputs)
        if len(args) < n_in + len(vela.outputs):
            raise RuntimeFailure(Error.InvalidProgram,
                                 f"delegate has {len(args)} arguments, Vela expects {n_in} inputs + {len(vela.outputs)} outputs")
        self._check_outputs(vela, args[n_in:n_in + len(vela.outputs)])
        for i, io in enumerate(vela.inputs):
            t = args[i]
            if not isinstance(t, RtTensor):
                raise RuntimeFailure(Error.InvalidProgram, f"delegate input {i} is not a tensor")
            want = _INT_SIZES.get(t.type_name)
            if want is None or want != io.elem_size:
                log.error(msgs["ethosu_input_type"].format(index=i, stype=t.type_name, size=t.elem_size))
                raise RuntimeFailure(Error.InvalidProgram, "input type")
            _check_in_scratch("input", i, io, io.nbytes, vela.scratch_size)
            bus.memcpy(scratch + io.offset, t.address, t.nbytes)
            if t.numel != io.numel:
                log.error(msgs["ethosu_input_sizes"])
                log.error(msgs["ethosu_elements"].format(want=io.numel, got=t.numel))
                raise RuntimeFailure(Error.InvalidProgram, "input sizes")
        weight_off, weight_size = vela.weight_data if vela.weight_data is not None else (0, 0)
        fast = self.fast_scratch or (0, 0)
        bases = [handle.address + weight_off, scratch, fast[0]]
        sizes = [weight_size, vela.scratch_size, fast[1]]
        cmd_off, cmd_size = vela.cmd_data
        rc = self.driver.invoke_v3(handle.address + cmd_off, cmd_size, bases, sizes)
        if rc != 0:
            log.error(msgs["ethosu_invoke_failed"].format(code=rc))
            raise RuntimeFailure(Error.InvalidProgram, "invoke")
        total_expected = 0
        total_got = 0
        for j, io in enumerate(vela.outputs):
            t = args[n_in + j]
            if not isinstance(t, RtTensor):
                raise RuntimeFailure(Error.InvalidProgram, f"delegate output {j} is not a tensor")
            total_expected += io.nbytes
            total_got += t.nbytes
            if t.nbytes == io.nbytes:
                bus.memcpy(t.address, scratch + io.offset, t.nbytes)
            else:
                self._copy_with_layout_adjustment(method, j, io, scratch, t)
                total_expected = total_got  # the adjusted copy checked the shapes itself
        if total_expected != total_got:
            log.error(msgs["ethosu_output_sizes"])
            log.error(msgs["ethosu_output_bytes"].format(want=total_expected, got=total_got))
            raise RuntimeFailure(Error.InvalidProgram, "output sizes")

    @staticmethod
    def _check_outputs(vela, outs: list) -> None:
        """Every Vela output record against the tensor it feeds, before the NPU runs (the inputs are checked
        as they are copied in): a tensor, the same element size, a shape the copy back can map onto the
        tensor (equal element counts, or Vela's padded innermost dimension), bytes inside the scratch. The
        runtime trusts ``elem_size``, shape and offset here (a wrong one copies other bytes); this one refuses."""
        for j, (io, t) in enumerate(zip(vela.outputs, outs)):
            if not isinstance(t, RtTensor):
                log.error(f"Ethos-U output {j} is not a tensor")
                raise RuntimeFailure(Error.InvalidProgram, f"delegate output {j} is not a tensor")
            if io.elem_size != t.elem_size or _INT_SIZES.get(t.type_name) != t.elem_size:
                log.error(f"Ethos-U output {j}: Vela record elem_size {io.elem_size} does not match the "
                          f"{t.type_name} output tensor ({t.elem_size}-byte elements)")
                raise RuntimeFailure(Error.InvalidProgram, "output type")
            if io.numel != t.numel:
                _padded_rows(j, io, t)
            _check_in_scratch("output", j, io, io.nbytes, vela.scratch_size)

    def _copy_with_layout_adjustment(self, method, j, io, scratch, t: RtTensor) -> None:
        """Vela pads the innermost dimension: copy row by row, dropping the padding."""
        bus = method.bus
        inner_t, inner_io, rows_t = _padded_rows(j, io, t)
        row_t = inner_t * t.elem_size
        row_io = inner_io * io.elem_size
        for r in range(rows_t):
            bus.memcpy(t.address + r * row_t, scratch + io.offset + r * row_io, row_t)


def _check_in_scratch(what: str, index: int, io, nbytes: int, scratch_size: int) -> None:
    """A Vela I/O record's bytes must lie inside the scratch buffer the driver gets (region 1)."""
    if io.offset + nbytes > scratch_size:
        log.error(f"Ethos-U {what} {index}: Vela record bytes [{io.offset}, {io.offset + nbytes}) lie outside "
                  f"the {scratch_size}-byte scratch buffer")
        raise RuntimeFailure(Error.InvalidProgram, f"{what} record outside the scratch")
