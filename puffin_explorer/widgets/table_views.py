"""What the warehouse browser shows, as plain HTML strings and matplotlib figures.

Every function here works without ipywidgets, so the same views can go into a
static export.  Strings read from files are always escaped.
"""

from __future__ import annotations

import html
import io
from typing import Any, Optional

from .._text import plural

MAX_ROWS = 50


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def frame_html(df, max_rows: int = MAX_ROWS, title: str = "") -> str:
    """A DataFrame as an escaped HTML table, capped at ``max_rows`` rows."""
    head = f"<h4>{esc(title)}</h4>" if title else ""
    if df is None or len(df) == 0:
        return head + "<p><i>(none)</i></p>"
    shown = df.head(max_rows)
    more = f"<p><i>{len(df) - max_rows:,} more rows not shown</i></p>" if len(df) > max_rows else ""
    return head + shown.to_html(escape=True, index=False, border=0, classes="pe-table") + more


def rich_html(obj: Any) -> Optional[str]:
    """The object's own HTML view (``_repr_mimebundle_`` / ``_repr_html_``), or None when it has none that works."""
    try:
        bundle = obj._repr_mimebundle_() if hasattr(obj, "_repr_mimebundle_") else None
        if isinstance(bundle, tuple):
            bundle = bundle[0]
        if isinstance(bundle, dict) and bundle.get("text/html"):
            return str(bundle["text/html"])
        if hasattr(obj, "_repr_html_"):
            out = obj._repr_html_()
            if out:
                return str(out)
    except Exception:  # a missing or failing display layer must not break the browser
        return None
    return None


def snapshot_label(row, deleted_rows: Optional[int] = None) -> str:
    """One line for the snapshot timeline: time, operation, what the commit added and removed (its summary),
    and ``deleted_rows``, the snapshot's deleted rows as ``timeline()`` counts them."""
    import pandas as pd

    when = row["timestamp"]
    parts = ["time unknown" if when is None or when is pd.NaT else when.strftime("%Y-%m-%d %H:%M:%S"),
             str(row["operation"])]
    for col, text in (("added_data_files", "+{}"), ("added_dvs", "+{}"), ("removed_dvs", "-{}"),
                      ("added_position_deletes", "{} added")):
        value = row.get(col)
        if value is not None and str(value) != "<NA>" and int(value) > 0:
            noun = {"added_data_files": "data file", "added_dvs": "DV", "removed_dvs": "DV"}.get(col, "deleted row")
            parts.append(text.format(plural(int(value), noun)))
    if deleted_rows is not None and str(deleted_rows) != "<NA>" and int(deleted_rows) > 0:
        parts.append(f"{plural(int(deleted_rows), 'deleted row')} in total")
    return " · ".join(parts) + f" · {row['snapshot_id']}"


def snapshots_html(table) -> str:
    """The snapshot timeline as a table."""
    df = table.snapshots()
    cols = ["snapshot_id", "timestamp", "operation", "added_data_files", "added_dvs", "removed_dvs",
            "added_position_deletes", "total_position_deletes", "total_records", "is_current"]
    return frame_html(df[cols], title=f"{table.name}: {plural(len(df), 'snapshot', sep='')}")


def files_frame(table, snapshot_id: Optional[int]):
    """Data, delete and statistics files of a snapshot in one frame (``kind`` says which)."""
    import pandas as pd

    files = table.files(snapshot_id, decode=False)  # bounds are decoded for the one file shown
    stats = table.statistics_files()
    snap = table.snapshot(snapshot_id).snapshot_id
    stats = stats[stats.snapshot_id == snap]
    rows = pd.DataFrame({
        "kind": ["stats" if k == "table" else "partition-stats" for k in stats.kind],
        "file_path": stats.statistics_path, "location": stats.location,
        "record_count": [None] * len(stats), "file_size_in_bytes": stats.file_size_in_bytes,
    })
    return pd.concat([files, rows], ignore_index=True)


def file_label(row) -> str:
    name = str(row["file_path"]).rsplit("/", 1)[-1]
    kind = row["kind"]
    if kind == "dv":
        ref = str(row.get("referenced_data_file") or "").rsplit("/", 1)[-1]
        return f"[dv] {name} @{row['content_offset']} -> {ref} ({plural(int(row['record_count']), 'row')})"
    if kind in ("stats", "partition-stats"):
        return f"[{kind}] {name}"
    return f"[{kind}] {name} ({plural(int(row['record_count']), 'row')})"


