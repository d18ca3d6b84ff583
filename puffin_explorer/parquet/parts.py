"""What the layout reader learns about row groups, column chunks and pages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..regions import Finding, Region
from .schema import ColumnInfo
from .spec import DICTIONARY_ENCODINGS, DICTIONARY_PAGE
from .thrift import TStruct


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
    #: The ColumnMetaData fields whose value in ``meta_copy`` differs from the footer's, and
    #: the finding that says so.
    meta_copy_differs: list[str] = field(default_factory=list)
    meta_copy_finding: Optional[Finding] = None

    def meta_get(self, name: str, default: Any = None) -> Any:
        return self.meta.get(name, default) if self.meta is not None else default

    def dictionary_page_at_start(self) -> bool:
        """Whether the metadata says the chunk begins with a dictionary page.

        Either ``dictionary_page_offset`` is the chunk's start, or it is not set (parquet-mr
        before 1.11.1, PARQUET-1850; Polars) while ``data_page_offset`` is the chunk's start and
        the chunk has a dictionary page: ``encoding_stats`` lists one or, without them,
        ``encodings`` names a dictionary encoding.  Those writers point ``data_page_offset`` at
        the dictionary page."""
        dict_off = self.meta_get("dictionary_page_offset")
        if isinstance(dict_off, int) and dict_off >= 4:
            return dict_off == self.start
        if self.meta_get("data_page_offset") != self.start:
            return False
        stats = self.meta_get("encoding_stats")
        if isinstance(stats, list) and stats:
            return any(isinstance(s, TStruct) and s.get("page_type") == DICTIONARY_PAGE
                       and (s.get("count") or 0) > 0 for s in stats)
        encodings = self.meta_get("encodings")
        return isinstance(encodings, list) and any(e in DICTIONARY_ENCODINGS for e in encodings)

    def dictionary_offset_unset(self) -> bool:
        """The chunk's dictionary page is known only from ``encoding_stats``/``encodings``:
        ``dictionary_page_offset`` is not set and ``data_page_offset`` points at it."""
        dict_off = self.meta_get("dictionary_page_offset")
        return not (isinstance(dict_off, int) and dict_off >= 4) and self.dictionary_page_at_start()


@dataclass
class RowGroupInfo:
    index: int
    num_rows: int
    first_row: int
    total_byte_size: Optional[int]
    total_compressed_size: Optional[int]
    chunks: list[ChunkInfo] = field(default_factory=list)
    region: Optional[Region] = None
