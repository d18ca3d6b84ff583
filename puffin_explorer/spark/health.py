"""The table doctor as Spark jobs: :func:`health` returns the :class:`~puffin_explorer.health.TableHealth`
``Table.health()`` returns, with the work that grows with the table done by Spark.

The flow, thresholds and finding builders are the driver doctor's (:func:`~puffin_explorer.iceberg.health.doctor`);
only its reads differ (:class:`SparkReads`):

- the current snapshot's live files come from the entry index built on the executors
  (:func:`~.index.build_index_on_executors`, manifests spread over a few tasks per core) as the relations of
  :mod:`~puffin_explorer.iceberg.measures`, whose SQL (which delete files apply to which data file, deleted rows,
  the sums per partition, per size class and per table, dangling deletes) Spark SQL runs as the driver's DuckDB
  does; clustering depth per partition and column metrics are the driver's functions run per partition
  (``applyInPandas``) and per task (``mapInArrow``, one partial each, merged here); the driver collects only the
  answers: totals, one row per size class, per partition and per column;
- every snapshot's file set: each distinct manifest of any snapshot decoded once on the executors, joined to
  the (small) snapshot → manifest lists; the bytes only expired snapshots hold are a Spark anti-join;
- the listing of the table location: the top-level folders listed here, each folder listed in a task through
  this package's I/O layer, anti-joined against the referenced files in Spark.

A table whose manifests list at most ``CARD_HEALTH_UP_TO`` entries is read on the driver instead (``index_on="auto"``,
:func:`driver_holds`): at that size the Spark jobs cost more than the reads.

What the driver holds per file or partition is bounded: ``frames["amplification"]`` keeps the
:data:`AMPLIFICATION_ROWS` data files merging the most delete files (``partition`` as text),
``frames["partitions"]`` the first :data:`~puffin_explorer.iceberg.health.PARTITION_ROWS` partitions by key, ``frames["orphans"]`` and
``frames["expired_only"]`` the first :data:`FRAME_ROWS` by location, and ``frames["listing"]`` is the listing
as a Spark DataFrame.  Metrics, findings, actions and effects are exactly the driver doctor's.
"""

from __future__ import annotations

import pickle
from typing import Any, Mapping, Optional

from ..errors import UnsupportedTableError
from ..iceberg.column_stats import METRIC_COLUMNS
from ..iceberg.health import AMPLIFICATION_ROWS, FRAME_ROWS
from .errors import spark_errors
from .executors import steady_imports


#: One row per live entry of the current snapshot, what the doctor's sums need (Spark DDL); ``key`` is the file key
#: a row joins on (a DV's: the data file it references), null where that is the row's ``file_path`` as written.
#: A DV's row holds only what the measures read of a DV (``rid``, ``kind``, ``file_path``, ``key``, ``record_count``,
#: ``file_size_in_bytes``), the rest null; ``scope_lo`` / ``scope_hi`` are null where ``''`` (no bound).  Nothing
#: the measures derive is held: ``seq`` is ``sequence_number`` or 0, ``partition_empty`` is ``partition`` = ``{}``
#: (:func:`files_by_key`, :func:`delete_relation`).  Every column is a copy per row through the JVM and on disk.
HEALTH_ROWS_SCHEMA = (
    "rid bigint, kind string, file_path string, key string, pkey string, partition string, "
    "spec_id int, sequence_number bigint, record_count bigint, file_size_in_bytes bigint, scope_ref string, "
    "scope_lo string, scope_hi string, clus_lo binary, clus_hi binary, partial binary, finding_code string, "
    "finding_message string, finding_order int")
LISTING_SCHEMA = "location string, size bigint, mtime_ms bigint, hidden boolean"
_CLUSTER_SCHEMA = ("pkey string, partition string, files bigint, files_with_bounds bigint, average_depth double, "
                   "max_depth bigint, bytes bigint, rows bigint")
_SET_SCHEMA = "sid bigint, location string, size bigint"
#: Rows per partition of the frames kept partitioned by file key (:meth:`SparkReads._keep_by_key`).
ROWS_PER_KEY_PARTITION = 100_000


