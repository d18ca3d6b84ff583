"""Views of Delta Lake tables and Delta DV files (formatting only: every number comes from the model)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._text import plural
from ..coverage import UNKNOWN
from ..delta import DeltaDVFile, DeltaTable
from . import html as H
from . import text as T
from .layout import strip_html, strip_text
from .registry import RenderOptions, register_view
from .table_view import _health_html, _safe
from .tables import findings_html, findings_text, region_tree_text, render_region_tree_html

_VERSION_COLS = ["version", "timestamp", "operation", "added_files", "removed_files", "added_dvs", "removed_dvs",
                 "data_files", "records", "deleted_rows", "live_rows"]
_DV_COLS = ["data_file", "storage_type", "offset", "size_in_bytes", "cardinality", "num_records", "dv_file"]


def _name(path: Any) -> str:
    return "" if path is None else str(path).rstrip("/").rsplit("/", 1)[-1]


def _cell(value: Any) -> Any:
    """A cell as the table shows it: numbers and strings as they are, nulls (None, NaN, NA, NaT) empty, anything
    else (a dict, a list) as its text."""
    import pandas as pd

    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, float) and value != value:
        return ""
    if isinstance(value, (str, int, float, np.integer, np.floating, pd.Timestamp)):
        return value
    return str(value)


#: Columns of the versions table that a missing commit leaves unknown (None) rather than smaller.
_COUNTED = {"data_files", "records", "deleted_rows", "live_rows", "dvs"}


def _rows(df, cols, names=(), counted=()):
    """Cells of ``cols``; a null in a ``counted`` column is :data:`~puffin_explorer.coverage.UNKNOWN`."""
    for rec in df[cols].itertuples(index=False):
        yield [_name(v) if c in names and isinstance(v, str) else
               UNKNOWN if c in counted and _cell(v) == "" else _cell(v) for c, v in zip(cols, rec)]


def table_html(t: DeltaTable, opts: RenderOptions = RenderOptions()) -> str:
    versions, dvs = t.versions(), t.dvs()  # first: reading later commits may add findings
    tot = t.totals()

    def num(v: Any) -> str:  # a count a missing commit leaves unknown says so, never a smaller number
        return H.esc(UNKNOWN) if v is None else H.num(v)

    share = tot["deleted_rows"] / tot["records"] if tot["records"] else 0.0
    deleted = H.esc(UNKNOWN) if tot["deleted_rows"] is None else f"{tot['deleted_rows']:,} ({share:.2%})"
    facts = [("version", f"{t.version:,}"), ("data files", num(tot["data_files"])), ("rows", num(tot["records"])),
             ("DVs", num(tot["dvs"])), ("deleted", deleted), ("live rows", num(tot["live_rows"])),
             ("reader features", H.esc(", ".join(t.reader_features) or "none"))]
    found = findings_html(t.findings, max_rows=opts.max_rows)
    health = _safe("health", lambda: _health_html(t, opts))
    errors = any(getattr(f.severity, "value", f.severity) == "error" for f in t.findings)
    # the doctor's checks at the top, after the findings when the log is damaged
    parts = [H.card("Delta table", t.location, H.facts(facts))] + ([found, health] if errors else [health, found])
    parts.append(H.details("Versions", H.table(_VERSION_COLS, _rows(versions, _VERSION_COLS, counted=_COUNTED),
                                               total=len(versions),
                                               max_rows=opts.max_rows), True, f" {len(versions):,}"))
    parts.append(H.details("Deletion vectors", H.table(_DV_COLS, _rows(dvs, _DV_COLS, {"data_file", "dv_file"}),
                                                       total=len(dvs), max_rows=opts.max_rows),
                           not opts.compact, f" {len(dvs):,}"))
    per = t.compaction_candidates(min_share=0.0).head(opts.max_rows)
    cols = ["file_path", "record_count", "deleted_rows", "deleted_share"]
    rows = ([_name(r.file_path), r.record_count, r.deleted_rows, f"{r.deleted_share:.2%}"] for r in per.itertuples())
    parts.append(H.details("Deleted share per data file (most deleted first)", H.table(cols, rows, total=len(per),
                           max_rows=opts.max_rows), False))
    parts.append('<div class="pe-note">t.check() cross-checks every descriptor with its DV file</div>')
    return "".join(parts)


def table_text(t: DeltaTable, opts: RenderOptions = RenderOptions()) -> str:
    versions, dvs = t.versions(), t.dvs()  # first: reading later commits may add findings
    lines = [f"DeltaTable  {T.printable(t.location)}", "  " + T.printable(t.summary())]
    ft = findings_text(t.findings)
    if ft:
        lines.append(ft)
    lines.append("versions")
    shown = _VERSION_COLS[:1] + _VERSION_COLS[2:]
    lines.append(T.table(shown, _rows(versions, shown, counted=_COUNTED),
                         right=[0, *range(2, 10)], total=len(versions)))
    if len(dvs):
        cols = _DV_COLS[:6]
        lines.append("deletion vectors")
        lines.append(T.table(cols, _rows(dvs, cols, {"data_file"}), right=(2, 3, 4, 5), total=len(dvs)))
    return "\n".join(lines)


def dv_file_html(f: DeltaDVFile, opts: RenderOptions = RenderOptions()) -> str:
    df = f.to_pandas()
    facts = [("size", f"{f.size:,} B"), ("version byte", H.esc(f.version)), ("DVs", H.num(len(df))),
             ("positions", H.num(int(df.cardinality.sum()) if len(df) else 0)),
             ("state", H.badge("valid", "ok") if f.is_valid else H.badge(f"{plural(len(f.findings.errors), 'error', sep='')}", "error"))]
    root = f.regions()
    cols = ["index", "offset", "size_in_bytes", "length", "cardinality", "min_position", "max_position", "crc_ok",
            "data_files"]
    rows = ([r.index, r.offset, r.size_in_bytes, r.length, r.cardinality, r.min_position, r.max_position,
             "ok" if r.crc_ok else "BAD", ", ".join(_name(p) for p in r.data_files)] for r in df.itertuples())
    parts = [H.card("Delta DV file", f.location, H.facts(facts)), findings_html(f.findings, max_rows=opts.max_rows),
             strip_html(root), H.details("DVs", H.table(cols, rows, total=len(df), max_rows=opts.max_rows), True,
                                         f" {len(df):,}")]
    if not opts.compact:
        parts.append(H.details("Byte regions", render_region_tree_html(root, table_rows=opts.max_rows), False))
    return "".join(parts)


def dv_file_text(f: DeltaDVFile, opts: RenderOptions = RenderOptions()) -> str:
    root = f.regions()
    lines = [f"DeltaDVFile  {T.printable(f.location)}", "  " + f.summary()]
    ft = findings_text(f.findings)
    if ft:
        lines.append(ft)
    lines.append("layout " + strip_text(root))
    df = f.to_pandas()
    cols = ["index", "offset", "size_in_bytes", "cardinality", "min_position", "max_position", "crc_ok"]
    lines.append(T.table(cols, df[cols].itertuples(index=False), right=range(0, 6), total=len(df)))
    lines.append(region_tree_text(root))
    return "\n".join(lines)


register_view(DeltaTable, html=table_html, text=table_text, css_class="pe-delta")
register_view(DeltaDVFile, html=dv_file_html, text=dv_file_text, css_class="pe-delta-dv")
