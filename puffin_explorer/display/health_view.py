"""The table doctor's view: a :class:`~puffin_explorer.health.TableHealth` as HTML and text.

Only formats what the model computed: status, headline metrics, the thresholds and where they came
from, then each finding with its evidence, its statements (in ``<pre>`` blocks, copyable as they
are) and its predicted effect, then the file-size histogram and the partitions.
"""

from __future__ import annotations

from typing import Any

from ..coverage import UNKNOWN
from . import html as H
from . import text as T
from .registry import RenderOptions, register_view

_STATUS = {"ok": "ok", "warning": "warning", "error": "error"}
#: Headline metrics, in the order the card lists them.
HEADLINE = ("data_files", "data_bytes", "small_files", "delete_files", "delete_bytes", "dvs",
            "position_delete_files", "equality_delete_files", "live_rows", "deleted_rows", "deleted_share",
            "snapshots", "snapshots_past_retention", "bytes_only_in_expired_snapshots", "manifests",
            "metadata_files", "orphan_files", "orphan_bytes", "max_delete_files_per_data_file",
            "statistics_commits_behind")


def _value(key: str, v: Any) -> str:
    if v is None:
        return "–"
    if key == "deleted_share" or key.endswith("_rate") or key.endswith("_share"):
        return f"{float(v):.1%}"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.3f}".rstrip("0").rstrip(".")
    if isinstance(v, (list, tuple)):
        return ", ".join(str(x) for x in v)
    return str(v)


def _metric(h: Any, key: str) -> str:
    """A headline metric; one that files it depends on could not be read for is
    :data:`~puffin_explorer.coverage.UNKNOWN` (with its partial count, labelled, when there is one)."""
    if key in h.unknown():
        partial = h.partial_count(key)
        return f"{UNKNOWN}; {partial}" if partial else UNKNOWN
    return _value(key, h.metrics.get(key))


def _pairs(d: dict) -> str:
    return "; ".join(f"{k} {_value(k, v)}" for k, v in d.items())


# ---- HTML ---------------------------------------------------------------------------------------
def _finding_html(f: Any, opts: RenderOptions) -> str:
    sev = f.severity.value
    head = f'{H.badge(sev, sev)} <b class="pe-mono">{H.esc(f.code)}</b> {H.esc(f.message)}'
    body = [H.table(["evidence", "value"], [[k, _value(k, v)] for k, v in f.evidence.items()],
                    classes=["pe-mono", "pe-wrap"], max_rows=opts.max_rows, max_cell_chars=opts.max_cell_chars)]
    for a in f.actions:
        note = f'<div class="pe-note">{H.esc(a.note)}</div>' if a.note else ""
        body.append(f'<div class="pe-note">{H.esc(a.engine)}</div><pre class="pe-hex">{H.esc(a.statement)}</pre>'
                    + note)
    if f.effect:
        body.append(H.facts([(k.replace("_", " "), H.esc(_value(k, v))) for k, v in f.effect.items()]))
    if f.hint:
        body.append(f'<div class="pe-note">{H.esc(f.hint)}</div>')
    return H.details(head, "".join(body), open_=sev != "info")


