"""The generic view: what any object with ``regions()`` / ``findings`` / ``summary()`` gets.

A card with the type name and ``summary()``, the findings table, the layout strip
and the region tree.  Each part is optional: a missing method is skipped, and a
method that raises shows as a note instead of breaking the cell.
"""

from __future__ import annotations

from typing import Any, Optional

from ..regions import Region
from . import html as H
from . import text as T
from .layout import strip_html, strip_text
from .options import RenderOptions, ViewSpec
from .tables import findings_html, findings_text, region_tree_text, render_region_tree_html


def region_root(obj: Any) -> Optional[Region]:
    """``obj.regions()`` as one root region (a list of regions gets a parent spanning them)."""
    fn = getattr(obj, "regions", None)
    if not callable(fn):
        return None
    regs = fn()
    if isinstance(regs, Region):
        return regs
    regs = [r for r in (regs or []) if isinstance(r, Region)]
    if not regs:
        return None
    start = min(r.offset for r in regs)
    end = max(r.end for r in regs)
    return Region(type(obj).__name__, "object", start, end - start, list(regs), space=regs[0].space)


def _summary(obj: Any) -> Optional[str]:
    fn = getattr(obj, "summary", None)
    return str(fn()) if callable(fn) else None


def _findings(obj: Any) -> list:
    found = getattr(obj, "findings", None)
    return list(found) if isinstance(found, (list, tuple)) else []


def _safe(fn, *args) -> tuple[Any, Optional[str]]:
    try:
        return fn(*args), None
    except Exception as exc:  # a plug-in's bug must not break the cell
        return None, f"{type(exc).__name__}: {exc}"


def generic_html(obj: Any, opts: RenderOptions) -> str:
    """Card (type name and summary), findings, layout strip and region tree."""
    summary, err_s = _safe(_summary, obj)
    root, err_r = _safe(region_root, obj)
    facts = []
    if summary is not None:
        facts.append(("summary", H.esc(H.clip(T.printable(summary), opts.max_cell_chars))))
    if root is not None:
        facts += [("offset", f"{root.offset:,}"), ("length", f"{root.length:,} B")]
    parts = [H.card(type(obj).__name__, "", H.facts(facts)),
             findings_html(_findings(obj), max_rows=opts.max_rows)]
    for err in (err_s, err_r):
        if err:
            parts.append(f'<div class="pe-note pe-error">view error: {H.esc(H.clip(err, 300))}</div>')
    if root is not None:
        if root.space == "file" and root.children:
            parts.append(strip_html(root))
        if not opts.compact:
            parts.append(H.details("Byte regions", render_region_tree_html(root, table_rows=opts.max_rows), False,
                                   f" {sum(1 for _ in root.walk()) - 1:,}"))
    return "".join(parts)


def generic_text(obj: Any, opts: RenderOptions) -> str:
    """Type name and summary, findings, layout strip and region tree as text."""
    summary, err_s = _safe(_summary, obj)
    root, err_r = _safe(region_root, obj)
    lines = [type(obj).__name__ + (f"  {T.cut(T.printable(summary), 200)}" if summary else "")]
    lines += [f"  view error: {T.cut(T.printable(e), 300)}" for e in (err_s, err_r) if e]
    ft = findings_text(_findings(obj))
    if ft:
        lines.append(ft)
    if root is not None:
        if root.space == "file" and root.children:
            lines.append("layout " + strip_text(root))
        lines.append(region_tree_text(root))
    return "\n".join(lines)


GENERIC_VIEW = ViewSpec(generic_html, generic_text, "pe-generic")
