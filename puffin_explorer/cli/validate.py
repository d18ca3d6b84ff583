"""``puffin-explorer validate FILE...``: the findings of Puffin (and Parquet) files, and one exit code for all."""

from __future__ import annotations

import argparse
import json

from .._text import plural
from ._errors import EXIT_FAILED, EXIT_FINDINGS, EXIT_OK, describe
from ._options import LOCATION_HELP, Shared, UsageError, check_strict, has_errors
from ._output import out
from ._sniff import sniff

HELP = "check files; exit 0 when all are valid, 1 when one has errors, 2 when one cannot be read"
DESCRIPTION = ("Check Puffin files (and Parquet files, by their magic) and list their findings. Exit 0 when "
               "every file is valid (warnings allowed), 1 when a file has an error finding, 2 when a file "
               "cannot be read at all (missing, a folder, another format, or --strict and an error).")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help=LOCATION_HELP)
    p.add_argument("--errors-only", action="store_true", help="hide warnings and notes")
    p.add_argument("-v", "--verbose", action="store_true", help="show each finding's hint")


def _findings(path: str, shared: Shared):
    """(what the file is, its findings); raises when it cannot be read."""
    opts = shared.storage_options_or_none
    found = sniff(path, opts)
    if found.kind == "folder":
        raise UsageError(f"{path} is a folder, not a file (for a table: puffin-explorer table {path} check)")
    if found.kind in ("json", "avro"):
        raise UsageError(f"{path} is {found.described}, not a Puffin or Parquet file "
                         f"(for table metadata: puffin-explorer table {path} check)")
    if found.kind == "parquet":
        from ..parquet.layout import ParquetLayout

        findings = list(ParquetLayout(path, storage_options=opts, strict=shared.strict).findings)
    else:
        from ..format.puffin import PuffinFile

        findings = list(PuffinFile(path, storage_options=opts, strict=shared.strict).findings)
    check_strict(findings, shared)
    return found.kind, findings


def run(args: argparse.Namespace, shared: Shared) -> int:
    if shared.format == "csv":
        out("file,valid,severity,code,offset,message")
    worst = EXIT_OK
    for path in args.files:
        try:
            _, findings = _findings(path, shared)
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # noqa: BLE001 - one unreadable file does not stop the others
            code, message = describe(exc, "validate")
            if code != EXIT_FAILED:
                raise
            if shared.debug:
                import traceback

                traceback.print_exc()
            worst = EXIT_FAILED
            _report_unreadable(path, message, shared.format)
            continue
        errors = [f for f in findings if getattr(f.severity, "value", f.severity) == "error"]
        shown = errors if args.errors_only else findings
        if has_errors(findings) and worst == EXIT_OK:
            worst = EXIT_FINDINGS
        if shared.format == "json":
            out(json.dumps({"file": path, "valid": not errors, "readable": True,
                            "findings": [f.to_dict() for f in shown]}))
        elif shared.format == "csv":
            for f in shown:
                out(_csv_row(path, not errors, f.severity.value, f.code, f.offset, f.message))
            if not shown:
                out(_csv_row(path, not errors, "", "", "", ""))
        else:
            status = "valid" if not errors else "INVALID"
            out(f"{path}: {status} ({plural(len(errors), 'error')}, {plural(len(findings) - len(errors), 'other finding')})")
            for f in shown:
                out(f"  {f}")
                if f.hint and args.verbose:
                    out(f"      hint: {f.hint}")
    return worst


def _report_unreadable(path: str, message: str, fmt: str) -> None:
    if fmt == "json":
        out(json.dumps({"file": path, "valid": False, "readable": False, "error": message}))
    elif fmt == "csv":
        out(_csv_row(path, False, "error", "unreadable", "", message))
    else:
        out(f"{path}: UNREADABLE: {message}")


def _csv_row(*values) -> str:
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(["" if v is None else v for v in values])
    return buf.getvalue()
