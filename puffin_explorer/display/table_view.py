"""Cards of Iceberg warehouses, tables, snapshots, commit deletes and delete debt.

Models compute (``Warehouse.summary()``, ``Table.timeline()``, ``Table.delete_debt()``,
``TableSnapshot.changes()``, ``CommitDeletes.to_pandas()``); this module only formats.
A section whose data cannot be read (a missing manifest, truncated Avro) shows why
instead of the section, so a damaged table still renders its card.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from . import html as H
from . import text as T
from .._text import plural, plural_noun
from ..coverage import UNKNOWN
from ..iceberg.columns import partition_text
from ..io.errors import shown
from .registry import RenderOptions, register_view
from .tables import findings_html, findings_text

_HEALTH_CLASS = {"ok": "pe-ok", "empty": "pe-muted", "compact": "pe-warning", "warning": "pe-warning",
                 "error": "pe-error"}


def _name(path: Any) -> str:
    """The file name of ``path``; a damaged one of any length shown by its start and end."""
    return "" if _missing(path) else shown(str(path).rstrip("/").rsplit("/", 1)[-1], 300)


def _missing(v: Any) -> bool:
    import pandas as pd

    try:
        return v is None or bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _n(v: Any) -> str:
    if _missing(v):
        return ""
    try:
        return f"{int(v):,}"
    except (TypeError, ValueError):
        return str(v)


def _counted(v: Any, noun: str) -> str:
    """``v`` and ``noun`` agreeing in number (``1 data file``); a missing count reads ``? data files``."""
    return plural("?" if _missing(v) else v, noun)


def _count(r: dict, key: str, fmt: Callable[[Any], str]) -> str:
    """A count of a summary row: :data:`~puffin_explorer.coverage.UNKNOWN` when the row says files it depends
    on could not be read, else ``fmt(value)``."""
    return UNKNOWN if key in (r.get("unknown") or ()) else fmt(r.get(key))


def _partial(known: Any, counted: Any, cov: Any) -> str:
    """A count, or :data:`~puffin_explorer.coverage.UNKNOWN` and its partial count labelled (``≥ 27,924: 3 of 4
    manifests read``) when it is not known."""
    if known is not None:
        return f"{known:,}"
    at_least = cov.at_least(counted)
    return f"{UNKNOWN}; {at_least}" if at_least else UNKNOWN


def _share(v: Any) -> str:
    if _missing(v):
        return ""
    try:
        return f"{float(v):.1%}"
    except (TypeError, ValueError):
        return ""


def _time(ts: Any) -> str:
    try:
        return ts.strftime("%Y-%m-%d %H:%M:%S")
    except (AttributeError, ValueError):
        return ""


def _safe(title: str, build: Callable[[], str]) -> str:
    """A section, or one line saying why it cannot be drawn."""
    try:
        return build()
    except Exception as exc:  # a damaged table still renders the rest of its card
        return (f'<div class="pe-note"><span class="pe-error">{H.esc(title)}</span>: '
                f"{H.esc(type(exc).__name__)}: {H.esc(H.clip(exc, 400))}</div>")


def _safe_text(title: str, build: Callable[[], str]) -> str:
    try:
        return build()
    except Exception as exc:
        return f"{title}: {type(exc).__name__}: {T.printable(T.cut(str(exc), 300))}"


def _frame_table(df, columns: list[tuple[str, str, str]], opts: RenderOptions, hint: str,
                 total: Optional[int] = None) -> str:
    """``columns``: (frame column, header, css class); numbers formatted, strings escaped."""
    rows = []
    for rec in df.head(opts.max_rows).itertuples(index=False):
        d = rec._asdict()
        rows.append([_cell(d.get(col), cls) for col, _, cls in columns])
    return H.table([h for _, h, _ in columns], rows, [c for _, _, c in columns],
                   total=len(df) if total is None else total, more_hint=hint,
                   max_rows=opts.max_rows, max_cell_chars=opts.max_cell_chars)


def _cell(v: Any, cls: str) -> Any:
    if "pe-num" in cls:
        return _n(v)
    if _missing(v):
        return ""
    if hasattr(v, "strftime"):
        return _time(v)[:16]
    return v


# ---- warehouse --------------------------------------------------------------------------------
_WH_COLUMNS = [("table", "table", "pe-mono"), ("format_version", "v", "pe-num"), ("snapshots", "snaps", "pe-num"),
               ("live_rows", "live rows", "pe-num"), ("deleted_rows", "deleted", "pe-num"),
               ("deleted_share", "share", "pe-num"), ("data_files", "data files", "pe-num"),
               ("deletes", "DV/pos/eq files", "pe-nowrap"), ("stats_files", "stats", "pe-num"),
               ("last_commit", "last commit (UTC)", "pe-nowrap"), ("health", "health", "pe-nowrap")]


def _delete_kinds(r: dict) -> str:
    return " / ".join(_n(r[k]) or "?" for k in ("dvs", "position_delete_files", "equality_delete_files"))


def _live_total(df: Any) -> str:
    """The warehouse's live rows: :data:`~puffin_explorer.coverage.UNKNOWN` when a table's are not known (a
    sum without them would be a smaller number)."""
    if not len(df):
        return "0"
    if df.live_rows.isna().any():
        return UNKNOWN
    return _n(df.live_rows.sum())


def warehouse_html(wh: Any, opts: RenderOptions = RenderOptions()) -> str:
    df = wh.summary()
    namespaces = sorted(set(df.namespace.fillna(""))) if len(df) else []
    bad = int((df.health == "error").sum()) if len(df) else 0
    head = H.facts([("tables", f"<b>{len(df):,}</b>"), ("namespaces", f"{len(namespaces):,}"),
                    ("live rows", H.esc(_live_total(df))),
                    ("unreadable", f'<span class="pe-error">{bad}</span>' if bad else "0")])
    parts = [H.card("Iceberg warehouse", str(wh.root), head)]
    for ns in namespaces:
        sub = df[df.namespace.fillna("") == ns]
        rows = []
        for r in sub.head(opts.max_rows).to_dict("records"):
            health = str(r["health"])
            badge = f'<span class="{_HEALTH_CLASS.get(health, "")}" title={H.attr(r["problem"] or health)}>' \
                    f"{H.esc(health)}</span>"
            cells = []
            for col, _, cls in _WH_COLUMNS[:-1]:
                value = _count(r, col, _share) if col == "deleted_share" else _delete_kinds(r) if col == "deletes" \
                    else _count(r, col, lambda v, cls=cls: _cell(v, cls))
                cells.append(H.esc(value))
            rows.append(cells + [badge])
        table = H.table([h for _, h, _ in _WH_COLUMNS], rows, [c for _, _, c in _WH_COLUMNS], total=len(sub),
                        more_hint="wh.summary() has all", raw_html_columns=tuple(range(len(_WH_COLUMNS))),
                        max_rows=opts.max_rows)
        parts.append(H.details(H.esc(ns or "(no namespace)"), table, True, f" {plural(len(sub), 'table')}"))
    problems = df[(df.health != "ok") & df.problem.fillna("").astype(bool)] if len(df) else df
    if len(problems):
        items = "".join(f'<li><span class="pe-mono">{H.esc(r["table"])}</span> '
                        f'<span class="{_HEALTH_CLASS.get(str(r["health"]), "")}">{H.esc(r["health"])}</span>: '
                        f'{H.esc(H.clip(r["problem"], 300))}</li>' for r in problems.head(opts.max_rows).to_dict("records"))
        parts.append(H.details("Health", f"<ul>{items}</ul>", bool((problems.health == "error").any()),
                               f" {plural(len(problems), 'table')}"))
    if not len(df):
        parts.append('<div class="pe-note">no tables found</div>')
    return "".join(parts)


def warehouse_text(wh: Any, opts: RenderOptions = RenderOptions()) -> str:
    df = wh.summary()
    lines = [f"Iceberg warehouse {T.printable(wh.root)}: {plural(len(df), 'table')}, live rows {_live_total(df)}"]
    rows = [[r["table"], _n(r["format_version"]), _n(r["snapshots"]), _count(r, "live_rows", _n),
             _count(r, "deleted_rows", _n), _count(r, "deleted_share", _share), _count(r, "data_files", _n),
             _delete_kinds(r), _n(r["stats_files"]),
             _time(r["last_commit"]), r["health"] + (f": {r['problem']}" if r["problem"] and r["health"] != "ok" else "")]
            for r in df.head(T.MAX_TEXT_ROWS).to_dict("records")]
    lines.append(T.table([h for _, h, _ in _WH_COLUMNS], rows, right=range(1, 9), total=len(df)))
    return "\n".join(lines)


# ---- table ------------------------------------------------------------------------------------
_TIMELINE_COLUMNS = [("sequence_number", "seq", "pe-num"), ("snapshot_id", "snapshot id", "pe-mono"),
                     ("timestamp", "committed (UTC)", "pe-nowrap"), ("operation", "operation", ""),
                     ("added_records", "+records", "pe-num"), ("live_rows", "live rows", "pe-num"),
                     ("deleted_rows", "deleted", "pe-num"), ("files", "data / del. files", "pe-nowrap")]
_LINEAGE_COLUMNS = [("first_row_id", "first row id", "pe-num")]


def _table_facts(t: Any) -> str:
    md = t.metadata
    snap = md.snapshot()
    items = [("format", f"<b>v{md.format_version}</b>"), ("location", f'<span class="pe-mono">{H.esc(md.location)}</span>'),
             ("snapshots", f"{len(md.snapshots):,}"),
             ("current snapshot", H.esc(snap.snapshot_id) if snap else "none")]
    if md.next_row_id is not None:
        items.append(("next-row-id", f"{md.next_row_id:,}"))
    if md.table_uuid:
        items.append(("uuid", f'<span class="pe-mono">{H.esc(md.table_uuid)}</span>'))
    items.append(("metadata", f'<span class="pe-mono">{H.esc(_name(t.metadata_location))}</span>'))
    return H.facts(items)


def _totals_html(t: Any) -> str:
    r = t.summary()
    deleted = UNKNOWN if "deleted_rows" in r["unknown"] else f"{_n(r['deleted_rows'])} ({_share(r['deleted_share'])})"
    items = [("records", H.esc(_count(r, "records", _n))), ("live rows", f"<b>{H.esc(_count(r, 'live_rows', _n))}</b>"),
             ("deleted", H.esc(deleted)), ("data files", H.esc(_count(r, "data_files", _n))),
             ("DVs", H.esc(_count(r, "dvs", _n))),
             ("position-delete files", H.esc(_count(r, "position_delete_files", _n))),
             ("equality-delete files", H.esc(_count(r, "equality_delete_files", _n))),
             ("stats files", _n(r["stats_files"])),
             ("health", f'<span class="{_HEALTH_CLASS.get(str(r["health"]), "")}">{H.esc(r["health"])}</span>')]
    return H.facts(items)


def _timeline_html(t: Any, opts: RenderOptions) -> str:
    df = t.timeline()
    chart = ""
    if not opts.compact and len(df):
        from .table_charts import timeline_svg

        chart = f'<div class="pe-chart">{timeline_svg(df)}</div>'
    shown = df.iloc[::-1].reset_index(drop=True)  # newest first
    shown = shown.assign(files=[f"{_n(d)} / {_n(x)}" for d, x in zip(shown.data_files, shown.delete_files)],
                         live_rows=_timeline_counts(shown.live_rows), deleted_rows=_timeline_counts(shown.deleted_rows))
    cols = _TIMELINE_COLUMNS + (_LINEAGE_COLUMNS if shown.first_row_id.notna().any() else [])
    table = _frame_table(shown, cols, opts, "t.timeline() has all")
    return H.details("Snapshot timeline", chart + table, True, f" {plural(len(df), 'commit')}")


def _timeline_counts(column) -> list:
    """A timeline column of rows after each commit: a count, or :data:`~puffin_explorer.coverage.UNKNOWN` where
    the snapshot's files could not be read (the timeline leaves it None, never a smaller number)."""
    return [UNKNOWN if _missing(v) else f"{int(v):,}" for v in column]