def health(spark, table: Any, *, now: Any = None, older_than: Any = None, catalog: Optional[str] = None,
           name: Optional[str] = None, list_files: bool = True, cluster_by: Optional[str] = None,
           storage_options: Optional[dict[str, Any]] = None, relocate: Optional[Mapping[str, str]] = None,
           index_on: str = "auto"):
    """The table doctor of ``table`` (a Table, a metadata location or folder, or a catalog table name) with the
    reads that grow with the table run on Spark: the same :class:`~puffin_explorer.health.TableHealth` as
    ``Table.health(now=..., ...)`` (parameters as there), so ``to_dict()`` and the view are the same;
    ``frames["listing"]`` is a Spark DataFrame.

    ``index_on="auto"`` reads a table whose manifests list at most ``CARD_HEALTH_UP_TO`` entries (every snapshot's,
    counted from the manifest lists) on the driver, as ``Table.health()`` does: at that size Spark's jobs cost more
    than the reads (seconds against a fraction of one); larger tables, and manifest lists without file counts, on
    the executors.  ``"executors"`` or ``"driver"`` chooses.
    A catalog name ``cat.ns.t`` is opened at its current metadata file; ``catalog`` and ``name`` then default
    to ``cat`` and ``ns.t``.  See the module docstring for what the driver keeps per file (bounded frames)."""
    from ..iceberg.health import doctor, table_health
    from ..iceberg.paths import TableIO
    from ..iceberg.source import TableSource
    from ..io.scope import with_scope
    from .planner import plan_table
    from .tables import current_metadata_location

    with spark_errors():
        plan = plan_table(table, storage_options, relocate, index_on=index_on)  # index_on checked there
        if plan is None:
            parts = str(table).split(".")
            opened = TableSource.open(current_metadata_location(spark, table), TableIO(storage_options))
            if len(parts) >= 3:
                catalog = catalog or parts[0]
                name = name or ".".join(parts[1:])
            options = with_scope(storage_options or opened.io.storage_options, opened.io.scope)
        elif not plan.iceberg:
            raise UnsupportedTableError(f"{plan.table.name} is a Delta table: its doctor is DeltaTable.health() (a Delta log "
                             "has no manifests to spread over tasks)")
        else:
            opened, options = plan.table, plan.storage_options
        if index_on == "driver" or (index_on == "auto" and driver_holds(opened)):
            found = table_health(opened, now=now, older_than=older_than, catalog=catalog or "spark_catalog",
                                 name=name, list_files=list_files, cluster_by=cluster_by)
            if "listing" in found.frames:
                found.frames["listing"] = _spark_listing(spark, found.frames["listing"])
            return found
        reads = SparkReads(spark, opened, options)
        try:
            return doctor(opened, reads, now=now, older_than=older_than, catalog=catalog or "spark_catalog",
                          name=name, list_files=list_files, cluster_by=cluster_by)
        finally:
            reads.release()


def driver_holds(source: Any) -> bool:
    """Whether the doctor of ``source`` is read on the driver under ``index_on="auto"``: the distinct manifests of
    its snapshots list at most ``CARD_HEALTH_UP_TO`` entries (added, existing and deleted: what the doctor
    decodes), each manifest list read and every manifest counting its files."""
    from ..errors import PuffinError
    from ..health import CARD_HEALTH_UP_TO
    from ..iceberg.index import EntryCache
    from ..iceberg.manifests import manifest_counts

    seen: set = set()
    entries = 0
    for snap in source.metadata.snapshots:
        try:
            listed = source.manifest_records(snap.snapshot_id)
        except PuffinError:  # a list the doctor cannot read: it says so, with either reads
            continue
        for m in listed:
            key = EntryCache.manifest_key(m)
            if key in seen:
                continue
            seen.add(key)
            counted = manifest_counts(m)
            if counted is None or counted < 0:
                return False
            entries += counted
            if entries > CARD_HEALTH_UP_TO:
                return False
    return True


def _spark_listing(spark, listing):
    """The driver's listing (pandas) as the Spark DataFrame the doctor on Spark gives."""
    import pyarrow as pa

    from .planner import to_spark

    return to_spark(spark, pa.Table.from_pandas(listing, preserve_index=False), LISTING_SCHEMA)


