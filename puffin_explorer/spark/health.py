"""The table doctor as Spark jobs: :func:`health` returns the :class:`~puffin_explorer.health.TableHealth`
``Table.health()`` returns, with the work that grows with the table done by Spark.

The flow, thresholds and finding builders are the driver doctor's (:func:`~puffin_explorer.iceberg.health.doctor`);
only its reads differ (:class:`SparkReads`):

- the current snapshot's live files come from the entry index built on the executors
  (:func:`~.index.build_index_on_executors`, one task per manifest); per-file work (which delete files apply to
  which data file, deleted rows per file, clustering depth per partition, column metrics) runs as Spark joins,
  groupings and ``mapInArrow`` tasks, and the driver collects only aggregates: totals, one row per size class,
  per partition and per column (one partial per task, merged here);
- every snapshot's file set: each distinct manifest of any snapshot decoded once on the executors, joined to
  the (small) snapshot → manifest lists; the bytes only expired snapshots hold are a Spark anti-join;
- the listing of the table location: the top-level folders listed here, each folder listed in a task through
  this package's I/O layer, anti-joined against the referenced files in Spark.

What the driver holds per file is bounded: ``frames["amplification"]`` keeps the :data:`AMPLIFICATION_ROWS`
data files merging the most delete files (``partition`` as text), ``frames["orphans"]`` and
``frames["expired_only"]`` the first :data:`FRAME_ROWS` by location, and ``frames["listing"]`` is the listing
as a Spark DataFrame.  Metrics, findings, actions and effects are exactly the driver doctor's.
"""

from __future__ import annotations

import pickle
from typing import Any, Mapping, Optional

from ..errors import UnsupportedTableError
from .errors import spark_errors

#: Data files kept in ``frames["amplification"]``: the ones merging the most delete files.
AMPLIFICATION_ROWS = 1_000
#: Rows kept in ``frames["orphans"]`` and ``frames["expired_only"]`` (first by location).
FRAME_ROWS = 10_000

#: One row per live entry of the current snapshot, what the doctor's sums need (Spark DDL).
HEALTH_ROWS_SCHEMA = (
    "rid bigint, kind string, file_path string, key string, pkey string, partition string, "
    "partition_empty boolean, spec_id int, sequence_number bigint, seq bigint, record_count bigint, "
    "file_size_in_bytes bigint, ref_key string, scope_ref string, scope_lo string, scope_hi string, "
    "clus_lo binary, clus_hi binary, partial binary")
LISTING_SCHEMA = "location string, size bigint, mtime_ms bigint, hidden boolean"
_CLUSTER_SCHEMA = ("pkey string, partition string, files bigint, files_with_bounds bigint, average_depth double, "
                   "max_depth bigint, bytes bigint, rows bigint")
_SET_SCHEMA = "sid bigint, location string, size bigint"


def health(spark, table: Any, *, now: Any = None, older_than: Any = None, catalog: Optional[str] = None,
           name: Optional[str] = None, list_files: bool = True, cluster_by: Optional[str] = None,
           storage_options: Optional[dict[str, Any]] = None, relocate: Optional[Mapping[str, str]] = None):
    """The table doctor of ``table`` (a Table, a metadata location or folder, or a catalog table name) with the
    reads that grow with the table run on Spark: the same :class:`~puffin_explorer.health.TableHealth` as
    ``Table.health(now=..., ...)`` (parameters as there), so ``to_dict()`` and the view are the same.

    A catalog name ``cat.ns.t`` is opened at its current metadata file; ``catalog`` and ``name`` then default
    to ``cat`` and ``ns.t``.  See the module docstring for what the driver keeps per file (bounded frames)."""
    from ..iceberg.health import doctor
    from ..iceberg.paths import TableIO
    from ..iceberg.source import TableSource
    from .planner import plan_table
    from .tables import current_metadata_location

    with spark_errors():
        plan = plan_table(table, storage_options, relocate)
        if plan is None:
            parts = str(table).split(".")
            opened = TableSource.open(current_metadata_location(spark, table), TableIO(storage_options))
            if len(parts) >= 3:
                catalog = catalog or parts[0]
                name = name or ".".join(parts[1:])
            options = dict(storage_options or opened.io.storage_options or {})
        elif not plan.iceberg:
            raise UnsupportedTableError(f"{plan.table.name} is a Delta table: its doctor is DeltaTable.health() (a Delta log "
                             "has no manifests to spread over tasks)")
        else:
            opened, options = plan.table, plan.storage_options
        reads = SparkReads(spark, opened, options)
        try:
            return doctor(opened, reads, now=now, older_than=older_than, catalog=catalog or "spark_catalog",
                          name=name, list_files=list_files, cluster_by=cluster_by)
        finally:
            reads.release()


