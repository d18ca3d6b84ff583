"""Deleted rows per data file, position-delete counts and the inputs of delete debt, as queries over
the entry index: group-bys over numpy / pandas columns, one Python step per delete *file* read
(Parquet position deletes), none per entry.

A data file with a DV ignores its Parquet position deletes (the v3 spec: a DV holds every older
position delete of its file); those rows are counted as ``superseded_position_deletes``.
Equality deletes are counted as files only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional

from .._memory import release_freed_memory
from ..coverage import WHOLE, Coverage
from ..errors import NotFoundError, PuffinError
from ..regions import Severity, TableFinding
from .columns import (coded_array, located_strings, normalized, partition_texts, partitions, path_codes,
                      strings)
from . import vanished
from .index_build import MISSING_ENTRIES

if TYPE_CHECKING:  # pragma: no cover
    from .index import EntryIndex
    from .source import TableSource

PER_FILE_COLUMNS = ["file_path", "location", "partition", "record_count", "deleted_rows", "live_rows",
                    "deleted_share", "dvs", "position_delete_files", "superseded_position_deletes",
                    "equality_delete_files"]


def position_delete_pairs(source: "TableSource", index: "EntryIndex",
                          on_error: Optional[Callable[[str, Exception], None]] = None):
    """The ``pos_counts`` relation of :mod:`.measures` (Arrow): per live Parquet position-delete file and data file
    (normalized path) it names, the rows it names there; the files are read (each once per table: a delete file
    never changes).  A file that cannot be read raises, or with ``on_error(path, error)`` is told and left out. A
    delete file listed more than once is read and counted once (its deletes apply once; ``check()`` reports the
    listing)."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    from .paths import normalize

    rows = index.rows(index.mask(["position-deletes"]))
    files: list[str] = []
    keys: list[str] = []
    counts: list = []
    per_file: dict[str, pd.Series] = source.caches.position_delete_files
    for path in pc.unique(rows.column("file_path").drop_null()).to_pylist():
        s = per_file.get(path)
        if s is None:
            try:
                t = source.read_parquet(path, ["file_path"])
            except PuffinError as exc:
                if on_error is None:
                    raise
                on_error(path, exc)
                continue
            named = normalized(t.column("file_path")).value_counts()
            s = per_file[path] = pd.Series(named.field("counts").to_numpy(), index=named.field("values").to_pylist(),
                                           dtype="int64").groupby(level=0).sum()
        files += [path] * len(s)
        keys += [normalize(k) for k in s.index]
        counts.append(s.to_numpy(dtype=np.int64))
    return pa.table({"file_path": pa.array(files, pa.string()), "key": pa.array(keys, pa.string()),
                     "rows": pa.array(np.concatenate(counts) if counts else np.zeros(0, np.int64), pa.int64())})


def position_delete_counts(source: "TableSource", index: "EntryIndex",
                           on_error: Optional[Callable[[str, Exception], None]] = None) -> dict[str, dict[str, int]]:
    """Per data file (normalized path): rows its live Parquet position-delete files name, and how many files, by
    the one definition (:data:`.measures.POSITION_DELETE_ROWS` over :func:`position_delete_pairs`, which reads
    the files and raises or tells ``on_error`` as said there)."""
    from .measures import POSITION_DELETE_ROWS, run_local

    per_key = run_local(POSITION_DELETE_ROWS, pos_counts=position_delete_pairs(source, index, on_error)).to_pydict()
    return {"rows": dict(zip(per_key["key"], per_key["rows"])), "files": dict(zip(per_key["key"], per_key["files"]))}


def snapshot_position_delete_counts(source: "TableSource", index: "EntryIndex") -> dict[str, dict[str, int]]:
    """:func:`position_delete_counts` of the index's snapshot, computed once per source (raises as it does)."""
    kept = source.caches.position_delete_counts
    if index.snapshot_id not in kept:
        kept[index.snapshot_id] = position_delete_counts(source, index)
    return kept[index.snapshot_id]