def _schema_html(t: Any, opts: RenderOptions) -> str:
    df = t.schema_fields()
    cols = [("id", "id", "pe-num"), ("name", "name", "pe-mono"), ("type", "type", "pe-mono"),
            ("required", "required", "")]
    if df.initial_default.notna().any() or df.write_default.notna().any():
        cols += [("initial_default", "initial default", "pe-mono"), ("write_default", "write default", "pe-mono")]
    if df.doc.notna().any():
        cols.append(("doc", "doc", "pe-wrap"))
    df = df.assign(required=df.required.map(lambda b: "required" if b else "optional"))
    body = _frame_table(df, cols, opts, "t.schema_fields() has all")
    spec = t.partition_spec()
    if len(spec):
        body += "<div><i>partition spec</i></div>" + _frame_table(
            spec, [("field_id", "field id", "pe-num"), ("name", "name", "pe-mono"), ("transform", "transform", "pe-mono"),
                   ("source", "source column", "pe-mono")], opts, "t.partition_spec()")
    else:
        body += '<div class="pe-note">unpartitioned</div>'
    order = t.sort_order()
    if len(order):
        body += "<div><i>sort order</i></div>" + _frame_table(
            order, [("source", "column", "pe-mono"), ("transform", "transform", "pe-mono"),
                    ("direction", "direction", ""), ("null_order", "nulls", "")], opts, "t.sort_order()")
    return H.details("Schema", body, not opts.compact, f" {plural(len(df), 'field')}")


