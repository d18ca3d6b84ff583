"""``puffin-explorer table``: a table's snapshots, files, DVs, statistics files and cross-checks from a terminal."""

from __future__ import annotations

import json
import sys
from typing import Any, Optional

VIEWS = ("summary", "snapshots", "files", "dvs", "deletes", "stats", "puffin", "check")


def register_cli(subparsers) -> None:
    """Add the ``table`` subcommand to an argparse subparsers object."""
    p = subparsers.add_parser(
        "table", help="look at an Iceberg table: snapshots, files, DVs, statistics, cross-checks",
        description="Open an Iceberg table from a metadata.json, a table folder, or a warehouse folder "
                    "plus --table, and print one view of it. Exit code 1 when check finds errors.")
    p.add_argument("location", help="*.metadata.json, a table folder, or a warehouse folder (with --table); "
                                    "local path or fsspec URL (s3://...)")
    p.add_argument("view", nargs="?", default="summary", choices=VIEWS)
    p.add_argument("--table", help="table name (namespace.table) inside a warehouse folder")
    p.add_argument("--snapshot", type=int, help="snapshot id (default: current)")
    p.add_argument("--relocate", action="append", default=[], metavar="OLD=NEW",
                   help="map a location prefix written in the metadata to where the files are now (repeatable)")
    p.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                   help="fsspec storage option, e.g. client_kwargs={\"endpoint_url\": \"http://...\"} (JSON values)")
    p.add_argument("--format", choices=("text", "json", "csv"), default="text")
    p.add_argument("--max-rows", type=int, default=200)
    p.set_defaults(func=run)


def _pairs(items: list[str], what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"{what} {item!r} is not KEY=VALUE")
        key, value = item.split("=", 1)
        try:
            out[key] = json.loads(value) if what == "--storage-option" else value
        except json.JSONDecodeError:
            out[key] = value
    return out


def open_table(location: str, table: Optional[str], relocate: dict[str, str], storage_options: dict[str, Any]):
    from .paths import TableIO, join
    from .table import Table
    from .warehouse import Warehouse

    if location.endswith(".metadata.json"):
        return Table.from_metadata(location, storage_options=storage_options, relocate=relocate)
    if table:
        return Warehouse(location, storage_options=storage_options, relocate=relocate).table(table)
    io = TableIO(storage_options)
    if any(n == "metadata" for n, kind, _ in io.listdir(location)):
        return Table.from_folder(location, relocate=relocate, io=io)
    names = Warehouse(location, storage_options=storage_options).table_names()
    raise ValueError(f"{join(location, '')} is a warehouse: pass --table (one of: {', '.join(names) or 'none'})")


def _print_frame(df, fmt: str, max_rows: int) -> None:
    import pandas as pd

    if fmt == "json":
        print(df.to_json(orient="records", date_format="iso", default_handler=str))
    elif fmt == "csv":
        df.to_csv(sys.stdout, index=False)
    else:
        with pd.option_context("display.max_rows", max_rows, "display.max_columns", 50, "display.width", 200,
                               "display.max_colwidth", 100):
            print(df.head(max_rows).to_string(index=False) if len(df) else "(none)")
            if len(df) > max_rows:
                print(f"... {len(df) - max_rows:,} more rows (--max-rows)")


def run(args) -> int:
    """Run the ``table`` subcommand; returns the exit code (never raises for bad input)."""
    from ..errors import PuffinError
    from ..regions import Severity
    from .checks import findings_frame

    try:
        options: dict[str, Any] = {}
        if getattr(args, "storage_options", None):  # the main command's --storage-options JSON
            options = json.loads(args.storage_options) if isinstance(args.storage_options, str) \
                else dict(args.storage_options)
            if not isinstance(options, dict):
                raise ValueError("--storage-options must be a JSON object")
        options.update(_pairs(args.storage_option, "--storage-option"))
        t = open_table(args.location, args.table, _pairs(args.relocate, "--relocate"), options)
        view, sid = args.view, args.snapshot
        if view == "summary":
            snap = t.metadata.snapshot(sid)
            print(f"table      {t.name} (format v{t.metadata.format_version})")
            print(f"metadata   {t.metadata_location}")
            print(f"location   {t.metadata.location}")
            for f in t.findings:
                print(f"note       {f.message}")
            print(f"snapshots  {len(t.metadata.snapshots)}; current {t.metadata.current_snapshot_id}")
            if snap is not None:
                files = t.files(snap.snapshot_id, decode=False)
                for kind, group in files.groupby("kind"):
                    print(f"  {kind:<17} {len(group):>7,} files {int(group.record_count.sum()):>14,} rows")
                print(f"  statistics files  {len(t.statistics_files()):>7,}")
            return 0
        if view == "check":
            def progress(done: int, total: int) -> None:
                if total >= 200 and sys.stderr.isatty():
                    print(f"\rchecking DVs {done:,}/{total:,}", end="", file=sys.stderr, flush=True)

            findings = t.check(sid, progress=progress)
            if sys.stderr.isatty():
                print("\r" + " " * 40 + "\r", end="", file=sys.stderr)
            if args.format == "text":
                for f in findings:
                    print(str(f))
                errors = sum(1 for f in findings if f.severity == Severity.ERROR)
                print(f"{len(findings)} findings, {errors} errors")
            else:
                _print_frame(findings_frame(findings), args.format, args.max_rows)
            return 1 if any(f.severity == Severity.ERROR for f in findings) else 0
        frame = {
            "snapshots": lambda: t.snapshots().drop(columns=["summary"]),
            "files": lambda: t.files(sid),
            "dvs": lambda: t.dvs(sid),
            "deletes": lambda: t.delete_files(sid),
            "stats": t.statistics_files,
            "puffin": lambda: t.puffin_files(sid),
        }[view]()
        _print_frame(frame, args.format, args.max_rows)
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (PuffinError, KeyError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def main(argv=None) -> int:
    """Stand-alone entry point (``python -m puffin_explorer.iceberg.cli``)."""
    import argparse

    parser = argparse.ArgumentParser(prog="puffin-explorer")
    sub = parser.add_subparsers(dest="command", required=True)
    register_cli(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
