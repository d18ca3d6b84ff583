"""``puffin-explorer parquet FILE``: the layout of a Parquet file, its tables, and a DV overlay."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Optional

from ..cli import nonnegative_int
from ..errors import PuffinError


def _storage_options(args: argparse.Namespace) -> Optional[dict[str, Any]]:
    text = getattr(args, "storage_options", None)
    if not text:
        return None
    try:
        opts = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--storage-options is not JSON: {exc}") from exc
    if not isinstance(opts, dict):
        raise ValueError("--storage-options must be a JSON object")
    return opts


def cmd_parquet(args: argparse.Namespace) -> int:
    """Print the layout (and the tables and overlay asked for); 1 when the file has errors."""
    import pandas as pd

    from .layout import ParquetLayout

    opts = _storage_options(args)
    try:
        pages = False if args.footer_only else (True if args.all_headers else "auto")
        pl = ParquetLayout(args.file, storage_options=opts, strict=args.strict, pages=pages,
                           progress=_progress if sys.stderr.isatty() else None)
        if sys.stderr.isatty():
            sys.stderr.write("\r\033[K")
    except PuffinError as exc:
        sys.stderr.write(f"puffin-explorer: {exc}\n")
        return 2
    out = sys.stdout
    if args.json:
        doc = {
            "location": pl.location, "size": pl.size, "num_rows": pl.num_rows,
            "created_by": pl.created_by, "bytes_read": pl.bytes_read,
            "row_groups": _records(pl.row_groups()),
            "findings": [f.to_dict() for f in pl.findings],
        }
        if args.chunks:
            doc["column_chunks"] = _records(pl.column_chunks())
        if args.pages:
            doc["pages"] = _records(pl.pages())
        out.write(json.dumps(doc, indent=2, default=_json_default) + "\n")
    else:
        out.write(repr(pl) + "\n")
        with pd.option_context("display.width", 200, "display.max_columns", 30,
                               "display.max_rows", 10_000):
            if args.row_groups:
                out.write("\nrow groups:\n" + pl.row_groups().to_string(index=False) + "\n")
            if args.chunks:
                out.write("\ncolumn chunks:\n" + pl.column_chunks().to_string(index=False) + "\n")
            if args.pages:
                out.write("\npages:\n" + pl.pages().to_string(index=False) + "\n")
    if args.dv:
        if args.dv_offset is None or args.dv_length is None:
            raise ValueError("--dv needs --dv-offset and --dv-length (the manifest's "
                             "content_offset and content_size_in_bytes)")
        from ..format.puffin import read_dv

        dv = read_dv(args.dv, offset=args.dv_offset, length=args.dv_length,
                     storage_options=opts)
        ov = pl.overlay(dv, column=args.column)
        out.write("\n" + repr(ov) + "\n")
    return 1 if any(f.severity.value == "error" for f in pl.findings) else 0


def _progress(stage: str, done: int, total: int) -> None:
    if done == total or done % 50 == 0:
        sys.stderr.write(f"\r  reading {stage}: {done:,}/{total:,}")
        sys.stderr.flush()


def _records(df) -> list[dict]:
    """DataFrame rows with missing values as None (valid JSON, no NaN)."""
    return df.astype(object).where(df.notna(), None).to_dict(orient="records")


def _json_default(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def register_cli(subparsers) -> None:
    """Add the ``parquet`` subcommand."""
    s = subparsers.add_parser(
        "parquet", help="layout of a Parquet file (row groups, chunks, pages, indexes, footer) "
                        "and where a deletion vector's rows sit in it")
    s.add_argument("file")
    s.add_argument("--row-groups", action="store_true", help="print the row-group table")
    s.add_argument("--chunks", action="store_true", help="print the column-chunk table")
    s.add_argument("--pages", action="store_true", help="print the page table")
    s.add_argument("--footer-only", action="store_true",
                   help="read the footer and page indexes only, not the page headers")
    s.add_argument("--all-headers", action="store_true",
                   help="read every page header, however many pages the file has")
    s.add_argument("--strict", action="store_true", help="fail at the first error")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.add_argument("--dv", metavar="PUFFIN", help="overlay the deletion vector read from this Puffin file")
    s.add_argument("--dv-offset", type=nonnegative_int, help="the DV's content_offset")
    s.add_argument("--dv-length", type=nonnegative_int, help="the DV's content_size_in_bytes")
    s.add_argument("--column", help="overlay pages of this column only")
    s.set_defaults(func=cmd_parquet)