def positions_ranges(positions):
    """Consecutive runs of positions as a DataFrame (start, end exclusive, length)."""
    import numpy as np
    import pandas as pd

    p = np.asarray(positions, dtype=np.int64)
    if p.size == 0:
        return pd.DataFrame({"start": [], "end": [], "length": []}, dtype="int64")
    breaks = np.flatnonzero(np.diff(p) != 1) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [p.size]])
    return pd.DataFrame({"start": p[starts], "end": p[ends - 1] + 1, "length": ends - starts})


def bounds_html(table, row) -> str:
    """Column metrics of one file: typed lower/upper bounds and counts by column name."""
    import pandas as pd

    from ..iceberg.bounds import column_names, decode_bounds

    fields = table.fields_by_id()
    lower = decode_bounds(row.get("lower_bounds"), fields)
    upper = decode_bounds(row.get("upper_bounds"), fields)

    def counts(name: str) -> dict:
        raw = row.get(name)
        if isinstance(raw, dict):
            return raw
        return column_names(raw, fields)

    nulls, values = counts("null_value_counts"), counts("value_counts")
    columns = list(dict.fromkeys([*lower, *upper, *values]))
    if not columns:
        return ""
    frame = pd.DataFrame({"column": columns, "lower": [lower.get(c) for c in columns],
                          "upper": [upper.get(c) for c in columns], "values": [values.get(c) for c in columns],
                          "nulls": [nulls.get(c) for c in columns]})
    return frame_html(frame, title="column bounds")


def data_file_html(table, row, snapshot_id: Optional[int], spark: Any = None,
                   spark_table: Optional[str] = None) -> str:
    """A data file's deletions: count, share, position runs; with Spark, the deleted rows themselves."""
    positions = table.deletions(row["file_path"], snapshot_id)
    n = int(row["record_count"] or 0)
    share = (len(positions) / n) if n else 0.0
    parts = [f"<h4>data file {esc(row['file_path'])}</h4>",
             f"<p>{plural(n, 'row')} · <b>{len(positions):,} deleted</b> ({share:.1%}) · "
             f"{n - len(positions):,} live</p>"]
    parts.append(frame_html(positions_ranges(positions), title="deleted positions (runs)"))
    parts.append(bounds_html(table, row))
    if len(positions):
        first = ", ".join(str(int(p)) for p in positions[:20])
        parts.append(f"<p>first positions: {esc(first)}{' …' if len(positions) > 20 else ''}</p>")
    if spark is not None and len(positions):
        parts.append(_spark_rows_html(table, row, spark, spark_table))
    return "".join(parts)


def _spark_rows_html(table, row, spark: Any, spark_table: Optional[str]) -> str:
    try:
        from ..spark import deleted_rows  # optional: the Spark layer may not be installed
    except ImportError:
        return "<p><i>deleted rows: the Spark helpers are not available; positions are shown above</i></p>"
    try:
        df = deleted_rows(spark, spark_table or table, row["file_path"])  # a Table is planned here, moved or not
        return frame_html(df.limit(MAX_ROWS).toPandas(), title="deleted rows (Spark)")
    except Exception as exc:  # show why, keep the positions
        return f"<p><i>deleted rows via Spark failed: {esc(type(exc).__name__)}: {esc(exc)}</i></p>"


def puffin_html(table, path: str) -> str:
    """The PuffinFile's own view when the display layer provides one, else its blob table."""
    import pandas as pd

    try:
        pf = table.puffin(path)
    except Exception as exc:
        return f"<p><b>cannot open {esc(path)}</b>: {esc(exc)}</p>"
    head = (f"<h4>Puffin file {esc(path)}</h4><p>{plural(pf.size, 'byte')} · {plural(len(pf.blobs), 'blob', sep='')} · "
            f"properties {esc(pf.properties)}</p>")
    rich = rich_html(pf)
    if rich:
        return head + rich
    blobs = pd.DataFrame([{k: v for k, v in b.to_dict().items()} for b in pf.blobs])
    findings = pd.DataFrame([f.to_dict() for f in pf.footer_findings]) if pf.footer_findings else None
    return (head + frame_html(blobs, title="blobs")
            + (frame_html(findings, title="findings") if findings is not None else ""))


def dv_html(table, row) -> str:
    """One DV (read by its range) and the Puffin file that holds it."""
    parts = [f"<h4>deletion vector for {esc(row.get('referenced_data_file'))}</h4>",
             f"<p>in {esc(row['file_path'])} at offset {int(row['content_offset']):,}, "
             f"{plural(int(row['content_size_in_bytes']), 'byte')} · manifest record_count {int(row['record_count']):,}</p>"]
    try:
        dv = table.read_dv(row)
        rich = rich_html(dv)
        parts.append(rich if rich else
                     f"<p>cardinality {dv.cardinality:,}</p>" + frame_html(dv.ranges(), title="deleted ranges"))
    except Exception as exc:
        parts.append(f"<p><b>cannot read the DV</b>: {esc(exc)}</p>")
    parts.append(puffin_html(table, row["file_path"]))
    return "".join(parts)