def _properties_html(t: Any, opts: RenderOptions) -> str:
    props = t.metadata.properties
    if not props:
        return ""
    rows = [[k, v] for k, v in sorted(props.items())]
    table = H.table(["property", "value"], rows, ["pe-mono", "pe-mono pe-wrap"], total=len(rows), max_rows=opts.max_rows)
    return H.details("Properties", table, False, f" {len(rows):,}")


def _debt_html(debt: Any, opts: RenderOptions) -> str:
    from .tables import findings_html

    gone = findings_html(debt.findings, max_rows=opts.max_rows) if debt.findings else ""
    facts = gone + H.facts([(k, f"<b>{H.esc(v)}</b>") for k, v in _debt_facts(debt)]
                           + [("threshold", f"{debt.threshold:.0%}")])
    part = debt.per_partition()
    shown_part = part.head(opts.max_rows)  # only the rows a table shows are formatted
    body = facts + "<div><i>per partition</i></div>" + _frame_table(
        shown_part.assign(deleted_share=shown_part.deleted_share.map(_share)),
        [("partition", "partition", "pe-mono"), ("data_files", "data files", "pe-num"),
         ("record_count", "records", "pe-num"), ("deleted_rows", "deleted", "pe-num"),
         ("deleted_share", "share", "pe-nowrap"), ("candidates", "candidates", "pe-num")], opts,
        "debt.per_partition() has all", total=len(part))
    cand = debt.candidates(limit=opts.max_rows)
    if len(cand):
        top = cand.head(opts.max_rows)
        body += "<div><i>compaction candidates (most deleted first)</i></div>" + _frame_table(
            top.assign(file=top.file_path.map(_name), deleted_share=top.deleted_share.map(_share)),
            [("file", "data file", "pe-mono pe-wrap"), ("partition", "partition", "pe-mono"),
             ("record_count", "records", "pe-num"), ("deleted_rows", "deleted", "pe-num"),
             ("deleted_share", "share", "pe-nowrap"), ("dvs", "DVs", "pe-num"),
             ("position_delete_files", "pos. delete files", "pe-num")], opts, "debt.candidates() has all",
            total=debt.candidate_count)
    pos = debt.position_delete_files()
    if len(pos):
        top = pos.head(opts.max_rows)
        body += "<div><i>position-delete files still live</i></div>" + _frame_table(
            top.assign(file=top.file_path.map(_name)),
            [("file", "file", "pe-mono pe-wrap"), ("record_count", "rows", "pe-num"),
             ("file_size_in_bytes", "bytes", "pe-num"), ("sequence_number", "seq", "pe-num")], opts,
            "debt.position_delete_files() has all", total=len(pos))
    return body


