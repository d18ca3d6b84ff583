"""What a table card and a warehouse card show, computed from metadata (views only format it).

* :func:`summary_row`: one warehouse-card row per table from the metadata file, the current
  snapshot's manifest list and, when it lists delete manifests, its manifests (no Puffin file);
* :func:`timeline`: per commit, records, deleted and live rows;
* :class:`DeleteDebt`: deleted share per data file and per partition, compaction candidates
  and position-delete files still live, from the manifests;
* :func:`schema_frame`, :func:`partition_frame`, :func:`sort_order_frame`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from .._answers import tabular
from .._repr import RichRepr
from .._text import plural
from ..errors import PuffinError
from ..health import DELETED_SHARE_THRESHOLD
from .metadata import Snapshot
from .columns import int_columns, long_or_none
from .numbers import datable_ms

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .source import TableSource

SUMMARY_COLUMNS = [
    "table", "namespace", "format_version", "snapshots", "current_snapshot_id", "records", "deleted_rows",
    "live_rows", "deleted_share", "data_files", "delete_files", "dvs", "position_delete_files",
    "equality_delete_files", "stats_files", "last_commit", "operation", "health", "problem", "unknown",
]


#: Columns of ``Table.snapshots()``, in order.
SNAPSHOT_COLUMNS = [
    "snapshot_id", "parent_snapshot_id", "sequence_number", "timestamp", "operation", "added_data_files",
    "removed_data_files", "added_records", "added_delete_files", "removed_delete_files", "added_dvs", "removed_dvs",
    "added_position_deletes", "removed_position_deletes", "added_equality_deletes", "total_records",
    "total_data_files", "total_delete_files", "total_position_deletes", "total_equality_deletes", "first_row_id",
    "added_rows", "schema_id", "manifest_list", "is_current", "summary",
]


def snapshot_frame(source: "TableSource"):
    """One row per snapshot: id, parent, sequence number, time, operation and summary counts."""
    import pandas as pd

    current = source.metadata.current_snapshot_id
    rows = []
    for s in source.metadata.snapshots:
        sm = s.summary

        def num(key: str) -> Optional[int]:
            return summary_number(sm, key)

        rows.append({
            "snapshot_id": s.snapshot_id,
            "parent_snapshot_id": s.parent_snapshot_id,
            "sequence_number": s.sequence_number,
            "timestamp": timestamp_ms(s.timestamp_ms),
            "operation": s.operation,
            "added_data_files": num("added-data-files"),
            "removed_data_files": num("deleted-data-files"),
            "added_records": num("added-records"),
            "added_delete_files": num("added-delete-files"),
            "removed_delete_files": num("removed-delete-files"),
            "added_dvs": num("added-dvs"),
            "removed_dvs": num("removed-dvs"),
            "added_position_deletes": num("added-position-deletes"),
            "removed_position_deletes": num("removed-position-deletes"),
            "added_equality_deletes": num("added-equality-deletes"),
            "total_records": num("total-records"),
            "total_data_files": num("total-data-files"),
            "total_delete_files": num("total-delete-files"),
            "total_position_deletes": num("total-position-deletes"),
            "total_equality_deletes": num("total-equality-deletes"),
            "first_row_id": s.first_row_id,
            "added_rows": s.added_rows,
            "schema_id": s.schema_id,
            "manifest_list": s.manifest_list,
            "is_current": s.snapshot_id == current,
            "summary": dict(sm),
        })
    df = pd.DataFrame.from_records(rows, columns=SNAPSHOT_COLUMNS)
    int_columns(df, rows, [c for c in df.columns if c.startswith(("added_", "removed_", "total_")) or c in (
        "snapshot_id", "parent_snapshot_id", "sequence_number", "first_row_id", "schema_id")])
    return df


def manifest_frame(source: "TableSource", snapshot_id: Optional[int] = None):
    """The manifest list of a snapshot as a DataFrame (``content`` data or deletes, ``location`` where it is now)."""
    import pandas as pd

    rows = []
    for m in source.manifest_records(snapshot_id):
        r = {k: v for k, v in m.items() if k != "partitions"}
        r["content"] = "deletes" if m.get("content") == 1 else "data"
        r["location"] = source.locate(m["manifest_path"])
        rows.append(r)
    return pd.DataFrame.from_records(rows)


def statistics_frame(source: "TableSource"):
    """Table and partition statistics files named by the metadata."""
    import pandas as pd

    fields = source.fields_by_id()
    rows = []
    for s in source.metadata.statistics:
        rows.append({
            "kind": s.kind,
            "snapshot_id": s.snapshot_id,
            "statistics_path": s.path,
            "location": source.locate(s.path),
            "file_size_in_bytes": s.file_size_in_bytes,
            "file_footer_size_in_bytes": s.file_footer_size_in_bytes,
            "blob_count": len(s.blob_metadata),
            "blob_types": sorted({b["type"] for b in s.blob_metadata}),
            "columns": [_column_names(fields, b["fields"]) for b in s.blob_metadata],
            "ndv": [b["properties"].get("ndv") for b in s.blob_metadata],
        })
    df = pd.DataFrame.from_records(rows, columns=[
        "kind", "snapshot_id", "statistics_path", "location", "file_size_in_bytes",
        "file_footer_size_in_bytes", "blob_count", "blob_types", "columns", "ndv"])
    int_columns(df, rows, ("snapshot_id", "file_size_in_bytes", "file_footer_size_in_bytes"))
    return df


#: Field names a statistics blob shows in ``statistics_files()`` before the rest are counted.
COLUMNS_SHOWN = 100


def _column_names(fields: dict, ids: list) -> str:
    """The comma-joined names of a blob's field ids (``#id`` when no schema has it); a damaged blob naming
    a million ids shows the first :data:`COLUMNS_SHOWN` and how many more."""
    names = ",".join(fields.get(f, (f"#{f}",))[0] for f in ids[:COLUMNS_SHOWN])
    return names if len(ids) <= COLUMNS_SHOWN else f"{names},… ({len(ids) - COLUMNS_SHOWN:,} more)"


def timestamp_ms(ms: Optional[int]):
    """A UTC timestamp from epoch milliseconds; ``NaT`` when pandas cannot hold it (a damaged ``timestamp-ms``)."""
    import pandas as pd

    if ms is None:
        return pd.NaT
    try:
        if not datable_ms(int(ms)):  # pandas 2 holds it at ms resolution, then a column wraps it
            return pd.NaT
        return pd.Timestamp(int(ms), unit="ms", tz="UTC")
    except (OverflowError, ValueError, TypeError, pd.errors.OutOfBoundsDatetime):
        return pd.NaT


def summary_number(summary: dict[str, str], key: str) -> Optional[int]:
    """A snapshot-summary count as an integer; None when absent, not a number, or beyond a long."""
    value = summary.get(key)
    if value is None or len(value) > 24:  # a long has at most 20 characters: never parse a huge string
        return None
    try:
        n = int(value)
    except ValueError:
        return None
    return n if -(1 << 63) <= n < (1 << 63) else None


_num = summary_number


def _ancestors(source: "TableSource", snap: Snapshot) -> tuple[list[Snapshot], bool]:
    """The snapshot and its ancestors (oldest last); False when the chain is cut by expiry."""
    by_id = {s.snapshot_id: s for s in source.metadata.snapshots}
    chain, seen = [snap], {snap.snapshot_id}
    cur = snap
    while cur.parent_snapshot_id is not None:
        nxt = by_id.get(cur.parent_snapshot_id)
        if nxt is None or nxt.snapshot_id in seen:
            return chain, False
        chain.append(nxt)
        seen.add(nxt.snapshot_id)
        cur = nxt
    return chain, True


def delete_file_kinds(source: "TableSource", snap: Snapshot) -> dict[str, Optional[int]]:
    """Live DVs, position-delete files and equality-delete files from the summaries of the snapshot's ancestry.

    Each commit's summary says how many of each it added and removed; None when a
    count is missing or the ancestry was expired.
    """
    chain, complete = _ancestors(source, snap)
    keys = {"dvs": ("added-dvs", "removed-dvs"),
            "position_delete_files": ("added-position-delete-files", "removed-position-delete-files"),
            "equality_delete_files": ("added-equality-delete-files", "removed-equality-delete-files")}
    out: dict[str, Optional[int]] = {}
    total = _num(snap.summary, "total-delete-files")
    for name, (add, rem) in keys.items():
        n = 0
        for s in chain:
            n += (_num(s.summary, add) or 0) - (_num(s.summary, rem) or 0)
        out[name] = long_or_none(n) if complete else None
    if total is not None and complete and total == 0:
        out = {k: 0 for k in out}
    return out


def listed_counts(manifests: list[dict[str, Any]]) -> Optional[dict[str, int]]:
    """Data files, records, delete files and delete records as a manifest list counts them (its
    ``added_*`` and ``existing_*`` fields), None when a manifest lacks the file counts (v1 writers)."""
    if not all(m.get("added_files_count") is not None for m in manifests):
        return None
    counts = {"data_files": 0, "records": 0, "delete_files": 0, "deleted_rows": 0}
    for m in manifests:
        files = int(m.get("added_files_count") or 0) + int(m.get("existing_files_count") or 0)
        rows = int(m.get("added_rows_count") or 0) + int(m.get("existing_rows_count") or 0)
        if m.get("content") == 1:
            counts["delete_files"] += files
            counts["deleted_rows"] += rows
        else:
            counts["data_files"] += files
            counts["records"] += rows
    return counts


def summary_row(source: "TableSource") -> dict[str, Any]:
    """One row of the warehouse card: from the metadata file and the current manifest list, and when that
    lists delete manifests, deleted rows by :func:`~.deletes.snapshot_rows` (the manifests, no Puffin
    byte): the deletes that apply to live data files, never a summary's total that counts dangling ones."""
    md = source.metadata
    snap = md.snapshot()
    row: dict[str, Any] = {c: None for c in SUMMARY_COLUMNS}
    row.update(table=source.name, namespace=source.name.rsplit(".", 1)[0] if "." in source.name else "",
               format_version=md.format_version, snapshots=len(md.snapshots), health="ok", problem="")
    row["stats_files"] = sum(1 for s in md.statistics if snap is not None and s.snapshot_id == snap.snapshot_id)
    if snap is None:
        row.update(records=0, deleted_rows=0, live_rows=0, deleted_share=0.0, data_files=0, delete_files=0,
                   dvs=0, position_delete_files=0, equality_delete_files=0, health="empty", unknown=[])
        return row
    sm = snap.summary
    row.update(current_snapshot_id=snap.snapshot_id, operation=snap.operation,
               last_commit=timestamp_ms(snap.timestamp_ms))
    try:
        manifests = source.manifest_records(snap.snapshot_id)
    except PuffinError as exc:
        row.update(health="error", problem=f"manifest list unreadable: {exc}")
        manifests = None
    listed = None if manifests is None else listed_counts(manifests)
    if listed is not None:
        counts = listed
        claimed = {"data_files": "total-data-files", "records": "total-records",
                   "delete_files": "total-delete-files"}
        for key, skey in claimed.items():
            n = _num(sm, skey)
            if n is not None and n != counts[key] and row["health"] == "ok":
                row.update(health="warning", problem=f"summary {skey} {n:,} but the manifest list counts "
                                                     f"{counts[key]:,}")
    else:  # manifest list without counts (v1 writers) or unreadable: the summary's totals
        counts = {"data_files": _num(sm, "total-data-files"), "records": _num(sm, "total-records"),
                  "delete_files": _num(sm, "total-delete-files"),
                  "deleted_rows": _num(sm, "total-position-deletes")}
    if manifests is None:  # no list to read: the writer's summary, said unverified by the problem above
        pos = _num(sm, "total-position-deletes")
        deleted = pos if pos is not None else counts["deleted_rows"]
    elif not any(m.get("content") == 1 for m in manifests):
        deleted = 0
    else:  # deletes that apply to live data files only: a summary also counts dangling ones (after a rewrite)
        exact = _snapshot_rows(source, snap.snapshot_id)
        if exact is None:
            deleted = None
            row.update(health="error", problem=f"the manifests of snapshot {snap.snapshot_id} cannot be read",
                       unknown=["deleted_rows", "live_rows", "deleted_share"])
        else:
            if exact.records is not None:
                counts["records"] = exact.records
            elif listed is None:  # no manifest-list count to fall back on: not known
                counts["records"] = None
            deleted = exact.deleted_rows
            if deleted is None:  # no number rather than a smaller one: the problem says why
                row.update(health="error", problem=f"files of snapshot {snap.snapshot_id} are gone or unreadable "
                                                   "(see the findings), so its deleted rows are not known")
            if deleted is None:  # (records, files and delete-file kinds come from the manifest list and summaries)
                row["unknown"] = ["deleted_rows", "live_rows", "deleted_share"]
    row.update({k: None if v is None else long_or_none(v) for k, v in counts.items()})
    row["deleted_rows"] = deleted
    if row["records"] is not None and deleted is not None:
        row["live_rows"] = long_or_none(row["records"] - deleted)
        row["deleted_share"] = (deleted / row["records"]) if row["records"] else 0.0
    row.update(delete_file_kinds(source, snap))
    row["unknown"] = list(row["unknown"] or [])
    if source.findings and row["health"] == "ok":
        worst = max(source.findings, key=lambda f: {"error": 2, "warning": 1}.get(f.severity.value, 0))
        if worst.severity.value != "info":
            row.update(health=worst.severity.value, problem=worst.message)
    if row["health"] == "ok" and (row["deleted_share"] or 0) > DELETED_SHARE_THRESHOLD:
        row.update(health="compact", problem=f"{row['deleted_share']:.1%} of the rows are deleted")
    return row


