"""What every plot of the host tools (``fvp sweep``'s ``cycles.png`` and ``pareto.png``, ``fvp compare --plot``)
shares so that it reads at a glance: colours that do not repeat within a plot, markers and line styles for a
second dimension, short tick labels (what a set of names has in common goes to the title), legends outside the
data, counts in thousands and millions, and a saved figure that keeps its titles, tick labels and legends whole
(``bbox_inches="tight"``). matplotlib is imported by the caller (an optional extra, ``.[plot]``).
"""

from __future__ import annotations

import os
import textwrap

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")
LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)))


def colours(n: int) -> list:
    """``n`` colours no two of which are the same: tab10, then tab20's, then samples of viridis."""
    import matplotlib

    if n <= 10:
        cmap = matplotlib.colormaps["tab10"]
        return [cmap(i) for i in range(n)]
    if n <= 20:
        cmap = matplotlib.colormaps["tab20"]
        return [cmap(i) for i in range(n)]
    cmap = matplotlib.colormaps["viridis"]
    return [cmap(i / max(n - 1, 1)) for i in range(n)]


def count_formatter():
    """A tick formatter for counts: 950k, 1.2M (no ``1e6`` offset above the axis)."""
    from matplotlib.ticker import FuncFormatter

    def fmt(v, _pos=None):
        a = abs(v)
        if a >= 1e6:
            return f"{v / 1e6:.3g}M"
        if a >= 1e3:
            return f"{v / 1e3:.3g}k"
        return f"{v:.3g}"

    return FuncFormatter(fmt)


def count(v: float) -> str:
    """A count for a label on the data, three significant digits kept (1.00M, 631k, 95.0)."""
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:#.3g}".rstrip(".") + "M"
    if a >= 1e3:
        return f"{v / 1e3:#.3g}".rstrip(".") + "k"
    return f"{v:#.3g}".rstrip(".")


_SEPARATORS = "_-. /,:"


def short_labels(labels: list) -> tuple:
    """``(labels less what all of them share at the start and the end, the shared pattern)``; the pattern
    (``mobilenet_q_ethos-u55-{64,128}.bpte``) goes into a title. Cut at separators; ``(labels, "")`` when
    nothing is shared or a label would become empty."""
    labels = [str(x) for x in labels]
    if len(labels) < 2:
        return labels, ""
    pre = os.path.commonprefix(labels)
    suf = os.path.commonprefix([x[::-1] for x in labels])[::-1]
    p = max((pre.rfind(c) for c in _SEPARATORS), default=-1) + 1
    cut = [suf.find(c) for c in _SEPARATORS if c in suf]
    s = len(suf) - min(cut) if cut else 0
    if (p == 0 and s == 0) or any(len(x) <= p + s for x in labels):
        return labels, ""
    short = [x[p:len(x) - s] for x in labels]
    return short, f"{labels[0][:p]}{{{','.join(short)}}}{labels[0][len(labels[0]) - s:]}"


def wrap(text: str, width: int) -> str:
    """A title or label broken into lines of at most ``width`` characters (between words or separators)."""
    return "\n".join(textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=True)) or text


def counts_axis(ax, values, label: str) -> None:
    """The y axis of a plot of counts (NPU cycles): log-scaled when they span more than 20x, ticks in k/M, a grid."""
    ax.set_ylabel(label)
    if values and max(values) > 20 * max(min(values), 1):
        ax.set_yscale("log")
    ax.yaxis.set_major_formatter(count_formatter())
    ax.yaxis.set_minor_formatter(count_formatter())
    ax.tick_params(axis="y", which="both", labelsize=8)
    ax.grid(True, alpha=0.3)


def legend_outside(ax, handles=None, labels=None, title=None) -> None:
    """A legend to the right of the axes, outside the data (a figure made with ``layout="constrained"`` makes
    room for it)."""
    kw = {}
    if handles is not None:
        kw["handles"] = handles
    if labels is not None:
        kw["labels"] = labels
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=7, title=title,
              title_fontsize=7, frameon=False, **kw)


def save(fig, path) -> None:
    """Write ``fig`` with everything drawn outside the axes (legends, titles, rotated labels) kept whole.

    The image is rendered in memory first and written through ``safe_write`` (a device or FIFO is written in
    place, never replaced); a file type matplotlib does not write is ``ConfigError``, a write that fails is the
    ``WriteResult``'s own error."""
    import io
    import os

    import matplotlib.pyplot as plt

    from ..errors import ConfigError
    from ..safe_write import write_file

    image = io.BytesIO()
    try:
        fig.savefig(image, dpi=100, bbox_inches="tight", pad_inches=0.15,
                    format=os.path.splitext(str(path))[1][1:].lower() or "png")
    except ValueError as e:  # a file type matplotlib does not write
        raise ConfigError(f"{path}: {e}") from None
    finally:
        plt.close(fig)
    res = write_file(path, image.getvalue())
    if not res.ok:
        raise res.error(f"{path}: cannot write")
