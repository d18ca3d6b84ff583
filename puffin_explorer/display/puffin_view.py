"""The PuffinFile view: summary card, findings, layout strip, blob table, properties, regions."""

from __future__ import annotations

from collections import Counter
from typing import Any, Optional

from .._text import plural
from ..regions import Severity
from . import html as H
from . import text as T
from .layout import colour_map, strip_html, strip_text, top_regions
from .schema import fields_label
from .tables import findings_html, findings_text, render_region_tree_html


def _props(props: dict) -> str:
    return "; ".join(f"{k}={v}" for k, v in props.items())


def blob_rows(pf: Any, names: Optional[dict[int, str]] = None, limit: Optional[int] = None) -> list[dict[str, Any]]:
    """:meth:`PuffinFile.blob_summaries` (the first ``limit``) with fields and properties formatted as labels."""
    rows = pf.blob_summaries(limit)
    for r in rows:
        r["fields"] = fields_label(r["fields"], names)
        r["properties"] = _props(r["properties"])
    return rows


def blob_frame(pf: Any, names: Optional[dict[int, str]] = None):
    """The blob table with decoded sizes and summaries (the model's ``to_pandas(names)``)."""
    return pf.to_pandas(names)


def _blob_colours(root: Any) -> dict[int, str]:
    colours = colour_map(root)
    return {r.value: colours[id(r)] for r in top_regions(root) if r.kind == "blob" and isinstance(r.value, int)}


def _status(pf: Any) -> tuple[str, str]:
    by_severity = Counter(f.severity for f in pf.findings)
    errors, warnings = by_severity[Severity.ERROR], by_severity[Severity.WARNING]
    if errors:
        return f"invalid: {plural(errors, 'error')}" + (f", {plural(warnings, 'warning')}" if warnings else ""), "error"
    if warnings:
        return f"valid with {plural(warnings, 'warning')}", "warning"
    return "valid", "ok"


def _footer_text(pf: Any) -> str:
    if pf.footer is None:
        return "none"
    return f"{pf.footer_size:,} B, " + ("LZ4-compressed" if pf.footer.compressed else "uncompressed")


def html_body(pf: Any, opts: Any) -> str:
    names = (dict(opts.names) or None)
    status, kind = _status(pf)
    created = pf.properties.get("created-by")
    body = H.facts([("size", H.esc(T.size(pf.size))), ("blobs", f"{len(pf.blobs):,}"),
                    ("created-by", H.esc(created) if created is not None else "—"),
                    ("footer", H.esc(_footer_text(pf))), ("status", H.badge(status, kind))])
    parts = [H.card("Puffin file", pf.location, body), findings_html(pf.findings, max_rows=opts.max_rows)]
    # each blob's own regions when there are few enough to list; else the blobs as whole regions
    opened = len(pf.blobs) <= opts.max_rows
    root = pf.regions(decode=opened)
    parts.append(strip_html(root))
    colours = _blob_colours(root)
    rows = blob_rows(pf, names, opts.max_rows)  # the rows the table shows; its total counts them all
    cols = ["", "#", "type", "fields", "snapshot", "sequence", "offset", "length", "codec", "decoded",
            "properties", "summary"]
    table_rows = [[H.swatch(colours.get(r["index"], "")), r["index"], r["type"], r["fields"], r["snapshot-id"],
                   r["sequence-number"], H.num(r["offset"]), H.num(r["length"]), r["codec"],
                   H.num(r["decoded size"]), r["properties"], r["summary"]] for r in rows]
    table = H.table(cols, table_rows, ["", "pe-num", "pe-mono pe-nowrap", "pe-mono", "pe-num", "pe-num", "pe-num", "pe-num",
                                       "", "pe-num", "pe-wrap pe-mono pe-props", "pe-text-col"],
                    total=len(pf.blobs), more_hint="pf.blob_table() has all", raw_html_columns=(0,),
                    max_rows=opts.max_rows)
    if not rows:
        table = '<div class="pe-note">no blobs</div>'
    parts.append(H.details("Blobs", table, True, f" {len(pf.blobs):,}"))
    if pf.properties:
        ptab = H.table(["property", "value"], [[k, v] for k, v in pf.properties.items()],
                       ["pe-mono", "pe-wrap"], total=len(pf.properties), max_rows=opts.max_rows)
        parts.append(H.details("File properties", ptab, True, f" {len(pf.properties):,}"))
    if not opts.compact:
        note = "" if opened else (f'<div class="pe-note">{plural(len(pf.blobs), "blob")}: each shown as one region '
                                  "(pf.blobs[i].decode().regions() has a blob's fields)</div>")
        parts.append(H.details("Byte regions", note + render_region_tree_html(root, max_rows=2 * opts.max_rows),
                               False, f" {sum(1 for _ in root.walk()) - 1:,}"))
    return "".join(parts)


def text(pf: Any, opts: Any) -> str:
    names = (dict(opts.names) or None)
    status, _ = _status(pf)
    created = pf.properties.get("created-by")
    lines = [f"PuffinFile  {T.printable(pf.location)}",
             f"  size {T.size(pf.size)}  blobs {len(pf.blobs):,}  footer {_footer_text(pf)}  {status}"]
    if created is not None:
        lines.append(f"  created-by {T.printable(created)}")
    ft = findings_text(pf.findings)
    if ft:
        lines.append(ft)
    lines.append("layout " + strip_text(pf.regions(decode=False)))
    rows = blob_rows(pf, names, T.MAX_TEXT_ROWS)
    if rows:
        lines.append("blobs")
        lines.append(T.table(["#", "type", "fields", "offset", "length", "codec", "summary"],
                             [[r["index"], r["type"], r["fields"], "?" if r["offset"] is None else r["offset"],
                               "?" if r["length"] is None else r["length"], r["codec"], r["summary"]]
                              for r in rows],
                             right=(0, 3, 4), total=len(pf.blobs)))
    if pf.properties:
        lines.append("properties")
        lines += [f"  {T.printable(k)}: {T.cut(T.printable(v), 100)}" for k, v in list(pf.properties.items())[:50]]
    return "\n".join(lines)


def _register() -> None:
    from ..format.puffin import PuffinFile
    from .registry import register_view

    register_view(PuffinFile, html=html_body, text=text, css_class="pe-puffin")


_register()
