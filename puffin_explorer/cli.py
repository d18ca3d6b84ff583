"""The ``puffin-explorer`` command: inspect, validate, hex, dv (and more, per installed layer)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from typing import Any, Callable, Optional, Sequence

from .errors import PuffinError
from .format.dv import DeletionVector
from .format.puffin import PuffinFile, read_dv
from .format.theta import ThetaSketch
from .regions import Severity


def _storage_options(args: argparse.Namespace) -> Optional[dict[str, Any]]:
    if getattr(args, "storage_options", None):
        try:
            opts = json.loads(args.storage_options)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--storage-options is not JSON: {exc}") from exc
        if not isinstance(opts, dict):
            raise UsageError("--storage-options must be a JSON object")
        return opts
    return None


class UsageError(Exception):
    pass


def _open(args: argparse.Namespace, path: str) -> PuffinFile:
    return PuffinFile(path, storage_options=_storage_options(args))


def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")


# ---------------------------------------------------------------------- inspect
def cmd_inspect(args: argparse.Namespace) -> int:
    pf = _open(args, args.file)
    if args.json:
        doc = pf.to_dict(decode=True)
        if args.all:
            doc["regions"] = pf.regions().to_records()
        _out(json.dumps(doc, indent=2, default=str))
        return 0
    _out(f"file: {pf.location}")
    _out(f"size: {pf.size:,} bytes")
    if pf.footer is not None:
        _out(f"footer: {pf.footer.size:,} bytes at {pf.footer.offset:,}"
             f"{' (LZ4-compressed payload)' if pf.footer.compressed else ''}")
    _out("properties:" if pf.properties else "properties: (none)")
    for k, v in pf.properties.items():
        _out(f"  {k}: {v}")
    _out(f"blobs: {len(pf.blobs)}")
    for b in pf.blobs:
        codec = b.compression_codec or "none"
        _out(f"  [{b.index}] {b.type}  fields={b.fields}  snapshot-id={b.snapshot_id}  "
             f"sequence-number={b.sequence_number}")
        _out(f"      offset={b.offset}  length={b.length}  codec={codec}")
        for k, v in b.properties.items():
            _out(f"      {k}: {v}")
        if not b.readable:
            _out("      (unreadable: offset/length invalid)")
            continue
        try:
            dec = b.decode()
        except PuffinError as exc:
            _out(f"      (cannot decode: {exc})")
            continue
        if isinstance(dec, DeletionVector):
            _out(f"      deletedRows: {dec.cardinality}")
            _out(f"      {dec.summary()}")
        elif isinstance(dec, ThetaSketch) and dec.sketch is not None:
            _out(f"      ndv estimate: {dec.estimate:.2f}  "
                 f"(2σ bounds {dec.lower_bound(2):.2f} .. {dec.upper_bound(2):.2f})")
            _out(f"      {dec.summary()}")
        else:
            _out(f"      {dec.summary()}")
    findings = pf.findings
    if args.all:
        _out("regions:")
        for depth, r in pf.regions().walk():
            value = "" if r.value is None else f"  = {r.value}"
            where = "" if r.space == "file" else f"  [{r.space}]"
            _out(f"  {'  ' * depth}{r.offset:>10,} +{r.length:<8,} {r.name}{value}{where}")
    _out(f"findings: {len(findings)}" + ("" if findings else " (valid)"))
    for f in findings:
        _out(f"  {f}")
    return 0


# ---------------------------------------------------------------------- validate
def cmd_validate(args: argparse.Namespace) -> int:
    worst = 0
    for path in args.files:
        try:
            pf = _open(args, path)
            findings = pf.findings
        except PuffinError as exc:
            _out(f"{path}: ERROR cannot read: {exc}")
            worst = max(worst, 1)
            continue
        errors = [f for f in findings if f.severity is Severity.ERROR]
        shown = findings if not args.errors_only else errors
        status = "valid" if not errors else "INVALID"
        counts = f"{len(errors)} error(s), {len(findings) - len(errors)} other finding(s)"
        if args.json:
            _out(json.dumps({"file": path, "valid": not errors, "findings": [f.to_dict() for f in shown]}))
        else:
            _out(f"{path}: {status} ({counts})")
            for f in shown:
                _out(f"  {f}")
                if f.hint and args.verbose:
                    _out(f"      hint: {f.hint}")
        if errors:
            worst = max(worst, 1)
    return worst


# ---------------------------------------------------------------------- hex
def cmd_hex(args: argparse.Namespace) -> int:
    pf = _open(args, args.file)
    view = pf.hex(offset=args.offset, length=args.length)
    _out(view.to_text())
    return 0


# ---------------------------------------------------------------------- dv
def cmd_dv(args: argparse.Namespace) -> int:
    if args.offset is not None or args.length is not None:
        if args.offset is None or args.length is None:
            raise UsageError("--offset and --length go together")
        dv = read_dv(args.file, args.offset, args.length, storage_options=_storage_options(args))
    else:
        pf = _open(args, args.file)
        dvs = [b for b in pf.blobs if b.type == "deletion-vector-v1"]
        if not dvs:
            raise UsageError(f"{args.file} holds no deletion-vector-v1 blob")
        if args.blob is None:
            blob = dvs[0]
        else:
            matches = [b for b in pf.blobs if b.index == args.blob]
            if not matches:
                raise UsageError(f"no blob {args.blob}: the file has blobs 0..{len(pf.blobs) - 1}")
            blob = matches[0]
        dec = blob.decode()
        if not isinstance(dec, DeletionVector):
            raise UsageError(f"blob {blob.index} is {blob.type!r}, not a deletion vector")
        dv = dec
    if args.csv:
        sys.stdout.write("pos\n")
        positions = dv.positions()
        step = 1 << 16
        for i in range(0, len(positions), step):
            sys.stdout.write("\n".join(map(str, positions[i:i + step].tolist())) + "\n")
        return 0
    _out(dv.summary())
    if dv.referenced_data_file:
        _out(f"referenced-data-file: {dv.referenced_data_file}")
    for f in dv.findings:
        _out(f"  {f}")
    ranges = dv.ranges()
    _out(f"runs: {len(ranges):,}")
    limit = args.limit
    for row in ranges.head(limit).itertuples(index=False):
        _out(f"  {row.start}" if row.length == 1 else f"  {row.start}..{row.end - 1}  ({row.length:,} rows)")
    if len(ranges) > limit:
        _out(f"  … {len(ranges) - limit:,} more runs (use --csv for every position)")
    return 0


# ---------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="puffin-explorer",
                                description="Look inside Apache Iceberg Puffin files.")
    p.add_argument("--storage-options", metavar="JSON",
                   help='fsspec storage options as JSON, e.g. \'{"anon": true}\'')
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    s = sub.add_parser("inspect", help="properties, blobs and decoded summaries of a Puffin file")
    s.add_argument("file")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.add_argument("--all", action="store_true", help="also the byte-region tree")
    s.set_defaults(func=cmd_inspect)

    s = sub.add_parser("validate", help="check files; exit 0 when all are valid, 1 otherwise")
    s.add_argument("files", nargs="+")
    s.add_argument("--json", action="store_true", help="one JSON object per file")
    s.add_argument("--errors-only", action="store_true", help="hide warnings")
    s.add_argument("-v", "--verbose", action="store_true", help="show hints")
    s.set_defaults(func=cmd_validate)

    s = sub.add_parser("hex", help="annotated hex dump")
    s.add_argument("file")
    s.add_argument("--offset", type=nonnegative_int, default=None)
    s.add_argument("--length", type=nonnegative_int, default=None)
    s.set_defaults(func=cmd_hex)

    s = sub.add_parser("dv", help="positions of one deletion vector")
    s.add_argument("file")
    s.add_argument("--blob", type=nonnegative_int, default=None, help="blob index (default: the first DV)")
    s.add_argument("--offset", type=nonnegative_int, default=None, help="read a DV by manifest content_offset")
    s.add_argument("--length", type=nonnegative_int, default=None, help="… and content_size_in_bytes")
    s.add_argument("--csv", action="store_true", help="every position, one per line")
    s.add_argument("--limit", type=nonnegative_int, default=20, help="runs to list (default 20)")
    s.set_defaults(func=cmd_dv)

    for register in _extensions():
        register(sub)
    return p


def _extensions() -> list[Callable[[Any], None]]:
    """Subcommands contributed by optional layers (display, iceberg, parquet, spark)."""
    out = []
    for module in ("puffin_explorer.display.cli", "puffin_explorer.iceberg.cli", "puffin_explorer.parquet.cli",
                   "puffin_explorer.spark.cli"):
        try:
            mod = __import__(module, fromlist=["register_cli"])
        except ImportError:
            continue
        out.append(mod.register_cli)
    return out


def nonnegative_int(text: str) -> int:
    """argparse type: a whole number >= 0 (decimal or 0x hex)."""
    try:
        value = int(text, 0)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from exc
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {value}")
    return value


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit code (0 ok, 1 invalid files, 2 errors, 130 interrupted)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        sys.stderr.write(f"puffin-explorer: {exc}\n")
        return 2
    except PuffinError as exc:
        sys.stderr.write(f"puffin-explorer: {exc}\n")
        return 2
    except (OSError, ValueError) as exc:
        if isinstance(exc, BrokenPipeError):
            return 0
        sys.stderr.write(f"puffin-explorer: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("puffin-explorer: interrupted\n")
        return 130


def _run() -> None:  # pragma: no cover - console entry
    try:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    except (AttributeError, ValueError):
        pass
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    _run()