def _commit_rows(source: "TableSource", snap: Snapshot) -> tuple[Optional[int], Optional[int]]:
    """Records and deleted rows of one snapshot for the timeline: the manifest list's counts when it lists
    no delete manifest, else :func:`_snapshot_rows`; (None, None) when its files cannot all be read."""
    try:
        manifests = source.manifest_records(snap.snapshot_id)
    except PuffinError:
        manifests = None
    if manifests is not None and not any(m.get("content") == 1 for m in manifests) and all(
            m.get("added_rows_count") is not None and m.get("existing_rows_count") is not None for m in manifests):
        return sum(int(m["added_rows_count"]) + int(m["existing_rows_count"]) for m in manifests), 0
    # a past snapshot's index is built for this answer and not kept (its manifests' entries are)
    exact = _snapshot_rows(source, snap.snapshot_id, keep=snap.snapshot_id == source.metadata.current_snapshot_id)
    if exact is None:
        return None, None
    return exact.records, exact.deleted_rows  # each None when a file it depends on is gone or unreadable


def _snapshot_rows(source: "TableSource", snapshot_id: int, keep: bool = True):
    """:func:`~.deletes.snapshot_rows` of one snapshot (its index kept on the source when ``keep``), None
    when its manifests cannot be read at all."""
    from .deletes import snapshot_rows
    from .index_build import build_index

    try:
        return snapshot_rows(source, build_index(source, snapshot_id, keep=keep))
    except PuffinError:
        return None


