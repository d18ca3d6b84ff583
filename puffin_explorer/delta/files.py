"""The live data files and DVs of one Delta version as DataFrames and totals: functions of a
:class:`~.snapshot.DeltaSnapshot` (what :class:`~.table.DeltaTable` and the doctor show)."""

from __future__ import annotations

from typing import Optional

from ..health import DELETED_SHARE_THRESHOLD
from .log import DeltaLog, State
from .snapshot import DeltaSnapshot

DV_COLUMNS = ["data_file", "location", "storage_type", "path_or_inline_dv", "offset", "size_in_bytes",
              "cardinality", "dv_file", "unique_id", "num_records", "version"]


def files_frame(snap: DeltaSnapshot):
    """Live data files: path, location, size, modification time, numRecords, partition values, DV summary."""
    import pandas as pd

    rows = []
    for f in snap.live():
        a = f.add
        rows.append({"file_path": f.path, "location": snap.locate(f.path), "size_in_bytes": a.get("size"),
                     "modification_time": a.get("modificationTime"), "num_records": f.num_records,
                     "partition_values": f.partition_values,
                     "has_dv": f.dv is not None, "dv_storage_type": f.dv.storage_type if f.dv else None,
                     "dv_cardinality": f.dv.cardinality if f.dv else 0,
                     "base_row_id": a.get("baseRowId"), "version": f.version})
    df = pd.DataFrame.from_records(rows, columns=[
        "file_path", "location", "size_in_bytes", "modification_time", "num_records", "partition_values",
        "has_dv", "dv_storage_type", "dv_cardinality", "base_row_id", "version"])
    for col in ("num_records", "base_row_id", "size_in_bytes"):
        df[col] = df[col].astype("Int64")
    return df


def dvs_frame(snap: DeltaSnapshot):
    """One row per live DV: data file, storage_type, path_or_inline_dv, offset, size_in_bytes,
    cardinality, the resolved DV file (None inline), unique_id, the data file's numRecords."""
    import pandas as pd

    rows = []
    for f in snap.live():
        if f.dv is None:
            continue
        d = f.dv
        rows.append({"data_file": f.path, "location": snap.locate(f.path), "storage_type": d.storage_type,
                     "path_or_inline_dv": d.path_or_inline_dv, "offset": d.offset,
                     "size_in_bytes": d.size_in_bytes, "cardinality": d.cardinality,
                     "dv_file": snap.dv_location(d), "unique_id": d.unique_id, "num_records": f.num_records,
                     "version": f.version})
    df = pd.DataFrame.from_records(rows, columns=DV_COLUMNS)
    for col in ("offset", "num_records"):
        df[col] = df[col].astype("Int64")
    return df


def partition_key(values) -> str:
    """A Delta file's partition values as the measures' grouping key (``pkey``) spells them: Python's ``str`` of
    them sorted by column, which :func:`shown_partition` reads back."""
    return str(dict(sorted((values or {}).items())))


def shown_partition(key: str) -> str:
    """The text a user reads (:func:`~puffin_explorer.iceberg.columns.partition_text`) of a :func:`partition_key`:
    made once per partition shown, from the key (a Delta partition value is a string or null)."""
    import ast

    from ..iceberg.columns import partition_text

    try:
        return partition_text(ast.literal_eval(key))
    except (ValueError, SyntaxError):
        return key


_LONG = (1 << 63) - 1


def _long(value, missing=None):
    """An integer of the log as a long (a damaged one past the range of a long clipped to it), else ``missing``."""
    if not isinstance(value, int) or isinstance(value, bool):
        return missing
    return max(-_LONG - 1, min(_LONG, value))


def _size(add: dict) -> int:
    """An ``add``'s size; a damaged one without a size counts as 0 bytes, as the doctor always counted it."""
    return _long(add.get("size"), 0)


