"""A standalone HTML report (one self-contained page) and the ``puffin-explorer html`` command."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Optional

from .html import esc

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="puffin-explorer">
<title>{title}</title>
<style>body {{ margin: 16px 24px; background: #ffffff; }}
@media (prefers-color-scheme: dark) {{ body {{ background: #111111; }} }}</style>
</head><body>
{body}
</body></html>
"""


def report_html(pf: Any, include_hex: bool = True, schema: Any = None) -> str:
    """The PuffinFile view (and its paged hex view) as one self-contained HTML page."""
    from . import render_html, view

    parts = [render_html(view(pf, schema) if schema is not None else pf)]
    if include_hex:
        parts.append("<h3 style=\"font-family:sans-serif\">Annotated bytes</h3>")
        parts.append(render_html(pf.hex()))
    return _PAGE.format(title=esc(f"Puffin file {pf.location}"), body="\n".join(parts))


def write_report(location: str, output: str, storage_options: Optional[dict] = None,
                 include_hex: bool = True) -> int:
    """Open ``location`` and write its report to ``output``; returns the bytes written."""
    from ..format.puffin import PuffinFile

    pf = PuffinFile(location, storage_options=storage_options)
    page = report_html(pf, include_hex)
    data = page.encode("utf-8")
    with open(output, "wb") as f:
        f.write(data)
    return len(data)


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
