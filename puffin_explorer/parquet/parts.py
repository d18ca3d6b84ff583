"""What the layout reader learns about row groups, column chunks and pages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..regions import Region
from .schema import ColumnInfo
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
