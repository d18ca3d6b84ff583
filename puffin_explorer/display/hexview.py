"""An annotated hex view of any region tree, coloured like the layout strip.

Small files are shown whole.  Larger ones are paged: the head, the tail and a
few rows around each top-level region boundary, with the bytes between counted
("… 1,048,576 bytes …").  At most :data:`MAX_SHOWN` bytes are read and shown,
each window with one range read, so a 1 GiB file costs a few kilobytes.
"""

from __future__ import annotations

import bisect
from typing import Any, Iterator, Optional, Sequence

from .._gc import gc_paused
from .._repr import RichRepr
from ..hexdump import MAX_SHOWN, ROW, align_down, plan_windows, read_windows
from ..regions import Region, _short_value
from . import html as H
from . import text as T
from .layout import EXPAND, colour_map, segments, legend_html

#: Findings marked in one hex view (the rest are counted in a note; the findings table lists them all).
MAX_MARKS = 64
#: Characters of hover text in one HTML hex view: bytes of a densely annotated (damaged) file after
#: this much keep their colours and labels without hover text, so the view stays under the output cap.
HOVER_BUDGET = 250_000


class _Leaf:
    """A coloured leaf region; its hover text is built only if a shown byte uses it."""

    __slots__ = ("start", "end", "css", "_region", "_path", "_title")

    def __init__(self, region: Region, path: tuple[str, ...], css: str) -> None:
        self.start, self.end, self.css = region.offset, region.end, css
        self._region, self._path = region, path
        self._title: Optional[str] = None

    @property
    def name(self) -> str:
        return T.printable(self._region.name)

    @property
    def title(self) -> str:
        if self._title is None:
            r = self._region
            value = "" if r.value is None else f" = {T.printable(_short_value(r.value))}"
            trail = " › ".join(T.cut(T.printable(p), 60) for p in self._path[1:]) or T.printable(r.name)
            self._title = f"{trail}{value}\n[{r.offset:,}, {r.end:,}) {r.length:,} bytes"
        return self._title


def _leaves(root: Region, expand: Sequence[str], windows: Sequence[tuple[int, int]]) -> list[_Leaf]:
    """File-space regions without file-space children that touch a shown window, sorted, each with its
    colour and hover text.  Subtrees outside the windows are not visited, and a subtree that names
    the same bytes as one already visited (thousands of footer entries for one blob) is drawn once:
    the work follows what is shown, not how many regions the file claims."""
    colours = colour_map(root, expand)
    spans = sorted(windows)
    starts = [a for a, _ in spans]
    out: list[_Leaf] = []
    seen: set = set()

    def touches(r: Region) -> bool:
        i = bisect.bisect_right(starts, max(r.offset, r.end - 1)) - 1
        while i >= 0:
            a, b = spans[i]
            if b <= r.offset:
                return False
            if a < r.end or (r.length <= 0 and a <= r.offset < b):
                return True
            i -= 1
        return False

    def visit(r: Region, path: tuple[str, ...], css: Optional[str]) -> None:
        css = colours.get(id(r), css)
        kids = [c for c in r.children if c.space == "file"]
        here = path + (r.name,)
        if kids:
            for c in kids:
                key = (c.offset, c.length, c.kind, c.name)
                if key in seen or not touches(c):
                    continue
                seen.add(key)
                visit(c, here, css)
            return
        if r.length <= 0:
            return
        out.append(_Leaf(r, here, css or ""))

    if root.children or touches(root):
        visit(root, (), None)
    del visit  # a recursive closure refers to itself: without this, it and what it holds wait for the cyclic GC
    out.sort(key=lambda l: (l.start, -l.end))
    return out