def _debt_facts(debt: Any) -> list[tuple[str, str]]:
    """(label, text) of delete debt's totals: ``27,924 of 121,964 rows (22.9%)``; a total that is not known is
    :data:`~puffin_explorer.coverage.UNKNOWN`, with its partial count labelled where there is one."""
    cov = debt.coverage
    if debt.deleted_rows is not None and debt.records is not None:
        deleted = [("deleted", f"{debt.deleted_rows:,} of {plural(debt.records, 'row')} ({debt.deleted_share:.1%})")]
    else:
        deleted = [("deleted rows", _partial(debt.deleted_rows, debt.counted_deleted_rows, cov)),
                   ("records", _partial(debt.records, debt.counted_records, cov))]
    n = UNKNOWN if debt.candidate_count is None else f"{debt.candidate_count:,}"
    return deleted + [("compaction candidates", n if debt.data_files is None else
                       f"{n} of {plural(debt.data_files, 'data file')}")]


def _files_html(t: Any, opts: RenderOptions) -> str:
    counts = t.file_counts()

    def section(title: str, kinds: list[str], cols, hint: str, extra) -> str:
        total = sum(counts.get(k, 0) for k in kinds)
        if not total:
            return ""
        shown = t.files_of_kind(kinds, limit=opts.max_rows)  # only the rows a table shows
        return H.details(title, _frame_table(extra(shown), cols, opts, hint, total=total), False, f" {total:,}")

    def data_extra(df):
        last = [None if _missing(f) else int(f) + int(n) - 1 for f, n in zip(df.first_row_id, df.record_count)]
        return df.assign(file=df.file_path.map(_name), partition=df.partition.map(_part), last_row_id=last)

    data_cols = [("file", "data file", "pe-mono pe-wrap"), ("partition", "partition", "pe-mono"),
                 ("record_count", "records", "pe-num"), ("file_size_in_bytes", "bytes", "pe-num"),
                 ("sequence_number", "seq", "pe-num")]
    if counts.get("data") and t.files_of_kind(["data"], limit=opts.max_rows).first_row_id.notna().any():
        data_cols += [("first_row_id", "first row id", "pe-num"), ("last_row_id", "last row id", "pe-num")]
    parts = [section("Data files", ["data"], data_cols, "t.data_files() has all", data_extra),
             section("Deletion vectors", ["dv"], [
                 ("file", "Puffin file", "pe-mono pe-wrap"), ("content_offset", "offset", "pe-num"),
                 ("content_size_in_bytes", "bytes", "pe-num"), ("record_count", "deleted rows", "pe-num"),
                 ("data_file", "data file", "pe-mono pe-wrap")], "t.dvs() has all",
                 lambda df: df.assign(file=df.file_path.map(_name), data_file=df.referenced_data_file.map(_name))),
             section("Delete files", ["position-deletes", "equality-deletes"], [
                 ("kind", "kind", ""), ("file", "file", "pe-mono pe-wrap"), ("record_count", "rows", "pe-num"),
                 ("file_size_in_bytes", "bytes", "pe-num")], "t.delete_files() has all",
                 lambda df: df.assign(file=df.file_path.map(_name)))]
    return "".join(parts)


