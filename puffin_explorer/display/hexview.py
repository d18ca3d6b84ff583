"""An annotated hex view of any region tree, coloured like the layout strip.

Small files are shown whole.  Larger ones are paged: the head, the tail and a
few rows around each top-level region boundary, with the bytes between counted
("… 1,048,576 bytes …").  At most :data:`MAX_SHOWN` bytes are read and shown,
each window with one range read, so a 1 GiB file costs a few kilobytes.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence

from .._repr import RichRepr
from ..regions import Region, _short_value
from . import html as H
from . import text as T
from .layout import EXPAND, region_css, segments, legend_html

ROW = 16
#: Files up to this size are shown whole.
WHOLE_FILE = 2048
#: Bytes shown at the start and at the end of a paged file.
HEAD = TAIL = 256
#: Bytes shown before and after each region boundary of a paged file.
EDGE_BEFORE, EDGE_AFTER = 16, 32
#: Most bytes one view shows (an explicit ``length`` is cut to this).
MAX_SHOWN = 8192
DEFAULT_LENGTH = 512


@dataclass
class _Leaf:
    start: int
    end: int
    css: str
    title: str
    name: str


def _leaves(root: Region, expand: Sequence[str]) -> list[_Leaf]:
    """File-space regions without file-space children, sorted, each with its colour and hover text."""
    colours = region_css(root, expand)
    out: list[_Leaf] = []

    def visit(r: Region, path: tuple[str, ...]) -> None:
        kids = [c for c in r.children if c.space == "file"]
        here = path + (r.name,)
        if kids:
            for c in kids:
                visit(c, here)
            return
        if r.length <= 0:
            return
        value = "" if r.value is None else f" = {T.printable(_short_value(r.value))}"
        trail = " › ".join(T.cut(T.printable(p), 60) for p in here[1:]) or T.printable(r.name)
        title = f"{trail}{value}\n[{r.offset:,}, {r.end:,}) {r.length:,} bytes"
        out.append(_Leaf(r.offset, r.end, colours.get(id(r), ""), title, T.printable(r.name)))

    if root.children:
        for c in root.children:
            if c.space == "file":
                visit(c, (root.name,))
    else:
        visit(root, ())
    out.sort(key=lambda l: (l.start, -l.end))
    return out


def _align_down(n: int) -> int:
    return n - n % ROW


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


class HexView(RichRepr):
    """Annotated hex of ``source`` (a :class:`~puffin_explorer.io.ByteSource`), coloured by ``root``'s regions.

    ``offset``/``length`` pick one range (``length`` defaults to 512, at most
    :data:`MAX_SHOWN`); without them big files are paged.
    """

    def __init__(self, source: Any, root: Region, offset: Optional[int] = None, length: Optional[int] = None,
                 expand: Sequence[str] = EXPAND) -> None:
        self.source = source
        self.root = root
        self.size = int(source.size)
        self.expand = tuple(expand)
        self.requested = (offset, length)
        self.notes: list[str] = []
        self.windows = self._plan(offset, length)
        self._data = {w: source.read(w[0], w[1] - w[0]) for w in self.windows}
        self._leaf_list = _leaves(root, self.expand)
        self._starts = [l.start for l in self._leaf_list]

    # ------------------------------------------------------------------ planning
    def _plan(self, offset: Optional[int], length: Optional[int]) -> list[tuple[int, int]]:
        size = self.size
        if offset is not None or length is not None:
            start = max(0, min(size, offset or 0))
            want = DEFAULT_LENGTH if length is None else max(0, length)
            if want > MAX_SHOWN:
                self.notes.append(f"{want:,} bytes asked for; showing the first {MAX_SHOWN:,}")
                want = MAX_SHOWN
            return [(start, min(size, start + want))] if start < size else []
        if size <= WHOLE_FILE:
            return [(0, size)] if size else []
        spans = [(0, min(size, HEAD)), (_align_down(max(0, size - TAIL)), size)]
        budget = MAX_SHOWN - sum(b - a for a, b in spans)
        segs = segments(self.root, self.expand)
        edges = sorted({s.offset for s in segs} | {s.end for s in segs})
        skipped = 0
        for e in edges:
            a, b = _align_down(max(0, e - EDGE_BEFORE)), min(size, _align_down(e + EDGE_AFTER + ROW - 1))
            merged = _merge(spans + [(a, b)])
            cost = sum(y - x for x, y in merged) - sum(y - x for x, y in _merge(spans))
            if cost > budget:
                skipped += 1
                continue
            budget -= cost
            spans = merged
        if skipped:
            self.notes.append(f"{skipped:,} region boundaries not shown (view cap {MAX_SHOWN:,} bytes); "
                              "pass offset= and length= to see any range")
        return _merge(spans)

    @property
    def bytes_shown(self) -> int:
        return sum(b - a for a, b in self.windows)

    # ------------------------------------------------------------------ annotation
    def _leaf_at(self, pos: int) -> Optional[int]:
        i = bisect.bisect_right(self._starts, pos) - 1
        for k in range(i, max(-1, i - 8), -1):  # overlapping regions only occur in broken files
            leaf = self._leaf_list[k]
            if leaf.start <= pos < leaf.end:
                return k
        return None

    def rows(self) -> Iterator[tuple[str, Any]]:
        """``("gap", n_bytes)`` and ``("row", (offset, bytes, [leaf index per byte]))`` in order."""
        prev_end = 0
        for a, b in self.windows:
            if a > prev_end:
                yield "gap", a - prev_end
            data = self._data[(a, b)]
            for row_start in range(_align_down(a), b, ROW):
                lo, hi = max(row_start, a), min(row_start + ROW, b)
                chunk = data[lo - a:hi - a]
                leaves = [self._leaf_at(p) for p in range(lo, hi)]
                yield "row", (row_start, lo, chunk, leaves)
            prev_end = b
        if self.size > prev_end and self.windows:
            yield "gap", self.size - prev_end

    # ------------------------------------------------------------------ outputs
    def to_pandas(self):
        """One row per shown line: offset, hex, ascii, regions starting in it."""
        import pandas as pd

        recs = []
        for kind, item in self.rows():
            if kind == "gap":
                continue
            row_start, lo, chunk, leaves = item
            recs.append({"offset": lo, "hex": chunk.hex(" "), "ascii": _ascii(chunk),
                         "regions": "; ".join(self._labels(lo, leaves))})
        return pd.DataFrame(recs, columns=["offset", "hex", "ascii", "regions"])

    def _labels(self, lo: int, leaves: list[Optional[int]]) -> list[str]:
        out = []
        for j, li in enumerate(leaves):
            if li is None:
                continue
            leaf = self._leaf_list[li]
            if leaf.start == lo + j:
                out.append(leaf.name)
        return out

    def legend(self) -> str:
        return legend_html(segments(self.root, self.expand))

    def html_body(self) -> str:
        lines = []
        for kind, item in self.rows():
            if kind == "gap":
                lines.append(f'<span class="pe-gap">… {item:,} bytes …</span>')
                continue
            row_start, lo, chunk, leaves = item
            lines.append(self._html_row(row_start, lo, chunk, leaves))
        title = f"{self.root.name}: {self.size:,} bytes, {self.bytes_shown:,} shown"
        notes = "".join(f'<div class="pe-note">{H.esc(n)}</div>' for n in self.notes)
        return (H.card("hex", self.root.name, H.facts([("size", H.esc(T.size(self.size))),
                                                        ("shown", f"{self.bytes_shown:,} bytes"),
                                                        ("windows", str(len(self.windows)))]))
                + self.legend() + notes + f'<div class="pe-hex" title={H.attr(title)}>' + "\n".join(lines)
                + "</div>")

    def _html_row(self, row_start: int, lo: int, chunk: bytes, leaves: list[Optional[int]]) -> str:
        pad = lo - row_start
        hex_parts = ["\u00a0" * (3 * pad - 1)] if pad else []  # no-break spaces keep the columns
        asc_parts = ["\u00a0" * pad] if pad else []
        j = 0
        n = len(chunk)
        while j < n:
            li = leaves[j]
            k = j + 1
            while k < n and leaves[k] == li:
                k += 1
            bs = chunk[j:k]
            cells = " ".join("<i>00</i>" if x == 0 else f"{x:02x}" for x in bs)
            asc = H.esc(_ascii(bs))
            if li is None:
                hex_parts.append(f"<span>{cells}</span>")
                asc_parts.append(asc)
            else:
                leaf = self._leaf_list[li]
                edge = " pe-e" if leaf.start == lo + j else ""
                hex_parts.append(f'<span class="pe-r {leaf.css}{edge}" title={H.attr(leaf.title)}>{cells}</span>')
                asc_parts.append(f'<span class="{leaf.css}">{asc}</span>')
            j = k
        hex_text = " ".join(hex_parts)
        missing = ROW - pad - n
        if missing > 0:
            hex_text += "\u00a0" * (3 * missing)
        labels = self._labels(lo, leaves)
        lab = f'  <span class="pe-lab">{H.esc(T.cut(", ".join(labels), 80))}</span>' if labels else ""
        nb = "\u00a0"
        return (f'<span class="pe-off">{row_start:08x}</span>{nb} {hex_text}{nb} |{"".join(asc_parts)}'
                f'{nb * max(0, missing)}|{lab}')

    def text(self) -> str:
        head = f"hex {self.root.name}  ({self.size:,} bytes, {self.bytes_shown:,} shown)"
        lines = [head] + [f"  {n}" for n in self.notes]
        for kind, item in self.rows():
            if kind == "gap":
                lines.append(f"          … {item:,} bytes …")
                continue
            row_start, lo, chunk, leaves = item
            pad = lo - row_start
            cells = "   " * pad + " ".join(f"{x:02x}" for x in chunk)
            labels = self._labels(lo, leaves)
            lab = f"  {T.cut(', '.join(labels), 70)}" if labels else ""
            lines.append(f"{row_start:08x}  {cells:<47}  |{' ' * pad}{_ascii(chunk):<{ROW - pad}}|{lab}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"HexView({self.root.name!r}, windows={self.windows})"


def _ascii(bs: bytes) -> str:
    return "".join(chr(x) if 32 <= x < 127 else "." for x in bs)