# ---- executor functions ---------------------------------------------------------------------------
def _health_rows(fields: dict, column: Optional[str]):
    """mapInArrow function: executor index entries (with metrics) → :data:`HEALTH_ROWS_SCHEMA` rows, decoded
    as ``files(decode=True)`` decodes them (bounds by column name, the path scope of position deletes); only
    the bounds these rows need are decoded (``file_path``'s and the clustering column's)."""
    wanted = {fid for fid, (name, _) in fields.items() if name in ("file_path", column)}

    def named(v):
        return {fields.get(int(kv["key"]), (f"#{kv['key']}",))[0]: kv["value"] for kv in v} if v else {}

    def run(batches):
        import pyarrow as pa

        from ..iceberg.bounds import decode_bounds
        from ..iceberg.measures import path_scope
        from ..iceberg.paths import normalize
        from .executors import _arrow_schema

        schema = _arrow_schema(HEALTH_ROWS_SCHEMA)

        def needed(raw):
            return decode_bounds([kv for kv in raw if kv["key"] in wanted] if raw else raw, fields)

        partial = ColumnPartial()
        for batch in batch_rows(batches, ("kind", "partition", "referenced_data_file", "spec_id", "manifest",
                                          "entry", "file_path", "sequence_number", "record_count",
                                          "file_size_in_bytes", *_METRIC_COLUMNS)):
            out = {f.name: [] for f in schema}
            for r in batch:
                kind = r["kind"]
                rid = (int(r["manifest"]) << 32) + int(r["entry"])
                if kind == "data":  # every bound is decoded once: the column metrics need them all
                    lows, highs = decode_bounds(r["lower_bounds"], fields), decode_bounds(r["upper_bounds"], fields)
                    partial.add(rid, {"values": named(r["value_counts"]), "nulls": named(r["null_value_counts"]),
                                      "nans": named(r["nan_value_counts"]), "sizes": named(r["column_sizes"]),
                                      "lows": lows, "highs": highs})
                else:
                    lows, highs = needed(r["lower_bounds"]), needed(r["upper_bounds"])
                part = r["partition"]
                ref = r["referenced_data_file"]
                scope, lo, hi = path_scope(ref, lows.get("file_path"), highs.get("file_path"))
                spec = r["spec_id"]
                out["rid"].append(rid)
                out["kind"].append(kind)
                out["file_path"].append(r["file_path"])
                out["key"].append(normalize(r["file_path"]) if r["file_path"] is not None else None)
                out["pkey"].append(("" if spec is None else str(spec)) + "|" + (part if part is not None else "{}"))
                out["partition"].append(part)
                out["partition_empty"].append(part is None or part == "{}")
                out["spec_id"].append(spec)
                out["sequence_number"].append(r["sequence_number"])
                out["seq"].append(r["sequence_number"] or 0)
                out["record_count"].append(r["record_count"])
                out["file_size_in_bytes"].append(r["file_size_in_bytes"])
                out["ref_key"].append(normalize(ref) if isinstance(ref, str) else None)
                out["scope_ref"].append(scope)
                out["scope_lo"].append(lo)
                out["scope_hi"].append(hi)
                data = kind == "data"
                for col, bounds in (("clus_lo", lows), ("clus_hi", highs)):
                    v = bounds.get(column) if (data and column is not None) else None
                    out[col].append(None if v is None else pickle.dumps(v))
                out["partial"].append(None)
            yield pa.RecordBatch.from_arrays([pa.array(out[f.name], f.type) for f in schema], schema=schema)
        last = {f.name: pa.nulls(1, f.type) for f in schema}  # the task's column partial: one row of its own
        last["kind"] = pa.array(["partial"], pa.string())
        last["partial"] = pa.array([pickle.dumps(partial)], pa.binary())
        yield pa.RecordBatch.from_arrays([last[f.name] for f in schema], schema=schema)

    return run


_MAPS = ("values", "nulls", "nans", "sizes", "lows", "highs")
_METRIC_COLUMNS = ("value_counts", "null_value_counts", "nan_value_counts", "column_sizes", "lower_bounds",
                   "upper_bounds")


def batch_rows(batches, columns):
    """Each Arrow batch's rows as dicts of ``columns`` only (no Python objects for the rest)."""
    for batch in batches:
        yield batch.select(list(columns)).to_pylist()


def _missing(v: Any) -> bool:
    """What pandas' ``notna`` calls missing (None, NaN, NaT), cheaply for the plain values metrics hold."""
    if v is None:
        return True
    if isinstance(v, float):
        return v != v
    if isinstance(v, (int, str, bytes)):
        return False
    import pandas as pd

    try:
        return bool(pd.api.types.is_scalar(v) and pd.isna(v))
    except (TypeError, ValueError):
        return False