def _part(value: Any) -> str:
    """A file's partition in a file list: its text, blank for none (an unpartitioned table's files)."""
    return partition_text(value) if value else ""


def _stats_html(t: Any, opts: RenderOptions) -> str:
    df = t.statistics_files()
    if not len(df):
        return ""
    df = df.assign(file=df.statistics_path.map(_name), columns=df["columns"].map(lambda c: "; ".join(c)),
                   ndv=df.ndv.map(lambda v: ", ".join(str(x) for x in v)))
    return H.details("Statistics files", _frame_table(df, [
        ("kind", "kind", ""), ("snapshot_id", "snapshot id", "pe-mono"), ("file", "file", "pe-mono pe-wrap"),
        ("file_size_in_bytes", "bytes", "pe-num"), ("blob_count", "blobs", "pe-num"), ("columns", "columns", "pe-wrap"),
        ("ndv", "ndv", "pe-wrap")], opts, "t.statistics_files() has all"), False, f" {len(df):,}")


#: Status of a health check -> CSS class of its badge.
_CHECK_CLASS = {"ok": "ok", "info": "info", "warning": "warning", "error": "error", "not run": "muted"}


def _no_card_health(t: Any) -> str:
    """Why a card shows no health section: the table is above the card's doctor limit."""
    return (f"more than {plural(t.card_health_up_to, 'data file')}, the most the card runs the doctor on: "
            "t.health() runs every check, with each finding's fix, and pes.health(spark, t) runs it on a Spark cluster")


def _health_html(t: Any, opts: RenderOptions) -> str:
    """The doctor's checks without the storage listing (bounded: metadata and manifests only), and its charts."""
    h = t.card_health(opts.now)
    if h is None:
        return H.details("Health", f'<div class="pe-note">{H.esc(_no_card_health(t))}</div>', True, " not run")
    checks = h.checks()
    rows = [[H.esc(r["check"]), H.badge(r["status"], _CHECK_CLASS.get(r["status"], "info")), H.esc(r["metric"]),
             H.esc(r["threshold"]), H.esc(r["source"])] for r in checks.to_dict("records")]
    table = H.table(["check", "status", "metric", "threshold", "source of the threshold"], rows,
                    ["", "pe-nowrap", "pe-wrap", "pe-wrap", "pe-wrap pe-note"], raw_html_columns=(0, 1, 2, 3, 4),
                    max_rows=opts.max_rows)
    note = ('<div class="pe-note">the card skips the storage listing, so no orphan-file check: run '
            '<span class="pe-mono">t.health()</span> for orphan files and for each finding\'s fix statements</div>')
    chart = ""
    if not opts.compact:
        from .table_charts import health_svg

        chart = _safe("health chart", lambda: f'<div class="pe-chart">{health_svg(h)}</div>')
    status = h.status
    return H.details(f"Health {H.badge(status, _CHECK_CLASS.get(status, 'info'))}", table + note + chart,
                     status != "ok", f" {len(checks):,} checks")


def _has_errors(t: Any) -> bool:
    try:
        return any(getattr(f.severity, "value", f.severity) == "error" for f in t.card_findings())
    except Exception:
        return True


