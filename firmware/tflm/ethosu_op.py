"""The ``ethos-u`` custom operator: TFLM's ``kernels/ethos_u/ethosu.cc`` over the firmware's Ethos-U driver.

Prepare requests two scratch buffers in the arena (the base addresses, 8 bytes each, and their sizes, 4 bytes
each, for inputs + outputs). Eval checks that the custom options are a flexbuffer whose root is
CO_TYPE_ETHOSU (1), takes input 0 (the command stream: the driver payload) and passes the data addresses of
the remaining inputs then the outputs as base pointers, at most 8, each with the product of its dimensions as
its size, to ``ethosu_invoke_v3`` (``firmware/drivers/ethosu.py``: the same driver and NPU model as the
ExecuTorch runner's EthosUBackend). A failed invoke is ``kTfLiteError``.
"""

from __future__ import annotations

from .interpreter import InterpreterError
from .kernels.common import PrepareError

CO_TYPE_ETHOSU = 1
MAX_BASE_POINTERS = 8


def flexbuffer_root_int(buf: bytes):
    try:
        from flatbuffers import flexbuffers

        return int(flexbuffers.Loads(buf))
    except Exception:  # noqa: BLE001 - not a flexbuffer holding an integer
        return None


class EthosUKernel:
    def __init__(self, interp, op, driver, console_text):
        if not op.inputs:
            raise PrepareError("node->inputs->size > 0")
        if not op.custom_options:
            raise PrepareError("node->custom_initial_data_size > 0")
        self.interp = interp
        self.op = op
        self.driver = driver
        self.console_text = console_text
        n = len(op.inputs) + len(op.outputs)
        self.scratch = [8 * n, 4 * n]
        self.persistent = 16  # OpData
        cms = interp.tensor(op.inputs[0])
        if cms.data_offset is None:
            raise PrepareError("the command stream (input 0) must be a constant tensor")
        self.cms_size = cms.nbytes
        self.co_type = flexbuffer_root_int(op.custom_options)

    def invoke(self, node) -> None:
        if self.co_type != CO_TYPE_ETHOSU:
            raise InterpreterError(["CO_TYPE != ETHOSU", f"Node ethos-u (number {self.op.index}) failed to invoke "
                                                         f"with status 1"], "ethos-u custom options")
        interp = self.interp
        bases, sizes = [], []
        for t in list(self.op.inputs[1:]) + list(self.op.outputs):
            bases.append(interp.address(t))
            size = 1
            for d in interp.tensor(t).shape:
                size *= int(d)
            sizes.append(size)
        bases, sizes = bases[:MAX_BASE_POINTERS], sizes[:MAX_BASE_POINTERS]
        cms_addr = interp.address(self.op.inputs[0])
        rc = self.driver.invoke_v3(cms_addr, self.cms_size, bases, sizes)
        if rc != 0:
            raise InterpreterError([f"Node ethos-u (number {self.op.index}) failed to invoke with status 1"],
                                   "ethos-u invoke failed")
