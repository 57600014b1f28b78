"""What a program is, as plain data for tools (``fvp inspect``): read with the runtime's own program reader.

``describe_image(image, kernels, profile, profile_name)`` loads a ``.pte``/``.bpte`` with ``load_program`` /
``load_bundled`` (so a file the runner refuses is refused here with the same one-line message) and returns a
JSON-ready dict: per method its inputs and outputs (dtype, shape, dim order, the fully qualified name where
the program has one, and the quantization the program records: the ``quantize_per_tensor`` that consumes an
input, the ``dequantize_per_tensor`` that produces an output, with their scale and zero point), the operators
it calls (and whether ``kernels``, the runner's registry, has each), its delegates with their compile specs
(and for Ethos-U ones the Vela blob's figures), its planned buffers per ``mem_id`` (and the pool the runner of
``profile`` places each in) and the least pool sizes the runner needs for it.
"""

from __future__ import annotations

import re

from firmware.executorch.bundled import is_bundled, load_bundled
from firmware.executorch.error import RuntimeFailure
from firmware.executorch.program import load_program
from firmware.executorch.program_types import SCALAR_TYPES
from firmware.executorch.vela_bin import parse_vela_bin

_FLAG_RE = {
    "target": re.compile(r"--accelerator-config=([\w-]+)"),
    "system_config": re.compile(r"--system-config=(\w+)"),
    "memory_mode": re.compile(r"--memory-mode=(\w+)"),
}