def table_html(t: Any, opts: RenderOptions = RenderOptions()) -> str:
    # The health section first: its doctor reads the entries with their column metrics, an index every later
    # section reuses; asked for second, each manifest would be decoded twice (without metrics, then with).
    has_snapshot = t.metadata.current_snapshot_id is not None
    health = _safe("health", lambda: _health_html(t, opts)) if has_snapshot else ""
    head = _safe("facts", lambda: _table_facts(t)) + _safe("totals", lambda: _totals_html(t))
    parts = [H.card("Iceberg table", t.name, head)]
    found = _safe("checks", lambda: findings_html(t.card_findings(), title="Findings", max_rows=opts.max_rows)
                  or '<div class="pe-note pe-ok">no findings from the metadata (t.check() also reads every DV '
                     "and statistics file)</div>")
    if _has_errors(t):  # damaged metadata: its findings first, then the health checks
        parts += [found, health]
    else:
        parts += [health, found]
    if t.metadata.current_snapshot_id is None:
        if not t.metadata.snapshots:
            parts.append('<div class="pe-note">no snapshot: the table is empty</div>')
        else:
            parts.append('<div class="pe-note">no current snapshot (see the findings); the snapshots the metadata '
                         "lists:</div>")
            parts.append(_safe("snapshot timeline", lambda: _timeline_html(t, opts)))
            parts.append(_safe("statistics files", lambda: _stats_html(t, opts)))
        parts.append(_safe("schema", lambda: _schema_html(t, opts)))
        parts.append(_safe("properties", lambda: _properties_html(t, opts)))
        return "".join(parts)
    parts.append(_safe("snapshot timeline", lambda: _timeline_html(t, opts)))
    parts.append(_safe("delete debt", lambda: H.details("Delete debt", _debt_html(t.delete_debt(), opts), True)))
    parts.append(_safe("files", lambda: _files_html(t, opts)))
    parts.append(_safe("statistics files", lambda: _stats_html(t, opts)))
    parts.append(_safe("schema", lambda: _schema_html(t, opts)))
    parts.append(_safe("properties", lambda: _properties_html(t, opts)))
    return "".join(parts)


def table_text(t: Any, opts: RenderOptions = RenderOptions()) -> str:
    md = t.metadata
    lines = [f"Iceberg table {T.printable(t.name)}: format v{md.format_version}, {plural(len(md.snapshots), 'snapshot', sep='')}",
             f"  location {T.printable(md.location)}"]
    if md.next_row_id is not None:
        lines.append(f"  next-row-id {md.next_row_id:,}")

    def totals() -> str:
        r = t.summary()

        def counted(key: str, noun: str) -> str:
            return f"{plural_noun(noun)} {UNKNOWN}" if key in r["unknown"] else _counted(r[key], noun)

        deleted = f"deleted {UNKNOWN}" if "deleted_rows" in r["unknown"] else \
            f"{_n(r['deleted_rows'])} deleted ({_share(r['deleted_share'])})"
        live = f"live {UNKNOWN}" if "live_rows" in r["unknown"] else f"{_n(r['live_rows'])} live"
        return (f"  {counted('records', 'record')}, {live}, {deleted}; {counted('data_files', 'data file')}, "
                f"{counted('dvs', 'DV')}, {counted('position_delete_files', 'position-delete file')}, "
                f"{counted('equality_delete_files', 'equality-delete file')}; health {r['health']}")

    def health() -> str:
        h = t.card_health(opts.now)
        if h is None:
            return f"health not run: {_no_card_health(t)}"
        rows = [[r["check"], r["status"], r["metric"], r["threshold"], r["source"]]
                for r in h.checks().to_dict("records")]
        return (f"health {h.status} (no storage listing: orphan files: run t.health())\n"
                + T.table(["check", "status", "metric", "threshold", "source"], rows))

    # health before the totals are computed (the index with column metrics, once; see table_html), shown after
    health_text = _safe_text("health", health) if md.current_snapshot_id is not None else None
    lines.append(_safe_text("  totals", totals))
    if health_text is not None:
        lines.append(health_text)
    lines.append(_safe_text("  checks", lambda: findings_text(t.card_findings()) or "  no findings from the metadata"))

    def tl() -> str:
        df = t.timeline()
        head = df.head(T.MAX_TEXT_ROWS)
        rows = [[_n(r["sequence_number"]), str(r["snapshot_id"]), _time(r["timestamp"]), r["operation"], live,
                 deleted] for r, live, deleted in zip(head.to_dict("records"), _timeline_counts(head.live_rows),
                                                      _timeline_counts(head.deleted_rows))]
        return "snapshots\n" + T.table(["seq", "snapshot id", "committed (UTC)", "operation", "live rows", "deleted"],
                                        rows, right=(0, 4, 5), total=len(df))

    if md.current_snapshot_id is None and md.snapshots:
        lines.append("  no current snapshot (see the findings)")
    if md.snapshots:
        lines.append(_safe_text("snapshots", tl))
    lines.append(_safe_text("schema", lambda: "schema\n" + T.table(["id", "name", "type", "required"],
                                      [[str(f.id), f.name, f"{f.type if isinstance(f.type, str) else 'nested'}",
                                        "required" if f.required else "optional"] for f in md.fields()],
                                      right=(0,))))
    return "\n".join(lines)