def measure_relations(snap: DeltaSnapshot, dv_file_sizes=None, locate_dvs: bool = True) -> dict:
    """The input relations of :mod:`~puffin_explorer.iceberg.measures` (Arrow) of the version's live files: a
    data file is keyed by its place in :meth:`~.snapshot.DeltaSnapshot.live` (a DV belongs to its ``add``, so
    a path listed twice counts twice, as it is read twice), its partition values are its ``pkey``; a DV's file
    is the resolved DV file (None inline, or with ``locate_dvs=False``), sized from ``dv_file_sizes`` (location
    -> bytes) when given.  Delta has no position- or equality-delete files."""
    import pyarrow as pa

    from ..iceberg.measures import empty
    from ..iceberg.paths import normalize

    live = snap.live()
    keys = [str(i) for i in range(len(live))]
    parts = [partition_key(f.partition_values) for f in live]
    with_dv = [(k, f) for k, f in zip(keys, live) if f.dv is not None]
    sizes = dict(dv_file_sizes or {})
    # where each DV's file is (resolved only when asked: deleted rows need the cardinalities alone)
    dv_paths = [snap.dv_location(f.dv) if locate_dvs else None for _, f in with_dv]
    return {
        "data": pa.table({"rid": pa.array(range(len(live)), pa.int64()), "key": keys,
                          "raw": pa.array([f.path for f in live], pa.string()), "pkey": parts,
                          "seq": pa.array([0] * len(live), pa.int64()),
                          "record_count": pa.array([_long(f.num_records) for f in live], pa.int64()),
                          "file_size_in_bytes": pa.array([_size(f.add) for f in live], pa.int64())}),
        "dvs": pa.table({"ref_key": pa.array([k for k, _ in with_dv], pa.string()),
                         "record_count": pa.array([_long(f.dv.cardinality, 0) for _, f in with_dv], pa.int64()),
                         "file_path": pa.array([normalize(p) if p else None for p in dv_paths], pa.string()),
                         "file_size_in_bytes": pa.array([sizes.get(normalize(p)) if p else None for p in dv_paths],
                                                        pa.int64())}),
        "pos": empty("pos"), "eq": empty("eq"), "pos_counts": empty("pos_counts")}


def _deleted(snap: DeltaSnapshot) -> list[int]:
    """Deleted rows per live file (in :meth:`~.snapshot.DeltaSnapshot.live`'s order) by the one definition,
    :data:`~puffin_explorer.iceberg.measures.DELETED_ROWS`: its DV's cardinality."""
    from ..iceberg.measures import DELETED_ROWS, run_local

    answer = run_local(DELETED_ROWS, **measure_relations(snap, locate_dvs=False)).to_pydict()
    by_key = dict(zip(answer["key"], answer["deleted"]))
    return [int(by_key.get(str(i), 0)) for i in range(len(snap.live()))]


def deleted_rows_per_file(snap: DeltaSnapshot):
    """Per data file: rows, deleted rows (the DV's cardinality), live rows, share deleted, DV storage.  When a
    commit the version needs was missing, the files listed may not be the version's: ``attrs["partial"]`` (each
    listed file's own counts are those of its ``add``)."""
    import pandas as pd

    rows = []
    for f, k in zip(snap.live(), _deleted(snap)):
        n = int(f.num_records or 0)
        rows.append({"file_path": f.path, "location": snap.locate(f.path),
                     "partition": f.partition_values, "record_count": n,
                     "deleted_rows": k, "live_rows": n - k, "deleted_share": (k / n) if n else 0.0,
                     "dvs": int(f.dv is not None), "storage_type": f.dv.storage_type if f.dv else None})
    df = pd.DataFrame.from_records(rows, columns=[
        "file_path", "location", "partition", "record_count", "deleted_rows", "live_rows", "deleted_share",
        "dvs", "storage_type"])
    df.attrs["partial"] = not snap.coverage.whole
    return df


def compaction_candidates(snap: DeltaSnapshot, min_share: float = DELETED_SHARE_THRESHOLD):
    """Data files whose DV deletes at least ``min_share`` of their rows, most deleted first."""
    df = deleted_rows_per_file(snap)
    df = df[df["deleted_share"] >= min_share]
    return df.sort_values(["deleted_share", "deleted_rows"], ascending=False).reset_index(drop=True)


