"""Build (once) an Iceberg v3 table with N data files and one deletion vector per file.

    from generate_dv_table import ensure_dv_table
    metadata_location = ensure_dv_table(10_000, "/tmp/pe-bench")

The table is written by Spark with the Iceberg runtime into a Hadoop catalog under
``root`` (table ``bench.dv_<n_files>``) and cached on disk: a second call with the
same arguments returns at once.  Every data file holds ``rows_per_file`` rows and
gets exactly one DV, written by a single merge-on-read DELETE that removes every
third row plus a run of twenty rows per hundred, so the DVs mix array and run
containers.

Run it as a script to build a table from the command line:

    python benchmarks/generate_dv_table.py 10000 /tmp/pe-bench
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

CATALOG = "pe_bench"
NAMESPACE = "bench"
DONE_MARKER = "_puffin_explorer_complete"


def _iceberg_runtime_jar() -> str:
    """The iceberg-spark-runtime jar shipped in snowpark-connect-deps-iceberg, matched to Spark."""
    import pyspark

    try:
        import snowpark_connect_deps_iceberg as deps
    except ImportError as exc:  # pragma: no cover - environment problem
        raise RuntimeError("pip install snowpark-connect-deps-iceberg==1.0.1 for the Iceberg runtime jar") from exc
    spark_minor = ".".join(pyspark.__version__.split(".")[:2])
    jars = sorted(glob.glob(os.path.join(str(deps.get_jars_dir()), f"iceberg-spark-runtime-{spark_minor}_2.12-*.jar")))
    if not jars:
        raise RuntimeError(f"no iceberg-spark-runtime jar for Spark {spark_minor} in {deps.get_jars_dir()}")
    return jars[-1]


def _session(root: str, master: str = "local[*]"):
    """The active Spark session (with a catalog for ``root`` added) or a new local one."""
    from pyspark.sql import SparkSession

    warehouse = os.path.abspath(root)
    spark = SparkSession.getActiveSession()
    if spark is None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers on this interpreter
        spark = (
            SparkSession.builder.master(master)
            .appName("puffin-explorer-bench-generator")
            .config("spark.jars", _iceberg_runtime_jar())
            .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.memory", "4g")
            .config("spark.sql.shuffle.partitions", "8")
            .getOrCreate()
        )
    spark.conf.set(f"spark.sql.catalog.{CATALOG}", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"spark.sql.catalog.{CATALOG}.type", "hadoop")
    spark.conf.set(f"spark.sql.catalog.{CATALOG}.warehouse", warehouse)
    return spark


def _table_dir(n_files: int, root: str, rows_per_file: int) -> str:
    suffix = "" if rows_per_file == 1000 else f"_r{rows_per_file}"
    return os.path.join(os.path.abspath(root), NAMESPACE, f"dv_{n_files}{suffix}")


def _current_metadata(table_dir: str) -> str:
    meta = os.path.join(table_dir, "metadata")
    with open(os.path.join(meta, "version-hint.text")) as fh:
        version = fh.read().strip()
    return os.path.join(meta, f"v{version}.metadata.json")


def ensure_dv_table(n_files: int, root: str, rows_per_file: int = 1000, spark=None) -> str:
    """Return the metadata location of a v3 table with ``n_files`` data files and one DV each.

    Builds it with Spark the first time (under ``root``) and reuses it afterwards.
    """
    if n_files < 1:
        raise ValueError("n_files must be >= 1")
    table_dir = _table_dir(n_files, root, rows_per_file)
    marker = os.path.join(table_dir, DONE_MARKER)
    if os.path.exists(marker):
        with open(marker) as fh:
            return fh.read().strip()

    spark = spark or _session(root)
    if spark.conf.get(f"spark.sql.catalog.{CATALOG}", None) is None:
        spark.conf.set(f"spark.sql.catalog.{CATALOG}", "org.apache.iceberg.spark.SparkCatalog")
        spark.conf.set(f"spark.sql.catalog.{CATALOG}.type", "hadoop")
        spark.conf.set(f"spark.sql.catalog.{CATALOG}.warehouse", os.path.abspath(root))
    name = f"{CATALOG}.{NAMESPACE}.{os.path.basename(table_dir)}"
    started = time.time()
    print(f"building {name}: {n_files} data files x {rows_per_file} rows ...", file=sys.stderr, flush=True)
    spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    spark.sql(
        f"""CREATE TABLE {name} (file_no INT, id BIGINT, payload STRING)
            USING iceberg PARTITIONED BY (file_no)
            TBLPROPERTIES ('format-version'='3',
                           'write.delete.mode'='merge-on-read',
                           'write.update.mode'='merge-on-read',
                           'write.distribution-mode'='none')"""
    )
    # One partition per data file.  Each task gets a contiguous, sorted run of file numbers,
    # so Iceberg's clustered writer keeps one file open at a time and a few tasks write them all.
    n_tasks = max(1, min(16, n_files // 500 or 1))
    rows = (
        spark.range(0, n_files * rows_per_file, numPartitions=n_tasks)
        .selectExpr(
            f"CAST(id DIV {rows_per_file} AS INT) AS file_no",
            f"id % {rows_per_file} AS id",
            "concat('row-', CAST(id AS STRING)) AS payload",
        )
        .sortWithinPartitions("file_no", "id")
    )
    rows.writeTo(name).append()
    print(f"  data written in {time.time() - started:.1f}s; deleting ...", file=sys.stderr, flush=True)
    spark.sql(f"DELETE FROM {name} WHERE id % 3 = 0 OR id % 100 BETWEEN 40 AND 59")
    dvs = spark.table(f"{name}.delete_files").where("file_format = 'PUFFIN'").count()
    if dvs != n_files:
        raise RuntimeError(f"expected {n_files} deletion vectors, the table has {dvs}")
    location = _current_metadata(table_dir)
    with open(marker, "w") as fh:
        fh.write(location + "\n")
    print(f"  done in {time.time() - started:.1f}s: {location}", file=sys.stderr, flush=True)
    return location


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n_files", type=int)
    parser.add_argument("root")
    parser.add_argument("--rows-per-file", type=int, default=1000)
    args = parser.parse_args(argv)
    print(ensure_dv_table(args.n_files, args.root, args.rows_per_file))
    return 0


if __name__ == "__main__":
    sys.exit(main())