def file_detail_html(table, row, snapshot_id: Optional[int] = None, spark: Any = None,
                     spark_table: Optional[str] = None) -> str:
    """The detail view of any file row of :func:`files_frame`."""
    kind = row["kind"]
    try:
        if kind == "data":
            return data_file_html(table, row, snapshot_id, spark, spark_table)
        if kind == "dv":
            return dv_html(table, row)
        if kind in ("stats", "partition-stats"):
            return puffin_html(table, row["file_path"]) if kind == "stats" else \
                f"<p>partition statistics file {esc(row['file_path'])}</p>"
        contents = table.delete_file_contents(row["file_path"], snapshot_id)
        eq = row.get("equality_ids")
        head = (f"<h4>{esc(kind)} file {esc(row['file_path'])}</h4><p>{plural(len(contents), 'row')}"
                + (f" · equality field ids {esc(list(eq))}" if eq is not None and len(eq) else "") + "</p>")
        return head + frame_html(contents)
    except Exception as exc:
        return f"<p><b>cannot show {esc(row['file_path'])}</b>: {esc(type(exc).__name__)}: {esc(exc)}</p>"


def deleted_rows_figure(table, snapshot_id: Optional[int] = None, per_file=None, max_bars: int = 60):
    """Deleted rows per data file and the share of each file deleted (the compaction question).

    Up to ``max_bars`` files get one bar each, sorted by share deleted; more
    files are binned into histograms (how many files have how much deleted),
    so the figure stays small whatever the table's size.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import numpy as np
    from matplotlib.figure import Figure

    df = per_file if per_file is not None else table.deleted_rows_per_file(snapshot_id)
    df = df.sort_values("deleted_share", ascending=False).reset_index(drop=True)
    fig = Figure(figsize=(8, 3.2), dpi=100)
    ax1, ax2 = fig.subplots(1, 2)
    if len(df) <= max_bars:
        x = np.arange(len(df))
        ax1.bar(x, df.deleted_rows, color="#c0392b", width=0.8)
        ax1.set_title("deleted rows per data file")
        ax1.set_xlabel("data files (by share deleted)")
        ax2.bar(x, df.deleted_share * 100, color="#2c7fb8", width=0.8)
        ax2.set_ylim(0, 100)
        ax2.set_title("share of each file deleted (%)")
        ax2.set_xlabel("data files (by share deleted)")
    else:
        ax1.hist(df.deleted_rows, bins=40, color="#c0392b")
        ax1.set_title(f"deleted rows per data file ({plural(len(df), 'file')})")
        ax1.set_xlabel("deleted rows")
        ax1.set_ylabel("data files")
        ax2.hist(df.deleted_share * 100, bins=np.linspace(0, 100, 21), color="#2c7fb8")
        ax2.set_title("share of each file deleted")
        ax2.set_xlabel("% of the file's rows deleted")
        ax2.set_ylabel("data files")
    fig.tight_layout()
    return fig


def figure_svg(fig) -> str:
    """A matplotlib figure as an inline SVG string."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    text = buf.getvalue()
    return text[text.find("<svg"):]


#: Columns of the browser's doctor overview, one row per table.
HEALTH_COLUMNS = ["table", "status", "findings", "top_problem", "data_files", "small_files", "delete_files",
                  "deleted_share", "snapshots", "snapshots_past_retention"]


def warehouse_health_html(health) -> str:
    """``Warehouse.health()`` as a table: one row per table, worst status and top problem."""
    df = health[[c for c in HEALTH_COLUMNS if c in health.columns]].copy()
    if "deleted_share" in df:
        df["deleted_share"] = df["deleted_share"].map(lambda v: "" if v is None or v != v else f"{float(v):.1%}")
    df["findings"] = df["findings"].astype("Int64")
    bad = int((health["status"] != "ok").sum()) if len(health) else 0
    return frame_html(df, title=f"doctor: {plural(len(health), 'table')}, {bad:,} with warnings or errors "
                                f"(no storage listing: orphan files: t.health())")


def table_health_html(table, now: Any = None, list_files: bool = False) -> str:
    """The doctor's view of one table (its findings and the statements that fix them)."""
    h = table.health(now=now, list_files=list_files)
    return rich_html(h) or f"<pre>{esc(h.to_dict())}</pre>"
