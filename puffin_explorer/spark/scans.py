"""Distributed scans of a table's Puffin files and deletion vectors.

Every function takes a SparkSession and a table and returns a Spark DataFrame.
The table is one of:

- a :class:`~puffin_explorer.Table` (anything ``Table`` / ``Warehouse`` opens, with
  ``relocate=`` and ``storage_options=``), a pyiceberg table, a ``*.metadata.json``
  location or a table folder: planned on the driver from this package's own
  metadata reader (:mod:`.planner`), no Iceberg jar needed;
- a catalog table name such as ``wh.shop.orders``: listed through Iceberg's own
  metadata tables (``delete_files``, ``files``, ``position_deletes``).

The Puffin bytes are read and decoded by this package's reader, one DV at a time
by its ``content_offset`` and ``content_size_in_bytes``: on the executors with
``mapInArrow``, or on the driver when the plan is small (``mode="auto"``; force
one side with ``mode="driver"`` / ``"executors"``).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from ..errors import UnsupportedTableError
from . import executors
from .errors import spark_errors
from .arrow import parallelism, run_here, to_spark
from .planner import DRIVER_MAX_FILES, DV_PLAN_SCHEMA, FILES_PLAN_SCHEMA, TablePlan, plan_table
from .tables import metadata_table, statistics_files

_DV_COLUMNS = ["file_path", "referenced_data_file", "content_offset", "content_size_in_bytes", "record_count"]
Relocate = Optional[Mapping[str, str]]


def dv_metadata(spark, table: Any, data_files: Optional[list[str]] = None, *,
                storage_options: Optional[dict[str, Any]] = None, relocate: Relocate = None,
                index_on: str = "auto"):
    """The live deletion vectors of ``table``: one row per DV (no DV bytes read).

    ``index_on`` says where the entry index is built (see :func:`dv_positions`)."""
    from pyspark.sql import functions as F

    with spark_errors():
        plan = plan_table(table, storage_options, relocate, index_on=index_on)
        if plan is not None:
            return _planned_dvs(spark, plan, data_files).select(*_DV_COLUMNS)
        dvs = (metadata_table(spark, table, "delete_files")
               .where((F.col("content") == 1) & (F.upper(F.col("file_format")) == "PUFFIN"))
               .select(*_DV_COLUMNS))
        if data_files is not None:
            dvs = dvs.where(F.col("referenced_data_file").isin(list(data_files)))
        return dvs


def _iceberg_positions(spark, table: str, dvs: bool):
    """Iceberg's ``position_deletes`` rows from DVs (``dvs``) or from Parquet/ORC/Avro delete files."""
    from pyspark.sql import functions as F

    rows = metadata_table(spark, table, "position_deletes")
    if "content_offset" not in rows.columns:  # v2 tables: no DVs at all
        return rows.where(F.lit(not dvs))
    return rows.where(F.col("content_offset").isNotNull() if dvs else F.col("content_offset").isNull())


#: DV rows are spread over tasks by Puffin file and by stretch of this many bytes of it.
SPREAD_STRETCH = 8 << 20


def _spread(spark, dvs):
    """Spread DV rows over the cluster (the metadata table arrives in one partition per manifest), keeping
    the DVs of each stretch of a Puffin file in one task, sorted by file and offset: a task opens each file
    once and reads a stretch's DVs in one request (spread by DV, every task opened every file and read
    each DV alone), while the stretches of one big file still go to different tasks."""
    from pyspark.sql import functions as F

    stretch = F.floor(F.coalesce(F.col("content_offset"), F.lit(0)) / F.lit(SPREAD_STRETCH))
    return (dvs.repartition(parallelism(spark) * 2, F.col("file_path"), stretch)
            .sortWithinPartitions("file_path", "content_offset"))


def _by_shuffle(frame):
    """``frame`` with a sort-merge hint for the join it meets.  Spark sizes a ``mapInArrow`` output by the plan
    it came from (a row per Puffin stretch or manifest), far below the rows it yields, and would broadcast it
    into a join at any size (10,000,000 DVs' facts would fill the driver's heap); joined by shuffle, its size
    costs disk, not memory.  The hint passes through the frame's selects and aggregates to that join."""
    return frame.hint("merge")