def failed_row(name: str, exc: BaseException) -> dict[str, Any]:
    """The warehouse-card row of a table that cannot be opened."""
    row: dict[str, Any] = {c: None for c in SUMMARY_COLUMNS}
    offset = getattr(exc, "offset", None)
    where = f" (at byte {offset:,})" if isinstance(offset, int) and "byte" not in str(exc) else ""
    row.update(table=name, namespace=name.rsplit(".", 1)[0] if "." in name else "", health="error",
               problem=f"{type(exc).__name__}: {exc}{where}", unknown=[])  # not read at all: no counts, the problem
    return row


def timeline(source: "TableSource"):
    """One row per commit, oldest first: operation, rows added, and records, deleted rows and live rows
    after it.

    The operation and what it added come from the snapshot summaries; records and deleted rows from
    the snapshot's manifest list, and when it lists delete manifests from :func:`~.deletes.snapshot_rows`
    (DV positions and position deletes that apply to live data files; equality deletes are not
    resolved). A snapshot whose files are gone or unreadable has None there, and its finding.
    """
    import pandas as pd

    rows = []
    current = source.metadata.current_snapshot_id
    for s in sorted(source.metadata.snapshots, key=lambda s: (s.sequence_number, s.timestamp_ms or 0)):
        sm = s.summary
        records, deleted = _commit_rows(source, s)
        rows.append({
            "snapshot_id": s.snapshot_id, "parent_snapshot_id": s.parent_snapshot_id,
            "sequence_number": s.sequence_number,
            "timestamp": timestamp_ms(s.timestamp_ms), "operation": s.operation,
            "added_records": _num(sm, "added-records"), "deleted_records": _num(sm, "deleted-records"),
            "added_deletes": _num(sm, "added-position-deletes"),
            "records": records, "deleted_rows": deleted,
            "live_rows": long_or_none(records - deleted) if records is not None and deleted is not None else None,
            "data_files": _num(sm, "total-data-files"), "delete_files": _num(sm, "total-delete-files"),
            "added_dvs": _num(sm, "added-dvs"), "removed_dvs": _num(sm, "removed-dvs"),
            "first_row_id": s.first_row_id, "added_rows": s.added_rows,
            "is_current": s.snapshot_id == current,
        })
    df = pd.DataFrame.from_records(rows, columns=[
        "snapshot_id", "parent_snapshot_id", "sequence_number", "timestamp", "operation", "added_records",
        "deleted_records", "added_deletes", "records", "deleted_rows", "live_rows", "data_files",
        "delete_files", "added_dvs", "removed_dvs", "first_row_id", "added_rows", "is_current"])
    int_columns(df, rows, [c for c in df.columns if c not in ("timestamp", "operation", "is_current")])
    return df


