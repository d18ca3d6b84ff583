"""Distributed scans of a table's Puffin files and deletion vectors.

Every function takes a SparkSession and a table (a catalog name such as
``wh.shop.orders`` or a metadata location) and returns a Spark DataFrame.
Listing comes from Iceberg's own metadata tables (``delete_files``, ``files``,
``position_deletes``); the Puffin bytes are read and decoded on the executors
by this package's reader, one DV at a time by its ``content_offset`` and
``content_size_in_bytes``.  Positions are never collected to the driver.
"""

from __future__ import annotations

from typing import Any, Optional

from . import executors
from .tables import metadata_table, statistics_files

_DV_COLUMNS = ["file_path", "referenced_data_file", "content_offset", "content_size_in_bytes", "record_count"]


def _parallelism(spark) -> int:
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # Spark Connect has no SparkContext
        return int(spark.conf.get("spark.sql.shuffle.partitions", "8"))


def dv_metadata(spark, table: str, data_files: Optional[list[str]] = None):
    """The live deletion vectors of ``table``: one ``delete_files`` row per DV (no bytes read)."""
    from pyspark.sql import functions as F

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


def _spread(spark, dvs):
    """Spread DV rows over the cluster (the metadata table arrives in one partition per manifest)."""
    return dvs.repartition(_parallelism(spark) * 2, "file_path", "content_offset")


def dv_positions(spark, table: str, storage_options: Optional[dict[str, Any]] = None,
                 data_files: Optional[list[str]] = None):
    """DataFrame ``(data_file, pos)``: every position deleted by a live DV of ``table``.

    Decoded on the executors; ``data_files`` restricts it to some data files.
    A damaged DV fails the job with its file, offset and the first error found.
    """
    dvs = _spread(spark, dv_metadata(spark, table, data_files))
    return dvs.mapInArrow(executors.decode_positions(storage_options), executors.POSITIONS_SCHEMA)


def dv_facts(spark, table: str, storage_options: Optional[dict[str, Any]] = None):
    """One row per live DV: where it is, Iceberg's record_count and our decoded cardinality, range, runs, CRC."""
    dvs = _spread(spark, dv_metadata(spark, table))
    return dvs.mapInArrow(executors.decode_dv_facts(storage_options), executors.DV_FACTS_SCHEMA)


def puffin_inventory(spark, table: str, storage_options: Optional[dict[str, Any]] = None,
                     all_snapshots: bool = False):
    """DataFrame with one row per Puffin blob of ``table``: deletion-vector files and statistics files.

    Columns: puffin_file, file_kind (``deletes``/``statistics``), file_size, blob_index, blob_type,
    fields, snapshot_id, sequence_number, offset, length, compression_codec, properties,
    summary, cardinality, ndv_estimate, findings (this blob's), file_findings (footer and layout).
    Every file is opened and validated on an executor.  ``all_snapshots`` lists the
    delete files of every snapshot (``all_delete_files``), not only the live ones.
    """
    from pyspark.sql import functions as F

    source = "all_delete_files" if all_snapshots else "delete_files"
    deletes = (metadata_table(spark, table, source)
               .where(F.upper(F.col("file_format")) == "PUFFIN")
               .select(F.col("file_path").alias("puffin_file"), F.lit("deletes").alias("file_kind"),
                       F.col("file_size_in_bytes").alias("file_size"))
               .distinct())
    stats = [(s["path"], "statistics", s["size"]) for s in statistics_files(spark, table, storage_options)]
    files = deletes
    if stats:
        files = files.unionByName(spark.createDataFrame(stats, "puffin_file string, file_kind string, file_size bigint"))
    files = files.repartition(_parallelism(spark) * 2, "puffin_file")
    return (files.mapInArrow(executors.inventory(storage_options), executors.INVENTORY_SCHEMA)
            .orderBy("file_kind", "puffin_file", "blob_index"))


def deletion_report(spark, table: str, storage_options: Optional[dict[str, Any]] = None):
    """Per data file: rows, deleted rows, share deleted, DV size and where the DV lives.

    ``deleted`` counts our decode of the DV plus, for v2 tables, the rows of
    Parquet position-delete files (counted by Iceberg's ``position_deletes``).
    """
    from pyspark.sql import functions as F

    data = (metadata_table(spark, table, "files").where(F.col("content") == 0)
            .select(F.col("file_path").alias("data_file"), F.col("record_count").alias("rows"),
                    F.col("file_size_in_bytes").alias("data_file_size")))
    facts = dv_facts(spark, table, storage_options).select(
        "data_file", F.col("cardinality").alias("dv_deleted"), F.col("delete_file").alias("dv_file"),
        F.col("content_offset").alias("dv_offset"), F.col("content_size_in_bytes").alias("dv_size"), "runs")
    report = data.join(facts, "data_file", "left")
    other = (metadata_table(spark, table, "delete_files")
             .where((F.col("content") == 1) & (F.upper(F.col("file_format")) != "PUFFIN")).limit(1).count())
    if other:
        counted = (_iceberg_positions(spark, table, dvs=False)
                   .groupBy(F.col("file_path").alias("data_file")).agg(F.count(F.lit(1)).alias("file_deleted")))
        report = report.join(counted, "data_file", "left")
    else:
        report = report.withColumn("file_deleted", F.lit(None).cast("bigint"))
    deleted = F.coalesce(F.col("dv_deleted"), F.lit(0)) + F.coalesce(F.col("file_deleted"), F.lit(0))
    return (report.withColumn("deleted", deleted)
            .withColumn("live", F.col("rows") - F.col("deleted"))
            .withColumn("deleted_share", F.when(F.col("rows") > 0, F.col("deleted") / F.col("rows")))
            .select("data_file", "rows", "deleted", "live", "deleted_share", "dv_deleted",
                    F.col("file_deleted").alias("position_delete_file_rows"), "dv_size", "runs", "dv_file",
                    "dv_offset", "data_file_size")
            .orderBy(F.col("deleted_share").desc_nulls_last(), "data_file"))


