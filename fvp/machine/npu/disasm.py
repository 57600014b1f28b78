"""Command-stream disassembler and per-operation summary (used by ``fvp disasm``).

``disassemble`` prints one line per command::

    0x0108  00010006           NPU_OP_ELEMENTWISE        ADD
    0x0000  00004025 00000001  NPU_SET_OPA_SCALE         scale=1 shift=0

``summarize_operations`` prints one line per ``NPU_OP_*`` with shapes, kernel, formats and regions.
Invalid commands are shown as ``<invalid>`` lines (with the reason) and decoding resumes after them.
"""

from __future__ import annotations

from hwdesc import ethosu as R

from ...errors import NpuFault
from .arch import get_arch
from .command_stream import RegisterState, as_words, decode_command
from .descriptors import ActivationFunction, IfmScaleMode, RoundMode
from .operations import build_operation

_SIGNED16 = ("ZERO_POINT", "ACTIVATION_MIN", "ACTIVATION_MAX", "IFM2_SCALAR")
#: the summary's name of a round mode: RoundMode's (the U55/U65's names for the modes they share with the U85:
#: DBL is the U85's DOUBLE_SYMMETRIC, TRUNCATE its TRUNCATE_TO_ZERO)
_ROUND_TEXT = {mode: mode.name for mode in RoundMode}
_NAME_WIDTH = 26


def format_fields(cdef: R.CommandDef, value: int, param: int = 0, *, wide: bool = False) -> str:
    """A short human-readable rendering of a command's fields (``wide``: addresses have 40 bits, as on the U65
    and U85)."""
    if cdef.kind == "op":
        if cdef.has_payload:  # the U85's NPU_OP_BRANCH: its condition (param) and target (payload, a byte offset)
            return " ".join([f.text(param) for f in cdef.param_fields] + [f"-> 0x{value:04x}"])
        if not cdef.fields:
            return ""
        if cdef.name in ("NPU_OP_POOL", "NPU_OP_ELEMENTWISE"):
            return cdef.fields[0].text(value)
        return " ".join(f"{f.name}={f.text(value)}" for f in cdef.fields)
    if cdef.has_payload:
        if cdef.name in ("NPU_SET_OFM_SCALE", "NPU_SET_OPA_SCALE") and len(cdef.param_fields) == 1:  # U55/U65
            return f"scale={value} shift={param & 0x3F}"
        if cdef.name == "NPU_SET_OPB_SCALE":
            return f"scale={value & 0xFFFF}"
        if not cdef.address and cdef.param_fields:  # U85 scale registers: payload and param fields
            return " ".join([f"{f.name}={f.text(value)}" for f in cdef.fields] +
                            [f"{f.name}={f.text(param)}" for f in cdef.param_fields])
        if cdef.address:
            v = value
            bits = 32
            if wide:
                v |= (param & 0xFF) << 32
                bits = 40
            if cdef.signed_address and v >> (bits - 1):
                return str(v - (1 << bits))
            return f"0x{v:x}"
        return f"0x{value:x}"
    if cdef.fields == R.F16:
        return str(value & 0xFFFF)
    if cdef.fields == R.F16S:
        return str(R.F16S[0].get(value))
    return " ".join(f"{f.name}={f.text(value)}" for f in cdef.fields if f.get(value) or f.enum is not None)


def _fields_text(cmd, wide: bool) -> str:
    cdef = cmd.definition
    if cmd.payload is None:
        if cdef.kind == "reg" and any(k in cdef.name for k in _SIGNED16):
            v = cmd.param
            return f"{v - 0x10000 if v & 0x8000 else v}"
        return format_fields(cdef, cmd.param, wide=wide)
    return format_fields(cdef, cmd.payload, cmd.param, wide=wide)


def disassemble(words, arch) -> list[str]:
    """One line per command: byte offset, raw words (hex), mnemonic, decoded fields."""
    arch = get_arch(arch)
    w = as_words(words)
    lines = []
    i = 0
    n = len(w)
    while i < n:
        off = i * 4
        try:
            cmd = decode_command(w, i, arch)
        except NpuFault as f:
            word = int(w[i])
            lines.append(f"0x{off:04x}  {word:08x}           {'<invalid>':<{_NAME_WIDTH}}{f}")
            i += 1
            continue
        raw = f"{cmd.words[0]:08x}" + (f" {cmd.payload:08x}" if cmd.payload is not None else " " * 9)
        text = _fields_text(cmd, arch.address_bits == 40)
        lines.append(f"0x{off:04x}  {raw}  {cmd.name:<{_NAME_WIDTH}}{text}".rstrip())
        i += cmd.length
    return lines


