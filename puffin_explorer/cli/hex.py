"""``puffin-explorer hex FILE``: an annotated hex dump of a Puffin or Parquet file, labelled by region."""

from __future__ import annotations

import argparse

from .._text import plural
from ._errors import EXIT_OK
from ._options import LOCATION_HELP, Shared, UsageError, check_strict, nonnegative_int
from ._output import frame, out, write_json
from ._sniff import sniff

HELP = "annotated hex dump of a Puffin or Parquet file (head, tail and region edges, or one range)"
DESCRIPTION = ("Print the bytes of a Puffin (or Parquet) file with the region each byte belongs to. Without "
               "--offset/--length a big file is paged: head, tail and every region edge. --format json/csv "
               "give the regions that overlap the range instead.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help=LOCATION_HELP)
    p.add_argument("--offset", type=nonnegative_int, default=None, help="first byte (decimal or 0x hex)")
    p.add_argument("--length", type=nonnegative_int, default=None, help="bytes to show (default 512)")


def run(args: argparse.Namespace, shared: Shared) -> int:
    opts = shared.storage_options_or_none
    found = sniff(args.file, opts)
    if found.kind == "folder":
        raise UsageError(f"{args.file} is a folder, not a file: pass a Puffin or Parquet file")
    if found.kind in ("json", "avro"):
        raise UsageError(f"{args.file} is {found.described}: hex shows Puffin and Parquet files")
    if args.offset is not None and found.size is not None and args.offset >= max(found.size, 1):
        raise UsageError(f"--offset {args.offset:,} is past the end of {args.file} ({plural(found.size, 'byte')}): "
                         f"pass an offset below {found.size:,}")
    if found.kind == "parquet":
        from ..parquet.layout import ParquetLayout

        model = ParquetLayout(args.file, storage_options=opts, strict=shared.strict)
    else:
        from ..format.puffin import PuffinFile

        model = PuffinFile(args.file, storage_options=opts, strict=shared.strict)
    check_strict(model.findings, shared)
    if shared.format == "text":
        out(model.hex(offset=args.offset, length=args.length).text())
        return EXIT_OK
    import pandas as pd

    start = args.offset or 0
    end = (found.size or 0) if args.length is None and args.offset is None else start + (args.length or 512)
    rows = [r for r in model.regions().to_records()
            if r["depth"] > 0 and r["space"] == "file" and r["offset"] < end and r["end"] > start]
    if shared.format == "json":
        write_json({"location": args.file, "size": found.size, "offset": start, "end": min(end, found.size or 0),
                    "regions": rows})
    else:
        frame(pd.DataFrame(rows), "csv")
    return EXIT_OK