def _planned_dvs(spark, plan: TablePlan, data_files: Optional[list[str]] = None):
    """The plan's DV rows as a DataFrame (:data:`DV_PLAN_SCHEMA`), from the index where ``plan`` builds it."""
    if plan.index_where("deletes") == "executors":
        return plan.dvs_frame(spark, data_files)
    return to_spark(spark, plan.dvs(data_files), DV_PLAN_SCHEMA)


def _decode_planned(spark, plan: TablePlan, data_files, fn, schema: str, mode: str):
    """Run ``fn`` over the plan's DV rows: here (small plans) or on the executors with mapInArrow.

    With the entry index built on the executors the DV rows stay a DataFrame (the driver sees them
    only for ``mode="driver"``)."""
    if plan.index_where("deletes") == "executors":
        if mode not in ("auto", "driver", "executors"):
            plan.choose(None, mode)  # the error for an unknown mode
        frame = plan.dvs_frame(spark, data_files)
        if mode == "driver":
            import pyarrow as pa

            from .executors import _arrow_schema

            dvs = pa.Table.from_pylist([r.asDict() for r in frame.collect()], schema=_arrow_schema(DV_PLAN_SCHEMA))
            return to_spark(spark, run_here(fn, dvs, schema), schema)
        return _by_shuffle(_spread(spark, frame).mapInArrow(fn, schema))
    dvs = plan.dvs(data_files)
    if plan.choose(dvs, mode) == "driver":
        return to_spark(spark, run_here(fn, dvs, schema), schema)
    return _by_shuffle(to_spark(spark, dvs, DV_PLAN_SCHEMA).mapInArrow(fn, schema))


def dv_positions(spark, table: Any, storage_options: Optional[dict[str, Any]] = None,
                 data_files: Optional[list[str]] = None, *, relocate: Relocate = None, mode: str = "auto",
                 index_on: str = "auto"):
    """DataFrame ``(data_file, pos)``: every position deleted by a live DV of ``table``.

    ``data_files`` restricts it to some data files.  A damaged DV fails the job
    with its file, offset and the first error found.  ``index_on`` (``"auto"``,
    ``"driver"``, ``"executors"``) says where a planned table's entry index is built:
    ``"auto"`` builds it on the executors (:func:`~.index.manifest_tasks`) from
    :data:`~.planner.EXECUTORS_INDEX_FROM_MANIFESTS` manifests on.
    """
    from pyspark.sql import functions as F

    with spark_errors():
        lists = _position_lists(spark, table, storage_options, data_files, relocate, mode, index_on)
        return lists.select("data_file", F.explode("positions").alias("pos"))


def _position_lists(spark, table: Any, storage_options, data_files, relocate: Relocate, mode: str, index_on: str):
    """(data_file, positions): a row per live DV with its positions as one array (:func:`dv_positions` explodes it;
    counting them needs no row per position)."""
    plan = plan_table(table, storage_options, relocate, index_on=index_on)
    if plan is not None:
        return _decode_planned(spark, plan, data_files, executors.decode_positions(plan.storage_options, as_lists=True),
                               executors.POSITION_LISTS_SCHEMA, mode)
    dvs = _spread(spark, dv_metadata(spark, table, data_files))
    return _by_shuffle(dvs.mapInArrow(executors.decode_positions(storage_options, as_lists=True),
                                      executors.POSITION_LISTS_SCHEMA))


def dv_facts(spark, table: Any, storage_options: Optional[dict[str, Any]] = None, *,
             relocate: Relocate = None, mode: str = "auto", index_on: str = "auto"):
    """One row per live DV: where it is, the manifest's record_count and our decoded cardinality, range, runs, CRC.

    ``index_on``: where the entry index is built (see :func:`dv_positions`)."""
    with spark_errors():
        plan = plan_table(table, storage_options, relocate, index_on=index_on)
        if plan is not None:
            return _decode_planned(spark, plan, None, executors.decode_dv_facts(plan.storage_options),
                                   executors.DV_FACTS_SCHEMA, mode)
        dvs = _spread(spark, dv_metadata(spark, table))
        return _by_shuffle(dvs.mapInArrow(executors.decode_dv_facts(storage_options), executors.DV_FACTS_SCHEMA))