def _fm_text(fm, label: str) -> str:
    if fm is None:
        return ""
    tiles = ""
    if fm.height0 < fm.height or fm.width0 < fm.width:
        tiles = f" tiles(h0={fm.height0},h1={fm.height1},w0={fm.width0})"
    up = f" upscale={fm.upscale}" if fm.upscale != "NONE" else ""
    if fm.storage == "CHAINED":  # U85: a chaining buffer, not memory
        return f"{label} {fm.height}x{fm.width}x{fm.depth} {fm.dtype} chained(cb{fm.region}) zp={fm.zero_point}"
    if fm.transpose != "HWC":
        up += f" transpose={fm.transpose}"
    if fm.reverse != "NONE":
        up += f" reverse={fm.reverse}"
    e = fm.bits // 8
    if fm.format == "NHCWB16":
        default = (fm.stride_y == fm.width * -(-fm.depth // 16) * 16 * e and fm.stride_c == 16 * fm.width * e)
        st = f"y={fm.stride_y},c={fm.stride_c}"
    else:
        default = fm.stride_x == fm.depth * e and fm.stride_y == fm.width * fm.stride_x
        st = f"y={fm.stride_y},x={fm.stride_x}"
    strides = "" if default else f" strides({st})"
    return (f"{label} {fm.height}x{fm.width}x{fm.depth} {fm.dtype} {fm.format} r{fm.region}@0x{fm.bases[0]:x}"
            f" zp={fm.zero_point}{strides}{tiles}{up}")


def describe_operation(op) -> str:
    """A one-line summary of an :class:`~fvp.machine.npu.operations.NpuOperation`."""
    head = f"0x{op.offset:04x}  {op.mnemonic:<22}"
    if op.kind == "DMA":
        d = op.dma
        src = "SHRAM" if d.src_internal else f"r{d.src_region}"
        dst = "SHRAM" if d.dst_internal else f"r{d.dst_region}"
        extra = ""
        if d.src_stride0 or d.src_stride1 or d.dst_stride0 or d.dst_stride1:  # the U85's per-side strides
            extra = (f" size0={d.size0} size1={d.size1} src_stride=({d.src_stride0},{d.src_stride1}) "
                     f"dst_stride=({d.dst_stride0},{d.dst_stride1})")
        elif d.dst_stride_mode:
            extra = f" size0={d.size0} size1={d.size1} skip0={d.skip0} skip1={d.skip1}"
        if d.indexed:  # the U85's gather (src) / scatter (dst)
            extra += (f" {'gather' if d.indexed == 'src' else 'scatter'} idx=r{d.idx_region}@0x{d.idx_address:x} "
                      f"max={d.idx_max}" + (f" idx_skip1={d.idx_skip1}" if d.idx_skip1 else ""))
        return f"{head}{src}@0x{d.src_address:x} -> {dst}@0x{d.dst_address:x} len={d.length}{extra}"
    if op.kind in ("DMA_WAIT", "KERNEL_WAIT"):
        return f"{head}{op.count}"
    if op.kind in ("STOP", "IRQ"):
        return f"{head}mask=0x{op.count:04x}"
    if op.kind == "PMU_MASK":
        return f"{head}enable={op.count}"
    if op.kind == "BRANCH":
        return f"{head}-> 0x{op.branch_target:04x}"
    parts = [_fm_text(op.ifm, "ifm")]
    if op.ifm_scalar is not None:  # U85
        parts[0] = f"ifm scalar={op.ifm_scalar} zp={op.ifm.zero_point}"
    if op.ifm2 is not None:
        b = op.broadcast
        bc = "".join(c for c, f in (("h", b.h), ("w", b.w), ("c", b.c)) if f) if b is not None else ""
        if op.kind == "CONV":
            bc = ""
            parts.append("weights from ifm2")
        parts.append(_fm_text(op.ifm2, "ifm2") + (f" broadcast={bc}" if bc else ""))
    elif op.broadcast is not None and op.broadcast.scalar and not op.is_unary:
        parts.append(f"ifm2 scalar={op.broadcast.scalar_value} zp={op.broadcast.scalar_zero_point}")
    if op.broadcast is not None and op.broadcast.reversed_operands:
        parts.append("reversed")
    ofm_text = _fm_text(op.ofm, "ofm")
    if op.ofm.zero_point != op.output_zero_point:  # the register's value, which the output stage leaves out
        ofm_text += " (zp not added)"
    parts.append(ofm_text)
    k = op.kernel
    if k is not None:
        kt = f"kernel {k.height}x{k.width} stride {k.stride_y}x{k.stride_x}"
        if k.dilation_x > 1 or k.dilation_y > 1:
            kt += f" dilation {k.dilation_y}x{k.dilation_x}"
        if k.pad_top or k.pad_left or k.pad_bottom or k.pad_right:
            kt += f" pad t{k.pad_top} l{k.pad_left} b{k.pad_bottom} r{k.pad_right}"
        if op.kind == "CONV" and k.part_kernel_first:
            kt += " part-kernel"
        parts.append(kt)
    if op.resize is not None:
        r = op.resize
        parts.append(f"resize {r.mode} y {r.y_d}/{r.y_n}{r.y_offset:+d} x {r.x_d}/{r.x_n}{r.x_offset:+d}")
    rnd = _ROUND_TEXT[RoundMode(op.ofm_round_mode)]
    if op.kind in ("CONV", "DEPTHWISE") and op.weights:
        w = op.weights[0]
        more = f" (+{len(op.weights) - 1} streams)" if len(op.weights) > 1 else ""
        fmt = f" {op.weight_format}{' sparse' if op.sparse_weights else ''}" if op.weight_format else ""
        parts.append(f"weights r{w.region}@0x{w.address:x}+{w.length}{more}{fmt} scales r{op.scales[0].region}"
                     f"@0x{op.scales[0].address:x}+{op.scales[0].length} {op.ofm_scale_mode} {rnd}")
    elif op.ofm_scale_mode == "GLOBAL":
        parts.append(f"scale {op.ofm_scale.multiplier}>>{op.ofm_scale.shift} {rnd}")
    if op.kind == "ELEMENTWISE" and op.ifm2_scale is not None:  # U85: each operand's own scale
        parts.append(" ".join(f"{name} {sc.multiplier}>>{sc.shift}" + (f" dbl_rnd {sc.double_round}" if sc.double_round else "")
                              for name, sc in (("ifm", op.opa_scale), ("ifm2", op.ifm2_scale))))
    elif op.kind == "ELEMENTWISE" and op.sub_op in ("ADD", "SUB"):
        mode = IfmScaleMode(op.ifm_scale_mode).name
        if op.ifm_scale_mode == IfmScaleMode.OPA_OPB_16:
            parts.append(f"{mode} opa={op.opa_scale.multiplier & 0xFFFF} opb={op.opb_scale}")
        else:
            parts.append(f"{mode} {op.opa_scale.multiplier}>>{op.opa_scale.shift}")
    act = op.activation
    if act is not None and (act.function != ActivationFunction.NONE or act.min > op.ofm.min_value
                            or act.max < op.ofm.max_value):
        if op.ofm.bits < 32 or act.function != ActivationFunction.NONE:
            parts.append(f"act {act.name} [{act.min},{act.max}]")
    parts.append(f"block {op.ofm_block[0]}x{op.ofm_block[1]}x{op.ofm_block[2]} acc {op.acc_format}")
    return head + " | ".join(p for p in parts if p)


def summarize_operations(words, arch) -> list[str]:
    """One line per ``NPU_OP_*`` command: kind, shapes, kernel, strides, formats/dtypes, regions."""
    arch = get_arch(arch)
    w = as_words(words)
    state = RegisterState(arch)
    lines = []
    i = 0
    while i < len(w):
        try:
            cmd = decode_command(w, i, arch)
        except NpuFault as f:
            lines.append(f"0x{i * 4:04x}  <invalid>               {f}")
            break
        i += cmd.length
        if not cmd.is_operation:
            state.apply(cmd)
            continue
        try:
            op = build_operation(state, cmd, arch)
        except NpuFault as f:
            lines.append(f"0x{cmd.offset:04x}  <invalid>               {f}")
            continue
        lines.append(describe_operation(op))
    return lines
