"""Where a deletion vector's rows sit inside its Parquet data file.

A deletion vector holds row positions of one data file.  Mapping them onto the
file's row groups and pages tells how much of each row group (and page) is dead:
the facts behind a compaction decision.
"""

from __future__ import annotations

from typing import Any, Optional, Protocol, Sequence

import numpy as np

from .._arrays import sorted_unique
from .._repr import RichRepr, make_view
from ..regions import Finding, FindingList, Severity
from .parts import RowGroupInfo
from .schema import ColumnInfo


class RowGroups(Protocol):
    """What an overlay reads of a Parquet file: a
    :class:`~puffin_explorer.parquet.layout.ParquetLayout` (which builds overlays, so this module
    names only the parts it reads)."""

    row_group_infos: Sequence[RowGroupInfo]
    columns: Sequence[ColumnInfo]

    @property
    def num_rows(self) -> int: ...


def as_positions(dv: Any) -> np.ndarray:
    """Sorted unique uint64 positions from a DeletionVector (``positions()``) or an array."""
    raw = dv.positions() if hasattr(dv, "positions") else dv
    arr = np.asarray(raw)
    if arr.size and arr.dtype.kind == "i" and arr.min() < 0:
        raise ValueError("row positions must be >= 0")
    arr = arr.astype(np.uint64, copy=False).ravel()
    if arr.size > 1 and not bool(np.all(arr[1:] > arr[:-1])):
        arr = sorted_unique(arr)
    return arr


class DeletionOverlay(RichRepr):
    """Deleted rows per row group and per page of one Parquet file.

    ``row_groups`` and ``pages`` are DataFrames; ``findings`` holds
    ``parquet.row-group-fully-deleted`` (and out-of-range positions);
    ``chart()`` draws the deleted share per row group and per page.
    """

    def __init__(self, layout: RowGroups, dv: Any, column: Optional[str] = None) -> None:
        self.layout = layout
        self.positions = as_positions(dv)
        self.findings: FindingList = FindingList()
        self.deleted = int(self.positions.size)
        self.out_of_range = self._count_out_of_range()
        self.row_groups = self._row_group_table()
        self.pages = self._page_table(column)

    def _count_out_of_range(self) -> int:
        """Deleted positions past the file's rows (a finding when there are any)."""
        pos, n_rows = self.positions, self.layout.num_rows
        beyond = int(pos.size - np.searchsorted(pos, np.uint64(n_rows), side="left"))
        if beyond:
            first = int(pos[pos.size - beyond])
            self.findings.append(Finding(
                "parquet.overlay-out-of-range", Severity.ERROR, None,
                f"{beyond} deleted positions are past the file's {n_rows} rows "
                f"(the first is {first})",
                "the deletion vector belongs to another data file, or this file was rewritten"))
        return beyond

    def _row_group_table(self):
        """Deleted rows per row group (a finding for each one wholly deleted)."""
        import pandas as pd

        pos, rgs = self.positions, self.layout.row_group_infos
        starts = np.array([rg.first_row for rg in rgs], dtype=np.uint64)
        counts_rows = np.array([rg.num_rows for rg in rgs], dtype=np.uint64)
        deleted = (np.searchsorted(pos, starts + counts_rows, side="left")
                   - np.searchsorted(pos, starts, side="left")).astype(np.int64)
        share = np.divide(deleted, counts_rows, out=np.zeros(len(rgs)),
                          where=counts_rows > 0)
        table = pd.DataFrame({
            "row_group": [rg.index for rg in rgs],
            "first_row": starts.astype(np.int64),
            "num_rows": counts_rows.astype(np.int64),
            "deleted": deleted,
            "live": counts_rows.astype(np.int64) - deleted,
            "share": share,
            "fully_deleted": (deleted == counts_rows) & (counts_rows > 0),
            "offset": [rg.region.offset if rg.region is not None else None for rg in rgs],
            "length": [rg.region.length if rg.region is not None else None for rg in rgs],
        })
        for rg, d in zip(rgs, deleted):
            if rg.num_rows > 0 and d == rg.num_rows:
                r = rg.region
                self.findings.append(Finding(
                    "parquet.row-group-fully-deleted", Severity.INFO,
                    r.offset if r is not None else None,
                    f"row group {rg.index}: all {rg.num_rows} rows are deleted",
                    f"rewriting the file would drop its {r.length:,} bytes" if r is not None
                    else "rewriting the file would drop the whole row group",
                    length=r.length if r is not None else None))
        return table

    def _page_table(self, column: Optional[str]):
        """Deleted rows per data page (of ``column``, or of every column), a finding for each column whose
        pages' rows are unknown."""
        import pandas as pd

        pos, rgs = self.positions, self.layout.row_group_infos
        records = []
        unmapped: set[str] = set()
        for rg in rgs:
            for c in rg.chunks:
                if column is not None and c.name != column:
                    continue
                for p in c.pages:
                    if not p.page_type.startswith("DATA_PAGE"):
                        continue
                    if p.first_row_index is None or p.num_rows is None:
                        unmapped.add(c.name)
                        continue
                    records.append((rg.index, c.name, p.index, p.offset,
                                    p.header_length + p.compressed_size,
                                    rg.first_row + p.first_row_index, p.num_rows))
        if column is not None and not any(c.name == column for rg in rgs for c in rg.chunks):
            raise KeyError(f"no column {column!r}; columns: {[c.name for c in self.layout.columns]}")
        for name in sorted(unmapped):
            self.findings.append(Finding(
                "parquet.overlay-pages-unknown", Severity.INFO, None,
                f"column {name}: the rows of its pages are unknown (no offset index, "
                "repeated values, or page headers not read)"))
        cols = ["row_group", "column", "page", "offset", "length", "first_row", "num_rows"]
        pages = pd.DataFrame.from_records(records, columns=cols)
        p_start = pages["first_row"].to_numpy(dtype=np.uint64)
        p_end = p_start + pages["num_rows"].to_numpy(dtype=np.uint64)
        p_del = (np.searchsorted(pos, p_end, side="left")
                 - np.searchsorted(pos, p_start, side="left")).astype(np.int64)
        pages["deleted"] = p_del
        n = pages["num_rows"].to_numpy(dtype=np.float64)
        pages["share"] = np.divide(p_del, n, out=np.zeros(len(pages)), where=n > 0)
        pages["fully_deleted"] = (p_del == pages["num_rows"].to_numpy()) & (n > 0)
        return pages

    @property
    def share(self) -> float:
        n = self.layout.num_rows
        return (self.deleted - self.out_of_range) / n if n else 0.0

    @property
    def fully_deleted_bytes(self) -> int:
        """Bytes of the row groups whose every row is deleted."""
        df = self.row_groups
        return int(df.loc[df["fully_deleted"], "length"].fillna(0).sum())

    def chart(self, column: Optional[str] = None):
        """A matplotlib figure: deleted share per row group, and per page of one column."""
        return make_view("figure", self, column=column)

    def summary(self) -> str:
        rg = self.row_groups
        return (f"{self.deleted - self.out_of_range:,} of {self.layout.num_rows:,} rows deleted "
                f"({self.share:.1%}); {int(rg['fully_deleted'].sum())} of {len(rg)} row groups "
                f"fully deleted ({self.fully_deleted_bytes:,} bytes); "
                f"{int(self.pages['fully_deleted'].sum())} of {len(self.pages)} data pages "
                "fully deleted")

    def __repr__(self) -> str:
        return self.to_text()