class ColumnPartial:
    """One task's share of ``_columns``: per metric map the first place (row, position) each column appears,
    sums of the counts, and per column the files with a lower bound and the smallest lower / largest upper
    bound (a column whose bounds do not compare is marked, as ``min`` raising ``TypeError`` marks it)."""

    def __init__(self) -> None:
        self.first: dict[str, dict[str, tuple]] = {k: {} for k in _MAPS}
        self.sums: dict[str, dict[str, Any]] = {k: {} for k in ("values", "nulls", "nans", "sizes")}
        self.bounded: dict[str, int] = {}
        self.ext: dict[str, dict[str, Any]] = {"lows": {}, "highs": {}}
        self.broken: dict[str, set] = {"lows": set(), "highs": set()}

    def add(self, rid: int, maps: dict[str, dict]) -> None:
        """One data file's decoded metric maps (``_MAPS`` keys), ``rid`` its place in the index."""
        for k in _MAPS:
            for pos, (c, v) in enumerate(maps[k].items()):
                self.seen(k, c, (rid, pos))
                if k in self.sums:
                    total = self.sums[k].setdefault(c, 0)
                    if isinstance(v, (int, float)) and not isinstance(v, bool) and not _missing(v):
                        self.sums[k][c] = total + v
                elif not _missing(v):
                    if k == "lows":
                        self.bounded[c] = self.bounded.get(c, 0) + 1
                    self.extreme(k, c, v)

    def seen(self, k: str, c: str, at: tuple) -> None:
        if c not in self.first[k] or at < self.first[k][c]:
            self.first[k][c] = at

    def extreme(self, k: str, c: str, v: Any) -> None:
        if c in self.broken[k]:
            return
        try:
            cur = self.ext[k]
            cur[c] = v if c not in cur else (min(cur[c], v) if k == "lows" else max(cur[c], v))
        except TypeError:
            self.broken[k].add(c)

    def merge(self, other: "ColumnPartial") -> None:
        for k in _MAPS:
            for c, at in other.first[k].items():
                self.seen(k, c, at)
        for k in self.sums:
            for c, v in other.sums[k].items():
                self.sums[k][c] = self.sums[k].get(c, 0) + v
        for c, n in other.bounded.items():
            self.bounded[c] = self.bounded.get(c, 0) + n
        for k in ("lows", "highs"):
            self.broken[k] |= other.broken[k]
            for c, v in other.ext[k].items():
                self.extreme(k, c, v)


def _columns_frame(partials: list):
    """``_columns``' frame from the tasks' :class:`ColumnPartial`."""
    import pandas as pd

    p = ColumnPartial()
    for part in partials:
        p.merge(part)
    first, sums, bounded, ext, broken = p.first, p.sums, p.bounded, p.ext, p.broken

    def order(k: str) -> list[str]:
        return sorted(first[k], key=lambda c: first[k][c])

    names = list(dict.fromkeys([*order("values"), *order("sizes"), *order("lows"), *order("nulls")]))
    total_size = float(sum(sums["sizes"].values())) if first["sizes"] else 0.0

    def total(k: str, c: str):
        return int(sums[k].get(c, 0)) if c in first[k] else None

    def extreme(k: str, c: str):
        if c not in first[k] or c in broken[k]:
            return None
        return ext[k].get(c)

    rows = []
    for c in names:
        n_values, n_nulls, n_nans, n_bytes = total("values", c), total("nulls", c), total("nans", c), \
            total("sizes", c)
        rows.append({
            "column": c, "values": n_values, "nulls": n_nulls, "nans": n_nans,
            "null_rate": (n_nulls / n_values) if n_values and n_nulls is not None else None,
            "nan_rate": (n_nans / n_values) if n_values and n_nans is not None else None,
            "bytes": n_bytes, "storage_share": (n_bytes / total_size) if n_bytes is not None and total_size else None,
            "min": extreme("lows", c), "max": extreme("highs", c),
            "files_with_bounds": int(bounded.get(c, 0)) if c in first["lows"] else 0,
        })
    return pd.DataFrame(rows, columns=["column", "values", "nulls", "nans", "null_rate", "nan_rate", "bytes",
                                       "storage_share", "min", "max", "files_with_bounds"])


def _clustering_group(pdf):
    """applyInPandas function: one partition's data files (bounds pickled) → its clustering row."""
    import pandas as pd

    from ..iceberg.health import clustering_by_partition

    d = pd.DataFrame({
        "pkey": pdf["pkey"].to_numpy(), "partition": pdf["partition"].fillna("None").to_numpy(),
        "lo": [None if b is None else pickle.loads(b) for b in pdf["clus_lo"]],
        "hi": [None if b is None else pickle.loads(b) for b in pdf["clus_hi"]],
        "bytes": pdf["file_size_in_bytes"].astype("int64").to_numpy(),
        "rows": pdf["record_count"].astype("int64").to_numpy()})
    out = clustering_by_partition(d).rename_axis("pkey").reset_index()
    out["average_depth"] = out["average_depth"].astype("float64")
    out["max_depth"] = out["max_depth"].astype("Int64")
    return out[["pkey", "partition", "files", "files_with_bounds", "average_depth", "max_depth", "bytes", "rows"]]


def _located_entries(mapper):
    """mapInArrow function: index rows (manifest, file_path, file_size_in_bytes) → (manifest, location, size),
    ``location`` normalized where the file is now (``Table.locate``)."""

    def run(batches):
        import pyarrow as pa

        from ..iceberg.paths import normalize

        for batch in batches:
            paths = batch.column("file_path").to_pylist()
            where = {p: normalize(mapper.map(p)) for p in set(paths) if p is not None}
            yield pa.RecordBatch.from_arrays(
                [batch.column("manifest").cast(pa.int32()), pa.array([where.get(p) for p in paths], pa.string()),
                 batch.column("file_size_in_bytes").cast(pa.int64())], names=["manifest", "location", "size"])

    return run


#: What :func:`_position_delete_counts` yields: per position-delete file and data file, the rows it names.
_COUNTS_SCHEMA = "file_path string, key string, rows bigint, error string, missing boolean"


