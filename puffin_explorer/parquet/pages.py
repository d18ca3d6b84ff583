"""Walking a Parquet file's page headers with range reads: prefetch what the walk will
need concurrently, then decode each column chunk's headers in order."""

from __future__ import annotations

from typing import Optional

from ..regions import Finding, Region, Severity
from .parts import ChunkInfo, PageInfo
from .schema import ColumnInfo
from .footer import _type_findings
from .indexes import _stat_min_max
from .layout_regions import _page_region
from .spec import ENCODINGS, PAGE_TYPES, SCHEMA, enum_name
from .thrift import CompactReader, ThriftError, TStruct

HEADER_READ = 512  # first read for a page header; grows when the header is longer
CHUNK_PREFETCH = 64 * 1024  # a column chunk this small is read whole: one request for all headers


class PageWalker:
    """Mixin of :class:`~puffin_explorer.parquet.layout.ParquetLayout`: page headers."""

    def _headers_worth_reading(self) -> bool:
        chunks = [c for rg in self.row_group_infos for c in rg.chunks if c.meta is not None]
        indexed = [c.offset_index.get("page_locations") or [] for c in chunks
                   if c.offset_index is not None]
        n_pages = sum(len(locs) for locs in indexed)
        if len(indexed) < len(chunks) or n_pages <= self.header_budget:
            return True
        self._finding("parquet.page-headers-skipped", Severity.INFO, None,
                      f"{n_pages:,} data pages, all listed in offset indexes: their headers were "
                      f"not read (more than header_budget={self.header_budget:,})",
                      "ParquetLayout(..., pages=True) reads every page header, one small range "
                      "read each")
        return False

    def _fetch(self, offset: int, length: int, keep: bool = False) -> bytes:
        """Bytes [offset, offset+length), from the tail or the last read when they cover them."""
        length = max(0, min(length, self.size - offset))
        for b_off, buf in (self._tail, self._buffer):
            if b_off <= offset and offset + length <= b_off + len(buf):
                return buf[offset - b_off: offset - b_off + length]
        pre = self._prefetched.pop(offset, None)
        if pre is not None and len(pre) >= length:
            if keep:
                self._buffer = (offset, pre)
            return pre[:length]
        data = self.source.read(offset, length)
        if keep:
            self._buffer = (offset, data)
        return data

    def _prefetch_pages(self) -> None:
        """Fetch, concurrently, every range the page walk is known to need: each chunk's
        first header (or the whole chunk when it is small) and each data page header the
        offset index lists.  The walk itself stays sequential and deterministic; it then
        finds these bytes in memory.  Concurrency hides per-request latency on object
        stores, where a thousand small sequential GETs would cost more than the file."""
        wanted: dict[int, int] = {}
        for rg in self.row_group_infos:
            for c in rg.chunks:
                if c.meta is None or c.length <= 0:
                    continue
                if c.length <= CHUNK_PREFETCH:
                    wanted[c.start] = c.length
                    continue
                end = c.start + c.length
                starts = [c.start]
                locs = c.offset_index.get("page_locations") if c.offset_index is not None else None
                for loc in locs or []:
                    off = loc.get("offset")
                    if isinstance(off, int) and c.start <= off < end:
                        starts.append(off)
                for off in starts:
                    wanted[off] = min(HEADER_READ, end - off)
        t_off, t_data = self._tail
        wanted = {o: n for o, n in wanted.items()
                  if n > 0 and not (t_off <= o and o + n <= t_off + len(t_data))}
        if len(wanted) < 2:
            return
        ranges = sorted(wanted.items())[: self.max_pages + 1]
        # one planned batch: on object stores every window is in flight at once
        datas = self.source.read_ranges(ranges, gap=-1, max_workers=self.max_workers, keep=False)
        self._prefetched.update((off, data) for (off, _), data in zip(ranges, datas))

    def _map_reads(self, fn, items: list, stage: str = "") -> list:
        """``[fn(item, read) for item in items]`` through the source's bounded pool (concurrent
        when the file is remote); ``progress`` hears of each completed item."""
        report = None
        if self.progress is not None and stage:
            report = (lambda done, total: self.progress(stage, done, total))
        return self.source.map(fn, items, self.max_workers, report)

    def _read_window(self, offset: int, length: int) -> bytes:
        return self._fetch(offset, length, keep=True)

    def _read_header(self, name: str, offset: int, limit: int, read=None) -> TStruct:
        """Decode the Thrift struct ``name`` at ``offset``; reads grow until it fits before ``limit``."""
        read = read or self._read_window
        window = min(HEADER_READ, limit - offset)
        while True:
            data = read(offset, window)
            try:
                return CompactReader(data, offset, SCHEMA).read_struct(name)
            except ThriftError as exc:
                if exc.truncated and window < limit - offset:
                    window = min(limit - offset, window * 8)
                    continue
                raise

    def _page_from_header(self, h: TStruct, rg: int, column: str, index: int, offset: int,
                          col: Optional[ColumnInfo]) -> PageInfo:
        ptype = enum_name(PAGE_TYPES, h.get("type"))
        p = PageInfo(rg, column, index, ptype, offset, h.length,
                     int(h.get("compressed_page_size", 0) or 0),
                     int(h.get("uncompressed_page_size", 0) or 0), None, crc=h.get("crc"),
                     header=h)
        sub = (h.get("data_page_header") or h.get("data_page_header_v2")
               or h.get("dictionary_page_header"))
        if isinstance(sub, TStruct):
            p.num_values = sub.get("num_values")
            p.encoding = enum_name(ENCODINGS, sub.get("encoding"))
            if "num_rows" in sub:
                p.num_rows = sub.get("num_rows")
            if "num_nulls" in sub:
                p.null_count = sub.get("num_nulls")
            stats = sub.get("statistics")
            if isinstance(stats, TStruct):
                p.min, p.max = _stat_min_max(stats, col)
                if stats.get("null_count") is not None:
                    p.null_count = stats.get("null_count")
        return p

    def _walk_all(self) -> None:
        """Walk every chunk's page headers (concurrently across chunks when the source is
        remote), then record pages and findings in file order, so the result and the
        order of findings never depend on timing."""
        chunks = [c for rg in self.row_group_infos for c in rg.chunks
                  if c.meta is not None and c.length > 0]

        def work(c: ChunkInfo, raw_read):
            reader = _WindowReader(raw_read, self.size, [self._tail], self._prefetched)
            if c.length <= CHUNK_PREFETCH:
                reader.read(c.start, c.length)
            return self._walk_chunk(c, reader.read)

        results = self._map_reads(work, chunks, "column chunks")
        self._prefetched.clear()
        seen = 0
        for c, (pages, findings, walked) in zip(chunks, results):
            for f in findings:
                self._add(f)
            if seen + len(pages) > self.max_pages:
                if seen <= self.max_pages:
                    self._finding("parquet.page-limit", Severity.INFO, c.start,
                                  f"kept the page headers of whole column chunks up to "
                                  f"{self.max_pages} pages (max_pages); the pages of later "
                                  "chunks come from their offset index, if any")
                pages, walked = [], False
                seen = self.max_pages + 1
            else:
                seen += len(pages)
            c.pages, c.pages_walked = pages, walked

    def _walk_chunk(self, c: ChunkInfo, read) -> tuple[list[PageInfo], list[Finding], bool]:
        """Pages of one chunk from its chained headers: ``(pages, findings, walked to the end)``.

        Touches no shared state, so chunks can be walked on several threads."""
        pages: list[PageInfo] = []
        findings: list[Finding] = []
        where = f"row group {c.row_group} column {c.name}"
        pos, end = c.start, c.start + c.length
        values = 0
        while pos < end:
            if len(pages) >= self.max_pages:
                return pages, findings, False
            try:
                h = self._read_header("PageHeader", pos, end, read)
            except ThriftError as exc:
                findings.append(Finding(
                    "parquet.page-header", Severity.ERROR, exc.offset,
                    f"{where}: cannot decode the page header at byte {pos}: {exc.message}",
                    "the chunk's offsets or sizes are wrong, or the page is corrupted"))
                return pages, findings, False
            findings.extend(_type_findings(h, f"{where} page header at {pos}"))
            missing = [f for f in ("type", "uncompressed_page_size", "compressed_page_size")
                       if f not in h]
            if missing:
                findings.append(Finding(
                    "parquet.page-header", Severity.ERROR, pos,
                    f"{where}: the page header at byte {pos} lacks the required "
                    f"{', '.join(missing)}",
                    "the chunk's offsets are wrong, or the page is corrupted", length=h.length))
                return pages, findings, False
            p = self._page_from_header(h, c.row_group, c.name, len(pages), pos, c.column)
            if p.compressed_size < 0 or p.end > end:
                findings.append(Finding(
                    "parquet.page-bounds", Severity.ERROR, pos,
                    f"{where}: page {p.index} [{pos}, {p.end}) runs past the chunk end {end}",
                    "the page header's compressed_page_size or the chunk's "
                    "total_compressed_size is wrong"))
                p.compressed_size = max(0, end - pos - p.header_length)
            pages.append(p)
            if p.page_type.startswith("DATA_PAGE") and isinstance(p.num_values, int):
                values += p.num_values
            pos = p.end
        nv = c.meta_get("num_values")
        if isinstance(nv, int) and values != nv:
            findings.append(Finding(
                "parquet.chunk-values", Severity.WARNING, c.start,
                f"{where}: the data pages hold {values} values; the column metadata says {nv}"))
        return pages, findings, True

    def _assign_first_rows(self, c: ChunkInfo) -> None:
        data_pages = [p for p in c.pages if p.page_type.startswith("DATA_PAGE")]
        locs = c.offset_index.get("page_locations") if c.offset_index is not None else None
        if isinstance(locs, list) and locs:
            if c.pages_walked and [loc.get("offset") for loc in locs] != [p.offset for p in data_pages]:
                self._finding("parquet.offset-index", Severity.WARNING, c.offset_index.offset,
                              f"row group {c.row_group} column {c.name}: the offset index "
                              f"lists {len(locs)} pages that differ from the "
                              f"{len(data_pages)} data pages in the chunk")
            if c.pages_walked:
                by_offset = {loc.get("offset"): loc for loc in locs}
                for p in data_pages:
                    loc = by_offset.get(p.offset)
                    if loc is not None:
                        p.first_row_index = loc.get("first_row_index")
            else:
                # Headers not read (pages=False, or a broken header): the offset index
                # still says where each data page is and which rows it holds.
                c.pages = [p for p in c.pages if not p.page_type.startswith("DATA_PAGE")]
                # number pages as a walk would: a dictionary page (not in the index) is page 0
                unseen_dict = int(not c.pages and c.dictionary_page_at_start()
                                  and locs[0].get("offset") != c.start)
                for loc in locs:
                    c.pages.append(PageInfo(c.row_group, c.name, len(c.pages) + unseen_dict,
                                            "DATA_PAGE (offset index)", int(loc.get("offset", 0)),
                                            0, int(loc.get("compressed_page_size", 0)), 0, None,
                                            first_row_index=loc.get("first_row_index")))
                data_pages = [p for p in c.pages if p.page_type.startswith("DATA_PAGE")]
            self._add_index_stats(c, data_pages)
        elif (c.column is not None and c.column.max_repetition_level == 0) or all(
                p.num_rows is not None for p in data_pages):
            row = 0
            for p in data_pages:
                p.first_row_index = row
                n = p.num_rows if p.num_rows is not None else p.num_values
                row += int(n or 0)
        for i, p in enumerate(data_pages):
            if p.num_rows is None and p.first_row_index is not None:
                nxt = data_pages[i + 1].first_row_index if i + 1 < len(data_pages) else None
                rg_rows = self.row_group_infos[c.row_group].num_rows
                p.num_rows = (nxt if nxt is not None else rg_rows) - p.first_row_index

    def _recover_pages(self, top: list[Region]) -> None:
        """Without a footer, walk page headers from byte 4 as far as they chain."""
        pos, end = 4, self.size
        pages: list[PageInfo] = []
        while pos < end and len(pages) < self.max_pages:
            try:
                h = self._read_header("PageHeader", pos, end)
            except ThriftError:
                break
            if h.invalid or any(f not in h for f in ("type", "uncompressed_page_size",
                                                     "compressed_page_size")):
                break
            p = self._page_from_header(h, -1, "?", len(pages), pos, None)
            if p.page_type.startswith("UNKNOWN") or p.compressed_size < 0 or p.end > end \
                    or p.header_length <= 0:
                break
            pages.append(p)
            pos = p.end
        self._recovered = pages
        if not pages:
            return
        region = Region("recovered pages", "recovered-pages", 4, pos - 4,
                        [_page_region(p, "") for p in pages])
        top.append(region)
        self._finding("parquet.recovered", Severity.INFO, 4,
                      f"no footer: {len(pages)} page headers recovered by walking from byte 4 "
                      f"to byte {pos}", "the column and row group of these pages are unknown",
                      length=pos - 4)


class _WindowReader:
    """Reads for one column chunk's walk: served from the tail, the prefetched header
    windows or this reader's last read when they cover the range, else one range read."""

    def __init__(self, raw_read, size: int, caches: list[tuple[int, bytes]],
                 prefetched: dict[int, bytes]) -> None:
        self.raw_read = raw_read
        self.size = size
        self.caches = caches
        self.prefetched = prefetched
        self.buffer: tuple[int, bytes] = (0, b"")

    def read(self, offset: int, length: int) -> bytes:
        length = max(0, min(length, self.size - offset))
        for b_off, buf in (*self.caches, self.buffer):
            if b_off <= offset and offset + length <= b_off + len(buf):
                return buf[offset - b_off: offset - b_off + length]
        pre = self.prefetched.get(offset)
        if pre is not None and len(pre) >= length:
            self.buffer = (offset, pre)
            return pre[:length]
        data = self.raw_read(offset, length)
        self.buffer = (offset, data)
        return data
