"""The file listings of a table as queries over its entry index: ``files()``, ``dvs()``, ``puffin_files()``.

Each is a column selection and a mask over :class:`~.index.EntryIndex`, converted column by
column to pandas (no dict per entry); only ``files(decode=True)`` turns each entry's metrics
into typed values, row by row, because that is what it returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ..regions import Severity, TableFinding
from .bounds import column_names, decode_bounds
from .manifests import STATUS_NAMES
from .columns import int_columns, located_strings, nullable_ints, objects, partitions, plain, strings

if TYPE_CHECKING:  # pragma: no cover
    from .index import EntryIndex
    from .source import TableSource

FILE_COLUMNS = [
    "kind", "content", "file_path", "location", "file_format", "record_count", "file_size_in_bytes",
    "partition", "status", "snapshot_id", "sequence_number", "file_sequence_number", "first_row_id",
    "referenced_data_file", "content_offset", "content_size_in_bytes", "equality_ids",
    "lower_bounds", "upper_bounds", "value_counts", "null_value_counts", "nan_value_counts",
    "column_sizes", "split_offsets", "sort_order_id", "spec_id", "manifest_path", "manifest_entry_index",
]
METRIC_COLUMNS = ("lower_bounds", "upper_bounds", "value_counts", "null_value_counts", "nan_value_counts",
                  "column_sizes", "split_offsets")
_METRIC_MAPS = ("value_counts", "null_value_counts", "nan_value_counts", "column_sizes")
_NULLABLE_INTS = ("first_row_id", "content_offset", "content_size_in_bytes", "sequence_number",
                  "file_sequence_number", "sort_order_id")


def live_files(source: "TableSource", snapshot_id: Optional[int] = None, include_deleted: bool = False,
               decode: bool = True):
    """Every live data and delete file of a snapshot in the ``files()`` shape, from its index with column metrics
    (the one the doctor and the card share)."""
    from .index_build import build_index

    ix = build_index(source, snapshot_id, metrics=True)
    return file_frame(source, ix, ix.mask(live=not include_deleted), decode)


def file_frame(source: "TableSource", index: "EntryIndex", mask=None, decode: bool = True, limit: Optional[int] = None):
    """Rows of the index in the ``files()`` shape (``FILE_COLUMNS``); metrics columns are empty
    without a ``metrics=True`` index; ``limit`` keeps the first rows only."""
    import numpy as np
    import pandas as pd

    rows = index.rows(mask)
    if limit is not None:
        rows = rows.slice(0, limit)
    n = rows.num_rows
    if n == 0:  # as pandas builds it from no records
        df = pd.DataFrame.from_records([], columns=FILE_COLUMNS)
        for c in ("content",) + _NULLABLE_INTS:
            df[c] = df[c].astype("Int64")
        return df
    data: dict[str, Any] = {}
    for c in ("kind", "file_path", "file_format", "referenced_data_file"):
        data[c] = strings(rows.column(c))
    data["content"] = nullable_ints(rows.column("content"))  # null in a damaged entry: <NA>, not INT64_MIN
    data["location"] = located_strings(source, rows.column("file_path"))
    for c in ("record_count", "file_size_in_bytes", "snapshot_id", "spec_id"):
        data[c] = plain(rows.column(c))
    data["partition"] = partitions(index, rows)
    status = rows.column("status").to_pylist()
    data["status"] = objects([STATUS_NAMES.get(s, str(s)) for s in status])
    data["equality_ids"] = objects(rows.column("equality_ids").to_pylist())
    paths = [m.get("manifest_path") for m in index.manifests]
    data["manifest_path"] = objects(paths)[rows.column("manifest").to_numpy().astype(np.int64)] if n else \
        np.empty(0, dtype=object)
    data["manifest_entry_index"] = rows.column("entry").to_numpy().astype(np.int64)
    if index.metrics and n:
        fields = source.fields_by_id()
        for c in METRIC_COLUMNS:
            values = rows.column(c).to_pylist()
            if not decode:
                data[c] = objects(values)
            elif c in ("lower_bounds", "upper_bounds"):
                data[c] = objects([decode_bounds(v, fields) for v in values])
            elif c in _METRIC_MAPS:
                data[c] = objects([column_names(v, fields) for v in values])
            else:
                data[c] = objects(values)
    else:
        for c in METRIC_COLUMNS:
            data[c] = objects([({} if decode and c in _METRIC_MAPS else None)] * n) if n else \
                np.empty(0, dtype=object)
    for c in _NULLABLE_INTS:
        data[c] = rows.column(c)
    df = pd.DataFrame({c: data[c] for c in FILE_COLUMNS if c not in _NULLABLE_INTS}, index=pd.RangeIndex(n))
    for c in _NULLABLE_INTS:
        df[c] = nullable_ints(data[c])
    return df[FILE_COLUMNS]


def dv_frame(source: "TableSource", index: "EntryIndex"):
    """Only the live DVs: where each is and what it covers (``Table.dvs()``)."""
    import numpy as np
    import pandas as pd

    rows = index.rows(index.mask(["dv"]))
    df = pd.DataFrame({
        "file_path": strings(rows.column("file_path"), np.float64),
        "location": located_strings(source, rows.column("file_path")) if rows.num_rows else np.empty(0, np.float64),
        "referenced_data_file": strings(rows.column("referenced_data_file"), np.float64),
    }, index=pd.RangeIndex(rows.num_rows))
    for c in ("content_offset", "content_size_in_bytes", "record_count", "file_size_in_bytes"):
        df[c] = nullable_ints(rows.column(c))
    df["snapshot_id"] = plain(rows.column("snapshot_id")) if rows.num_rows else np.empty(0, np.float64)
    df["sequence_number"] = nullable_ints(rows.column("sequence_number"))
    df["partition"] = partitions(index, rows) if rows.num_rows else np.empty(0, np.float64)
    return df


def puffin_frame(source: "TableSource", index: Optional["EntryIndex"], snapshot_id: Optional[int]):
    """Every Puffin file of the snapshot: its DV files (grouped from the index) and statistics files; no rows
    without an index (a table with no snapshot)."""
    import pandas as pd

    cols = ["role", "file_path", "location", "file_size_in_bytes", "blobs", "record_count", "snapshot_id",
            "sequence_number"]
    if index is None:
        return pd.DataFrame(columns=cols)
    rows = index.rows(index.mask(["dv"]))
    parts = []
    if rows.num_rows:
        t = pd.DataFrame({"file_path": rows.column("file_path").to_pandas().to_numpy(),
                          "file_size_in_bytes": plain(rows.column("file_size_in_bytes")),
                          "record_count": pd.array(rows.column("record_count").to_pandas().fillna(0).to_numpy(),
                                                   dtype="int64"),
                          "snapshot_id": plain(rows.column("snapshot_id")),
                          "sequence_number": nullable_ints(rows.column("sequence_number"))})
        g = t.groupby("file_path", sort=False)
        first = g.head(1).set_index("file_path")
        df = pd.DataFrame({"role": "deletion-vectors", "file_path": first.index.to_numpy(dtype=object)})
        df["location"] = [source.locate(p) for p in df.file_path]
        df["file_size_in_bytes"] = first.file_size_in_bytes.to_numpy()
        df["blobs"] = g.size().reindex(first.index).to_numpy()
        df["record_count"] = pd.array(g.record_count.sum().reindex(first.index).to_numpy(), dtype="Int64")
        approx = t.record_count.astype("float64").groupby(t.file_path, sort=False).sum().reindex(first.index)
        for path in first.index[approx.to_numpy() >= 2.0 ** 63]:  # the int64 sum wrapped: <NA> and a finding
            df.loc[df.file_path == path, "record_count"] = pd.NA
            total = sum(int(v) for v in t.record_count[t.file_path == path])
            source.note(TableFinding(code="iceberg.metadata-number-range", severity=Severity.ERROR, offset=None,
                                    file=path, message=f"record_count of {path} adds up to {total:,}, beyond a "
                                    "long; shown as <NA>"))
        df["snapshot_id"] = first.snapshot_id.to_numpy()
        df["sequence_number"] = first.sequence_number.array
        parts = df.to_dict("records")
    seen = {r["file_path"] for r in parts}
    for s in source.metadata.statistics:
        if s.snapshot_id != snapshot_id or s.kind != "table" or s.path in seen:
            continue
        seen.add(s.path)
        parts.append({"role": "statistics", "file_path": s.path, "location": source.locate(s.path),
                      "file_size_in_bytes": s.file_size_in_bytes, "blobs": len(s.blob_metadata),
                      "record_count": None, "snapshot_id": s.snapshot_id, "sequence_number": None})
    df = pd.DataFrame.from_records(parts, columns=cols)
    # from the row values: records mixing numbers and None infer float64, which cannot hold 2^62 + 1
    int_columns(df, parts, ("record_count", "sequence_number"))
    return df


#: The columns of ``entries()``, in order (``empty_referenced_data_file`` only where an entry has one).
ENTRY_COLUMNS = ["content", "kind", "status_code", "status", "file_path", "file_format", "spec_id", "record_count",
                 "file_size_in_bytes", "snapshot_id", "sequence_number", "file_sequence_number", "first_row_id",
                 "referenced_data_file", "content_offset", "content_size_in_bytes", "equality_ids", "sort_order_id",
                 "manifest_path", "manifest_entry_index", "partition"]
_ENTRY_INTS = ("content", "status_code", "spec_id", "record_count", "file_size_in_bytes", "snapshot_id",
               "sequence_number", "file_sequence_number", "first_row_id", "content_offset", "content_size_in_bytes",
               "sort_order_id", "manifest_entry_index")


def entry_frame(index: "EntryIndex", mask=None):
    """The entries of an index (those of ``mask``) as ``entries()`` rows: the manifests' fields with
    inheritance applied, ``partition`` the record, integers as nullable ``Int64``."""
    import pandas as pd

    rows = index.to_dicts(mask)
    extra = ["empty_referenced_data_file"] if any("empty_referenced_data_file" in r for r in rows) else []
    df = pd.DataFrame.from_records(rows, columns=ENTRY_COLUMNS + extra)
    int_columns(df, rows, _ENTRY_INTS)
    if extra:
        df["empty_referenced_data_file"] = df["empty_referenced_data_file"].fillna(False).astype(bool)
    return df


def kind_counts(index: "EntryIndex") -> dict[str, int]:
    """Live files per kind (``data``, ``dv``, ``position-deletes``, ``equality-deletes``) of an index."""
    import pyarrow as pa

    counts = index.rows(index.mask(), ["kind"]).column("kind").value_counts()
    got = dict(zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist())) \
        if isinstance(counts, pa.StructArray) else {}
    return {k: int(v) for k, v in got.items()}
