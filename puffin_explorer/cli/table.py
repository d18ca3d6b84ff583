"""``puffin-explorer table LOCATION [VIEW]``: an Iceberg table's snapshots, files, DVs, statistics and checks, or
a Delta table's files, DVs and checks."""

from __future__ import annotations

import argparse
from typing import Any, Optional, Sequence

from .._text import plural
from ..coverage import UNKNOWN
from ._errors import EXIT_FINDINGS, EXIT_OK
from ._options import Shared, UsageError, check_strict, has_errors
from ._output import Progress, clip, frame, out
from ._sniff import is_delta_folder, sniff

#: The most characters a summary line shows of a path (a damaged metadata file can hold one of megabytes).
LINE = 400

VIEWS = ("summary", "snapshots", "files", "dvs", "deletes", "stats", "puffin", "check")
#: The views of a Delta table (a folder with ``_delta_log``); the others are Iceberg's alone.
DELTA_VIEWS = ("summary", "files", "dvs", "check")
#: VIEW may also come after the options (``table LOC --table X check``).
LATE_POSITIONALS = ("view",)

HELP = "look at an Iceberg or Delta table: snapshots, files, DVs, statistics files, cross-checks"
DESCRIPTION = ("Open an Iceberg table from a *.metadata.json, a table folder, or a warehouse folder plus "
               "--table, and print one view of it (default summary). 'check' cross-checks manifests, Puffin "
               "files and statistics files and exits 1 when a finding is an error. A Delta table folder (one "
               f"with _delta_log) has the views {', '.join(DELTA_VIEWS)}; --snapshot N opens its version N, and "
               "'check' cross-checks the log, the DV descriptors, the DV files and the data files.")
EPILOG = """examples:
  puffin-explorer table WAREHOUSE --table shop.orders            # summary
  puffin-explorer table WAREHOUSE/shop/orders dvs --format csv
  puffin-explorer table WAREHOUSE --table shop.orders check      # exit 1 on errors
  puffin-explorer table s3://bucket/wh --table shop.orders check --storage-options '{"anon": true}'
  puffin-explorer table DELTA_FOLDER dvs --snapshot 1             # a Delta table at version 1"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("location", help="*.metadata.json, a table folder, or a warehouse folder (with --table); "
                                    "local path or fsspec URL (s3://...)")
    p.add_argument("view", nargs="?", default=None, choices=VIEWS, help=f"one of {', '.join(VIEWS)} (default summary)")
    p.add_argument("--table", help="table name (namespace.table) inside a warehouse folder")
    p.add_argument("--snapshot", type=int, help="snapshot id (default: current); of a Delta table, the version "
                                                "(default: latest)")
    p.add_argument("--max-rows", type=int, default=200, help="rows to print in text output (default 200)")


def open_table(location: str, table: Optional[str], relocate: dict[str, str], storage_options: dict[str, Any],
               allow: Sequence[str] = ()):
    """The table at ``location``: a metadata file, a table folder, or ``table`` inside a warehouse folder; it reads
    its own storage, the ``relocate`` targets and the ``allow`` prefixes (``--allow``)."""
    from ..iceberg.paths import TableIO, join
    from ..iceberg.source import table_scope
    from ..iceberg.table import Table
    from ..iceberg.warehouse import Warehouse

    if location.endswith(".metadata.json"):
        return Table.from_metadata(location, storage_options=storage_options, relocate=relocate, allow=allow)
    found = sniff(location, storage_options)
    if found.kind == "json":
        return Table.from_metadata(location, storage_options=storage_options, relocate=relocate, allow=allow)
    if found.kind != "folder":
        use = {"puffin": f"use puffin-explorer inspect {location}",
               "parquet": f"use puffin-explorer parquet {location}"}.get(found.kind,
                                                                         "pass a table's *.metadata.json or folder")
        raise UsageError(f"{location} is {found.described}, not an Iceberg table: {use}")
    if table:
        return Warehouse(location, storage_options=storage_options, relocate=relocate, allow=allow).table(table)
    io = TableIO(storage_options)
    io.limit_to(table_scope(location, location, relocate, allow))  # the folder's listing too: nothing outside it
    if any(n == "metadata" for n, kind, _ in io.listdir(location)):
        return Table.from_folder(location, relocate=relocate, io=io, allow=allow)
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
    if not args.table and not args.location.endswith(".metadata.json") \
            and is_delta_folder(args.location, shared.storage_options):
        return _delta(args, shared)
    t = open_table(args.location, args.table, shared.relocate, shared.storage_options, shared.allow)
    view, sid = args.view or "summary", args.snapshot
    if view == "summary":
        return _summary(t, sid, shared)
    if sid is not None:
        t.snapshot(sid)  # an unknown snapshot id ends the command with its name (NotInTableError)
    if view == "check":
        with Progress("checking DVs", minimum=200) as progress:
            findings = t.check(sid, progress=progress)
        return _print_check(findings, shared, args.max_rows)
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


def _print_check(findings, shared: Shared, max_rows: Optional[int]) -> int:
    """A check's findings in the chosen format, and its exit code (1 when one is an error)."""
    check_strict(findings, shared)
    if shared.format == "text":
        for f in findings:
            out(str(f))
        out(_findings_line(findings))
    else:
        from ..iceberg.checks import findings_frame

        frame(findings_frame(findings), shared.format, max_rows)
    return EXIT_FINDINGS if has_errors(findings) else EXIT_OK


