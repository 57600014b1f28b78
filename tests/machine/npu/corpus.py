"""Run the corpus programs end to end with the NPU model (tests only).

The oracle fixtures (``tests/data/oracle/<name>/``) store each delegate call's int8 inputs/outputs as they
were in the program's memory arena *after the whole program ran*; where the memory planner reused a buffer
later (for example the final dequantize writing over the quantized input), the stored array is not what
the NPU saw.  So this module evaluates the execution plan itself: the CPU kernels exactly as the README of
the corpus describes them (float32, half-to-even), the delegate calls through ``execute_stream``, and
reports, per delegate call, the NPU outputs; :func:`reliable_fixture_args` says which stored fixture arrays
are trustworthy (not overwritten by a later instruction).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from .helpers import extract_vela_blobs, run_blob

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "..", "data"))
CORPUS = os.path.join(DATA, "corpus")
ORACLE = os.path.join(DATA, "oracle")

ST = {0: np.uint8, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.int64, 6: np.float32, 7: np.float64, 11: np.bool_}


def oracle_names() -> list[str]:
    return sorted(d for d in os.listdir(ORACLE) if os.path.exists(os.path.join(ORACLE, d, "oracle.npz")))


@dataclass
class CorpusProgram:
    name: str
    plan: object
    blobs: dict  # delegate index -> VelaBlob
    meta: dict | None
    npz: object | None
    arch: str
    bundled: object


def load(name: str, arch: str | None = None) -> CorpusProgram:
    from firmware.executorch.bundled import load_bundled

    buf = open(os.path.join(CORPUS, name + ".bpte"), "rb").read()
    b = load_bundled(buf)
    program = b.load_program()
    plan = program.execution_plans[0]
    pbuf = buf[b.program_offset:b.program_offset + b.program_size]
    by_index = {}
    arch_spec = None
    for i, d in enumerate(plan.delegates):
        if d.location != 0:
            raise NotImplementedError("delegate data in a segment")
        off, size = program.backend_delegate_data[d.index]
        found = extract_vela_blobs(pbuf[off:off + size])
        if len(found) != 1:
            raise AssertionError(f"{name}: delegate {i} holds {len(found)} Vela blobs")
        by_index[i] = found[0]
        for spec in d.compile_specs:
            if spec.key == "target":
                arch_spec = bytes(spec.value).decode()
    meta = npz = None
    od = os.path.join(ORACLE, name)
    if os.path.exists(os.path.join(od, "meta.json")):
        meta = json.load(open(os.path.join(od, "meta.json")))
        npz = np.load(os.path.join(od, "oracle.npz"))
    if arch is None:
        arch = arch_spec
    return CorpusProgram(name, plan, by_index, meta, npz, arch, b)


def _vals(plan, i):
    return plan.values[i].value


def _quantize(x, scale, zp, qmin, qmax, dtype):
    inv = np.float32(1.0) / np.float32(scale)
    q = np.rint(x.astype(np.float32) * inv).astype(np.int64) + zp
    return np.clip(q, qmin, qmax).astype(dtype)


def _dequantize(q, scale, zp):
    return (q.astype(np.int32) - np.int32(zp)).astype(np.float32) * np.float32(scale)


def _avg_pool2d(x, kernel, stride, padding, count_include_pad, divisor):
    if any(padding):
        raise NotImplementedError("padded avg_pool2d")
    n, c, h, w = x.shape
    kh, kw = kernel
    sh, sw = stride
    oh = (h - kh) // sh + 1
    ow = (w - kw) // sw + 1
    out = np.zeros((n, c, oh, ow), np.float32)
    for oy in range(oh):
        for ox in range(ow):
            acc = None
            for yy in range(oy * sh, oy * sh + kh):
                for xx in range(ox * sw, ox * sw + kw):
                    v = x[:, :, yy, xx]
                    acc = v.copy() if acc is None else (acc + v).astype(np.float32)
            d = np.float32(divisor if divisor else kh * kw)
            out[:, :, oy, ox] = acc / d
    return out


def run_program(cp: CorpusProgram, inputs: list[np.ndarray], engine="fast", weight_cache=None):
    """Evaluate the plan; returns (final outputs, [per delegate call: dict(delegate, inputs, outputs, result)])."""
    plan = cp.plan
    env: dict[int, np.ndarray] = {}
    for vi, x in zip(plan.inputs, inputs):
        env[vi] = np.asarray(x)
    ops = plan.operators
    calls = []

    def scalar(i):
        v = plan.values[i]
        return v.value

    def intlist(i):
        return [scalar(j) for j in plan.values[i].value]

    for ins in plan.chains[0].instructions:
        if ins.kind == "KernelCall":
            name = ops[ins.op_index].name
            a = ins.args
            if name == "cortex_m::quantize_per_tensor":
                t = _vals(plan, a[-1])
                env[a[-1]] = _quantize(env[a[0]], scalar(a[1]), scalar(a[2]), scalar(a[3]), scalar(a[4]),
                                       ST[t.scalar_type]).reshape(t.sizes)
            elif name == "cortex_m::dequantize_per_tensor":
                t = _vals(plan, a[-1])
                env[a[-1]] = _dequantize(env[a[0]], scalar(a[1]), scalar(a[2])).reshape(t.sizes)
            elif name == "aten::avg_pool2d":
                env[a[-1]] = _avg_pool2d(env[a[0]], intlist(a[1]), intlist(a[2]), intlist(a[3]), scalar(a[5]),
                                         scalar(a[6]))
            else:
                raise NotImplementedError(name)
        elif ins.kind == "DelegateCall":
            blob = cp.blobs[ins.delegate_index]
            n_in = len(blob.inputs)
            ins_vals = ins.args[:n_in]
            outs_vals = ins.args[n_in:]
            data = [np.ascontiguousarray(env[v]).tobytes() for v in ins_vals]
            res, outs = run_blob(blob, data, arch=cp.arch, engine=engine, weight_cache=weight_cache)
            arrays = []
            for v, o in zip(outs_vals, outs):
                t = _vals(plan, v)
                arrays.append(np.frombuffer(o, ST[t.scalar_type]).reshape(t.sizes).copy())
                env[v] = arrays[-1]
            calls.append(dict(delegate=ins.delegate_index, inputs=[env[v] for v in ins_vals], outputs=arrays,
                              result=res, out_values=list(outs_vals), in_values=list(ins_vals)))
        else:
            raise NotImplementedError(ins.kind)
    return [env[v] for v in plan.outputs], calls


_ES = {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 6: 4, 7: 8, 11: 1}


def reliable_fixture_args(cp: CorpusProgram) -> set:
    """{(call, role, pos)} of fixture arrays that no later instruction overwrote in the memory arena."""
    plan = cp.plan
    instrs = plan.chains[0].instructions

    def rng(vi):
        t = _vals(plan, vi)
        n = int(np.prod(t.sizes)) * _ES[t.scalar_type]
        a = t.allocation_info
        return a.memory_id, a.memory_offset, a.memory_offset + n

    def writes(ins):
        if ins.kind == "KernelCall":
            return [ins.args[-1]]
        blob = cp.blobs[ins.delegate_index]
        return ins.args[len(blob.inputs):]

    good = set()
    call = 0
    for ii, ins in enumerate(instrs):
        if ins.kind != "DelegateCall":
            continue
        blob = cp.blobs[ins.delegate_index]
        n_in = len(blob.inputs)
        for p, vi in enumerate(ins.args):
            r = rng(vi)
            bad = any(rw[0] == r[0] and rw[1] < r[2] and r[1] < rw[2]
                      for later in instrs[ii + 1:] for rw in map(rng, writes(later)))
            if not bad:
                good.add((call, "in" if p < n_in else "out", p if p < n_in else p - n_in))
        call += 1
    return good