def _utc(ms: Any) -> str:
    """Epoch milliseconds as a UTC time ('–' when unknown)."""
    from datetime import datetime, timezone

    if ms is None or ms != ms:
        return "–"
    try:
        return datetime.fromtimestamp(int(ms) / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def health_html(h: Any, opts: RenderOptions = RenderOptions()) -> str:
    status = h.status
    m = h.metrics
    facts = [("status", H.badge(status, _STATUS.get(status, "info")))]
    facts += [(k.replace("_", " "), H.esc(_metric(h, k))) for k in HEADLINE if k in m]
    parts = [H.card("table doctor", h.table, H.facts(facts))]
    if h.findings:
        parts.append("".join(_finding_html(f, opts) for f in h.findings))
    else:
        parts.append('<div class="pe-note pe-ok">no findings</div>')
    parts.append(H.details("Thresholds", H.table(
        ["threshold", "value", "property", "source"],
        [[k, _value(k, t["value"]), t.get("property", ""), t.get("source", "")] for k, t in h.thresholds.items()],
        classes=["pe-mono", "pe-num", "pe-mono", "pe-wrap"]), open_=False))
    hist = h.frames.get("size_histogram")
    if hist is not None:
        parts.append(H.details("Data file sizes", H.table(
            ["size", "files", "bytes", "small"],
            [[r["size_class"], f"{r['files']:,}", f"{r['bytes']:,}", "small" if r["small"] else ""]
             for r in hist.to_dict("records")], classes=["", "pe-num", "pe-num", ""]), open_=False))
    parts_df = h.frames.get("partitions")
    if parts_df is not None and len(parts_df):
        parts.append(H.details("Partitions", H.table(
            ["partition", "files", "rows", "deleted rows", "bytes", "small files", "delete files"],
            [[r["partition"], f"{r['files']:,}", f"{r['rows']:,}", f"{r['deleted_rows']:,}", f"{r['bytes']:,}",
              f"{r['small_files']:,}", f"{r['delete_files']:,}"] for r in parts_df.to_dict("records")],
            classes=["pe-mono"] + ["pe-num"] * 6, total=int(h.metrics.get("partitions") or len(parts_df)),
            max_rows=opts.max_rows), open_=False, count=f" {int(h.metrics.get('partitions') or len(parts_df)):,}"))
    clus = h.frames.get("clustering")
    if clus is not None and len(clus):
        def depth(v: Any) -> str:
            return "–" if v is None or v != v else f"{float(v):.2f}"

        parts.append(H.details(f"Clustering on {clus['column'].iloc[0]}", H.table(
            ["partition", "files", "files with bounds", "average depth", "max depth"],
            [[r["partition"], f"{r['files']:,}", f"{r['files_with_bounds']:,}", depth(r["average_depth"]),
              "–" if r["max_depth"] is None or r["max_depth"] != r["max_depth"] else f"{int(r['max_depth']):,}"]
             for r in clus.to_dict("records")],
            classes=["pe-mono"] + ["pe-num"] * 4, total=len(clus), max_rows=opts.max_rows), open_=False,
            count=f" {len(clus):,}"))
    tombs = h.frames.get("tombstones")
    if tombs is not None and len(tombs):
        parts.append(H.details("Tombstones (removed files)", H.table(
            ["path", "removed at (UTC)", "size", "on storage"],
            [[r["path"], _utc(r["deletion_timestamp_ms"]),
              "–" if r["size"] is None or r["size"] != r["size"] else f"{int(r['size']):,}",
              "yes" if r["on_storage"] else "no"]
             for r in tombs.to_dict("records")],
            classes=["pe-mono", "pe-num", "pe-num", ""], total=len(tombs), max_rows=opts.max_rows), open_=False,
            count=f" {len(tombs):,}"))
    return "".join(parts)


# ---- text ---------------------------------------------------------------------------------------
def health_text(h: Any, opts: RenderOptions = RenderOptions()) -> str:
    m = h.metrics
    lines = [f"table doctor {T.printable(h.table)}: {h.status}"]
    lines.append("  " + "; ".join(f"{k.replace('_', ' ')} {_metric(h, k)}" for k in HEADLINE if k in m))
    if not h.findings:
        lines.append("  no findings")
    for f in h.findings:
        lines.append(f"{f.severity.value} {f.code}: {T.printable(f.message, None)}")
        if f.evidence:
            lines.append(f"  evidence: {T.printable(_pairs(f.evidence), None)}")
        for a in f.actions:
            lines.append(f"  [{a.engine}] {T.printable(a.statement, None)}")
            if a.note:
                lines.append(f"      ({T.printable(a.note, None)})")
        if f.effect:
            lines.append(f"  effect: {_pairs(f.effect)}")
        if f.hint:
            lines.append(f"  note: {T.printable(f.hint, None)}")
    return "\n".join(lines)


def _register() -> None:
    from ..health import TableHealth

    register_view(TableHealth, html=health_html, text=health_text, css_class="pe-health")


_register()