def puffin_inventory(spark, table: Any, storage_options: Optional[dict[str, Any]] = None,
                     all_snapshots: bool = False, *, relocate: Relocate = None, mode: str = "auto"):
    """DataFrame with one row per Puffin blob of ``table``: deletion-vector files and statistics files.

    Columns: puffin_file, file_kind (``deletes``/``statistics``), file_size, blob_index, blob_type,
    fields, snapshot_id, sequence_number, offset, length, compression_codec, properties,
    summary, cardinality, ndv_estimate, findings (this blob's), file_findings (footer and layout).
    Every file is opened and validated (on an executor, or on the driver for a few
    files).  ``all_snapshots`` lists the delete files of every snapshot, not only the live ones.
    """
    import pandas as pd
    from pyspark.sql import functions as F

    with spark_errors():
        plan = plan_table(table, storage_options, relocate)
        if plan is not None:
            files = plan.puffin_files(all_snapshots)
            fn = executors.inventory(plan.storage_options)
            if mode == "driver" or (mode == "auto" and files.num_rows <= DRIVER_MAX_FILES):
                out = to_spark(spark, run_here(fn, files, executors.INVENTORY_SCHEMA), executors.INVENTORY_SCHEMA)
            else:
                out = to_spark(spark, files, FILES_PLAN_SCHEMA).mapInArrow(fn, executors.INVENTORY_SCHEMA)
            return out.orderBy("file_kind", "puffin_file", "blob_index")
        source = "all_delete_files" if all_snapshots else "delete_files"
        deletes = (metadata_table(spark, table, source)
                   .where(F.upper(F.col("file_format")) == "PUFFIN")
                   .select(F.col("file_path").alias("puffin_file"), F.lit("deletes").alias("file_kind"),
                           F.col("file_size_in_bytes").alias("file_size"))
                   .distinct())
        listed = statistics_files(spark, table, storage_options)
        stats = [(path, "statistics", None if size is pd.NA else int(size))
                 for path, size in zip(listed["path"], listed["size"])]
        files = deletes
        if stats:
            files = files.unionByName(spark.createDataFrame(stats, "puffin_file string, file_kind string, "
                                                                   "file_size bigint"))
        files = files.repartition(parallelism(spark) * 2, "puffin_file")
        return (files.mapInArrow(executors.inventory(storage_options), executors.INVENTORY_SCHEMA)
                .orderBy("file_kind", "puffin_file", "blob_index"))


#: What :func:`_position_delete_pairs` yields: the measures' ``pos_counts`` relation.
_PAIRS_SCHEMA = "file_path string, key string, rows bigint"


def _position_delete_pairs(storage_options: Optional[dict]):
    """mapInArrow function: position-delete files (file_path, location) → the measures' ``pos_counts`` rows: per
    file and data file (as the file writes it), the rows it names, each file's rows read by
    :func:`~.executors.position_deletes` and counted per data file (one Python step per file)."""
    read = executors.position_deletes(storage_options)

    def run(batches):
        import pyarrow as pa
        import pyarrow.compute as pc

        for batch in batches:
            for i in range(batch.num_rows):
                one = batch.slice(i, 1)
                named = [b.column("data_file") for b in read(iter([one]))]
                if not named:
                    continue
                counts = pc.value_counts(pa.chunked_array(named, pa.string()).combine_chunks())
                keys = counts.field("values")
                yield pa.RecordBatch.from_arrays(
                    [pa.array([one.column("file_path")[0].as_py()] * len(keys), pa.string()), keys,
                     counts.field("counts").cast(pa.int64())], names=["file_path", "key", "rows"])

    return run


