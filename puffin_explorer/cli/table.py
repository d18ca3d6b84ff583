"""``puffin-explorer table LOCATION [VIEW]``: an Iceberg table's snapshots, files, DVs, statistics and checks."""

from __future__ import annotations

import argparse
from typing import Any, Optional

from ._errors import EXIT_FINDINGS, EXIT_OK
from ._options import Shared, UsageError, check_strict, has_errors
from ._output import Progress, frame, out
from ._sniff import sniff

VIEWS = ("summary", "snapshots", "files", "dvs", "deletes", "stats", "puffin", "check")
#: VIEW may also come after the options (``table LOC --table X check``).
LATE_POSITIONALS = ("view",)

HELP = "look at an Iceberg table: snapshots, files, DVs, statistics files, cross-checks"
DESCRIPTION = ("Open an Iceberg table from a *.metadata.json, a table folder, or a warehouse folder plus "
               "--table, and print one view of it (default summary). 'check' cross-checks manifests, Puffin "
               "files and statistics files and exits 1 when a finding is an error.")
EPILOG = """examples:
  puffin-explorer table WAREHOUSE --table shop.orders            # summary
  puffin-explorer table WAREHOUSE/shop/orders dvs --format csv
  puffin-explorer table WAREHOUSE --table shop.orders check      # exit 1 on errors
  puffin-explorer table s3://bucket/wh --table shop.orders check --storage-options '{"anon": true}'"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("location", help="*.metadata.json, a table folder, or a warehouse folder (with --table); "
                                    "local path or fsspec URL (s3://...)")
    p.add_argument("view", nargs="?", default=None, choices=VIEWS, help=f"one of {', '.join(VIEWS)} (default summary)")
    p.add_argument("--table", help="table name (namespace.table) inside a warehouse folder")
    p.add_argument("--snapshot", type=int, help="snapshot id (default: current)")
    p.add_argument("--max-rows", type=int, default=200, help="rows to print in text output (default 200)")


def open_table(location: str, table: Optional[str], relocate: dict[str, str], storage_options: dict[str, Any]):
    """The table at ``location``: a metadata file, a table folder, or ``table`` inside a warehouse folder."""
    from ..iceberg.paths import TableIO, join
    from ..iceberg.table import Table
    from ..iceberg.warehouse import Warehouse

    if location.endswith(".metadata.json"):
        return Table.from_metadata(location, storage_options=storage_options, relocate=relocate)
    found = sniff(location, storage_options)
    if found.kind == "json":
        return Table.from_metadata(location, storage_options=storage_options, relocate=relocate)
    if found.kind != "folder":
        use = {"puffin": f"use puffin-explorer inspect {location}",
               "parquet": f"use puffin-explorer parquet {location}"}.get(found.kind,
                                                                         "pass a table's *.metadata.json or folder")
        raise UsageError(f"{location} is {found.described}, not an Iceberg table: {use}")
    if table:
        return Warehouse(location, storage_options=storage_options, relocate=relocate).table(table)
    io = TableIO(storage_options)
    if any(n == "metadata" for n, kind, _ in io.listdir(location)):
        return Table.from_folder(location, relocate=relocate, io=io)
    names = Warehouse(location, storage_options=storage_options).table_names()
    if not names:
        raise UsageError(f"{join(location, '')} holds no Iceberg table (no metadata/ folder in it or in the "
                         "folders below it): pass a table folder, a *.metadata.json, or a warehouse folder")
    raise UsageError(f"{join(location, '')} is a warehouse: pass --table NAME (one of: {', '.join(names)})")


def _opening_findings(t, shared: Shared) -> int:
    """The problems met opening the table, before any view: on stdout for text, on stderr for csv/json
    (the output stays machine-readable). With ``--strict`` the first error ends the command."""
    import sys

    check_strict(t.findings, shared)
    problems = [f for f in t.findings if f.severity.value != "info"]
    for f in problems:
        line = f"{f.severity.value} {f.code}: {f.message}"
        if shared.format == "text":
            out(line)
        else:
            sys.stderr.write(line + "\n")
    return EXIT_FINDINGS if has_errors(problems) else EXIT_OK


def run(args: argparse.Namespace, shared: Shared) -> int:
    t = open_table(args.location, args.table, shared.relocate, shared.storage_options)
    view, sid = args.view or "summary", args.snapshot
    if view == "summary":
        return _summary(t, sid, shared)
    if sid is not None:
        t.snapshot(sid)  # an unknown snapshot id ends the command with its name (NotInTableError)
    if view == "check":
        with Progress("checking DVs", minimum=200) as progress:
            findings = t.check(sid, progress=progress)
        check_strict(findings, shared)
        if shared.format == "text":
            for f in findings:
                out(str(f))
            errors = sum(1 for f in findings if f.severity.value == "error")
            out(f"{len(findings)} findings, {errors} errors")
        else:
            from ..iceberg.checks import findings_frame

            frame(findings_frame(findings), shared.format, args.max_rows)
        return EXIT_FINDINGS if has_errors(findings) else EXIT_OK
    df = {
        "snapshots": lambda: t.snapshots().drop(columns=["summary"]),
        "files": lambda: t.files(sid),
        "dvs": lambda: t.dvs(sid),
        "deletes": lambda: t.delete_files(sid),
        "stats": t.statistics_files,
        "puffin": lambda: t.puffin_files(sid),
    }
    status = _opening_findings(t, shared)
    frame(df[view](), shared.format, args.max_rows)
    return status


def _summary(t, sid: Optional[int], shared: Shared) -> int:
    from ..errors import PuffinError

    snap = t.metadata.snapshot(sid) if sid is None else t.snapshot(sid)
    counts = {}
    unreadable = ""
    if snap is not None:
        try:
            files = t.files(snap.snapshot_id, decode=False)
            counts = {kind: (len(group), int(group.record_count.sum())) for kind, group in files.groupby("kind")}
        except PuffinError as exc:
            unreadable = str(exc)
    if shared.format != "text":
        import pandas as pd

        row = {"table": t.name, "format_version": t.metadata.format_version,
               "metadata": t.metadata_location, "location": t.metadata.location,
               "snapshots": len(t.metadata.snapshots), "current_snapshot_id": t.metadata.current_snapshot_id,
               **{f"{k}_files": v[0] for k, v in counts.items()}, **{f"{k}_rows": v[1] for k, v in counts.items()},
               "statistics_files": len(t.statistics_files()),
               "notes": "; ".join([f"{f.code}: {f.message}" for f in t.findings]
                                  + ([f"manifests unreadable: {unreadable}"] if unreadable else []))}
        check_strict(t.findings, shared)
        frame(pd.DataFrame([row]), shared.format)
        return EXIT_FINDINGS if unreadable or has_errors(t.findings) else EXIT_OK
    status = _opening_findings(t, shared)
    out(f"table      {t.name} (format v{t.metadata.format_version})")
    out(f"metadata   {t.metadata_location}")
    out(f"location   {t.metadata.location}")
    for f in t.findings:
        if f.severity.value == "info":
            out(f"note       {f.message}")
    out(f"snapshots  {len(t.metadata.snapshots)}; current {t.metadata.current_snapshot_id}")
    if unreadable:
        out(f"manifests  unreadable: {unreadable}")
        status = EXIT_FINDINGS
    elif snap is not None:
        for kind, (n, rows) in counts.items():
            out(f"  {kind:<17} {n:>7,} files {rows:>14,} rows")
    out(f"  statistics files  {len(t.statistics_files()):>7,}")
    return status
