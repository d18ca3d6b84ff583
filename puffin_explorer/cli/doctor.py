"""``puffin-explorer doctor LOCATION``: every health check of one table or of every table of a warehouse,
each problem with the statements that fix it; exits 1 when a finding reaches ``--fail-on`` (for CI)."""

from __future__ import annotations

import argparse
from typing import Any

from ._errors import EXIT_FINDINGS, EXIT_OK
from ._options import Shared, UsageError
from ._output import frame, out, write_json

HELP = "diagnose Iceberg and Delta tables: small files, snapshots, manifests, orphans, deletes, statistics, with fixes"
DESCRIPTION = ("Run the table doctor on a table (a *.metadata.json, a table folder, or a warehouse folder plus "
               "--table), on every table of a warehouse folder, or on a Delta table folder (one with _delta_log; "
               "its fixes are OPTIMIZE, REORG TABLE ... APPLY (PURGE) and VACUUM). Each problem is printed with its evidence, "
               "the thresholds it was measured against (the table's properties or Iceberg's defaults), the "
               "Spark / Trino / PyIceberg statements that fix it and their predicted effect. --format json "
               "prints one object per table (the format the README documents). Exits 1 when a finding is at "
               "or above --fail-on (default error).")
EPILOG = """examples:
  puffin-explorer doctor WAREHOUSE                                  # every table
  puffin-explorer doctor WAREHOUSE --table shop.orders --format json
  puffin-explorer doctor WAREHOUSE --fail-on warning                # CI: exit 1 on any warning
  puffin-explorer doctor WAREHOUSE --now 2026-11-28T00:00:00Z --catalog prod"""

SEVERITIES = ("warning", "error")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("location", help="*.metadata.json, a table folder, or a warehouse folder; local path or fsspec "
                                    "URL (s3://...)")
    p.add_argument("--table", help="only this table (namespace.table) of a warehouse folder")
    p.add_argument("--fail-on", dest="fail_on", choices=SEVERITIES, default="error",
                   help="exit 1 when a finding has this severity or worse (default error)")
    p.add_argument("--catalog", default="spark_catalog",
                   help="catalog name in the printed Spark statements (default spark_catalog)")
    p.add_argument("--now", help="date snapshot ages and retention at this time (ISO 8601; default: the clock)")
    p.add_argument("--older-than", dest="older_than",
                   help="unreferenced files older than this are orphans (ISO 8601; default: 3 days before now)")
    p.add_argument("--cluster-by", dest="cluster_by",
                   help="measure clustering on this column (default: the table's sort order's first column)")
    p.add_argument("--no-listing", dest="listing", action="store_false",
                   help="do not list the table location (no orphan check)")


def _time(text: Any, flag: str) -> Any:
    if text is None:
        return None
    import pandas as pd

    try:
        pd.Timestamp(text)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{flag} {text!r} is not a time: pass ISO 8601, e.g. {flag} 2026-11-28T00:00:00Z") from exc
    return text


def _tables(args: argparse.Namespace, shared: Shared) -> list:
    """(name, Table) pairs: the one table LOCATION names, or every table of a warehouse folder."""
    from ..iceberg.paths import TableIO
    from ..iceberg.warehouse import Warehouse
    from ._sniff import is_delta_folder, sniff
    from .table import open_table

    loc = args.location
    if not args.table and not loc.endswith(".metadata.json") and is_delta_folder(loc, shared.storage_options):
        from ..delta.table import DeltaTable

        return [DeltaTable(loc, storage_options=shared.storage_options, relocate=shared.relocate, allow=shared.allow)]
    if args.table or loc.endswith(".metadata.json"):
        return [open_table(loc, args.table, shared.relocate, shared.storage_options, shared.allow)]
    found = sniff(loc, shared.storage_options)
    if found.kind == "folder" and not any(n == "metadata" for n, kind, _ in
                                          TableIO(shared.storage_options).listdir(loc)):
        wh = Warehouse(loc, storage_options=shared.storage_options, relocate=shared.relocate, allow=shared.allow)
        names = wh.table_names()
        if not names:
            raise UsageError(f"{loc} holds no Iceberg table (no metadata/ folder in it or below it): pass a table "
                             "folder, a *.metadata.json, or a warehouse folder")
        return [wh.table(n) for n in names]
    return [open_table(loc, None, shared.relocate, shared.storage_options, shared.allow)]


def run(args: argparse.Namespace, shared: Shared) -> int:
    now, older = _time(args.now, "--now"), _time(args.older_than, "--older-than")
    from ..delta.table import DeltaTable

    tables = _tables(args, shared)
    if any(isinstance(t, DeltaTable) for t in tables) and (older is not None or args.cluster_by):
        raise UsageError("--older-than and --cluster-by apply to Iceberg tables: a Delta table's orphan cutoff is "
                         "its delta.deletedFileRetentionDuration, and it has no sort order")
    reports = [t.health(now=now, list_files=args.listing) if isinstance(t, DeltaTable) else
               t.health(now=now, older_than=older, catalog=args.catalog, list_files=args.listing,
                        cluster_by=args.cluster_by) for t in tables]
    if shared.format == "json":
        write_json([h.to_dict() for h in reports])
    elif shared.format == "csv":
        import pandas as pd

        rows = [{"table": h.table, "status": h.status, **f.to_dict()} for h in reports for f in h.findings]
        df = pd.DataFrame(rows, columns=["table", "status", "code", "severity", "message", "evidence", "actions",
                                         "effect"])
        frame(df, "csv")
    else:
        from ..display.health_view import health_text

        out("\n\n".join(health_text(h) for h in reports))
    failing = [f for h in reports for f in h.at_least(args.fail_on)]
    return EXIT_FINDINGS if failing else EXIT_OK
