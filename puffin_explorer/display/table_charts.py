"""Charts of tables and commits: the snapshot timeline and what one commit deleted.

Same conventions as :mod:`.charts`: binned (never one point per row), deterministic
SVG, themable colours (``currentColor``, ``--pe-accent``, ``--pe-warn``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._text import plural
from ..iceberg.columns import UNPARTITIONED
from .charts import _ACCENT, _ACCENT2, _INK, _RC, _figure, _short, figure_svg

#: Commit times before this are damaged (Iceberg tables are younger than the Unix epoch).
_EPOCH = np.datetime64("1970-01-01T00:00:00", "ns")
#: Commits drawn one bar each; a longer history shows its latest commits.
MAX_COMMITS = 60
#: Data files drawn one bar each in a commit chart.
MAX_FILES = 40


def _fmt(matplotlib):
    return matplotlib.ticker.FuncFormatter(lambda v, _: _short(v))


def timeline_figure(timeline, pyplot: bool = True, _themable: bool = False):
    """Live rows and deleted rows after each commit (stacked bars), the operation written under each."""
    import matplotlib

    rc = dict(_RC) if _themable else {k: v for k, v in _RC.items() if k in ("svg.hashsalt", "font.size")}
    df = timeline.tail(MAX_COMMITS).reset_index(drop=True)
    with matplotlib.rc_context(rc):
        fig = _figure(7.0, 2.3, pyplot)
        ax = fig.add_subplot(1, 1, 1)
        x = np.arange(len(df))
        live = df["live_rows"].fillna(0).astype(float).to_numpy()
        deleted = df["deleted_rows"].fillna(0).astype(float).to_numpy()
        ax.bar(x, live, color=_ACCENT if _themable else "#3b6fb6", width=0.7, label="live rows")
        ax.bar(x, deleted, bottom=live, color=_ACCENT2 if _themable else "#b35c00", width=0.7,
               label="deleted rows")
        ax.set_xticks(x)
        ax.set_xticklabels([f"{int(s)}\n{op[:9]}" for s, op in zip(df["sequence_number"], df["operation"])],
                           fontsize=7)
        ax.yaxis.set_major_formatter(_fmt(matplotlib))
        ax.set_ylabel("rows")
        ax.set_xlabel("commit (sequence number, operation)")
        ax.set_xlim(-0.6, max(len(df), 1) - 0.4)
        ax.legend(loc="upper left", fontsize=7, frameon=False, ncol=2, bbox_to_anchor=(0, 1.18))
        shown = "" if len(timeline) <= MAX_COMMITS else f" (latest {MAX_COMMITS} of {len(timeline)})"
        ax.set_title(f"rows after each commit{shown}", fontsize=9, loc="right")
        fig.tight_layout(pad=0.4)
    return fig


def timeline_svg(timeline) -> str:
    return figure_svg(timeline_figure(timeline, pyplot=False, _themable=True))


def commit_deletes_figure(commit: Any, pyplot: bool = True, _themable: bool = False, bins: int = 100):
    """Positions a commit deleted per data file (bars), and where they fall in the files (histogram)."""
    import matplotlib

    rc = dict(_RC) if _themable else {k: v for k, v in _RC.items() if k in ("svg.hashsalt", "font.size")}
    df = commit.to_pandas()
    df = df[df.data_file.notna()].sort_values("added_positions", ascending=False).reset_index(drop=True)
    with matplotlib.rc_context(rc):
        fig = _figure(7.0, 2.3, pyplot)
        ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.4]})
        accent = _ACCENT if _themable else "#3b6fb6"
        top = df.head(MAX_FILES)
        x = np.arange(len(top))
        ax1.bar(x, top["added_positions"].fillna(0).astype(float), color=accent, width=0.8)
        ax1.set_xticks([])
        ax1.set_xlabel("data files" + (f" (top {MAX_FILES} of {len(df)})" if len(df) > MAX_FILES else ""))
        ax1.set_ylabel("rows deleted")
        ax1.yaxis.set_major_formatter(_fmt(matplotlib))
        upper = max([int(v) + 1 for v in df["last_added"].dropna()] or [1])
        edges = np.linspace(0.0, float(upper), min(bins, upper) + 1)
        counts = np.zeros(len(edges) - 1)
        for ref in df["data_file"]:
            pos = commit.positions(ref)
            if len(pos):
                counts += np.histogram(pos.astype(np.float64), bins=edges)[0]
        ax2.stairs(counts, edges, fill=True, color=_ACCENT2 if _themable else "#b35c00", linewidth=0)
        ax2.set_xlim(edges[0], edges[-1])
        ax2.set_xlabel("row position in the data file")
        ax2.xaxis.set_major_formatter(_fmt(matplotlib))
        ax2.yaxis.set_major_formatter(_fmt(matplotlib))
        ax2.set_ylabel(f"deleted / {_short(edges[1] - edges[0])} rows")
        ax1.set_title(f"{plural(commit.total, 'row')} deleted by this commit", fontsize=9, loc="left")
        fig.tight_layout(pad=0.4)
    return fig


def commit_deletes_svg(commit: Any) -> str:
    return figure_svg(commit_deletes_figure(commit, pyplot=False, _themable=True))


__all__ = ["timeline_figure", "timeline_svg", "commit_deletes_figure", "commit_deletes_svg", "_INK"]


#: Partitions drawn one bar each in a table's health chart (the largest by bytes).
TOP_PARTITIONS = 12


def _short_bytes(n: Any) -> str:
    """``0``, ``1M``, ``384M``, ``1G``: a size-class edge short enough for a tick label."""
    n = int(n)
    for div, suffix in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "k")):
        if n >= div:
            return f"{n / div:.3g}{suffix}"
    return str(n)


def _partition_label(value: Any, width: int = 26) -> str:
    """A partition's text (the doctor's frames hold :func:`~puffin_explorer.iceberg.columns.partition_text`'s),
    cut to ``width`` characters."""
    text = str(value) or UNPARTITIONED
    return text if len(text) <= width else text[: width - 1] + "…"


def _time_axis(ax, times) -> None:
    """Date ticks for any span of commit times, from milliseconds to centuries, without a warning.

    ``AutoDateLocator`` picks the finest unit with at least ``minticks`` ticks, then an interval of
    that unit giving at most ``maxticks``; its largest second, minute, hour and month intervals
    (30, 30, 12, 6) cover twice the next unit only when ``maxticks >= 2 * minticks + 1``.  With the
    defaults (5 and a smaller maxticks) commits seconds or minutes apart found no interval and
    matplotlib warned.  Commits all at one instant get a minute either side (matplotlib's own
    padding would be years, hiding the time).
    """
    import matplotlib.dates as mdates
    import pandas as pd

    if len(times) and times.min() == times.max():
        ax.set_xlim(times.min() - pd.Timedelta(minutes=1), times.max() + pd.Timedelta(minutes=1))

    locator = mdates.AutoDateLocator(minticks=2, maxticks=5)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))


def health_figure(health: Any, pyplot: bool = True, _themable: bool = False, top: int = TOP_PARTITIONS):
    """Three panels of a :class:`~puffin_explorer.health.TableHealth`: data files per size class
    (small classes in the warning colour, the target size marked), bytes of the ``top`` largest
    partitions, and the snapshots and manifest bytes over commit time."""
    import matplotlib

    rc = dict(_RC) if _themable else {k: v for k, v in _RC.items() if k in ("svg.hashsalt", "font.size")}
    accent = _ACCENT if _themable else "#3b6fb6"
    warn = _ACCENT2 if _themable else "#b35c00"
    hist = health.frames.get("size_histogram")
    parts = health.frames.get("partitions")
    snaps = health.frames.get("snapshots")
    with matplotlib.rc_context(rc):
        fig = _figure(8.4, 2.3, pyplot)
        ax1, ax2, ax3 = (fig.add_subplot(1, 3, i) for i in (1, 2, 3))
        if hist is not None and len(hist):
            x = np.arange(len(hist))
            ax1.bar(x, hist["files"].to_numpy(dtype=float), width=0.7,
                    color=[warn if s else accent for s in hist["small"]])
            ax1.set_xticks(x - 0.5)  # each bar starts at its class's lower edge
            ax1.set_xticklabels([_short_bytes(v) for v in hist["min_bytes"]], fontsize=6, rotation=45)
            ax1.set_xlabel("file size (class from)", fontsize=7)
            target = int(health.metrics.get("target_file_size") or 0)
            edge = np.flatnonzero(hist["min_bytes"].to_numpy() == target)
            if len(edge):
                ax1.axvline(edge[0] - 0.5, color=_INK if _themable else "#333333", linestyle="--", linewidth=0.8)
                ax1.text(edge[0] - 0.45, ax1.get_ylim()[1], "target", fontsize=6, va="top")
        ax1.yaxis.set_major_formatter(_fmt(matplotlib))
        ax1.set_title("data files per size (small ones highlighted)", fontsize=8, loc="left")
        if parts is not None and len(parts):
            p = parts.sort_values(["bytes", "partition"], ascending=[False, True]).head(top)
            y = np.arange(len(p))[::-1]
            ax2.barh(y, p["bytes"].to_numpy(dtype=float), color=accent, height=0.7)
            ax2.set_yticks(y)
            ax2.set_yticklabels([_partition_label(v) for v in p["partition"].fillna("")], fontsize=6)
            ax2.xaxis.set_major_formatter(_fmt(matplotlib))
            total = int(health.metrics.get("partitions") or len(parts))
            if total > len(parts):  # the frame holds the first partitions by key, not the largest: said so
                shown = f"\n(top {min(top, len(parts))} of the first {len(parts):,} by key)"
            else:
                shown = "" if len(parts) <= top else f" (top {top} of {len(parts):,})"
            ax2.set_title(f"bytes per partition{shown}", fontsize=8, loc="left")
        else:
            ax2.set_title("bytes per partition", fontsize=8, loc="left")
            ax2.set_yticks([])
        if snaps is not None and len(snaps):
            s = snaps.sort_values("timestamp_ms").reset_index(drop=True)
            t = s["timestamp"].dt.tz_localize(None) if s["timestamp"].dt.tz is not None else s["timestamp"]
            count = np.arange(1, len(s) + 1)
            # a commit without a time, or before 1970 (a damaged timestamp-ms), would stretch the axis over
            # centuries and squash every real commit into one line: it is left out, and the title says so
            drawn = (t.notna() & (t >= _EPOCH)).to_numpy()
            left_out = int(len(s) - drawn.sum())
            s, t, count = s[drawn].reset_index(drop=True), t[drawn].reset_index(drop=True), count[drawn]
        if snaps is not None and len(snaps) and len(s):
            ax3.step(t, count, where="post", color=accent, label="snapshots")
            ax3.set_ylabel("snapshots", fontsize=7)
            mb = s["manifest_bytes"].astype("Float64").fillna(0).to_numpy(dtype=float)
            twin = ax3.twinx()
            twin.plot(t, mb, color=warn, marker="o", markersize=2.5, linewidth=0.8, label="manifest bytes")
            twin.yaxis.set_major_formatter(_fmt(matplotlib))
            twin.set_ylabel("manifest bytes", fontsize=7)
            twin.spines["top"].set_visible(False)
            ax3.tick_params(axis="x", labelsize=6, labelrotation=30)
            _time_axis(ax3, t)
            # on a second line: one line of this width would cut the note off at the figure's edge
            shown = f"\n({plural(left_out, 'undated commit')} left out)" if left_out else ""
            ax3.set_title(f"snapshots and manifest bytes{shown}", fontsize=8, loc="left")
        elif snaps is not None and len(snaps):
            ax3.set_axis_off()
            ax3.set_title(f"{plural(len(snaps), 'snapshot')}, none with a plausible commit time",
                          fontsize=8, loc="left")
        else:  # a Delta table: no snapshots or manifests
            ax3.set_axis_off()
        fig.tight_layout(pad=0.4)
    return fig


def health_svg(health: Any) -> str:
    return figure_svg(health_figure(health, pyplot=False, _themable=True))