# ---- snapshot ---------------------------------------------------------------------------------
def snapshot_html(s: Any, opts: RenderOptions = RenderOptions()) -> str:
    items = [("operation", f"<b>{H.esc(s.operation)}</b>"), ("sequence", f"{s.sequence_number:,}"),
             ("committed", H.esc(_time(_ts(s.timestamp_ms)))), ("parent", H.esc(s.parent_snapshot_id or "none")),
             ("current", "yes" if s.is_current else "no")]
    if s.first_row_id is not None:
        items += [("first-row-id", f"{s.first_row_id:,}"), ("added-rows", _n(s.added_rows))]
    if s.schema_id is not None:
        items.append(("schema", str(s.schema_id)))
    head = H.facts(items)
    if s.manifest_list:
        head += H.facts([("manifest list", f'<span class="pe-mono">{H.esc(_name(s.manifest_list))}</span>')])
    parts = [H.card("snapshot", f"{s.source.name} @ {s.snapshot_id}", head)]
    summary = H.table(["key", "value"], [[k, v] for k, v in s.summary.items()], ["pe-mono", "pe-mono pe-wrap"],
                      total=len(s.summary), max_rows=opts.max_rows)
    parts.append(H.details("Summary", summary, True, f" {len(s.summary)}"))

    def manifests() -> str:
        every = s.manifest_files()
        df = every.head(opts.max_rows)  # only the rows a table shows are formatted
        df = df.assign(file=df.manifest_path.map(_name),
                       written=df["written_here"].map(lambda b: "this commit" if b else "earlier")
                       if "written_here" in df else "")
        table = _frame_table(df, [("file", "manifest", "pe-mono pe-wrap"), ("content", "content", ""),
                                  ("written", "written by", ""), ("added_files_count", "added", "pe-num"),
                                  ("existing_files_count", "existing", "pe-num"),
                                  ("deleted_files_count", "deleted", "pe-num"), ("sequence_number", "seq", "pe-num")]
                             if "added_files_count" in df else [("file", "manifest", "pe-mono pe-wrap")], opts,
                             "s.manifest_files() has all", total=len(every))
        return H.details("Manifests", table, True, f" {len(every):,}")

    def changes() -> str:
        every = s.changes()
        df = every.head(opts.max_rows)
        df = df.assign(file=df.file_path.map(_name), data_file=df.referenced_data_file.map(_name))
        table = _frame_table(df, [("change", "change", ""), ("kind", "kind", ""), ("file", "file", "pe-mono pe-wrap"),
                                  ("record_count", "rows", "pe-num"), ("content_offset", "offset", "pe-num"),
                                  ("data_file", "data file", "pe-mono pe-wrap")], opts, "s.changes() has all",
                             total=len(every))
        added, removed = int((every.change == "added").sum()), int((every.change == "removed").sum())
        return H.details("Files added and removed", table, True, f" +{added:,} −{removed:,}")

    parts.append(_safe("manifests", manifests))
    parts.append(_safe("changes", changes))
    return "".join(parts)


def _ts(ms: int):
    import pandas as pd

    from ..iceberg.overview import timestamp_ms

    got = timestamp_ms(ms)
    return None if got is pd.NaT else got


def snapshot_text(s: Any, opts: RenderOptions = RenderOptions()) -> str:
    lines = [f"snapshot {s.snapshot_id} of {T.printable(s.source.name)}: {s.operation}, sequence {s.sequence_number}, "
             f"committed {_time(_ts(s.timestamp_ms))} UTC, parent {s.parent_snapshot_id or 'none'}"]
    if s.first_row_id is not None:
        lines.append(f"  first-row-id {s.first_row_id:,}, added-rows {_n(s.added_rows)}")
    lines.append("summary\n" + T.table(["key", "value"], [[k, v] for k, v in s.summary.items()]))

    def changes() -> str:
        df = s.changes()
        rows = [[r["change"], r["kind"], _name(r["file_path"]), _n(r["record_count"])]
                for r in df.head(T.MAX_TEXT_ROWS).to_dict("records")]
        return "files added and removed\n" + T.table(["change", "kind", "file", "rows"], rows, right=(3,), total=len(df))

    lines.append(_safe_text("changes", changes))
    return "\n".join(lines)


# ---- commit deletes ---------------------------------------------------------------------------
_CD_COLUMNS = [("file", "data file", "pe-mono pe-wrap"), ("kind", "kind", ""),
               ("added_positions", "rows deleted", "pe-num"), ("replaced_cardinality", "old DV", "pe-num"),
               ("cardinality", "new DV / file rows", "pe-num"), ("first_added", "first", "pe-num"),
               ("last_added", "last", "pe-num"), ("delete", "delete file", "pe-mono pe-wrap")]


