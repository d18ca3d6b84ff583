"""The entry index: every manifest entry of one snapshot in Arrow columns, and rows taken out of it.

What the region tree is to a file, this index is to a table.  :func:`.index_build.build_index` reads the
snapshot's manifest list, fetches its manifests through the table's I/O layer in batches
(:mod:`.manifest_chunks`), decodes each into one column chunk of only the fields asked for
(:mod:`.chunk_decoder`, cached per manifest-list record in :mod:`.entry_cache`, so snapshots that share
manifests decode them once) and concatenates the chunks.  Every live and DELETED entry is a row;
per-column metrics are columns only with ``metrics=True``.

Columns (``EntryIndex.table``, a ``pyarrow.Table``; one row per manifest entry, manifest-list order):

``content`` (int8, the spec's code), ``kind`` (``data``, ``dv``, ``position-deletes``,
``equality-deletes``), ``status`` (int8: 0 existing, 1 added, 2 deleted), ``file_path``,
``file_format``, ``partition`` (int32: index into ``EntryIndex.partitions``, the distinct
partition records — the grouping key; ``EntryIndex.partition_values()`` gives the records),
``spec_id``, ``record_count``, ``file_size_in_bytes``, ``snapshot_id``, ``sequence_number``,
``file_sequence_number``, ``first_row_id`` (inheritance applied as :mod:`.manifests` describes),
``referenced_data_file`` (DuckDB's ``""`` read as null; ``empty_referenced_data_file`` says so),
``content_offset``, ``content_size_in_bytes``, ``equality_ids``, ``sort_order_id``, ``manifest``
(index into ``EntryIndex.manifests``, the manifest-list records) and ``entry`` (index in its
manifest); with ``metrics=True`` also ``column_sizes``, ``value_counts``, ``null_value_counts``,
``nan_value_counts``, ``lower_bounds``, ``upper_bounds`` (lists of ``{key, value}``) and
``split_offsets``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Optional

from ..regions import Finding
from . import manifests as mf

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from .partition_registry import PartitionRecords


KINDS = ("data", "dv", "position-deletes", "equality-deletes")
TOP_FIELDS = ("status", "snapshot_id", "sequence_number", "file_sequence_number")
FILE_FIELDS = ("content", "file_path", "file_format", "partition", "record_count", "file_size_in_bytes",
               "equality_ids", "sort_order_id", "first_row_id", "referenced_data_file", "content_offset",
               "content_size_in_bytes")
METRIC_FIELDS = ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts", "lower_bounds",
                 "upper_bounds", "split_offsets")
#: ``EntryIndex.take`` slices runs of consecutive rows when they average at least this many rows, else takes.
ROWS_PER_SLICE = 64


def _schema(metrics: bool) -> "pa.Schema":
    import pyarrow as pa

    cols = [("content", pa.int8()), ("kind", pa.string()), ("status", pa.int8()), ("file_path", pa.string()),
            ("file_format", pa.string()), ("partition", pa.int32()), ("spec_id", pa.int32()),
            ("record_count", pa.int64()), ("file_size_in_bytes", pa.int64()), ("snapshot_id", pa.int64()),
            ("sequence_number", pa.int64()), ("file_sequence_number", pa.int64()), ("first_row_id", pa.int64()),
            ("referenced_data_file", pa.string()), ("empty_referenced_data_file", pa.bool_()),
            ("content_offset", pa.int64()), ("content_size_in_bytes", pa.int64()),
            ("equality_ids", pa.list_(pa.int32())), ("sort_order_id", pa.int32()), ("manifest", pa.int32()),
            ("entry", pa.int32())]
    if metrics:
        counts = pa.list_(pa.struct([("key", pa.int32()), ("value", pa.int64())]))
        cols += [("column_sizes", counts), ("value_counts", counts), ("null_value_counts", counts),
                 ("nan_value_counts", counts),
                 ("lower_bounds", pa.list_(pa.struct([("key", pa.int32()), ("value", pa.binary())]))),
                 ("upper_bounds", pa.list_(pa.struct([("key", pa.int32()), ("value", pa.binary())]))),
                 ("split_offsets", pa.list_(pa.int64()))]
    return pa.schema(cols)


@dataclass
class EntryIndex:
    """One snapshot's manifest entries as columns (see the module docstring), and what reading them found."""

    snapshot_id: Optional[int]
    table: Any  # pyarrow.Table
    manifests: list[dict[str, Any]]
    partitions: "PartitionRecords"
    findings: list[Finding] = field(default_factory=list)
    metrics: bool = False
    #: the places in ``manifests`` of the manifests whose entries are not all here (gone before they were read,
    #: unreadable, damaged): the counts of the snapshot miss what they hold (their findings say which)
    unread: tuple = ()
    #: the snapshot's manifest list could not be read: none of its files are here
    list_unread: bool = False
    #: what analyses derived from these entries (the index never changes once built), by name
    derived: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return self.table.num_rows

    @property
    def columns(self) -> list[str]:
        return self.table.column_names

    def column(self, name: str):
        """One column as a numpy array (nulls of integer columns as -1 for ``fill`` use; see :meth:`ints`)."""
        return self.table.column(name).to_numpy(zero_copy_only=False)

    def ints(self, name: str, fill: int = 0):
        """An integer column as int64 numpy, nulls replaced by ``fill``."""
        import pyarrow.compute as pc

        return pc.fill_null(self.table.column(name), fill).to_numpy().astype("int64", copy=False)

    def mask(self, kinds: Optional[Iterable[str]] = None, live: bool = True, deletes: Optional[bool] = None):
        """Boolean numpy mask of rows: of these ``kinds``, live only (status not DELETED), and
        ``deletes`` True / False for delete / data manifests only."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        m = np.ones(len(self), dtype=bool)
        if live:
            m &= self.ints("status", 1) != 2
        if kinds is not None:
            m &= pc.is_in(self.table.column("kind"), value_set=pa.array(list(kinds), pa.string())) \
                .to_numpy(zero_copy_only=False)
        if deletes is not None:
            manifest_deletes = np.array([m_.get("content") == 1 for m_ in self.manifests] or [False], dtype=bool)
            m &= manifest_deletes[self.ints("manifest")] == deletes
        return m

    def rows(self, mask=None, columns: Optional[list[str]] = None):
        """A ``pyarrow.Table`` of the rows a boolean mask selects (all when None), of ``columns`` only when given
        (by :meth:`take`: runs of consecutive rows are slices, not copies)."""
        import numpy as np

        if mask is None or np.asarray(mask).all():  # a filter copies even a table it keeps whole
            return self.table if columns is None else self.table.select(columns)
        return self.take(np.flatnonzero(mask), columns)

    def take(self, positions, columns: Optional[list[str]] = None):
        """A ``pyarrow.Table`` of the rows at ascending ``positions``, of ``columns`` only when given: the runs of
        consecutive rows are slices of the index (no copy; a manifest's entries are one run), a take only when
        the rows are scattered (Arrow's take copies every value, the metrics' lists and maps one by one)."""
        return take_runs(self.table if columns is None else self.table.select(columns), positions)

    def partition_values(self, codes) -> list:
        """The partition records of ``codes`` (values of the ``partition`` column)."""
        parts = self.partitions
        codes = list(codes)
        valid = [i for i, c in enumerate(codes) if c is not None and 0 <= c < len(parts)]
        out = [None] * len(codes)
        for i, value in zip(valid, parts.take([codes[i] for i in valid])):
            out[i] = value
        return out

    def manifest_paths(self, codes) -> list[str]:
        paths = [m.get("manifest_path") for m in self.manifests]
        return [paths[c] for c in codes]

    def to_dicts(self, mask=None) -> list[dict[str, Any]]:
        """Rows as the flat dicts :func:`.manifests.read_manifest` returns (the ``entries()`` shape)."""
        return self.dicts_of(self.rows(mask))

    def row(self, position: int) -> dict[str, Any]:
        """One row (by position in the index) as an ``entries()`` dict."""
        return self.dicts_of(self.table.slice(position, 1))[0]

    def dicts_of(self, t) -> list[dict[str, Any]]:
        """Rows of a selection of this index (``rows()``, ``table.slice``, ``take``) as ``entries()`` dicts."""
        import numpy as np
        import pyarrow as pa

        n = t.num_rows
        if not n:
            return []
        names = pa.array([mf.STATUS_NAMES.get(i, str(i)) for i in range(-128, 128)], pa.string())
        status = t.column("status")
        paths = pa.array([m.get("manifest_path") for m in self.manifests], pa.string())
        cols = {}
        for name in t.column_names:
            if name == "status":
                cols["status_code"] = status
                codes = np.asarray(status.to_numpy(zero_copy_only=False), dtype=np.float64)
                codes = np.where(np.isnan(codes), 0, codes).astype(np.int64) + 128
                cols["status"] = names.take(pa.array(codes))
            elif name == "manifest":
                cols["manifest_path"] = paths.take(t.column("manifest"))
            elif name == "entry":
                cols["manifest_entry_index"] = t.column("entry")
            elif name not in ("partition", "empty_referenced_data_file"):
                cols[name] = t.column(name)
        out = pa.table(cols).to_pylist()
        parts = self.partition_values(t.column("partition").to_pylist())
        empty = t.column("empty_referenced_data_file").to_pylist()
        for d, p, e in zip(out, parts, empty):
            d["partition"] = p
            if e:
                d["empty_referenced_data_file"] = True
        return out


def take_runs(table, positions):
    """The rows of a ``pyarrow.Table`` at ascending ``positions``: runs of consecutive rows as slices (no copy)
    when they average :data:`ROWS_PER_SLICE` rows or more, else :func:`take_rows`."""
    import numpy as np
    import pyarrow as pa

    at = np.asarray(positions, dtype=np.int64)
    breaks = np.flatnonzero(np.diff(at) != 1) + 1
    if not len(at) or len(breaks) * ROWS_PER_SLICE > len(at):
        return take_rows(table, at)
    bounds = zip(np.concatenate([[0], breaks]).tolist(), np.concatenate([breaks, [len(at)]]).tolist())
    return pa.concat_tables([table.slice(int(at[a]), b - a) for a, b in bounds])


def take_rows(table, positions):
    """The rows of a ``pyarrow.Table`` at ``positions`` (in that order), taken chunk by chunk.

    Arrow's ``take`` of a chunked string or list column first concatenates its chunks: a few rows of the index
    (one chunk per manifest) cost a copy of every path (270 MB of resident memory and 0.25 s for 1,000 rows of a
    million-file index). Here each chunk gives its own rows and only those are put together."""
    import numpy as np
    import pyarrow as pa

    at = np.asarray(positions, dtype=np.int64)
    if not len(at):  # (Arrow concatenates the chunks even to take no row)
        return table.slice(0, 0)
    batches = table.to_batches()
    if len(batches) <= 1:
        return table.take(pa.array(at, pa.int64()))
    bounds = np.cumsum([0] + [b.num_rows for b in batches])
    if at.min() < 0 or at.max() >= bounds[-1]:
        raise IndexError(f"row positions out of bounds for a table of {int(bounds[-1]):,} rows")
    ascending = bool((np.diff(at) >= 0).all())
    order = None if ascending else np.argsort(at, kind="stable")
    ordered = at if order is None else at[order]
    which = np.searchsorted(bounds, ordered, side="right") - 1
    cuts = np.flatnonzero(np.diff(which)) + 1
    parts = [batches[int(which[a])].take(pa.array(ordered[a:b] - bounds[which[a]]))
             for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), len(ordered)])]
    got = pa.Table.from_batches(parts, schema=table.schema)
    if order is None:
        return got
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return got.combine_chunks().take(pa.array(inverse))