# ---- executor functions ---------------------------------------------------------------------------
def _health_rows(fields: dict, column: Optional[str], decode):
    """mapInArrow function: manifest plan rows → :data:`HEALTH_ROWS_SCHEMA` rows of their live entries, each
    manifest decoded by ``decode`` (:func:`~.index.decode_manifests` with metrics) in the same task, so that the
    entries and their metrics never cross into the JVM and back.  Rows are decoded as ``files(decode=True)``
    decodes them (bounds by column name, the path scope of position deletes); only the bounds these rows need are
    decoded (``file_path``'s and the clustering column's).  A manifest that could not be read whole gives rows of
    kind ``finding`` (``rid`` its plan position << 32), which :meth:`SparkReads.snapshot_files` reads; each task
    ends with one row of kind ``partial``, its column metrics."""
    wanted = {fid for fid, (name, _) in fields.items() if name in ("file_path", column)}

    def run(batches):
        steady_imports()
        import pyarrow as pa

        from ..iceberg.bounds import decode_bounds
        from .executors import _arrow_schema

        schema = _arrow_schema(HEALTH_ROWS_SCHEMA)

        def needed(raw):
            return decode_bounds([kv for kv in raw if kv["key"] in wanted] if raw else raw, fields)

        import numpy as np
        import pyarrow.compute as pc

        from ..iceberg.column_stats import ColumnPartial

        partial = ColumnPartial()
        for b in _live(decode(batches), schema):
            if "rid" in b.schema.names:  # a manifest's findings, as health rows already
                yield b
                continue
            rids = (b.column("manifest").to_numpy(zero_copy_only=False).astype(np.int64) << 32) + \
                b.column("entry").to_numpy(zero_copy_only=False).astype(np.int64)
            is_data = pc.fill_null(pc.equal(b.column("kind"), "data"), False)
            data_rows = b.filter(is_data)
            if data_rows.num_rows:  # the column metrics of the batch's data files, in Arrow
                partial.add_arrow(rids[is_data.to_numpy(zero_copy_only=False)],
                                  pa.Table.from_batches([data_rows]).select(list(METRIC_COLUMNS)), fields)
            yield from _health_batch(b, rids, schema, needed, wanted, column)
        last = {f.name: pa.nulls(1, f.type) for f in schema}  # the task's column partial: one row of its own
        last["kind"] = pa.array(["partial"], pa.string())
        last["partial"] = pa.array([pickle.dumps(partial)], pa.binary())
        yield pa.RecordBatch.from_arrays([last[f.name] for f in schema], schema=schema)

    return run


def _live(batches, schema):
    """Index batches → their entries that are not deleted (status 2), and the findings that say a manifest could
    not be read whole as ``schema`` (:data:`HEALTH_ROWS_SCHEMA`) rows of kind ``finding``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..iceberg.health import _MANIFEST_BROKEN

    for b in batches:
        code = b.column("finding_code")
        if code.null_count < b.num_rows:
            broken = b.filter(pc.and_(pc.fill_null(pc.is_in(code, value_set=pa.array(_MANIFEST_BROKEN)), False),
                                      pc.fill_null(pc.not_equal(b.column("finding_message"), ""), False)))
            if broken.num_rows:
                out = {f.name: pa.nulls(broken.num_rows, f.type) for f in schema}
                out["rid"] = pc.shift_left(broken.column("manifest").cast(pa.int64()), 32)
                out["kind"] = pa.array(["finding"] * broken.num_rows, pa.string())
                for c in ("finding_code", "finding_message", "finding_order"):
                    out[c] = broken.column(c).cast(schema.field(c).type)
                yield pa.RecordBatch.from_arrays([out[f.name] for f in schema], schema=schema)
        b = b.filter(pc.and_(pc.is_null(code), pc.fill_null(pc.not_equal(b.column("status"), 2), True)))
        if b.num_rows:
            yield b


def _health_batch(b, rids, schema, needed, wanted: set, column: Optional[str]):
    """One batch of index entries (``rids`` their row ids) as :data:`HEALTH_ROWS_SCHEMA` batches, in Arrow: the
    DVs' rows, then the other entries'; only the rows whose bounds hold a ``wanted`` column (``file_path`` of a
    delete file, the clustering column) are decoded one by one, by ``needed``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    is_dv = pc.fill_null(pc.equal(b.column("kind").cast(pa.string()), "dv"), False).to_numpy(zero_copy_only=False)
    rids = np.asarray(rids, dtype=np.int64)
    for dvs in (True, False):
        part = is_dv if dvs else ~is_dv
        if part.all():
            yield _kind_rows(b, rids, schema, needed, wanted, column, dvs)
        elif part.any():
            yield _kind_rows(b.filter(pa.array(part)), rids[part], schema, needed, wanted, column, dvs)


