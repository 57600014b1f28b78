"""The FVP's own ``-C`` parameter names, as ExecuTorch's ``run_fvp.sh``, MLEK and TFLM pass them.

``translate_fvp_param(name, value, merged)`` returns the board keys to set, ``None`` for a parameter that is
accepted but has no effect here (visualisation, telnet terminals), or raises ``ValueError`` for a bad value
or a parameter this simulator does not know (``UnknownParameter``, a ``ValueError``: the drop-in warns and goes
on, as the FVP does; ``fvp run -C`` and board files refuse it). Board keys (``npu.variant=...``) pass through
unchanged, so a misspelled board key (``npu.memory_mod``) is the loader's error everywhere.

Two FVPs, two spellings (ExecuTorch's ``run_fvp.sh`` and ``backends/arm/test/runner_utils.py``):

- Corstone-300 (``FVP_Corstone_SSE-300_Ethos-U55/U65``): ``ethosu.num_macs``, ``ethosu.extra_args``,
  ``mps3_board.uart0.*``, ``mps3_board.visualisation.*``, ``cpu0.semihosting-*``, ``cpu0.CFG[ID]TCMSZ``;
- Corstone-320 (``FVP_Corstone_SSE-320``, the MPS4 board): the NPU and the CPU under ``mps4_board.subsystem.``
  (``mps4_board.subsystem.ethosu.num_macs``, ``mps4_board.subsystem.cpu0.semihosting-*``), the board's own
  devices under ``mps4_board.`` (``mps4_board.uart0.*``, ``mps4_board.visualisation.*``), ``vis_hdlcd.*``.

A board says which FVP it stands for (``board.platform``; the drop-in's flavour ``u85`` is the Corstone-320).
A name of the other FVP is one that FVP does not have, so it is an ``UnknownParameter`` saying what to use.
"""

from __future__ import annotations

import re
import shlex

from . import schema as S

# the Corstone-320's CPU and NPU live in the MPS4 board's subsystem; its board devices directly under mps4_board
MPS4_SUBSYSTEM = "mps4_board.subsystem."
PLATFORM_300, PLATFORM_320 = "corstone-300", "corstone-320"

