"""Page indexes (column and offset indexes) and bloom filters of a Parquet file."""

from __future__ import annotations

from typing import Any, Optional

from ..regions import Region, Severity
from .parts import ChunkInfo, PageInfo
from .regions import check_children, struct_regions
from .schema import ColumnInfo, decode_stat
from .spec import SCHEMA
from .thrift import CompactReader, ThriftError, TStruct

INDEX_COALESCE_SLACK = 1024 * 1024  # read all page indexes at once if the holes are this small


class IndexReader:
    """Mixin of :class:`~puffin_explorer.parquet.layout.ParquetLayout`: page indexes and bloom filters."""

    def _add_index_stats(self, c: ChunkInfo, data_pages: list[PageInfo]) -> None:
        ci = c.column_index
        if ci is None:
            return
        mins, maxs = ci.get("min_values") or [], ci.get("max_values") or []
        nulls, null_pages = ci.get("null_counts") or [], ci.get("null_pages") or []
        for i, p in enumerate(data_pages):
            if p.min is None and i < len(mins) and not (i < len(null_pages) and null_pages[i]):
                p.min = decode_stat(mins[i], c.column)
                p.max = decode_stat(maxs[i], c.column) if i < len(maxs) else None
            if p.null_count is None and i < len(nulls):
                p.null_count = nulls[i]

    def _read_page_indexes(self, footer_start: int) -> None:
        wanted: list[tuple[ChunkInfo, str, int, int]] = []
        for rg in self.row_group_infos:
            for c in rg.chunks:
                for kind in ("column_index", "offset_index"):
                    off, ln = c.chunk.get(f"{kind}_offset"), c.chunk.get(f"{kind}_length")
                    if off is None or ln is None:
                        continue
                    if off < 4 or ln <= 0 or off + ln > footer_start:
                        self._finding("parquet.index-bounds", Severity.ERROR, c.chunk.offset,
                                      f"row group {c.row_group} column {c.name}: the {kind.replace('_', ' ')} "
                                      f"[{off}, {off + ln}) is not inside the data area "
                                      f"[4, {footer_start})")
                        continue
                    wanted.append((c, kind, off, ln))
        if not wanted:
            return
        lo = min(w[2] for w in wanted)
        hi = max(w[2] + w[3] for w in wanted)
        total = sum(w[3] for w in wanted)
        if hi - lo <= total + INDEX_COALESCE_SLACK:
            self._read_window(lo, hi - lo)
        type_name = {"column_index": "ColumnIndex", "offset_index": "OffsetIndex"}
        for c, kind, off, ln in wanted:
            data = self._fetch(off, ln)
            try:
                ts = CompactReader(data, off, SCHEMA).read_struct(type_name[kind])
            except ThriftError as exc:
                self._finding("parquet.index", Severity.ERROR, exc.offset,
                              f"row group {c.row_group} column {c.name}: cannot decode the "
                              f"{kind.replace('_', ' ')}: {exc.message}")
                continue
            self._check_types(ts, f"row group {c.row_group} column {c.name} {kind.replace('_', ' ')}")
            if ts.end != off + ln:
                self._finding("parquet.index", Severity.WARNING, ts.end,
                              f"row group {c.row_group} column {c.name}: the "
                              f"{kind.replace('_', ' ')} ends at {ts.end}, not at {off + ln} "
                              "as its length says")
            setattr(c, kind, ts)

    def _index_regions(self, footer_start: int, top: list[Region]) -> list[Region]:
        column_idx: list[Region] = []
        offset_idx: list[Region] = []
        blooms: list[Region] = []
        for rg in self.row_group_infos:
            for c in rg.chunks:
                label = f"row group {c.row_group} {c.name}"
                if c.column_index is not None:
                    ts = c.column_index
                    column_idx.append(Region(f"column index: {label}", "column-index",
                                             ts.offset, ts.length, struct_regions(ts)))
                if c.offset_index is not None:
                    ts = c.offset_index
                    offset_idx.append(Region(f"offset index: {label}", "offset-index",
                                             ts.offset, ts.length, struct_regions(ts)))
                bloom = self._bloom_region(c, footer_start, label)
                if bloom is not None:
                    blooms.append(bloom)
        out: list[Region] = []
        for name, kind, regs in (("column indexes", "column-indexes", column_idx),
                                 ("offset indexes", "offset-indexes", offset_idx),
                                 ("bloom filters", "bloom-filters", blooms)):
            if not regs:
                continue
            lo = min(r.offset for r in regs)
            hi = max(r.end for r in regs)
            if any(r.offset < hi and lo < r.end for r in top):
                out.extend(regs)  # interleaved with other structures: keep them flat
                continue
            group = Region(name, kind, lo, hi - lo, regs)
            check_children(group, self._add, name, self._zero_padding)
            out.append(group)
        return out

    def _bloom_region(self, c: ChunkInfo, footer_start: int, label: str) -> Optional[Region]:
        off = c.meta_get("bloom_filter_offset")
        if off is None:
            return None
        ln = c.meta_get("bloom_filter_length")
        if off < 4 or off >= footer_start or (ln is not None and (ln <= 0 or off + ln > footer_start)):
            self._finding("parquet.bloom-filter", Severity.ERROR, c.meta.offset,
                          f"{label}: the bloom filter at {off} (length {ln}) is not inside the "
                          f"data area [4, {footer_start})")
            return None
        try:
            h = self._read_header("BloomFilterHeader", off, footer_start)
        except ThriftError as exc:
            self._finding("parquet.bloom-filter", Severity.ERROR, exc.offset,
                          f"{label}: cannot decode the bloom filter header: {exc.message}")
            return None
        self._check_types(h, f"{label} bloom filter header")
        nbytes = h.get("numBytes")
        if not isinstance(nbytes, int) or nbytes < 0 or h.end + nbytes > footer_start:
            self._finding("parquet.bloom-filter", Severity.ERROR, h.offset,
                          f"{label}: the bloom filter claims {nbytes} bytes, past the data area")
            return None
        total = h.length + nbytes
        if ln is not None and ln != total:
            self._finding("parquet.bloom-filter", Severity.WARNING, off,
                          f"{label}: bloom_filter_length is {ln}; header and bitset take {total}")
        return Region(f"bloom filter: {label}", "bloom-filter", off, total, [
            Region("bloom filter header", "bloom-filter-header", h.offset, h.length,
                   struct_regions(h)),
            Region("bitset", "bloom-filter-bitset", h.end, nbytes, value=f"{nbytes} bytes"),
        ])


def _stat_min_max(stats: TStruct, col: Optional[ColumnInfo]) -> tuple[Any, Any]:
    lo, hi = stats.get("min_value"), stats.get("max_value")
    if lo is None and hi is None and col is not None and col.physical_type not in (
            "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
        # Legacy min/max use signed order; only trustworthy for numeric types.
        lo, hi = stats.get("min"), stats.get("max")
    return decode_stat(lo, col), decode_stat(hi, col)