def _kind_rows(b, rids, schema, needed, wanted: set, column: Optional[str], dvs: bool):
    """:func:`_health_batch` for entries that are all DVs (``dvs``) or none: a column no row of the batch needs
    is a null column (no value copied into the JVM), and a DV's row only what the measures read of a DV."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..iceberg.columns import normalized
    from ..iceberg.measures import path_scope
    from .index import split_keyed

    n = b.num_rows
    string = pa.string()
    col = {name: b.column(name) for name in b.schema.names}
    file_path = col["file_path"].cast(string)
    out = {"rid": pa.array(rids, pa.int64()), "kind": col["kind"].cast(string), "file_path": file_path,
           "record_count": col["record_count"], "file_size_in_bytes": col["file_size_in_bytes"]}
    if dvs:  # ``key`` is the data file the DV references (the measures' ``ref_key``)
        out["key"] = normalized(col["referenced_data_file"].cast(string))
        return _batch_of(out, schema, n)
    # ``key`` is the file key the measures join a row on: its own file, null where that is ``file_path`` as written
    # (most are: each row would carry its path twice, a third of the rows Spark keeps; files_by_key fills it in)
    own = normalized(file_path)  # the same array where no path changes
    own = pa.nulls(n, string) if own is file_path else \
        pc.if_else(pc.fill_null(pc.equal(own, file_path), False), pa.scalar(None, string), own)
    (key, part), spec = split_keyed(col["partition"].cast(string)), col["spec_id"].cast(pa.int32())
    ref = col["referenced_data_file"].cast(string)
    has_ref = pc.fill_null(pc.not_equal(ref, ""), False)
    out.update(key=own, partition=part, spec_id=spec, sequence_number=col["sequence_number"],
               pkey=pc.binary_join_element_wise(pc.fill_null(spec.cast(string), ""), pc.fill_null(key, "{}"), "|"))
    if pc.any(has_ref).as_py():
        out["scope_ref"] = pc.if_else(has_ref, normalized(ref), pa.scalar(None, string))
    # rows whose bounds name a wanted column: their path scope and clustering bounds, as the driver decodes them
    hits = np.zeros(n, dtype=bool)
    keys = pa.array(sorted(wanted), pa.int32())
    for name in ("lower_bounds", "upper_bounds"):
        bounds = col[name]
        if bounds.null_count == n or not len(keys):
            continue
        flat = pc.list_flatten(bounds)
        if len(flat):
            found = pc.is_in(flat.field("key").cast(pa.int32()), value_set=keys).to_numpy(zero_copy_only=False)
            rows = pc.list_parent_indices(bounds).to_numpy(zero_copy_only=False)
            hits[rows[found]] = True
    picked = np.flatnonzero(hits)
    if len(picked):
        idx = pa.array(picked, pa.int64())
        names = ("kind", "referenced_data_file", "lower_bounds", "upper_bounds")
        columns = {c: out[c].to_pylist() if c in out else [None] * n
                   for c in ("scope_ref", "scope_lo", "scope_hi", "clus_lo", "clus_hi")}
        for i, r in zip(picked, b.select(list(names)).take(idx).to_pylist()):
            lows, highs = needed(r["lower_bounds"]), needed(r["upper_bounds"])
            scope = path_scope(r["referenced_data_file"], lows.get("file_path"), highs.get("file_path"))
            columns["scope_ref"][i] = scope[0]
            columns["scope_lo"][i], columns["scope_hi"][i] = (v or None for v in scope[1:])  # '' is held as null
            if r["kind"] == "data" and column is not None:
                for c, bounds in (("clus_lo", lows), ("clus_hi", highs)):
                    v = bounds.get(column)
                    columns[c][i] = None if v is None else pickle.dumps(v)
        for c, values in columns.items():
            out[c] = pa.array(values, pa.binary() if c.startswith("clus") else string)
    return _batch_of(out, schema, n)


def _batch_of(columns: dict, schema, n: int):
    """``columns`` as a record batch of ``schema`` and ``n`` rows; a column not given, or with no value, is a null
    column, so that the values a computed column kept behind its nulls (``if_else`` keeps its inputs' bytes) never
    reach the JVM."""
    import pyarrow as pa

    arrays = []
    for f in schema:
        a = columns.get(f.name)
        if a is None or a.null_count == n:
            a = pa.nulls(n, f.type)
        arrays.append(a.cast(f.type) if a.type != f.type else a)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def files_by_key(rows):
    """The data files and the DVs of health rows, the columns the measures read of each (a DV's ``key`` is the
    data file it references, named ``ref_key`` here): what :meth:`SparkReads._keep_by_key` keeps.  A data file's
    path is held once: ``raw`` (the path as written) is null where it is ``key`` (:func:`data_relation` reads it)."""
    from pyspark.sql import functions as F

    kind = F.col("kind")
    data = rows.where(kind == "data").select("rid", F.coalesce("key", "file_path").alias("key"),
                                             F.when(F.col("key").isNotNull(), F.col("file_path")).alias("raw"),
                                             "pkey", "partition", "record_count", "file_size_in_bytes", "spec_id",
                                             "sequence_number")
    dv = rows.where(kind == "dv").select(F.col("key").alias("ref_key"), "record_count", "file_path",
                                         "file_size_in_bytes")
    return data, dv


def _seq(alias: str):
    """A row's data sequence number as the measures compare it (``seq``): its ``sequence_number``, 0 where null."""
    from pyspark.sql import functions as F

    return F.coalesce("sequence_number", F.lit(0).cast("bigint")).alias(alias)


def data_relation(data):
    """The kept data files of :func:`files_by_key` as the measures' ``data`` relation."""
    from pyspark.sql import functions as F

    return data.select("rid", "key", F.coalesce("raw", "key").alias("raw"), "pkey", _seq("seq"), "record_count",
                       "file_size_in_bytes")


def delete_relation(frame):
    """Health rows of delete files as the measures' ``pos`` / ``eq`` relation."""
    from pyspark.sql import functions as F

    return frame.select(F.col("rid").alias("did"), F.col("pkey").alias("dpkey"), _seq("dseq"),
                        F.col("scope_ref").alias("ref"), F.coalesce("scope_lo", F.lit("")).alias("lo"),
                        F.coalesce("scope_hi", F.lit("")).alias("hi"), "file_size_in_bytes",
                        F.col("pkey").endswith("|{}").alias("partition_empty"))  # no record, or an empty one


def _no_rows(spark, ddl: str):
    """An empty DataFrame of the columns ``ddl`` names, which Spark's optimizer knows to be empty when it plans (a
    DataFrame made from an empty list is a scan it must run to find no rows)."""
    columns = ", ".join(f"CAST(NULL AS {kind}) AS {name}" for name, kind in
                        (field.strip().split(None, 1) for field in ddl.split(",")))
    return spark.sql(f"SELECT {columns} WHERE 1 = 0")


def _clustering_group(pdf):
    """applyInPandas function: one partition's data files (bounds pickled) → its clustering row."""
    import pandas as pd

    from ..iceberg.columns import UNPARTITIONED
    from ..iceberg.health import clustering_by_partition

    steady_imports()
    d = pd.DataFrame({
        "pkey": pdf["pkey"].to_numpy(), "partition": pdf["partition"].fillna(UNPARTITIONED).to_numpy(),
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
        steady_imports()
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
        steady_imports()
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
        steady_imports()
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
        self.current = None  # the current snapshot's health rows (current_files), row id = plan position << 32 | entry
        self.entries_kept = False
        self.decoded_again = 0  # manifests snapshot_files decoded itself: those the current snapshot does not list
        self.membership = None  # (sid, manifest id) of the readable, complete snapshots
        self.manifest_files: list[tuple[int, str, int]] = []
        self.extra: list[tuple[int, str, int]] = []
        self.listing = None
        self.unread_delete_files = 0  # position-delete files of the current snapshot that could not be read

    def _keep(self, frame):
        """``frame`` persisted and computed once: Spark then plans every join of it with its real size.  The
        frames kept here come out of ``mapInArrow`` over a small plan (a row per manifest or folder), which Spark
        estimates at the plan's size (about 1 KB for a table of any size), so it would broadcast them; at
        10,000,000 files that broadcast exhausted a 2 GB heap.  Kept on disk (:func:`~.arrow.kept`), not in memory: the
        joins and sums over them need the memory."""
        from .arrow import kept

        frame = kept(frame)
        frame.count()
        self.persisted.append(frame)
        return frame

    def _keep_by_key(self, frame, column: str, rows: int):
        """``frame`` hash-partitioned by ``column`` (a file key) into as many partitions as ``rows`` call for (at
        most the session's shuffle partitions), then kept.  Every frame kept this way with the same ``rows``
        has the same partitioning, which Spark remembers for the kept frame: the measures' joins and sums on
        the file key then read both sides where they are, with no shuffle (at 10,000,000 files the measures
        had shuffled the same rows by key a dozen times)."""
        parts = max(1, min(int(self.spark.conf.get("spark.sql.shuffle.partitions", "200")),
                           -(-rows // ROWS_PER_KEY_PARTITION)))
        return self._keep(frame.repartition(parts, column))

    def release(self) -> None:
        for frame in self.persisted:
            frame.unpersist()
        self.persisted.clear()

    # ---- the current snapshot's files -------------------------------------------------------------
    def current_files(self, target: int, small_size: int, column: Optional[str]):
        import pandas as pd
        from pyspark.sql import functions as F

        from ..iceberg.column_stats import columns_frame
        from ..iceberg.deletes import manifest_coverage
        from ..health import sum_relations
        from ..iceberg.health import (AMPLIFICATION_COLUMNS, PARTITION_ROWS, SUM_MEASURES, clustering_frame,
                                      file_aggregates)
        from ..iceberg.measures import DATA_FILE_DELETES, MEASURES, RELATIONS
        from .measures import SparkMeasures
        from .index import MANIFEST_PLAN_SCHEMA, decode_manifests, manifest_plan, manifest_tasks
        from .planner import to_spark

        # one Python function per task from manifest to health rows: the entries with their metrics never
        # cross into the JVM and back (at 10,000,000 files the stage took about half the time without that trip)
        plan, listed = manifest_plan(self.source)
        decode = decode_manifests(self.options, self.source.metadata.partition_specs, True, "keyed")
        tasks = manifest_tasks(self.spark, to_spark(self.spark, plan, MANIFEST_PLAN_SCHEMA), plan.num_rows)
        rows = self._keep(tasks.mapInArrow(_health_rows(self.source.fields_by_id(), column, decode),
                                           HEALTH_ROWS_SCHEMA))
        self.current = rows  # snapshot_files takes these manifests' live files from here, not decoding them again
        kind = F.col("kind")
        counts = {r["kind"]: r["count"] for r in rows.groupBy("kind").count().collect()}
        total = sum(counts.values())
        # the data files and DVs, the relations that grow with the table, kept apart (each measure reads only
        # their columns) and partitioned alike by the file key
        data, dv = files_by_key(rows)
        data, dv = self._keep_by_key(data, "key", total), self._keep_by_key(dv, "ref_key", total)
        pos, eq = rows.where(kind == "position-deletes"), rows.where(kind == "equality-deletes")

        # ---- the relations of iceberg/measures.py, and its measures run by Spark SQL ----------------------
        relations = {"data": data_relation(data),
                     "dvs": dv.select("ref_key", "record_count", "file_path", "file_size_in_bytes"),
                     "pos": delete_relation(pos), "eq": delete_relation(eq)}
        if counts.get("position-deletes"):
            relations["pos_rows"] = self._position_delete_rows(pos)
        # a relation with no rows (a table with DVs and no position- or equality-delete files) is given as an empty
        # local relation: Spark then drops the joins over it when it plans, instead of running them to find nothing
        for name, of_kind in (("data", "data"), ("dvs", "dv"), ("pos", "position-deletes"),
                              ("eq", "equality-deletes"), ("pos_rows", "position-deletes")):
            if not counts.get(of_kind):
                relations[name] = _no_rows(self.spark, RELATIONS[name])
        for name, table in sum_relations(target, small_size).items():
            relations[name] = to_spark(self.spark, table, RELATIONS[name])
        run = SparkMeasures(self.spark, relations, persist=True)
        try:
            # one row per table or size class; per partition the first PARTITION_ROWS by key (every partition
            # is summed in partition_summary): nothing here grows with the table
            answers = {name: [r.asDict() for r in run.frame(MEASURES[name]).collect()] for name in SUM_MEASURES
                       if name != "partition_totals"}
            answers["partition_totals"] = [r.asDict() for r in run.frame(MEASURES["partition_totals"])
                                           .orderBy("pkey").limit(PARTITION_ROWS).collect()]
            # the text of the partitions shown (the smallest of each one's files', as on the driver), looked up
            # for them alone rather than summed for every partition
            summary = answers["partition_summary"][0]
            shown = {r["pkey"] for r in answers["partition_totals"]} | {summary["largest_pkey"]}
            texts = self._partition_texts(data, sorted(k for k in shown if k is not None))
            for r in answers["partition_totals"]:
                r["partition"] = texts.get(r["pkey"])
            summary["largest_partition"] = texts.get(summary["largest_pkey"])
            per_file = run.frame(DATA_FILE_DELETES).select("rid", *AMPLIFICATION_COLUMNS[7:])
            top = (data.select("rid", F.coalesce("raw", "key").alias("file_path"), *AMPLIFICATION_COLUMNS[1:7])
                   .join(per_file, "rid")
                   .orderBy(F.col("delete_files").desc(), F.col("deleted_rows").desc(), "file_path")
                   .limit(AMPLIFICATION_ROWS).select(*AMPLIFICATION_COLUMNS).toPandas())
        finally:
            run.close()

        # ---- clustering and column metrics: the driver's functions, per partition and per task -----------
        clustering = None
        if column is not None:
            got = sorted(rows.where(kind == "data")
                         .select("pkey", "partition", "clus_lo", "clus_hi", "file_size_in_bytes", "record_count")
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
        agg = file_aggregates(answers, target, small_size, columns_frame(partials), clustering, top)
        # the manifests not read whole and the position-delete files not read: the counts they feed are unknown
        broken = rows.where(kind == "finding").select(F.shiftright(F.col("rid"), 32), "finding_code").distinct() \
            .collect()
        agg.coverage = manifest_coverage(listed, sorted({int(r[0]) for r in broken}), self.unread_delete_files,
                                         int(counts.get("position-deletes") or 0), [r[1] for r in broken])
        return agg

    def _partition_texts(self, data, pkeys: list) -> dict:
        """pkey → the partition text of the data files with that key (their smallest, as the driver's), for
        ``pkeys`` alone: a broadcast of those keys against the data files, then one short sum."""
        import pyarrow as pa
        from pyspark.sql import functions as F

        from .planner import to_spark

        if not pkeys:
            return {}
        wanted = to_spark(self.spark, pa.table({"pkey": pa.array(pkeys, pa.string())}), "pkey string")
        return {r[0]: r[1] for r in data.join(F.broadcast(wanted), "pkey").groupBy("pkey")
                .agg(F.min("partition")).collect()}

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
        failed = counted.where(F.col("error").isNotNull()).select("file_path", "error", "missing").collect()
        for r in failed:
            exc = NotFoundError(r["error"]) if r["missing"] else PuffinError(r["error"])
            _unreadable(self.source, self.source.metadata.current_snapshot_id, r["file_path"], exc)
        self.unread_delete_files = len({r["file_path"] for r in failed})
        return (counted.where(F.col("error").isNull()).groupBy("key")
                .agg(F.sum("rows").alias("rows"), F.count(F.lit(1)).alias("files")))

    # ---- every snapshot's files ----------------------------------------------------------------------
    def snapshot_files(self, readable: list, current: Optional[int]) -> dict[int, str]:
        """Decodes every distinct manifest of the ``readable`` snapshots once on the executors (those of the
        current snapshot were decoded by :meth:`current_files`: their rows are read again, not their bytes);
        returns, per snapshot with an unreadable or damaged manifest, the first reason (its files then count as
        none)."""
        import pyarrow as pa
        from pyspark.sql import functions as F

        from ..iceberg.health import _MANIFEST_BROKEN
        from ..iceberg.index import EntryCache, listed_once
        from ..iceberg.paths import normalize
        from .index import MANIFEST_PLAN_SCHEMA, _record_json, decode_manifests, index_schema, manifest_tasks
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
        # manifest id → its position in the current snapshot's plan (manifest_plan's), for those current_files decoded
        decoded_at = {}
        if self.current is not None and current is not None:
            listed_now = self.source.manifest_records(current)
            keys = {pos: EntryCache.manifest_key(listed_now[pos]) for pos in listed_once(listed_now)[0]}
            decoded_at = {ids[key]: pos for pos, key in keys.items() if key in ids}
        todo = [i for i in range(len(records)) if i not in decoded_at]
        self.decoded_again = len(todo)
        bad, parts = [], []
        if todo:
            locations = [self.source.locate(records[i].get("manifest_path") or "") for i in todo]
            plan = pa.table({"manifest": pa.array(todo, pa.int32()),
                             "location": pa.array(locations, pa.string()),
                             "read_from": pa.array([executor_location(x) for x in locations], pa.string()),
                             "record": pa.array([_record_json(records[i]) for i in todo], pa.string())})
            frame = manifest_tasks(self.spark, to_spark(self.spark, plan, MANIFEST_PLAN_SCHEMA), len(todo))
            decoded = self._keep(frame.mapInArrow(
                decode_manifests(self.options, self.source.metadata.partition_specs), index_schema(False)))
            bad += decoded.where(F.col("finding_code").isin(list(_MANIFEST_BROKEN))
                                 & (F.coalesce(F.col("finding_message"), F.lit("")) != "")) \
                .select("manifest", "finding_order", "finding_message").collect()
            parts.append(decoded.where(F.col("finding_code").isNull() & F.coalesce(F.col("status") != 2, F.lit(True)))
                         .select("manifest", "file_path", "file_size_in_bytes"))
        if decoded_at:
            ids_at = to_spark(self.spark, pa.table({"pos": pa.array(list(decoded_at.values()), pa.int64()),
                                                    "manifest": pa.array(list(decoded_at), pa.int32())}),
                              "pos bigint, manifest int")
            rows = self.current.withColumn("pos", F.shiftright(F.col("rid"), 32)).join(F.broadcast(ids_at), "pos")
            kind = F.col("kind")
            bad += rows.where(kind == "finding").select("manifest", "finding_order", "finding_message").collect()
            entry = F.coalesce(~kind.isin("finding", "partial"), F.lit(True))
            parts.append(rows.where(entry).select("manifest", "file_path", "file_size_in_bytes"))
        if parts:
            entries = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
            # kept when first read (_sets): a table with no snapshot past retention and no listing never reads it
            self.entries = entries.mapInArrow(_located_entries(self.source.mapper),
                                              "manifest int, location string, size bigint")
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
            if not self.entries_kept:
                self.entries, self.entries_kept = self._keep(self.entries), True
            frame = frame.unionByName(self.membership.join(self.entries, "manifest").select("sid", "location", "size"))
        return frame.groupBy("sid", "location").agg(F.max("size").alias("size"))

    # ---- the listing of the table location --------------------------------------------------------------
    def list(self, root: str):
        import pyarrow as pa

        from ..health import listing_table
        from ..iceberg.paths import join
        from ..io.errors import storage_error
        from ..io.files import listed_mtime
        from .planner import to_spark

        fs, path = self.source.io.fs(root)
        try:
            top = fs.ls(path, detail=True)
        except FileNotFoundError:
            top = []
        except Exception as exc:  # noqa: BLE001 - turned into this project's storage error
            raise storage_error(exc, root, "list") from exc
        base = path.rstrip("/")
        files, folders = [], []  # files: (name, size, modification time)
        for info in top:
            name = str(info.get("name", ""))
            if name.rstrip("/") == base:
                continue
            if info.get("type", "file") == "directory":
                folders.append(join(root, name[len(base):].lstrip("/") if name.startswith(base) else name))
            elif info.get("type", "file") == "file":
                files.append((name, info.get("size"), listed_mtime(info)))
        names, sizes, mtimes = (list(c) for c in zip(*files)) if files else ([], [], [])
        here = to_spark(self.spark, listing_table(names, sizes, mtimes, path, root), LISTING_SCHEMA)
        if folders:
            plan = to_spark(self.spark, pa.table({"folder": pa.array(folders, pa.string())}), "folder string")
            if len(folders) > 1:
                plan = plan.repartition(len(folders))
            here = here.unionByName(plan.mapInArrow(_list_folders(self.options, root), LISTING_SCHEMA))
        self.listing = self._keep(here)
        return self.listing

    def listing_frame(self):
        """The listing as the doctor's ``frames["listing"]``: a Spark DataFrame."""
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


__all__ = ["health", "driver_holds", "SparkReads", "AMPLIFICATION_ROWS", "FRAME_ROWS"]
