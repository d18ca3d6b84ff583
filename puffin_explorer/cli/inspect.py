"""``puffin-explorer inspect FILE``: properties, blobs, decoded summaries and findings of a Puffin file."""

from __future__ import annotations

import argparse

from .._text import plural
from ._errors import EXIT_FINDINGS, EXIT_OK
from ._options import LOCATION_HELP, Shared, check_strict, has_errors, nonnegative_int
from ._output import frame, out, positions_preview, write_json
from ._sniff import require

HELP = "properties, blobs (deleted positions, ndv estimates) and findings of a Puffin file"
DESCRIPTION = ("Print a Puffin file's properties, each blob (a deletion vector's positions, a theta sketch's "
               "estimate) and its findings. Exit 0 when valid, 1 when a finding is an error, 2 when the "
               "file cannot be read or is not a Puffin file.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help=LOCATION_HELP)
    p.add_argument("--all", action="store_true", help="also the byte-region tree")
    p.add_argument("--positions", type=nonnegative_int, default=10, metavar="N",
                   help="deleted positions to print per deletion vector (default 10)")


def run(args: argparse.Namespace, shared: Shared) -> int:
    from ..format.dv import DeletionVector
    from ..format.puffin import PuffinFile

    found = require(args.file, "puffin", shared.storage_options_or_none)
    pf = PuffinFile(args.file, storage_options=shared.storage_options_or_none, strict=shared.strict)
    findings = pf.findings
    check_strict(findings, shared)
    code = EXIT_FINDINGS if has_errors(findings) else EXIT_OK
    if shared.format == "json":
        doc = pf.to_dict(decode=True)
        for b, d in zip(pf.blobs, doc["blobs"]):
            dv = _dv(b)
            if isinstance(dv, DeletionVector):
                d["positions"] = dv.head(args.positions).tolist()
        if args.all:
            doc["regions"] = pf.regions().to_records()
        write_json(doc)
        return code
    if shared.format == "csv":
        import pandas as pd

        rows = []
        for d in pf.to_dict(decode=True)["blobs"]:
            props = d.pop("properties")
            rows.append({**d, "fields": " ".join(map(str, d["fields"] or [])),
                         **{f"property:{k}": v for k, v in props.items()}})
        frame(pd.DataFrame(rows), "csv")
        return code
    if found.kind == "empty":
        out(f"{args.file} is empty (0 bytes): not a Puffin file, or a write that never finished")
    _text(pf, args)
    return code


def _dv(blob):
    from ..errors import PuffinError

    if blob.type != "deletion-vector-v1" or not blob.readable:
        return None
    try:
        return blob.decode()
    except PuffinError:
        return None


def _text(pf, args: argparse.Namespace) -> None:
    from ..errors import PuffinError
    from ..format.dv import DeletionVector
    from ..format.theta import ThetaSketch

    out(f"file: {pf.location}")
    out(f"size: {plural(pf.size, 'byte')}")
    if pf.footer is not None:
        out(f"footer: {plural(pf.footer.size, 'byte')} at {pf.footer.offset:,}"
            f"{' (LZ4-compressed payload)' if pf.footer.compressed else ''}")
    out("properties:" if pf.properties else "properties: (none)")
    for k, v in pf.properties.items():
        out(f"  {k}: {v}")
    out(f"blobs: {len(pf.blobs)}")
    for b in pf.blobs:
        codec = b.compression_codec or "none"
        out(f"  [{b.index}] {b.type}  fields={b.fields}  snapshot-id={b.snapshot_id}  "
            f"sequence-number={b.sequence_number}")
        out(f"      offset={b.offset}  length={b.length}  codec={codec}")
        for k, v in b.properties.items():
            out(f"      {k}: {v}")
        if not b.readable:
            out("      (unreadable: offset/length invalid)")
            continue
        try:
            dec = b.decode()
        except PuffinError as exc:
            out(f"      (cannot decode: {exc})")
            continue
        if isinstance(dec, DeletionVector):
            n = dec.cardinality
            shown = dec.head(args.positions)
            more = f"; first {len(shown)} shown, 'dv --blob {b.index}' lists all" if n > len(shown) else ""
            out(f"      deletedRows: {positions_preview(shown, n, args.positions)}  ({plural(n, 'row')}{more})")
            out(f"      {dec.summary()}")
        elif isinstance(dec, ThetaSketch) and dec.sketch is not None:
            out(f"      ndv estimate: {dec.estimate:.2f}  "
                f"(2σ bounds {dec.lower_bound(2):.2f} .. {dec.upper_bound(2):.2f})")
            out(f"      {dec.summary()}")
        else:
            out(f"      {dec.summary()}")
    findings = pf.findings
    if args.all:
        out("regions:")
        for depth, r in pf.regions().walk():
            value = "" if r.value is None else f"  = {r.value}"
            where = "" if r.space == "file" else f"  [{r.space}]"
            out(f"  {'  ' * depth}{r.offset:>10,} +{r.length:<8,} {r.name}{value}{where}")
    out(f"findings: {len(findings)}" + ("" if findings else " (valid)"))
    for f in findings:
        out(f"  {f}")
