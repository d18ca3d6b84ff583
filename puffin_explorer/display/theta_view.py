"""The theta-sketch view: estimate and 1–3σ bounds (table and chart), retained entries, theta, ndv."""

from __future__ import annotations

from typing import Any, Optional

from . import html as H
from . import text as T
from .schema import fields_label
from .tables import findings_html, findings_text, render_region_tree_html


def _columns(sk: Any, names: Optional[dict[int, str]]) -> str:
    if sk.metadata is None:
        return ""
    return fields_label(sk.metadata.fields, names)


def bounds_rows(sk: Any) -> list[list[str]]:
    return [[f"{k}σ", f"{lo:,.2f}", f"{sk.estimate:,.2f}", f"{hi:,.2f}"] for k, (lo, hi) in sk.bounds().items()]


def _ndv_text(sk: Any) -> str:
    ndv = sk.ndv_property
    if ndv is None:
        return "no ndv property"
    if sk.ndv_agrees is None:
        return f"ndv {ndv} (not comparable)"
    return f"ndv {ndv} " + ("agrees" if sk.ndv_agrees else f"DISAGREES (expected {sk.expected_ndv:,})")


def html_body(sk: Any, opts: Any) -> str:
    compact = opts.compact
    cols = _columns(sk, (dict(opts.names) or None))
    title = f"fields {cols}" if cols else "theta sketch"
    if sk.sketch is None:
        return H.card("theta sketch", title, H.facts([("status", H.badge("unreadable", "error"))])) + \
            findings_html(sk.findings)
    ndv = sk.ndv_property
    ndv_html = "—" if ndv is None else (H.esc(ndv) + " " + (
        H.badge("agrees", "ok") if sk.ndv_agrees else
        H.badge("not comparable", "warning") if sk.ndv_agrees is None else
        H.badge(f"disagrees: expected {sk.expected_ndv:,}", "error")))
    mode = "estimation" if sk.is_estimation_mode else "exact"
    body = H.facts([("estimate", f"<b>{sk.estimate:,.2f}</b>"), ("retained", f"{sk.num_retained:,}"),
                    ("theta", f"{sk.theta:.6g}"), ("mode", mode), ("ndv property", ndv_html),
                    ("seed hash", H.esc(f"{sk.seed_hash:#06x}" if sk.seed_hash is not None else "?")),
                    ("serial version", H.esc(sk.serial_version))])
    parts = [H.card("theta sketch", title, body), findings_html(sk.findings)]
    table = H.table(["bound", "lower", "estimate", "upper"], bounds_rows(sk), ["", "pe-num", "pe-num", "pe-num"])
    chart = ""
    if not compact:
        from .charts import theta_chart_svg

        chart = f'<div class="pe-chart">{theta_chart_svg(sk)}</div>'
    parts.append(f'<div class="pe-cols"><div>{table}</div>{chart}</div>')
    if not compact and sk.regions():
        parts.append(H.details("Byte layout", render_region_tree_html(sk.region_tree(), max_rows=2 * opts.max_rows),
                               False))
    return "".join(parts)


def text(sk: Any, opts: Any) -> str:
    cols = _columns(sk, (dict(opts.names) or None))
    head = "ThetaSketch" + (f"  fields {cols}" if cols else "")
    if sk.sketch is None:
        return head + "\n  unreadable\n" + findings_text(sk.findings)
    mode = "estimation" if sk.is_estimation_mode else "exact"
    lines = [head,
             f"  estimate {sk.estimate:,.2f}  retained {sk.num_retained:,}  theta {sk.theta:.6g}  {mode}",
             f"  {_ndv_text(sk)}",
             T.table(["bound", "lower", "estimate", "upper"], bounds_rows(sk), right=(1, 2, 3))]
    ft = findings_text(sk.findings)
    if ft:
        lines.append(ft)
    return "\n".join(lines)


def _register() -> None:
    from ..format.theta import ThetaSketch
    from .registry import register_view

    register_view(ThetaSketch, html=html_body, text=text, css_class="pe-theta")


_register()
