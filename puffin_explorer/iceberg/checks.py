"""Cross-checks between a snapshot's manifests, its Puffin files and the table's statistics entries.

Each problem is a :class:`TableFinding`: a :class:`Finding` that also names the
file it is about (offsets are in that file).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from ..errors import PuffinError
from ..regions import Finding, Severity
from ..format import container
from .findings import TableFinding
from .paths import basename, normalize, parent

if TYPE_CHECKING:  # pragma: no cover
    from .table import Table

DV_BLOB_TYPE = "deletion-vector-v1"


def _f(code: str, severity: Severity, file: str, message: str, offset: Optional[int] = None,
       length: Optional[int] = None, hint: str = "") -> TableFinding:
    return TableFinding(code=code, severity=severity, offset=offset, message=message, hint=hint,
                        length=length, file=file)


def findings_frame(findings: list[Finding]):
    """Findings as a DataFrame (one row each)."""
    import pandas as pd

    cols = ["severity", "code", "file", "offset", "length", "message", "hint"]
    rows = [{**f.to_dict(), "file": getattr(f, "file", "")} for f in findings]
    return pd.DataFrame.from_records(rows, columns=cols)


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


def _open_puffin(table: "Table", path: str, out: list[Finding]):
    from .. import PuffinFile

    try:
        return PuffinFile(table.locate(path), storage_options=table.io.storage_options)
    except (PuffinError, OSError, ValueError) as exc:
        missing = not table.io.exists(table.locate(path))
        out.append(_f("iceberg.file-missing" if missing else "iceberg.puffin-unreadable", Severity.ERROR, path,
                      f"cannot open Puffin file {table.locate(path)}: {exc}", getattr(exc, "offset", None)))
        return None


def check_table(table: "Table", snapshot_id: Optional[int] = None, check_files_exist: bool = True,
                progress: Optional[Callable[[int, int], None]] = None, read_files: bool = True) -> list[Finding]:
    """Run every cross-check on one snapshot (current by default) and the table's statistics files.

    The metadata file's own findings come first. ``progress(done, total)`` is called as DVs
    are checked. ``read_files=False`` runs only the checks that need no Puffin byte (summary
    totals, DV references). A table with no current snapshot gets the checks that need none.
    """
    out: list[Finding] = list(table.metadata.findings)
    if snapshot_id is None and table.metadata.current_snapshot_id is None:
        if read_files:
            _check_statistics(table, out)
        return out
    snap = table.snapshot(snapshot_id)
    listed = table.index(snap.snapshot_id)
    if not listed.manifests and any(f.code == "iceberg.manifest-unreadable" for f in listed.findings):
        if read_files:  # no manifest list to check against (the index's finding says why)
            _check_statistics(table, out)
        return out
    try:
        data = table.entries(snap.snapshot_id, content="data")
        deletes = table.entries(snap.snapshot_id, content="deletes")
    except PuffinError as exc:
        return out + [_f("iceberg.manifest-unreadable", Severity.ERROR, snap.manifest_list or "", str(exc),
                         exc.offset)]
    try:
        every = table.entries(snap.snapshot_id, include_deleted=True)
    except PuffinError:
        every = data + deletes
    counts: dict[str, Any] = {}

    def position_delete_counts() -> dict[str, dict[str, int]]:
        """Per data file, rows named by the live position-delete files (read once; an unreadable one is a finding)."""
        if "v" not in counts:
            try:
                counts["v"] = table.position_delete_counts(snap.snapshot_id)
            except (PuffinError, OSError) as exc:
                counts["v"] = {"rows": {}, "files": {}}
                code = "iceberg.position-delete-unreadable" if getattr(exc, "code", "") == \
                    "iceberg.position-delete-unreadable" else "iceberg.file-missing"
                what = "" if code != "iceberg.file-missing" else "cannot read position deletes: "
                named = [e["file_path"] for e in deletes if e["kind"] == "position-deletes"
                         and table.locate(e["file_path"]) in str(exc)]
                out.append(_f(code, Severity.ERROR, named[0] if named else "", f"{what}{exc}"))
        return counts["v"]

    try:
        _check_summary(snap, data, deletes, out, every)
        _check_quirks(table, snap, data, deletes, every, out, position_delete_counts)
        _check_row_lineage(table, snap, out)
        _check_dvs(table, snap.snapshot_id, data, deletes, out, progress, read_files)
        if read_files and any(e["kind"] == "position-deletes" for e in deletes):
            position_delete_counts()
        if read_files:
            _check_statistics(table, out)
        if check_files_exist:
            _check_files_exist(table, snap.snapshot_id, data + deletes, out)
    except PuffinError as exc:  # what the checks read themselves (a manifest list, a statistics file)
        out.append(_f("iceberg.manifest-unreadable", Severity.ERROR, getattr(exc, "location", None) or "",
                      str(exc), exc.offset))
    return out


def _totals(data: list[dict], deletes: list[dict]) -> dict[str, int]:
    position = [e for e in deletes if e["content"] == 1]
    equality = [e for e in deletes if e["content"] == 2]
    return {
        "total-data-files": len(data),
        "total-delete-files": len(deletes),
        "total-records": sum(int(e["record_count"] or 0) for e in data),
        "total-position-deletes": sum(int(e["record_count"] or 0) for e in position),
        "total-equality-deletes": sum(int(e["record_count"] or 0) for e in equality),
    }


def _check_summary(snap: Any, data: list[dict], deletes: list[dict], out: list[Finding],
                   every: Optional[list[dict]] = None) -> None:
    """The snapshot summary's totals against what the manifests hold (a writer that counted DELETED
    entries is named as such)."""
    computed = _totals(data, deletes)
    every = every or []
    with_deleted = _totals([e for e in every if e["content"] == 0], [e for e in every if e["content"] != 0])
    for key, value in computed.items():
        claimed = snap.summary.get(key)
        if claimed is None:
            continue
        try:
            claimed_n = int(claimed)
        except ValueError:
            claimed_n = None
        if claimed_n != value and claimed_n == with_deleted[key]:
            out.append(_f("iceberg.summary-counts-deleted", Severity.WARNING, snap.manifest_list or "",
                          f"snapshot {snap.snapshot_id} summary says {key} {claimed}: that counts the DELETED "
                          f"(status 2) entries its manifests carry; the live total is {value}"))
        elif claimed_n != value:
            out.append(_f("iceberg.summary-mismatch", Severity.WARNING, snap.manifest_list or "",
                          f"snapshot {snap.snapshot_id} summary says {key} {claimed} but its manifests hold {value}"))


def _check_quirks(table: "Table", snap: Any, data: list[dict], deletes: list[dict], every: list[dict],
                  out: list[Finding], position_delete_counts: Callable[[], dict]) -> None:
    """Writer habits that change no number here but that a reader should know about."""
    empty = [e for e in every if e.get("empty_referenced_data_file")]
    if empty:
        out.append(_f("iceberg.referenced-data-file-empty", Severity.INFO, empty[0]["manifest_path"] or "",
                      f"{len(empty)} manifest entries of snapshot {snap.snapshot_id} have referenced_data_file \"\" "
                      "instead of null; read as no reference"))
    manifests = {m["manifest_path"]: m for m in table.manifest_records(snap.snapshot_id)}
    carried = [e for e in every if e["status_code"] == 2
               and manifests.get(e["manifest_path"], {}).get("added_snapshot_id") not in (None, snap.snapshot_id)]
    if carried:
        out.append(_f("iceberg.deleted-entries-carried", Severity.INFO, carried[0]["manifest_path"] or "",
                      f"{len(carried)} DELETED (status 2) entries of earlier snapshots are still in the manifests of "
                      f"snapshot {snap.snapshot_id} ({', '.join(sorted({e['kind'] for e in carried}))}); skipped"))
    dv_targets = {normalize(e["referenced_data_file"]) for e in deletes
                  if e["kind"] == "dv" and e.get("referenced_data_file")}
    if dv_targets and any(e["kind"] == "position-deletes" for e in deletes):
        counts = position_delete_counts()
        covered = {k: n for k, n in counts["rows"].items() if k in dv_targets}
        if covered:
            out.append(_f("iceberg.position-deletes-superseded", Severity.INFO, "",
                          f"{sum(covered.values()):,} position deletes of {len(covered)} data files that have a DV "
                          f"are ignored in every count (the DV holds them): "
                          f"{', '.join(basename(k) for k in sorted(covered)[:3])}"
                          f"{' …' if len(covered) > 3 else ''}"))


def _check_row_lineage(table: "Table", snap: Any, out: list[Finding]) -> None:
    """v3 row lineage: next-row-id covers every row id assigned; delete manifests assign none."""
    md = table.metadata
    if int(md.format_version or 0) < 3:
        return
    next_row_id = md.next_row_id
    assigned: list[tuple[int, str]] = []
    for s in md.snapshots:
        if s.first_row_id is not None and s.added_rows is not None:
            assigned.append((int(s.first_row_id) + int(s.added_rows), f"snapshot {s.snapshot_id}"))
    for m in table.manifest_records(snap.snapshot_id):
        frid = m.get("first_row_id")
        if frid is None:
            continue
        if m.get("content") == 1:
            out.append(_f("iceberg.row-lineage-delete-manifest", Severity.WARNING, m["manifest_path"],
                          f"delete manifest {basename(m['manifest_path'])} has first_row_id {frid} in the manifest "
                          f"list of snapshot {snap.snapshot_id}; only data manifests assign row ids"))
            continue
        rows = int(m.get("added_rows_count") or 0) + int(m.get("existing_rows_count") or 0)
        assigned.append((int(frid) + rows, f"manifest {basename(m['manifest_path'])}"))
    if next_row_id is None or not assigned:
        return
    top, who = max(assigned)
    if top > int(next_row_id):
        out.append(_f("iceberg.row-lineage-next-row-id", Severity.WARNING, table.metadata_location,
                      f"next-row-id is {next_row_id} but {who} assigns row ids up to {top - 1}"))


def _check_dvs(table: "Table", snapshot_id: int, data: list[dict], deletes: list[dict],
               out: list[Finding], progress: Optional[Callable[[int, int], None]] = None,
               read_files: bool = True) -> None:
    live = {normalize(d["file_path"]): d for d in data}
    dvs = [e for e in deletes if e["kind"] == "dv"]
    per_data_file: dict[str, list[dict]] = {}
    by_puffin: dict[str, list[dict]] = {}
    for e in dvs:
        by_puffin.setdefault(e["file_path"], []).append(e)
        ref = e.get("referenced_data_file")
        if not ref:
            out.append(_f("iceberg.dv-no-referenced-file", Severity.ERROR, e["file_path"],
                          f"DV entry in {e['manifest_path']} has no referenced_data_file",
                          e.get("content_offset"), e.get("content_size_in_bytes")))
            continue
        per_data_file.setdefault(normalize(ref), []).append(e)
        if normalize(ref) not in live:
            out.append(_f("iceberg.dv-orphan", Severity.ERROR, e["file_path"],
                          f"DV at offset {e.get('content_offset')} references {ref}, which is not a live "
                          f"data file of snapshot {snapshot_id}", e.get("content_offset"),
                          e.get("content_size_in_bytes")))
    for ref, entries in per_data_file.items():
        if len(entries) > 1:
            where = ", ".join(f"{x['file_path']}@{x.get('content_offset')}" for x in entries)
            out.append(_f("iceberg.dv-duplicate", Severity.ERROR, entries[0]["file_path"],
                          f"{len(entries)} DVs for data file {ref} in snapshot {snapshot_id}: {where}",
                          hint="a snapshot may hold at most one DV per data file"))
    if not read_files:
        return
    done = 0
    for path, entries in by_puffin.items():
        if progress is not None:
            progress(done, len(dvs))
        done += len(entries)
        pf = _open_puffin(table, path, out)
        if pf is None:
            continue
        if entries[0].get("file_size_in_bytes") is not None and int(entries[0]["file_size_in_bytes"]) != pf.size:
            out.append(_f("iceberg.file-size-mismatch", Severity.ERROR, path,
                          f"manifest file_size_in_bytes {entries[0]['file_size_in_bytes']} but the file has "
                          f"{pf.size} bytes"))
        blobs_by_offset = {int(b.offset): b for b in pf.blobs}
        kind = getattr(pf, "container", container.PUFFIN)
        if kind == container.DELTA_DV_FILE:
            dvf = pf.delta_file
            out.append(_f("iceberg.dv-in-delta-file", Severity.INFO, path,
                          f"{len(entries)} DV entries point into a Delta deletion-vector file (UniForm), not a Puffin "
                          f"file: {dvf.summary()}"))
            for fd in dvf.file_findings:
                out.append(_f(fd.code, fd.severity, path, fd.message, fd.offset, fd.length, fd.hint))
        elif kind == container.BARE_DV:
            out.append(_f("iceberg.dv-bare-blob", Severity.WARNING, path,
                          f"the DV file is a bare deletion-vector blob ({pf.size:,} bytes), not a Puffin file"))
        for e in entries:
            off, size = e.get("content_offset"), e.get("content_size_in_bytes")
            if off is None or size is None:
                out.append(_f("iceberg.dv-missing-range", Severity.ERROR, path,
                              f"DV entry for {e.get('referenced_data_file')} in {e['manifest_path']} has no "
                              f"content_offset/content_size_in_bytes"))
                continue
            blob = blobs_by_offset.get(int(off))
            if kind != container.PUFFIN:
                _check_other_container(pf, kind, e, int(off), int(size), path, out)
            elif blob is None:
                known = ", ".join(f"{b.offset}+{b.length}" for b in pf.blobs)
                out.append(_f("iceberg.dv-offset-mismatch", Severity.ERROR, path,
                              f"manifest {e['manifest_path']} says the DV for {e.get('referenced_data_file')} "
                              f"is at offset {off} length {size}; the Puffin footer has no blob at offset {off} "
                              f"(blobs at {known or 'none'})", int(off), int(size)))
            else:
                if int(blob.length) != int(size):
                    out.append(_f("iceberg.dv-length-mismatch", Severity.ERROR, path,
                                  f"manifest content_size_in_bytes {size} but footer blob {blob.index} at offset "
                                  f"{off} has length {blob.length}", int(off), int(size)))
                if blob.type != DV_BLOB_TYPE:
                    out.append(_f("iceberg.dv-blob-type", Severity.ERROR, path,
                                  f"blob {blob.index} at offset {off} is {blob.type!r}, not {DV_BLOB_TYPE}",
                                  int(off), int(blob.length)))
                props = dict(blob.properties or {})
                card_prop = props.get("cardinality")
                if card_prop is not None and str(card_prop) != str(e["record_count"]):
                    out.append(_f("iceberg.dv-cardinality-property-mismatch", Severity.ERROR, path,
                                  f"manifest record_count {e['record_count']} but blob {blob.index} property "
                                  f"cardinality {card_prop}", int(off), int(size)))
                ref_prop = props.get("referenced-data-file")
                if ref_prop and e.get("referenced_data_file") and \
                        normalize(ref_prop) != normalize(e["referenced_data_file"]):
                    out.append(_f("iceberg.dv-reference-mismatch", Severity.ERROR, path,
                                  f"manifest referenced_data_file {e['referenced_data_file']} but blob "
                                  f"{blob.index} property referenced-data-file {ref_prop}", int(off), int(size)))
            try:
                dv = table.read_dv(e)
            except (PuffinError, OSError, ValueError) as exc:
                out.append(_f("iceberg.dv-unreadable", Severity.ERROR, path,
                              f"DV at offset {off} length {size} (for {e.get('referenced_data_file')}) cannot be "
                              f"read: {exc}", getattr(exc, "offset", None) or int(off), int(size)))
                continue
            for f in getattr(dv, "findings", []):
                if f.severity == Severity.ERROR:
                    out.append(_f(f.code, Severity.ERROR, path,
                                  f"DV at offset {off} length {size} (for {e.get('referenced_data_file')}): "
                                  f"{f.message}", f.offset, f.length, f.hint))
            if int(dv.cardinality) != int(e["record_count"]):
                out.append(_f("iceberg.dv-cardinality-mismatch", Severity.ERROR, path,
                              f"manifest record_count {e['record_count']} but the DV at offset {off} holds "
                              f"{dv.cardinality} positions", int(off), int(size)))
            target = live.get(normalize(e.get("referenced_data_file") or ""))
            if target is not None and int(dv.cardinality) > 0:
                highest = int(dv.positions()[-1])
                if highest >= int(target["record_count"]):
                    out.append(_f("iceberg.dv-position-out-of-range", Severity.ERROR, path,
                                  f"DV at offset {off} deletes position {highest} but {target['file_path']} has "
                                  f"only {target['record_count']} rows", int(off), int(size)))


def _check_other_container(pf: Any, kind: str, e: dict, off: int, size: int, path: str,
                           out: list[Finding]) -> None:
    """A DV entry whose file is a Delta DV file or a bare DV blob: is there a DV at its offset, of its size?"""
    ref = e.get("referenced_data_file")
    if kind == container.DELTA_DV_FILE:
        dvf = pf.delta_file
        d = dvf.dv_at(off)
        if d is None:
            inside = dvf.container_of(off)
            where = (f"offset {off} is inside DV {inside.index} [{inside.offset}, {inside.end})" if inside
                     else f"DVs start at {', '.join(str(x.offset) for x in dvf.dvs) or 'none'}")
            out.append(_f("iceberg.dv-offset-mismatch", Severity.ERROR, path,
                          f"manifest {e['manifest_path']} says the DV for {ref} is at offset {off} length {size}; "
                          f"the Delta DV file has no DV there ({where})", off, size))
        elif d.length != size:
            out.append(_f("iceberg.dv-length-mismatch", Severity.ERROR, path,
                          f"manifest content_size_in_bytes {size} but DV {d.index} of the Delta DV file at offset "
                          f"{off} is {d.length} bytes (sizeInBytes {d.size_in_bytes} + 8)", off, size))
        return
    if off != 0 or size != pf.size:
        out.append(_f("iceberg.dv-offset-mismatch", Severity.ERROR, path,
                      f"manifest {e['manifest_path']} says the DV for {ref} is at offset {off} length {size}; the "
                      f"file is one bare DV blob [0, {pf.size})", off, size))


def _check_statistics(table: "Table", out: list[Finding]) -> None:
    snapshot_ids = {s.snapshot_id for s in table.metadata.snapshots}
    field_ids = table.metadata.all_field_ids()
    for s in table.metadata.statistics:
        if s.snapshot_id not in snapshot_ids:
            out.append(_f("iceberg.stats-snapshot-missing", Severity.ERROR, s.path,
                          f"{s.kind} statistics file is for snapshot {s.snapshot_id}, which the table does not have"))
        if s.kind != "table":
            size = table.io.size(table.locate(s.path))
            if size is None:
                out.append(_f("iceberg.file-missing", Severity.ERROR, s.path,
                              f"partition statistics file {table.locate(s.path)} does not exist"))
            elif s.file_size_in_bytes is not None and size != int(s.file_size_in_bytes):
                out.append(_f("iceberg.stats-file-size-mismatch", Severity.ERROR, s.path,
                              f"metadata file-size-in-bytes {s.file_size_in_bytes} but the file has {size} bytes"))
            continue
        for b in s.blob_metadata:
            for fid in b.get("fields", []):
                if int(fid) not in field_ids:
                    out.append(_f("iceberg.stats-field-unknown", Severity.ERROR, s.path,
                                  f"{b.get('type')} blob is for field id {fid}, which no schema of the table has"))
        pf = _open_puffin(table, s.path, out)
        if pf is None:
            continue
        if s.file_size_in_bytes is not None and int(s.file_size_in_bytes) != pf.size:
            out.append(_f("iceberg.stats-file-size-mismatch", Severity.ERROR, s.path,
                          f"metadata file-size-in-bytes {s.file_size_in_bytes} but the file has {pf.size} bytes"))
        footer = puffin_footer_size(pf)
        if s.file_footer_size_in_bytes is not None and footer is not None and footer != int(s.file_footer_size_in_bytes):
            out.append(_f("iceberg.stats-footer-size-mismatch", Severity.ERROR, s.path,
                          f"metadata file-footer-size-in-bytes {s.file_footer_size_in_bytes} but the footer is "
                          f"{footer} bytes", pf.size - footer, footer))
        if len(pf.blobs) != len(s.blob_metadata):
            out.append(_f("iceberg.stats-blob-mismatch", Severity.ERROR, s.path,
                          f"metadata lists {len(s.blob_metadata)} blobs but the footer has {len(pf.blobs)}"))
        for i, (meta, blob) in enumerate(zip(s.blob_metadata, pf.blobs)):
            expected = {"type": meta.get("type"), "fields": [int(x) for x in meta.get("fields", [])],
                        "snapshot-id": meta.get("snapshot-id"), "sequence-number": meta.get("sequence-number"),
                        "properties": dict(meta.get("properties") or {})}
            actual = {"type": blob.type, "fields": [int(x) for x in blob.fields],
                      "snapshot-id": blob.snapshot_id, "sequence-number": blob.sequence_number,
                      "properties": dict(blob.properties or {})}
            for key in expected:
                if expected[key] != actual[key]:
                    out.append(_f("iceberg.stats-blob-mismatch", Severity.ERROR, s.path,
                                  f"blob {i}: metadata {key} {expected[key]!r} but footer {key} {actual[key]!r}",
                                  int(blob.offset), int(blob.length)))
        for f in pf.findings:
            if f.severity != Severity.INFO:
                out.append(_f(f.code, f.severity, s.path, f.message, f.offset, f.length, f.hint))


def _check_files_exist(table: "Table", snapshot_id: int, entries: list[dict], out: list[Finding]) -> None:
    snap = table.snapshot(snapshot_id)
    expected: dict[str, tuple[str, Optional[int], str]] = {}  # location -> (path as written, size, what)
    if snap.manifest_list:
        expected[table.locate(snap.manifest_list)] = (snap.manifest_list, None, "manifest list")
    for m in table.manifest_records(snapshot_id):
        expected[table.locate(m["manifest_path"])] = (m["manifest_path"], m.get("manifest_length"), "manifest")
    for e in entries:
        expected[table.locate(e["file_path"])] = (e["file_path"], e.get("file_size_in_bytes"), e["kind"] + " file")
    for s in table.metadata.statistics:
        if s.snapshot_id == snapshot_id:
            expected[table.locate(s.path)] = (s.path, s.file_size_in_bytes, f"{s.kind} statistics file")
    sizes = table.io.sizes_in(parent(loc) for loc in expected)
    for loc, (written, size, what) in sorted(expected.items()):
        actual = sizes.get(normalize(loc))
        if actual is None:
            if any(getattr(f, "file", None) == written and f.code == "iceberg.file-missing" for f in out):
                continue
            out.append(_f("iceberg.file-missing", Severity.ERROR, written, f"{what} {loc} does not exist"))
        elif size is not None and int(size) != actual and what == "manifest":
            out.append(_f("iceberg.file-size-mismatch", Severity.ERROR, written,
                          f"manifest list says manifest_length {size} but {loc} has {actual} bytes"))
        elif size is not None and int(size) != actual and what.endswith("file") and "statistics" not in what \
                and what != "dv file":
            out.append(_f("iceberg.file-size-mismatch", Severity.ERROR, written,
                          f"manifest says file_size_in_bytes {size} but {loc} has {actual} bytes"))