def _planned_position_delete_pairs(spark, plan: TablePlan, mode: str):
    """The plan's Parquet position-delete files as the measures' ``pos_counts`` relation, or None for none."""
    from .planner import DELETE_FILES_SCHEMA

    files = plan.position_delete_files()
    if not files.num_rows:
        return None
    fn = _position_delete_pairs(plan.storage_options)
    if mode == "driver" or (mode == "auto" and files.num_rows <= DRIVER_MAX_FILES):
        return to_spark(spark, run_here(fn, files, _PAIRS_SCHEMA), _PAIRS_SCHEMA)
    return _by_shuffle(to_spark(spark, files, DELETE_FILES_SCHEMA).mapInArrow(fn, _PAIRS_SCHEMA))


def _catalog_position_delete_pairs(spark, table: str):
    """A catalog table's Parquet position deletes, counted by Iceberg's ``position_deletes``, as ``pos_counts``
    (None when it has no such delete file)."""
    from pyspark.sql import functions as F

    other = (metadata_table(spark, table, "delete_files")
             .where((F.col("content") == 1) & (F.upper(F.col("file_format")) != "PUFFIN")).limit(1).count())
    if not other:
        return None
    return (_iceberg_positions(spark, table, dvs=False)
            .groupBy(F.col("delete_file_path").alias("file_path"), F.col("file_path").alias("key"))
            .agg(F.count(F.lit(1)).alias("rows")))


def deletion_report(spark, table: Any, storage_options: Optional[dict[str, Any]] = None, *,
                    relocate: Relocate = None, mode: str = "auto", index_on: str = "auto"):
    """Per data file: rows, deleted rows, share deleted, DV size and where the DV lives.

    ``deleted`` counts our decode of the DV plus, for v2 tables, the rows of
    Parquet position-delete files (read by this package for a planned table,
    counted by Iceberg's ``position_deletes`` for a catalog name), by the one
    definition of deleted rows (:data:`~puffin_explorer.iceberg.measures.DELETED_ROWS`:
    a DV supersedes its data file's position deletes).
    """
    from pyspark.sql import functions as F

    with spark_errors():
        plan = plan_table(table, storage_options, relocate, index_on=index_on)
        if plan is not None and plan.index_where("data") == "executors":
            data = _by_shuffle(plan.data_files_frame(spark))
        elif plan is not None:
            data = to_spark(spark, plan.data_files().drop(["location"]),
                            "data_file string, rows bigint, data_file_size bigint")
        else:
            data = (metadata_table(spark, table, "files").where(F.col("content") == 0)
                    .select(F.col("file_path").alias("data_file"), F.col("record_count").alias("rows"),
                            F.col("file_size_in_bytes").alias("data_file_size")))
        facts = dv_facts(spark, plan.table if plan else table, plan.storage_options if plan else storage_options,
                         mode=mode, index_on=index_on).select(
            "data_file", F.col("cardinality").alias("dv_deleted"), F.col("delete_file").alias("dv_file"),
            F.col("content_offset").alias("dv_offset"), F.col("content_size_in_bytes").alias("dv_size"), "runs")
        report = data.join(facts, "data_file", "left")
        pairs = _planned_position_delete_pairs(spark, plan, mode) if plan is not None else \
            _catalog_position_delete_pairs(spark, table)
        # deleted rows by the one definition (iceberg/measures.py): the decoded DVs and the position-delete rows,
        # a DV superseding its file's position deletes, keyed by the data file as the metadata writes it
        from ..iceberg.measures import DELETED_ROWS, POSITION_DELETE_ROWS, RELATIONS
        from .measures import run_spark_measures

        per_file, named = run_spark_measures(
            spark, (DELETED_ROWS, POSITION_DELETE_ROWS), data=data.select(F.col("data_file").alias("key")),
            dvs=facts.select(F.col("data_file").alias("ref_key"), F.col("dv_deleted").alias("record_count")),
            pos_counts=pairs if pairs is not None else spark.createDataFrame([], RELATIONS["pos_counts"]))
        if pairs is not None:
            report = report.join(named.select(F.col("key").alias("data_file"), F.col("rows").alias("file_deleted")),
                                 "data_file", "left")
        else:
            report = report.withColumn("file_deleted", F.lit(None).cast("bigint"))
        report = report.join(per_file.select(F.col("key").alias("data_file"), "deleted"), "data_file", "left")
        return (report.withColumn("deleted", F.coalesce(F.col("deleted"), F.lit(0)))
                .withColumn("live", F.col("rows") - F.col("deleted"))
                .withColumn("deleted_share", F.when(F.col("rows") > 0, F.col("deleted") / F.col("rows")))
                .select("data_file", "rows", "deleted", "live", "deleted_share", "dv_deleted",
                        F.col("file_deleted").alias("position_delete_file_rows"), "dv_size", "runs", "dv_file",
                        "dv_offset", "data_file_size")
                .orderBy(F.col("deleted_share").desc_nulls_last(), "data_file"))


