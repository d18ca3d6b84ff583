"""The layout of a Parquet file as byte regions, read with range requests only.

The footer is read first (one 64 KiB tail read, which usually also holds the page
indexes), then the page indexes and bloom filters it points to, then each column
chunk's page headers (one small read per page, concurrent; small chunks whole).
Page payloads are never read, so the cost of showing a file's layout grows with
its number of pages, not its size.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from .._repr import RichRepr
from ..errors import InvalidFileError
from ..io import ByteSource, Location
from ..regions import Finding, FindingList, Region, Severity
from .regions import check_children, struct_regions
from .schema import ColumnInfo, columns_from_schema, decode_stat, schema_enum_problems
from .spec import CODECS, ENCODINGS, ENCRYPTED_MAGIC, MAGIC, PAGE_TYPES, SCHEMA, enum_name
from .thrift import CompactReader, ThriftError, TStruct

TAIL_READ = 64 * 1024  # first read from the end: the footer of most files fits
HEADER_READ = 512  # first read for a page header; grows when the header is longer
CHUNK_PREFETCH = 64 * 1024  # a column chunk this small is read whole: one request for all headers
INDEX_COALESCE_SLACK = 1024 * 1024  # read all page indexes at once if the holes are this small


@dataclass
class PageInfo:
    """One page of a column chunk, from its header (the payload is not read)."""

    row_group: int
    column: str
    index: int
    page_type: str
    offset: int
    header_length: int
    compressed_size: int
    uncompressed_size: int
    num_values: Optional[int]
    num_rows: Optional[int] = None
    first_row_index: Optional[int] = None  # within the row group
    encoding: str = ""
    null_count: Optional[int] = None
    min: Any = None
    max: Any = None
    crc: Optional[int] = None
    header: Optional[TStruct] = None

    @property
    def end(self) -> int:
        return self.offset + self.header_length + self.compressed_size


@dataclass
class ChunkInfo:
    """One column chunk: its metadata from the footer and the pages walked from its headers."""

    row_group: int
    column: Optional[ColumnInfo]
    name: str
    chunk: TStruct
    meta: Optional[TStruct]
    start: int = 0
    length: int = 0
    pages: list[PageInfo] = field(default_factory=list)
    pages_walked: bool = False
    offset_index: Optional[TStruct] = None
    column_index: Optional[TStruct] = None
    region: Optional[Region] = None
    #: The copy of the ColumnMetaData some writers (Arrow C++, parquet-rs, Impala, Polars) put after
    #: the chunk's pages, at the chunk's ``file_offset``.
    meta_copy: Optional[TStruct] = None

    def meta_get(self, name: str, default: Any = None) -> Any:
        return self.meta.get(name, default) if self.meta is not None else default


@dataclass
class RowGroupInfo:
    index: int
    num_rows: int
    first_row: int
    total_byte_size: Optional[int]
    total_compressed_size: Optional[int]
    chunks: list[ChunkInfo] = field(default_factory=list)
    region: Optional[Region] = None


class ParquetLayout(RichRepr):
    """Where every part of a Parquet file lives: magic, row groups, column chunks, pages,
    page indexes, bloom filters and footer, as a :class:`~puffin_explorer.regions.Region` tree.

    ``ParquetLayout(location, storage_options=None, strict=False)`` reads the footer and
    the page headers by range reads (never the whole file).  Problems become
    :attr:`findings`; ``strict=True`` raises :class:`~puffin_explorer.errors.InvalidFileError`
    at the first error instead.

    ``pages`` says whether to read every page header (one small range read each, made
    concurrently by ``max_workers`` threads): ``True``; ``False`` (pages come from the
    offset index: the footer and page indexes cost two or three reads in all); or
    ``"auto"`` (default): read them unless every column chunk has an offset index and the
    file has more than ``header_budget`` data pages.  ``progress(stage, done, total)``, if
    given, is called on this thread as page-header reads complete.
    """

    def __init__(self, location: Location, storage_options: Optional[dict] = None,
                 strict: bool = False, *, pages: Union[bool, str] = "auto",
                 header_budget: int = 1000, max_pages: int = 1_000_000,
                 max_workers: int = 16,
                 progress: Optional[Callable[[str, int, int], None]] = None) -> None:
        self.source = ByteSource.of(location, storage_options)
        self.location = self.source.location
        self.size = self.source.size
        self.strict = strict
        self.max_pages = max_pages
        if pages not in (True, False, "auto"):
            raise ValueError(f"pages must be True, False or 'auto', not {pages!r}")
        self.header_budget = header_budget
        self.max_workers = max(1, int(max_workers))
        self.progress = progress
        self._prefetched: dict[int, bytes] = {}
        self.findings: FindingList = FindingList()
        self.metadata: Optional[TStruct] = None
        self.columns: list[ColumnInfo] = []
        self.row_group_infos: list[RowGroupInfo] = []
        self.footer_offset: Optional[int] = None
        self.footer_length: Optional[int] = None
        self._buffer: tuple[int, bytes] = (0, b"")
        self._tail: tuple[int, bytes] = (0, b"")
        self._recovered: list[PageInfo] = []
        self.root = Region("parquet file", "parquet-file", 0, self.size,
                           value=self.location)
        self._parse(walk_pages=pages)

    # ------------------------------------------------------------------ API
    def regions(self) -> Region:
        """The region tree of the whole file."""
        return self.root

    @property
    def num_rows(self) -> int:
        n = self.metadata.get("num_rows", 0) if self.metadata is not None else 0
        return max(0, n)  # a negative count (a corrupted footer) is reported, never used

    @property
    def created_by(self) -> str:
        return str(self.metadata.get("created_by", "")) if self.metadata is not None else ""

    @property
    def key_value_metadata(self) -> dict[str, str]:
        kvs = self.metadata.get("key_value_metadata", []) if self.metadata is not None else []
        return {str(kv.get("key")): kv.get("value") for kv in kvs if isinstance(kv, TStruct)}

    @property
    def bytes_read(self) -> int:
        return self.source.bytes_read

    def row_groups(self):
        """One row per row group: offsets, sizes, rows, first row, chunk and page counts."""
        import pandas as pd

        rows = []
        for rg in self.row_group_infos:
            r = rg.region
            rows.append({
                "row_group": rg.index,
                "offset": r.offset if r is not None else None,
                "length": r.length if r is not None else None,
                "num_rows": rg.num_rows,
                "first_row": rg.first_row,
                "total_compressed_size": rg.total_compressed_size,
                "total_byte_size": rg.total_byte_size,
                "columns": len(rg.chunks),
                "pages": sum(len(c.pages) for c in rg.chunks),
                "data_pages": sum(1 for c in rg.chunks for p in c.pages
                                  if p.page_type.startswith("DATA_PAGE")),
            })
        return pd.DataFrame.from_records(rows, columns=[
            "row_group", "offset", "length", "num_rows", "first_row", "total_compressed_size",
            "total_byte_size", "columns", "pages", "data_pages"])

    def column_chunks(self):
        """One row per column chunk, in the spirit of ``parquet meta``."""
        import pandas as pd

        rows = []
        for rg in self.row_group_infos:
            for c in rg.chunks:
                stats = c.meta_get("statistics")
                smin = smax = nulls = distinct = None
                if isinstance(stats, TStruct):
                    smin, smax = _stat_min_max(stats, c.column)
                    nulls = stats.get("null_count")
                    distinct = stats.get("distinct_count")
                rows.append({
                    "row_group": c.row_group,
                    "column": c.name,
                    "physical_type": c.column.physical_type if c.column else None,
                    "logical_type": c.column.logical_type if c.column else None,
                    "codec": enum_name(CODECS, c.meta_get("codec")),
                    "encodings": ",".join(enum_name(ENCODINGS, e)
                                          for e in c.meta_get("encodings", []) or []),
                    "offset": c.start,
                    "dictionary_page_offset": c.meta_get("dictionary_page_offset"),
                    "data_page_offset": c.meta_get("data_page_offset"),
                    "compressed_size": c.meta_get("total_compressed_size"),
                    "uncompressed_size": c.meta_get("total_uncompressed_size"),
                    "num_values": c.meta_get("num_values"),
                    "null_count": nulls,
                    "distinct_count": distinct,
                    "min": smin,
                    "max": smax,
                    "dictionary_pages": sum(1 for p in c.pages if p.page_type == "DICTIONARY_PAGE"),
                    "data_pages": sum(1 for p in c.pages if p.page_type.startswith("DATA_PAGE")),
                    "column_index_offset": c.chunk.get("column_index_offset"),
                    "column_index_length": c.chunk.get("column_index_length"),
                    "offset_index_offset": c.chunk.get("offset_index_offset"),
                    "offset_index_length": c.chunk.get("offset_index_length"),
                    "bloom_filter_offset": c.meta_get("bloom_filter_offset"),
                    "bloom_filter_length": c.meta_get("bloom_filter_length"),
                })
        return pd.DataFrame.from_records(rows, columns=[
            "row_group", "column", "physical_type", "logical_type", "codec", "encodings",
            "offset", "dictionary_page_offset", "data_page_offset", "compressed_size",
            "uncompressed_size", "num_values", "null_count", "distinct_count", "min", "max",
            "dictionary_pages", "data_pages", "column_index_offset", "column_index_length",
            "offset_index_offset", "offset_index_length", "bloom_filter_offset",
            "bloom_filter_length"]).astype({
                name: "Int64" for name in (
                    "dictionary_page_offset", "null_count", "distinct_count",
                    "column_index_offset", "column_index_length", "offset_index_offset",
                    "offset_index_length", "bloom_filter_offset", "bloom_filter_length")})

    def pages(self):
        """One row per page, in the spirit of ``parquet pages``.

        ``first_row_index`` is the page's first row within its row group (from the
        offset index when present, else from the value counts of flat columns);
        ``first_row`` adds the row group's first row in the file.
        """
        import pandas as pd

        rows = []
        for rg in self.row_group_infos:
            for c in rg.chunks:
                for p in c.pages:
                    rows.append(_page_record(p, rg.first_row))
        for p in self._recovered:
            rows.append(_page_record(p, None))
        df = pd.DataFrame.from_records(rows, columns=_PAGE_COLUMNS)
        for name in ("num_values", "num_rows", "first_row_index", "first_row", "null_count",
                     "crc"):
            df[name] = df[name].astype("Int64")
        return df

    def overlay(self, dv, column: Optional[str] = None):
        """Deleted rows per row group and per page for a deletion vector (or positions).

        ``dv`` is a DeletionVector (anything with ``positions()``) or an array of
        row positions.  Returns a :class:`~puffin_explorer.parquet.overlay.DeletionOverlay`.
        """
        from .overlay import DeletionOverlay

        return DeletionOverlay(self, dv, column=column)

    def hex(self, offset: Optional[int] = None, length: Optional[int] = None):
        """An annotated hex view coloured by region (``HexView``: displays in notebooks,
        ``.text()`` for terminals).  Without ``offset``/``length`` a big file is paged:
        head, tail and the bytes around each region boundary, a few kilobytes in all."""
        from ..display.hexview import HexView
        from ..display.parquet_view import expand_kinds

        return HexView(self.source, self.root, offset, length, expand=expand_kinds(self))

    def __repr__(self) -> str:
        return self.to_text()


    # ------------------------------------------------------------- parsing
    def _finding(self, code: str, severity: Severity, offset: Optional[int], message: str,
                 hint: str = "", length: Optional[int] = None) -> Finding:
        f = Finding(code, severity, offset, message, hint, length)
        self._add(f)
        return f

    def _add(self, f: Finding) -> None:
        self.findings.append(f)
        if self.strict and f.severity == Severity.ERROR:
            raise InvalidFileError.from_finding(f)

    def _check_types(self, ts: TStruct, context: str) -> None:
        for f in _type_findings(ts, context):
            self._add(f)

    def _parse(self, walk_pages: bool) -> None:
        size = self.size
        top: list[Region] = []
        if size < 12:
            self._finding("parquet.too-small", Severity.ERROR, 0,
                          f"the file has {size} bytes; a Parquet file has at least 12 "
                          "(magic, footer length, magic)", "the file is truncated or empty")
        self._tail = self.source.tail(min(size, TAIL_READ))
        get = self._fetch

        head = get(0, min(4, size))
        if head:
            top.append(Region("magic", "magic", 0, len(head), value=head))
            if head != MAGIC:
                top[-1].finding = self._finding(
                    "parquet.magic", Severity.ERROR, 0,
                    f"the file starts with {head!r}, not the Parquet magic b'PAR1'",
                    "not a Parquet file, or its first bytes were overwritten", length=len(head))
        if size < 12:
            self._finish(top)
            return
        trailer = get(size - 8, 8)
        (footer_len,) = struct.unpack("<I", trailer[:4])
        end_magic = trailer[4:]
        tail_ok = end_magic == MAGIC
        magic_region = Region("magic", "magic", size - 4, 4, value=end_magic)
        if end_magic == ENCRYPTED_MAGIC:
            magic_region.finding = self._finding(
                "parquet.encrypted-footer", Severity.ERROR, size - 4,
                "the file ends with b'PARE': its footer is encrypted and cannot be read "
                "without the key", length=4)
        elif not tail_ok:
            magic_region.finding = self._finding(
                "parquet.magic", Severity.ERROR, size - 4,
                f"the file ends with {end_magic!r}, not the Parquet magic b'PAR1'",
                "the file is truncated (a write that never finished) or its end was "
                "overwritten", length=4)
        if not tail_ok:
            # Without the trailing magic the last 8 bytes are not a footer length.
            if head == MAGIC:
                self._recover_pages(top)
            self._finish(top)
            return
        top.append(magic_region)
        len_region = Region("footer length", "footer-length", size - 8, 4, value=footer_len)
        top.append(len_region)
        footer_start = size - 8 - footer_len
        if footer_len == 0 or footer_start < 4:
            len_region.finding = self._finding(
                "parquet.footer-length", Severity.ERROR, size - 8,
                f"the footer length {footer_len} does not fit in the file of {size} bytes "
                f"(at most {size - 12})", "the footer length field is corrupted", length=4)
            self._finish(top)
            return
        self.footer_offset, self.footer_length = footer_start, footer_len
        footer_bytes = get(footer_start, footer_len)
        footer_region = Region("footer (FileMetaData)", "footer", footer_start, footer_len)
        top.append(footer_region)
        try:
            meta = CompactReader(footer_bytes, footer_start, SCHEMA).read_struct("FileMetaData")
        except ThriftError as exc:
            footer_region.finding = self._finding(
                "parquet.footer", Severity.ERROR, exc.offset,
                f"cannot decode the FileMetaData: {exc.message}",
                "the footer is corrupted, or the footer length points to the wrong place")
            self._finish(top)
            return
        self.metadata = meta
        self._check_types(meta, "footer")
        footer_region.children = struct_regions(meta)
        if meta.end != footer_start + footer_len:
            self._finding("parquet.footer-length", Severity.WARNING, meta.end,
                          f"the FileMetaData ends at byte {meta.end} but the footer length "
                          f"says {footer_start + footer_len}",
                          length=footer_start + footer_len - meta.end)
        self.columns, schema_error = columns_from_schema(meta.get("schema") or [])
        if schema_error:
            self._finding("parquet.schema", Severity.ERROR, meta.spans.get("schema", (None,))[0],
                          schema_error)
        for at, length, message in schema_enum_problems(meta.get("schema") or []):
            self._finding("parquet.schema-type", Severity.ERROR, at, message,
                          "the footer is corrupted, or a newer writer used a type this reader does not know",
                          length=length)
        self._read_row_groups(meta, footer_start)
        self._read_page_indexes(footer_start)
        if walk_pages == "auto":
            walk_pages = self._headers_worth_reading()
        if walk_pages:
            self._prefetch_pages()
            self._walk_all()
        for rg in self.row_group_infos:
            for c in rg.chunks:
                self._assign_first_rows(c)
        self._read_metadata_copies(footer_start)
        top.extend(self._row_group_regions())
        top.extend(self._index_regions(footer_start, top))
        self._finish(top)

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
        check_children(self.root, self._add, "the file")

    # -- footer -> row groups and chunks -----------------------------------
    def _read_row_groups(self, meta: TStruct, footer_start: int) -> None:
        first_row = 0
        for i, rg in enumerate(meta.get("row_groups") or []):
            if not isinstance(rg, TStruct):
                continue
            num_rows = max(0, rg.get("num_rows", 0))
            info = RowGroupInfo(i, num_rows, first_row, rg.get("total_byte_size"),
                                rg.get("total_compressed_size"))
            first_row += num_rows
            chunks = rg.get("columns") or []
            if self.columns and len(chunks) != len(self.columns):
                self._finding("parquet.row-group-columns", Severity.ERROR, rg.offset,
                              f"row group {i} has {len(chunks)} column chunks; the schema "
                              f"has {len(self.columns)} columns")
            for j, cc in enumerate(chunks):
                if not isinstance(cc, TStruct):
                    continue
                col = self.columns[j] if j < len(self.columns) else None
                meta_data = cc.get("meta_data")
                if not isinstance(meta_data, TStruct):
                    meta_data = None
                name = col.name if col else (
                    ".".join(str(p) for p in meta_data.get("path_in_schema", []))
                    if meta_data is not None else f"column {j}")
                c = ChunkInfo(i, col, name, cc, meta_data)
                info.chunks.append(c)
                if meta_data is None:
                    self._finding("parquet.column-meta", Severity.ERROR, cc.offset,
                                  f"row group {i} column {name}: the column chunk has no "
                                  "ColumnMetaData (encrypted or not written)")
                    continue
                data_off = meta_data.get("data_page_offset")
                dict_off = meta_data.get("dictionary_page_offset")
                # The chunk starts at its dictionary page or its first data page.  Writers
                # put 0 in the one that does not exist (old writers: dictionary_page_offset
                # 0; pyarrow, for a chunk with no values: data_page_offset 0).
                offsets = [o for o in (dict_off, data_off) if isinstance(o, int) and o >= 4]
                start = min(offsets) if offsets else (data_off if isinstance(data_off, int) else 0)
                length = meta_data.get("total_compressed_size")
                length = length if isinstance(length, int) else 0
                if start < 4 or length < 0 or start + length > footer_start:
                    self._finding(
                        "parquet.chunk-bounds", Severity.ERROR, meta_data.offset,
                        f"row group {i} column {name}: the chunk [{start}, {start + length}) "
                        f"is not inside the data area [4, {footer_start})",
                        "the column metadata's offsets or sizes are corrupted")
                    start = min(max(start, 4), footer_start)
                    length = max(0, min(length, footer_start - start))
                c.start, c.length = start, length
            self.row_group_infos.append(info)
        if self.row_group_infos and first_row != meta.get("num_rows"):
            self._finding("parquet.row-group-rows", Severity.ERROR,
                          meta.spans.get("num_rows", (None,))[0],
                          f"the row groups hold {first_row} rows; the footer says "
                          f"{meta.get('num_rows')}")

    # -- pages --------------------------------------------------------------
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
                dict_off = c.meta_get("dictionary_page_offset")
                unseen_dict = int(not c.pages and isinstance(dict_off, int) and dict_off == c.start
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

    # -- page indexes and bloom filters ----------------------------------------
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
            check_children(group, self._add, name)
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

    # -- regions -------------------------------------------------------------
    def _read_metadata_copies(self, footer_start: int) -> None:
        """Decode the ColumnMetaData copy at each chunk's ``file_offset`` when it lies after the chunk.

        The format's ``ColumnChunk.file_offset`` is where the chunk's metadata was written; Arrow
        C++, parquet-rs, Impala and Polars write a copy there, right after the pages (parquet-mr
        writes 0 or the chunk's start).  A copy counts only when it decodes as a ColumnMetaData for
        the same column, so damaged bytes still show as a gap."""
        wanted = []
        for rg in self.row_group_infos:
            for c in rg.chunks:
                fo = c.chunk.get("file_offset")
                if c.meta is None or not isinstance(fo, int) or isinstance(fo, bool):
                    continue
                if c.start + c.length <= fo < footer_start:
                    wanted.append((c, fo))
        if not wanted:
            return

        def decode(item, raw_read):
            c, fo = item
            # Arrow C++ and parquet-rs write the whole ColumnChunk there, others the ColumnMetaData.
            for name in ("ColumnChunk", "ColumnMetaData"):
                try:
                    ts = self._read_header(name, fo, footer_start, read=raw_read)
                except ThriftError:
                    continue
                meta = ts.get("meta_data") if name == "ColumnChunk" else ts
                if ts.invalid_fields() or not isinstance(meta, TStruct):
                    continue
                if meta.get("path_in_schema") == c.meta_get("path_in_schema") and \
                        meta.get("type") == c.meta_get("type"):
                    return ts
            return None

        found = self._map_reads(decode, wanted) if len(wanted) > 1 else [decode(wanted[0], self._fetch)]
        for (c, _), ts in zip(wanted, found):
            c.meta_copy = ts

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
                    dict_off = c.meta_get("dictionary_page_offset")
                    if first > c.start and isinstance(dict_off, int) and dict_off == c.start:
                        kids.append(Region("dictionary page (header not read)", "dictionary-page",
                                           c.start, first - c.start))
                r = Region(f"column chunk {c.name}", "column-chunk", c.start, c.length, kids,
                           value=f"{codec}, {len(c.pages)} pages")
                if kids:
                    check_children(r, self._add, f"row group {c.row_group} column {c.name}")
                c.region = r
                chunk_regions.append(r)
                if c.meta_copy is not None:
                    ts = c.meta_copy
                    chunk_regions.append(Region(f"column metadata copy {c.name}", "column-meta-copy",
                                                ts.offset, ts.length, struct_regions(ts),
                                                value=f"{ts.type_name} at file_offset"))
            if not chunk_regions:
                continue
            lo = min(r.offset for r in chunk_regions)
            hi = max(r.end for r in chunk_regions)
            region = Region(f"row group {rg.index}", "row-group", lo, hi - lo, chunk_regions,
                            value=f"{rg.num_rows} rows")
            check_children(region, self._add, f"row group {rg.index}")
            rg.region = region
            out.append(region)
        return out


def _type_findings(ts: TStruct, context: str) -> list[Finding]:
    return [Finding("parquet.thrift-type", Severity.ERROR, start,
                    f"{context}: {path} has wire type {wire}, which its schema does not "
                    "allow; the field is ignored",
                    "the struct is corrupted or written by a non-conforming writer",
                    length=end - start)
            for path, start, end, wire in ts.invalid_fields()]


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


def _stat_min_max(stats: TStruct, col: Optional[ColumnInfo]) -> tuple[Any, Any]:
    lo, hi = stats.get("min_value"), stats.get("max_value")
    if lo is None and hi is None and col is not None and col.physical_type not in (
            "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
        # Legacy min/max use signed order; only trustworthy for numeric types.
        lo, hi = stats.get("min"), stats.get("max")
    return decode_stat(lo, col), decode_stat(hi, col)


_PAGE_COLUMNS = ["row_group", "column", "page", "page_type", "offset", "header_length",
                 "compressed_size", "uncompressed_size", "num_values", "num_rows",
                 "first_row_index", "first_row", "encoding", "null_count", "min", "max", "crc"]


def _page_record(p: PageInfo, rg_first_row: Optional[int]) -> dict:
    first = (rg_first_row + p.first_row_index
             if rg_first_row is not None and p.first_row_index is not None else None)
    return {
        "row_group": p.row_group, "column": p.column, "page": p.index,
        "page_type": p.page_type, "offset": p.offset, "header_length": p.header_length,
        "compressed_size": p.compressed_size, "uncompressed_size": p.uncompressed_size,
        "num_values": p.num_values, "num_rows": p.num_rows,
        "first_row_index": p.first_row_index, "first_row": first, "encoding": p.encoding,
        "null_count": p.null_count, "min": p.min, "max": p.max, "crc": p.crc,
    }