def position_delete_frame(counts: dict[str, dict[str, int]]):
    """:func:`position_delete_counts` as a DataFrame, a row per data file in path order: ``data_file``,
    ``position_deletes`` (rows named) and ``position_delete_files``."""
    import pandas as pd

    files = sorted(counts["rows"])
    return pd.DataFrame({"data_file": pd.array(files, dtype=object),
                         "position_deletes": pd.array([counts["rows"][f] for f in files], dtype="int64"),
                         "position_delete_files": pd.array([counts["files"][f] for f in files], dtype="int64")})


class RowCounts(NamedTuple):
    """Per live data file of one index (numpy arrays, the index's data-row order): its records, the rows
    its DVs delete and how many DVs, the rows its live Parquet position-delete files name and how many
    files, and those that its DV supersedes. ``deleted = dv_rows + pos_rows - superseded``. ``rows`` are the
    data rows' positions in the index (the counts keep no copy of their paths)."""

    rows: Any
    records: Any
    dv_rows: Any
    dvs: Any
    pos_rows: Any
    pos_files: Any
    superseded: Any
    deleted: Any
    equality_delete_files: int
    #: position-delete files that could not be read (each one a finding): their rows are not counted
    unread_delete_files: int = 0


def row_counts(source: "TableSource", index: "EntryIndex") -> RowCounts:
    """Deleted rows per live data file by the one definition, :data:`.measures.DELETED_ROWS` (run by DuckDB
    here, by Spark SQL in the Spark doctor): a DV counts for the data file it references, a Parquet
    position-delete file for each data file it names (the files are read), a DV supersedes its file's position
    deletes (v3), and a delete whose data file is not live in the snapshot counts for nothing. Equality deletes
    are counted as files only. A position-delete file that cannot be read is a finding, its rows not counted.
    Computed once per index: the card, the timeline, delete debt and the doctor of one snapshot share it."""
    known = index.derived.get("row-counts")
    if known is not None:
        return known
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from .measures import DELETED_ROWS, empty, run_local

    at = np.flatnonzero(index.mask(["data"], deletes=False))
    dv_at = np.flatnonzero(index.mask(["dv"], deletes=True))
    kinds = index.rows(index.mask(deletes=True), ["kind"]).column("kind")
    eq_files = int(pc.sum(pc.equal(kinds, "equality-deletes")).as_py() or 0)
    unread: list[str] = []

    def on_error(path: str, exc: Exception) -> None:  # the files that read are counted; each other one a finding
        unread.append(path)
        _unreadable(source, index.snapshot_id, path, exc)

    has_pos = bool(pc.sum(pc.equal(kinds, "position-deletes")).as_py())
    pairs = position_delete_pairs(source, index, on_error) if has_pos else empty("pos_counts")
    # every path as a code into the index's one dictionary of normalized paths (path_codes, shared with check()
    # and the doctor): no copy of a path; a DV or delete naming no live data file joins none of the data rows
    codes = path_codes(index)
    rows_at = codes.files[at].astype(np.int64)
    ref_at = codes.refs[dv_at].astype(np.int64)

    def code(column):  # index_in hashes its value set (the dictionary, made for this lookup): not for no values
        return pc.cast(pc.index_in(column, value_set=codes.dictionary), pa.int64()) if len(column) else \
            pa.array([], pa.int64())

    per_key = run_local(DELETED_ROWS, data=pa.table({"key": coded_array(rows_at)}),
                        dvs=pa.table({"ref_key": coded_array(ref_at),
                                      "record_count": pa.array(index.ints("record_count", 0)[dv_at], pa.int64())}),
                        pos_counts=pairs.set_column(1, "key", code(pairs.column("key"))))
    # back to the index's data rows (a data file listed twice gets its counts twice, as its rows count twice)
    keyed = per_key.column("key").to_numpy()

    made: dict[str, Any] = {}

    def col(name: str):
        values = per_key.column(name).to_numpy()
        if not values.any():  # (a v3 table's position-delete counts) zeros no page of which is written
            got = np.zeros(len(rows_at), dtype=np.int64)
        elif name == "deleted" and np.array_equal(values, per_key.column("dv_rows").to_numpy()):
            got = made["dv_rows"]  # no position deletes: the deleted rows are the DV rows, one array for both
        else:
            dense = np.zeros(codes.size + 1, dtype=np.int64)  # the last slot: rows without a path
            dense[keyed] = values
            got = dense[rows_at]
        got.setflags(write=False)  # shared by every analysis of the index (and maybe by two fields)
        made[name] = got
        return got

    records = index.ints("record_count", 0)[at].astype(np.int64)
    out = index.derived["row-counts"] = RowCounts(at, records, col("dv_rows"), col("dvs"), col("pos_rows"),
                                                  col("pos_files"), col("superseded"), col("deleted"), eq_files,
                                                  len(unread))
    per_key = None  # (read by col above: dropped before the memory is given back)
    release_freed_memory()  # DuckDB's answer and the index's integer columns read for it
    return out