def commit_deletes_html(c: Any, opts: RenderOptions = RenderOptions()) -> str:
    df = c.to_pandas()
    head = H.facts([("operation", H.esc(c.snapshot.operation)), ("rows deleted", f"<b>{c.total:,}</b>"),
                    ("data files", f"{int(df.data_file.notna().sum()):,}"),
                    ("DV bytes read", f"{c.dv_bytes_read:,}")])
    parts = [H.card("commit deletes", f"{c.source.name} @ {c.snapshot_id}", head), findings_html(c.findings)]
    if not len(df):
        parts.append('<div class="pe-note">this commit added no delete file</div>')
        return "".join(parts)
    if not opts.compact:
        from .table_charts import commit_deletes_svg

        parts.append(_safe("chart", lambda: f'<div class="pe-chart">{commit_deletes_svg(c)}</div>'))
    top = df.head(opts.max_rows)
    parts.append(_frame_table(top.assign(file=top.data_file.map(_name), delete=top.delete_file.map(_name)),
                              _CD_COLUMNS, opts, "c.to_pandas() has all", total=len(df)))
    return "".join(parts)


def commit_deletes_text(c: Any, opts: RenderOptions = RenderOptions()) -> str:
    df = c.to_pandas()
    lines = [f"commit {c.snapshot_id} of {T.printable(c.source.name)} ({c.snapshot.operation}): {plural(c.total, 'row')} deleted "
             f"in {plural(int(df.data_file.notna().sum()), 'data file')}; {plural(c.dv_bytes_read, 'DV byte')} read"]
    rows = [[_name(r["data_file"]), r["kind"], _n(r["added_positions"]), _n(r["replaced_cardinality"]),
             _n(r["cardinality"]), _n(r["first_added"]), _n(r["last_added"])]
            for r in df.head(T.MAX_TEXT_ROWS).to_dict("records")]
    lines.append(T.table(["data file", "kind", "rows deleted", "old DV", "new DV", "first", "last"], rows,
                         right=(2, 3, 4, 5, 6), total=len(df)))
    if c.findings:
        lines.append(findings_text(c.findings))
    return "\n".join(lines)


# ---- delete debt ------------------------------------------------------------------------------
def debt_html(d: Any, opts: RenderOptions = RenderOptions()) -> str:
    return H.card("delete debt", f"{d.source.name} @ {d.snapshot_id}", "") + _debt_html(d, opts)


def debt_text(d: Any, opts: RenderOptions = RenderOptions()) -> str:
    facts = _debt_facts(d)
    if facts[0][0] == "deleted":
        head = f"{facts[0][1].replace(' rows (', ' rows deleted (', 1)}; {facts[1][1]} above {d.threshold:.0%}"
    else:
        head = "; ".join(f"{k} {v}" for k, v in facts) + f" (above {d.threshold:.0%})"
    lines = [f"delete debt of {T.printable(d.source.name)}: {head}"]
    if d.partial:  # counted without the files that were gone: say so before any number is read as the whole
        lines[0] = "PARTIAL " + lines[0]
        lines += [T.printable(f"{f.severity.value} {f.code}: {f.message}") for f in d.findings]
    part = d.per_partition()
    lines.append(T.table(["partition", "data files", "records", "deleted", "share"],
                         [[r["partition"], _n(r["data_files"]), _n(r["record_count"]),
                           UNKNOWN if _missing(r["deleted_rows"]) else _n(r["deleted_rows"]),
                           "" if _missing(r["deleted_share"]) else _share(r["deleted_share"])]
                          for r in part.head(T.MAX_TEXT_ROWS).to_dict("records")],
                         right=(1, 2, 3, 4),
                         total=len(part)))
    return "\n".join(lines)


def _register() -> None:
    from .._repr import register_maker
    from .table_charts import commit_deletes_figure
    from ..iceberg.commits import CommitDeletes, TableSnapshot
    from ..iceberg.overview import DeleteDebt
    from ..iceberg.table import Table
    from ..iceberg.warehouse import Warehouse

    register_view(Warehouse, html=warehouse_html, text=warehouse_text, css_class="pe-warehouse")
    register_view(Table, html=table_html, text=table_text, css_class="pe-table-card")
    register_view(TableSnapshot, html=snapshot_html, text=snapshot_text, css_class="pe-snapshot")
    register_view(CommitDeletes, html=commit_deletes_html, text=commit_deletes_text, css_class="pe-commit")
    register_maker("figure", CommitDeletes, commit_deletes_figure)
    register_view(DeleteDebt, html=debt_html, text=debt_text, css_class="pe-debt")


_register()
