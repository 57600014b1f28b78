"""``fvp disasm MODEL``: the Ethos-U command streams of a program, decoded command by command.

The delegates are found by the firmware image named in the default board (its ``ethosu_command_streams``,
the same reader the runner uses); decoding and disassembly are the NPU model's own (``npu.disasm``). The NPU
variant comes from each payload's OPTIMIZER_CONFIG word.
"""

from __future__ import annotations

from ..boards import load_board
from ..errors import ConfigError
from .programs.firmware_image import firmware_module
from ..machine.npu.arch import arch_from_config_word, get_arch
from ..machine.npu.command_stream import parse_driver_payload
from ..machine.npu.disasm import disassemble, summarize_operations


def disassemble_model(image: bytes, name: str, summary_only: bool = False, out=print) -> int:
    mod = firmware_module(load_board(None))
    lister = getattr(mod, "ethosu_command_streams", None)
    if lister is None:
        raise ConfigError("the default firmware image cannot list Ethos-U delegates")
    try:
        streams = lister(image)
    except Exception as e:  # the firmware's reader reports a bad image as a one-line failure
        raise ConfigError(f"{name}: {getattr(e, 'message', e)}") from None
    if not streams:
        out(f"{name}: no Ethos-U delegates (the program runs on the CPU only)")
        return 0
    for s in streams:
        try:
            payload = parse_driver_payload(s["cmd_data"])
        except ValueError as e:
            raise ConfigError(f"{name}: delegate {s['delegate']}: {e}") from None
        try:
            arch = arch_from_config_word(payload.config_word) if payload.config_word is not None else get_arch("ethos-u55-128")
            arch_name = arch.name
        except ConfigError:
            arch, arch_name = get_arch("ethos-u55-128"), f"unknown CONFIG 0x{payload.config_word:08x}, decoded as ethos-u55-128"
        out(f"# delegate {s['delegate']}: Vela blob at file offset 0x{s['offset']:x}, {arch_name}, "
            f"command stream {len(payload.stream)} words, weights {s['weight_size']} B, scratch {s['scratch_size']} B")
        for io_kind in ("inputs", "outputs"):
            for k, io in enumerate(s[io_kind]):
                out(f"#   {io_kind[:-1]} {k}: shape {list(io.shape)} x {io.elem_size} B at scratch offset 0x{io.offset:x}")
        if not summary_only:
            for line in disassemble(payload.stream, arch):
                out(line)
        out(f"# operations of delegate {s['delegate']}:")
        for line in summarize_operations(payload.stream, arch):
            out(f"#   {line}")
    return 0
