"""Views of raw blobs, region trees and finding lists."""

from __future__ import annotations

from typing import Any

from . import html as H
from . import text as T
from .._text import plural
from .layout import strip_html
from .registry import RenderOptions, register_view
from .tables import findings_html, findings_text, region_tree_text, render_region_tree_html

#: Bytes of a raw blob previewed.
RAW_PREVIEW = 256


def raw_html(raw: Any, opts: RenderOptions = RenderOptions()) -> str:
    meta = raw.metadata
    facts = [("size", f"{raw.size:,} B"), ("stored", f"{raw.stored_size:,} B")]
    if meta is not None:
        facts += [("type", H.esc(meta.type)), ("codec", H.esc(meta.compression_codec or "none")),
                  ("fields", H.esc(meta.fields))]
    txt = raw.text
    if txt is not None and not all(c.isprintable() or c in "\n\r\t" for c in txt[:2000]):
        txt = None  # valid UTF-8 but control bytes: show hex
    preview = (H.esc(H.clip(txt, 2000)) if txt is not None
               else H.esc(raw.data[:RAW_PREVIEW].hex(" ")) + (" …" if raw.size > RAW_PREVIEW else ""))
    label = "UTF-8 text" if txt is not None else f"first {plural(min(raw.size, RAW_PREVIEW), 'byte', sep='')} (hex)"
    return (H.card("raw blob", (meta.type if meta is not None else None) or "blob", H.facts(facts))
            + findings_html(raw.findings, max_rows=opts.max_rows)
            + H.details(label, f'<pre class="pe-mono" style="white-space:pre-wrap">{preview}</pre>', True))


def raw_text(raw: Any, opts: RenderOptions = RenderOptions()) -> str:
    meta = raw.metadata
    head = f"RawBlob  {T.printable(meta.type) if meta is not None else ''}  {raw.size:,} B (stored {raw.stored_size:,} B)"
    return head + "\n  " + T.printable(T.cut(raw.summary(), 200))


def region_html(root: Any, opts: RenderOptions = RenderOptions()) -> str:
    body = H.facts([("kind", H.esc(root.kind)), ("offset", f"{root.offset:,}"), ("length", f"{root.length:,}"),
                    ("end", f"{root.end:,}")])
    strip = strip_html(root) if root.children and root.space == "file" else ""
    return H.card("region", root.name, body) + strip + render_region_tree_html(root, open_=True, table_rows=opts.max_rows)


def region_text(root: Any, opts: RenderOptions = RenderOptions()) -> str:
    return region_tree_text(root)


def findings_list_html(findings: Any, opts: RenderOptions = RenderOptions()) -> str:
    return findings_html(findings, max_rows=opts.max_rows) or '<div class="pe-note">no findings</div>'


def findings_list_text(findings: Any, opts: RenderOptions = RenderOptions()) -> str:
    return findings_text(findings) or "no findings"




def _register() -> None:
    from ..format.raw import RawBlob
    from ..regions import FindingList, Region

    register_view(RawBlob, html=raw_html, text=raw_text, css_class="pe-raw")
    register_view(Region, html=region_html, text=region_text, css_class="pe-region")
    register_view(FindingList, html=findings_list_html, text=findings_list_text, css_class="pe-findings")


_register()
