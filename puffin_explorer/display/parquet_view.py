"""Views of a Parquet layout and of a deletion overlay: text, HTML and the overlay chart.

Built from this layer's generic pieces (layout strip, region tree, findings
table, HTML wrapper), so a Parquet file looks like a Puffin file.  The model
classes import this module only when something is rendered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from ..parquet.layout import ParquetLayout
    from ..parquet.overlay import DeletionOverlay

MAX_ROWS = 400  # cap on region rows in the text view
EXPAND_ROW_GROUPS = 16  # up to this many row groups, the strip shows their column chunks
SHOW_CHILDREN = 12  # a longer child list shows its first and last few and a count between


def summary(pl: "ParquetLayout") -> str:
    n_rg = len(pl.row_group_infos)
    parts = [f"{pl.size:,} bytes", f"{n_rg} row group{'s' if n_rg != 1 else ''}",
             f"{pl.num_rows:,} rows", f"{len(pl.columns)} columns"]
    n_pages = len(pl.pages())
    if n_pages:
        parts.append(f"{n_pages} pages")
    if pl.created_by:
        parts.append(f"created by {pl.created_by}")
    return " · ".join(parts)


def expand_kinds(pl: "ParquetLayout") -> tuple[str, ...]:
    """Kinds the layout strip opens up: the footer, and row groups when there are few."""
    from .layout import EXPAND

    few = len(pl.row_group_infos) <= EXPAND_ROW_GROUPS
    return tuple(EXPAND) + (("row-group",) if few else ())


def _status(findings) -> tuple[str, str]:
    errors = sum(1 for f in findings if f.severity.value == "error")
    warnings = sum(1 for f in findings if f.severity.value == "warning")
    if errors:
        return f"invalid: {errors} error{'s' * (errors != 1)}", "error"
    if warnings:
        return f"valid with {warnings} warning{'s' * (warnings != 1)}", "warning"
    return "valid", "ok"


def _rows(pl: "ParquetLayout", max_depth: int = 2):
    """(depth, region or elided-count) rows down to ``max_depth``, long child lists elided."""
    rows: list = []

    def visit(region, depth: int) -> None:
        rows.append((depth, region))
        kids = region.children
        if depth + 1 > max_depth:
            return
        shown = kids[:4] + [len(kids) - 6] + kids[-2:] if len(kids) > SHOW_CHILDREN else kids
        for k in shown:
            if isinstance(k, int):
                rows.append((depth + 1, k))
            else:
                visit(k, depth + 1)

    for child in pl.root.children:
        visit(child, 1)
    del visit  # a recursive closure refers to itself: without this, it and what it holds wait for the cyclic GC
    return rows


def _value_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray)):
        return repr(bytes(value))
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def layout_text(pl: "ParquetLayout", opts: Any = None) -> str:
    """Summary, layout strip, region table (row groups and column chunks) and findings."""
    from .layout import strip_text
    from .text import printable

    lines = [f"ParquetLayout({pl.location!r})", "  " + printable(summary(pl)),
             f"  read {pl.source.bytes_read:,} bytes in {pl.source.read_count} requests",
             "  " + strip_text(pl.root, expand_kinds(pl)).replace("\n", "\n  "),
             f"  {'offset':>12} {'end':>12} {'length':>12}  region"]
    rows = _rows(pl)
    for depth, r in rows[:MAX_ROWS]:
        if isinstance(r, int):
            lines.append(f"  {'':>12} {'':>12} {'':>12}  {'  ' * (depth - 1)}... {r} more")
            continue
        flag = " !" if r.finding is not None else ""
        lines.append(f"  {r.offset:>12,} {r.end:>12,} {r.length:>12,}  {'  ' * (depth - 1)}"
                     f"{printable(r.name)}  {printable(_value_text(r.value))}{flag}".rstrip())
    if len(rows) > MAX_ROWS:
        lines.append(f"  ... {len(rows) - MAX_ROWS} more regions")
    if pl.findings:
        lines.append(f"  findings ({len(pl.findings)}):")
        lines.extend(f"    {printable(str(f))}" for f in pl.findings[:50])
        if len(pl.findings) > 50:
            lines.append(f"    ... {len(pl.findings) - 50} more")
    else:
        lines.append("  findings: none")
    return "\n".join(lines)


def _table(df, classes=None, max_rows: Optional[int] = None) -> str:
    from . import html as H

    cols = list(df.columns)
    rows = ([None if _missing(v) else v for v in rec] for rec in df.itertuples(index=False))
    return H.table(cols, rows, classes, total=len(df), more_hint="the DataFrame has all",
                   max_rows=H.MAX_TABLE_ROWS if max_rows is None else max_rows)


def _missing(v) -> bool:
    try:
        import pandas as pd

        return bool(pd.isna(v)) if not isinstance(v, (list, tuple, bytes)) else False
    except (TypeError, ValueError):
        return False


def layout_html_body(pl: "ParquetLayout", opts: Any = None) -> str:
    rows = getattr(opts, "max_rows", None)
    from . import html as H
    from .layout import strip_html
    from .tables import findings_html, render_region_tree_html

    status, kind = _status(pl.findings)
    facts = [("status", H.badge(status, kind)), ("size", f"{pl.size:,} B"),
             ("row groups", H.num(len(pl.row_group_infos))), ("rows", H.num(pl.num_rows)),
             ("columns", H.num(len(pl.columns))),
             ("read", f"{pl.source.bytes_read:,} B in {pl.source.read_count:,} requests")]
    if pl.created_by:
        facts.append(("created by", H.esc(H.clip(pl.created_by, 120))))
    body = [H.card("parquet file", str(pl.location), H.facts(facts)),
            findings_html(pl.findings, max_rows=rows or H.MAX_TABLE_ROWS),
            strip_html(pl.root, expand_kinds(pl))]
    if pl.row_group_infos:
        body.append(H.details("Row groups", _table(pl.row_groups(), max_rows=rows),
                              len(pl.row_group_infos) <= EXPAND_ROW_GROUPS,
                              f" {len(pl.row_group_infos):,}"))
        chunks = pl.column_chunks()
        body.append(H.details("Column chunks", _table(chunks, max_rows=rows), False, f" {len(chunks):,}"))
    if not getattr(opts, "compact", False):
        body.append(H.details("Regions", render_region_tree_html(pl.root, expand_kinds(pl),
                                                                 max_rows=2 * (rows or 200)), False))
    return "".join(body)


def overlay_text(ov: "DeletionOverlay", opts: Any = None) -> str:
    from .text import printable

    lines = [f"DeletionOverlay({ov.layout.location!r})", "  " + ov.summary()]
    shown = ov.row_groups[["row_group", "first_row", "num_rows", "deleted", "share",
                           "fully_deleted"]].head(50)
    lines.extend("  " + line for line in shown.to_string(index=False).splitlines())
    if len(ov.row_groups) > 50:
        lines.append(f"  ... {len(ov.row_groups) - 50} more row groups")
    lines.extend(f"  {printable(str(f))}" for f in ov.findings[:20])
    return "\n".join(lines)


def overlay_html_body(ov: "DeletionOverlay", opts: Any = None) -> str:
    rows = getattr(opts, "max_rows", None)
    compact = getattr(opts, "compact", False)
    from . import html as H
    from .charts import figure_svg
    from .tables import findings_html

    facts = [("deleted", f"{ov.deleted - ov.out_of_range:,} of {ov.layout.num_rows:,} rows "
                         f"({ov.share:.1%})"),
             ("fully deleted row groups",
              f"{int(ov.row_groups.fully_deleted.sum()):,} ({ov.fully_deleted_bytes:,} B)"),
             ("fully deleted data pages",
              f"{int(ov.pages.fully_deleted.sum()):,} of {len(ov.pages):,}")]
    body = (H.card("deletion overlay", str(ov.layout.location), H.facts(facts))
            + findings_html(ov.findings, max_rows=rows or H.MAX_TABLE_ROWS)
            + ("" if compact else f'<div class="pe-chart">{figure_svg(ov.chart())}</div>')
            + H.details("Row groups", _table(ov.row_groups, max_rows=rows), len(ov.row_groups) <= EXPAND_ROW_GROUPS,
                        f" {len(ov.row_groups):,}")
            + H.details("Data pages", _table(ov.pages, max_rows=rows), False, f" {len(ov.pages):,}"))
    return body


# -- chart -------------------------------------------------------------------
BLUE, RED, ORANGE = "#1f77b4", "#d62728", "#ff7f0e"


def _edges(first_rows, num_rows) -> np.ndarray:
    first = np.asarray(first_rows, dtype=np.float64)
    return np.append(first, first[-1] + float(np.asarray(num_rows)[-1]))


def overlay_figure(overlay: "DeletionOverlay", column: Optional[str] = None):
    """Deleted share per row group (top; fully deleted ones in red) and per data page of
    ``column`` (bottom; the first column by default).

    Each panel is one step path (``stairs``), so the figure stays small however many
    row groups and pages the file has.  Uses :class:`matplotlib.figure.Figure`
    directly: no pyplot state, no GUI backend (a :class:`._figure.NotebookFigure`, which draws
    itself in a notebook).
    """
    from ._figure import NotebookFigure as Figure

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
        from .text import printable

        ax2.set_title(f"data pages of {printable(column)}", fontsize=10)
    else:
        ax2.set_title("no page row ranges known", fontsize=10)
    ax2.set_ylim(0, 1)
    ax2.set_ylabel("deleted share")
    ax2.set_xlabel("row position")
    return fig


def layout_hex(pl: "ParquetLayout", offset: Optional[int] = None, length: Optional[int] = None):
    """The annotated hex view of a Parquet file, its strip opened like the layout's."""
    from .hexview import HexView

    return HexView(pl.source, pl.root, offset, length, expand=expand_kinds(pl))


def _register() -> None:
    from .._repr import register_maker
    from ..parquet.layout import ParquetLayout
    from ..parquet.overlay import DeletionOverlay
    from .registry import register_view

    register_view(ParquetLayout, html=layout_html_body, text=layout_text, css_class="pe-parquet")
    register_view(DeletionOverlay, html=overlay_html_body, text=overlay_text, css_class="pe-parquet-overlay")
    register_maker("hex", ParquetLayout, layout_hex)
    register_maker("figure", DeletionOverlay, overlay_figure)


_register()
