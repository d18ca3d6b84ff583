"""``puffin-explorer spark COMMAND TABLE``: the Spark scans of a whole table, from a terminal."""

from __future__ import annotations

import argparse
import inspect
import sys
from typing import Any, Optional

from .._text import plural
from ._errors import EXIT_FINDINGS, EXIT_OK
from ._options import Shared, UsageError, nonnegative_int
from ._output import frame, json_default, out

#: The scans, by subcommand word: (function in puffin_explorer.spark.scans, what it returns).
COMMANDS = {
    "check": ("check", "our DV decode vs Iceberg's position_deletes, per data file (exit 1 on any difference)"),
    "report": ("deletion_report", "per data file: rows, deleted, share, DV size"),
    "inventory": ("puffin_inventory", "one row per Puffin blob of the table, decoded and validated"),
    "positions": ("dv_positions", "every deleted position: (data_file, pos)"),
}

HELP = "scan a whole table's deletion vectors and Puffin files with Spark"
DESCRIPTION = ("Run one of the Spark scans over a table: "
               + "; ".join(f"{k}: {v[1]}" for k, v in COMMANDS.items())
               + ". Starts an embedded local Spark session with the Iceberg runtime (Java 17 needed).")
EPILOG = """examples:
  puffin-explorer spark check shop.orders --warehouse ./demo-warehouse
  puffin-explorer spark report /path/to/table/metadata/v6.metadata.json
  puffin-explorer spark inventory shop.events --warehouse ./demo-warehouse --all-snapshots --output inventory.parquet"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scan", choices=list(COMMANDS), metavar="SCAN",
                        help="one of: " + ", ".join(COMMANDS))
    parser.add_argument("table", help="catalog table name (wh.shop.orders; with --warehouse, shop.orders is enough) "
                                      "or a table folder / metadata.json location (Iceberg, or a Delta table folder)")
    parser.add_argument("--warehouse", help="folder of a Hadoop-catalog warehouse to register as --catalog")
    parser.add_argument("--catalog", default="wh", help="catalog name for --warehouse (default wh)")
    parser.add_argument("--master", default="local[*]", help="Spark master for an embedded session")
    parser.add_argument("--jar", help="Iceberg runtime jar (default: the one in snowpark-connect-deps-iceberg)")
    parser.add_argument("--all-snapshots", action="store_true", help="inventory: delete files of every snapshot")
    parser.add_argument("--limit", type=nonnegative_int, default=50, help="rows to print as text (default 50)")
    parser.add_argument("--output", help="write the whole result here instead (.parquet, .csv or .json)")


def table_name(args: argparse.Namespace) -> str:
    """The table as the scans take it: a location, or a catalog name (NAMESPACE.TABLE gets --catalog)."""
    from ..spark.tables import is_location

    table = args.table
    if args.warehouse and not is_location(table) and not table.startswith(f"{args.catalog}."):
        table = f"{args.catalog}.{table}"  # a name inside the warehouse given here
    return table


def _check_catalog(spark, table: str) -> None:
    """A three-part name whose catalog the session lacks fails here, with the fix, not deep in Spark."""
    from ..spark.tables import is_location

    parts = table.split(".")
    if is_location(table) or len(parts) < 3:
        return
    if spark.conf.get(f"spark.sql.catalog.{parts[0]}", None) is None:
        raise UsageError(f"no catalog {parts[0]!r} in this Spark session (for {table}): pass --warehouse FOLDER "
                         f"--catalog {parts[0]}, or name the table NAMESPACE.TABLE with --warehouse")


#: Log4j 2 settings for an embedded session started here (then errors only): Spark's start-up notes stay off stderr.
_QUIET_LOG4J2 = """rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
"""


def _quiet_embedded_spark(master: str) -> None:
    """Before an embedded JVM starts: bind a local master to loopback and log errors only (unless set already)."""
    import os
    import tempfile

    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is not None:
        return
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if "PYSPARK_SUBMIT_ARGS" not in os.environ:
        fd, path = tempfile.mkstemp(prefix="puffin-explorer-log4j2-", suffix=".properties")
        with os.fdopen(fd, "w") as f:
            f.write(_QUIET_LOG4J2)
        os.environ["PYSPARK_SUBMIT_ARGS"] = f"--driver-java-options -Dlog4j2.configurationFile=file:{path} pyspark-shell"


def _manifest_list_readable(table: str, shared: Shared, storage_options: Optional[dict[str, Any]]) -> None:
    """A table named by its location whose current manifest list cannot be read: one line naming it (the
    lenient planner would plan nothing and the scan would print no row), before any JVM starts."""
    from ..iceberg.source import TableSource
    from ..spark.tables import open_table

    opened = open_table(table, storage_options, shared.relocate or None)
    if isinstance(opened, TableSource) and opened.metadata.current_snapshot_id is not None:
        opened.manifest_records()


def run(args: argparse.Namespace, shared: Shared) -> int:
    from ..spark import scans
    from ..spark.session import session

    table = table_name(args)
    scan = getattr(scans, COMMANDS[args.scan][0])
    kwargs = {"storage_options": shared.storage_options_or_none}
    if shared.relocate:
        if "relocate" not in inspect.signature(scan).parameters:
            raise UsageError("spark scans read the paths written in the metadata and do not take --relocate yet: "
                             "use 'puffin-explorer table ... --relocate OLD=NEW' for a moved warehouse")
        kwargs["relocate"] = shared.relocate
    if shared.allow:
        from ..io.scope import ReadScope, with_scope
        from ..spark.tables import is_location

        if not is_location(table):
            raise UsageError("--allow widens the read scope of a table opened by its location (a table folder or "
                             "*.metadata.json); a catalog's table is read by Spark itself")
        # the allowed prefixes ride in the options: the table joins its own scope to them, and the plan takes both
        # to the executors
        kwargs["storage_options"] = with_scope(kwargs["storage_options"], ReadScope((), table).widened(shared.allow))
    if args.scan == "inventory":
        kwargs["all_snapshots"] = args.all_snapshots
    _manifest_list_readable(table, shared, kwargs["storage_options"])
    _quiet_embedded_spark(args.master)
    spark = session(args.warehouse, args.catalog, master=args.master, jar=args.jar,
                    conf={"spark.ui.showConsoleProgress": "true" if sys.stderr.isatty() else "false",
                          "spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    _check_catalog(spark, table)
    df = scan(spark, table, **kwargs)
    if args.output:
        _write(df, args.output)
    elif shared.format == "text":
        rows = df.limit(args.limit + 1).toPandas().convert_dtypes()
        sys.stderr.flush()
        frame(rows, "text", max_rows=args.limit)
        if len(rows) > args.limit:
            out("… more rows (--limit N, or --output FILE for all of them)")
    else:
        _stream(df, shared.format)
    if args.scan == "check":
        bad = df.where("NOT ok").count()
        total = df.count()
        out(f"{plural(total, 'deletion vector', sep='')} checked, {bad} with differences")
        return EXIT_FINDINGS if bad else EXIT_OK
    return EXIT_OK


def _write(df, output: str) -> None:
    fmt = output.rsplit(".", 1)[-1].lower()
    fmt = fmt if fmt in ("parquet", "csv", "json") else "parquet"
    if fmt == "csv":
        from pyspark.sql import functions as F

        df = df.select(*[F.col(c).cast("string") if t.startswith(("array", "map", "struct")) else F.col(c)
                         for c, t in df.dtypes])
    df.write.mode("overwrite").format(fmt).option("header", "true").save(output)
    out(f"wrote {output} ({fmt})")


def _stream(df, fmt: str) -> None:
    """Every row to stdout as CSV or a JSON array, without collecting them on the driver at once."""
    import csv
    import json

    if fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(df.columns)
        for row in df.toLocalIterator():
            writer.writerow(["" if v is None else v for v in row])
        return
    sys.stdout.write("[")
    for i, row in enumerate(df.toLocalIterator()):
        sys.stdout.write(("," if i else "") + json.dumps(row.asDict(recursive=True), default=json_default))
    sys.stdout.write("]\n")
