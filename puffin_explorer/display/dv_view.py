"""The deletion-vector view: counts, CRC, range, chart, container and run breakdowns, first/last positions."""

from __future__ import annotations

from typing import Any, Optional

from . import html as H
from . import text as T
from .._text import plural
from .tables import findings_html, findings_text, render_region_tree_html

#: Positions listed at each end of the vector.
EDGE_POSITIONS = 10


def run_stats(dv: Any) -> dict[str, int]:
    """``{"runs", "positions"}`` from the model (:meth:`DeletionVector.run_count`)."""
    return {"runs": dv.run_count(), "positions": dv.cardinality}


def _facts(dv: Any) -> list[tuple[str, str]]:
    lo, hi = dv.min_position, dv.max_position
    return [
        ("deleted rows", f"<b>{dv.cardinality:,}</b>"),
        ("positions", "none" if lo is None else f"{lo:,} … {hi:,}"),
        ("CRC-32", _crc_html(dv)),
        ("buckets", f"{len(dv.buckets):,}"),
        ("blob bytes", f"{len(dv.to_bytes()):,}"),
    ]


def _crc_html(dv: Any) -> str:
    if dv.crc_stored is None:
        return H.badge("missing", "error")
    if dv.crc_ok:
        return H.badge(f"ok {dv.crc_stored:#010x}", "ok")
    return H.badge(f"BAD stored {dv.crc_stored:#010x}, computed {dv.crc_computed:#010x}", "error")


def container_rows(dv: Any) -> list[list[Any]]:
    summary = dv.container_summary()
    rows = []
    for kind in ("array", "bitmap", "run"):
        d = summary.get(kind)
        if not d:
            continue
        per = d["bytes"] / d["positions"] if d["positions"] else 0.0
        rows.append([kind, f"{d['containers']:,}", f"{d['positions']:,}", f"{d['bytes']:,}", f"{per:.3f}"])
    return rows


def html_body(dv: Any, opts: Any, title: Optional[str] = None) -> str:
    parts = [H.card("deletion vector", title or dv.referenced_data_file or "(no referenced data file)",
                    H.facts([("data file", H.esc(dv.referenced_data_file or "—"))] + _facts(dv)))]
    parts.append(findings_html(dv.findings, max_rows=opts.max_rows))
    if dv.cardinality and not opts.compact:
        from .charts import dv_chart_svg

        parts.append(f'<div class="pe-chart">{dv_chart_svg(dv)}</div>')
    if dv.cardinality:  # an empty or unreadable vector has no containers, runs or positions to tabulate
        parts.append(_containers_html(dv))
    if not opts.compact:
        parts.append(H.details("Byte layout", render_region_tree_html(dv.region_tree(), max_rows=2 * opts.max_rows),
                               False,
                               f" {len(dv.regions())} regions"))
    return "".join(parts)


def _containers_html(dv: Any) -> str:
    """Containers by kind, run statistics and the first and last positions."""
    runs = run_stats(dv)
    crows = container_rows(dv)
    ctab = H.table(["container", "count", "positions", "bytes", "bytes / position"], crows,
                   ["", "pe-num", "pe-num", "pe-num", "pe-num"])
    mean = dv.cardinality / runs["runs"] if runs["runs"] else 0
    run_html = (f'<div class="pe-note">{plural(runs["runs"], "run")} of consecutive positions, '
                f'{mean:,.1f} positions per run on average</div>')
    first, last = dv.edge_positions(EDGE_POSITIONS)
    n = max(len(first), len(last))
    total = dv.cardinality
    # the last positions are numbered by their rank in the vector (1-based), not -10..-1
    erows = [[i + 1 if i < len(first) else "", f"{first[i]:,}" if i < len(first) else "",
              f"{total - len(last) + i + 1:,}" if i < len(last) else "", f"{last[i]:,}" if i < len(last) else ""]
             for i in range(n)]
    etab = H.table(["#", "first positions", "#", "last positions"], erows, ["pe-num"] * 4)
    return H.details("Containers and runs", f'<div class="pe-cols"><div>{ctab}{run_html}</div>'
                                            f"<div>{etab}</div></div>", True)


def text(dv: Any, opts: Any = None, title: Optional[str] = None) -> str:
    lo, hi = dv.min_position, dv.max_position
    crc = ("missing" if dv.crc_stored is None else
           f"ok ({dv.crc_stored:#010x})" if dv.crc_ok else
           f"BAD (stored {dv.crc_stored:#010x}, computed {dv.crc_computed:#010x})")
    lines = [f"DeletionVector  {T.printable(title or dv.referenced_data_file or '(no referenced data file)')}",
             f"  deleted rows {dv.cardinality:,}  positions "
             + ("none" if lo is None else f"{lo:,} … {hi:,}") + f"  CRC {crc}",
             f"  buckets {len(dv.buckets):,}  blob {plural(len(dv.to_bytes()), 'byte')}"]
    runs = run_stats(dv)["runs"] if dv.cardinality else 0
    if runs:  # a malformed vector can claim positions its containers do not hold
        lines.append(f"  runs {runs:,} (mean {dv.cardinality / runs:,.1f} positions)")
    crows = container_rows(dv)
    if crows:
        lines.append(T.table(["container", "count", "positions", "bytes", "bytes/pos"], crows, right=(1, 2, 3, 4)))
    first, last = dv.edge_positions(EDGE_POSITIONS)
    if first:
        lines.append("  first " + ", ".join(f"{p:,}" for p in first))
        lines.append("  last  " + ", ".join(f"{p:,}" for p in last))
    ft = findings_text(dv.findings)
    if ft:
        lines.append(ft)
    return "\n".join(lines)


def _register() -> None:
    from .._repr import register_maker
    from ..format.dv import DeletionVector
    from .charts import dv_figure
    from .registry import register_view

    register_view(DeletionVector, html=html_body, text=text, css_class="pe-dv")
    register_maker("figure", DeletionVector, dv_figure)


_register()
