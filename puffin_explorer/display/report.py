"""A standalone HTML report: the notebook views of one Puffin file as one self-contained page."""

from __future__ import annotations

from typing import Any

from .html import esc

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="puffin-explorer">
<title>{title}</title>
<style>body {{ margin: 16px 24px; background: #ffffff; }}
@media (prefers-color-scheme: dark) {{ body {{ background: #111111; }} }}</style>
</head><body>
{body}
</body></html>
"""


def report_html(pf: Any, include_hex: bool = True, schema: Any = None) -> str:
    """The PuffinFile view (and its paged hex view) as one self-contained HTML page."""
    from . import render_html, view

    parts = [render_html(view(pf, schema) if schema is not None else pf)]
    if include_hex:
        parts.append("<h3 style=\"font-family:sans-serif\">Annotated bytes</h3>")
        parts.append(render_html(pf.hex()))
    return _PAGE.format(title=esc(f"Puffin file {pf.location}"), body="\n".join(parts))