def check(spark, table: str, storage_options: Optional[dict[str, Any]] = None):
    """Compare our DV decode with Iceberg's: one row per data file with a DV, ``ok`` when they agree.

    Per data file: ``record_count`` (Iceberg's ``delete_files``), ``cardinality`` (our
    decode), ``ours`` / ``iceberg`` (positions from our decode / from Iceberg's
    ``position_deletes`` table), ``only_ours`` / ``only_iceberg`` (positions one side
    has and the other lacks, with the smallest of each as an example) and ``findings``.
    ``check(...).where("NOT ok").count() == 0`` means the two readers agree exactly.
    """
    from pyspark.sql import functions as F

    ours = dv_positions(spark, table, storage_options).withColumn("_o", F.lit(1))
    theirs = (_iceberg_positions(spark, table, dvs=True)
              .select(F.col("file_path").alias("data_file"), "pos").withColumn("_t", F.lit(1)))
    both = ours.join(theirs, ["data_file", "pos"], "full_outer")
    only_o = F.col("_o").isNotNull() & F.col("_t").isNull()
    only_t = F.col("_t").isNotNull() & F.col("_o").isNull()
    per_file = both.groupBy("data_file").agg(
        F.count("_o").alias("ours"), F.count("_t").alias("iceberg"),
        F.sum(only_o.cast("long")).alias("only_ours"), F.sum(only_t.cast("long")).alias("only_iceberg"),
        F.min(F.when(only_o, F.col("pos"))).alias("first_only_ours"),
        F.min(F.when(only_t, F.col("pos"))).alias("first_only_iceberg"))
    facts = dv_facts(spark, table, storage_options).select(
        "data_file", "delete_file", "content_offset", "record_count", "cardinality", "crc_ok", "findings")
    result = facts.join(per_file, "data_file", "full_outer")
    zero = F.lit(0)
    for name in ("ours", "iceberg", "only_ours", "only_iceberg"):
        result = result.withColumn(name, F.coalesce(F.col(name), zero))
    ok = ((F.col("only_ours") == 0) & (F.col("only_iceberg") == 0)
          & (F.col("ours") == F.col("iceberg"))
          & F.col("cardinality").eqNullSafe(F.col("record_count"))
          & (F.col("cardinality") == F.col("ours"))
          & F.coalesce(F.col("crc_ok"), F.lit(False)))
    return (result.withColumn("ok", ok)
            .select("data_file", "ok", "record_count", "cardinality", "ours", "iceberg", "only_ours",
                    "only_iceberg", "first_only_ours", "first_only_iceberg", "crc_ok", "delete_file",
                    "content_offset", "findings")
            .orderBy("ok", "data_file"))


def deleted_rows(spark, table: str, data_file: str, storage_options: Optional[dict[str, Any]] = None):
    """The rows of ``data_file`` that ``table``'s deletes remove, read from the data file itself.

    Columns: ``pos`` (row position in the file) then the file's columns as
    written.  Positions come from our decode of the file's DV, or for a v2 table
    from Iceberg's ``position_deletes``.  ``data_file`` may be a full path or a
    unique suffix of one (e.g. the file name).
    """
    from pyspark.sql import functions as F

    path = resolve_data_file(spark, table, data_file)
    positions = dv_positions(spark, table, storage_options, data_files=[path]).select("pos")
    has_dv = dv_metadata(spark, table, [path]).limit(1).count() > 0
    if not has_dv:
        positions = (metadata_table(spark, table, "position_deletes").where(F.col("file_path") == path)
                     .select("pos"))
    rows = spark.read.parquet(path)
    rows = rows.select(F.col("_metadata.row_index").alias("pos"), *[F.col(f"`{c}`") for c in rows.columns])
    return rows.join(positions.distinct(), "pos", "left_semi").orderBy("pos")


def resolve_data_file(spark, table: str, data_file: str) -> str:
    """The full path of the data file of ``table`` that is ``data_file`` or ends with it."""
    from pyspark.sql import functions as F

    files = metadata_table(spark, table, "files").where(F.col("content") == 0).select("file_path")
    exact = files.where(F.col("file_path") == data_file).limit(1).collect()
    if exact:
        return exact[0]["file_path"]
    matches = [r["file_path"] for r in files.where(F.col("file_path").endswith(data_file)).limit(2).collect()]
    if len(matches) != 1:
        what = "no data file" if not matches else "more than one data file"
        raise ValueError(f"{what} of {table} matches {data_file!r}")
    return matches[0]
