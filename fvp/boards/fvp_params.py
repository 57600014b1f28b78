"""The FVP's own ``-C`` parameter names, as ExecuTorch's ``run_fvp.sh``, MLEK and TFLM pass them.

``translate_fvp_param(name, value, merged)`` returns the board keys to set, ``None`` for a parameter that is
accepted but has no effect here (visualisation, telnet terminals), or raises ``ValueError`` for a bad value
or a parameter this simulator does not know (``UnknownParameter``, a ``ValueError``: the drop-in warns and goes
on, as the FVP does; ``fvp run -C`` and board files refuse it). Board keys (``npu.variant=...``) pass through
unchanged, so a misspelled board key (``npu.memory_mod``) is the loader's error everywhere.
"""

from __future__ import annotations

import re
import shlex

from . import schema as S

_NOOP_PATTERNS = [
    r"mps3_board\.visualisation\..*",
    r"mps3_board\.telnetterminal\d+\..*",
    r"vis_hdlcd\..*",
    r"mps3_board\.uart[1-5]\..*",
    r"cpu0\.semihosting-.*",
    r"ethosu\.diagnostics",
    r"mps3_board\.DISABLE_GATING",
    r"cpu0\.(FPU|MVE|INITSVTOR|INITNSVTOR|SECEXT)\b.*",
    r"mps3_board\.smsc_91c111\..*",
    r"mps3_board\.hostbridge\..*",
]

class UnknownParameter(ValueError):
    """A name that is neither an FVP parameter this simulator knows nor under a board section."""


_UART_KEYS = {"out_file", "shutdown_on_eot", "shutdown_tag", "unbuffered_output"}


def _tcm_size(value) -> str:
    n = int(str(value), 0)
    if not 1 <= n <= 16:
        raise ValueError(f"TCM size code must be 1..16 (size = 2^(N-1) KiB), got {value!r}")
    return f"{2 ** (n - 1)}KiB"


def translate_fvp_param(name: str, value, merged: dict, fvp_flavour: str = ""):
    top = name.split(".", 1)[0]
    if top in S.SCHEMA and top != "extends":
        return [(name, value)]
    if name == "ethosu.num_macs":
        macs = str(value).strip()
        if not macs.isdigit():
            raise ValueError(f"expected a MAC count such as 128, got {value!r}")
        current = str(merged.get("npu", {}).get("variant", ""))
        family = "ethos-u65" if (fvp_flavour == "u65" or current.startswith("ethos-u65")) else "ethos-u55"
        return [("npu.variant", f"{family}-{int(macs)}")]
    m = re.fullmatch(r"mps3_board\.uart0\.(\w+)", name)
    if m:
        key = m.group(1)
        if key not in _UART_KEYS:
            raise UnknownParameter(f"unknown UART parameter {key!r}; known: {', '.join(sorted(_UART_KEYS))}")
        if key == "out_file" and isinstance(value, str):
            value = value.strip("'\"")
        return [(f"devices.uart0.{key}", value)]
    if name == "ethosu.extra_args":
        args = shlex.split(str(value))
        out = []
        for i, a in enumerate(args):
            if a in ("--fast", "-F"):
                out.append(("npu.timing", "none"))
        return out or None
    m = re.fullmatch(r"cpu0\.CFG([ID])TCMSZ", name)
    if m:
        region = "ITCM" if m.group(1) == "I" else "DTCM"
        return [(f"memory.{region}.size", _tcm_size(value))]
    for pat in _NOOP_PATTERNS:
        if re.fullmatch(pat, name):
            return None
    if name.startswith("mps4_board.") or name.startswith("mps4_"):
        raise ValueError("Corstone-320 (mps4_board) parameters are not supported: this simulator models Corstone-300")
    raise UnknownParameter("unknown parameter; use a board key such as npu.variant, firmware.allocator, "
                     "devices.uart0.out_file, or an FVP parameter such as ethosu.num_macs")