def _position_delete_counts(mapper, storage_options: Optional[dict]):
    """mapInArrow function: position-delete files (``file_path`` as written) → per file and data file (normalized)
    the rows it names, read as the driver reads them (``source.read_parquet_at``); a file that cannot be read is
    one row with ``error`` (``missing`` when it is gone)."""

    def run(batches):
        import pyarrow as pa

        from ..arrow_ddl import arrow_schema
        from ..errors import NotFoundError, PuffinError
        from ..iceberg.columns import normalized
        from ..iceberg.source import read_parquet_at
        from ..io import FileIO
        from .tables import fsspec_location

        io = FileIO(storage_options)
        schema = arrow_schema(_COUNTS_SCHEMA)
        for batch in batches:
            for path in batch.column("file_path").to_pylist():
                if path is None:
                    continue
                try:
                    names = read_parquet_at(io, fsspec_location(mapper.map(path)), ["file_path"]).column("file_path")
                except PuffinError as exc:
                    yield pa.RecordBatch.from_pydict({"file_path": [path], "key": [None], "rows": [None],
                                                      "error": [str(exc)],
                                                      "missing": [isinstance(exc, NotFoundError)]}, schema=schema)
                    continue
                counts = normalized(names.combine_chunks().cast(pa.string())).value_counts()
                keys, rows = counts.field("values"), counts.field("counts").cast(pa.int64())
                yield pa.RecordBatch.from_arrays([pa.array([path] * len(keys), pa.string()), keys, rows,
                                                  pa.nulls(len(keys), pa.string()), pa.nulls(len(keys), pa.bool_())],
                                                 schema=schema)

    return run


def _list_folders(storage_options: Optional[dict], root: str):
    """mapInArrow function: folder rows → every file under each folder (:data:`LISTING_SCHEMA`), listed
    through this package's I/O layer as the driver doctor lists the whole location."""

    def run(batches):
        import pyarrow as pa

        from ..health import list_folder
        from ..iceberg.paths import TableIO
        from .executors import _arrow_schema

        schema = _arrow_schema(LISTING_SCHEMA)
        io = TableIO(storage_options)
        for batch in batches:
            for folder in batch.column("folder").to_pylist():
                rows = list_folder(io, root, folder)
                if len(rows):
                    yield pa.Table.from_pandas(rows, preserve_index=False).cast(schema).combine_chunks() \
                        .to_batches()[0]

    return run


