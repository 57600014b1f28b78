"""The BundleIO check of a bundled program's test case 0, as ``bundled_program.cpp`` does it:
``compute_method_output_error_stats`` (the error statistics lines) then ``verify_method_outputs``
(``tensors_are_close`` per output, in memory order). A mixin of ``Runner``.

Stricter than the C++ where it would pass without comparing anything (no outputs, differing counts).
"""

from __future__ import annotations

import numpy as np

from ..executorch import log
from ..executorch.bundled import VALUE_KINDS
from ..executorch.error import Error
from ..executorch.method import RtTensor, dense_strides
from ..executorch.program_types import SCALAR_TYPES


def _describe(scalar_type: int, sizes) -> str:
    """``Float[1, 10]``: a tensor's dtype and sizes, for one-line messages."""
    return f"{SCALAR_TYPES[scalar_type][0] if scalar_type in SCALAR_TYPES else scalar_type}{list(sizes)}"


def _running_max(values: np.ndarray) -> float:
    """``m = std::max(m, v)`` from 0 over ``values``: a NaN never replaces the running maximum."""
    finite = values[~np.isnan(values)]
    return float(max(0.0, finite.max())) if finite.size else 0.0


class BundleCheck:
    def verify_result(self) -> bool:
        """The BundleIO check of test case 0, as the runner does it: ``compute_method_output_error_stats``
        then ``verify_method_outputs`` (both compare the data in memory order)."""
        msgs = self.msgs
        expected = self.bundle.test_suite(self.method_name).test_cases[0].expected_outputs
        outs = self.method.output_values()
        self.log_error_stats(expected, outs)
        # Stricter than bundled_program.cpp (which loops over the method's outputs only, so a method with no
        # outputs passes): a check that compares nothing fails, and so do differing counts.
        problem = None
        if not outs:
            problem = "the method has no outputs: the BundleIO check compares nothing"
        elif len(expected) != len(outs):
            problem = f"bundled test case 0 has {len(expected)} expected outputs, the method {len(outs)} outputs"
        if problem is not None:
            log.error(problem)
        ok = problem is None
        for i, (e, o) in enumerate(zip(expected, outs)):
            if not ok:
                break
            # verify_method_outputs supports tensors only (any other expected value: NotSupported)
            ok = e.kind == "Tensor" and isinstance(o, RtTensor) and self.tensors_are_close(e, o)
            if not ok and e.kind == "Tensor" and isinstance(o, RtTensor) and (
                    e.scalar_type != o.scalar_type or tuple(e.sizes) != tuple(o.sizes)):
                log.error(f"expected output {i} is {_describe(e.scalar_type, e.sizes)}, the method's output {i} "
                          f"is {_describe(o.scalar_type, o.sizes)}")
            elif not ok and (e.kind != "Tensor" or not isinstance(o, RtTensor)):
                log.error(f"expected output {i} is a {e.kind}, the method's output {i} is "
                          f"{'a Tensor' if isinstance(o, RtTensor) else 'not a Tensor'}: only tensors are compared")
        if ok:
            log.info(msgs["bundle_match"])
            log.info(msgs["bundle_pass"].format(index=0))
        else:
            log.error(msgs["bundle_mismatch"].format(rtol=self.rtol, atol=self.atol))
            log.error(msgs["bundle_fail"].format(index=0))
            log.error(msgs["bundle_failed_status"].format(status=int(Error.NotFound)))
        return ok

    def tensors_are_close(self, e, o: RtTensor) -> bool:
        """bundled_program.cpp ``tensors_are_close``: same dtype and sizes, the same strides (an ``ET_CHECK``:
        a bundled tensor in another dim order than the output aborts the run), then floats within
        ``atol + |rtol * output|`` element by element in memory order, any other dtype byte for byte."""
        if e.scalar_type != o.scalar_type or tuple(e.sizes) != tuple(o.sizes):
            return False
        self.check(dense_strides(e.sizes, e.dim_order) == dense_strides(o.sizes, o.dim_order),
                   "ArrayRef<executorch::aten::StridesType>(strides, bundled_tensor.dim()) == "
                   "method_output_tensor.strides()",
                   "The two inputs of `tensors_are_close` function shall have same strides")
        exp = np.frombuffer(e.data(self.bundle.buffer), dtype=np.uint8)
        got = o.raw(self.bus)
        if o.type_name not in ("Float", "Double", "Half"):
            return bool(np.array_equal(exp, got))
        # data_is_close<float> subtracts in float; the half and double variants in double
        work = np.float32 if o.type_name == "Float" else np.float64
        b = got.view(o.dtype).astype(work)
        a = exp.view(o.dtype).astype(work)
        with np.errstate(invalid="ignore", over="ignore"):
            if self.rtol == 0 and self.atol == 0:
                close = a == b
            else:
                err = np.abs(a - b).astype(np.float64)
                close = np.isfinite(err) & (err <= self.atol + np.abs(self.rtol * b.astype(np.float64)))
            close |= np.isnan(a) & np.isnan(b)
            close |= ~np.isfinite(a) & ~np.isfinite(b) & ((a > 0) == (b > 0))
        return bool(close.all())

    def log_error_stats(self, expected, outs) -> None:
        """bundled_program.cpp ``compute_method_output_error_stats``: mean/max absolute and relative error
        over every output element in memory order. Like the C++ it reads each tensor's data as ``float``
        (``data_ptr<float>()``, whatever the dtype): ``numel`` floats from the start of the data."""
        msgs = self.msgs
        status, abs_errs, rel_errs = Error.Ok, [], []
        if not expected:
            log.error("No bundled expected outputs, so we can't verify the method outputs.")
            status = Error.InvalidArgument
        for e, o in zip(expected, outs):
            if e.kind != "Tensor":
                log.error(f"Data type {VALUE_KINDS.index(e.kind)} not supported")
                status = Error.NotSupported
                break
            if not isinstance(o, RtTensor) or o.numel != e.numel:
                log.error("Tensor size mismatch")
                status = Error.InvalidArgument
                break
            x = self._as_floats(np.frombuffer(self.bundle.buffer, dtype=np.uint8), e.data_offset, e.numel)
            a = self._as_floats(None, o.address, o.numel)
            with np.errstate(invalid="ignore", over="ignore"):
                d = np.abs(a - x).astype(np.float64)                # float subtraction, then double
                divider = np.maximum(np.maximum(np.abs(a), np.abs(x)).astype(np.float64), 1e-8)
            abs_errs.append(d)
            rel_errs.append(d / divider)
        if status != Error.Ok:
            log.info(msgs["error_stats_failed"].format(index=0, status=int(status)))
            return
        ae = np.concatenate(abs_errs) if abs_errs else np.zeros(0)
        re = np.concatenate(rel_errs) if rel_errs else np.zeros(0)
        log.info(msgs["error_stats"].format(index=0))
        log.info(msgs["mean_abs"].format(v=float(ae.mean()) if ae.size else 0.0))
        log.info(msgs["max_abs"].format(v=_running_max(ae)))
        log.info(msgs["mean_rel"].format(v=float(re.mean()) if re.size else 0.0))
        log.info(msgs["max_rel"].format(v=_running_max(re)))

    def _as_floats(self, buf, offset: int, n: int) -> np.ndarray:
        """``n`` float32 values read from ``buf[offset:]`` (or simulated memory at ``offset`` when ``buf`` is
        None); bytes past the end of ``buf`` read as zero."""
        if buf is None:
            raw = np.frombuffer(self.bus.read(offset, 4 * n), dtype=np.uint8)
        else:
            raw = np.zeros(4 * n, dtype=np.uint8)
            chunk = buf[offset:offset + 4 * n]
            raw[:chunk.size] = chunk
        return raw.view(np.float32)
