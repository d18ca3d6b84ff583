"""The region tree of a Parquet layout: row groups, chunks and pages as regions, zero
padding told from gaps, and unparsed bytes marked when there is no footer to say what they are."""

from __future__ import annotations

from typing import Optional

from ..regions import Region
from .parts import PageInfo
from .regions import check_children, struct_regions
from .spec import CODECS, enum_name


#: At most this many unclaimed bytes of a file are read to tell zero padding from a gap
#: (parquet-mr pads row groups to a block boundary with up to 8 MiB of zeros by default).
PADDING_PROBE = 8 * 1024 * 1024


class RegionBuilder:
    """Mixin of :class:`~puffin_explorer.parquet.layout.ParquetLayout`: the region tree."""

    def _zero_padding(self, offset: int, length: int) -> Optional[str]:
        """None unless bytes [offset, offset+length) are all zero; then a note on them ("" for none).

        Reads them (or finds them in the tail already read) while the file's
        :data:`PADDING_PROBE` budget lasts; bytes past the budget stay gaps."""
        if length <= 0 or length > self._padding_budget:
            return None
        self._padding_budget -= length
        data = self._fetch(offset, length)
        if len(data) != length or data.count(0) != length:
            return None
        pointing = [f"row group {c.row_group} {c.name}" for rg in self.row_group_infos
                    for c in rg.chunks if c.chunk.get("file_offset") == offset]
        if not pointing:
            return ""
        more = f" and {len(pointing) - 3} more" if len(pointing) > 3 else ""
        return (f"the file_offset of {', '.join(pointing[:3])}{more} points here, "
                "but no metadata copy is there")

    def _finish(self, top: list[Region]) -> None:
        if self.metadata is None and self.size > 4:
            # Without a footer nothing says what the bytes are: mark them unparsed (the
            # finding that explains why is already recorded), rather than as gaps.
            cursor = 4
            for r in sorted(top, key=lambda r: r.offset) + [Region("", "", self.size, 0)]:
                if r.offset > cursor:
                    top.append(Region("unparsed bytes", "unparsed", cursor, r.offset - cursor))
                cursor = max(cursor, r.end)
        self.root.children = top
        check_children(self.root, self._add, "the file", self._zero_padding)

    def _row_group_regions(self) -> list[Region]:
        out = []
        for rg in self.row_group_infos:
            chunk_regions = []
            for c in rg.chunks:
                if c.meta is None:
                    continue
                codec = enum_name(CODECS, c.meta_get("codec"))
                kids = [_page_region(p, codec) if p.header_length > 0 else _indexed_page_region(p)
                        for p in c.pages]
                if kids and not c.pages_walked:
                    # Pages known from the offset index only: the dictionary page (which
                    # the index does not list) fills the chunk up to the first data page.
                    first = min(k.offset for k in kids)
                    if first > c.start and c.dictionary_page_at_start():
                        kids.append(Region(
                            "dictionary page (header not read)", "dictionary-page", c.start,
                            first - c.start,
                            value=("at data_page_offset; dictionary_page_offset not set"
                                   if c.dictionary_offset_unset() else None)))
                r = Region(f"column chunk {c.name}", "column-chunk", c.start, c.length, kids,
                           value=f"{codec}, {len(c.pages)} pages")
                if kids:
                    check_children(r, self._add, f"row group {c.row_group} column {c.name}",
                                   self._zero_padding)
                c.region = r
                chunk_regions.append(r)
                if c.meta_copy is not None:
                    ts = c.meta_copy
                    chunk_regions.append(Region(f"column metadata copy {c.name}", "column-meta-copy",
                                                ts.offset, ts.length, struct_regions(ts),
                                                value=f"{ts.type_name} at file_offset",
                                                finding=c.meta_copy_finding))
            if not chunk_regions:
                continue
            lo = min(r.offset for r in chunk_regions)
            hi = max(r.end for r in chunk_regions)
            region = Region(f"row group {rg.index}", "row-group", lo, hi - lo, chunk_regions,
                            value=f"{rg.num_rows} rows")
            check_children(region, self._add, f"row group {rg.index}", self._zero_padding)
            rg.region = region
            out.append(region)
        return out


_PAGE_KINDS = {"DATA_PAGE": "data-page", "DATA_PAGE_V2": "data-page",
               "DICTIONARY_PAGE": "dictionary-page", "INDEX_PAGE": "index-page"}


def _page_region(p: PageInfo, codec: str) -> Region:
    kind = _PAGE_KINDS.get(p.page_type, "page")
    label = {"data-page": "data page", "dictionary-page": "dictionary page",
             "index-page": "index page"}.get(kind, "page")
    header = Region("page header", "page-header", p.offset, p.header_length,
                    struct_regions(p.header) if p.header is not None else [],
                    value=p.page_type)
    payload = Region("page payload", "page-payload", p.offset + p.header_length,
                     p.compressed_size,
                     value=f"{codec + ' ' if codec else ''}{p.compressed_size} B -> "
                           f"{p.uncompressed_size} B")
    value = f"{p.num_values} values" if p.num_values is not None else None
    return Region(f"{label} {p.index}", kind, p.offset, p.header_length + p.compressed_size,
                  [header, payload], value=value)


def _indexed_page_region(p: PageInfo) -> Region:
    """A data page known from the offset index alone: where it is, not what its header says."""
    return Region(f"data page {p.index} (header not read)", "data-page", p.offset,
                  p.compressed_size, value=f"rows from {p.first_row_index}")
