"""Region trees and findings as tables (HTML and text), for any format that yields regions."""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

from .._text import plural
from ..regions import Finding, Region, Severity, _short_value
from . import html as H
from . import text as T
from .layout import EXPAND, region_css

#: Region rows drawn in one tree view before the rest are counted.
MAX_REGION_ROWS = 400

_SEV_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


def _where(offset: Optional[int], space: str) -> str:
    if offset is None:
        return "?"
    return f"{offset:,}" + ("" if space == "file" else f" ({space})")


def render_region_tree_html(root: Region, expand: Sequence[str] = EXPAND, open_: bool = False,
                            max_rows: int = MAX_REGION_ROWS, table_rows: int = H.MAX_TABLE_ROWS) -> str:
    """The region tree as collapsible tables: one ``<details>`` per top-level region.

    At most ``max_rows`` rows are drawn in all and ``table_rows`` in one table; the rest is counted.
    """
    colours = region_css(root, expand)
    parts = []
    budget = max_rows
    tops = root.children or [root]
    for n_top, top in enumerate(tops):
        if budget <= 0:
            rest = len(tops) - n_top
            parts.append(f'<div class="pe-note">… {rest:,} more top-level regions not shown '
                         "(Region.to_pandas() has all)</div>")
            break
        rows = []
        total = 0
        for depth, r in top.walk():
            total += 1
            if len(rows) >= budget:
                continue
            css = colours.get(id(r), "")
            name = ("&#160;&#160;" * depth) + (H.swatch(css) if css and r.space == "file" else "") + H.esc(
                H.clip(r.name, 120))
            rows.append([name, r.kind, _where(r.offset, r.space), H.num(r.length), H.num(r.end),
                         "" if r.value is None else _short_value(r.value),
                         r.finding.code if r.finding else ""])
        budget -= len(rows)
        table = H.table(["region", "kind", "offset", "length", "end", "value", "finding"], rows,
                        ["", "pe-mono", "pe-num", "pe-num", "pe-num", "pe-wrap pe-mono", ""],
                        total=total, more_hint="Region.to_pandas() has all", raw_html_columns=(0,),
                        max_rows=table_rows)
        summary = f"{H.swatch(colours.get(id(top), ''))}{H.esc(H.clip(top.name, 120))}"
        parts.append(H.details(summary, table, open_, f" {top.length:,} B @ {top.offset:,}"
                               + (f", {plural(total - 1, 'part')}" if total > 1 else "")))
    return "".join(parts)


def region_tree_text(root: Region, max_rows: int = 80) -> str:
    """Indented ``name  [offset, end)  length  value`` lines."""
    lines = []
    total = 0
    for depth, r in root.walk():
        total += 1
        if len(lines) >= max_rows:
            continue
        value = "" if r.value is None else f"  = {T.cut(T.printable(_short_value(r.value)), 50)}"
        where = f"[{r.offset:,}, {r.end:,})" + ("" if r.space == "file" else f" in {r.space}")
        lines.append(f"{'  ' * depth}{T.cut(T.printable(r.name), 70)}  {where}  {r.length:,} B{value}")
    if total > len(lines):
        lines.append(f"… {total - len(lines):,} more regions")
    return "\n".join(lines)


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (_SEV_ORDER.get(f.severity, 3), f.space != "file",
                                           -1 if f.offset is None else f.offset))


def findings_html(findings: Iterable[Finding], open_: bool = True, title: str = "Findings",
                  max_rows: int = H.MAX_TABLE_ROWS) -> str:
    """Severity, code, offset, message and hint, errors first; empty string when there are none."""
    items = sorted_findings(findings)
    if not items:
        return ""
    rows = ([f'<span class="pe-{f.severity.value}">{H.esc(f.severity.value)}</span>', f.code,
             _where(f.offset, f.space), H.num(f.length), f.message, f.hint] for f in items[:max_rows])
    table = H.table(["severity", "code", "offset", "length", "message", "hint"], rows,
                    ["", "pe-mono", "pe-num", "pe-num", "pe-wrap", "pe-wrap pe-muted"], total=len(items),
                    more_hint="findings.to_pandas() has all", raw_html_columns=(0,), max_rows=max_rows)
    counts = _count_text(items)
    return H.details(f'<span class="pe-{items[0].severity.value}">{H.esc(title)}</span>', table, open_,
                     f" {counts}")


def findings_text(findings: Iterable[Finding], title: str = "findings") -> str:
    """One line per finding (``severity code @ offset: message``), hints indented below."""
    items = sorted_findings(findings)
    if not items:
        return ""
    lines = [f"{title} ({_count_text(items)})"]
    for f in items[:T.MAX_TEXT_ROWS]:
        lines.append(f"  {f.severity.value:<7} {f.code} @ {_where(f.offset, f.space)}: "
                     f"{T.printable(f.message, T.MAX_MESSAGE_CHARS)}")
        if f.hint:
            lines.append(f"          hint: {T.printable(f.hint, T.MAX_MESSAGE_CHARS)}")
    if len(items) > T.MAX_TEXT_ROWS:
        lines.append(f"  … {len(items) - T.MAX_TEXT_ROWS:,} more findings")
    return "\n".join(lines)


def _count_text(items: list[Finding]) -> str:
    counts: dict[str, int] = {}
    for sev in [f.severity for f in items]:
        counts[sev] = counts.get(sev, 0) + 1
    counts = {sev.value: n for sev, n in counts.items()}
    return ", ".join(f"{n} {sev}{'s' if n != 1 else ''}" for sev, n in counts.items())
