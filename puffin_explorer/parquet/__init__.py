"""Parquet files as byte regions: layout, page tables and the deletion-vector overlay."""

from .layout import ChunkInfo, PageInfo, ParquetLayout, RowGroupInfo
from .overlay import DeletionOverlay

__all__ = ["ParquetLayout", "DeletionOverlay", "ChunkInfo", "PageInfo", "RowGroupInfo"]