# parameters accepted without effect, in the Corstone-300's spelling; the Corstone-320's are derived from them
_NOOP_PATTERNS_300 = [
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
_NOOP_PATTERNS_320 = [
    r"mps4_board\.visualisation\..*",
    r"mps4_board\.telnetterminal\d+\..*",
    r"vis_hdlcd\..*",
    r"mps4_board\.uart[1-5]\..*",
    r"mps4_board\.subsystem\.cpu0\.semihosting-.*",
    r"mps4_board\.subsystem\.ethosu\.diagnostics",
    r"mps4_board\.DISABLE_GATING",
    # Zephyr's mps4 board.cmake passes these (boot vector, MPU regions, PACBTI): no effect on this model
    r"mps4_board\.subsystem\.cpu0\.(FPU|MVE|INITSVTOR|INITNSVTOR|SECEXT|MPU_S|MPU_NS|CFGPACBTI)\b.*",
    r"mps4_board\.subsystem\.iotss3_systemcontrol\..*",
    r"mps4_board\.smsc_91c111\..*",
    r"mps4_board\.hostbridge\..*",
]


class UnknownParameter(ValueError):
    """A name that is neither an FVP parameter this simulator knows nor under a board section."""


_UART_KEYS = {"out_file", "shutdown_on_eot", "shutdown_tag", "unbuffered_output"}


def _tcm_size(value) -> str:
    n = int(str(value), 0)
    if not 1 <= n <= 16:
        raise ValueError(f"TCM size code must be 1..16 (size = 2^(N-1) KiB), got {value!r}")
    return f"{2 ** (n - 1)}KiB"


def platform_of(merged: dict, fvp_flavour: str = "") -> str:
    """The FVP a board stands for: the drop-in's flavour when it names one, else the board's ``board.platform``."""
    if fvp_flavour == "u85":
        return PLATFORM_320
    if fvp_flavour in ("u55", "u65"):
        return PLATFORM_300
    board = merged.get("board") if isinstance(merged, dict) else None
    platform = board.get("platform") if isinstance(board, dict) else None
    return platform if platform in (PLATFORM_300, PLATFORM_320) else PLATFORM_300


def _spelling_300(name: str) -> str | None:
    """A Corstone-320 name in the Corstone-300's spelling (``mps4_board.subsystem.ethosu.x`` -> ``ethosu.x``,
    ``mps4_board.uart0.x`` -> ``mps3_board.uart0.x``); None for a name that is not the Corstone-320's."""
    if name.startswith(MPS4_SUBSYSTEM):
        return name[len(MPS4_SUBSYSTEM):]
    if name.startswith("mps4_board."):
        return "mps3_board." + name[len("mps4_board."):]
    return None


def _spelling_320(name: str) -> str | None:
    """A Corstone-300 name in the Corstone-320's spelling; None for a name that is not the Corstone-300's."""
    if name.startswith(("ethosu.", "cpu0.")):
        return MPS4_SUBSYSTEM + name
    if name.startswith("mps3_board."):
        return "mps4_board." + name[len("mps3_board."):]
    return None


def _known(name: str, patterns) -> bool:
    return any(re.fullmatch(pat, name) for pat in patterns)


def translate_fvp_param(name: str, value, merged: dict, fvp_flavour: str = ""):
    top = name.split(".", 1)[0]
    if top in S.SCHEMA and top != "extends":
        return [(name, value)]
    platform = platform_of(merged, fvp_flavour)
    if platform == PLATFORM_320:
        other = _spelling_300(name)
        if other is None and _spelling_320(name) is not None:  # a Corstone-300 spelling on the Corstone-320
            raise UnknownParameter(f"not a parameter of FVP_Corstone_SSE-320 (the Corstone-300's spelling); the "
                                   f"Corstone-320 names it {_spelling_320(name)}")
        if other is None and not _known(name, _NOOP_PATTERNS_320):
            raise _unknown(platform)
        # the board's own devices and the subsystem's CPU and NPU take the same values as on the Corstone-300
        return _translate(other or name, value, merged, "ethos-u85", _NOOP_PATTERNS_320, name)
    if _spelling_300(name) is not None:  # a Corstone-320 spelling on the Corstone-300
        raise UnknownParameter(f"a Corstone-320 (FVP_Corstone_SSE-320, mps4_board) parameter; this board is a "
                               f"Corstone-300 (use {_spelling_300(name)}, or a corstone-320 board)")
    current = str((merged.get("npu") or {}).get("variant", "")) if isinstance(merged, dict) else ""
    family = "ethos-u65" if (fvp_flavour == "u65" or current.startswith("ethos-u65")) else "ethos-u55"
    return _translate(name, value, merged, family, _NOOP_PATTERNS_300, name)


def _unknown(platform: str) -> UnknownParameter:
    if platform == PLATFORM_320:
        return UnknownParameter("unknown parameter; use a board key such as npu.variant, firmware.allocator, "
                                "devices.uart0.out_file, or an FVP parameter such as "
                                "mps4_board.subsystem.ethosu.num_macs")
    return UnknownParameter("unknown parameter; use a board key such as npu.variant, firmware.allocator, "
                            "devices.uart0.out_file, or an FVP parameter such as ethosu.num_macs")


#: the Ethos-U model's own options (``ethosu.extra_args``) this simulator implements: ``--fast``/``-F`` (no NPU
#: timing) and ``--pmu-trace FILE`` (run_fvp.sh ``--trace_file``: the PMU trace, fvp/host/run/pmu_trace.py)
EXTRA_ARGS = ("--fast", "-F", "--pmu-trace FILE")


def _extra_args(value: str) -> list:
    try:
        args = shlex.split(value)
    except ValueError as e:
        raise ValueError(f"cannot split {value!r}: {e}") from None
    out = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--fast", "-F"):
            out.append(("npu.timing", "none"))
        elif a == "--pmu-trace" or a.startswith("--pmu-trace="):
            path = a.split("=", 1)[1] if "=" in a else (args[i + 1] if i + 1 < len(args) else "")
            i += 0 if "=" in a else 1
            if not path:
                raise ValueError("--pmu-trace needs a file name")
            out.append(("npu.pmu_trace", path))
        else:  # never ignored silently: the user asked the NPU model for something
            raise ValueError(f"unknown Ethos-U option {a!r}; this model has {', '.join(EXTRA_ARGS)}")
        i += 1
    return out or None


def _translate(name: str, value, merged: dict, family: str, noops, given: str):
    """``name`` in the Corstone-300's spelling (``given`` is the name as written, for the no-op patterns)."""
    if name == "ethosu.num_macs":
        macs = str(value).strip()
        if not macs.isdigit():
            raise ValueError(f"expected a MAC count such as {256 if family == 'ethos-u85' else 128}, got {value!r}")
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
        return _extra_args(str(value))
    if name == "cpu0.engine":  # this simulator's own choice of what runs the application (docs/full-system.md)
        return [("cpu.engine", str(value).strip().strip("'\""))]
    m = re.fullmatch(r"cpu0\.(cpi_mul|cpi_div)", name)  # the Fast Models' CPI parameters (code run on QEMU)
    if m:
        return [(f"cpu.{m.group(1)}", value)]
    m = re.fullmatch(r"cpu0\.CFG([ID])TCMSZ", name)
    if m:
        region = "ITCM" if m.group(1) == "I" else "DTCM"
        return [(f"memory.{region}.size", _tcm_size(value))]
    if _known(given, noops):
        return None
    raise _unknown(PLATFORM_320 if family == "ethos-u85" else PLATFORM_300)