# ---- the reads ---------------------------------------------------------------------------------------
class SparkReads:
    """:class:`~puffin_explorer.iceberg.health.DriverReads`' methods as Spark jobs (see the module docstring)."""

    def __init__(self, spark, source: Any, storage_options: dict) -> None:
        self.spark = spark
        self.source = source
        self.options = dict(storage_options or {})
        self.persisted: list = []
        self.entries = None  # (manifest id, location, size) of every distinct manifest's live entries
        self.membership = None  # (sid, manifest id) of the readable, complete snapshots
        self.manifest_files: list[tuple[int, str, int]] = []
        self.extra: list[tuple[int, str, int]] = []
        self.listing = None

    def _keep(self, frame):
        frame = frame.persist()
        self.persisted.append(frame)
        return frame

    def release(self) -> None:
        for frame in self.persisted:
            frame.unpersist()
        self.persisted.clear()

    # ---- the current snapshot's files -------------------------------------------------------------
    def current_files(self, target: int, small_size: int, column: Optional[str]):
        import pandas as pd
        from pyspark.sql import functions as F

        from ..health import DELETE_FILES_PER_DATA_FILE, size_histogram
        from ..iceberg.health import FileAggregates, clustering_frame
        from .index import build_index_on_executors

        ix = build_index_on_executors(self.spark, self.source, metrics=True, storage_options=self.options,
                                      partitions="repr")
        fields = self.source.fields_by_id()
        live = ix.entries.where(F.coalesce(F.col("status") != 2, F.lit(True)))
        rows = self._keep(live.mapInArrow(_health_rows(fields, column), HEALTH_ROWS_SCHEMA))
        kind = F.col("kind")
        data, dv = rows.where(kind == "data"), rows.where(kind == "dv")
        pos, eq = rows.where(kind == "position-deletes"), rows.where(kind == "equality-deletes")
        by_kind = {r["kind"]: r for r in rows.groupBy("kind").agg(
            F.count(F.lit(1)).alias("n"), F.sum("file_size_in_bytes").alias("bytes"),
            F.sum("record_count").alias("records")).collect()}

        def k(name: str, what: str) -> int:
            r = by_kind.get(name)
            return int((r[what] if r is not None else 0) or 0)

        dv_files = dv.groupBy("file_path").agg(F.expr("min_by(file_size_in_bytes, rid)").alias("size"),
                                               F.count(F.lit(1)).alias("total"))
        dvf = dv_files.agg(F.count(F.lit(1)), F.sum("size")).first()
        c: dict[str, Any] = {"data_files": k("data", "n"), "data_bytes": k("data", "bytes")}
        c["dvs"] = k("dv", "n")
        c["position_delete_files"] = k("position-deletes", "n")
        c["equality_delete_files"] = k("equality-deletes", "n")
        c["delete_files"] = int(dvf[0]) + c["position_delete_files"] + c["equality_delete_files"]
        c["delete_bytes"] = int(dvf[1] or 0) + k("position-deletes", "bytes") + k("equality-deletes", "bytes")
        c["records"] = k("data", "records")

        # ---- delete files per data file (the spec's rules, as _amplification applies them) -----------
        dv_keys = dv.where(F.col("ref_key").isNotNull()).select(F.col("ref_key").alias("key")).distinct() \
            .withColumn("_dv", F.lit(1))
        d = (data.select("rid", "key", F.col("file_path").alias("raw"), "file_path", "pkey", "partition", "spec_id",
                         "sequence_number", "seq", "record_count", "file_size_in_bytes")
             .join(dv_keys, "key", "left").withColumn("dvs", F.coalesce(F.col("_dv"), F.lit(0)).cast("long"))
             .drop("_dv"))
        from ..iceberg.measures import (DELETED_ROWS, EQUALITY_DELETES_APPLIED, POSITION_DELETES_APPLIED, RELATIONS,
                                        run_spark)

        deletes = {name: frame.select(F.col("rid").alias("did"), F.col("pkey").alias("dpkey"), F.col("seq").alias("dseq"),
                                      F.col("scope_ref").alias("ref"), F.col("scope_lo").alias("lo"),
                                      F.col("scope_hi").alias("hi"), "partition_empty")
                   for name, frame in (("pos", pos), ("eq", eq))}
        rel = {"data": d.select("rid", "key", "raw", "pkey", "seq"), "dvs": dv.select("ref_key", "record_count"),
               **deletes}
        pos_per_data, pos_targets = self._applied(POSITION_DELETES_APPLIED, rel, c["position_delete_files"] > 0)
        eq_per_data, eq_targets = self._applied(EQUALITY_DELETES_APPLIED, rel, c["equality_delete_files"] > 0)
        amp = d
        for counted, col in ((pos_per_data, "position_delete_files"), (eq_per_data, "equality_delete_files")):
            if counted is None:
                amp = amp.withColumn(col, F.lit(0).cast("long"))
            else:
                amp = amp.join(counted.withColumnRenamed("n", col), "rid", "left") \
                    .withColumn(col, F.coalesce(F.col(col), F.lit(0)).cast("long"))
        amp = amp.withColumn("delete_files", F.col("dvs") + F.col("position_delete_files")
                             + F.col("equality_delete_files"))

        # ---- deleted rows: the one definition (measures.DELETED_ROWS), position-delete files read on the executors --
        if pos_targets is not None:
            pos_t = pos.join(pos_targets.withColumnRenamed("did", "rid").withColumnRenamed("n", "targets"), "rid",
                             "left").withColumn("targets", F.coalesce(F.col("targets"), F.lit(0)))
        else:
            pos_t = pos.withColumn("targets", F.lit(0).cast("long"))
        rel["pos_rows"] = self._position_delete_rows(pos) if c["position_delete_files"] else \
            self.spark.createDataFrame([], RELATIONS["pos_rows"])
        deleted = run_spark(self.spark, DELETED_ROWS, **rel).select("key", F.col("deleted").alias("deleted_rows"))
        amp = self._keep(amp.join(deleted, "key", "left")
                         .withColumn("deleted_rows", F.coalesce(F.col("deleted_rows"), F.lit(0)).cast("long")))
        c["deleted_rows"] = int(amp.agg(F.sum("deleted_rows")).first()[0] or 0)
        live_keys = d.select("key").distinct()

        # ---- sums over the data files ---------------------------------------------------------------
        has, many = F.col("delete_files") > 0, F.col("delete_files") > DELETE_FILES_PER_DATA_FILE
        small = F.col("file_size_in_bytes") < small_size
        zero = F.lit(0)
        s = amp.agg(
            F.sum(has.cast("long")).alias("with_deletes"), F.max("delete_files").alias("max_deletes"),
            F.max(F.when(has, F.col("file_size_in_bytes"))).alias("touched_max"),
            F.sum(F.when(has, F.col("record_count")).otherwise(zero)).alias("touched_rows"),
            F.sum(F.when(has, F.col("deleted_rows")).otherwise(zero)).alias("touched_deleted"),
            F.sum(many.cast("long")).alias("many"),
            F.sum(F.when(many, F.col("record_count")).otherwise(zero)).alias("many_rows"),
            F.avg("delete_files").alias("mean_deletes"),
            F.sum(small.cast("long")).alias("small"),
            F.sum(F.when(small, F.col("file_size_in_bytes")).otherwise(zero)).alias("small_bytes")).first()
        c["data_files_with_deletes"] = int(s["with_deletes"] or 0)
        c["max_delete_files_per_data_file"] = int(s["max_deletes"] or 0)
        c["small_files"] = int(s["small"] or 0)
        c["small_bytes"] = int(s["small_bytes"] or 0)

        hist = size_histogram([], int(target), small_size)
        bucket = sum(((F.col("file_size_in_bytes") >= int(e)).cast("int") for e in hist["max_bytes"]), F.lit(0))
        counts = {int(r[0]): (int(r[1]), int(r[2] or 0)) for r in data.groupBy(bucket.alias("b")).agg(
            F.count(F.lit(1)), F.sum("file_size_in_bytes")).collect()}
        hist["files"] = [counts.get(i, (0, 0))[0] for i in range(len(hist))]
        hist["bytes"] = [counts.get(i, (0, 0))[1] for i in range(len(hist))]
        hist["files"] = hist["files"].astype("int64")
        hist["bytes"] = hist["bytes"].astype("int64")

        parts = amp.groupBy("pkey").agg(
            F.first("partition", ignorenulls=True).alias("partition"), F.count(F.lit(1)).alias("files"),
            F.sum("record_count").alias("rows"), F.sum("deleted_rows").alias("deleted_rows"),
            F.sum("file_size_in_bytes").alias("bytes"), F.sum("delete_files").alias("delete_files"),
            F.sum(small.cast("long")).alias("small_files"),
            F.sum(F.when(small, F.col("file_size_in_bytes")).otherwise(zero)).alias("small_bytes"),
            F.sum(F.when(small, F.col("record_count")).otherwise(zero)).alias("small_rows")).collect()
        parts = sorted(parts, key=lambda r: r["pkey"])
        by_part = pd.DataFrame({
            "partition": pd.array([r["partition"] for r in parts], dtype="string"),
            **{col: pd.array([int(r[col] or 0) for r in parts], dtype="int64")
               for col in ("files", "rows", "deleted_rows", "bytes", "delete_files", "small_files", "small_bytes",
                           "small_rows")}})

        # ---- delete files no live data file needs --------------------------------------------------
        dead_dv = dv.join(live_keys.withColumnRenamed("key", "ref_key"), "ref_key", "left_anti")
        n_dead_dv = dead_dv.count()
        live_scope = live_keys.select(F.col("key").alias("scope_ref"), F.lit(True).alias("_live"))
        dead_pos = (pos_t.join(live_scope, "scope_ref", "left")
                    .where(((F.col("scope_ref") != "") & F.col("_live").isNull())
                           | ((F.col("scope_ref") == "") & (F.col("targets") == 0))))
        dp = dead_pos.agg(F.count(F.lit(1)), F.sum("file_size_in_bytes")).first()
        gone = (dv_files.join(dead_dv.groupBy("file_path").agg(F.count(F.lit(1)).alias("dead")), "file_path")
                .where(F.col("dead") == F.col("total")).agg(F.count(F.lit(1)), F.sum("size")).first())
        if eq_targets is not None:
            dead_eq = eq.join(eq_targets.withColumnRenamed("did", "rid"), "rid", "left_anti")
            de = dead_eq.agg(F.count(F.lit(1)), F.sum("file_size_in_bytes")).first()
            de = (int(de[0]), int(de[1] or 0))
        else:  # no equality-delete file at all
            de = (0, 0)
        dangling = {"dvs": int(n_dead_dv), "position_delete_files": int(dp[0]), "equality_delete_files": de[0],
                    "files_freed": int(gone[0]) + int(dp[0]) + de[0],
                    "bytes_freed": int(gone[1] or 0) + int(dp[1] or 0) + de[1]}

        # ---- clustering and column metrics ------------------------------------------------------------
        clustering = None
        if column is not None:
            got = sorted(data.select("pkey", "partition", "clus_lo", "clus_hi", "file_size_in_bytes", "record_count")
                         .groupBy("pkey").applyInPandas(_clustering_group, _CLUSTER_SCHEMA).collect(),
                         key=lambda r: r["pkey"])
            out = pd.DataFrame({
                "partition": [r["partition"] for r in got],
                "files": pd.array([r["files"] for r in got], dtype="int64"),
                "files_with_bounds": pd.array([r["files_with_bounds"] for r in got], dtype="int64"),
                "bytes": pd.array([r["bytes"] for r in got], dtype="int64"),
                "rows": pd.array([r["rows"] for r in got], dtype="int64"),
                "average_depth": pd.array([float("nan") if r["average_depth"] is None else r["average_depth"]
                                           for r in got], dtype="float64"),
                "max_depth": pd.array([r["max_depth"] for r in got], dtype="Int64")},
                index=pd.Index([r["pkey"] for r in got], name="pkey"))
            clustering = clustering_frame(out, column)
        partials = [pickle.loads(r[0]) for r in rows.where(kind == "partial").select("partial").collect()]

        top = (amp.orderBy(F.col("delete_files").desc(), F.col("deleted_rows").desc(), "file_path")
               .limit(AMPLIFICATION_ROWS)
               .select("file_path", "partition", "spec_id", "sequence_number", "record_count", "file_size_in_bytes",
                       "pkey", "dvs", "position_delete_files", "equality_delete_files", "delete_files",
                       "deleted_rows").toPandas())
        return FileAggregates(
            counts=c, size_histogram=hist, partitions=by_part,
            touched={"files": c["data_files_with_deletes"],
                     "max_size": None if s["touched_max"] is None else int(s["touched_max"]),
                     "rows": int(s["touched_rows"] or 0), "deleted_rows": int(s["touched_deleted"] or 0)},
            many={"files": int(s["many"] or 0), "rows": int(s["many_rows"] or 0)},
            mean_delete_files=float(s["mean_deletes"] or 0.0), dangling=dangling,
            columns=_columns_frame(partials), clustering=clustering, amplification=top)

    def _applied(self, measure, relations: dict, any_rows: bool):
        """The (data file, delete file) pairs of ``measure`` (:mod:`~puffin_explorer.iceberg.measures`, run by Spark
        SQL) counted per data file ``(rid, n)`` and per delete file ``(did, n)``; (None, None) without delete files."""
        from pyspark.sql import functions as F

        from ..iceberg.measures import run_spark

        if not any_rows:
            return None, None
        hits = run_spark(self.spark, measure, **relations)
        return (hits.groupBy("rid").agg(F.count(F.lit(1)).alias("n")),
                hits.groupBy("did").agg(F.count(F.lit(1)).alias("n")))

    def _position_delete_rows(self, pos):
        """``pos_rows`` of :mod:`~puffin_explorer.iceberg.measures`: rows each live Parquet position-delete file names
        per data file, read on the executors (each file once); one that cannot be read is a finding, as on the
        driver, and its rows are not counted."""
        from pyspark.sql import functions as F

        from ..errors import NotFoundError, PuffinError
        from ..iceberg.deletes import _unreadable

        counted = self._keep(pos.select("file_path").distinct()
                             .mapInArrow(_position_delete_counts(self.source.mapper, self.options),
                                         _COUNTS_SCHEMA))
        for r in counted.where(F.col("error").isNotNull()).select("file_path", "error", "missing").collect():
            exc = NotFoundError(r["error"]) if r["missing"] else PuffinError(r["error"])
            _unreadable(self.source, self.source.metadata.current_snapshot_id, r["file_path"], exc)
        return (counted.where(F.col("error").isNull()).groupBy("key")
                .agg(F.sum("rows").alias("rows"), F.count(F.lit(1)).alias("files")))

    # ---- every snapshot's files ----------------------------------------------------------------------
    def snapshot_files(self, readable: list, current: Optional[int]) -> dict[int, str]:
        """Decodes every distinct manifest of the ``readable`` snapshots once on the executors; returns, per
        snapshot with an unreadable or damaged manifest, the first reason (its files then count as none)."""
        import pyarrow as pa
        from pyspark.sql import functions as F

        from ..iceberg.health import _MANIFEST_BROKEN
        from ..iceberg.index import EntryCache
        from ..iceberg.paths import normalize
        from .index import MANIFEST_PLAN_SCHEMA, _record_json, decode_manifests, index_schema
        from .planner import executor_location, to_spark

        ids: dict[tuple, int] = {}
        records: list[dict] = []
        listed: dict[int, list[int]] = {}
        for sid, mans in readable:
            order = []
            for m in self.source.manifest_records(sid):
                key = EntryCache.manifest_key(m)
                if key not in ids:
                    ids[key] = len(records)
                    records.append(m)
                order.append(ids[key])
            listed[sid] = order
        if records:
            locations = [self.source.locate(m.get("manifest_path") or "") for m in records]
            plan = pa.table({"manifest": pa.array(range(len(records)), pa.int32()),
                             "location": pa.array(locations, pa.string()),
                             "read_from": pa.array([executor_location(x) for x in locations], pa.string()),
                             "record": pa.array([_record_json(m) for m in records], pa.string())})
            frame = to_spark(self.spark, plan, MANIFEST_PLAN_SCHEMA)
            if len(records) > 1:
                frame = frame.repartition(len(records))
            decoded = self._keep(frame.mapInArrow(
                decode_manifests(self.options, self.source.metadata.partition_specs), index_schema(False)))
            bad = decoded.where(F.col("finding_code").isin(list(_MANIFEST_BROKEN))
                                & (F.coalesce(F.col("finding_message"), F.lit("")) != "")) \
                .select("manifest", "finding_order", "finding_message").collect()
            self.entries = self._keep(
                decoded.where(F.col("finding_code").isNull() & F.coalesce(F.col("status") != 2, F.lit(True)))
                .select("manifest", "file_path", "file_size_in_bytes")
                .mapInArrow(_located_entries(self.source.mapper), "manifest int, location string, size bigint"))
        else:
            bad = []
        first_bad: dict[int, list] = {}
        for mid, order, message in bad:
            first_bad.setdefault(int(mid), []).append((int(order), message))
        broken_by: dict[int, str] = {}
        member = []
        for sid, mans in readable:
            hits = [(pos, *sorted(first_bad[mid])[0]) for pos, mid in enumerate(listed[sid]) if mid in first_bad]
            if hits:
                broken_by[sid] = sorted(hits)[0][2]
                continue
            member += [(sid, mid) for mid in dict.fromkeys(listed[sid])]
            if len(mans):
                self.manifest_files += [(sid, normalize(loc), int(n))
                                        for loc, n in zip(mans["location"], mans["manifest_length"])]
        if member:
            self.membership = to_spark(self.spark, pa.table({"sid": pa.array([s for s, _ in member], pa.int64()),
                                                             "manifest": pa.array([m for _, m in member], pa.int32())}),
                                       "sid bigint, manifest int")
        return broken_by

    def add_file(self, sid: int, location: str, size: int) -> None:
        self.extra.append((sid, location, size))

    def _sets(self):
        """(sid, location, size): every file each snapshot references, once per snapshot."""
        import pyarrow as pa
        from pyspark.sql import functions as F

        from .planner import to_spark

        small = self.manifest_files + self.extra
        frame = to_spark(self.spark, pa.table({"sid": pa.array([r[0] for r in small], pa.int64()),
                                               "location": pa.array([r[1] for r in small], pa.string()),
                                               "size": pa.array([r[2] for r in small], pa.int64())}), _SET_SCHEMA)
        if self.membership is not None and self.entries is not None:
            frame = frame.unionByName(self.membership.join(self.entries, "manifest").select("sid", "location", "size"))
        return frame.groupBy("sid", "location").agg(F.max("size").alias("size"))

    # ---- the listing of the table location --------------------------------------------------------------
    def list(self, root: str):
        import pyarrow as pa

        from ..health import listed_row
        from ..iceberg.paths import join
        from ..io.errors import storage_error
        from .planner import to_spark

        fs, path = self.source.io.fs(root)
        try:
            top = fs.ls(path, detail=True)
        except FileNotFoundError:
            top = []
        except Exception as exc:  # noqa: BLE001 - turned into this project's storage error
            raise storage_error(exc, root, "list") from exc
        base = path.rstrip("/")
        files, folders = [], []
        for info in top:
            name = str(info.get("name", ""))
            if name.rstrip("/") == base:
                continue
            if info.get("type", "file") == "directory":
                folders.append(join(root, name[len(base):].lstrip("/") if name.startswith(base) else name))
            elif info.get("type", "file") == "file":
                files.append(listed_row(name, info, path, root))
        here = to_spark(self.spark, pa.table({
            "location": pa.array([r["location"] for r in files], pa.string()),
            "size": pa.array([r["size"] for r in files], pa.int64()),
            "mtime_ms": pa.array([r["mtime_ms"] for r in files], pa.int64()),
            "hidden": pa.array([r["hidden"] for r in files], pa.bool_())}), LISTING_SCHEMA)
        if folders:
            plan = to_spark(self.spark, pa.table({"folder": pa.array(folders, pa.string())}), "folder string")
            if len(folders) > 1:
                plan = plan.repartition(len(folders))
            here = here.unionByName(plan.mapInArrow(_list_folders(self.options, root), LISTING_SCHEMA))
        self.listing = self._keep(here)
        return self.listing

    def listed_sizes(self, locations) -> dict[str, Any]:
        from pyspark.sql import functions as F

        wanted = sorted(set(locations))
        if not wanted:
            return {}
        return {r[0]: r[1] for r in self.listing.where(F.col("location").isin(wanted)).select("location", "size")
                .collect()}

    def _is_meta(self):
        from pyspark.sql import functions as F

        return F.col("location").endswith(".metadata.json") | F.col("location").endswith(".metadata.json.gz")

    def metadata_files(self) -> int:
        return int(self.listing.where(self._is_meta()).count())

    def newer_metadata(self, current_loc: str, tracked: set) -> list[str]:
        from pyspark.sql import functions as F

        own = [r[0] for r in self.listing.where(F.col("location") == current_loc).select("mtime_ms").collect()]
        if not own or any(v is None for v in own):
            return []
        return [r[0] for r in self.listing.where(self._is_meta() & ~F.col("location").isin(sorted(tracked))
                                                 & (F.col("mtime_ms") > int(own[0])))
                .orderBy("location").select("location").collect()]

    # ---- retention and orphans -----------------------------------------------------------------------------
    def expired_only(self, keep: set, expired: list):
        from pyspark.sql import functions as F

        sets = self._sets()
        kept = sets.where(F.col("sid").isin(sorted(keep))).select("location").distinct()
        freed = self._keep(sets.where(F.col("sid").isin(sorted(expired))).join(kept, "location", "left_anti")
                           .groupBy("location").agg(F.max("size").alias("size")))
        n, nbytes = freed.agg(F.count(F.lit(1)), F.sum("size")).first()
        frame = freed.orderBy("location").limit(FRAME_ROWS).toPandas()
        frame["size"] = frame["size"].astype("int64")
        return frame, int(n), int(nbytes or 0)

    def orphans(self, referenced: set, cutoff_ms: int):
        import pyarrow as pa
        from pyspark.sql import functions as F

        from .planner import to_spark

        small = to_spark(self.spark, pa.table({"location": pa.array(sorted(referenced), pa.string())}),
                         "location string")
        refs = self._sets().select("location").unionByName(small).distinct()
        unref = self.listing.join(refs, "location", "left_anti").where(~F.coalesce(F.col("hidden"), F.lit(False)))
        young = F.col("mtime_ms").isNotNull() & (F.col("mtime_ms") >= int(cutoff_ms))
        unref = self._keep(unref.withColumn("_young", young))
        n, nbytes, in_flight = unref.agg(
            F.sum((~F.col("_young")).cast("long")),
            F.sum(F.when(~F.col("_young"), F.coalesce(F.col("size"), F.lit(0))).otherwise(F.lit(0))),
            F.sum(F.col("_young").cast("long"))).first()
        frame = (unref.where(~F.col("_young")).drop("_young").orderBy("location").limit(FRAME_ROWS).toPandas())
        return frame, int(n or 0), int(nbytes or 0), int(in_flight or 0)


__all__ = ["health", "SparkReads", "AMPLIFICATION_ROWS", "FRAME_ROWS"]
