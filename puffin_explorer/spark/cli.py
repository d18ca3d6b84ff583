"""``puffin-explorer spark ...``: run the Spark scans from a terminal.

    puffin-explorer spark check wh.shop.orders --warehouse ./demo-warehouse
    puffin-explorer spark report /path/to/table/metadata/v6.metadata.json
    puffin-explorer spark inventory wh.shop.events --all-snapshots --output inventory.parquet
"""

from __future__ import annotations

import argparse
import sys

COMMANDS = {
    "check": "our DV decode vs Iceberg's position_deletes, per data file (exit 1 on any difference)",
    "report": "per data file: rows, deleted, share, DV size",
    "inventory": "one row per Puffin blob of the table, decoded and validated",
    "positions": "every deleted position: (data_file, pos)",
}


def register_cli(subparsers) -> None:
    """Add ``spark`` (with check / report / inventory / positions) to argparse subparsers."""
    parser = subparsers.add_parser("spark", help="scan a table's deletion vectors and Puffin files with Spark",
                                   description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=list(COMMANDS), help="; ".join(f"{k}: {v}" for k, v in COMMANDS.items()))
    parser.add_argument("table", help="catalog table name (wh.shop.orders; with --warehouse, shop.orders is enough) "
                                      "or metadata location")
    parser.add_argument("--warehouse", help="folder of a Hadoop-catalog warehouse to register as --catalog")
    parser.add_argument("--catalog", default="wh", help="catalog name for --warehouse (default wh)")
    parser.add_argument("--master", default="local[*]", help="Spark master for an embedded session")
    parser.add_argument("--jar", help="Iceberg runtime jar (default: the one in snowpark-connect-deps-iceberg)")
    parser.add_argument("--all-snapshots", action="store_true", help="inventory: delete files of every snapshot")
    parser.add_argument("--limit", type=int, default=50, help="rows to print (default 50)")
    parser.add_argument("--output", help="write the whole result here instead (.parquet, .csv or .json)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..errors import PuffinError
    from . import scans
    from .session import SparkSetupError, session
    from .tables import is_location

    table = args.table
    if args.warehouse and not is_location(table) and not table.startswith(f"{args.catalog}."):
        table = f"{args.catalog}.{table}"  # a name inside the warehouse given here
    try:
        spark = session(args.warehouse, args.catalog, master=args.master, jar=args.jar,
                        conf={"spark.ui.showConsoleProgress": "true"})
        spark.sparkContext.setLogLevel("ERROR")
        if args.command == "check":
            df = scans.check(spark, table)
        elif args.command == "report":
            df = scans.deletion_report(spark, table)
        elif args.command == "inventory":
            df = scans.puffin_inventory(spark, table, all_snapshots=args.all_snapshots)
        else:
            df = scans.dv_positions(spark, table)
        if args.output:
            fmt = args.output.rsplit(".", 1)[-1].lower()
            fmt = fmt if fmt in ("parquet", "csv", "json") else "parquet"
            out = df
            if fmt == "csv":
                from pyspark.sql import functions as F

                out = df.select(*[F.col(c).cast("string") if t.startswith(("array", "map")) else F.col(c)
                                  for c, t in df.dtypes])
            out.write.mode("overwrite").format(fmt).option("header", "true").save(args.output)
            print(f"wrote {args.output} ({fmt})")
        else:
            df.show(args.limit, truncate=80)
        if args.command == "check":
            bad = df.where("NOT ok").count()
            total = df.count()
            print(f"{total} deletion vectors checked, {bad} with differences")
            return 1 if bad else 0
        return 0
    except (SparkSetupError, PuffinError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # Spark analysis errors (unknown table, column) and job failures
        name = type(exc).__name__
        if name in ("AnalysisException", "Py4JJavaError", "PythonException", "IllegalArgumentException"):
            print(f"error: {name}: {str(exc).strip().splitlines()[0][:500]}", file=sys.stderr)
            return 2
        raise


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="puffin-explorer")
    register_cli(parser.add_subparsers(dest="subcommand", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
