"""Locations spelled for Spark and for the executors, and Arrow data handed to Spark or run here.

The lowest Spark module the planner and the executor-side index share: it imports neither.
"""

from __future__ import annotations

import os


def spark_location(location: str) -> str:
    """A location spelled for Spark's Hadoop file systems (``s3://`` → ``s3a://``, local paths absolute)."""
    if location.startswith("s3://"):
        return "s3a://" + location[len("s3://"):]
    if "://" not in location and not location.startswith("file:"):
        return os.path.abspath(location)
    return location


def executor_location(location: str) -> str:
    """A location spelled for this package's reader on an executor (fsspec; local paths absolute)."""
    from .tables import fsspec_location

    loc = fsspec_location(location)
    if "://" not in loc:
        loc = os.path.abspath(loc)
    return loc


# ---- running the executor functions here, and handing Spark Arrow data ---------------------
def run_here(fn, data, schema_ddl: str):
    """Run a mapInArrow function on the driver over an Arrow table; the result as an Arrow table."""
    import pyarrow as pa

    from .executors import _arrow_schema

    schema = _arrow_schema(schema_ddl)
    batches = [b for b in fn(iter(data.to_batches())) if b.num_rows]
    if not batches:
        return schema.empty_table()
    return pa.Table.from_batches(batches).cast(schema)


def is_connect(spark) -> bool:
    """True for a Spark Connect session (no SparkContext, no RDDs, no py4j)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def spark_major() -> int:
    """The installed PySpark's major version."""
    import pyspark

    return int(pyspark.__version__.split(".")[0])


def to_spark(spark, data, schema_ddl: str):
    """A Spark DataFrame holding the columns of the Arrow table ``data`` that ``schema_ddl`` names, in its types.

    PySpark 4 takes Arrow tables directly (classic and Connect); PySpark 3.5 goes
    through pandas with Arrow enabled for that one call.
    """
    from .._pylist import to_pylist
    from .executors import _arrow_schema

    # one chunk per column: PySpark 3.5 refuses a pandas column backed by a chunked Arrow array and falls
    # back to converting row by row (seconds for a few hundred thousand positions)
    target = _arrow_schema(schema_ddl)
    data = data.select(target.names).cast(target).combine_chunks()
    if spark_major() < 4 and _nested(data):
        # PySpark 3.5's pandas-to-Arrow path cannot take maps, and pandas turns list items into numpy
        # scalars its type checks refuse: these plans and results are small, plain rows do
        rows = [tuple(r.values()) for r in to_pylist(data)]
        return spark.createDataFrame(rows, schema=schema_ddl)
    if is_connect(spark):
        return spark.createDataFrame(data if spark_major() >= 4 else _plain_frame(data), schema=schema_ddl)
    # Classic Spark makes one partition (one task) per Arrow batch: a few batches per core, not one per
    # 10,000 rows (47 tasks of 45 ms each for 468,000 positions on one core)
    parallelism = max(1, spark.sparkContext.defaultParallelism)
    settings = {"spark.sql.execution.arrow.pyspark.enabled": "true",
                "spark.sql.execution.arrow.maxRecordsPerBatch": str(max(10_000, -(-data.num_rows // parallelism)))}
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        return spark.createDataFrame(data if spark_major() >= 4 else _plain_frame(data), schema=schema_ddl)
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _plain_frame(data):
    """``data`` as pandas for PySpark 3.5's Arrow path."""
    return data.to_pandas()


def _nested(data) -> bool:
    """Maps, structs or lists of anything but numbers (lists of numbers take PySpark 3.5's Arrow path)."""
    import pyarrow as pa

    def plain_list(t) -> bool:
        return pa.types.is_list(t) and (pa.types.is_integer(t.value_type) or pa.types.is_floating(t.value_type))

    return any(pa.types.is_map(f.type) or pa.types.is_struct(f.type) or
               (pa.types.is_list(f.type) and not plain_list(f.type)) for f in data.schema)


def parallelism(spark) -> int:
    """How many tasks the session runs at once (classic: the context's default parallelism; Spark Connect,
    which does not say: ``spark.sql.shuffle.partitions``)."""
    if not is_connect(spark):
        try:
            return max(1, int(spark.sparkContext.defaultParallelism))
        except Exception:
            pass
    return int(spark.conf.get("spark.sql.shuffle.partitions", "8"))


def kept(frame):
    """``frame`` persisted on the executors' disks (``DISK_ONLY``), not in their memory: the frames this package
    keeps (decoded index rows, measures other measures read) grow with the table, and cached in memory they hold
    the storage half of the unified memory that the joins and sums over them need.  At 10,000,000 files on
    ``local[2]`` with a 2 GB heap, kept in memory they left a hash aggregate without a page to spill into."""
    from pyspark import StorageLevel

    return frame.persist(StorageLevel.DISK_ONLY)