def _iceberg_reads(spark, plan: TablePlan) -> bool:
    """True when Iceberg in this session can read the planned table as it stands (not moved, runtime present)."""
    if plan.relocated or not plan.iceberg:
        return False
    try:
        return bool(spark.read.format("iceberg").load(plan.table.metadata_location + "#position_deletes").columns)
    except Exception:  # no Iceberg runtime, or a location its file IO cannot open
        return False


COMPARISONS = ("auto", "position_deletes", "record_count")


def check(spark, table: Any, storage_options: Optional[dict[str, Any]] = None, *, relocate: Relocate = None,
          compare: str = "auto", mode: str = "auto", index_on: str = "auto"):
    """Compare our DV decode with Iceberg's: one row per data file with a DV, ``ok`` when they agree.

    Per data file: ``record_count`` (the manifest's), ``cardinality`` (our decode),
    ``ours`` (positions from our decode), ``iceberg`` / ``only_ours`` / ``only_iceberg``
    (positions from Iceberg's ``position_deletes`` table, the positions one side has
    and the other lacks, with the smallest of each as an example) and ``findings``.
    ``compared_with`` says what our decode was compared with: ``position_deletes``
    when Iceberg in this session can read the table (a catalog name always; a planned
    table unless it was moved or the session has no Iceberg runtime), else
    ``record_count`` (then ``iceberg`` and ``only_*`` are null).  ``compare=`` forces one.
    ``check(...).where("NOT ok").count() == 0`` means the readers agree exactly.
    """
    from pyspark.sql import functions as F

    if compare not in COMPARISONS:
        raise ValueError(f"compare must be one of {', '.join(COMPARISONS)}, not {compare!r}")
    with spark_errors():
        plan = plan_table(table, storage_options, relocate)
        if plan is not None:
            target, opts = plan.table, plan.storage_options
            if compare == "auto":
                compare = "position_deletes" if _iceberg_reads(spark, plan) else "record_count"
            elif compare == "position_deletes" and not plan.iceberg:
                raise UnsupportedTableError(f"{plan.table.name} is a Delta table: Iceberg's position_deletes cannot read it "
                                 "(compare='record_count' compares with the log's cardinality)")
            iceberg_name = getattr(plan.table, "metadata_location", None)
        else:
            target, opts = table, storage_options
            compare = "position_deletes" if compare == "auto" else compare
            iceberg_name = table
        facts = dv_facts(spark, target, opts, mode=mode, index_on=index_on).select(
            "data_file", "delete_file", "content_offset", "record_count", "cardinality", "crc_ok", "findings")
        zero = F.lit(0)
        if compare == "position_deletes":
            ours = dv_positions(spark, target, opts, mode=mode, index_on=index_on).withColumn("_o", F.lit(1))
            theirs = (_iceberg_positions(spark, iceberg_name, dvs=True)
                      .select(F.col("file_path").alias("data_file"), "pos").withColumn("_t", F.lit(1)))
            both = ours.join(theirs, ["data_file", "pos"], "full_outer")
            only_o = F.col("_o").isNotNull() & F.col("_t").isNull()
            only_t = F.col("_t").isNotNull() & F.col("_o").isNull()
            per_file = both.groupBy("data_file").agg(
                F.count("_o").alias("ours"), F.count("_t").alias("iceberg"),
                F.sum(only_o.cast("long")).alias("only_ours"), F.sum(only_t.cast("long")).alias("only_iceberg"),
                F.min(F.when(only_o, F.col("pos"))).alias("first_only_ours"),
                F.min(F.when(only_t, F.col("pos"))).alias("first_only_iceberg"))
            result = facts.join(per_file, "data_file", "full_outer")
            for name in ("ours", "iceberg", "only_ours", "only_iceberg"):
                result = result.withColumn(name, F.coalesce(F.col(name), zero))
            agree = ((F.col("only_ours") == 0) & (F.col("only_iceberg") == 0)
                     & (F.col("ours") == F.col("iceberg")))
        else:
            # our decode's positions counted where the facts decode them (their cardinality): the positions never
            # reach the JVM (3.7 GB at a million DVs, more than a driver's heap), and no DV is decoded twice
            from pyspark.sql import Window

            result = facts.withColumn("ours", F.coalesce(
                F.sum("cardinality").over(Window.partitionBy("data_file")), zero))
            for name in ("iceberg", "only_ours", "only_iceberg", "first_only_ours", "first_only_iceberg"):
                result = result.withColumn(name, F.lit(None).cast("bigint"))
            agree = F.col("ours") == F.col("record_count")
        ok = (agree & F.col("cardinality").eqNullSafe(F.col("record_count"))
              & (F.col("cardinality") == F.col("ours"))
              & F.coalesce(F.col("crc_ok"), F.lit(False)))
        return (result.withColumn("ok", F.coalesce(ok, F.lit(False)))
                .withColumn("compared_with", F.lit(compare))
                .select("data_file", "ok", "record_count", "cardinality", "ours", "iceberg", "only_ours",
                        "only_iceberg", "first_only_ours", "first_only_iceberg", "crc_ok", "delete_file",
                        "content_offset", "findings", "compared_with")
                .orderBy("ok", "data_file"))


