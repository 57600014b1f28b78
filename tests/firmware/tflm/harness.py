"""Run a .tflite through the firmware's interpreter on a plain memory (no platform), and through LiteRT's
reference kernels when ai-edge-litert is installed."""

from __future__ import annotations

import numpy as np

from firmware.tflm.interpreter import Interpreter
from firmware.tflm.model import load_model


class MemBus:
    """The part of the bus protocol the interpreter's CPU path uses: memory views, work, trace."""

    def __init__(self, size: int):
        self.mem = np.zeros(size, np.uint8)
        self.work_done: dict = {}

    def view(self, addr, size):
        return self.mem[addr:addr + size]

    def read(self, addr, size):
        return self.mem[addr:addr + size].tobytes()

    def work(self, kind, amount=1.0):
        self.work_done[kind] = self.work_done.get(kind, 0) + amount

    def trace(self, *a):
        pass


def run_cpu(data: bytes, inputs: list, arena_size: int = 1 << 20, planner: str = "greedy"):
    return run_cpu_invocations(data, [inputs], arena_size, planner)[0]


def run_cpu_invocations(data: bytes, invocations: list, arena_size: int = 1 << 20, planner: str = "greedy"):
    """One interpreter, AllocateTensors once, then one Invoke per input list (variable tensors carry over):
    the outputs of each invocation."""
    model = load_model(data)
    model_at = 0
    arena_at = (len(data) + 15) // 16 * 16
    bus = MemBus(arena_at + arena_size)
    bus.mem[:len(data)] = np.frombuffer(data, np.uint8)
    interp = Interpreter(bus, model, model_at, arena_at, arena_size, planner=planner)
    interp.allocate_tensors()
    results = []
    for inputs in invocations:
        for ti, x in zip(model.inputs, inputs):
            interp.array(ti)[...] = x
        interp.invoke()
        results.append([interp.array(ti).copy() for ti in model.outputs])
    return results


def run_litert(data: bytes, inputs: list):
    from ai_edge_litert.interpreter import Interpreter as LI, OpResolverType

    it = LI(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def have_litert() -> bool:
    try:
        import ai_edge_litert.interpreter  # noqa: F401

        return True
    except Exception:  # noqa: BLE001
        return False