class DeleteDebt(RichRepr):
    """Rows readers must skip: deleted share per data file and per partition, compaction candidates.

    DV counts come from the manifests; Parquet position-delete files are read to
    count per data file (no Puffin byte is read).  The totals and the candidates are computed from the per-file
    counts as arrays, the partitions by the measure ``partition_deletes`` over them (the doctor's partition sums
    read the same measure); :attr:`per_file` (a row per data file) is made only when read.
    """

    def __init__(self, source: "TableSource", snapshot_id: Optional[int] = None,
                 threshold: float = DELETED_SHARE_THRESHOLD) -> None:
        from . import vanished
        from .deletes import coverage, deleted_shares, row_counts
        from .index_build import build_index

        self.source = source
        self.threshold = float(threshold)
        if snapshot_id is None and source.metadata.current_snapshot_id is None:
            self.snapshot_id = None  # a table with no snapshot yet has no debt: every frame is empty
        else:
            self.snapshot_id = source.snapshot(snapshot_id).snapshot_id
        self._index = build_index(source, self.snapshot_id)
        self._counts = row_counts(source, self._index)
        self._share = deleted_shares(self._counts.records, self._counts.deleted)  # the per-file frame's
        self._per_file = None
        #: which counts are whole (:class:`~puffin_explorer.coverage.Coverage`); those that are not are None
        self.coverage = coverage(source, self._index)
        #: ``table.file-vanished`` findings: files of the snapshot gone when read.
        self.findings = list(vanished.snapshot_findings(source, self._index.snapshot_id))

    def _answer(self, frame: "pd.DataFrame") -> "pd.DataFrame":
        """A tabular answer of this snapshot, named in ``attrs`` (``table``, ``snapshot_id``)."""
        return tabular(frame, table=self.source.name, snapshot_id=self.snapshot_id)

    @property
    def per_file(self) -> "pd.DataFrame":
        """Per live data file: :func:`~.deletes.deleted_rows_per_file` with the partition as text (made once)."""
        if self._per_file is None:
            from .deletes import deleted_rows_per_file

            self._per_file = self._answer(deleted_rows_per_file(self.source, self._index, partition_text=True))
        return self._per_file

    @property
    def partial(self) -> bool:
        """Whether a file the snapshot needs was gone or unreadable, so some counts are unknown (None) or cover
        only what could be read (:attr:`coverage`)."""
        return bool(self.findings) or not self.coverage.whole

    @property
    def data_files(self) -> Optional[int]:
        """The live data files (rows of :attr:`per_file`); None when a data manifest could not be read."""
        return len(self._counts.records) if self.coverage.rows else None

    @property
    def records(self) -> Optional[int]:
        """The live data files' records; None when a data manifest could not be read."""
        return self.counted_records if self.coverage.rows else None

    @property
    def deleted_rows(self) -> Optional[int]:
        """Rows the snapshot's deletes remove from live data files; None when a file they depend on could not be
        read (``coverage.at_least(counted_deleted_rows)`` is the labelled partial count)."""
        return self.counted_deleted_rows if self.coverage.deleted_rows else None

    @property
    def counted_records(self) -> int:
        """The records of the data files read: :attr:`records` when whole, else a lower bound."""
        return int(self._counts.records.sum())

    @property
    def counted_deleted_rows(self) -> int:
        """The deleted rows the files read count: :attr:`deleted_rows` when whole, else a lower bound."""
        return int(self._counts.deleted.sum())

    @property
    def deleted_share(self) -> Optional[float]:
        if self.records is None or self.deleted_rows is None:
            return None
        return self.deleted_rows / self.records if self.records else 0.0

    @property
    def _shares_known(self) -> bool:
        return self.coverage.file_deletes

    def per_partition(self) -> "pd.DataFrame":
        """Per partition: data files, rows, deleted rows, share and compaction candidates, ordered by partition
        text (then key); deleted rows, shares and candidates are null when a delete file or manifest could not be
        read.  A partition is a spec and a partition value (the measure ``partition_deletes``, as the doctor
        groups them): two specs whose partitions read the same are two rows of one text."""
        import numpy as np
        import pandas as pd
        import pyarrow.compute as pc

        from .columns import UNPARTITIONED, strings
        from .relations import partition_codes

        keys = partition_codes(self._index, self._counts.rows)
        g = self._partition_deletes(keys.codes[0])
        g = g.append_column("partition", pc.fill_null(keys.partitions.take(g.column("pkey")), UNPARTITIONED))
        g = g.sort_by([("partition", "ascending"), ("pkey", "ascending")])  # key codes follow the key's text
        records, deleted = (g.column(c).to_numpy().astype(np.int64) for c in ("record_count", "deleted_rows"))
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(records > 0, deleted / np.where(records > 0, records, 1), 0.0).astype(np.float64)
        out = pd.DataFrame({"partition": strings(g.column("partition")),
                            "data_files": g.column("data_files").to_numpy().astype(np.int64),
                            "record_count": records, "deleted_rows": deleted, "deleted_share": share,
                            "candidates": g.column("candidates").to_numpy().astype(np.int64)},
                           index=pd.RangeIndex(g.num_rows))
        if not self._shares_known:  # not known: null, never a smaller number
            for col in ("deleted_rows", "candidates"):
                out[col] = pd.array([None] * len(out), dtype="Int64")
            out["deleted_share"] = np.nan
        out.attrs["partial"] = self.partial
        return self._answer(out)

    def _partition_deletes(self, pkeys):
        """The measure ``partition_deletes`` by DuckDB over the per-file counts already made (a data file is its
        place among them: its key, its row of deleted rows) and their partition key codes ``pkeys``."""
        import numpy as np
        import pyarrow as pa

        from .measures import PARTITION_DELETES, debt_params, run_local

        files = pa.array(np.arange(len(self._counts.rows)), pa.int64())
        return run_local(PARTITION_DELETES, debt_params=debt_params(self.threshold),
                         data=pa.table({"key": files, "pkey": pkeys,
                                        "record_count": pa.array(self._counts.records, pa.int64())}),
                         deleted_rows=pa.table({"key": files, "deleted": pa.array(self._counts.deleted, pa.int64())}))

    @property
    def candidate_count(self) -> Optional[int]:
        """How many data files' deleted share is above the threshold (``len(candidates())``, nothing sorted);
        None when the files' deleted rows are not known."""
        if not self._shares_known or not self.coverage.rows:
            return None
        return int((self._share > self.threshold).sum())

    def candidates(self, limit: Optional[int] = None) -> "pd.DataFrame":
        """Data files whose deleted share is above the threshold, most deleted first (then by path); ``limit``:
        the first ``limit`` of them only, chosen without sorting the rest (what a view shows of a big table).
        None of them when the files' deleted rows are not known (the frame's ``attrs["unknown"]`` says so)."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        from .deletes import deleted_rows_per_file

        at = np.flatnonzero(self._share > self.threshold) if self._shares_known else np.zeros(0, np.int64)
        paths = self._index.take(self._counts.rows[at], ["file_path"]).column("file_path")  # runs: slices, no copy
        keys = pa.table({"share": pa.array(self._share[at]), "path": paths})
        order = [("share", "descending"), ("path", "ascending")]
        if limit is not None and 0 <= limit < len(at):  # the first ``limit`` chosen, then only they sorted
            chosen = pc.select_k_unstable(keys, limit, sort_keys=order)
            chosen = chosen.take(pc.sort_indices(keys.take(chosen), sort_keys=order))
        else:
            chosen = pc.sort_indices(keys, sort_keys=order)
        picked = at[chosen.to_numpy()]
        return self._answer(deleted_rows_per_file(self.source, self._index, partition_text=True, places=picked))

    def position_delete_files(self) -> "pd.DataFrame":
        """Live Parquet position-delete files (v2 style; a v3 writer folds them into DVs)."""
        from .files import file_frame
        from .index_build import build_index

        ix = build_index(self.source, self.snapshot_id, content="deletes")
        df = file_frame(self.source, ix, ix.mask(["position-deletes"]), decode=False)  # a frame of those only
        return self._answer(df[["file_path", "record_count", "file_size_in_bytes", "partition", "sequence_number"]]
                            .reset_index(drop=True))

    def to_pandas(self) -> "pd.DataFrame":
        """:attr:`per_file`, a copy."""
        return self.per_file.copy()

    def __repr__(self) -> str:
        share = "None" if self.deleted_share is None else f"{self.deleted_share:.4f}"
        return (f"DeleteDebt({self.source.name!r}, deleted_share={share}, "
                f"candidates={self.candidate_count}{', partial' if self.partial else ''})")


def type_text(t: Any) -> str:
    """An Iceberg type as one line: ``long``, ``list<string>``, ``struct<2 fields>``, ``map<string, int>``."""
    if not isinstance(t, dict):
        return str(t)
    kind = t.get("type")
    if kind == "list":
        return f"list<{type_text(t.get('element'))}>"
    if kind == "map":
        return f"map<{type_text(t.get('key'))}, {type_text(t.get('value'))}>"
    if kind == "struct":
        return f"struct<{plural(len(t.get('fields') or []), 'field', sep='')}>"
    return str(kind)


def schema_frame(source: "TableSource", schema_id: Optional[int] = None):
    """Every field (nested ones dotted): id, name, type, required, v3 defaults, doc."""
    import pandas as pd

    rows = []

    def visit(fields: list[dict[str, Any]], prefix: str) -> None:
        for f in fields:
            t = f.get("type")
            rows.append({"id": f.get("id"), "name": prefix + str(f.get("name")), "type": type_text(t),
                         "required": bool(f.get("required")), "initial_default": f.get("initial-default"),
                         "write_default": f.get("write-default"), "doc": f.get("doc")})
            if isinstance(t, dict) and t.get("type") == "struct":
                visit(t.get("fields") or [], prefix + str(f.get("name")) + ".")

    visit(source.metadata.schema(schema_id).get("fields") or [], "")
    return pd.DataFrame.from_records(rows, columns=["id", "name", "type", "required", "initial_default",
                                                    "write_default", "doc"])


def _name(names: dict[int, str], field_id: Any) -> str:
    """The column a source id names ("" when the id is not an integer or unknown)."""
    return names.get(field_id, "") if isinstance(field_id, int) else ""


def partition_frame(source: "TableSource", spec_id: Optional[int] = None):
    """The partition spec: field id, name, transform and the source column."""
    import pandas as pd

    md = source.metadata
    sid = md.default_spec_id if spec_id is None else spec_id
    names = {f.id: f.name for f in md.fields()}
    rows = [{"field_id": f.get("field-id"), "name": f.get("name"), "transform": f.get("transform"),
             "source_id": f.get("source-id"), "source": _name(names, f.get("source-id"))}
            for f in md.partition_specs.get(sid, [])]
    return pd.DataFrame.from_records(rows, columns=["field_id", "name", "transform", "source_id", "source"])


def sort_order_frame(source: "TableSource"):
    """The default sort order: source column, transform, direction, null order."""
    import pandas as pd

    md = source.metadata
    names = {f.id: f.name for f in md.fields()}
    fields = md.sort_orders.get(md.default_sort_order_id if md.default_sort_order_id is not None else 0, [])
    rows = [{"source_id": f.get("source-id"), "source": _name(names, f.get("source-id")),
             "transform": f.get("transform"), "direction": f.get("direction"), "null_order": f.get("null-order")}
            for f in fields]
    return pd.DataFrame.from_records(rows, columns=["source_id", "source", "transform", "direction", "null_order"])