def _round_up(n: int, align: int) -> int:
    return -(-n // align) * align if align > 1 else n


def _spec_text(value: bytes) -> str:
    """A compile spec's value as text; bytes that are not printable UTF-8 as hex."""
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + value.hex()
    return text if text.isprintable() else "0x" + value.hex()


def _dtype_name(scalar_type) -> str | None:
    return SCALAR_TYPES[scalar_type][0] if scalar_type in SCALAR_TYPES else None


def _value_info(plan, vi: int) -> dict:
    v = plan.values[vi]
    info = {"value": vi, "kind": v.kind}
    if v.kind == "Tensor":
        t = v.value
        extra = t.extra_tensor_info
        info.update(dtype=t.scalar_type_name, shape=list(t.sizes), dim_order=list(t.dim_order), nbytes=t.nbytes,
                    name=extra.fully_qualified_name if extra is not None else None)
        if t.allocation_info is not None:
            info["mem_id"], info["offset"] = t.allocation_info.memory_id, t.allocation_info.memory_offset
    elif v.kind in ("Int", "Bool", "Double", "String"):
        info["default"] = v.value
    return info


def _scalar(plan, vi: int, kind: str):
    v = plan.values[vi]
    return v.value if v.kind == kind else None


def _quant_params(plan, ins, op_name: str) -> dict | None:
    """scale, zero point, range and integer dtype of a ``(de)quantize_per_tensor`` call (args: x, scale, zp,
    quant_min, quant_max, dtype, ..., out), or None when its arguments are not the scalars of that schema."""
    a = ins.args
    if len(a) < 6:
        return None
    scale, zp = _scalar(plan, a[1], "Double"), _scalar(plan, a[2], "Int")
    if scale is None or zp is None:
        return None
    dtype = _scalar(plan, a[5], "Int")
    return {"op": op_name, "scale": scale, "zero_point": zp, "quant_min": _scalar(plan, a[3], "Int"),
            "quant_max": _scalar(plan, a[4], "Int"), "dtype": _dtype_name(dtype) if dtype is not None else None}


def _instructions(plan):
    for chain in plan.chains:
        yield from chain.instructions


def _quantization(plan) -> tuple[dict, dict]:
    """{input value: params of the quantize that reads it}, {output value: params of the dequantize writing it}."""
    q_in, dq_out = {}, {}
    inputs, outputs = set(plan.inputs), set(plan.outputs)
    for ins in _instructions(plan):
        if ins.kind != "KernelCall" or not ins.args:
            continue
        name = plan.operators[ins.op_index].full_name
        if "dequantize_per_tensor" in name:
            if ins.args[-1] in outputs and ins.args[-1] not in dq_out:
                p = _quant_params(plan, ins, name)
                if p is not None:
                    dq_out[ins.args[-1]] = p
        elif "quantize_per_tensor" in name:
            if ins.args[0] in inputs and ins.args[0] not in q_in:
                p = _quant_params(plan, ins, name)
                if p is not None:
                    q_in[ins.args[0]] = p
    return q_in, dq_out


def io_description(plan) -> tuple[list, list]:
    """The method's inputs and outputs as ``fvp inspect`` lists them: per value its kind and, for a tensor, dtype,
    shape, dim order, bytes, name, and the quantization the program applies to it (or None)."""
    q_in, dq_out = _quantization(plan)
    inputs = [dict(_value_info(plan, vi), quantization=q_in.get(vi)) for vi in plan.inputs]
    outputs = [dict(_value_info(plan, vi), quantization=dq_out.get(vi)) for vi in plan.outputs]
    return inputs, outputs


def _vela_flags(specs: dict) -> dict:
    """The NPU configuration a delegate's compile specs name: ``target``, ``system_config``, ``memory_mode`` (None
    where not recorded), from Vela's flags in ``compile_flags`` (the ``target`` spec when the flags have none)."""
    flags = specs.get("compile_flags", "")
    out = {}
    for what, rx in _FLAG_RE.items():
        m = rx.search(flags)
        out[what] = m.group(1) if m else None
    if out["target"] is None and "target" in specs:
        out["target"] = specs["target"]
    return out


def ethosu_configurations(image) -> list[dict]:
    """The NPU configuration of every Ethos-U delegate of a ``.pte``/``.bpte`` image's first method, in file
    order (``_vela_flags``). Raises ``RuntimeFailure`` for a file the runtime would refuse."""
    program = load_bundled(image).load_program() if is_bundled(image) else load_program(image)
    plans = program.execution_plans[:1]
    return [_vela_flags({s.key: _spec_text(s.value) for s in d.compile_specs})
            for plan in plans for d in plan.delegates if d.id == "EthosUBackend"]


def _delegate_info(program, d, index: int, calls: int) -> dict:
    specs = {s.key: _spec_text(s.value) for s in d.compile_specs}
    info = {"index": index, "id": d.id, "calls": calls, "compile_specs": specs, **_vela_flags(specs)}
    off, size = program.delegate_data(d)
    info["data_size"] = size
    if d.id == "EthosUBackend":
        vela = parse_vela_bin(program.view(off, size))
        info["ethosu"] = {
            "command_stream_bytes": vela.cmd_data[1],
            "weight_bytes": vela.weight_data[1] if vela.weight_data else 0,
            "scratch_bytes": vela.scratch_size,
            "inputs": [{"shape": list(io.shape), "elem_size": io.elem_size, "offset": io.offset} for io in vela.inputs],
            "outputs": [{"shape": list(io.shape), "elem_size": io.elem_size, "offset": io.offset}
                        for io in vela.outputs],
        }
    return info


def _method_info(program, plan, kernels, profile, bundle) -> dict:
    op_calls = [0] * len(plan.operators)
    delegate_calls = [0] * len(plan.delegates)
    for ins in _instructions(plan):
        if ins.kind == "KernelCall":
            op_calls[ins.op_index] += 1
        elif ins.kind == "DelegateCall":
            delegate_calls[ins.delegate_index] += 1
    inputs, outputs = io_description(plan)
    operators = [{"name": op.full_name, "calls": op_calls[i], "available": op.full_name in kernels}
                 for i, op in enumerate(plan.operators)]
    delegates = [_delegate_info(program, d, i, delegate_calls[i]) for i, d in enumerate(plan.delegates)]

    fast_index = profile.get("planned_fast_index")
    align = profile.get("planned_alignment", 1)
    planned, pools = [], {"method": 0, "planned_fast": 0, "temp": 0}
    for idx, size in enumerate(plan.memory_planned_buffer_sizes):
        pool = "planned_fast" if idx == fast_index and size else "method"
        planned.append({"mem_id": idx + 1, "size": size, "pool": pool})
        pools[pool] += _round_up(size, align)
    scratch = [d["ethosu"]["scratch_bytes"] for d in delegates if "ethosu" in d]
    if scratch:
        pools["temp"] = _round_up(max(scratch), profile.get("scratch_alignment", 1))
    info = {"name": plan.name, "inputs": inputs, "outputs": outputs, "operators": operators,
            "delegates": delegates, "planned_memory": planned,
            "planned_bytes": sum(p["size"] for p in planned), "pools_needed": pools}
    if bundle is not None:
        try:
            info["bundled_test_cases"] = len(bundle.test_suite(plan.name).test_cases)
        except RuntimeFailure:  # a method without a test suite
            info["bundled_test_cases"] = 0
    return info


def describe_image(image, kernels, profile: dict, profile_name: str) -> dict:
    """The facts of a ``.pte``/``.bpte`` image (see the module docstring). Raises ``RuntimeFailure`` with a
    one-line message for a file the runtime would refuse."""
    bundle = None
    if is_bundled(image):
        bundle = load_bundled(image)
        program = bundle.load_program()
        fmt, prog_size = "bpte", bundle.program_size
    else:
        program = load_program(image)
        fmt, prog_size = "pte", len(image)
    return {
        "format": fmt,
        "file_size": len(image),
        "program_size": prog_size,
        "version": program.version,
        "segments": len(program.segments),
        "runner_profile": profile_name,
        "methods": [_method_info(program, plan, kernels, profile, bundle) for plan in program.execution_plans],
    }