def deleted_rows(spark, table: Any, data_file: str, storage_options: Optional[dict[str, Any]] = None, *,
                 relocate: Relocate = None):
    """The rows of ``data_file`` that ``table``'s deletes remove, read from the data file itself.

    Columns: ``pos`` (row position in the file) then the file's columns as
    written.  Positions come from our decode of the file's DV (and any Parquet
    position-delete files).  The rows are read with Spark's Parquet reader, or
    through this package's reader when the session cannot open the file's scheme
    (``s3://`` without S3A).  ``data_file`` may be a full path, where the file is
    now, or a unique suffix of either (e.g. the file name).
    """
    from pyspark.sql import functions as F

    with spark_errors():
        plan = plan_table(table, storage_options, relocate)
        if plan is None:
            path = resolve_data_file(spark, table, data_file)
            positions = dv_positions(spark, table, storage_options, data_files=[path]).select("pos")
            has_dv = dv_metadata(spark, table, [path]).limit(1).count() > 0
            if not has_dv:
                positions = (metadata_table(spark, table, "position_deletes").where(F.col("file_path") == path)
                             .select("pos"))
            rows = spark.read.parquet(path)
            rows = rows.select(F.col("_metadata.row_index").alias("pos"), *[F.col(f"`{c}`") for c in rows.columns])
            return rows.join(positions.distinct(), "pos", "left_semi").orderBy("pos")
        import pyarrow as pa

        path, location = plan.resolve_data_file(data_file)
        found = plan.deletions(path)
        rows = _spark_parquet(spark, location)
        if rows is None:
            return _rows_through_arrow(spark, location, found, plan.storage_options)
        positions = to_spark(spark, pa.table({"pos": pa.array(found, pa.int64())}), "pos bigint")
        rows = rows.select(F.col("_metadata.row_index").alias("pos"), *[F.col(f"`{c}`") for c in rows.columns])
        return rows.join(positions, "pos", "left_semi").orderBy("pos")


