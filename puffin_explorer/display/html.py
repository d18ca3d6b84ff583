"""HTML string builders: escaping, tables, collapsible sections and the page wrapper.

Every string that may come from a file goes through :func:`esc` (text) or
:func:`attr` (attribute values).  Nothing here emits JavaScript or element ids.
"""

from __future__ import annotations

import html as _html
from functools import lru_cache
from importlib import resources
from typing import Any, Iterable, Optional, Sequence

#: Rows any single table shows before eliding the rest (the data is in ``to_pandas()``).
MAX_TABLE_ROWS = 200
#: Characters of any single cell value before it is cut with an ellipsis.
MAX_CELL_CHARS = 300


def esc(value: Any) -> str:
    """Escape any value for HTML text and attribute context (quotes included)."""
    return _html.escape(str(value), quote=True)


def attr(value: Any) -> str:
    """A quoted, escaped attribute value."""
    return '"' + esc(value) + '"'


def clip(text: Any, limit: int = MAX_CELL_CHARS) -> str:
    """Shorten a value's string form to ``limit`` characters (unescaped)."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@lru_cache(maxsize=1)
def css() -> str:
    """The package stylesheet (``puffin_explorer/static/style.css``)."""
    return resources.files("puffin_explorer").joinpath("static/style.css").read_text(encoding="utf-8")


def wrap(body: str, text: str, extra_class: str = "") -> str:
    """A self-contained fragment: stylesheet, plain-text fallback, then the styled view.

    Where styles are stripped the inline ``display:none`` hides the styled part
    and the ``<pre>`` text shows; with the stylesheet the reverse holds.
    """
    cls = "pe-root" + (" " + extra_class if extra_class else "")
    return (f'<div class="{cls}"><style>{css()}</style>'
            f'<pre class="pe-text">{esc(text)}</pre>'
            f'<div class="pe-html" style="display:none">{body}</div></div>')


def details(summary: str, body: str, open_: bool = True, count: Optional[str] = None) -> str:
    """A CSS-only collapsible section (``summary`` is already HTML)."""
    cnt = f'<span class="pe-count">{esc(count)}</span>' if count is not None else ""
    return (f'<details{" open" if open_ else ""}><summary>{summary}{cnt}</summary>'
            f'<div class="pe-body">{body}</div></details>')


def num(n: Optional[int]) -> str:
    return "" if n is None else f"{n:,}"


def swatch(css_class: str, title: str = "") -> str:
    t = f" title={attr(title)}" if title else ""
    return f'<span class="pe-sw {css_class}"{t}></span>'


def table(columns: Sequence[str], rows: Iterable[Sequence[Any]], classes: Optional[Sequence[str]] = None,
          total: Optional[int] = None, more_hint: str = "", raw_html_columns: Sequence[int] = (),
          max_rows: int = MAX_TABLE_ROWS, max_cell_chars: int = MAX_CELL_CHARS) -> str:
    """A table of escaped cells; rows beyond ``max_rows`` are elided and counted.

    ``classes`` gives a CSS class per column (``pe-num``, ``pe-mono``, ``pe-wrap``);
    columns listed in ``raw_html_columns`` hold HTML built by this package.
    """
    classes = list(classes or [""] * len(columns))
    raw = set(raw_html_columns)
    out = ['<table class="pe-table"><thead><tr>']
    out += [f"<th>{esc(c)}</th>" for c in columns]
    out.append("</tr></thead><tbody>")
    shown = 0
    for row in rows:
        if shown >= max_rows:
            break
        out.append("<tr>")
        for i, cell in enumerate(row):
            cls = f' class="{classes[i]}"' if classes[i] else ""
            content = cell if i in raw else esc(clip("" if cell is None else cell, max_cell_chars))
            out.append(f"<td{cls}>{content}</td>")
        out.append("</tr>")
        shown += 1
    if total is not None and total > shown:
        msg = f"… {total - shown:,} more rows not shown" + (f" ({more_hint})" if more_hint else "")
        out.append(f'<tr class="pe-more"><td colspan="{len(columns)}">{esc(msg)}</td></tr>')
    out.append("</tbody></table>")
    return "".join(out)


def facts(items: Iterable[tuple[str, str]]) -> str:
    """``label value`` pairs on one wrapping line (values already HTML)."""
    return '<div class="pe-facts">' + "".join(f"<span><i>{esc(k)}</i> {v}</span>" for k, v in items) + "</div>"


def badge(text: str, kind: str) -> str:
    return f'<span class="pe-badge pe-{kind}">{esc(text)}</span>'


def card(kind: str, title: str, body: str) -> str:
    return (f'<div class="pe-card"><div class="pe-title"><span class="pe-kind">{esc(kind)}</span>'
            f'<span class="pe-loc">{esc(title)}</span></div>{body}</div>')
