"""The ``puffin-explorer html FILE -o report.html`` subcommand."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .report import write_report


def _run(args: argparse.Namespace) -> int:
    from ..errors import PuffinError

    output = args.output or "report.html"
    try:
        n = write_report(args.file, output, include_hex=not args.no_hex)
    except PuffinError as exc:
        print(f"puffin-explorer html: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"puffin-explorer html: cannot write {output}: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {output} ({n:,} bytes)")
    return 0


def register_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``html FILE -o report.html`` to the ``puffin-explorer`` command."""
    p = subparsers.add_parser("html", help="write a self-contained HTML report of a Puffin file",
                              description="Write the notebook view of a Puffin file (summary, findings, "
                                          "layout strip, blob table, properties, annotated hex) as one "
                                          "self-contained HTML page with no JavaScript.")
    p.add_argument("file", help="local path or fsspec URL (s3://, gs://, abfs://, http(s)://, memory://)")
    p.add_argument("-o", "--output", default="report.html", help="output file (default: report.html)")
    p.add_argument("--no-hex", action="store_true", help="leave out the annotated hex view")
    p.set_defaults(func=_run)
    return p