def _findings_line(findings) -> str:
    """The last line of a text check: ``3 findings, 1 error``."""
    errors = sum(1 for f in findings if f.severity.value == "error")
    return f"{plural(len(findings), 'finding')}, {plural(errors, 'error')}"


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
    out(f"table      {clip(t.name, LINE)} (format v{t.metadata.format_version})")
    out(f"metadata   {clip(t.metadata_location, LINE)}")
    out(f"location   {clip(t.metadata.location, LINE)}")
    for f in t.findings:
        if f.severity.value == "info":
            out(f"note       {clip(f.message, 2 * LINE)}")
    out(f"snapshots  {len(t.metadata.snapshots)}; current {t.metadata.current_snapshot_id}")
    if unreadable:
        out(f"manifests  unreadable: {unreadable}")
        status = EXIT_FINDINGS
    elif snap is not None:
        for kind, (n, rows) in counts.items():
            out(f"  {kind:<17} {plural(n, 'file'):>13} {plural(rows, 'row'):>19}")
    out(f"  statistics files  {len(t.statistics_files()):>7,}")
    return status


# ---- Delta tables ----------------------------------------------------------------------------------------


def _delta(args: argparse.Namespace, shared: Shared) -> int:
    """A Delta table folder: the views of :data:`DELTA_VIEWS`, at ``--snapshot`` (its version) or the latest."""
    from ..delta.table import DeltaTable

    view = args.view or "summary"
    if view not in DELTA_VIEWS:
        raise UsageError(f"{args.location} is a Delta table: view '{view}' is for Iceberg tables; the views of a "
                         f"Delta table are {', '.join(DELTA_VIEWS)}")
    # an unknown version ends the command with its name and the latest one (NotInTableError)
    t = DeltaTable(args.location, version=args.snapshot, storage_options=shared.storage_options,
                   relocate=shared.relocate, allow=shared.allow)
    if view == "summary":
        return _delta_summary(t, shared)
    if view == "check":
        findings = t.check()
        return _print_check(findings, shared, args.max_rows)
    status = _opening_findings(t, shared)
    frame(t.files() if view == "files" else t.dvs(), shared.format, args.max_rows)
    return status


def _delta_summary(t, shared: Shared) -> int:
    totals, dv_files = t.totals(), len(t.dv_files())
    protocol = t.protocol
    features = sorted(set(protocol.get("readerFeatures") or []) | set(protocol.get("writerFeatures") or []))
    if shared.format != "text":
        import pandas as pd

        row = {"table": t.name, "format": "delta", "location": t.location, "version": t.version,
               "latest_version": t.log.files.latest, "min_reader_version": protocol.get("minReaderVersion"),
               "min_writer_version": protocol.get("minWriterVersion"), "features": ", ".join(features),
               **totals, "dv_files": dv_files,
               "notes": "; ".join(f"{f.code}: {f.message}" for f in t.findings)}
        check_strict(t.findings, shared)
        frame(pd.DataFrame([row]), shared.format)
        return EXIT_FINDINGS if has_errors(t.findings) else EXIT_OK
    status = _opening_findings(t, shared)
    out(f"table      {clip(t.name, LINE)} (Delta, reader v{protocol.get('minReaderVersion', '?')}, "
        f"writer v{protocol.get('minWriterVersion', '?')}"
        + (f"; features {', '.join(features)})" if features else ")"))
    out(f"location   {clip(t.location, LINE)}")
    for f in t.findings:
        if f.severity.value == "info":
            out(f"note       {clip(f.message, 2 * LINE)}")
    out(f"version    {t.version}; latest {t.log.files.latest}")

    def n(key: str, noun: str) -> str:  # a count a missing commit leaves unknown says so, never "None rows"
        return UNKNOWN if totals[key] is None else plural(totals[key], noun)

    out(f"  data files        {n('data_files', 'file'):>13} {n('records', 'row'):>19}")
    out(f"  DVs               {n('dvs', 'DV'):>13} {n('deleted_rows', 'row'):>19} deleted")
    out(f"  live rows         {'':>13} {n('live_rows', 'row'):>19}")
    out(f"  DV files          {dv_files:>7,}")
    return status
