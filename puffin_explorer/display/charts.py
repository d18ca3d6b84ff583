"""Charts as matplotlib figures, and their inline-SVG form for the HTML views.

Deletion-vector charts are binned from the bitmap itself: small vectors are
histogrammed exactly from their positions, large ones from the Roaring container
headers (each container's count spread over its 65,536 positions), so a vector
of 10^8 positions costs a few thousand numbers, never one point per row.

The SVG is deterministic (fixed hash salt, no date) and themable: lines and text
use ``currentColor`` and the bars the CSS variable ``--pe-accent``.
"""

from __future__ import annotations

import io
import math
import re
from typing import Any, Optional

import numpy as np

from .._text import plural

#: Vectors up to this many positions are histogrammed exactly from their positions.
EXACT_LIMIT = 1 << 22
DEFAULT_BINS = 200
CONTAINER_SPAN = 1 << 16

_INK = "#010203"  # replaced by currentColor in SVG
_ACCENT = "#0a0b0c"  # replaced by var(--pe-accent)
_ACCENT2 = "#0d0e0f"  # replaced by var(--pe-warn)
_RC = {
    "svg.hashsalt": "puffin-explorer",
    "svg.fonttype": "none",
    "font.size": 9,
    "axes.edgecolor": _INK,
    "axes.labelcolor": _INK,
    "text.color": _INK,
    "xtick.color": _INK,
    "ytick.color": _INK,
    "axes.facecolor": "none",
    "figure.facecolor": "none",
    "savefig.facecolor": "none",
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def dv_histogram(dv: Any, bins: int = DEFAULT_BINS, upper: Optional[int] = None) -> tuple[np.ndarray, np.ndarray, str]:
    """``(edges, counts, method)``: deleted rows per position bin over ``[0, upper)``.

    ``upper`` defaults to the largest deleted position + 1 (a deletion vector does
    not know its data file's row count).
    """
    hi = dv.max_position
    if hi is None:
        return np.array([0.0, 1.0]), np.zeros(1), "empty"
    upper = int(upper) if upper is not None else hi + 1
    upper = max(upper, 1)
    bins = max(1, min(bins, upper))
    edges = np.linspace(0.0, float(upper), bins + 1)
    if dv.cardinality <= EXACT_LIMIT:
        counts, _ = np.histogram(dv.positions().astype(np.float64), bins=edges)
        return edges, counts.astype(np.float64), "exact"
    starts, cards = _container_starts(dv)
    cum = np.concatenate(([0.0], np.cumsum(cards, dtype=np.float64)))

    def cdf(x: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(starts, x, side="right") - 1
        idx_c = np.clip(idx, 0, len(starts) - 1)
        frac = np.clip((x - starts[idx_c]) / CONTAINER_SPAN, 0.0, 1.0)
        return np.where(idx >= 0, cum[idx_c] + cards[idx_c] * frac, 0.0)

    counts = np.diff(cdf(edges))
    return edges, counts, "by container"


def _container_starts(dv: Any) -> tuple[np.ndarray, np.ndarray]:
    starts, cards = [], []
    for b in dv.buckets:
        base = b.key << 32
        for c in b.bitmap.containers:
            starts.append(base | (c.key << 16))
            cards.append(c.cardinality)
    order = np.argsort(np.asarray(starts, dtype=np.float64), kind="stable")
    return (np.asarray(starts, dtype=np.float64)[order], np.asarray(cards, dtype=np.float64)[order])


def _figure(width: float, height: float, pyplot: bool):
    """A new figure; with ``pyplot`` one made through pyplot (so ``fig.show()`` works) but closed at once.

    Either way a :class:`~._figure.NotebookFigure`, which draws itself in a notebook even when
    the kernel's backend registered no figure formatter.
    """
    from ._figure import NotebookFigure

    if pyplot:
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=(width, height), FigureClass=NotebookFigure)
        plt.close(fig)  # returned to the caller, not left for the backend to show a second time
        return fig
    return NotebookFigure(figsize=(width, height))


def dv_figure(dv: Any, bins: int = DEFAULT_BINS, upper: Optional[int] = None, pyplot: bool = True,
              _themable: bool = False):
    """Where a deletion vector's deleted rows fall: deleted rows per bin of row positions."""
    import matplotlib

    rc = dict(_RC) if _themable else {k: v for k, v in _RC.items() if k in ("svg.hashsalt", "font.size")}
    with matplotlib.rc_context(rc):
        fig = _figure(7.0, 2.1, pyplot)
        ax = fig.add_subplot(1, 1, 1)
        edges, counts, method = dv_histogram(dv, bins, upper)
        colour = _ACCENT if _themable else "#3b6fb6"
        if method != "empty":
            ax.stairs(counts, edges, fill=True, color=colour, alpha=0.85, linewidth=0)
        ax.set_xlim(edges[0], edges[-1])
        ax.set_ylim(bottom=0)
        width = (edges[-1] - edges[0]) / max(1, len(counts))
        ax.set_xlabel("row position in the data file")
        ax.set_ylabel(f"deleted / {_short(width)} rows")
        ax.ticklabel_format(axis="both", style="plain", useOffset=False)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: _short(v)))
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: _short(v)))
        ax.set_title(f"{plural(dv.cardinality, 'deleted row')} ({method} binning, {plural(len(counts), 'bin', sep='')})",
                     fontsize=9, loc="left")
        fig.tight_layout(pad=0.4)
    return fig


