"""The deletion-vector view: counts, CRC, range, chart, container and run breakdowns, first/last positions."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..regions import Region
from . import html as H
from . import text as T
from .tables import findings_html, findings_text, render_region_tree_html

#: Positions listed at each end of the vector.
EDGE_POSITIONS = 10


def _container_bytes(dv: Any, c: Any) -> memoryview:
    lo = c.offset - dv.offset
    return memoryview(dv.to_bytes())[lo:lo + c.length]


def run_stats(dv: Any) -> dict[str, int]:
    """Maximal runs of consecutive deleted positions, counted from the containers (nothing materialized)."""
    firsts, lasts, runs = [], [], []
    bitmaps = []
    order = []
    for b in dv.buckets:
        for c in b.bitmap.containers:
            base = (b.key << 32) | (c.key << 16)
            raw = _container_bytes(dv, c)
            if c.cardinality == 0 or len(raw) < c.length:
                continue
            if c.kind == "array":
                v = np.frombuffer(raw, dtype="<u2", count=c.cardinality).astype(np.int64)
                runs.append(1 + int(np.count_nonzero(np.diff(v) != 1)))
                firsts.append(base + int(v[0]))
                lasts.append(base + int(v[-1]))
            elif c.kind == "run":
                if c.runs == 0:
                    continue
                pairs = np.frombuffer(raw, dtype="<u2", count=2 * c.runs, offset=2).reshape(-1, 2).astype(np.int64)
                starts, ends = pairs[:, 0], pairs[:, 0] + pairs[:, 1]
                runs.append(1 + int(np.count_nonzero(starts[1:] != ends[:-1] + 1)))
                firsts.append(base + int(starts[0]))
                lasts.append(base + int(ends[-1]))
            else:
                bitmaps.append(np.frombuffer(raw, dtype="<u8", count=1024))
                order.append(len(runs))
                runs.append(0)
                firsts.append(base)
                lasts.append(base)
    if bitmaps:
        words = np.stack(bitmaps)
        carry = np.zeros_like(words)
        carry[:, 1:] = words[:, :-1] >> np.uint64(63)
        starts_mask = words & ~((words << np.uint64(1)) | carry)
        if hasattr(np, "bitwise_count"):
            counts = np.bitwise_count(starts_mask).sum(axis=1)
        else:  # pragma: no cover - numpy < 2
            counts = np.unpackbits(starts_mask.view(np.uint8), axis=1).sum(axis=1)
        for j, i in enumerate(order):
            runs[i] = int(counts[j])
            w = words[j]
            nz = np.flatnonzero(w)
            if not len(nz):
                continue
            lo_word, hi_word = int(nz[0]), int(nz[-1])
            lo_bits = np.unpackbits(w[lo_word:lo_word + 1].view(np.uint8), bitorder="little")
            hi_bits = np.unpackbits(w[hi_word:hi_word + 1].view(np.uint8), bitorder="little")
            firsts[i] += lo_word * 64 + int(np.flatnonzero(lo_bits)[0])
            lasts[i] += hi_word * 64 + int(np.flatnonzero(hi_bits)[-1])
    total = sum(runs)
    joined = sum(1 for i in range(1, len(runs)) if firsts[i] == lasts[i - 1] + 1)
    return {"runs": total - joined, "positions": dv.cardinality}


def edge_positions(dv: Any, n: int = EDGE_POSITIONS) -> tuple[list[int], list[int]]:
    """The first and last ``n`` deleted positions, decoding only the containers at the ends."""
    pairs = [(b, c) for b in dv.buckets for c in b.bitmap.containers]
    first: list[int] = []
    for b, c in pairs:
        first.extend(int(x) for x in dv._container_values(b, c)[: n - len(first)])
        if len(first) >= n:
            break
    last: list[int] = []
    for b, c in reversed(pairs):
        vals = dv._container_values(b, c)
        last[:0] = [int(x) for x in vals[max(0, len(vals) - (n - len(last))):]]
        if len(last) >= n:
            break
    return first, last


def _regions_root(dv: Any) -> Region:
    regs = dv.regions()
    size = len(dv.to_bytes())
    return Region("deletion vector", "dv", dv.offset, size, regs, space=dv.space)


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


def html_body(dv: Any, title: Optional[str] = None, compact: bool = False) -> str:
    parts = [H.card("deletion vector", title or dv.referenced_data_file or "(no referenced data file)",
                    H.facts([("data file", H.esc(dv.referenced_data_file or "—"))] + _facts(dv)))]
    parts.append(findings_html(dv.findings))
    if dv.cardinality and not compact:
        from .charts import dv_chart_svg

        parts.append(f'<div class="pe-chart">{dv_chart_svg(dv)}</div>')
    runs = run_stats(dv) if dv.cardinality else {"runs": 0}
    crows = container_rows(dv)
    ctab = H.table(["container", "count", "positions", "bytes", "bytes / position"], crows,
                   ["", "pe-num", "pe-num", "pe-num", "pe-num"])
    mean = dv.cardinality / runs["runs"] if runs["runs"] else 0
    run_html = (f'<div class="pe-note">{runs["runs"]:,} runs of consecutive positions, '
                f'{mean:,.1f} positions per run on average</div>')
    first, last = edge_positions(dv)
    n = max(len(first), len(last))
    erows = [[i, f"{first[i]:,}" if i < len(first) else "", (-len(last) + i) if i < len(last) else "",
              f"{last[i]:,}" if i < len(last) else ""] for i in range(n)]
    etab = H.table(["#", "first positions", "#", "last positions"], erows, ["pe-num"] * 4)
    parts.append(H.details("Containers and runs", f'<div class="pe-cols"><div>{ctab}{run_html}</div>'
                                                  f"<div>{etab}</div></div>", True))
    if not compact:
        parts.append(H.details("Byte layout", render_region_tree_html(_regions_root(dv)), False,
                               f" {len(dv.regions())} regions"))
    return "".join(parts)


def text(dv: Any, title: Optional[str] = None) -> str:
    lo, hi = dv.min_position, dv.max_position
    crc = ("missing" if dv.crc_stored is None else
           f"ok ({dv.crc_stored:#010x})" if dv.crc_ok else
           f"BAD (stored {dv.crc_stored:#010x}, computed {dv.crc_computed:#010x})")
    lines = [f"DeletionVector  {T.printable(title or dv.referenced_data_file or '(no referenced data file)')}",
             f"  deleted rows {dv.cardinality:,}  positions "
             + ("none" if lo is None else f"{lo:,} … {hi:,}") + f"  CRC {crc}",
             f"  buckets {len(dv.buckets):,}  blob {len(dv.to_bytes()):,} bytes"]
    if dv.cardinality:
        runs = run_stats(dv)["runs"]
        lines.append(f"  runs {runs:,} (mean {dv.cardinality / runs:,.1f} positions)")
    crows = container_rows(dv)
    if crows:
        lines.append(T.table(["container", "count", "positions", "bytes", "bytes/pos"], crows, right=(1, 2, 3, 4)))
    first, last = edge_positions(dv)
    if first:
        lines.append("  first " + ", ".join(f"{p:,}" for p in first))
        lines.append("  last  " + ", ".join(f"{p:,}" for p in last))
    ft = findings_text(dv.findings)
    if ft:
        lines.append(ft)
    return "\n".join(lines)
