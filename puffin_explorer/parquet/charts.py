"""Matplotlib figure of a deletion overlay: one step per row group and per page, never per row."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from .overlay import DeletionOverlay

BLUE, RED, ORANGE = "#1f77b4", "#d62728", "#ff7f0e"


def _edges(first_rows, num_rows) -> np.ndarray:
    first = np.asarray(first_rows, dtype=np.float64)
    return np.append(first, first[-1] + float(np.asarray(num_rows)[-1]))


def overlay_figure(overlay: "DeletionOverlay", column: Optional[str] = None):
    """Deleted share per row group (top; fully deleted ones in red) and per data page of
    ``column`` (bottom; the first column by default).

    Each panel is one step path (``stairs``), so the figure stays small however many
    row groups and pages the file has.  Uses :class:`matplotlib.figure.Figure`
    directly: no pyplot state, no GUI backend.
    """
    from matplotlib.figure import Figure

    rg = overlay.row_groups
    pages = overlay.pages
    if column is None and len(pages):
        column = str(pages["column"].iloc[0])
    col_pages = pages[pages["column"] == column] if column is not None else pages.iloc[0:0]
    fig = Figure(figsize=(9, 4.5), layout="constrained")
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    if len(rg):
        edges = _edges(rg["first_row"], rg["num_rows"])
        share = rg["share"].to_numpy(dtype=np.float64)
        ax1.stairs(share, edges, fill=True, color=BLUE)
        full = rg["fully_deleted"].to_numpy(dtype=bool)
        if full.any():
            ax1.stairs(np.where(full, share, 0.0), edges, fill=True, color=RED)
    ax1.set_ylim(0, 1)
    ax1.set_ylabel("deleted share")
    ax1.set_title(f"row groups ({int(rg['fully_deleted'].sum())} of {len(rg)} fully deleted; "
                  f"{overlay.share:.1%} of rows deleted)", fontsize=10)
    if len(col_pages):
        col_pages = col_pages.sort_values("first_row")
        ax2.stairs(col_pages["share"].to_numpy(dtype=np.float64),
                   _edges(col_pages["first_row"], col_pages["num_rows"]), fill=True, color=ORANGE)
        ax2.set_title(f"data pages of {column}", fontsize=10)
    else:
        ax2.set_title("no page row ranges known", fontsize=10)
    ax2.set_ylim(0, 1)
    ax2.set_ylabel("deleted share")
    ax2.set_xlabel("row position")
    return fig
