"""Which bytes a hex view shows, and reading them: window planning next to the region model.

Small files are shown whole. Larger ones are paged: the head, the tail and a few rows around each
top-level region boundary, within a budget of :data:`MAX_SHOWN` bytes, each window one range read,
so a 1 GiB file costs a few kilobytes. The display layer only draws the windows this returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from ._text import plural
from .regions import Region, top_regions

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
#: Region boundaries considered when paging (a footer with thousands of blobs has thousands).
MAX_EDGES = 4096


def align_down(n: int) -> int:
    return n - n % ROW


def merge_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted spans with overlapping or touching ones joined."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


@dataclass
class HexWindows:
    """The byte windows ``[(start, end)]`` of one hex view, their bytes, and notes on what was left out."""

    size: int
    windows: list[tuple[int, int]]
    data: dict[tuple[int, int], bytes] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def bytes_shown(self) -> int:
        return sum(b - a for a, b in self.windows)


def plan_windows(size: int, root: Region, offset: Optional[int] = None, length: Optional[int] = None,
                 expand: Sequence[str] = ("footer",)) -> HexWindows:
    """The windows of a view of ``size`` bytes: ``offset``/``length`` pick one range (``length``
    defaults to 512, at most :data:`MAX_SHOWN`); without them big files are paged around ``root``'s
    top-level region boundaries. Work is bounded by :data:`MAX_EDGES`, not by the region count."""
    notes: list[str] = []
    if offset is not None or length is not None:
        start = max(0, min(size, offset or 0))
        want = DEFAULT_LENGTH if length is None else max(0, length)
        if want > MAX_SHOWN:
            notes.append(f"{plural(want, 'byte')} asked for; showing the first {MAX_SHOWN:,}")
            want = MAX_SHOWN
        return HexWindows(size, [(start, min(size, start + want))] if start < size else [], notes=notes)
    if size <= WHOLE_FILE:
        return HexWindows(size, [(0, size)] if size else [])
    spans = merge_spans([(0, min(size, HEAD)), (align_down(max(0, size - TAIL)), size)])
    budget = MAX_SHOWN - sum(b - a for a, b in spans)
    edges_all: set[int] = set()
    for r in top_regions(root, expand):
        edges_all.add(r.offset)
        edges_all.add(r.end)
        if len(edges_all) >= MAX_EDGES:
            break
    skipped = 0
    for e in sorted(edges_all):
        a, b = align_down(max(0, e - EDGE_BEFORE)), min(size, align_down(e + EDGE_AFTER + ROW - 1))
        if a >= b:
            continue
        merged = merge_spans(spans + [(a, b)])
        cost = sum(y - x for x, y in merged) - sum(y - x for x, y in spans)
        if cost > budget:
            skipped += 1
            continue
        budget -= cost
        spans = merged
    if skipped:
        notes.append(f"{skipped:,} region boundaries not shown (view cap {plural(MAX_SHOWN, 'byte')}); "
                     "pass offset= and length= to see any range")
    return HexWindows(size, spans, notes=notes)


def read_windows(source: Any, windows: HexWindows) -> HexWindows:
    """Fill ``windows.data`` with one range read per window from ``source`` (a ByteSource)."""
    for w in windows.windows:
        windows.data[w] = bytes(source.read(w[0], w[1] - w[0]))
    return windows