def theta_figure(sketch: Any, pyplot: bool = True, _themable: bool = False):
    """A theta sketch's estimate with its 1, 2 and 3 standard-deviation bounds (and the ``ndv`` property)."""
    import matplotlib

    rc = dict(_RC) if _themable else {k: v for k, v in _RC.items() if k in ("svg.hashsalt", "font.size")}
    with matplotlib.rc_context(rc):
        fig = _figure(5.0, 1.25, pyplot)
        ax = fig.add_subplot(1, 1, 1)
        accent = _ACCENT if _themable else "#3b6fb6"
        est = sketch.estimate
        if not all(math.isfinite(v) for v in (est, sketch.lower_bound(3), sketch.upper_bound(3))):
            ax.set_axis_off()  # a damaged theta: nothing to draw to scale (the findings say why)
            ax.set_title(f"estimate {est} (theta {sketch.theta:g}): no bounds to draw", fontsize=8, loc="left")
            return fig
        exact = sketch.upper_bound(3) - sketch.lower_bound(3) <= 0
        for k, lw in ((3, 3), (2, 6), (1, 10)):
            lo, hi = sketch.lower_bound(k), sketch.upper_bound(k)
            ax.plot([lo, hi], [0, 0], color=accent, alpha=0.25 + 0.2 * (4 - k), linewidth=lw,
                    solid_capstyle="butt")
            if not exact:
                ax.annotate(f"{k}σ", (hi, 0), xytext=(2, 4), textcoords="offset points", fontsize=7)
        ax.plot([est], [0], marker="|", markersize=16, color=_INK if _themable else "black")
        ndv = sketch.ndv_number
        if ndv is not None:
            ax.plot([ndv], [0], marker="v", markersize=7, color=_ACCENT2 if _themable else "#b35c00",
                    linestyle="none")
        lo3, hi3 = sketch.lower_bound(3), sketch.upper_bound(3)
        pad = max(1.0, (hi3 - lo3) * 0.15)
        ax.set_xlim(lo3 - pad, hi3 + pad)
        ax.set_ylim(-1, 1)
        ax.set_yticks([])
        ax.spines["left"].set_visible(False)
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(6))
        digits = 0 if (hi3 - lo3) + 2 * pad >= 6 else 2
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.{digits}f}"))
        label = (f"estimate {est:,.1f}" + (" (exact: the bounds equal the estimate)" if exact else
                                           "  with 1σ, 2σ, 3σ bounds")
                 + (f"   ▼ ndv property {ndv}" if ndv is not None else ""))
        ax.set_title(label, fontsize=8, loc="left")
        fig.tight_layout(pad=0.3)
    return fig


def _short(v: float) -> str:
    a = abs(v)
    for div, suf in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            s = f"{v / div:.2f}".rstrip("0").rstrip(".")
            return s + suf
    return f"{v:.0f}" if float(v).is_integer() else f"{v:.1f}"


_PROLOG = re.compile(r"^.*?(?=<svg)", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>", re.S)


def figure_svg(fig) -> str:
    """The figure as an inline ``<svg>`` element: no prolog, no date, theme colours as CSS."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": _RC["svg.hashsalt"], "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    svg = _PROLOG.sub("", buf.getvalue(), count=1)
    svg = _COMMENT.sub("", svg)
    svg = _METADATA.sub("", svg)
    svg = svg.replace(_INK, "currentColor").replace(_ACCENT, "var(--pe-accent)").replace(_ACCENT2, "var(--pe-warn)")
    return svg.strip()


def dv_chart_svg(dv: Any, bins: int = DEFAULT_BINS) -> str:
    return figure_svg(dv_figure(dv, bins, pyplot=False, _themable=True))


def theta_chart_svg(sketch: Any) -> str:
    return figure_svg(theta_figure(sketch, pyplot=False, _themable=True))
