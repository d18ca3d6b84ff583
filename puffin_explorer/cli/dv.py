"""``puffin-explorer dv FILE``: the positions of one deletion vector (by blob, or by a manifest's offset and length)."""

from __future__ import annotations

import argparse
import json
import sys

from .._text import plural
from ._errors import EXIT_FINDINGS, EXIT_OK
from ._options import LOCATION_HELP, Shared, UsageError, check_strict, has_errors, nonnegative_int
from ._output import out
from ._sniff import require

HELP = "positions of one deletion vector (--format csv: every position)"
DESCRIPTION = ("Print one deletion vector: its summary, findings and runs of deleted positions; --format csv "
               "writes every position, one per line. Pick it by --blob INDEX (default: the file's first DV), "
               "or read it straight from a manifest entry's content_offset / content_size_in_bytes with "
               "--offset and --length (exactly that range is read).")

#: Positions per write when streaming them all.
_CHUNK = 1 << 16


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help=LOCATION_HELP)
    p.add_argument("--blob", type=nonnegative_int, default=None, help="blob index (default: the first DV)")
    p.add_argument("--offset", type=nonnegative_int, default=None, help="the manifest's content_offset")
    p.add_argument("--length", type=nonnegative_int, default=None, help="the manifest's content_size_in_bytes")
    p.add_argument("--limit", type=nonnegative_int, default=20, help="runs to list in text output (default 20)")


def load(args: argparse.Namespace, shared: Shared):
    """The deletion vector the arguments name; raises UsageError with the fix when there is none."""
    from ..format.dv import DeletionVector
    from ..format.puffin import PuffinFile, read_dv

    opts = shared.storage_options_or_none
    if args.offset is not None or args.length is not None:
        if args.offset is None or args.length is None:
            raise UsageError("--offset and --length go together (a manifest entry's content_offset and "
                             "content_size_in_bytes)")
        if args.blob is not None:
            raise UsageError("pass either --blob or --offset/--length, not both")
        found = require(args.file, "puffin", opts)
        size = found.size or 0
        if args.offset + args.length > size:
            raise UsageError(f"--offset {args.offset:,} --length {args.length:,} ends at byte "
                             f"{args.offset + args.length:,}, past the end of {args.file} ({plural(size, 'byte')}): "
                             "check the manifest entry's content_offset and content_size_in_bytes")
        return read_dv(args.file, args.offset, args.length, storage_options=opts, strict=shared.strict)
    require(args.file, "puffin", opts)
    pf = PuffinFile(args.file, storage_options=opts, strict=shared.strict)
    if args.blob is None:
        dvs = [b for b in pf.blobs if b.type == "deletion-vector-v1"]
        if not dvs:
            kinds = ", ".join(sorted({b.type for b in pf.blobs})) or "no blobs"
            raise UsageError(f"{args.file} holds no deletion-vector-v1 blob ({kinds}): "
                             f"puffin-explorer inspect {args.file} shows what it holds")
        blob = dvs[0]
    else:
        if args.blob >= len(pf.blobs):
            have = f"blobs 0..{len(pf.blobs) - 1}" if pf.blobs else "no blobs"
            raise UsageError(f"no blob {args.blob}: {args.file} has {have}")
        blob = pf.blobs[args.blob]
    if not blob.readable:
        raise UsageError(f"blob {blob.index} of {args.file} lies outside the file (offset {blob.offset:,}, "
                         f"length {blob.length:,}): puffin-explorer validate {args.file} says why")
    dec = blob.decode()  # strict when the file was opened strict
    if not isinstance(dec, DeletionVector):
        raise UsageError(f"blob {blob.index} is {blob.type!r}, not a deletion vector")
    return dec


def run(args: argparse.Namespace, shared: Shared) -> int:
    dv = load(args, shared)
    check_strict(dv.findings, shared)
    code = EXIT_FINDINGS if has_errors(dv.findings) else EXIT_OK
    if shared.format == "csv":
        positions = dv.positions()
        sys.stdout.write("pos\n")
        for i in range(0, len(positions), _CHUNK):
            sys.stdout.write("\n".join(map(str, positions[i:i + _CHUNK].tolist())) + "\n")
        return code
    if shared.format == "json":
        positions = dv.positions()
        head = {"cardinality": dv.cardinality, "referenced_data_file": dv.referenced_data_file,
                "crc_ok": dv.crc_ok, "findings": [f.to_dict() for f in dv.findings]}
        sys.stdout.write(json.dumps(head)[:-1] + ', "positions": [')
        for i in range(0, len(positions), _CHUNK):
            sys.stdout.write(("," if i else "") + ",".join(map(str, positions[i:i + _CHUNK].tolist())))
        sys.stdout.write("]}\n")
        return code
    out(dv.summary())
    if dv.referenced_data_file:
        out(f"referenced-data-file: {dv.referenced_data_file}")
    for f in dv.findings:
        out(f"  {f}")
    ranges = dv.ranges()
    out(f"runs: {len(ranges):,}")
    for row in ranges.head(args.limit).itertuples(index=False):
        out(f"  {row.start}" if row.length == 1 else f"  {row.start}..{row.end - 1}  ({plural(row.length, 'row')})")
    if len(ranges) > args.limit:
        out(f"  … {len(ranges) - args.limit:,} more runs (--limit N, or --format csv for every position)")
    return code