def _spark_parquet(spark, location: str):
    """Spark's Parquet reader on ``location``, or None when the session has no file system for its scheme."""
    from .arrow import spark_location

    try:
        rows = spark.read.parquet(spark_location(location))
        rows.columns  # Spark Connect analyses lazily: ask for the schema now
        return rows
    except Exception as exc:
        text = str(exc)
        if "No FileSystem for scheme" in text or "UnsupportedFileSystemException" in text or \
                "S3AFileSystem not found" in text:
            return None
        raise


def _rows_through_arrow(spark, location: str, positions, storage_options: Optional[dict]):
    """The rows at ``positions`` of a Parquet file the session cannot open, read on an executor by this package."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import from_arrow_schema

    from ..io import ByteSource
    from .planner import DELETE_FILES_SCHEMA
    from .tables import fsspec_location

    with ByteSource(fsspec_location(location), storage_options).open() as fh:
        file_schema = pq.read_schema(fh)
    schema = pa.schema([pa.field("pos", pa.int64())] + list(file_schema))
    one = to_spark(spark, pa.table({"file_path": [location], "location": [location]}), DELETE_FILES_SCHEMA)
    return (one.mapInArrow(executors.data_file_rows(location, positions, schema, storage_options),
                           from_arrow_schema(schema))
            .orderBy("pos"))


def resolve_data_file(spark, table: Any, data_file: str, *, storage_options: Optional[dict[str, Any]] = None,
                      relocate: Relocate = None) -> str:
    """The full path (as the metadata writes it) of the data file of ``table`` that is ``data_file`` or ends with it."""
    from pyspark.sql import functions as F

    with spark_errors():
        plan = plan_table(table, storage_options, relocate)
        if plan is not None:
            return plan.resolve_data_file(data_file)[0]
        files = metadata_table(spark, table, "files").where(F.col("content") == 0).select("file_path")
        exact = files.where(F.col("file_path") == data_file).limit(1).collect()
        if exact:
            return exact[0]["file_path"]
        matches = [r["file_path"] for r in files.where(F.col("file_path").endswith(data_file)).limit(2).collect()]
        if len(matches) != 1:
            what = "no data file" if not matches else "more than one data file"
            raise ValueError(f"{what} of {table} matches {data_file!r}")
        return matches[0]


def plan(spark, table: Any, storage_options: Optional[dict[str, Any]] = None, *, relocate: Relocate = None,
         mode: str = "auto", index_on: str = "auto") -> dict[str, Any]:
    """How the functions above would run on ``table``: plan sizes, where the entry index is built and
    where DVs are decoded.

    ``{"table", "dvs", "dv_bytes", "positions", "relocated", "decode_on", "index_on", "manifest_decoder"}``;
    for a catalog name both are ``"executors"`` (planned by Iceberg's metadata tables).  With the index on the
    executors the sizes are summed there too, and ``manifest_decoder`` is what an executor's worker decodes
    manifests with (``"duckdb-avro"``, or ``"fastavro: "`` and why; one task asks), else the driver's.
    """
    from pyspark.sql import functions as F

    from .index import executors_decoder

    with spark_errors():
        planned = plan_table(table, storage_options, relocate, index_on=index_on)
        if planned is None:
            return {"table": table, "dvs": None, "dv_bytes": None, "positions": None, "relocated": False,
                    "decode_on": "executors", "index_on": "executors", "planned_by": "iceberg metadata tables"}
        if planned.index_where("deletes") != "executors":
            return dict(planned.describe(mode), planned_by="puffin_explorer")
        sums = planned.dvs_frame(spark).agg(F.count(F.lit(1)), F.sum("content_size_in_bytes"),
                                            F.sum("record_count")).first()
        dvs, dv_bytes, positions = int(sums[0]), int(sums[1] or 0), int(sums[2] or 0)
        if mode not in ("auto", "driver", "executors"):
            planned.choose(None, mode)  # the error for an unknown mode
        decode_on = mode if mode != "auto" else "executors"
        return {"table": planned.table.name, "dvs": dvs, "dv_bytes": dv_bytes, "positions": positions,
                "relocated": planned.relocated, "decode_on": decode_on, "index_on": "executors",
                "manifest_decoder": executors_decoder(spark), "planned_by": "puffin_explorer"}
