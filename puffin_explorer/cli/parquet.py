"""``puffin-explorer parquet FILE``: the layout of a Parquet file, its tables, and where a DV's rows sit in it."""

from __future__ import annotations

import argparse

from ._errors import EXIT_FINDINGS, EXIT_OK
from ._options import LOCATION_HELP, Shared, UsageError, check_strict, has_errors, nonnegative_int
from ._output import Progress, out, records, width, write_json
from ._sniff import require

HELP = ("layout of a Parquet file (row groups, chunks, pages, indexes, footer) and where a deletion "
        "vector's rows sit in it")
DESCRIPTION = ("Print the layout of a Parquet file, read from its footer, page indexes and page headers "
               "(never the page payloads), and optionally where the rows of a deletion vector fall in it. "
               "Exit 1 when a finding is an error.")


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("file", help=LOCATION_HELP)
    s.add_argument("--row-groups", action="store_true", help="print the row-group table")
    s.add_argument("--chunks", action="store_true", help="print the column-chunk table")
    s.add_argument("--pages", action="store_true", help="print the page table")
    s.add_argument("--footer-only", action="store_true",
                   help="read the footer and page indexes only, not the page headers")
    s.add_argument("--all-headers", action="store_true",
                   help="read every page header, however many pages the file has")
    s.add_argument("--dv", metavar="PUFFIN", help="overlay the deletion vector read from this Puffin file")
    s.add_argument("--dv-offset", type=nonnegative_int, help="the DV's content_offset")
    s.add_argument("--dv-length", type=nonnegative_int, help="the DV's content_size_in_bytes")
    s.add_argument("--column", help="overlay pages of this column only")


def run(args: argparse.Namespace, shared: Shared) -> int:
    from ..parquet.layout import ParquetLayout

    opts = shared.storage_options_or_none
    if args.dv and (args.dv_offset is None or args.dv_length is None):
        raise UsageError("--dv needs --dv-offset and --dv-length (the manifest's "
                         "content_offset and content_size_in_bytes)")
    require(args.file, "parquet", opts)
    pages = False if args.footer_only else (True if args.all_headers else "auto")
    progress = Progress("reading")
    with progress:
        pl = ParquetLayout(args.file, storage_options=opts, strict=shared.strict, pages=pages,
                           progress=lambda stage, done, total: progress(done, total, stage))
    check_strict(pl.findings, shared)
    overlay = None
    if args.dv:
        from . import dv as dv_command

        dv_args = argparse.Namespace(file=args.dv, offset=args.dv_offset, length=args.dv_length, blob=None)
        overlay = pl.overlay(dv_command.load(dv_args, shared), column=args.column)
    if shared.format == "json":
        doc = {
            "location": pl.location, "size": pl.size, "num_rows": pl.num_rows,
            "created_by": pl.created_by, "bytes_read": pl.bytes_read,
            "row_groups": records(pl.row_groups()),
            "findings": [f.to_dict() for f in pl.findings],
        }
        if args.chunks:
            doc["column_chunks"] = records(pl.column_chunks())
        if args.pages:
            doc["pages"] = records(pl.pages())
        if overlay is not None:
            doc["overlay"] = {"row_groups": records(overlay.row_groups), "pages": records(overlay.pages),
                              "findings": [f.to_dict() for f in overlay.findings]}
        write_json(doc)
    elif shared.format == "csv":
        table = pl.pages() if args.pages else pl.column_chunks() if args.chunks else pl.row_groups()
        table.to_csv(__import__("sys").stdout, index=False)
    else:
        import pandas as pd

        out(repr(pl))
        with pd.option_context("display.width", width(), "display.max_columns", 30, "display.max_rows", 10_000,
                               "display.max_colwidth", 60):
            if args.row_groups:
                out("\nrow groups:\n" + pl.row_groups().to_string(index=False, line_width=width()))
            if args.chunks:
                out("\ncolumn chunks:\n" + pl.column_chunks().to_string(index=False, line_width=width()))
            if args.pages:
                out("\npages:\n" + pl.pages().to_string(index=False, line_width=width()))
        if overlay is not None:
            out("\n" + repr(overlay))
    return EXIT_FINDINGS if has_errors(pl.findings) else EXIT_OK
