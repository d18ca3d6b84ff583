"""The layout of a Parquet file as byte regions, read with range requests only.

The footer is read first (one 64 KiB tail read, which usually also holds the page
indexes), then the page indexes and bloom filters it points to, then each column
chunk's page headers (one small read per page, concurrent; small chunks whole).
Page payloads are never read, so the cost of showing a file's layout grows with
its number of pages, not its size.
"""

from __future__ import annotations

from typing import Callable, Optional, Union

from .._repr import RichRepr, make_view
from ..errors import InvalidFileError
from ..io.source import DEFAULT_WORKERS, ByteSource, Location
from ..regions import Finding, FindingList, Region, Severity
from .footer import FooterReader
from .indexes import IndexReader, _stat_min_max
from .layout_regions import PADDING_PROBE, RegionBuilder
from .pages import PageWalker
from .parts import ChunkInfo, PageInfo, RowGroupInfo
from .schema import ColumnInfo
from .spec import CODECS, ENCODINGS, enum_name
from .thrift import TStruct

__all__ = ["ParquetLayout", "ChunkInfo", "PageInfo", "RowGroupInfo"]


class ParquetLayout(FooterReader, IndexReader, PageWalker, RegionBuilder, RichRepr):
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
                 max_workers: int = DEFAULT_WORKERS,
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
        self._padding_budget = PADDING_PROBE
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
        return make_view("hex", self, offset, length)

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