class HexView(RichRepr):
    """Annotated hex of ``source`` (a :class:`~puffin_explorer.io.ByteSource`), coloured by ``root``'s regions.

    ``offset``/``length`` pick one range (``length`` defaults to 512, at most
    :data:`MAX_SHOWN`); without them big files are paged.
    """

    @gc_paused()
    def __init__(self, source: Any, root: Region, offset: Optional[int] = None, length: Optional[int] = None,
                 expand: Sequence[str] = EXPAND, findings: Optional[Sequence[Any]] = None) -> None:
        self.source = source
        self.root = root
        self.size = int(source.size)
        self.expand = tuple(expand)
        self.requested = (offset, length)
        planned = read_windows(source, plan_windows(self.size, root, offset, length, self.expand))
        self.notes = list(planned.notes)
        self.windows = planned.windows
        self._data = planned.data
        self._leaf_list = _leaves(root, self.expand, self.windows)
        # findings in file space mark their bytes (at least one) in red, with the message on hover
        self._starts = [l.start for l in self._leaf_list]
        # each byte is checked against every mark: one mark per range and code, at most MAX_MARKS
        marks = []
        seen: set = set()
        wins = sorted(self.windows)
        win_starts = [wa for wa, _ in wins]

        def shown(a: int, b: int) -> bool:  # [a, b) meets a window (windows are sorted and disjoint)
            i = bisect.bisect_left(win_starts, b) - 1
            return i >= 0 and wins[i][1] > a

        for f in findings or []:
            if getattr(f, "space", "file") != "file" or f.offset is None:
                continue
            a = int(f.offset)
            if not shown(a, a + MAX_SHOWN):  # no mark is longer than MAX_SHOWN: the cheap test first
                continue
            m = (a, a + self._mark_length(f), f)
            key = (m[0], m[1], f.code)
            if key in seen:
                continue
            seen.add(key)
            if shown(a, min(m[1], a + MAX_SHOWN)):
                marks.append(m)
        marks.sort(key=lambda m: (m[0], m[1]))
        if len(marks) > MAX_MARKS:
            self.notes.append(f"{len(marks) - MAX_MARKS:,} more findings are not marked here (see the findings)")
            marks = marks[:MAX_MARKS]
        self._marks = marks
        self._mark_starts = {m[0] for m in marks}

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
        """``("gap", n_bytes)`` and ``("row", (row_start, first_offset, bytes, [leaf index per byte]))``."""
        prev_end = 0
        for a, b in self.windows:
            if a > prev_end:
                yield "gap", a - prev_end
            data = self._data[(a, b)]
            for row_start in range(align_down(a), b, ROW):
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

    def _mark_length(self, f: Any) -> int:
        """A finding's length, or the region that starts at its offset, or one byte."""
        if f.length:
            return max(1, min(int(f.length), MAX_SHOWN))
        li = self._leaf_at(f.offset)
        if li is not None and self._leaf_list[li].start == f.offset:
            return self._leaf_list[li].end - f.offset
        return 1

    def _labels(self, lo: int, leaves: list[Optional[int]]) -> list[str]:
        out = [f"⚠ {f.code}" for a, _, f in self._marks if lo <= a < lo + len(leaves)]
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
        hover_left = [HOVER_BUDGET]  # characters of hover text still to give, shared by the rows
        hover_stop = None
        for kind, item in self.rows():
            if kind == "gap":
                lines.append(f'<span class="pe-gap">… {item:,} bytes …</span>')
                continue
            row_start, lo, chunk, leaves = item
            if hover_left[0] <= 0 and hover_stop is None:
                hover_stop = lo
            lines.append(self._html_row(row_start, lo, chunk, leaves, hover_left))
        title = f"{self.root.name}: {self.size:,} bytes, {self.bytes_shown:,} shown"
        stop_note = [] if hover_stop is None else [
            f"bytes from offset {hover_stop:,} on have no hover text: this view's {HOVER_BUDGET:,} characters "
            "of it are used up (region and finding names stay in the labels)"]
        notes = "".join(f'<div class="pe-note">{H.esc(n)}</div>' for n in self.notes + stop_note)
        return (H.card("hex", self.root.name, H.facts([("size", H.esc(T.size(self.size))),
                                                        ("shown", f"{self.bytes_shown:,} bytes"),
                                                        ("windows", str(len(self.windows)))]))
                + self.legend() + notes + f'<div class="pe-hex" title={H.attr(title)}>' + "\n".join(lines)
                + "</div>")

    def _html_row(self, row_start: int, lo: int, chunk: bytes, leaves: list[Optional[int]],
                  hover_left: list[int]) -> str:
        pad = lo - row_start
        hex_parts = ["\u00a0" * (3 * pad - 1)] if pad else []  # no-break spaces keep the columns
        asc_parts = ["\u00a0" * pad] if pad else []
        j = 0
        n = len(chunk)
        # the marks on this row, and for each byte which of them cover it (one pass over the marks per row)
        row_marks = [m for m in self._marks if m[0] < lo + n and lo < m[1]]
        covering = [tuple(i for i, (a, b, _) in enumerate(row_marks) if a <= p < b) for p in range(lo, lo + n)]
        while j < n:
            li = leaves[j]
            bad = covering[j]
            k = j + 1
            while k < n and leaves[k] == li and covering[k] == bad and (lo + k) not in self._mark_starts:
                k += 1
            bs = chunk[j:k]
            cells = " ".join("<i>00</i>" if x == 0 else f"{x:02x}" for x in bs)
            asc = H.esc(_ascii(bs))
            warn = ""
            hover = hover_left[0] > 0
            if bad and hover:
                # the message once, on the bytes the finding starts at; after that only its code (repeats counted)
                full = [row_marks[i][2] for i in bad if row_marks[i][0] == lo + j]
                rest: dict[str, int] = {}
                for i in bad:
                    if row_marks[i][0] != lo + j:
                        code = row_marks[i][2].code
                        rest[code] = rest.get(code, 0) + 1
                warn = "\n" + "\n".join(
                    [f"⚠ {code}" + (f" ×{c}" if c > 1 else "") for code, c in rest.items()]
                    + [f"⚠ {f.severity.value} {f.code}: {T.printable(f.message, 300)}" for f in full])
            if li is None:
                tip = warn.strip()
                extra = (' class="pe-f"' + (f" title={H.attr(tip)}" if tip else "")) if bad else ""
                hex_parts.append(f"<span{extra}>{cells}</span>")
                asc_parts.append(asc)
            else:
                leaf = self._leaf_list[li]
                edge = " pe-e" if leaf.start == lo + j else ""
                flag = " pe-f" if bad else ""
                tip = leaf.title + warn if hover else ""
                title = f" title={H.attr(tip)}" if tip else ""
                hex_parts.append(f'<span class="pe-r {leaf.css}{edge}{flag}"{title}>{cells}</span>')
                asc_parts.append(f'<span class="{leaf.css}">{asc}</span>')
            hover_left[0] -= len(tip)
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


def _register() -> None:
    from .registry import register_view

    register_view(HexView, html=lambda hv, opts: hv.html_body(), text=lambda hv, opts: hv.text(),
                  css_class="pe-hexview")


_register()
