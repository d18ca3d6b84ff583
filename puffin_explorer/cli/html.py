"""``puffin-explorer html FILE -o report.html``: the notebook view of a Puffin file as one self-contained page."""

from __future__ import annotations

import argparse

from .._text import plural
from ._errors import EXIT_FINDINGS, EXIT_OK
from ._options import LOCATION_HELP, Shared, UsageError, check_strict, has_errors
from ._output import out
from ._sniff import require

HELP = "write a self-contained HTML report of a Puffin file (no JavaScript)"
DESCRIPTION = ("Write the notebook view of a Puffin file (summary, findings, layout strip, blob table, "
               "properties, annotated hex) as one self-contained HTML page with no JavaScript. Exit 1 when "
               "the file has error findings (the report is written all the same).")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help=LOCATION_HELP)
    p.add_argument("-o", "--output", default="report.html", help="output file (default: report.html)")
    p.add_argument("--no-hex", action="store_true", help="leave out the annotated hex view")


def run(args: argparse.Namespace, shared: Shared) -> int:
    from ..display.report import report_html
    from ..format.puffin import PuffinFile

    if shared.format != "text":
        raise UsageError(f"html writes an HTML page; --format {shared.format} does not apply "
                         "(inspect --format json gives the same facts as JSON)")
    require(args.file, "puffin", shared.storage_options_or_none)
    pf = PuffinFile(args.file, storage_options=shared.storage_options_or_none, strict=shared.strict)
    check_strict(pf.findings, shared)
    data = report_html(pf, not args.no_hex).encode("utf-8")
    try:
        with open(args.output, "wb") as f:
            f.write(data)
    except OSError as exc:
        raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}: pass another -o path") from exc
    findings = pf.findings
    errors = sum(1 for f in findings if f.severity.value == "error")
    note = f"; {plural(len(findings), 'finding')}, {plural(errors, 'error')}" if findings else ""
    out(f"wrote {args.output} ({plural(len(data), 'byte')}{note})")
    return EXIT_FINDINGS if has_errors(findings) else EXIT_OK
