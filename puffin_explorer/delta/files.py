"""The live data files and DVs of one Delta version as DataFrames and totals: functions of a
:class:`~.snapshot.DeltaSnapshot` (what :class:`~.table.DeltaTable` and the doctor show)."""

from __future__ import annotations

from ..health import DELETED_SHARE_THRESHOLD
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


def deleted_rows_per_file(snap: DeltaSnapshot):
    """Per data file: rows, deleted rows (the DV's cardinality), live rows, share deleted, DV storage."""
    import pandas as pd

    rows = []
    for f in snap.live():
        n = int(f.num_records or 0)
        k = f.dv.cardinality if f.dv else 0
        rows.append({"file_path": f.path, "location": snap.locate(f.path),
                     "partition": f.partition_values, "record_count": n,
                     "deleted_rows": k, "live_rows": n - k, "deleted_share": (k / n) if n else 0.0,
                     "dvs": int(f.dv is not None), "storage_type": f.dv.storage_type if f.dv else None})
    return pd.DataFrame.from_records(rows, columns=[
        "file_path", "location", "partition", "record_count", "deleted_rows", "live_rows", "deleted_share",
        "dvs", "storage_type"])


def compaction_candidates(snap: DeltaSnapshot, min_share: float = DELETED_SHARE_THRESHOLD):
    """Data files whose DV deletes at least ``min_share`` of their rows, most deleted first."""
    df = deleted_rows_per_file(snap)
    df = df[df["deleted_share"] >= min_share]
    return df.sort_values(["deleted_share", "deleted_rows"], ascending=False).reset_index(drop=True)


def totals(snap: DeltaSnapshot) -> dict[str, int]:
    """Data files, records (numRecords), deleted rows (DV cardinalities), live rows, DVs at this version."""
    files = snap.live()
    records = sum(int(f.num_records or 0) for f in files)
    deleted = sum(f.dv.cardinality for f in files if f.dv)
    return {"data_files": len(files), "records": records, "deleted_rows": deleted, "live_rows": records - deleted,
            "dvs": sum(1 for f in files if f.dv)}


__all__ = ["DV_COLUMNS", "files_frame", "dvs_frame", "deleted_rows_per_file", "compaction_candidates", "totals"]
