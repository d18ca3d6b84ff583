"""The layout strip: a file's top-level regions drawn to scale, with the colours every view shares.

Works on any :class:`~puffin_explorer.regions.Region` tree: the root's children are
the segments, and children of kinds listed in ``expand`` (the Puffin footer by
default) are shown as their parts.  Colours are CSS classes (``pe-k0`` … ``pe-k9``
cycling, ``pe-kmagic``, ``pe-kmeta``, ``pe-kbad``) so the strip, the legend, the
blob table and the hex view agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from ..regions import Region, top_regions
from .html import attr, esc, swatch
from .text import size as fmt_size

PALETTE = 10
#: Segments drawn before consecutive segments of one kind are merged into groups.
MAX_SEGMENTS = 160
EXPAND = ("footer",)
_MAGIC_KINDS = {"magic"}
_META_PREFIXES = ("footer",)
_BAD_KINDS = {"unclaimed", "unparsed"}


@dataclass
class Segment:
    """One drawn piece of the strip."""

    name: str
    kind: str
    offset: int
    length: int
    css: str
    regions: list[Region]

    @property
    def end(self) -> int:
        return self.offset + self.length


def colour_class(region: Region, index: int) -> str:
    """The colour class of a top-level region; ``index`` counts the palette regions before it."""
    if region.kind in _MAGIC_KINDS:
        return "pe-kmagic"
    if region.kind in _BAD_KINDS:
        return "pe-kbad"
    if region.kind.startswith(_META_PREFIXES):
        return "pe-kmeta"
    return f"pe-k{index % PALETTE}"


def colour_map(root: Region, expand: Sequence[str] = EXPAND) -> dict[int, str]:
    """``id(region) -> css class`` for every top-level region (the keys of the legend); once per tree."""
    return root.memo(("colour_map", tuple(expand)), lambda: _colour_map(root, expand))


def _colour_map(root: Region, expand: Sequence[str]) -> dict[int, str]:
    out: dict[int, str] = {}
    palette_i = 0
    for r in top_regions(root, expand):
        css = colour_class(r, palette_i)
        if css.startswith("pe-k") and css[4:].isdigit():
            palette_i += 1
        out[id(r)] = css
    return out


def segments(root: Region, expand: Sequence[str] = EXPAND, max_segments: int = MAX_SEGMENTS) -> list[Segment]:
    """The strip's segments; beyond ``max_segments`` runs of one kind are merged into groups (once per tree)."""
    return root.memo(("segments", tuple(expand), max_segments), lambda: _segments(root, expand, max_segments))


def _segments(root: Region, expand: Sequence[str], max_segments: int) -> list[Segment]:
    regions = top_regions(root, expand)
    colours = colour_map(root, expand)
    segs = [Segment(r.name, r.kind, r.offset, r.length, colours[id(r)], [r]) for r in regions]
    if len(segs) <= max_segments:
        return segs
    group = -(-len(segs) // max_segments) * 2
    merged: list[Segment] = []
    run: list[Segment] = []

    def flush() -> None:
        if not run:
            return
        if len(run) == 1:
            merged.append(run[0])
        else:
            first, last = run[0], run[-1]
            merged.append(Segment(f"{first.name} … {last.name} ({len(run)} regions)", first.kind,
                                  first.offset, last.end - first.offset, first.css,
                                  [r for s in run for r in s.regions]))
        run.clear()

    for s in segs:
        if run and (s.kind != run[0].kind or len(run) >= group):
            flush()
        run.append(s)
    flush()
    return merged


def _title(seg: Segment) -> str:
    return f"{seg.name}: [{seg.offset:,}, {seg.end:,}) {seg.length:,} bytes"


def strip_html(root: Region, expand: Sequence[str] = EXPAND, legend: bool = True) -> str:
    """The layout strip drawn to scale (widths proportional to bytes), with its legend."""
    segs = segments(root, expand)
    total = max(1, root.length, max((s.end for s in segs), default=0))
    parts = ['<div class="pe-strip">']
    for s in segs:
        pct = 100.0 * s.length / total
        label = esc(s.name) if pct >= 6 else ""
        parts.append(f'<div class="{s.css}" style="width:{pct:.3f}%" title={attr(_title(s))}>{label}</div>')
    parts.append("</div>")
    parts.append(f'<div class="pe-scale"><span>0</span><span>{esc(fmt_size(root.length))}</span></div>')
    if legend:
        parts.append(legend_html(segs))
    return "".join(parts)


def legend_html(segs: list[Segment]) -> str:
    items = []
    for s in segs:
        items.append(f'<span title={attr(_title(s))}>{swatch(s.css)}{esc(s.name)} '
                     f'<span class="pe-muted">{s.length:,} B @ {s.offset:,}</span></span>')
    return '<div class="pe-legend">' + "".join(items) + "</div>"


def strip_text(root: Region, expand: Sequence[str] = EXPAND, width: int = 72) -> str:
    """The strip as one line of characters, each segment at least one wide, plus a key."""
    segs = segments(root, expand)
    total = max(1, root.length)
    marks = []
    key = []
    blob_i = 0
    for s in segs:
        if s.css == "pe-kmagic":
            ch = "M"
        elif s.css == "pe-kmeta":
            ch = "F"
        elif s.css == "pe-kbad":
            ch = "?"
        else:
            ch = "0123456789abcdefghijklmnopqrstuvwxyz"[blob_i % 36]
            blob_i += 1
        n = max(1, round(width * s.length / total))
        marks.append(ch * n)
        key.append(f"{ch}={s.name}")
    line = "[" + "".join(marks) + "]"
    legend = ", ".join(dict.fromkeys(key))
    return f"{line}\n  {legend}" if len(legend) < 400 else f"{line}\n  {legend[:399]}…"


def region_css(root: Region, expand: Sequence[str] = EXPAND) -> dict[int, str]:
    """``id(region) -> css class`` for every file-space region, inherited from its top-level ancestor
    (once per tree)."""
    return root.memo(("region_css", tuple(expand)), lambda: _region_css(root, expand))


def _region_css(root: Region, expand: Sequence[str]) -> dict[int, str]:
    colours = colour_map(root, expand)
    out: dict[int, str] = {}

    def visit(r: Region, inherited: Optional[str]) -> None:
        css = colours.get(id(r), inherited)
        if css is not None:
            out[id(r)] = css
        for c in r.children:
            visit(c, css)

    visit(root, None)
    del visit  # a recursive closure refers to itself: without this, it and what it holds wait for the cyclic GC
    return out
