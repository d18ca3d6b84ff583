"""Plain text and minimal HTML views of a Parquet layout.

These are this module's own small views; they only read the region tree and
the layout's tables, and escape every string that came from the file.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .layout import ParquetLayout

MAX_ROWS = 400  # cap on region rows in the text and HTML views


def _summary(pl: "ParquetLayout") -> str:
    n_rg = len(pl.row_group_infos)
    parts = [f"{pl.size:,} bytes", f"{n_rg} row group{'s' if n_rg != 1 else ''}",
             f"{pl.num_rows:,} rows", f"{len(pl.columns)} columns"]
    n_pages = sum(len(c.pages) for rg in pl.row_group_infos for c in rg.chunks)
    if n_pages:
        parts.append(f"{n_pages} pages")
    if pl.created_by:
        parts.append(f"created by {pl.created_by}")
    return " · ".join(parts)


SHOW_CHILDREN = 12  # a longer child list shows its first and last few and a count between


def _rows(pl: "ParquetLayout", max_depth: int = 2):
    """(depth, region or elided-count) rows down to ``max_depth``, long child lists elided."""
    rows: list = []

    def visit(region, depth: int) -> None:
        if depth > max_depth:
            return
        rows.append((depth, region))
        kids = region.children
        if len(kids) > SHOW_CHILDREN and depth + 1 > 1:
            shown = kids[:4] + [len(kids) - 6] + kids[-2:]
        else:
            shown = kids
        for k in shown:
            if isinstance(k, int):
                if depth + 1 <= max_depth:
                    rows.append((depth + 1, k))
            else:
                visit(k, depth + 1)

    for child in pl.root.children:
        visit(child, 1)
    return rows


def _value_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray)):
        return repr(bytes(value))
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def layout_text(pl: "ParquetLayout") -> str:
    """Summary, region table (row groups and column chunks) and findings as plain text."""
    lines = [f"ParquetLayout({pl.location!r})", "  " + _summary(pl),
             f"  read {pl.source.bytes_read:,} bytes in {pl.source.read_count} requests",
             f"  {'offset':>12} {'end':>12} {'length':>12}  region"]
    rows = _rows(pl)
    for depth, r in rows[:MAX_ROWS]:
        if isinstance(r, int):
            lines.append(f"  {'':>12} {'':>12} {'':>12}  {'  ' * (depth - 1)}... {r} more")
            continue
        flag = " !" if r.finding is not None else ""
        lines.append(f"  {r.offset:>12,} {r.end:>12,} {r.length:>12,}  {'  ' * (depth - 1)}"
                     f"{r.name}  {_value_text(r.value)}{flag}".rstrip())
    if len(rows) > MAX_ROWS:
        lines.append(f"  ... {len(rows) - MAX_ROWS} more regions")
    if pl.findings:
        lines.append(f"  findings ({len(pl.findings)}):")
        lines.extend(f"    {f}" for f in pl.findings[:50])
        if len(pl.findings) > 50:
            lines.append(f"    ... {len(pl.findings) - 50} more")
    else:
        lines.append("  findings: none")
    return "\n".join(lines)


def layout_html(pl: "ParquetLayout") -> str:
    """A small static HTML table of the same content (no JavaScript, every string escaped)."""
    e = html.escape
    out = ["<div class='pe-parquet-layout'>",
           f"<div><b>ParquetLayout</b> <code>{e(str(pl.location))}</code></div>",
           f"<div>{e(_summary(pl))}</div>",
           f"<div>read {pl.source.bytes_read:,} bytes in {pl.source.read_count} requests</div>",
           "<table><thead><tr><th>offset</th><th>end</th><th>length</th><th>region</th>"
           "<th>value</th></tr></thead><tbody>"]
    rows = _rows(pl)
    for depth, r in rows[:MAX_ROWS]:
        if isinstance(r, int):
            out.append(f"<tr><td></td><td></td><td></td><td style='padding-left:"
                       f"{(depth - 1) * 1.5}em'>... {r} more</td><td></td></tr>")
            continue
        style = " style='color:#c00'" if r.finding is not None else ""
        out.append(f"<tr{style}><td>{r.offset:,}</td><td>{r.end:,}</td><td>{r.length:,}</td>"
                   f"<td style='padding-left:{(depth - 1) * 1.5}em'>{e(r.name)}</td>"
                   f"<td>{e(_value_text(r.value))}</td></tr>")
    out.append("</tbody></table>")
    if len(rows) > MAX_ROWS:
        out.append(f"<div>... {len(rows) - MAX_ROWS} more regions</div>")
    if pl.findings:
        out.append("<ul>")
        out.extend(f"<li>{e(str(f))}</li>" for f in pl.findings[:50])
        out.append("</ul>")
    else:
        out.append("<div>findings: none</div>")
    out.append("</div>")
    return "".join(out)


def hex_dump(pl: "ParquetLayout", offset: int = 0, length: int = 512) -> str:
    """Hex and ASCII of ``[offset, offset+length)``, each line annotated with the regions
    (deepest first) that start in it."""
    offset = max(0, min(offset, pl.size))
    data = pl.source.read(offset, min(length, 1 << 20))
    starts: dict[int, list[str]] = {}
    for _, r in pl.root.walk():
        if offset <= r.offset < offset + len(data) and r is not pl.root:
            starts.setdefault(r.offset, []).append(r.name)
    lines = []
    for i in range(0, len(data), 16):
        chunk = data[i:i + 16]
        at = offset + i
        hexpart = " ".join(f"{b:02x}" for b in chunk)
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        names = [f"@{o} {n}" for o in range(at, at + len(chunk)) for n in starts.get(o, [])[-1:]]
        lines.append(f"{at:>10}  {hexpart:<47}  {text:<16}  {'; '.join(names)}".rstrip())
    return "\n".join(lines)