def deleted_rows_of(source: "TableSource", index: "EntryIndex", paths, rows: Any = None) -> Any:
    """:func:`row_counts`' deleted rows of the data files ``paths`` (as written; an Arrow array, a pandas Series or
    a list), in their order: the counts of the index's live data rows when ``paths`` are those rows (known without
    comparing a path when ``rows``, the index positions ``paths`` were taken from, are row_counts' rows), else by
    path."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    c = row_counts(source, index)
    if rows is not None and np.array_equal(np.asarray(rows), c.rows):
        return c.deleted.copy()
    written = index.take(c.rows, ["file_path"]).column("file_path")
    given = paths if isinstance(paths, (pa.Array, pa.ChunkedArray)) else \
        pa.array(list(paths) if not hasattr(paths, "array") else paths.array, pa.string())
    if len(given) == len(written) and bool(pc.all(pc.equal(written, given)).as_py() in (True, None)):
        return c.deleted.copy()
    at = pc.index_in(normalized(given), value_set=normalized(written).combine_chunks()).to_numpy(zero_copy_only=False)
    found = ~np.isnan(at) if at.dtype.kind == "f" else np.ones(len(given), dtype=bool)
    return np.where(found, c.deleted[np.nan_to_num(at).astype(np.int64)] if len(c.deleted) else 0, 0).astype(np.int64)


def coverage(source: "TableSource", index: "EntryIndex") -> Coverage:
    """Which counts of the index's snapshot are whole (:class:`~puffin_explorer.coverage.Coverage`): the data
    manifests, the delete manifests and the position-delete files (:func:`row_counts`) that could not be read."""
    if index.list_unread:
        return Coverage(rows=False, deletes=False, positions=False,
                        because=tuple(dict.fromkeys(f.code for f in index.findings)))
    pos_files = int(index.mask(["position-deletes"]).sum()) if len(index) else 0
    # only a Parquet position-delete file is read to count: without one nothing can be unread (no row_counts)
    pos_unread = row_counts(source, index).unread_delete_files if pos_files else 0
    if not index.unread and not pos_unread:
        return WHOLE
    because = [f.code for f in index.findings if f.code in MISSING_ENTRIES]
    if pos_unread:
        because += [f.code for f in source.findings if f.code in UNREAD_DELETE_FILE and getattr(f, "file", "")]
    return manifest_coverage(index.manifests, index.unread, pos_unread, pos_files, because)


def manifest_coverage(manifests: list, unread: Any, pos_unread: int = 0, pos_files: int = 0,
                      because: Any = ()) -> Coverage:
    """:class:`~puffin_explorer.coverage.Coverage` of a snapshot whose ``manifests`` (its manifest list's records)
    at the places ``unread`` were not read whole, and ``pos_unread`` of its ``pos_files`` position-delete files
    not read (the driver's index and the Spark doctor alike).  What was read is a lower bound (each manifest holds
    live files of its own), said as ``k of n manifests read``; nothing read bounds nothing."""
    gone = [manifests[i] for i in unread]
    deletes_unread = sum(1 for m in gone if m.get("content") == 1)
    parts = []
    if gone:
        parts.append(f"{len(manifests) - len(gone):,} of {len(manifests):,} manifests")
    if pos_unread:
        parts.append(f"{pos_files - pos_unread:,} of {pos_files:,} position-delete files")
    if not parts:
        return WHOLE
    return Coverage(rows=len(gone) == deletes_unread, deletes=not deletes_unread, positions=not pos_unread,
                    covers=" and ".join(parts) + " read", lower_bound=len(gone) < len(manifests),
                    because=tuple(dict.fromkeys(because)))


#: Codes of a position-delete file whose rows are not counted (:func:`_unreadable`).
UNREAD_DELETE_FILE = frozenset({vanished.CODE, "iceberg.file-missing", "iceberg.position-delete-unreadable"})


class SnapshotRows(NamedTuple):
    """A snapshot's records, deleted rows (by :func:`row_counts`) and live rows: None when a file they depend on
    was gone or unreadable (``coverage`` says which side; the findings name the files).  ``partial`` when a file
    of the snapshot was not read; ``counted_records`` / ``counted_deleted`` are what the files read hold (lower
    bounds, :meth:`~puffin_explorer.coverage.Coverage.at_least`)."""

    records: Optional[int]
    deleted_rows: Optional[int]
    live_rows: Optional[int]
    partial: bool
    coverage: Coverage = WHOLE
    counted_records: int = 0
    counted_deleted: int = 0


def snapshot_rows(source: "TableSource", index: "EntryIndex") -> SnapshotRows:
    """Totals of :func:`row_counts` over a snapshot: the number the table card, the warehouse card, the
    timeline, delete debt and the doctor all show (None where :func:`coverage` says it is not known)."""
    c = row_counts(source, index)
    records, deleted = int(c.records.sum()), int(c.deleted.sum())
    cov = coverage(source, index)
    known_records = records if cov.rows else None
    known_deleted = deleted if cov.deleted_rows else None
    live = None if known_records is None or known_deleted is None else records - deleted
    return SnapshotRows(known_records, known_deleted, live, not cov.whole, cov, records, deleted)


def deleted_shares(records, deleted):
    """Each data file's deleted share (numpy float64): deleted rows over records, 0 for a file of no records."""
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(records != 0, deleted / np.where(records != 0, records, 1), 0.0).astype(np.float64)


def deleted_rows_per_file(source: "TableSource", index: "EntryIndex", partition_text: bool = False,
                          places: Any = None):
    """Per live data file: rows, deleted rows, share deleted and how many delete files touch it.

    ``partition_text`` gives the partition as its text (:func:`.columns.partition_text`, one string per distinct
    partition), else the partition record.  ``places``: only these data files (places among the live data files,
    in this order), the rest not made.  When a delete manifest or a position-delete file could not be read, each
    file's deleted rows are not known: those columns are null (``attrs["unknown"]`` names them); a data manifest
    not read leaves its files out (``attrs["partial"]``, ``attrs["covers"]``).
    """
    import numpy as np
    import pandas as pd

    c = row_counts(source, index)
    if places is not None:
        at = np.asarray(places, dtype=np.int64)
        c = c._replace(rows=c.rows[at], records=c.records[at], dv_rows=c.dv_rows[at], dvs=c.dvs[at],
                       pos_rows=c.pos_rows[at], pos_files=c.pos_files[at], superseded=c.superseded[at],
                       deleted=c.deleted[at])
    n, records, deleted = len(c.records), c.records, c.deleted
    share = deleted_shares(records, deleted)
    data = index.take(c.rows, ["file_path", "partition"])
    part = partition_texts(index, data) if partition_text else partitions(index, data)
    df = pd.DataFrame({
        "file_path": strings(data.column("file_path")), "location": located_strings(source, data.column("file_path")),
        "partition": part, "record_count": records, "deleted_rows": deleted, "live_rows": records - deleted,
        "deleted_share": share.astype(np.float64), "dvs": c.dvs, "position_delete_files": c.pos_files,
        "superseded_position_deletes": c.superseded,
        "equality_delete_files": equality_deletes_applied(source, index, c.rows) if c.equality_delete_files else
        np.zeros(n, dtype=np.int64),
    }, index=pd.RangeIndex(n), columns=PER_FILE_COLUMNS)
    cov = coverage(source, index)
    unknown = unknown_file_columns(cov)
    for col in unknown:  # not known: null, never a smaller number
        df[col] = pd.Series(np.nan, index=df.index, dtype="float64") if col == "deleted_share" else \
            pd.array([None] * n, dtype="Int64")
    found = vanished.snapshot_findings(source, index.snapshot_id)
    vanished.mark(df, found)
    df.attrs["partial"] = bool(found) or not cov.whole
    df.attrs["unknown"] = unknown
    df.attrs["covers"] = cov.covers
    return df


def unknown_file_columns(cov: Coverage) -> list[str]:
    """The per-file columns of :func:`deleted_rows_per_file` that ``cov`` leaves unknown."""
    if not cov.deletes:
        return ["deleted_rows", "live_rows", "deleted_share", "dvs", "position_delete_files",
                "superseded_position_deletes", "equality_delete_files"]
    if not cov.positions:
        return ["deleted_rows", "live_rows", "deleted_share", "superseded_position_deletes"]
    return []


def equality_deletes_applied(source: "TableSource", index: "EntryIndex", rows) -> Any:
    """Per data row of the index at ``rows``: the live equality-delete files that apply to it, by the one
    definition (:data:`.measures.EQUALITY_DELETES_APPLIED`, run by DuckDB over the relations the doctor reads,
    :func:`.relations.index_relations`)."""
    import numpy as np

    from .measures import EQUALITY_DELETES_APPLIED, run_local
    from .relations import index_relations

    if not len(rows):
        return np.zeros(0, dtype=np.int64)
    relations = index_relations(source, index, ("data", "eq"))  # no position-delete bounds decoded for nothing
    pairs = run_local(EQUALITY_DELETES_APPLIED, data=relations["data"], eq=relations["eq"])
    per_row = np.zeros(len(index), dtype=np.int64)  # the measure's rid is a data row's place among the data rows
    per_row[np.flatnonzero(index.mask(["data"]))] = np.bincount(pairs.column("rid").to_numpy(),
                                                                minlength=relations["data"].num_rows)
    return per_row[np.asarray(rows, dtype=np.int64)]


__all__ = ["RowCounts", "SnapshotRows", "coverage", "manifest_coverage", "deleted_rows_per_file",
           "unknown_file_columns", "equality_deletes_applied", "normalized", "position_delete_frame",
           "position_delete_counts", "position_delete_pairs", "row_counts", "snapshot_rows"]


def _unreadable(source: "TableSource", snapshot_id: Optional[int], path: str, exc: Exception) -> None:
    """Note the finding for a position-delete file whose deletes cannot be counted (gone: ``table.file-vanished``)."""
    if isinstance(exc, NotFoundError) and not vanished.looks_moved(source, path):
        vanished.note(source, path, snapshot_id, "position-delete file",
                      "the rows it deletes are not counted, so deleted rows are unknown")
        return
    code = "iceberg.file-missing" if isinstance(exc, NotFoundError) else "iceberg.position-delete-unreadable"
    source.note(TableFinding(code=code, severity=Severity.ERROR, offset=None, file=path,
                            message=f"{exc}; the rows it deletes are not counted"))
