"""The table's statistics files against what its metadata says of them: the snapshot each is for, the field ids
its blobs name, and each Puffin file's size, footer and blobs (a partition statistics file: that it is there, of
its size)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from .._text import plural
from ..io.scope import OutsideScopeError
from ..regions import Finding, Severity
from .check_base import file_finding, open_puffin
from .metadata import _is_int  # a JSON integer within int64: a footer offset past it is no offset

if TYPE_CHECKING:  # pragma: no cover
    from .metadata import StatisticsFile
    from .source import TableSource

#: Unknown field ids of one statistics blob reported one by one; the rest are counted in one finding.
FIELD_FINDINGS_PER_BLOB = 20


def check_statistics(source: "TableSource", out: list[Finding]) -> None:
    """Every distinct statistics entry of the metadata checked once, each file opened (and its own findings
    reported) once: a damaged list may repeat one entry thousands of times."""
    import json

    snapshot_ids = {s.snapshot_id for s in source.metadata.snapshots}
    field_ids = source.metadata.all_field_ids()
    entries_seen: set = set()
    opened: dict[str, Any] = {}
    for s in source.metadata.statistics:
        entry = (s.kind, s.snapshot_id, s.path, s.file_size_in_bytes, s.file_footer_size_in_bytes,
                 json.dumps(s.blob_metadata, sort_keys=True, default=repr))
        if entry in entries_seen:
            continue
        entries_seen.add(entry)
        if s.snapshot_id not in snapshot_ids:
            out.append(file_finding("iceberg.stats-snapshot-missing", Severity.ERROR, s.path,
                                    f"{s.kind} statistics file is for snapshot {s.snapshot_id}, which the table "
                                    "does not have"))
        if s.kind != "table":
            _check_partition_statistics(source, s, out)
            continue
        _check_field_ids(s, field_ids, out)
        first_open = s.path not in opened
        if first_open:
            opened[s.path] = open_puffin(source, s.path, out)
        if opened[s.path] is not None:
            _check_puffin_statistics(s, opened[s.path], first_open, out)


def _check_partition_statistics(source: "TableSource", s: "StatisticsFile", out: list[Finding]) -> None:
    """A partition statistics file (Parquet): there, and of the size the metadata says."""
    try:
        size = source.io.size(source.locate(s.path))
    except OutsideScopeError:
        return  # not read: its source.outside-scope finding is among the table's, and says so
    if size is None:
        out.append(file_finding("iceberg.file-missing", Severity.ERROR, s.path,
                                f"partition statistics file {source.locate(s.path)} does not exist"))
    elif s.file_size_in_bytes is not None and size != int(s.file_size_in_bytes):
        out.append(file_finding("iceberg.stats-file-size-mismatch", Severity.ERROR, s.path,
                                f"metadata file-size-in-bytes {s.file_size_in_bytes} but the file has "
                                f"{plural(size, 'byte', sep='')}"))


def _check_field_ids(s: "StatisticsFile", field_ids: Any, out: list[Finding]) -> None:
    """The field ids the metadata's blobs of ``s`` name that no schema of the table has."""
    for b in s.blob_metadata:
        unknown = [fid for fid in b.get("fields", []) if int(fid) not in field_ids]
        for fid in unknown[:FIELD_FINDINGS_PER_BLOB]:
            out.append(file_finding("iceberg.stats-field-unknown", Severity.ERROR, s.path,
                                    f"{b.get('type')} blob is for field id {fid}, which no schema of the table has"))
        if len(unknown) > FIELD_FINDINGS_PER_BLOB:  # a count read from the file never sizes the findings
            out.append(file_finding("iceberg.stats-field-unknown", Severity.ERROR, s.path,
                                    f"{b.get('type')} blob names "
                                    f"{plural(len(unknown) - FIELD_FINDINGS_PER_BLOB, 'more field id')} "
                                    "no schema of the table has"))


def _check_puffin_statistics(s: "StatisticsFile", pf: Any, first_open: bool, out: list[Finding]) -> None:
    """A statistics Puffin file against its metadata entry: size, footer size, its blobs one by one; the file's
    own findings (not its notes) the first time it is opened."""
    if s.file_size_in_bytes is not None and int(s.file_size_in_bytes) != pf.size:
        out.append(file_finding("iceberg.stats-file-size-mismatch", Severity.ERROR, s.path,
                                f"metadata file-size-in-bytes {s.file_size_in_bytes} but the file has "
                                f"{plural(pf.size, 'byte', sep='')}"))
    footer = puffin_footer_size(pf)
    if s.file_footer_size_in_bytes is not None and footer is not None \
            and footer != int(s.file_footer_size_in_bytes):
        out.append(file_finding("iceberg.stats-footer-size-mismatch", Severity.ERROR, s.path,
                                f"metadata file-footer-size-in-bytes {s.file_footer_size_in_bytes} but the footer is "
                                f"{plural(footer, 'byte', sep='')}", pf.size - footer, footer))
    if len(pf.blobs) != len(s.blob_metadata):
        out.append(file_finding("iceberg.stats-blob-mismatch", Severity.ERROR, s.path,
                                f"metadata lists {plural(len(s.blob_metadata), 'blob', sep='')} but the footer has "
                                f"{len(pf.blobs)}"))
    for i, (meta, blob) in enumerate(zip(s.blob_metadata, pf.blobs)):
        expected = {"type": meta.get("type"), "fields": _int_list(meta.get("fields", [])),
                    "snapshot-id": meta.get("snapshot-id"), "sequence-number": meta.get("sequence-number"),
                    "properties": dict(meta.get("properties") or {})}
        actual = {"type": blob.type, "fields": _int_list(blob.fields),
                  "snapshot-id": blob.snapshot_id, "sequence-number": blob.sequence_number,
                  "properties": dict(blob.properties or {})}
        for key in expected:
            if expected[key] != actual[key]:
                out.append(file_finding("iceberg.stats-blob-mismatch", Severity.ERROR, s.path,
                                        f"blob {i}: metadata {key} {_brief(expected[key])} but footer {key} "
                                        f"{_brief(actual[key])}",
                                        blob.offset if _is_int(blob.offset) else None,
                                        blob.length if _is_int(blob.length) else None))
    for f in pf.findings if first_open else ():
        if f.severity != Severity.INFO:
            out.append(file_finding(f.code, f.severity, s.path, f.message, f.offset, f.length, f.hint))


def puffin_footer_size(pf: Any) -> Optional[int]:
    """Bytes from the footer's start magic to the end of the file, read from the file's tail."""
    footer = getattr(pf, "footer", None)
    if footer is not None and isinstance(getattr(footer, "size", None), int):
        return footer.size
    source = getattr(pf, "source", None)
    if source is None or getattr(source, "size", 0) < 12:
        return None
    start, tail = source.tail(12)
    payload_size = int.from_bytes(tail[0:4], "little", signed=True)
    return payload_size + 16


def _brief(v: Any) -> str:
    """``repr`` of a metadata value for a message, with long lists and strings cut (a blob may name a
    million field ids)."""
    import reprlib

    r = reprlib.Repr()
    r.maxlist, r.maxstring, r.maxother, r.maxdict = 20, 200, 200, 20
    return r.repr(v)


def _int_list(v: Any) -> Any:
    """A list of field ids, or the value as it is when it is not one (compared and shown, never cast)."""
    return list(v) if isinstance(v, list) and all(_is_int(x) for x in v) else v
