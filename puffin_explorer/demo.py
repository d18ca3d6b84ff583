"""Build a demo Iceberg warehouse with embedded Spark: ``python -m puffin_explorer.demo [FOLDER]``.

Tables (Hadoop catalog, namespace ``shop``):

- ``orders``  v3, partitioned by bucket(4, customer_id): scattered deletes, an UPDATE
  (merge-on-read: DVs plus new data files), a range delete, ``compute_table_stats``.
- ``events``  v3, one data file: a range delete, a dense delete and a scattered
  delete, each commit merging the file's DV into a new one; stats for two columns.
- ``legacy``  v2 with a Parquet position-delete file (no Puffin).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Optional

from .spark.session import DEFAULT_CATALOG, DEFAULT_WAREHOUSE, add_catalog, session

TABLES = ("orders", "events", "legacy")
NAMESPACE = "shop"

_V3 = ("'format-version'='3', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
       "'write.merge.mode'='merge-on-read'")

# Each step: (table, description, SQL).  {t} is the table's full name, {c} the catalog.
STEPS = [
    ("orders", "create (v3, bucket(4, customer_id))",
     f"CREATE TABLE {{t}} (order_id BIGINT, customer_id INT, amount DECIMAL(10,2), status STRING, order_date DATE) "
     f"USING iceberg PARTITIONED BY (bucket(4, customer_id)) TBLPROPERTIES ({_V3})"),
    ("orders", "insert 40,000 orders",
     "INSERT INTO {t} SELECT id, CAST(id % 997 AS INT), CAST((id % 500) + 0.99 AS DECIMAL(10,2)), 'new', "
     "date_add(DATE'2025-01-01', CAST(id % 365 AS INT)) FROM range(40000)"),
    ("orders", "scattered delete: every 13th order", "DELETE FROM {t} WHERE order_id % 13 = 0"),
    ("orders", "update: ship a tenth of the first 20,000 orders",
     "UPDATE {t} SET status = 'shipped' WHERE order_id % 10 = 3 AND order_id < 20000"),
    ("orders", "range delete: orders 30,000..30,999", "DELETE FROM {t} WHERE order_id BETWEEN 30000 AND 30999"),
    ("orders", "compute_table_stats", "CALL {c}.system.compute_table_stats(table => '{n}')"),
    ("events", "create (v3, unpartitioned)",
     f"CREATE TABLE {{t}} (event_id BIGINT, kind STRING, user_id INT, ts TIMESTAMP) USING iceberg "
     f"TBLPROPERTIES ({_V3})"),
    ("events", "insert 200,000 events in one data file",
     "INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, element_at(array('view','click','buy','share'), "
     "CAST(id % 4 + 1 AS INT)), CAST(id % 5000 AS INT), "
     "timestamp_seconds(1735689600 + id) FROM range(200000)"),
    ("events", "range delete: events 50,000..99,999", "DELETE FROM {t} WHERE event_id BETWEEN 50000 AND 99999"),
    ("events", "dense delete: odd events below 20,000", "DELETE FROM {t} WHERE event_id % 2 = 1 AND event_id < 20000"),
    ("events", "scattered delete: every 1000th event from 7", "DELETE FROM {t} WHERE event_id % 1000 = 7"),
    ("events", "compute_table_stats (kind, event_id)",
     "CALL {c}.system.compute_table_stats(table => '{n}', columns => array('kind', 'event_id'))"),
    ("legacy", "create (v2)",
     "CREATE TABLE {t} (id BIGINT, name STRING) USING iceberg TBLPROPERTIES ('format-version'='2', "
     "'write.delete.mode'='merge-on-read')"),
    ("legacy", "insert 20,000 rows in one data file",
     "INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, concat('name-', CAST(id AS STRING)) FROM range(20000)"),
    ("legacy", "delete every 10th row (Parquet position deletes)", "DELETE FROM {t} WHERE id % 10 = 0"),
]


def build_demo_warehouse(folder: str = DEFAULT_WAREHOUSE, spark=None, catalog: str = "demo_build",
                         force: bool = False, log=print) -> dict[str, str]:
    """Create the demo tables under ``folder``; return {table name: metadata location}.

    Uses ``spark`` (or :func:`puffin_explorer.spark.session`) and registers the
    folder as Hadoop catalog ``catalog`` on it.  Existing demo tables are kept
    unless ``force``.
    """
    folder = os.path.abspath(folder)
    existing = [t for t in TABLES if os.path.isdir(os.path.join(folder, NAMESPACE, t, "metadata"))]
    if existing and not force:
        raise FileExistsError(f"{folder} already holds demo tables ({', '.join(existing)}); use force=True / --force")
    spark = spark or session(folder)
    add_catalog(spark, catalog, folder)
    for table in TABLES:
        spark.sql(f"DROP TABLE IF EXISTS {catalog}.{NAMESPACE}.{table} PURGE")
    started = time.time()
    for i, (table, what, sql) in enumerate(STEPS, 1):
        name = f"{catalog}.{NAMESPACE}.{table}"
        log(f"[{i:2}/{len(STEPS)}] {NAMESPACE}.{table}: {what}")
        spark.sql(sql.format(t=name, c=catalog, n=f"{NAMESPACE}.{table}")).collect()
    log(f"built in {time.time() - started:.0f}s")
    out = {}
    for table in TABLES:
        meta = os.path.join(folder, NAMESPACE, table, "metadata")
        with open(os.path.join(meta, "version-hint.text")) as fh:
            out[f"{NAMESPACE}.{table}"] = os.path.join(meta, f"v{fh.read().strip()}.metadata.json")
    return out


def run_notebook(notebook: str, warehouse: str, output: Optional[str] = None, timeout: int = 600) -> str:
    """Execute ``notebook`` with ``PUFFIN_EXPLORER_WAREHOUSE`` set to ``warehouse``; return the executed copy's path.

    Inside the notebook, ``puffin_explorer.spark.session()`` then opens that warehouse
    as catalog ``wh``.  The copy goes to ``output`` (default: beside the warehouse).
    """
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(notebook, as_version=4)
    stem = os.path.splitext(os.path.basename(notebook))[0]
    output = output or os.path.join(os.path.dirname(os.path.abspath(warehouse)), f"{stem}-executed.ipynb")
    previous = os.environ.get("PUFFIN_EXPLORER_WAREHOUSE")
    os.environ["PUFFIN_EXPLORER_WAREHOUSE"] = os.path.abspath(warehouse)
    try:
        NotebookClient(nb, timeout=timeout, resources={"metadata": {"path": os.path.dirname(os.path.abspath(notebook))}}
                       ).execute()
    finally:
        if previous is None:
            os.environ.pop("PUFFIN_EXPLORER_WAREHOUSE", None)
        else:
            os.environ["PUFFIN_EXPLORER_WAREHOUSE"] = previous
        nbformat.write(nb, output)
    return output


def _run(args) -> int:
    from .spark.session import SparkSetupError

    try:
        spark = session(args.folder, args.catalog, master=args.master)
        spark.sparkContext.setLogLevel("ERROR")
        tables = build_demo_warehouse(args.folder, spark, catalog=args.catalog, force=args.force)
    except (SparkSetupError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: the warehouse is incomplete; run again with --force", file=sys.stderr)
        return 130
    if args.notebook:
        try:
            print(f"running {args.notebook} against the warehouse ...")
            print(f"executed notebook: {run_notebook(args.notebook, args.folder)}")
        except Exception as exc:  # a failing cell: say which, keep the partial output written
            print(f"error: the notebook failed: {str(exc).strip().splitlines()[-1][:500]}", file=sys.stderr)
            return 1
    print(f"\ndemo warehouse: {os.path.abspath(args.folder)}")
    for name, location in tables.items():
        print(f"  {args.catalog}.{name:<14} {location}")
    print("\nfrom puffin_explorer import spark as pes\n"
          f"spark = pes.session({os.path.abspath(args.folder)!r}, catalog={args.catalog!r})\n"
          f"pes.check(spark, '{args.catalog}.shop.orders').show()")
    return 0


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", nargs="?", default=DEFAULT_WAREHOUSE,
                        help=f"where to build the warehouse (default ./{DEFAULT_WAREHOUSE})")
    parser.add_argument("--catalog", default=DEFAULT_CATALOG, help="Spark catalog name for it (default wh)")
    parser.add_argument("--master", default="local[*]", help="Spark master for an embedded session")
    parser.add_argument("--force", action="store_true", help="drop and rebuild existing demo tables")
    parser.add_argument("--notebook", help="then execute this notebook with PUFFIN_EXPLORER_WAREHOUSE set to the "
                                           "warehouse (the executed copy, NAME-executed.ipynb, is written beside it)")


def register_cli(subparsers) -> None:
    """Add ``demo`` to a ``puffin-explorer`` argparse subparsers object."""
    parser = subparsers.add_parser("demo", help="build a demo Iceberg warehouse with embedded Spark",
                                   description=__doc__.splitlines()[0])
    _add_arguments(parser)
    parser.set_defaults(func=_run)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m puffin_explorer.demo", description=__doc__.splitlines()[0])
    _add_arguments(parser)
    return _run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
