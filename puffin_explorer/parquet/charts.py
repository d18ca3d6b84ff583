"""Matplotlib figure of a deletion overlay: one bar per row group and per page, never per row."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # pragma: no cover
    from .overlay import DeletionOverlay


def overlay_figure(overlay: "DeletionOverlay", column: Optional[str] = None):
    """Deleted share per row group (top) and per data page of ``column`` (bottom).

    Uses :class:`matplotlib.figure.Figure` directly, so no pyplot state or GUI
    backend is touched.  Fully deleted row groups are drawn in red.
    """
    from matplotlib.figure import Figure

    rg = overlay.row_groups
    pages = overlay.pages
    if column is None and len(pages):
        column = str(pages["column"].iloc[0])
    col_pages = pages[pages["column"] == column] if column is not None else pages.iloc[0:0]
    fig = Figure(figsize=(9, 4.5), layout="constrained")
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    colors = ["#d62728" if full else "#1f77b4" for full in rg["fully_deleted"]]
    ax1.bar(rg["first_row"], rg["share"], width=rg["num_rows"], align="edge", color=colors,
            edgecolor="white", linewidth=0.5)
    ax1.set_ylim(0, 1)
    ax1.set_ylabel("deleted share")
    ax1.set_title(f"row groups ({int(rg['fully_deleted'].sum())} of {len(rg)} fully deleted; "
                  f"{overlay.share:.1%} of rows deleted)", fontsize=10)
    if len(col_pages):
        ax2.bar(col_pages["first_row"], col_pages["share"], width=col_pages["num_rows"],
                align="edge", color="#ff7f0e", edgecolor="white", linewidth=0.3)
        ax2.set_title(f"data pages of {column}", fontsize=10)
    else:
        ax2.set_title("no page row ranges known", fontsize=10)
    ax2.set_ylim(0, 1)
    ax2.set_ylabel("deleted share")
    ax2.set_xlabel("row position")
    return fig