#: The columns of ``DeltaTable.versions()``.
VERSION_COLUMNS = ["version", "timestamp", "operation", "operation_parameters", "added_files", "removed_files",
                   "added_dvs", "removed_dvs", "data_files", "records", "deleted_rows", "live_rows", "dvs",
                   "is_current"]


def versions_frame(log: DeltaLog, current: int):
    """The version timeline of a log: per commit its operation, files and DVs added/removed, and the table after
    it (data files, records, deleted rows, live rows); ``is_current`` marks version ``current``."""
    import pandas as pd

    rows: list[dict] = []
    log.replay(log.files.latest or 0, lambda version, state, actions: rows.append(
        _version_row(version, state, actions, current)))
    df = pd.DataFrame.from_records(rows, columns=VERSION_COLUMNS)
    for col in ("data_files", "records", "deleted_rows", "live_rows", "dvs"):
        df[col] = df[col].astype("Int64")  # None where a commit it needs is missing: never a smaller number
    return df


def _version_row(version: int, state: State, actions: list, current: int) -> dict:
    """One commit's row of :func:`versions_frame`."""
    from ..iceberg.overview import timestamp_ms

    info = next((b for k, b in actions if k == "commitInfo"), {})
    adds = [b for k, b in actions if k == "add"]
    removes = [b for k, b in actions if k == "remove"]
    live = state.files.values()
    known = not state.missing  # a commit at or before it missing: the table after it is not known
    records = sum(int(f.num_records or 0) for f in live) if known else None
    deleted = sum(f.dv.cardinality for f in live if f.dv) if known else None
    return {"version": version, "timestamp": timestamp_ms(info.get("timestamp")),
            "operation": info.get("operation", "CHECKPOINT" if not actions else None),
            "operation_parameters": dict(info.get("operationParameters") or {}),
            "added_files": len(adds), "removed_files": len(removes),
            "added_dvs": sum(1 for a in adds if a.get("deletionVector")),
            "removed_dvs": sum(1 for r in removes if r.get("deletionVector")),
            "data_files": len(state.files) if known else None, "records": records,
            "deleted_rows": deleted, "live_rows": records - deleted if known else None,
            "dvs": sum(1 for f in live if f.dv) if known else None, "is_current": version == current}


def dv_files_frame(snap: DeltaSnapshot):
    """The DV files live DVs point into: location, storage type, DVs referenced, their cardinalities."""
    import pandas as pd

    rows: dict[str, dict] = {}
    for f in snap.live():
        loc = snap.dv_location(f.dv) if f.dv else None
        if loc is None:
            continue
        r = rows.setdefault(loc, {"dv_file": loc, "storage_type": f.dv.storage_type, "dvs": 0, "cardinality": 0})
        r["dvs"] += 1
        r["cardinality"] += f.dv.cardinality
    return pd.DataFrame.from_records(list(rows.values()), columns=["dv_file", "storage_type", "dvs", "cardinality"])


def totals(snap: DeltaSnapshot) -> dict[str, Optional[int]]:
    """Data files, records (numRecords), deleted rows (DV cardinalities), live rows, DVs at this version; each
    None when a commit the version needs was missing or unreadable (``snap.coverage``), never a smaller number."""
    if not snap.coverage.whole:
        return {"data_files": None, "records": None, "deleted_rows": None, "live_rows": None, "dvs": None}
    files = snap.live()
    records = sum(int(f.num_records or 0) for f in files)
    deleted = sum(_deleted(snap))
    return {"data_files": len(files), "records": records, "deleted_rows": deleted, "live_rows": records - deleted,
            "dvs": sum(1 for f in files if f.dv)}


__all__ = ["DV_COLUMNS", "measure_relations", "partition_key", "shown_partition", "files_frame", "dvs_frame",
           "deleted_rows_per_file", "compaction_candidates", "totals", "VERSION_COLUMNS", "versions_frame",
           "dv_files_frame"]
